#!/usr/bin/env bash
# The quick start: installs what is missing, builds, then trains the model of the given config on
# the CPU. Usage: ./scripts/run.sh configs/quickstart.yaml [key.path=value ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ $# -lt 1 ]]; then
  echo "usage: ./scripts/run.sh CONFIG.yaml [key.path=value ...]" >&2
  exit 2
fi

./scripts/setup.sh
./scripts/build.sh

./build/gattn --version
if ./build/gattn train --help >/dev/null 2>&1; then
  exec ./build/gattn train --config "$@"
fi
echo "run: this build has the tensor core and ops; the 'train' recipe lands with the training issue," \
     "so $1 was not run yet" >&2
