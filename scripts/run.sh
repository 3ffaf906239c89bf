#!/usr/bin/env bash
# The quick start: installs what is missing, builds, then trains the model of the given config on
# the CPU, printing where the run went. Usage: ./scripts/run.sh configs/quickstart.yaml [key.path=value ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ $# -lt 1 ]]; then
  echo "usage: ./scripts/run.sh CONFIG.yaml [key.path=value ...]" >&2
  exit 2
fi

./scripts/setup.sh
# Only the binary: the tests and benchmarks are ./scripts/test.sh's to build.
GATTN_BUILD_TARGETS=gattn ./scripts/build.sh

config="$1"
shift
# Each invocation gets its own run directory, so running the quick start twice just trains twice
# (a run.dir=... override on the command line, applied later, wins).
stamp=$(date +%Y%m%d-%H%M%S)
name=$(basename "$config" .yaml)
exec ./build/gattn train --config "$config" "run.dir=runs/${name}_${stamp}" "$@"
