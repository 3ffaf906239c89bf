#!/usr/bin/env bash
# Fine-tuning with gates added ([GateAttn-Guide] §6.3's advice: verify a gate by fine-tuning a
# pretrained model, gating the layers near the output first and widening step by step). Pretrains
# configs/finetune/pretrain.yaml on Tiny Shakespeare once (seed 0), then fine-tunes it on the Debian
# Reference with configs/finetune/{none,every,last_half,widening}.yaml over the given seeds, and
# prints one row per run: the fine-tuning val loss at steps 0 (the pretrained model: the gates are
# ramped off), 100, 200, 400 and 800 (the last val line), the first step whose val loss is at or
# below the target (the no-gate run's final val loss of the same seed, so "none" reaches it at its
# last eval by construction), the gate mean of the last train line, and training seconds. Makes the data first
# (scripts/finetune_data.sh). Quality, not speed, is the result; still, run it on an idle machine
# for the wall times.
#
#   benchmarks/scripts/finetune_study.sh [SEED ...]     # default: 0 1 2; runs go to runs/finetune/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=(0 1 2)
gattn=${GATTN:-./build/gattn}
GATTN=$gattn ./scripts/finetune_data.sh >/dev/null
out=runs/finetune
mkdir -p "$out"
source_run=$out/pretrain
if [[ ! -f $source_run/checkpoints/latest ]]; then
  rm -rf "$source_run"
  "$gattn" train --config configs/finetune/pretrain.yaml run.dir="$source_run" >"$source_run.log" 2>&1
fi
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); binary $gattn"
echo "pretrained: $(grep '"split":"val"' "$source_run/metrics.jsonl" | tail -1) (Shakespeare val)"
# Step 0 of every setting: the pretrained model on the new corpus (the added gates are ramped off).
step0=$("$gattn" eval --checkpoint "$source_run" data.path=data/finetune/debian_reference eval.max_windows=200 |
  python3 -c 'import json, sys; print("%.4f" % json.load(sys.stdin)["loss"])')
printf '%-10s %-5s %8s %8s %8s %8s %8s %10s %9s %8s\n' config seed "val@0" "val@100" "val@200" "val@400" "val@end" \
  "to target" "gate mean" seconds
for seed in "${seeds[@]}"; do
  for config in none every last_half widening; do
    dir="$out/${config}_seed$seed"
    rm -rf "$dir"
    "$gattn" train --config "configs/finetune/$config.yaml" seed="$seed" run.dir="$dir" \
      train.init_from="$source_run" >"$dir.log" 2>&1
    python3 - "$dir/metrics.jsonl" "$out/none_seed$seed/metrics.jsonl" "$config" "$seed" "$step0" <<'PY'
import json, sys
def lines(path):
    return [json.loads(l) for l in open(path)]
mine, base = lines(sys.argv[1]), lines(sys.argv[2])
val = {l["step"]: l for l in mine if l["split"] == "val"}
target = [l for l in base if l["split"] == "val"][-1]["loss"]
reach = next((s for s in sorted(val) if val[s]["loss"] <= target), None)
train = [l for l in mine if l["split"] == "train"]
def at(step):
    return "%8.4f" % val[step]["loss"] if step in val else "%8s" % "-"
last = max(val)
gate = train[-1].get("gate_mean")
print("%-10s %-5s %8s %s %s %s %8.4f %10s %9s %8.1f" % (sys.argv[3], sys.argv[4],
      sys.argv[5], at(100), at(200), at(400), val[last]["loss"],
      reach if reach is not None else "never", "%.3f" % gate if gate is not None else "-", train[-1]["elapsed_s"]))
PY
  done
done
