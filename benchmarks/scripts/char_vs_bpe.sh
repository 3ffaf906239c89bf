#!/usr/bin/env bash
# Characters against BPE on Tiny Shakespeare, output gate against none: trains
# configs/shakespeare_{char,bpe}/{baseline,output}.yaml over the given seeds (the BPE configs run
# 1500 steps, the wall time of the char configs' 2000) and prints one table row per run: the final
# val loss and bits per byte of the run's own eval (its first 200 windows, which cover 12.8 kB of
# the char model's val text and about 36 kB of the BPE model's), then both over the whole val split
# (`gattn eval eval.max_windows=0`: the same text for both models, up to the line where the BPE
# split starts), training seconds and median tokens/s. Makes the BPE shards first
# (scripts/shakespeare_bpe.sh). Measure on an idle machine: the wall times are part of the result.
#
#   benchmarks/scripts/char_vs_bpe.sh [SEED ...]     # default: 0 1 2; runs go to runs/char_vs_bpe/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=(0 1 2)
./scripts/shakespeare_bpe.sh >/dev/null
out=runs/char_vs_bpe
mkdir -p "$out"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-9s %-5s %6s %9s %10s %14s %15s %8s %9s\n' data gate seed steps "val loss" "bits/byte" "full-val loss" "full-val bits/B" seconds "tokens/s"
for seed in "${seeds[@]}"; do
  for data in char bpe; do
    for gate in baseline output; do
      dir="$out/${data}_${gate}_seed$seed"
      rm -rf "$dir"
      ./build/gattn train --config "configs/shakespeare_$data/$gate.yaml" seed="$seed" run.dir="$dir" >"$dir.log" 2>&1
      full=$(./build/gattn eval --checkpoint "$dir" eval.max_windows=0)
      python3 - "$dir/metrics.jsonl" "$data" "$gate" "$seed" "$full" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
train = [l for l in lines if l["split"] == "train"]
val = [l for l in lines if l["split"] == "val"][-1]
full = json.loads(sys.argv[5])
rates = sorted(l["tokens_per_s"] for l in train)
print("%-6s %-9s %-5s %6d %9.4f %10.4f %14.4f %15.4f %8.1f %9.0f" % (sys.argv[2], sys.argv[3], sys.argv[4], val["step"],
      val["loss"], val["bits_per_byte"], full["loss"], full["bits_per_byte"], train[-1]["elapsed_s"], rates[len(rates) // 2]))
PY
    done
  done
done
