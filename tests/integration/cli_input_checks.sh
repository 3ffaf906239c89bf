#!/usr/bin/env bash
# Input gattn refuses (docs/cli.md): input that used to be accepted silently is an error naming the input (exit 2)
# and writes nothing: a run.name that is a path, a second YAML document, a null section, and a
# negative --sample-tokens.
set -u
gattn=$(realpath "$1")  # absolute: the test runs gattn from another directory
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"

write_tiny_recall "$tmp/tiny.yaml"
mkdir -p "$tmp/work/a/b"
cd "$tmp/work/a/b" || fail "cd"
# runs/<run.name>: "../../escape" would land in $tmp/work/a/escape, "/etc/passwd" in runs/etc/passwd.
expect 2 "run.name \"../../escape\" contains '/'" train --config "$tmp/tiny.yaml" run.name=../../escape
expect 2 "run.name \"/etc/passwd\" contains '/'" train --config "$tmp/tiny.yaml" run.name=/etc/passwd
expect 2 "run.name \"..\" is '..'" train --config "$tmp/tiny.yaml" run.name=..
[[ -z $(ls -A "$tmp/work/a/b") && ! -e "$tmp/work/a/escape" && ! -e "$tmp/work/escape" ]] ||
  fail "a refused run.name created a folder: $(find "$tmp/work")"
cd "$tmp" || fail "cd"

# A second YAML document was dropped: its optim.lr never applied.
{ cat "$tmp/tiny.yaml"; printf -- '---\noptim: {lr: 0.5}\n'; } >"$tmp/two.yaml"
expect 2 "two.yaml:10: a second YAML document" train --config "$tmp/two.yaml" run.dir="$tmp/r"
# `model: null` trained the default model.
{ grep -v '^model:' "$tmp/tiny.yaml"; echo 'model: null'; } >"$tmp/null.yaml"
expect 2 "null.yaml:8: 'model' is null" train --config "$tmp/null.yaml" run.dir="$tmp/r"
expect 2 "'model.gate' is null" train --config "$tmp/tiny.yaml" run.dir="$tmp/r" model.gate=null
[[ ! -e "$tmp/r" ]] || fail "a refused config left a run directory"

# Settings that meant nothing and were accepted: each names its key now.
t=(train --config "$tmp/tiny.yaml" run.dir="$tmp/r")
expect 2 "model.gates is null" "${t[@]}" model.gates=null
expect 2 "model.gate.layers: lists no block" "${t[@]}" model.gate.kind=output "model.gate.layers=[]"
expect 2 "model.gates\[0\].layers: lists no block" "${t[@]}" "model.gates=[{kind: output, layers: []}]"
expect 2 "model.gate.hard_threshold: must be in (0, 1) for activation sigmoid" "${t[@]}" model.gate.kind=output \
  model.gate.hard=true model.gate.hard_threshold=1.5
expect 2 "model.gate.temperature must be in \[0.001, 1000\]" "${t[@]}" model.gate.kind=output \
  model.gate.temperature=1e-12
expect 2 "regularization.gate_l1 weighs the gates' values, but the model has no gate" "${t[@]}" \
  regularization.gate_l1=0.1
expect 2 "regularization.gate_entropy weighs the gates' values" "${t[@]}" regularization.gate_entropy=0.1
expect 2 "regularization.router_balance means nothing here" "${t[@]}" model.gate.kind=output \
  regularization.router_balance=0.1
expect 2 "regularization.router_balance must be >= 0" "${t[@]}" model.gate.kind=routed \
  regularization.router_balance=-1
expect 2 "model.gate.windows: span 13 exceeds model.block_size=12" "${t[@]}" model.gate.kind=routed \
  "model.gate.windows=[0, 13]"
expect 2 "model.gate.windows: span 4 is listed twice" "${t[@]}" model.gate.kind=routed "model.gate.windows=[4, 4]"
expect 2 "train.max_steps must be an integer" "${t[@]}" train.max_steps=99999999999999999999
[[ ! -e "$tmp/r" ]] || fail "a refused config left a run directory"

# --sample-tokens -1 was ignored (statistics on the whole block).
"$make_checkpoint" "$tmp/ckpt" output || fail "could not make a checkpoint"
expect 2 "\-\-sample-tokens must be >= 0" inspect --checkpoint "$tmp/ckpt" --sample-tokens -1
"$gattn" inspect --checkpoint "$tmp/ckpt" --sample-tokens 8 | grep -q "on 8 pseudo-random tokens" ||
  fail "inspect --sample-tokens 8 does not measure 8 tokens"
echo ok
