#!/usr/bin/env bash
# `gattn train`: a tiny real run writes config.yaml, metrics.jsonl (train and val lines with the
# keys of docs/run-directory.md and gate statistics) and a checkpoint that `gattn inspect` reads; bad input exits 2
# or 3 with one line and writes nothing; a run that keeps producing NaN exits 4.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# A small text corpus: 3000 bytes of a repeated verse.
write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/run}
seed: 3
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, gate: {kind: output}}
train: {batch_size: 4, max_steps: 20, log_every: 5, threads: 1}
optim:
  lr: 3.0e-3
  warmup_steps: 2
  param_groups:
    - {name: gates, match: ["*.attn.gate.*"], lr_scale: 0.1, weight_decay: 0.0}
eval: {every: 10, max_windows: 8}
checkpoint: {every: 10}
YAML

out=$("$gattn" train --config "$tmp/tiny.yaml" 2>&1) || fail "tiny run exited $?: $out"
[[ -f "$tmp/run/config.yaml" ]] || fail "no config.yaml"
grep -q "vocab_size: " "$tmp/run/config.yaml" || fail "config.yaml lacks the resolved vocab_size"
m="$tmp/run/metrics.jsonl"
[[ $(grep -c '"split":"train"' "$m") -eq 5 ]] || fail "expected 5 train lines (steps 1,5,10,15,20): $(cat "$m")"
[[ $(grep -c '"split":"val"' "$m") -eq 2 ]] || fail "expected 2 val lines (steps 10, 20)"
for key in '"step"' '"loss"' '"lr"' '"grad_norm"' '"tokens_per_s"' '"elapsed_s"' '"gate_mean"' '"gate_std"' \
           '"gate_frac_lt_0.1"' '"gate_frac_gt_0.9"' '"attn_entropy"' '"sink_ratio"' '"gate_mean_by_layer"'; do
  grep '"split":"train"' "$m" | tail -1 | grep -q "$key" || fail "train line lacks $key"
done
[[ $(cat "$tmp/run/checkpoints/latest") == "step_00000020" ]] || fail "latest does not point at step_00000020"
[[ -f "$tmp/run/checkpoints/step_00000010/model.safetensors" ]] || fail "no step 10 checkpoint"
"$gattn" inspect --checkpoint "$tmp/run/checkpoints/step_00000020" | grep -q "validation split" || fail "inspect of the run"
grep -q "run directory: $tmp/run" <<<"$out" || fail "the run directory is not printed"
grep -q "sample:" <<<"$out" || fail "no sample at the end"

# gattn eval reproduces the run's final val loss from the checkpoint alone.
ev=$("$gattn" eval --checkpoint "$tmp/run/checkpoints/step_00000020") || fail "eval exited $?"
grep -q '"tokens":' <<<"$ev" || fail "eval printed no tokens: $ev"
python3 - "$m" "$ev" <<'PY' || fail "eval loss differs from the run's final val loss"
import json, sys
val = [json.loads(l) for l in open(sys.argv[1]) if '"split":"val"' in l][-1]
ev = json.loads(sys.argv[2])
sys.exit(0 if abs(val["loss"] - ev["loss"]) < 1e-6 else 1)
PY
# A bf16 run's checkpoint evaluates on a CPU (in f32: mixed precision is a GPU feature), the same loss.
ev16=$("$gattn" eval --checkpoint "$tmp/run/checkpoints/step_00000020" train.precision=bf16) || fail "eval of a bf16 config exited $?"
[[ "$ev16" == "$ev" ]] || fail "eval with train.precision=bf16 on the CPU differs: $ev16 vs $ev"
"$gattn" eval --checkpoint "$tmp/run/nope" >/dev/null 2>&1; rc=$?
[[ $rc -eq 3 ]] || fail "eval of a missing checkpoint exited $rc, expected 3"

# The same run again into the same directory: refused, nothing changed.
before=$(md5sum "$m")
"$gattn" train --config "$tmp/tiny.yaml" >/dev/null 2>&1; rc=$?
[[ $rc -eq 2 ]] || fail "re-run into an existing run dir exited $rc, expected 2"
[[ $(md5sum "$m") == "$before" ]] || fail "the existing run was modified"

# Bad input: each exits 2 or 3 with one line, and creates no run directory.
expect() {  # expect CODE WHAT ARGS...
  local code=$1 what=$2
  shift 2
  local err rc
  err=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/bad" "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq $code ]] || fail "$what: exit $rc, expected $code ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$what: more than one line: $err"
  [[ ! -e "$tmp/bad" ]] || fail "$what: wrote $tmp/bad"
}
expect 3 "missing data file" data.path="$tmp/nope.txt"
: >"$tmp/empty.txt"
expect 3 "empty data file" data.path="$tmp/empty.txt"
expect 3 "block larger than the data" model.block_size=4096
expect 2 "glob matching nothing" 'optim.param_groups=[{name: g, match: ["*.nothing.*"]}]'
expect 2 "lr <= 0" optim.lr=0
expect 2 "unknown key" optim.lrr=1
expect 2 "n_embd not divisible by n_head" model.n_head=3
expect 2 "bf16 on the CPU" device=cpu train.precision=bf16
# device=cuda without a usable GPU (the GPU tests cover training on one where there is one).
if ! nvidia-smi -L >/dev/null 2>&1; then expect 2 "device cuda without a GPU" device=cuda; fi
"$gattn" train --config "$tmp/missing.yaml" >/dev/null 2>&1; rc=$?
[[ $rc -eq 2 ]] || fail "missing config exited $rc, expected 2"

# A learning rate that blows the weights up: NaN losses, exit 4 after max_bad_steps.
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/nan" optim.lr=1e30 optim.grad_clip=0 optim.warmup_steps=0 \
  train.max_bad_steps=2 >/dev/null 2>&1; rc=$?
[[ $rc -eq 4 ]] || fail "diverging run exited $rc, expected 4"

# The NaN guard names the first non-finite tensor (here the loss) and writes nothing once the steps
# go bad: step 1 updates with lr 1e30 and is checkpointed, steps 2 and 3 have a non-finite loss.
err=$("$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/nan2" optim.lr=1e30 optim.grad_clip=0 optim.warmup_steps=0 \
  train.max_bad_steps=2 checkpoint.every=1 2>&1 >/dev/null); rc=$?
[[ $rc -eq 4 ]] || fail "NaN guard: exit $rc, expected 4 ($err)"
grep -q "non-finite loss at step 3" <<<"$err" || fail "NaN guard: the message does not name the loss: $err"
grep -q "the last checkpoint, $tmp/nan2/checkpoints/step_00000001, is untouched" <<<"$err" ||
  fail "NaN guard: the message does not name the last checkpoint: $err"
[[ $(ls "$tmp/nan2/checkpoints") == $'latest\nstep_00000001' ]] || fail "NaN guard: checkpoints after the bad steps"
"$gattn" inspect --checkpoint "$tmp/nan2/checkpoints/step_00000001" >/dev/null 2>&1 ||
  fail "NaN guard: the last good checkpoint does not load"
echo ok
