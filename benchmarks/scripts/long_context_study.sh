#!/usr/bin/env bash
# Length extrapolation (docs/long-context.md, docs/results.md): trains the configs of
# configs/long_context/ at a block of 128 Tiny Shakespeare BPE tokens — rotary positions without a
# gate, with the output, score and forget gates, and the forget gate without positions — each gate
# with and without its input_norm, over the given seeds, then evaluates every run on the whole val
# split at contexts 128 … 2048 (`gattn eval --context N eval.max_windows=0`). Prints two tables,
# mean ± std over the seeds: the val loss over whole windows of each context, and the loss of the
# window's last position bucket (positions N/2 … N−1, the tokens only the longer context has).
# Results go to runs/long_context/results.jsonl (one line per run and context). Makes the BPE
# shards first (scripts/shakespeare_bpe.sh).
#
#   benchmarks/scripts/long_context_study.sh [SEED ...]     # default: 0 1 2
#   CONFIGS="rope_none nope_forget" CONTEXTS="128 512" NORMS=false benchmarks/scripts/long_context_study.sh 0
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
seeds=("$@")
[[ ${#seeds[@]} -gt 0 ]] || seeds=(0 1 2)
gattn=${GATTN:-./build/gattn}
read -r -a configs <<<"${CONFIGS:-rope_none rope_output rope_score nope_forget rope_forget}"
read -r -a contexts <<<"${CONTEXTS:-128 256 512 1024 2048}"
GATTN=$gattn ./scripts/shakespeare_bpe.sh >/dev/null
out=runs/long_context
mkdir -p "$out"
results="$out/results.jsonl"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); binary $gattn"
for seed in "${seeds[@]}"; do
  for config in "${configs[@]}"; do
    read -r -a norms <<<"${NORMS:-false true}"
    [[ $config == *_none ]] && norms=(false)  # no gate, no gate input
    for norm in "${norms[@]}"; do
      name=$config
      overrides=()
      if [[ $norm == true ]]; then
        name=${config}+input_norm
        overrides=(model.gate.input_norm=true)
      fi
      dir="$out/${name}_seed$seed"
      rm -rf "$dir"
      "$gattn" train --config "configs/long_context/$config.yaml" seed="$seed" run.dir="$dir" "${overrides[@]}" \
        >"$dir.log" 2>&1
      for n in "${contexts[@]}"; do
        line=$("$gattn" eval --checkpoint "$dir" --context "$n" eval.max_windows=0)
        python3 -c 'import json, sys; l = json.loads(sys.argv[1]); l.update(run=sys.argv[2], seed=int(sys.argv[3])); print(json.dumps(l))' \
          "$line" "$name" "$seed" >>"$results"
      done
      echo "done: $name seed $seed: $(python3 -c 'import json, sys
train = [l for l in map(json.loads, open(sys.argv[1])) if l["split"] == "train"]
print("%.0f s, median %.0f tokens/s" % (train[-1]["elapsed_s"], sorted(l["tokens_per_s"] for l in train)[len(train) // 2]))' \
        "$dir/metrics.jsonl")"
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    last = d["loss_by_position"][-1]
    rows.setdefault(d["run"], {}).setdefault(d.get("context_length", d.get("context")), {})[d["seed"]] = (d["loss"], last["loss"])  # the newest
contexts = sorted({c for r in rows.values() for c in r})
def cell(values):
    if not values: return "–"
    if len(values) == 1: return "%.3f" % values[0]
    return "%.3f ± %.3f" % (statistics.mean(values), statistics.stdev(values))
for title, k in (("val loss over whole windows of N tokens", 0), ("val loss of positions N/2 … N−1", 1)):
    print("\n" + title + " (mean ± std over seeds)")
    print("| run | seeds | " + " | ".join("N = %d" % c for c in contexts) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in contexts) + " |")
    for run, by_context in rows.items():
        seeds = max(len(v) for v in by_context.values())
        print("| %s | %d | %s |" % (run, seeds, " | ".join(cell([v[k] for v in by_context.get(c, {}).values()]) for c in contexts)))
PY
