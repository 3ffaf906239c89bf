#!/usr/bin/env bash
# Long-context training speed and adaptive computation pruning (docs/benchmarks.md,
# docs/long-context.md): configs/long_context/forget_2048.yaml (4 layers, width 128, the forget gate
# without positions, 4096 tokens a step) trained at blocks of 2048 and 4096 with pruning off (θ = 0)
# and on (each θ given), printing per run the median training tokens/s, the share of attention tile
# pairs skipped (attn_pruned_tile_frac, mean over logged steps), the final train and val loss, the
# wall time and the peak resident memory. Measure on an idle machine.
#
#   benchmarks/scripts/long_context_prune.sh                       # θ = 0 and 1e-4, 300 steps at 2048
#   THRESHOLDS="0 1e-6 1e-3" STEPS=100 BLOCKS="2048" benchmarks/scripts/long_context_prune.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gattn=${GATTN:-./build/gattn}
read -r -a thresholds <<<"${THRESHOLDS:-0 1e-4}"
read -r -a blocks <<<"${BLOCKS:-2048 4096}"
steps=${STEPS:-300}
GATTN=$gattn ./scripts/shakespeare_bpe.sh >/dev/null
out=runs/long_context_prune
mkdir -p "$out"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); binary $gattn; $steps steps"
printf '%-6s %-8s %10s %9s %11s %9s %9s %10s\n' block theta "tokens/s" "pruned" "train loss" "val loss" seconds "peak RSS"
for block in "${blocks[@]}"; do
  for theta in "${thresholds[@]}"; do
    dir="$out/T${block}_theta$theta"
    rm -rf "$dir"
    /usr/bin/time -f "%M" -o "$dir.rss" "$gattn" train --config configs/long_context/forget_2048.yaml run.dir="$dir" \
      model.block_size="$block" train.batch_size=$((4096 / block)) model.gate.prune_threshold="$theta" \
      train.max_steps="$steps" train.log_every=10 eval.every="$steps" eval.max_windows=8 checkpoint.every="$steps" \
      >"$dir.log" 2>&1
    python3 - "$dir/metrics.jsonl" "$block" "$theta" "$(tail -1 "$dir.rss")" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
train = [l for l in lines if l["split"] == "train"]
val = [l for l in lines if l["split"] == "val"]
rates = sorted(l["tokens_per_s"] for l in train[1:])  # the first logged step warms up
pruned = [l.get("attn_pruned_tile_frac", 0.0) for l in train]
print("%-6s %-8s %10.0f %8.1f%% %11.4f %9.4f %9.1f %7.2f GiB" % (sys.argv[2], sys.argv[3], rates[len(rates) // 2],
      100 * sum(pruned) / len(pruned), train[-1]["loss"], val[-1]["loss"], train[-1]["elapsed_s"],
      int(sys.argv[4]) / 1024 / 1024))
PY
  done
done
