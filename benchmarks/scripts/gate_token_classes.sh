#!/usr/bin/env bash
# Is the context gate lower on punctuation and function words than on content words? ([GateAttn-Guide]
# §3.2: "在生成标点符号、停用词这些功能性token时gate会明显变小, 在生成实体词、关键内容时gate会变大".)
# Trains the context gate on two tasks over seeds 0, 1, 2 and reads each final checkpoint's gate by
# token class (`gattn inspect --windows 256`: framework/text/token_class.h says what the classes are):
#   char_lm — configs/shakespeare_char/context.yaml, the decoder's self-attention context gate
#             (y ← g ⊙ y + (1 − g) ⊙ q), 2000 steps;
#   pairs   — configs/seq2seq/shakespeare_pairs.yaml with the decoder's context gate on the
#             cross-attention (s ← g ⊙ c + (1 − g) ⊙ s, where: cross), 3000 steps.
# Prints one markdown table, mean ± std over the seeds, a row per task, attention, layer and reading
# of a position ("next": the token the position predicts, the article's "while generating"; "read":
# the position's own token), with content − function and content − punct and in how many seeds each
# is > 0. Runs already trained (checkpoints/latest at the last step) are kept. About 12 min on 2 cores.
#
#   benchmarks/scripts/gate_token_classes.sh [OUT_DIR]   (default runs/gate_token_classes)
#
# GATTN_BINARY picks the binary (default build/gattn).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gattn=${GATTN_BINARY:-build/gattn}
out=${1:-runs/gate_token_classes}
./scripts/shakespeare_pairs.sh >/dev/null
mkdir -p "$out"
rows="$out/token_classes.tsv"
: >"$rows"
train() {  # task seed config overrides...
  local task=$1 seed=$2 config=$3 dir="$out/$1_seed$2"
  shift 3
  if [[ ! -f $dir/checkpoints/latest ]]; then
    rm -rf "$dir"
    "$gattn" train --config "$config" "seed=$seed" "run.dir=$dir" eval.every=100000 train.log_every=500 "$@" \
      >"$out/$task.seed$seed.log" 2>&1
  fi
  "$gattn" inspect --checkpoint "$dir/checkpoints/$(cat "$dir/checkpoints/latest")" --windows 256 |
    sed -n '/^gate by token class on/,$p' | tail -n +3 | sed "s/^/$task\t$seed\t/" >>"$rows"
}
for seed in 0 1 2; do
  train char_lm "$seed" configs/shakespeare_char/context.yaml
  train pairs "$seed" configs/seq2seq/shakespeare_pairs.yaml 'model.gates=[{kind: context, where: cross}]'
done
/usr/bin/python3 - "$rows" <<'PY'
import re, statistics, sys
from collections import defaultdict
classes = ["punct", "function", "content", "other"]
cells = defaultdict(list)  # (task, site, layer, view) -> [{class: mean}] per seed
for line in open(sys.argv[1]):
    task, seed, rest = line.rstrip("\n").split("\t")
    f = rest.split()
    site, layer, view = f[0], int(f[1]), f[2]
    values = re.findall(r"(-|[0-9.]+) \((\d+)\)", rest)
    cells[(task, site, layer, view)].append({c: (float(m) if m != "-" else None) for c, (m, n) in zip(classes, values)})
def ms(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:.4f}"
def diff(seeds, a, b):
    d = [s[a] - s[b] for s in seeds if s[a] is not None and s[b] is not None]
    return (f"{statistics.mean(d):+.4f} ± {statistics.stdev(d):.4f}" if len(d) > 1 else "–"), sum(x > 0 for x in d), len(d)
print("| task | attention | layer | position's token | punct | function | content | other | content − function | content − punct |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (task, site, layer, view), seeds in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][3] != "next", kv[0][1], kv[0][2])):
    row = [task, site, str(layer), view] + [ms([s[c] for s in seeds]) for c in classes]
    for a, b in (("content", "function"), ("content", "punct")):
        text, pos, n = diff(seeds, a, b)
        row.append(f"{text} ({pos}/{n} > 0)")
    print("| " + " | ".join(row) + " |")
PY
