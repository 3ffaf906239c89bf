#!/usr/bin/env bash
# The gate metrics of a real run: a 3-layer model with a pair gate alone in block 0, pair + output
# (gumbel noise while training) in block 1 and output alone in block 2. Its val lines carry
# val_gate_mean, val_gate_std and val_gate_mean_by_layer (eval mode: `gattn eval` of the checkpoint
# gives the same numbers).
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/run}
seed: 3
device: cpu
data: {kind: text, path: $tmp/text.txt}
model:
  block_size: 16
  n_layer: 3
  n_head: 2
  n_embd: 16
  gates:
    - {kind: pair, layers: [0, 1]}
    - {kind: output, layers: [1, 2], activation: gumbel_sigmoid}
train: {batch_size: 4, max_steps: 20, log_every: 5, threads: 1}
optim: {lr: 1.0e-2, warmup_steps: 2}
eval: {every: 10, max_windows: 8}
checkpoint: {every: 10, keep_last: 0}
YAML

out=$("$gattn" train --config "$tmp/tiny.yaml" 2>&1) || fail "tiny run exited $?: $out"
grep -q "^eval at step 10: val loss [0-9.]* (128 tokens), val gate mean 0\.[0-9]* (std 0\.[0-9]*)" <<<"$out" ||
  fail "the eval line lacks the val gate mean: $out"
ev=$("$gattn" eval --checkpoint "$tmp/run/checkpoints/step_00000020") || fail "eval exited $?"

python3 - "$tmp/run" "$ev" <<'PY' || fail "gate metrics (above)"
import json, sys
run, ev = sys.argv[1], json.loads(sys.argv[2])
lines = [json.loads(l) for l in open(run + "/metrics.jsonl")]
train = {l["step"]: l for l in lines if l["split"] == "train"}
val = {l["step"]: l for l in lines if l["split"] == "val"}
assert sorted(train) == [1, 5, 10, 15, 20], sorted(train)
assert sorted(val) == [10, 20], sorted(val)

for step, v in val.items():
    for key in ("val_gate_mean", "val_gate_std", "val_gate_mean_by_layer"):
        assert key in v, (step, key, v)
    assert 0 < v["val_gate_mean"] < 1 and v["val_gate_std"] > 0, v
    by_layer = v["val_gate_mean_by_layer"]
    assert len(by_layer) == 3 and all(0 < g < 1 for g in by_layer), by_layer
    assert min(by_layer) <= v["val_gate_mean"] <= max(by_layer), v
# Eval mode: no gumbel noise, so the checkpoint evaluated again gives the same statistics; the
# training lines, with noise, spread the output gates far wider.
for key in ("loss", "val_gate_mean", "val_gate_std"):
    assert abs(ev[key] - val[20][key]) <= 1e-9 * abs(val[20][key]), (key, ev, val[20])
assert ev["val_gate_mean_by_layer"] == val[20]["val_gate_mean_by_layer"], (ev, val[20])
assert val[20]["val_gate_std"] < train[20]["gate_std"], (val[20], train[20]["gate_std"])
PY

# A model without gates logs no gate statistics.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/plain" 'model.gates=[]' >/dev/null 2>&1 ||
  fail "the run without gates failed"
grep -q 'val_gate' "$tmp/plain/metrics.jsonl" && fail "a model without gates logged gate metrics"
"$gattn" eval --checkpoint "$tmp/plain" | grep -q val_gate && fail "eval of a model without gates printed val_gate"
exit 0
