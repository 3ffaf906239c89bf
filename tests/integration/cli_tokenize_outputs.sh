#!/usr/bin/env bash
# What `gattn tokenize train|encode` may write over (docs/tokenize.md#output-directories): --force
# replaces only an empty directory or an earlier output of the same command, never an input, a
# corpus or a run; an output that appears while the command runs is kept (the command exits 2); a
# command stopped by SIGINT or SIGTERM leaves no staging directory, and one killed outright has its
# staging directory removed by the next command that writes there. An input that changes while it is
# encoded is exit 3 naming it.
set -u
set -m  # job control: background jobs keep SIGINT (a non-interactive shell would have them ignore it)
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

mkdir -p "$tmp/corpus"
corpus="$tmp/corpus/c.txt"
head -c 60000 "$repo/data/tinyshakespeare.txt" >"$corpus"
"$gattn" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/tok" --threads 1 >/dev/null || fail "tokenize train"
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/shards" --threads 1 >/dev/null ||
  fail "tokenize encode"
left_over() { ls -A "$1" | grep -q '\.partial-' && fail "a staging directory was left behind in $1: $(ls -A "$1")"; }
intact() { [[ -f $1 ]] && cmp -s "$1" "$2" || fail "$1 was changed or removed"; }
cp "$corpus" "$tmp/corpus.orig"
# A corpus that takes a few seconds to encode, to act while the command runs.
big="$tmp/big.txt"
for i in 1 2 3 4 5 6; do cat "$repo/data/tinyshakespeare.txt"; done >"$big"
wait_for_staging() {  # wait_for_staging DIR NAME: until .NAME.partial-* exists in DIR (5 s at most)
  for _ in $(seq 1 500); do
    compgen -G "$1/.$2.partial-*" >/dev/null && return 0
    sleep 0.01
  done
  fail "no staging directory .$2.partial-* appeared"
}

# --- --force replaces only an empty directory or an earlier output of the same command ---
expect 2 "contains the --input" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/corpus" --force
expect 2 "contains the --tokenizer" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp" --force
expect 2 "contains the --input" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/corpus" --force
expect 2 "is the --tokenizer" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/tok" --force
expect 2 "lies inside the --tokenizer" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/tok/shards"
expect 2 "contains the --tokenizer" tokenize encode --tokenizer "$tmp/tok/tokenizer.model" --input "$corpus" \
  --out "$tmp/tok" --force
intact "$corpus" "$tmp/corpus.orig"
[[ -f $tmp/tok/vocab.txt && ! -e $tmp/tok/shards ]] || fail "a refused --out touched the tokenizer"
mkdir -p "$tmp/mine" "$tmp/run/checkpoints"
echo "notes" >"$tmp/mine/notes.txt"
echo '{"step": 1}' >"$tmp/run/metrics.jsonl"
echo "seed: 0" >"$tmp/run/config.yaml"
expect 2 "notes.txt" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/mine" --force
expect 2 "--force replaces only" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/run" --force
[[ -f $tmp/mine/notes.txt && -f $tmp/run/metrics.jsonl && -f $tmp/run/config.yaml ]] || fail "--force deleted user files"
# One command's output is not the other's to replace.
cp -r "$tmp/tok" "$tmp/tok2"
expect 2 "tokenize encode output" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/tok2" --force
expect 2 "tokenize train output" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/shards" --force
# An earlier output with a stray file of the user's in it.
echo "mine" >"$tmp/tok2/README"
expect 2 "README" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/tok2" --force
[[ -f $tmp/tok2/README && -f $tmp/tok2/tokenizer.model ]] || fail "--force touched a directory it refused"
# What --force does replace: an earlier output of the command, and an empty directory.
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/shards" --force --threads 1 >/dev/null ||
  fail "encode --force over an earlier encode exited $?"
"$gattn" tokenize train --input "$corpus" --vocab-size 400 --out "$tmp/tok" --force --threads 1 >/dev/null ||
  fail "train --force over an earlier train exited $?"
mkdir "$tmp/empty"
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/empty" --threads 1 >/dev/null ||
  fail "encode into an empty directory exited $?"
left_over "$tmp"

# --- an output that appears while the command runs is not replaced ---
for force in "" --force; do
  rm -rf "$tmp/late"
  "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$big" --out "$tmp/late" --threads 1 $force \
    >/dev/null 2>"$tmp/late.err" &
  pid=$!
  wait_for_staging "$tmp" late
  mkdir "$tmp/late" && echo "theirs" >"$tmp/late/theirs.txt"
  wait "$pid"
  rc=$?
  [[ $rc -eq 2 ]] || fail "encode $force into an --out that appeared meanwhile exited $rc, not 2: $(cat "$tmp/late.err")"
  [[ $(wc -l <"$tmp/late.err") -eq 1 ]] || fail "not one line: $(cat "$tmp/late.err")"
  [[ -f $tmp/late/theirs.txt && $(ls -A "$tmp/late") == theirs.txt ]] || fail "the output that appeared was replaced"
  left_over "$tmp"
done
# Concurrent writers into one --out: exactly one wins.
rm -rf "$tmp/race"
pids=()
for i in 1 2 3; do
  "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$big" --out "$tmp/race" --threads 1 >/dev/null 2>"$tmp/race$i.err" &
  pids+=($!)
done
wins=0
for p in "${pids[@]}"; do
  wait "$p"
  rc=$?
  case $rc in
    0) wins=$((wins + 1)) ;;
    2) ;;
    *) fail "a concurrent writer exited $rc: $(cat "$tmp"/race*.err)" ;;
  esac
done
[[ $wins -eq 1 ]] || fail "$wins of 3 concurrent writers into one --out succeeded, not exactly 1"
[[ -f $tmp/race/meta.json ]] || fail "the winner's output is incomplete"
left_over "$tmp"

# --- an input that changes while it is encoded: exit 3 naming it, nothing written ---
cp "$big" "$tmp/growing.txt"
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$tmp/growing.txt" --out "$tmp/grown" --threads 1 \
  >/dev/null 2>"$tmp/grown.err" &
pid=$!
wait_for_staging "$tmp" grown
head -c 100000 "$repo/data/tinyshakespeare.txt" >>"$tmp/growing.txt"
wait "$pid"
rc=$?
[[ $rc -eq 3 ]] || fail "an input appended to during encode: exit $rc, not 3: $(cat "$tmp/grown.err")"
grep -q "^gattn: .*$tmp/growing.txt changed while it was read" "$tmp/grown.err" ||
  fail "the error does not name the input that changed: $(cat "$tmp/grown.err")"
[[ ! -e $tmp/grown ]] || fail "an encode of a changing input left --out"
left_over "$tmp"

# --- staging directories: removed on SIGINT/SIGTERM, swept when their process is gone ---
for sig in INT TERM; do
  "$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$big" --out "$tmp/stopped" --threads 1 >/dev/null 2>&1 &
  pid=$!
  wait_for_staging "$tmp" stopped
  kill -s "$sig" "$pid"
  wait "$pid"
  rc=$?
  [[ $rc -eq 130 || $rc -eq 143 ]] || fail "SIGTERM/SIGINT during encode exited $rc"
  [[ ! -e $tmp/stopped ]] || fail "a stopped encode left --out"
  left_over "$tmp"
done
"$gattn" tokenize train --input "$big" --vocab-size 2000 --out "$tmp/stopped" --threads 1 >/dev/null 2>&1 &
pid=$!
wait_for_staging "$tmp" stopped
kill -s TERM "$pid"
wait "$pid"
[[ $? -eq 143 ]] || fail "SIGTERM during tokenize train did not exit 143"
left_over "$tmp"
# A process killed outright (SIGKILL) cannot clean up: the next writer of the same --out does.
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$big" --out "$tmp/killed" --threads 1 >/dev/null 2>&1 &
pid=$!
wait_for_staging "$tmp" killed
kill -s KILL "$pid"
wait "$pid" 2>/dev/null
compgen -G "$tmp/.killed.partial-*" >/dev/null || fail "SIGKILL left no staging directory to sweep (test setup)"
mkdir "$tmp/.killed.partial-$$"  # a live process's (this shell's): kept
"$gattn" tokenize encode --tokenizer "$tmp/tok" --input "$corpus" --out "$tmp/killed" --threads 1 >/dev/null ||
  fail "encode after a killed one exited $?"
[[ $(ls -A "$tmp" | grep -c '\.killed\.partial-') -eq 1 && -d $tmp/.killed.partial-$$ ]] ||
  fail "the dead process's staging directory was not swept, or a live one was: $(ls -A "$tmp")"
echo "cli_tokenize_outputs: ok"
