#!/usr/bin/env bash
# Every command that reads a checkpoint refuses what resume refuses, with exit 3 and one line naming
# the file: an unknown format version, removed checksums, garbage `config` or `vocab` metadata, NaN
# or Inf weights (eval, sample, inspect); `eval` on a text with another vocabulary. A run never
# writes a checkpoint whose weights went non-finite: exit 4 naming the tensor, `latest` unmoved.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/checkpoint_edit.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/tiny.yaml" <<YAML
run: {name: tiny, dir: $tmp/run}
seed: 1
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16}
train: {batch_size: 4, max_steps: 2, log_every: 1, threads: 1}
eval: {every: 0, max_windows: 4}
checkpoint: {every: 1}
YAML
"$gattn" train --config "$tmp/tiny.yaml" >/dev/null 2>&1 || fail "could not make the run"
good="$tmp/run/checkpoints/step_00000002"
[[ -f $good/model.safetensors ]] || fail "no checkpoint at step 2"

# expect_refused NAME NEEDLE... : eval, sample and inspect of a damaged copy made by `damage` (run
# on the copy's model.safetensors) each exit 3 with one line holding every needle.
expect_refused() {
  local name=$1
  shift
  local ck="$tmp/$name"
  rm -rf "$ck"
  cp -r "$good" "$ck"
  damage "$ck/model.safetensors" || fail "$name: could not damage the copy"
  local cmd err rc
  for cmd in eval sample inspect; do
    case $cmd in
      eval) err=$("$gattn" eval --checkpoint "$ck" 2>&1 >/dev/null) ;;
      sample) err=$("$gattn" sample --checkpoint "$ck" --max-new-tokens 4 2>&1 >/dev/null) ;;
      inspect) err=$("$gattn" inspect --checkpoint "$ck" 2>&1 >/dev/null) ;;
    esac
    rc=$?
    [[ $rc -eq 3 ]] || fail "$name: $cmd exited $rc, expected 3 ($err)"
    [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$name: $cmd printed more than one line: $err"
    for needle in "$ck/model.safetensors" "$@"; do
      grep -qF -- "$needle" <<<"$err" || fail "$name: $cmd's message lacks '$needle': $err"
    done
  done
}
damage() { set_metadata "$1" format gattn/99; }
expect_refused unknown_format "format 'gattn/99'"
damage() { set_metadata "$1" crc32; }
expect_refused no_checksums '"crc32"'
damage() { set_metadata "$1" config 'garbage: [unclosed'; }
expect_refused garbage_config "config"
damage() { set_metadata "$1" config '{"model": {"n_head": 0}}'; }
expect_refused invalid_config "config"
damage() { set_metadata "$1" vocab '{"not": "an array"}'; }
expect_refused garbage_vocab '"vocab"'
damage() { poison_tensor "$1" blocks.0.mlp.fc.weight nan; }
expect_refused nan_weight "tensor 'blocks.0.mlp.fc.weight' holds NaN or Inf"
damage() { poison_tensor "$1" wte.weight inf; }
expect_refused inf_weight "tensor 'wte.weight' holds NaN or Inf"

# eval on a text with another vocabulary: refused like resume refuses it; the same text evaluates.
"$gattn" eval --checkpoint "$good" >/dev/null 2>&1 || fail "eval of the intact checkpoint failed"
printf 'QWXYZ qwxyz 0123456789 %.0s' $(seq 1 60) >"$tmp/other.txt"
err=$("$gattn" eval --checkpoint "$good" data.path="$tmp/other.txt" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "eval on another vocabulary exited $rc, expected 3 ($err)"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "eval on another vocabulary printed more than one line: $err"
grep -qF "vocabulary differs" <<<"$err" || fail "eval on another vocabulary: $err"
err=$("$gattn" eval --checkpoint "$good" data.kind=synthetic data.task=copy 2>&1 >/dev/null); rc=$?
[[ $rc -eq 3 ]] || fail "eval of a text model on synthetic data exited $rc, expected 3 ($err)"

# An override that changes the trained model's shape is the user's config error, named as such.
err=$("$gattn" eval --checkpoint "$good" model.n_layer=1 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "eval with another n_layer exited $rc, expected 2 ($err)"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "eval with another n_layer printed more than one line: $err"
grep -qF "model.n_layer=1 (the checkpoint has 2): the checkpoint's model was trained otherwise" <<<"$err" ||
  fail "eval with another n_layer: $err"

# A step that leaves the weights non-finite (an lr beyond f32's range without warm-up makes the
# update Inf) is never checkpointed: exit 4 naming the tensor, `latest` and the earlier checkpoints
# untouched.
before=$(cd "$tmp/run/checkpoints" && find . -type f -exec md5sum {} + | sort)
err=$("$gattn" train --config "$tmp/tiny.yaml" train.max_steps=3 optim.schedule=constant optim.warmup_steps=0 \
  optim.lr=1e39 --resume auto 2>&1 >/dev/null); rc=$?
[[ $rc -eq 4 ]] || fail "a run with non-finite weights exited $rc, expected 4 ($err)"
grep -qF "checkpoint step_00000003 not written: parameter '" <<<"$err" || fail "exit 4 without naming the tensor: $err"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "exit 4 printed more than one line: $err"
[[ ! -e $tmp/run/checkpoints/step_00000003 ]] || fail "a checkpoint with non-finite weights was written"
[[ $(cd "$tmp/run/checkpoints" && find . -type f -exec md5sum {} + | sort) == "$before" ]] ||
  fail "the earlier checkpoints or latest changed"
echo "cli_checkpoint_use: ok"
