#!/usr/bin/env bash
# `gattn tokenize` throughput on this machine: trains a BPE tokenizer on Tiny Shakespeare, then
# encodes a larger corpus (Tiny Shakespeare repeated, about 22 MB by default) with 1 and 2 threads,
# alternating, and prints the median MB/s of each. Measure on an idle machine.
#
#   benchmarks/scripts/tokenize_throughput.sh [--copies 20] [--repeat 3] [--vocab-size 2048] [--model-type bpe]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
gattn="${GATTN:-$root/build/gattn}"
copies=20 repeat=3 vocab=2048 type=bpe
while [[ $# -gt 0 ]]; do
  case $1 in
    --copies) copies=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --vocab-size) vocab=$2; shift 2 ;;
    --model-type) type=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text="$root/data/tinyshakespeare.txt"
for _ in $(seq "$copies"); do cat "$text"; done >"$tmp/corpus.txt"
bytes=$(stat -c %s "$tmp/corpus.txt")
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s%N)
"$gattn" tokenize train --input "$text" --vocab-size "$vocab" --model-type "$type" --out "$tmp/tok" --threads 2 >/dev/null
echo "train: $vocab-piece $type tokenizer on $(stat -c %s "$text") bytes in $(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN {printf "%.2f", (b - a) / 1e9}') s (2 threads)"
declare -A rates
for r in $(seq "$repeat"); do
  for t in 1 2; do
    rm -rf "$tmp/out"
    line=$("$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$tmp/corpus.txt" --out "$tmp/out" --threads "$t")
    rate=$(sed -E 's/.*\(([0-9.]+) MB\/s.*/\1/' <<<"$line")
    rates[$t]+="$rate "
  done
done
echo "encode: $bytes bytes, $type $vocab, $repeat runs each, alternating"
for t in 1 2; do
  median=$(tr ' ' '\n' <<<"${rates[$t]}" | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
  echo "  $t thread(s): median $median MB/s (runs: ${rates[$t]% })"
done
