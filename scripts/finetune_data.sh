#!/usr/bin/env bash
# The two corpora of configs/finetune/: Tiny Shakespeare to pretrain on, and the Debian Reference
# (Osamu Aoki's system administration guide, English original, GPL-2+; Debian's
# `debian-reference-en` package) to fine-tune on: modern technical prose after Early Modern verse.
#
#   data/debian_reference.txt           the guide's plain-text edition, as the package ships it
#   data/tokenizers/finetune_bpe4096/   a 4096-piece BPE tokenizer trained on both texts
#   data/finetune/shakespeare/          Tiny Shakespeare in it, split 90/10 (train/val)
#   data/finetune/debian_reference/     the guide in it, split 90/10
#
# The package is fetched with `apt-get download` and unpacked here (nothing is installed). All of
# it is deterministic and takes seconds; existing outputs are kept (--force remakes them). Builds
# build/gattn first if it is missing (GATTN=path/to/gattn uses another binary).
#
#   ./scripts/finetune_data.sh && ./benchmarks/scripts/finetune_study.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
force=()
[[ ${1:-} == --force ]] && force=(--force)
gattn=${GATTN:-./build/gattn}
[[ -n ${GATTN:-} || -x build/gattn ]] || { ./scripts/setup.sh && GATTN_BUILD_TARGETS=gattn ./scripts/build.sh; }

text=data/debian_reference.txt
if [[ ! -f $text || ${#force[@]} -gt 0 ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && apt-get download debian-reference-en >/dev/null)
  dpkg-deb -x "$work"/debian-reference-en_*.deb "$work/pkg"
  version=$(dpkg-deb -f "$work"/debian-reference-en_*.deb Version)
  zcat "$work/pkg/usr/share/debian-reference/debian-reference.en.txt.gz" >"$text.tmp"
  mv "$text.tmp" "$text"
  echo "finetune_data: $text from debian-reference-en $version ($(wc -c <"$text") bytes)"
fi

tok=data/tokenizers/finetune_bpe4096
if [[ ! -f $tok/tokenizer.model || ${#force[@]} -gt 0 ]]; then
  "$gattn" tokenize train --input data/tinyshakespeare.txt "$text" --vocab-size 4096 --model-type bpe \
    --out "$tok" "${force[@]}"
fi
for name in shakespeare debian_reference; do
  input=data/tinyshakespeare.txt
  [[ $name == debian_reference ]] && input=$text
  out=data/finetune/$name
  if [[ ! -f $out/meta.json || ${#force[@]} -gt 0 ]]; then
    "$gattn" tokenize encode --tokenizer "$tok" --input "$input" --val-fraction 0.1 --out "$out" "${force[@]}"
  fi
done
echo "finetune_data: shards in data/finetune/shakespeare and data/finetune/debian_reference"
