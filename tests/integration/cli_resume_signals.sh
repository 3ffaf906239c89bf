#!/usr/bin/env bash
# Signals: SIGINT or SIGTERM makes `gattn train` finish its step, write a checkpoint and exit 0
# with the command that resumes; --resume auto then continues. A second signal exits at once
# (128 + signal) and, even in the middle of a checkpoint write, leaves a run that resumes.
set -u
set -m  # job control: background jobs keep SIGINT (a non-interactive shell would have them ignore it)
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT

write_verse "$tmp/text.txt"
cat >"$tmp/long.yaml" <<YAML
run: {name: long, dir: $tmp/run}
seed: 2
device: cpu
data: {kind: text, path: $tmp/text.txt}
model: {block_size: 16, n_layer: 1, n_head: 2, n_embd: 16, gate: {kind: output}}
train: {batch_size: 4, max_steps: 1000000, log_every: 1, threads: 1}
optim: {lr: 1.0e-3, warmup_steps: 2, schedule: constant}
eval: {every: 0, max_windows: 2}
checkpoint: {every: 0}
YAML

# Starts a training run in the background; sets $pid.
start() {  # start RUN_DIR OUT [overrides...]
  local dir=$1 out=$2
  shift 2
  "$gattn" train --config "$tmp/long.yaml" run.dir="$dir" "$@" >"$out" 2>&1 &
  pid=$!
  pids+=("$pid")
}
# Waits until RUN_DIR/metrics.jsonl has N lines (at most ~30 s).
wait_for_lines() {  # wait_for_lines RUN_DIR N
  for _ in $(seq 1 600); do
    [[ -f "$1/metrics.jsonl" && $(wc -l <"$1/metrics.jsonl") -ge $2 ]] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the run ended early: $(cat "$tmp"/*.out)"
    sleep 0.05
  done
  fail "no $2 metrics lines after 30 s"
}

for sig in INT TERM; do
  dir="$tmp/run_$sig"
  start "$dir" "$tmp/$sig.out"
  wait_for_lines "$dir" 3
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  out=$(cat "$tmp/$sig.out")
  [[ $rc -eq 0 ]] || fail "SIG$sig: exit $rc, expected 0: $out"
  grep -q "(SIG$sig); resume with:" <<<"$out" || fail "SIG$sig: no resume line: $out"
  grep -q -- "--resume auto" <<<"$out" || fail "SIG$sig: the resume command lacks --resume auto: $out"
  step=$(sed -n 's/.*stopped at step \([0-9]*\) .*/\1/p' <<<"$out")
  [[ -n $step ]] || fail "SIG$sig: no stop step: $out"
  [[ $(cat "$dir/checkpoints/latest") == $(printf 'step_%08d' "$step") ]] || fail "SIG$sig: latest is not step $step"
  [[ $(tail -1 "$dir/metrics.jsonl" | sed 's/.*"step":\([0-9]*\).*/\1/') -eq $step ]] || fail "SIG$sig: metrics end elsewhere"
  # Continue it to a near end (max_steps may change on resume).
  out=$("$gattn" train --config "$tmp/long.yaml" run.dir="$dir" train.max_steps=$((step + 3)) --resume auto 2>&1) ||
    fail "SIG$sig: resume exited $?: $out"
  grep -q "resumed from .*step_$(printf '%08d' "$step") at step $step" <<<"$out" || fail "SIG$sig: not resumed: $out"
  [[ $(cat "$dir/checkpoints/latest") == $(printf 'step_%08d' $((step + 3))) ]] || fail "SIG$sig: resumed run did not finish"
done

# A second signal exits at once with 143 (128 + SIGTERM). A wider model makes a step long enough
# for the second signal to land inside it (two signals sent together would merge into one), and a
# checkpoint every step makes it land inside a checkpoint write now and then. Whatever moment it
# hit, --resume auto continues from a complete checkpoint and the metrics stay one line per step.
wide=(model.n_embd=256 model.n_layer=2 model.block_size=64 train.batch_size=32 checkpoint.every=1)
hits=0
for attempt in 1 2 3 4; do
  dir="$tmp/double_$attempt"
  start "$dir" "$tmp/double.out" "${wide[@]}"
  wait_for_lines "$dir" 3
  kill -TERM "$pid"
  sleep 0.01
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
  out=$(cat "$tmp/double.out")
  if [[ $rc -eq 143 ]]; then
    grep -q "second signal" <<<"$out" || fail "double signal: no message: $out"
    hits=$((hits + 1))
  else
    # The graceful stop finished before the second signal came (a very busy machine): also fine.
    [[ $rc -eq 0 ]] || fail "double signal: exit $rc, expected 143 (or 0): $out"
  fi
  step=$(sed 's/step_0*//' "$dir/checkpoints/latest")
  out=$("$gattn" train --config "$tmp/long.yaml" run.dir="$dir" "${wide[@]}" train.max_steps=$((step + 2)) --resume auto 2>&1) ||
    fail "resume after a double signal exited $?: $out"
  grep -q "resumed from" <<<"$out" || fail "double signal: no checkpoint to resume from: $out"
  [[ $(cat "$dir/checkpoints/latest") == $(printf 'step_%08d' $((step + 2))) ]] || fail "double signal: not finished"
  [[ -z $(find "$dir/checkpoints" -name '.tmp*' -o -name '*.tmp' -o -name '.old*') ]] || fail "double signal: temporaries left"
  python3 - "$dir/metrics.jsonl" $((step + 2)) <<'PY' || fail "double signal: metrics are not one line per step"
import json, sys
steps = [json.loads(l)["step"] for l in open(sys.argv[1]) if '"split":"train"' in l]
sys.exit(0 if steps == list(range(1, int(sys.argv[2]) + 1)) else 1)
PY
done
[[ $hits -gt 0 ]] || fail "no attempt exited through the second signal"

# A second process training into a run directory in use is refused (exit 2, one line naming the
# holder) and changes nothing; the first run is undisturbed.
dir="$tmp/locked"
start "$dir" "$tmp/locked.out"
wait_for_lines "$dir" 3
err=$("$gattn" train --config "$tmp/long.yaml" run.dir="$dir" --resume auto 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] || fail "a second run into a directory in use exited $rc, expected 2: $err"
[[ $(wc -l <<<"$err") -eq 1 ]] || fail "lock conflict: more than one line: $err"
grep -q "in use by another gattn process (pid $pid)" <<<"$err" || fail "lock conflict: holder not named: $err"
kill -TERM "$pid"
wait "$pid" || fail "the locked run did not stop cleanly after the refused second run"
echo ok
