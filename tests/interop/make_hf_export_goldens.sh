#!/usr/bin/env bash
# Regenerates the tiny gattn checkpoints under tests/data/hf_export/ and transformers' goldens on
# their export (tests/interop/make_hf_export_goldens.py says what they are). A developer's tool, not
# run by the tests: the goldens are committed so that CI needs no Python.
#
#   tests/interop/make_hf_export_goldens.sh [NAME ...]     # default: every golden model
#
# It needs a build of gattn and of the checkpoint maker in build/ (GATTN_BUILD_DIR names another):
#   GATTN_BUILD_TARGETS="gattn gattn_make_export_checkpoints" ./scripts/build.sh
# and the Python environment of make_hf_goldens.sh (.venv-hf/, made on first use, or GATTN_HF_PYTHON),
# with transformers pinned to the version the committed goldens were made with.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
transformers_version=5.24.0
build="${GATTN_BUILD_DIR:-build}"
[[ $build = /* ]] || build="$root/$build"
for binary in "$build/gattn" "$build/tests/gattn_make_export_checkpoints"; do
  if [[ ! -x $binary ]]; then
    echo "make_hf_export_goldens: no $binary; build it first (GATTN_BUILD_TARGETS=\"gattn gattn_make_export_checkpoints\" ./scripts/build.sh)" >&2
    exit 2
  fi
done

python="${GATTN_HF_PYTHON:-}"
if [[ -z $python ]]; then
  venv="${GATTN_HF_VENV:-$root/.venv-hf}"
  if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --index-url https://download.pytorch.org/whl/cpu torch
    "$venv/bin/pip" install --quiet "transformers==$transformers_version" safetensors
  fi
  python="$venv/bin/python"
fi
have="$("$python" -c 'import torch, safetensors, transformers; print(transformers.__version__)')"
if [[ $have != "$transformers_version" ]]; then
  echo "make_hf_export_goldens: transformers $have, not the pinned $transformers_version: the goldens would change" >&2
fi
exec "$python" "$root/tests/interop/make_hf_export_goldens.py" --gattn "$build/gattn" \
  --make-checkpoints "$build/tests/gattn_make_export_checkpoints" "$@"
