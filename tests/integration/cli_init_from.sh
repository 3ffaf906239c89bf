#!/usr/bin/env bash
# train.init_from: a run starts from another run's weights at step 0, adding gates that ramp in; its
# first loss equals the plain fine-tune's (the checkpoint's function) for a gated start; the log
# lists the new parameters; --resume auto continues it. Refused: a missing checkpoint (exit 3), a
# gate without a ramp and a model key that shapes a tensor (exit 2, named), --resume DIR beside it
# (exit 2), data of another vocabulary (exit 3); nothing is written for any of them.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

write_verse "$tmp/text.txt"
cat >"$tmp/source.yaml" <<YAML
run: {name: source, dir: $tmp/source}
seed: 1
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 2, n_head: 2, n_embd: 16, position: rope, norm: rmsnorm, mlp: swiglu}
train: {batch_size: 4, max_steps: 20, log_every: 1, threads: 1}
eval: {every: 0, max_windows: 4}
checkpoint: {every: 0}
YAML
"$gattn" train --config "$tmp/source.yaml" >/dev/null 2>&1 || fail "could not make the source run"

# The fine-tuning config names only what it changes; the model comes from the checkpoint.
cat >"$tmp/tune.yaml" <<YAML
seed: 5
device: cpu
data: {kind: text, path: $tmp/text.txt}
train: {init_from: $tmp/source, batch_size: 4, max_steps: 4, log_every: 1, threads: 1}
eval: {every: 0, max_windows: 4}
checkpoint: {every: 2}
YAML
first_loss() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["loss"])' "$1/metrics.jsonl"; }

out=$("$gattn" train --config "$tmp/tune.yaml" run.dir="$tmp/plain" 2>&1) || fail "plain fine-tune failed: $out"
grep -q "started from $tmp/source" <<<"$out" || fail "no start line: $out"
grep -q "no new parameters" <<<"$out" || fail "plain fine-tune lists new parameters: $out"
grep -q "^  n_embd: 16" "$tmp/plain/config.yaml" || fail "the model was not inherited: $(cat "$tmp/plain/config.yaml")"
grep -q "^  mlp: swiglu" "$tmp/plain/config.yaml" || fail "the block was not inherited"
plain=$(first_loss "$tmp/plain")

for kind in input score forget pair routed context output; do
  out=$("$gattn" train --config "$tmp/tune.yaml" run.dir="$tmp/$kind" "model.gate={kind: $kind, ramp_steps: 3}" 2>&1) ||
    fail "$kind: fine-tune failed: $out"
  grep -q "new parameter: blocks.0.attn" <<<"$out" || fail "$kind: the new parameters are not listed: $out"
  python3 - "$plain" "$(first_loss "$tmp/$kind")" <<'PY' || fail "$kind: step-0 loss differs from the checkpoint's"
import sys
a, b = float(sys.argv[1]), float(sys.argv[2])
sys.exit(0 if abs(a - b) <= 1e-6 else print(a, b) or 1)
PY
done

# --resume auto continues a fine-tune from its own checkpoint (not from init_from again).
"$gattn" train --config "$tmp/tune.yaml" run.dir="$tmp/resumed" train.max_steps=4 --stop-after 2 >/dev/null 2>&1
out=$("$gattn" train --config "$tmp/tune.yaml" run.dir="$tmp/resumed" --resume auto 2>&1) || fail "resume failed: $out"
grep -q "resumed from .*step_00000002 at step 2" <<<"$out" || fail "resume did not continue the run: $out"
grep -q "started from" <<<"$out" && fail "a resumed run started from init_from again: $out"
same_metrics "$tmp/plain/metrics.jsonl" "$tmp/resumed/metrics.jsonl" || fail "resumed fine-tune differs from the straight one"

# refused RC NEEDLE ARGS...: exit RC, one line naming NEEDLE, no run directory written.
refused() {
  local rc=$1 needle=$2
  shift 2
  rm -rf "$tmp/bad"
  local err
  err=$("$gattn" train --config "$tmp/tune.yaml" run.dir="$tmp/bad" "$@" 2>&1 >/dev/null)
  local got=$?
  [[ $got -eq $rc ]] || fail "$*: exit $got, expected $rc: $err"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "$*: more than one line: $err"
  grep -qF -- "$needle" <<<"$err" || fail "$*: no '$needle' in: $err"
  [[ ! -e $tmp/bad ]] || fail "$*: wrote $tmp/bad"
}
refused 3 "does not exist" train.init_from="$tmp/nowhere"
refused 2 "give it a ramp" "model.gate={kind: output}"
refused 2 "model.n_embd: 16 -> 32" model.n_embd=32
refused 2 "--resume" --resume "$tmp/plain/checkpoints/step_00000004"
write_verse "$tmp/other.txt"
echo "a line with other letters: zqxj" >>"$tmp/other.txt"
refused 3 "vocab" data.path="$tmp/other.txt"
echo "ok"
