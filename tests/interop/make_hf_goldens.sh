#!/usr/bin/env bash
# Regenerates the tiny Hugging Face models and their transformers goldens under tests/data/hf/
# (tests/interop/make_hf_goldens.py says what they are). A developer's tool, not run by the tests:
# the goldens are committed so that CI needs no Python.
#
#   tests/interop/make_hf_goldens.sh [NAME ...]     # default: every model
#
# It makes a virtual environment with CPU torch, transformers and safetensors in .venv-hf/ (or
# GATTN_HF_VENV) on first use; GATTN_HF_PYTHON names the python of an existing environment that
# has them instead. transformers is pinned to the version the committed goldens were made with, so
# that a regeneration changes nothing unless the pin is changed on purpose.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
transformers_version=5.24.0

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
  echo "make_hf_goldens: transformers $have, not the pinned $transformers_version: the goldens would change" >&2
fi
exec "$python" "$root/tests/interop/make_hf_goldens.py" "$@"
