#!/usr/bin/env bash
# The gated-inference measurements of docs/inference.md: trains the checkpoints (char-level Tiny
# Shakespeare and noisy_recall with gates none, score, forget and headwise output) unless they
# exist, then runs `gattn bench generate` on each: every KV policy at 25 %, 50 % and 75 % of the
# context, head skipping on the headwise output models and top-k keys on the others; then a score
# model with rotary positions generating 1,024 tokens past its block, gate eviction with and without
# a protected recent window.
#
#   benchmarks/scripts/gated_inference.sh [OUT_DIR]     (default runs/gated_inference; ~35 min on 2 cores)
#
# GATTN_BINARY picks the binary (default build/gattn). Each bench's table goes to OUT_DIR/<run>.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gattn=${GATTN_BINARY:-build/gattn}
out=${1:-runs/gated_inference}
mkdir -p "$out"
# One parameter group for every kind: kind none has no gate parameters for a gate group to match.
groups='optim.param_groups=[{name: no_decay, match: ["*.bias", "*ln1.*", "*ln2.*", "ln_f.*", "wte.*", "wpe.*"], weight_decay: 0.0}]'

train() {  # train NAME CONFIG KIND
  local name=$1 config=$2 kind=$3 extra=()
  [[ $kind == output ]] && extra=(model.gate.granularity=headwise)
  [[ -d $out/$name/checkpoints ]] && return
  echo "training $name"
  "$gattn" train --config "$config" model.gate.kind="$kind" "${extra[@]}" run.dir="$out/$name" "$groups" \
    >"$out/$name.train.log" 2>&1
}

for kind in none score forget output; do
  train shk_$kind configs/shakespeare_char/output.yaml $kind
  train nr_$kind configs/quickstart.yaml $kind
done
for run in shk_none shk_score shk_forget shk_output nr_none nr_score nr_forget nr_output; do
  echo "bench $run"
  windows=200  # 12,800 predicted characters; noisy_recall has one answer per window: 1,000 answers
  [[ $run == nr_* ]] && windows=1000
  {
    "$gattn" bench generate --checkpoint "$out/$run" --gen-tokens 256 --max-windows $windows
    case $run in
      *_output) for tau in 0.05 0.1 0.2; do
          "$gattn" bench generate --checkpoint "$out/$run" --kv-policy full --skip-heads-below $tau --gen-tokens 256 \
            --max-windows $windows
        done ;;
      *) for k in 4 8; do
          "$gattn" bench generate --checkpoint "$out/$run" --kv-policy full --top-k-keys $k --gen-tokens 256 \
            --max-windows $windows
        done ;;
    esac
  } | tee "$out/$run.txt"
done

# Rotary positions: a bounded cache past block_size, and gate eviction with a protected recent window.
rope_groups='optim.param_groups=[{name: no_decay, match: ["*.bias", "*ln1.*", "*ln2.*", "ln_f.*", "wte.*"], weight_decay: 0.0}]'
if [[ ! -d $out/shk_score_rope/checkpoints ]]; then
  echo "training shk_score_rope"
  "$gattn" train --config configs/shakespeare_char/output.yaml model.gate.kind=score model.position=rope \
    run.dir="$out/shk_score_rope" "$rope_groups" >"$out/shk_score_rope.train.log" 2>&1
fi
echo "bench shk_score_rope"
{
  "$gattn" bench generate --checkpoint "$out/shk_score_rope" --gen-tokens 1024
  "$gattn" bench generate --checkpoint "$out/shk_score_rope" --kv-policy gate --kv-recent 8 --gen-tokens 1024
} | tee "$out/shk_score_rope.txt"
