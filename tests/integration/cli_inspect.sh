#!/usr/bin/env bash
# `gattn inspect`: prints tensors, config and per-layer gate statistics of a checkpoint; refuses a
# missing or damaged checkpoint with exit 3 and one line naming the file; usage errors exit 2.
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for kind in none output score forget pair context routed; do
  "$make_checkpoint" "$tmp/$kind" "$kind" || fail "could not make a $kind checkpoint"
  out=$("$gattn" inspect --checkpoint "$tmp/$kind" 2>&1) || fail "inspect of $kind exited $?: $out"
  grep -q "format: gattn/1" <<<"$out" || fail "$kind: no format line"
  grep -q "blocks.1.attn.qkv.weight" <<<"$out" || fail "$kind: no qkv tensor listed"
  grep -q "gate statistics" <<<"$out" || fail "$kind: no gate statistics"
  grep -Eq "^ +1 " <<<"$out" || fail "$kind: no row for layer 1"
done
# A gated kind lists its gate parameters and a gate mean.
"$gattn" inspect --checkpoint "$tmp/output" | grep -q "blocks.0.attn.gate.weight" || fail "output gate weight not listed"
"$gattn" inspect --checkpoint "$tmp/routed" | grep -q "blocks.0.attn.router.weight" || fail "router weight not listed"

# Statistics on a text sample when the config names one.
printf 'abcdefghijklmnop%.0s' $(seq 1 40) >"$tmp/text.txt"
"$make_checkpoint" "$tmp/withtext" output "$tmp/text.txt" || fail "could not make checkpoint with text"
"$gattn" inspect --checkpoint "$tmp/withtext" | grep -q "validation split" || fail "text sample not used"

# Missing checkpoint: exit 3, one line.
err=$("$gattn" inspect --checkpoint "$tmp/nope" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "missing checkpoint exited $rc, expected 3"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "missing checkpoint printed more than one line: $err"

# Truncated file: exit 3 naming the file, and the file is left as it was.
cp -r "$tmp/none" "$tmp/trunc"
truncate -s 100 "$tmp/trunc/model.safetensors"
err=$("$gattn" inspect --checkpoint "$tmp/trunc" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "truncated checkpoint exited $rc, expected 3"
grep -q "model.safetensors" <<<"$err" || fail "error does not name the file: $err"

# A flipped byte in the header.
cp -r "$tmp/none" "$tmp/flip"
printf '\x00' | dd of="$tmp/flip/model.safetensors" bs=1 seek=12 conv=notrunc 2>/dev/null
"$gattn" inspect --checkpoint "$tmp/flip" >/dev/null 2>&1; rc=$?
[[ $rc -eq 3 ]] || fail "corrupted header exited $rc, expected 3"

# A weights-only checkpoint says it has no training state.
"$gattn" inspect --checkpoint "$tmp/none" | grep -q "state: (no state.json" || fail "weights-only state line"

# A checkpoint of `gattn train`: step, lr per group, data position and optimizer step counts; a
# damaged state.json is refused like a damaged weights file.
"$gattn" train --config /dev/null run.dir="$tmp/run" device=cpu data.kind=synthetic model.block_size=8 \
  model.n_layer=1 model.n_head=1 model.n_embd=8 train.batch_size=2 train.max_steps=3 train.threads=1 \
  optim.warmup_steps=0 optim.schedule=constant optim.lr=0.002 eval.max_windows=1 >/dev/null 2>&1 || fail "tiny training run failed"
out=$("$gattn" inspect --checkpoint "$tmp/run/checkpoints/step_00000003") || fail "inspect of a trained checkpoint exited $?"
for needle in "state: step 3, world size 1" "lr at step 3: default 0.002" "data position: Philox seed 0, stream 2, offset" \
              "optimizer: 32 moment tensors" "AdamW step counts: default 3"; do
  grep -q "$needle" <<<"$out" || fail "inspect lacks '$needle': $out"
done
grep -q "gate by token class: (none: the run's tokens have no text)" <<<"$out" ||
  fail "a synthetic run's token classes: $out"

# The gate by token class on a text run with output gates: a row per layer and view, and each
# view's counts add up to the windows' positions (4 windows of 16 characters).
for i in $(seq 1 40); do echo "To be, or not to be, that is the question: $i"; done >"$tmp/verse.txt"
"$gattn" train --config /dev/null run.dir="$tmp/textrun" device=cpu data.kind=text data.path="$tmp/verse.txt" \
  model.block_size=16 model.n_layer=2 model.n_head=2 model.n_embd=16 model.gate.kind=output train.batch_size=4 \
  train.max_steps=5 train.threads=1 eval.max_windows=2 >/dev/null 2>&1 || fail "text training run failed"
"$gattn" inspect --checkpoint "$tmp/textrun/checkpoints/step_00000005" --windows 4 >"$tmp/classes.txt" ||
  fail "inspect --windows 4 exited $?"
/usr/bin/python3 - "$tmp/classes.txt" <<'PY' || fail "the token-class table: $(tail -6 "$tmp/classes.txt")"
import re, sys
text = open(sys.argv[1]).read()
assert "gate by token class on 4 val window(s)" in text, text
rows = re.findall(r"^  self +(\d+)  (read|next) +(.*)$", text, re.M)
assert sorted((int(l), v) for l, v, _ in rows) == [(0, "next"), (0, "read"), (1, "next"), (1, "read")], rows
for _, _, cells in rows:
    counts = [int(n) for n in re.findall(r"\((\d+)\)", cells)]
    assert len(counts) == 4 and sum(counts) == 4 * 16, cells
    assert min(counts) > 0, "the verse has punctuation, function and content words and spaces"
PY
err=$("$gattn" inspect --checkpoint "$tmp/textrun/checkpoints/step_00000005" --windows 0 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "--windows 0 exited $rc, expected 2"
grep -q -- "--windows must be >= 1" <<<"$err" || fail "--windows 0: $err"

sed -i 's/"step": 3,/"step": 7,/' "$tmp/run/checkpoints/step_00000003/state.json"
err=$("$gattn" inspect --checkpoint "$tmp/run/checkpoints/step_00000003" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "damaged state.json: exit $rc, expected 3"
grep -q "state.json.*checksum mismatch" <<<"$err" || fail "damaged state.json: $err"

# Usage errors: exit 2.
"$gattn" inspect >/dev/null 2>&1; rc=$?
[[ $rc -eq 2 ]] || fail "inspect without --checkpoint exited $rc, expected 2"
echo ok
