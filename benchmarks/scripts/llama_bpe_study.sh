#!/usr/bin/env bash
# Llama-style blocks and Qwen's gate on Tiny Shakespeare BPE: trains configs/llama_bpe/{baseline,
# g1_elementwise,g1_headwise,forget}.yaml over the given seeds and prints one row per run: val bits
# per byte over the whole val split (`gattn eval eval.max_windows=0`), the final act_max (largest over
# layers, over the whole val split), the first-token share (sink_ratio of the run's last val line is
# not reported for gateless models, so it comes from `gattn eval`'s statistics), the gate mean and
# fraction below 0.1, training seconds and median tokens/s. Makes the BPE shards first
# (scripts/shakespeare_bpe.sh). Measure on an idle machine: the wall times are part of the result.
#
#   benchmarks/scripts/llama_bpe_study.sh [SEED ...]     # default: 0 1 2; runs go to runs/llama_bpe/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=(0 1 2)
gattn=${GATTN:-./build/gattn}
GATTN=$gattn ./scripts/shakespeare_bpe.sh >/dev/null
out=runs/llama_bpe
mkdir -p "$out"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); binary $gattn"
printf '%-15s %-5s %10s %8s %7s %9s %9s %8s %9s\n' config seed "bits/byte" act_max "sink" "gate mean" "gate<0.1" seconds "tokens/s"
for seed in "${seeds[@]}"; do
  for config in baseline g1_elementwise g1_headwise forget; do
    dir="$out/${config}_seed$seed"
    rm -rf "$dir"
    "$gattn" train --config "configs/llama_bpe/$config.yaml" seed="$seed" run.dir="$dir" >"$dir.log" 2>&1
    full=$("$gattn" eval --checkpoint "$dir" eval.max_windows=0)
    python3 - "$dir/metrics.jsonl" "$config" "$seed" "$full" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
train = [l for l in lines if l["split"] == "train"]
full = json.loads(sys.argv[4])
rates = sorted(l["tokens_per_s"] for l in train)
def f(key, fmt):
    return fmt % full[key] if full.get(key) is not None else "-"
print("%-15s %-5s %10.4f %8.3f %7s %9s %9s %8.1f %9.0f" % (sys.argv[2], sys.argv[3], full["bits_per_byte"],
      full["val_act_max"], f("val_sink_ratio", "%.3f"), f("val_gate_mean", "%.3f"), f("val_gate_frac_lt_0.1", "%.3f"),
      train[-1]["elapsed_s"], rates[len(rates) // 2]))
PY
  done
done
