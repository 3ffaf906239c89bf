#!/usr/bin/env bash
# `gattn sample`: generation from a checkpoint with the KV cache for every gate kind; the same seed
# gives the same text, another seed another; a run directory stands for its latest checkpoint;
# bad prompts and options exit 2 with one line, a missing checkpoint exits 3.
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

for kind in none output score forget pair context routed; do
  "$make_checkpoint" "$tmp/$kind" "$kind" || fail "could not make a $kind checkpoint"
  # 100 new tokens: past the block of 32, so the cache restarts on the way.
  a=$("$gattn" sample --checkpoint "$tmp/$kind" --prompt abc --max-new-tokens 100 --seed 1 2>/dev/null) ||
    fail "$kind: sample exited $?"
  [[ $a =~ ^abc[a-p]{100}$ ]] || fail "$kind: expected the prompt and 100 vocabulary characters, got '$a'"
  b=$("$gattn" sample --checkpoint "$tmp/$kind" --prompt abc --max-new-tokens 100 --seed 1 2>/dev/null)
  [[ $a == "$b" ]] || fail "$kind: the same seed gave different text"
  c=$("$gattn" sample --checkpoint "$tmp/$kind" --prompt abc --max-new-tokens 100 --seed 2 2>/dev/null)
  [[ $a != "$c" ]] || fail "$kind: seeds 1 and 2 gave the same text"
done

# Greedy decoding ignores the seed; top-k 1 is greedy.
g1=$("$gattn" sample --checkpoint "$tmp/pair" --prompt ab --max-new-tokens 30 --temperature 0 --seed 1 2>/dev/null)
g2=$("$gattn" sample --checkpoint "$tmp/pair" --prompt ab --max-new-tokens 30 --temperature 0 --seed 9 2>/dev/null)
[[ $g1 == "$g2" ]] || fail "greedy decoding depends on the seed"
# (top-k 1 keeps every token tied at the top; with random float logits ties do not happen)
k1=$("$gattn" sample --checkpoint "$tmp/pair" --prompt ab --max-new-tokens 30 --top-k 1 --temperature 1.5 2>/dev/null)
[[ $g1 == "$k1" ]] || fail "top-k 1 differs from greedy: '$g1' vs '$k1'"

# Token ids in and out; the summary line goes to stderr.
ids=$("$gattn" sample --checkpoint "$tmp/none" --prompt-tokens "1,2 3" --max-new-tokens 5 2>"$tmp/err") ||
  fail "--prompt-tokens exited $?"
[[ $ids =~ ^([0-9]+ ){4}[0-9]+$ ]] || fail "expected 5 token ids, got '$ids'"
grep -q "5 tokens in" "$tmp/err" || fail "no summary line on stderr: $(cat "$tmp/err")"

# A run directory: its checkpoints/latest is sampled.
mkdir -p "$tmp/run/checkpoints"
cp -r "$tmp/score" "$tmp/run/checkpoints/step_00000007"
echo step_00000007 >"$tmp/run/checkpoints/latest"
r=$("$gattn" sample --checkpoint "$tmp/run" --prompt abc --max-new-tokens 100 --seed 1 2>/dev/null) ||
  fail "run directory: sample exited $?"
s=$("$gattn" sample --checkpoint "$tmp/score" --prompt abc --max-new-tokens 100 --seed 1 2>/dev/null)
[[ $r == "$s" ]] || fail "a run directory did not sample its latest checkpoint"

expect() {  # expect CODE PATTERN ARGS...: exit CODE and one stderr line matching PATTERN
  local code=$1 pattern=$2
  shift 2
  local err rc
  err=$("$gattn" sample "$@" 2>&1 >/dev/null); rc=$?
  [[ $rc -eq $code ]] || fail "sample $*: exit $rc, expected $code ($err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "sample $*: more than one line: $err"
  grep -q -- "$pattern" <<<"$err" || fail "sample $*: '$err' does not mention '$pattern'"
}
expect 2 "not in the model's vocabulary" --checkpoint "$tmp/none" --prompt "abz"
expect 2 "temperature" --checkpoint "$tmp/none" --prompt ab --temperature -1
expect 2 "top-k" --checkpoint "$tmp/none" --prompt ab --top-k -3
expect 2 "not both" --checkpoint "$tmp/none" --prompt ab --prompt-tokens 1
expect 2 "not a token id" --checkpoint "$tmp/none" --prompt-tokens "1 99"
expect 2 "max-new-tokens" --checkpoint "$tmp/none" --prompt ab --max-new-tokens -1
expect 3 "neither a checkpoint" --checkpoint "$tmp/nope" --prompt ab
echo step_00000099 >"$tmp/run/checkpoints/latest"
expect 3 "step_00000099" --checkpoint "$tmp/run" --prompt ab
err=$("$gattn" sample --prompt ab 2>&1); rc=$?
[[ $rc -eq 2 ]] || fail "missing --checkpoint exited $rc, expected 2"
echo "cli_sample: ok"
