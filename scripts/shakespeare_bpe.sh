#!/usr/bin/env bash
# Tiny Shakespeare as BPE token shards for configs/shakespeare_bpe/: a 2048-piece BPE tokenizer
# trained on data/tinyshakespeare.txt (data/tokenizers/shakespeare_bpe2048/), then the text encoded
# with it into data/shakespeare_bpe/ (train and val shards split 90/10 as the char-level configs
# split the file, meta.json, the tokenizer). Both are deterministic and take about 2 seconds; an
# existing output is kept (--force remakes it). Sets up and builds build/gattn first if it is missing
# (GATTN=path/to/gattn uses another binary).
#
#   ./scripts/shakespeare_bpe.sh && ./build/gattn train --config configs/shakespeare_bpe/output.yaml
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
force=()
[[ ${1:-} == --force ]] && force=(--force)
gattn=${GATTN:-./build/gattn}
[[ -n ${GATTN:-} || -x build/gattn ]] || { ./scripts/setup.sh && GATTN_BUILD_TARGETS=gattn ./scripts/build.sh; }
tok=data/tokenizers/shakespeare_bpe2048
shards=data/shakespeare_bpe
if [[ ! -f $tok/tokenizer.model || ${#force[@]} -gt 0 ]]; then
  "$gattn" tokenize train --input data/tinyshakespeare.txt --vocab-size 2048 --model-type bpe --out "$tok" "${force[@]}"
fi
if [[ ! -f $shards/meta.json || ${#force[@]} -gt 0 ]]; then
  "$gattn" tokenize encode --tokenizer "$tok" --input data/tinyshakespeare.txt --val-fraction 0.1 --out "$shards" "${force[@]}"
fi
echo "shakespeare_bpe: shards in $shards"
