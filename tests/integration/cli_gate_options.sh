#!/usr/bin/env bash
# The shared gate options from the command line: a run whose gates have a temperature schedule, a
# ramp, dropout, hard thresholds, groups and a tanh-magnitude output gate stops, resumes and ends
# with the same metrics and weights, bit for bit, as the uninterrupted run; `gattn eval` of a
# checkpoint takes the checkpoint's step for the scheduled options (its loss equals the val line
# of that step); inspect reads the model.gates checkpoint; options a kind cannot use exit 2 with one
# line naming the key.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/full}
seed: 3
device: cpu
data: {kind: text, path: $tmp/text.txt}
model:
  block_size: 16
  n_layer: 2
  n_head: 2
  n_embd: 16
  gates:
    - {kind: score, groups: 2, temperature: 2.0, temperature_final: 0.5, temperature_steps: 8, dropout: 0.2}
    - {kind: forget, hard: true, hard_threshold: 0.2, input_norm: true, heads: [1]}
    - {kind: pair, shared_projection: true, ramp_start: 2, ramp_steps: 5, alpha_init: 0.7, hard: true, hard_threshold: 0.4}
    - {kind: output, activation: tanh_magnitude, granularity: headwise, ramp_start: 3, ramp_steps: 4}
train: {batch_size: 4, max_steps: 10, log_every: 1, threads: 1}
optim: {lr: 3.0e-3, warmup_steps: 2}
regularization: {gate_entropy: 0.01}
eval: {every: 3, max_windows: 4}
checkpoint: {every: 3, keep_last: 0}
YAML

"$gattn" train --config "$tmp/tiny.yaml" >"$tmp/full.out" 2>&1 || fail "uninterrupted run exited $?: $(cat "$tmp/full.out")"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" --stop-after 4 2>&1) || fail "stopped run exited $?: $out"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" --resume auto 2>&1) || fail "resume exited $?: $out"

same_metrics "$tmp/full/metrics.jsonl" "$tmp/split/metrics.jsonl" || fail "resumed metrics differ from the uninterrupted run's"
same_tensors "$tmp/full/checkpoints/step_00000010/model.safetensors" "$tmp/split/checkpoints/step_00000010/model.safetensors" ||
  fail "final weights differ"
grep -q '"gate_entropy"' "$tmp/full/metrics.jsonl" || fail "no gate_entropy logged"
python3 - "$tmp/full/checkpoints/step_00000010/model.safetensors" <<'PY' || fail "the option's parameters are missing"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
names = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
assert "blocks.0.attn.gate.pair.weight" in names and "blocks.0.attn.gate.output.magnitude_weight" in names, sorted(names)
PY

# eval of the step-6 checkpoint (mid-ramp for pair and output): the loss the run logged at step 6.
got=$("$gattn" eval --checkpoint "$tmp/full/checkpoints/step_00000006" 2>&1) || fail "eval exited $?: $got"
python3 - "$tmp/full/metrics.jsonl" "$got" <<'PY' || fail "eval of step 6 does not reproduce the run's val loss: $got"
import json, sys
val = [json.loads(l) for l in open(sys.argv[1]) if '"val"' in l]
logged = [d["loss"] for d in val if d["step"] == 6][0]
got = json.loads(sys.argv[2].strip().splitlines()[-1])["loss"]
assert abs(got - logged) <= 1e-6 * abs(logged), (got, logged)
PY

# inspect rebuilds a model.gates model from the checkpoint's config (entries hold only the keys
# their user wrote) and prints its gate statistics per layer and head.
out=$("$gattn" inspect --checkpoint "$tmp/full/checkpoints/step_00000006" 2>&1) || fail "inspect exited $?: $out"
grep -q "gate_mean by head" <<<"$out" || fail "inspect lacks the per-head gate means: $out"

expect() {  # expect PATTERN ARGS...: exit 2 and one stderr line matching PATTERN
  local pattern=$1
  shift
  local err rc
  err=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/refused" 'model.gates=[]' "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq 2 ]] || fail "$*: exit $rc, expected 2 ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "$*: '$err' does not mention '$pattern'"
}
expect "model.gate.activation: 'softplus' means nothing for gate kind 'forget'" model.gate.kind=forget model.gate.activation=softplus
expect "regularization.gate_entropy means nothing for model.gate (kind score): activation softplus" model.gate.kind=score model.gate.activation=softplus
expect "model.gate.groups: must divide model.n_head=2" model.gate.kind=forget model.gate.groups=3
expect "model.gate.dropout must be in \[0, 1)" model.gate.kind=pair model.gate.dropout=1.0
expect "model.gate.heads: head 2 out of range" model.gate.kind=pair 'model.gate.heads=[1,2]'
expect "model.gate.activation: 'tanh_magnitude' means nothing for gate kind 'pair'" model.gate.kind=pair model.gate.activation=tanh_magnitude
expect "model.gates\[1\].prune_threshold: needs attention weights at most softmax's" \
  'model.gates=[{kind: pair, activation: softplus}, {kind: forget, prune_threshold: 0.01}]'
expect "model.gate.heads: head 5 out of range" model.gate.kind=output 'model.gate.heads=[5]'
expect "model.gate.dropout" model.gate.kind=output model.gate.dropout=1.0
[[ ! -e "$tmp/refused" ]] || fail "a refused config created its run directory"

# The pair gate's softplus, dropout and gate_l1 (the fused op's Σ G) train and log the penalty.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/pair_forms" 'model.gates=[]' model.gate.kind=pair \
  model.gate.activation=softplus model.gate.dropout=0.2 regularization.gate_l1=0.01 regularization.gate_entropy=0 \
  train.max_steps=4 >"$tmp/pair_forms.out" 2>&1 || fail "pair softplus/dropout/gate_l1 run exited $?: $(cat "$tmp/pair_forms.out")"
grep -q '"gate_l1"' "$tmp/pair_forms/metrics.jsonl" || fail "the pair run logs no gate_l1: $(head -3 "$tmp/pair_forms/metrics.jsonl")"
echo ok
