#!/usr/bin/env bash
# Soft against hard evaluation of the gates of configs/ablation/gumbel_hard.yaml ([GateAttn-Guide]
# §5.3: gumbel in training, hard selection at inference): each cell's final checkpoint is evaluated
# as trained (soft gates, σ(z/τ)) and with `model.gate.hard=true` (1[σ(z/τ) > 0.5]), on the whole
# val split's first 256 windows, and with each query attending to its 8 highest-scoring keys
# (`gattn bench generate --top-k-keys 8`, soft gates; the block is 24). Prints one markdown table,
# mean ± std over the seeds.
#
#   ./build/gattn ablate --config configs/ablation/gumbel_hard.yaml
#   benchmarks/scripts/gumbel_hard_eval.sh [ABLATION_DIR ...]   (default runs/ablation_gumbel_hard)
#
# GATTN_BINARY picks the binary (default build/gattn).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gattn=${GATTN_BINARY:-build/gattn}
dirs=("$@")
((${#dirs[@]})) || dirs=(runs/ablation_gumbel_hard)
for dir in "${dirs[@]}"; do
  [[ -d $dir/cells ]] || { echo "gumbel_hard_eval: no cells in $dir (run the ablation first)" >&2; exit 2; }
done
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for cell in $(for dir in "${dirs[@]}"; do printf '%s\n' "$dir"/cells/*/; done); do
  name=$(basename "$cell")
  [[ -f $cell/checkpoints/latest ]] || continue  # a cell still training (or failed): left out
  soft=$("$gattn" eval --checkpoint "$cell" eval.max_windows=256)
  hard=$("$gattn" eval --checkpoint "$cell" eval.max_windows=256 model.gate.hard=true)
  top_k=$("$gattn" bench generate --checkpoint "$cell" --kv-policy full --top-k-keys 8 --max-windows 256 \
    --repeats 1 --gen-tokens 1 --json)
  printf '%s\t%s\t%s\t%s\n' "$name" "$soft" "$hard" "$top_k" >>"$rows"
done
/usr/bin/python3 - "$rows" <<'PY'
import json, re, statistics, sys
from collections import defaultdict
cells = defaultdict(list)
for line in open(sys.argv[1]):
    name, soft, hard, top_k = line.rstrip("\n").split("\t")
    data = "noisy_recall" if "noisy-recall" in name else "shakespeare_char"
    kind = re.search(r"kind-(output|score|pair)", name).group(1)
    act = "gumbel_sigmoid" if "gumbel" in name else "sigmoid"
    cells[(data, kind, act)].append((json.loads(soft), json.loads(hard), json.loads(top_k)))
def ms(xs):
    return f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:.4f}"
def pct(xs):
    return f"{100 * statistics.mean(xs):.1f} ± {100 * statistics.stdev(xs):.1f}" if len(xs) > 1 else f"{100 * xs[0]:.1f}"
print("| data | gate | trained with | seeds | soft val loss | hard val loss | hard − soft | top-8 keys val loss | soft acc (%) | hard acc (%) |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (data, kind, act), runs in sorted(cells.items()):
    s = [r[0]["loss"] for r in runs]; h = [r[1]["loss"] for r in runs]; k = [r[2]["val_loss"] for r in runs]
    acc = "accuracy" in runs[0][0]
    sa = pct([r[0]["accuracy"] for r in runs]) if acc else "–"
    ha = pct([r[1]["accuracy"] for r in runs]) if acc else "–"
    print(f"| {data} | {kind} | {act} | {len(runs)} | {ms(s)} | {ms(h)} | {ms([b - a for a, b in zip(s, h)])} | {ms(k)} | {sa} | {ha} |")
PY
