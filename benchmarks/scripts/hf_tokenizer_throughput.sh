#!/usr/bin/env bash
# Hugging Face tokenizers' encode throughput, gattn (HfTokenizer) against the `tokenizers` package,
# one thread each (RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false, OMP_NUM_THREADS=1), on a text
# encoded as one string and line by line; best of --repeat runs after a warm-up. Prints a markdown
# table; the token counts of the two must agree. Measure on an idle machine.
#
#   benchmarks/scripts/hf_tokenizer_throughput.sh [--text FILE] [--repeat 5] [--python PY] DIR...
#
# DIR: tokenizer directories (tests/data/tokenizer/gpt2, or the full ones that
# tests/interop/make_tokenizer_goldens.py --full writes). PY: a python with `tokenizers`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bench="${GATTN_BENCH:-$root/build/benchmarks/gattn_hf_tokenizer_throughput}"
text="$root/data/tinyshakespeare.txt" repeat=5 python=python3
dirs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --text) text=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) dirs+=("$1"); shift ;;
  esac
done
cores=$(nproc)  # before OMP_NUM_THREADS=1, which nproc reports
export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
echo "machine: $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg); text: $text ($(stat -c %s "$text") bytes)"
echo "tokenizers $("$python" -c 'import tokenizers; print(tokenizers.__version__)')"
echo
echo "| tokenizer | mode | gattn MB/s | gattn tokens/s | tokenizers MB/s | tokenizers tokens/s | gattn / tokenizers |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for dir in "${dirs[@]}"; do
  ours=$("$bench" "$dir" "$text" "$repeat")
  theirs=$("$python" "$root/benchmarks/scripts/hf_tokenizer_throughput.py" "$dir" "$text" "$repeat")
  for mode in whole lines; do
    read -r _ mb _ tps _ n _ <<<"$(grep "^$mode " <<<"$ours")"
    read -r _ pmb _ ptps _ pn _ <<<"$(grep "^$mode " <<<"$theirs")"
    [[ $n == "$pn" ]] || echo "warning: $dir $mode: gattn made $n tokens, tokenizers $pn" >&2
    ratio=$(awk -v a="$mb" -v b="$pmb" 'BEGIN {printf "%.2f×", a / b}')
    echo "| $(basename "$dir") | $mode | $mb | $tps | $pmb | $ptps | $ratio |"
  done
done
