#!/usr/bin/env bash
# model.position rope through the CLI: a tiny rope model with a pair gate trains, stops and resumes
# bit for bit, its checkpoint holds no wpe.weight and loads for eval, sample and inspect; a
# position that is neither learned nor rope exits 2 with one line naming the key.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/rope.yaml" <<YAML
run: {name: rope, dir: $tmp/full}
seed: 5
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, position: rope, gate: {kind: pair}}
train: {batch_size: 4, max_steps: 8, log_every: 1, threads: 1}
optim: {lr: 3.0e-3, warmup_steps: 2}
eval: {every: 4, max_windows: 4}
checkpoint: {every: 4, keep_last: 0}
YAML

"$gattn" train --config "$tmp/rope.yaml" >"$tmp/full.out" 2>&1 || fail "rope run exited $?: $(cat "$tmp/full.out")"
out=$("$gattn" train --config "$tmp/rope.yaml" run.dir="$tmp/split" --stop-after 4 2>&1) || fail "stopped run exited $?: $out"
out=$("$gattn" train --config "$tmp/rope.yaml" run.dir="$tmp/split" --resume auto 2>&1) || fail "resume exited $?: $out"
same_metrics "$tmp/full/metrics.jsonl" "$tmp/split/metrics.jsonl" || fail "resumed metrics differ from the uninterrupted run's"
final="$tmp/full/checkpoints/step_00000008"
same_tensors "$final/model.safetensors" "$tmp/split/checkpoints/step_00000008/model.safetensors" || fail "final weights differ"
python3 - "$final/model.safetensors" <<'PY' || fail "the rope checkpoint's tensors or config are wrong"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
assert "wpe.weight" not in header and "wte.weight" in header, sorted(header)
assert json.loads(header["__metadata__"]["config"])["model"]["position"] == "rope"
PY

# The checkpoint rebuilds the rope model: eval reproduces the run's last val loss, sample and inspect run.
got=$("$gattn" eval --checkpoint "$final" 2>&1) || fail "eval exited $?: $got"
python3 - "$tmp/full/metrics.jsonl" "$got" <<'PY' || fail "eval of step 8 does not reproduce the run's val loss: $got"
import json, sys
val = [json.loads(l) for l in open(sys.argv[1]) if '"val"' in l]
logged = [d["loss"] for d in val if d["step"] == 8][0]
got = json.loads(sys.argv[2].strip().splitlines()[-1])["loss"]
assert abs(got - logged) <= 1e-6 * abs(logged), (got, logged)
PY
out=$("$gattn" sample --checkpoint "$final" --prompt "To be" --max-new-tokens 40 --seed 1 2>&1) || fail "sample exited $?: $out"
out=$("$gattn" inspect --checkpoint "$final" 2>&1) || fail "inspect exited $?: $out"
grep -q "\"position\":\"rope\"" <<<"$out" || fail "inspect does not show model.position: $out"

err=$("$gattn" train --config "$tmp/rope.yaml" run.dir="$tmp/refused" model.position=alibi 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "model.position=alibi: exit $rc, expected 2 ($err)"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "model.position=alibi: more than one line: $err"
grep -q "model.position" <<<"$err" || fail "'$err' does not name model.position"
[[ ! -e "$tmp/refused" ]] || fail "a refused config created its run directory"
echo PASS
