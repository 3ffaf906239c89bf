#!/usr/bin/env bash
# Long context through the CLI: a model.position none run with a forget gate trains at a block of
# 16 and `gattn eval --context 64` evaluates it at 4× that, with the loss by log-spaced position
# bucket in its JSON line (the buckets' tokens add up to the line's, their losses average to its
# loss); `gattn report --context 64` draws loss against position; an MQAR run trains and reports
# answer accuracy. --context 0, negative, beyond a learned model's block or beyond memory, and MQAR
# sizes that do not fit, exit 2 with one line naming the setting.
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/none.yaml" <<YAML
run: {name: none, dir: $tmp/none}
seed: 5
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, position: none, gate: {kind: forget}}
train: {batch_size: 4, max_steps: 6, log_every: 3, threads: 1}
optim: {lr: 3.0e-3, warmup_steps: 2}
eval: {every: 6, max_windows: 4}
checkpoint: {every: 6, keep_last: 0}
YAML
"$gattn" train --config "$tmp/none.yaml" >"$tmp/none.out" 2>&1 || fail "position none run exited $?: $(cat "$tmp/none.out")"

got=$("$gattn" eval --checkpoint "$tmp/none" --context 64 eval.max_windows=3 2>&1) || fail "eval --context 64 exited $?: $got"
python3 - "$got" <<'PY' || fail "eval --context 64's line is wrong: $got"
import json, sys
line = json.loads(sys.argv[1].strip().splitlines()[-1])
assert line["context_length"] == 64, line
buckets = line["loss_by_position"]
assert [(b["from"], b["to"]) for b in buckets] == [(0, 1), (1, 2), (2, 4), (4, 8), (8, 16), (16, 32), (32, 64)], buckets
assert sum(b["tokens"] for b in buckets) == line["tokens"] == 3 * 64, (line["tokens"], buckets)
mean = sum(b["loss"] * b["tokens"] for b in buckets) / line["tokens"]
assert abs(mean - line["loss"]) <= 1e-5 * line["loss"], (mean, line["loss"])
assert all(b["tokens"] == 3 * (b["to"] - b["from"]) for b in buckets), buckets
PY
# At the block size the line has the buckets too, and no "context_length" (none was asked for).
got=$("$gattn" eval --checkpoint "$tmp/none" 2>&1) || fail "eval exited $?: $got"
python3 -c 'import json,sys; l=json.loads(sys.argv[1].splitlines()[-1]); assert "context_length" not in l and l["loss_by_position"][-1]["to"] == 16, l' "$got" ||
  fail "eval at the block: $got"

"$gattn" report "$tmp/none" --context 64 -o "$tmp/report.html" >/dev/null 2>&1 || fail "report --context exited $?"
grep -q 'id="loss-by-position"' "$tmp/report.html" || fail "the report has no loss-by-position chart"
grep -q 'T=64' "$tmp/report.html" || fail "the report's chart is not at the context asked for"

expect_refusal() {  # expect_refusal NAME NEEDLE CMD...: exit 2, one line, naming NEEDLE
  local name=$1 needle=$2 err rc
  shift 2
  err=$("$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$name: more than one line: $err"
  grep -q -- "$needle" <<<"$err" || fail "$name: '$err' does not name $needle"
}
expect_refusal "--context 0" "--context" "$gattn" eval --checkpoint "$tmp/none" --context 0
expect_refusal "--context -5" "context" "$gattn" eval --checkpoint "$tmp/none" --context -5
expect_refusal "--context 1e12" "--context" "$gattn" eval --checkpoint "$tmp/none" --context 1000000000000
"$make_checkpoint" "$tmp/learned" none >/dev/null || fail "make_checkpoint failed"
expect_refusal "--context past learned" "block_size=32" "$gattn" eval --checkpoint "$tmp/learned" --context 33 data.kind=text data.path="$tmp/text.txt"

# Pruning the forget gate's far key tiles: a block of 256 (4 key tiles) with strong forgetting
# (σ(1) ≈ 0.73 a step) logs the share of tile pairs skipped; bad thresholds are refused by name.
out=$("$gattn" train --config "$tmp/none.yaml" run.dir="$tmp/pruned" model.block_size=256 train.batch_size=2 \
  model.gate.init_bias=1 model.gate.prune_threshold=0.001 train.max_steps=2 train.log_every=1 eval.every=2 2>&1) ||
  fail "a pruned run exited $?: $out"
python3 - "$tmp/pruned/metrics.jsonl" <<'PY' || fail "the pruned run logs no skipped tiles"
import json, sys
train = [l for l in map(json.loads, open(sys.argv[1])) if l["split"] == "train"]
assert all(0 < l["attn_pruned_tile_frac"] < 1 for l in train), train
PY
expect_refusal "prune_threshold -0.1" "prune_threshold" "$gattn" train --config "$tmp/none.yaml" run.dir="$tmp/p2" \
  model.gate.prune_threshold=-0.1
expect_refusal "prune_threshold on output" "prune_threshold" "$gattn" train --config "$tmp/none.yaml" \
  run.dir="$tmp/p3" model.gate.kind=output model.gate.prune_threshold=0.001
[[ ! -e "$tmp/p2/checkpoints" && ! -e "$tmp/p3/checkpoints" ]] || fail "a refused threshold wrote checkpoints"

# MQAR: trains, reports answer accuracy; pairs that do not fit the sequence are refused.
cat >"$tmp/mqar.yaml" <<YAML
run: {name: mqar, dir: $tmp/mqar}
seed: 1
device: cpu
data: {kind: synthetic, task: mqar, vocab_size: 64, n_pairs: 8}
model: {block_size: 63, n_layer: 2, n_head: 2, n_embd: 16, position: rope}
train: {batch_size: 4, max_steps: 4, log_every: 2, threads: 1}
optim: {lr: 3.0e-3, warmup_steps: 1}
eval: {every: 4, max_windows: 8}
checkpoint: {every: 4, keep_last: 0}
YAML
out=$("$gattn" train --config "$tmp/mqar.yaml" 2>&1) || fail "mqar run exited $?: $out"
grep -q "answer accuracy" <<<"$out" || fail "the mqar run reports no answer accuracy: $out"
expect_refusal "mqar n_pairs 17" "data.n_pairs" "$gattn" train --config "$tmp/mqar.yaml" run.dir="$tmp/mqar2" data.n_pairs=17
[[ ! -e "$tmp/mqar2/checkpoints" ]] || fail "a refused mqar config wrote checkpoints"
echo PASS
