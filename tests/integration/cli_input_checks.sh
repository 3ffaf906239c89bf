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

# --sample-tokens -1 was ignored (statistics on the whole block).
"$make_checkpoint" "$tmp/ckpt" output || fail "could not make a checkpoint"
expect 2 "\-\-sample-tokens must be >= 0" inspect --checkpoint "$tmp/ckpt" --sample-tokens -1
"$gattn" inspect --checkpoint "$tmp/ckpt" --sample-tokens 8 | grep -q "on 8 pseudo-random tokens" ||
  fail "inspect --sample-tokens 8 does not measure 8 tokens"
echo ok
