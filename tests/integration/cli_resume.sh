#!/usr/bin/env bash
# Exact resume: N steps, a stop, --resume auto and the rest give the same metrics (loss, lr,
# grad_norm, gate statistics, val losses) and the same final weights, bit for bit, as the
# uninterrupted run, with gradient accumulation, a cosine schedule stopped mid-warm-up, a gate group
# still frozen at the stop and gumbel noise (the model's RNG stream). Also: --resume DIR from an
# earlier checkpoint drops the later metrics lines, --resume auto without a checkpoint starts fresh,
# retention keeps keep_last and keep_every, and inspect prints the training state.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/full}
seed: 5
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, gate: {kind: output, activation: gumbel_sigmoid}}
train: {batch_size: 4, max_steps: 10, grad_accum: 2, log_every: 1, threads: 1}
optim:
  lr: 3.0e-3
  schedule: cosine
  warmup_steps: 6
  min_lr: 1.0e-4
  param_groups:
    - {name: gates, match: ["*.attn.gate.*"], lr_scale: 0.5, weight_decay: 0.0, freeze_steps: 6}
eval: {every: 3, max_windows: 4}
checkpoint: {every: 3, keep_last: 0}
YAML


# The uninterrupted run.
"$gattn" train --config "$tmp/tiny.yaml" >"$tmp/full.out" 2>&1 || fail "uninterrupted run exited $?: $(cat "$tmp/full.out")"
[[ $(grep -c '"split":"train"' "$tmp/full/metrics.jsonl") -eq 10 ]] || fail "expected 10 train lines"

# Stopped after 4 steps (mid warm-up, gates frozen until step 6, step 4 not a checkpoint step). The
# param_groups override restates the file's value in words a shell must quote (spaces, ', *, [).
groups="optim.param_groups=[{name: gates, match: ['*.attn.gate.*'], lr_scale: 0.5, weight_decay: 0.0, freeze_steps: 6}]"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" "$groups" --stop-after 4 2>&1) ||
  fail "stopped run exited $?: $out"
grep -q "stopped at step 4 of 10" <<<"$out" || fail "no stop message: $out"
grep -q -- "--resume auto" <<<"$out" || fail "no resume command: $out"
[[ $(cat "$tmp/split/checkpoints/latest") == "step_00000004" ]] || fail "latest is not step 4"
for f in model.safetensors optimizer.safetensors state.json; do
  [[ -f "$tmp/split/checkpoints/step_00000004/$f" ]] || fail "checkpoint lacks $f"
done
[[ -z $(find "$tmp/split/checkpoints" -name '.tmp*' -o -name '*.tmp') ]] || fail "temporary files left behind"
python3 - "$tmp/split/checkpoints/step_00000004/state.json" <<'PY' || fail "state.json lacks a field"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["step"] == 4 and s["world_size"] == 1, s
assert set(s["rng"]) == {"data", "model_noise"}, s["rng"]
assert s["rng"]["data"]["offset"] > 0 and s["rng"]["model_noise"]["offset"] > 0, s["rng"]
assert s["config"]["model"]["n_layer"] == 2 and s["config_hash"].startswith("fnv1a64:")
assert s["lr"]["gates"] == 0.0 and s["lr"]["default"] > 0, s["lr"]
PY

# The printed command, as printed, continues the run to the end.
cmd=$(grep -A1 "resume with:" <<<"$out" | tail -1)
out=$(eval "$cmd" 2>&1) || fail "resume exited $?: $out"
grep -q "resumed from $tmp/split/checkpoints/step_00000004 at step 4" <<<"$out" || fail "no resume message: $out"
same_metrics "$tmp/full/metrics.jsonl" "$tmp/split/metrics.jsonl" || fail "resumed metrics differ from the uninterrupted run's"
same_tensors "$tmp/full/checkpoints/step_00000010/model.safetensors" "$tmp/split/checkpoints/step_00000010/model.safetensors" ||
  fail "final weights differ"
same_tensors "$tmp/full/checkpoints/step_00000010/optimizer.safetensors" \
  "$tmp/split/checkpoints/step_00000010/optimizer.safetensors" || fail "final optimizer state differs"

# --resume DIR from an earlier checkpoint of a finished run: the later lines go, the rest is redone
# identically (and only the lines after step 3 are rewritten).
cp -r "$tmp/full" "$tmp/rewind"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/rewind" --resume "$tmp/rewind/checkpoints/step_00000003" 2>&1) ||
  fail "--resume DIR exited $?: $out"
grep -q "later metrics lines dropped" <<<"$out" || fail "no rewind message: $out"
same_metrics "$tmp/full/metrics.jsonl" "$tmp/rewind/metrics.jsonl" || fail "metrics after --resume DIR differ"

# A resume may change keys outside the model and data (here max_steps) and says so.
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" train.max_steps=12 --resume auto 2>&1) ||
  fail "resume with a longer max_steps exited $?: $out"
grep -q "config changed: train.max_steps: 10 -> 12" <<<"$out" || fail "config change not reported: $out"
[[ $(cat "$tmp/split/checkpoints/latest") == "step_00000012" ]] || fail "longer run did not reach step 12"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/split" train.max_steps=12 --resume auto 2>&1) ||
  fail "resume of a finished run exited $?"
grep -q "nothing to train" <<<"$out" || fail "a finished run resumed again should say so: $out"

# --resume auto where no checkpoint exists yet: a fresh start, with a message; the metrics lines of
# an attempt that died before its first checkpoint go.
mkdir -p "$tmp/fresh"
echo '{"step":1,"split":"train","loss":9}' >"$tmp/fresh/metrics.jsonl"
out=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/fresh" train.max_steps=3 --resume auto 2>&1) ||
  fail "fresh --resume auto exited $?: $out"
grep -q "no checkpoint" <<<"$out" || fail "no fresh-start message: $out"
[[ $(grep -c '"loss":9' "$tmp/fresh/metrics.jsonl") -eq 0 ]] || fail "stale metrics line kept"

# Retention: keep_last 2 and milestones every 4 leave steps 4, 8 and the newest two.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/keep" train.max_steps=10 checkpoint.every=1 \
  checkpoint.keep_last=2 checkpoint.keep_every=4 >/dev/null 2>&1 || fail "retention run failed"
kept=$(cd "$tmp/keep/checkpoints" && echo step_*)
[[ $kept == "step_00000004 step_00000008 step_00000009 step_00000010" ]] || fail "retention kept: $kept"

# inspect shows where training stood.
out=$("$gattn" inspect --checkpoint "$tmp/split/checkpoints/step_00000004" 2>&1) || fail "inspect exited $?: $out"
for needle in "state: step 4" "lr at step 4" "data position: Philox seed 5, stream 2" "AdamW step counts: default 4 gates 0"; do
  grep -q "$needle" <<<"$out" || fail "inspect lacks '$needle': $out"
done
echo ok
