#!/usr/bin/env bash
# A SIGTERM at any moment ends gattn with one line and exit 143, never a bare
# death by the signal (the CLI's exit codes). The handlers go in before anything else runs, so a signal during
# start-up (libraries, config, data) and one during a command without a graceful stop (sample) are
# both reported; `train` past its start-up stops gracefully as before (cli_resume_signals.sh).
set -u
gattn="$1"
make_checkpoint="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# stopped_by_term PID ERRFILE WHAT: the process exits 143 and says so in one line.
stopped_by_term() {
  local rc
  wait "$1"; rc=$?
  [[ $rc -eq 143 ]] || fail "$3: exit $rc after SIGTERM, expected 143: $(cat "$2")"
  grep -qx "gattn: stopped by SIGTERM" "$2" || fail "$3: no message, killed by the signal? stderr: '$(cat "$2")'"
}

# wait_for_handler PID: until PID is gattn (exec done) and catches SIGTERM (bit 14 of SigCgt in
# /proc/PID/status). gattn installs its handlers before any start-up work, so a signal sent now
# lands while the libraries, the config and the data load.
wait_for_handler() {
  local cgt
  for _ in $(seq 1 2000); do
    if [[ $(readlink "/proc/$1/exe" 2>/dev/null) == "$(realpath "$gattn")" ]]; then
      cgt=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null)
      [[ -n $cgt ]] && (( (16#$cgt >> 14) & 1 )) && return 0
    fi
    sleep 0.005
  done
  fail "gattn never caught SIGTERM within 10 s"
}

# During start-up: a 40 MB text file keeps `train` loading its data for a while. (Before the fix
# the handlers came with the training loop: the signal either killed the process bare or, sent
# once they were there, stopped training gracefully with exit 0.)
yes "To be, or not to be, that is the question" | head -c 40000000 >"$tmp/big.txt"
write_tiny_recall "$tmp/tiny.yaml"
"$gattn" train --config "$tmp/tiny.yaml" run.dir="$tmp/run" data.kind=text data.path="$tmp/big.txt" >/dev/null 2>"$tmp/err" &
pid=$!
wait_for_handler "$pid"
kill -TERM "$pid"
stopped_by_term "$pid" "$tmp/err" "train, SIGTERM during start-up"
[[ ! -e "$tmp/run" ]] || fail "a run stopped during start-up left a run directory"

# During a long sample: the text streams, then the signal comes.
"$make_checkpoint" "$tmp/ckpt" none || fail "could not make a checkpoint"
"$gattn" sample --checkpoint "$tmp/ckpt" --prompt ab --max-new-tokens 100000000 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 100); do
  [[ -s "$tmp/out" ]] && break
  sleep 0.05
done
[[ -s "$tmp/out" ]] || fail "sample printed nothing within 5 s"
kill -TERM "$pid"
stopped_by_term "$pid" "$tmp/err" "sample"
echo ok
