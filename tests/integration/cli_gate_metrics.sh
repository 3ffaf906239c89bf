#!/usr/bin/env bash
# The gate metrics of a real run: a 3-layer model with a pair gate alone in block 0, pair + output
# (gumbel noise while training) in block 1 and output alone in block 2. Its val lines carry
# val_gate_mean, val_gate_std and val_gate_mean_by_layer (eval mode: `gattn eval` of the checkpoint
# gives the same numbers), and its train lines pair_alpha_by_layer and pair_alpha, equal to
# σ(alpha) of the checkpoint written at that step.
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
import array, json, math, struct, sys
run, ev = sys.argv[1], json.loads(sys.argv[2])
lines = [json.loads(l) for l in open(run + "/metrics.jsonl")]
train = {l["step"]: l for l in lines if l["split"] == "train"}
val = {l["step"]: l for l in lines if l["split"] == "val"}
assert sorted(train) == [1, 5, 10, 15, 20], sorted(train)
assert sorted(val) == [10, 20], sorted(val)

def sigma(a): return 1 / (1 + math.exp(-a))
def alphas(step):
    raw = open(f"{run}/checkpoints/step_{step:08d}/model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    def value(name):
        b, e = header[name]["data_offsets"]
        assert header[name]["dtype"] == "F32" and header[name]["shape"] == [1], header[name]
        return array.array("f", raw[8 + n + b:8 + n + e])[0]
    assert not any(k.startswith("blocks.2.attn.gate.") and k.endswith("alpha") for k in header), "block 2 has no pair"
    return [sigma(value("blocks.0.attn.gate.alpha")), sigma(value("blocks.1.attn.gate.pair.alpha"))]

for step in (10, 20):
    logged = train[step]["pair_alpha_by_layer"]
    assert len(logged) == 3 and logged[2] is None, logged
    want = alphas(step)
    for got, w in zip(logged[:2], want):
        assert abs(got - w) <= 1e-7 * w, (step, logged, want)
    assert abs(train[step]["pair_alpha"] - sum(want) / 2) <= 1e-7, (step, train[step]["pair_alpha"], want)
# α moved with training: the lines report it after each step, not its start value.
assert train[20]["pair_alpha_by_layer"][0] != train[1]["pair_alpha_by_layer"][0]
assert all("pair_alpha_by_layer" in l for l in train.values())

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

# A model without gates logs neither.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/plain" 'model.gates=[]' >/dev/null 2>&1 ||
  fail "the run without gates failed"
grep -q 'val_gate\|pair_alpha' "$tmp/plain/metrics.jsonl" && fail "a model without gates logged gate metrics"
"$gattn" eval --checkpoint "$tmp/plain" | grep -q val_gate && fail "eval of a model without gates printed val_gate"
exit 0
