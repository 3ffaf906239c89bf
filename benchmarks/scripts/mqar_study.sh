#!/usr/bin/env bash
# MQAR accuracy against sequence length (docs/long-context.md, docs/results.md): trains
# configs/long_context/mqar.yaml — 8 key-value pairs, a 2-layer width-64 one-head rope model —
# with no gate and with the output, score, forget and pair gates at sequence lengths 64 … 2048 (the
# batch keeps 4096 tokens a step, so every run sees the same tokens), over the given seeds, and
# prints the answer accuracy on 256 validation sequences (mean ± std over seeds) with the median
# training tokens/s. Results go to runs/mqar/results.jsonl (appended; the table takes each cell's
# newest line). EXTRA adds config overrides to every run: two copies with train.threads=1 and
# different KINDS share 2 cores better than one with 2 threads (the models are small).
#
#   benchmarks/scripts/mqar_study.sh [SEED ...]     # default: 0 1 2
#   KINDS="none forget" LENGTHS="256 2048" STEPS=200 benchmarks/scripts/mqar_study.sh 0
#   KINDS="none output score" EXTRA="train.threads=1" benchmarks/scripts/mqar_study.sh 0 &
#   KINDS="forget pair" EXTRA="train.threads=1" benchmarks/scripts/mqar_study.sh 0
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=(0 1 2)
gattn=${GATTN:-./build/gattn}
read -r -a kinds <<<"${KINDS:-none output score forget pair}"
read -r -a lengths <<<"${LENGTHS:-64 256 512 1024 2048}"
read -r -a extra <<<"${EXTRA:-}"
steps=()
[[ -n ${STEPS:-} ]] && steps=(train.max_steps="$STEPS" eval.every="$STEPS" checkpoint.every="$STEPS")
out=runs/mqar
mkdir -p "$out"
results="$out/results.jsonl"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); binary $gattn"
for seed in "${seeds[@]}"; do
  for length in "${lengths[@]}"; do
    for kind in "${kinds[@]}"; do
      dir="$out/${kind}_L${length}_seed$seed"
      rm -rf "$dir"
      "$gattn" train --config configs/long_context/mqar.yaml seed="$seed" run.dir="$dir" model.gate.kind="$kind" \
        model.block_size=$((length - 1)) train.batch_size=$((4096 / length)) "${steps[@]}" "${extra[@]}" >"$dir.log" 2>&1
      line=$("$gattn" eval --checkpoint "$dir" eval.max_windows=256)
      python3 - "$line" "$dir/metrics.jsonl" "$kind" "$length" "$seed" >>"$results" <<'PY'
import json, sys
line = json.loads(sys.argv[1])
train = [l for l in map(json.loads, open(sys.argv[2])) if l["split"] == "train"]
print(json.dumps({"kind": sys.argv[3], "length": int(sys.argv[4]), "seed": int(sys.argv[5]),
                  "accuracy": line["accuracy"], "loss": line["loss"], "seconds": train[-1]["elapsed_s"],
                  "tokens_per_s": sorted(l["tokens_per_s"] for l in train)[len(train) // 2]}))
PY
      echo "done: $kind at $length, seed $seed: $(tail -1 "$results")"
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
cells = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    cells.setdefault(d["kind"], {}).setdefault(d["length"], {})[d["seed"]] = d  # the newest
lengths = sorted({n for k in cells.values() for n in k})
def cell(ds):
    if not ds: return "–"
    acc = [100 * d["accuracy"] for d in ds]
    s = "%.1f" % acc[0] if len(acc) == 1 else "%.1f ± %.1f" % (statistics.mean(acc), statistics.stdev(acc))
    return s + " (%.1fk tok/s)" % (statistics.median(d["tokens_per_s"] for d in ds) / 1000)
print("\nMQAR answer accuracy % (mean ± std over seeds; median training tokens/s)")
print("| gate | seeds | " + " | ".join("L = %d" % n for n in lengths) + " |")
print("| --- | --- | " + " | ".join("---" for _ in lengths) + " |")
for kind, by_length in cells.items():
    seeds = max(len(v) for v in by_length.values())
    print("| %s | %d | %s |" % (kind, seeds, " | ".join(cell(list(by_length.get(n, {}).values())) for n in lengths)))
PY
