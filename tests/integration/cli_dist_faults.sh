#!/usr/bin/env bash
# A rank that fails never leaves the others hanging: a rank that exits with an error, one that is
# SIGKILLed and one that stalls (a hang: the others' collective times out after dist.timeout_s)
# each end the whole job non-zero, promptly, with a line that says what happened. Also the
# launcher's own usage errors (exit 2).
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/dist.sh"
write_dist_config "$tmp/tiny.yaml" "$tmp/run"

# The three jobs run side by side (each is mostly waiting), each bounded by `timeout 60`.
start=$SECONDS
for kind in exit kill hang; do
  # Only the stalled rank needs the timeout: the others are ended by mpirun. 5 s leaves room for a
  # loaded machine's start-up before the hang, where the ranks also meet.
  mkdir -p "$tmp/ompi_$kind"
  (GATTN_TEST_FAULT=1:3:$kind OMPI_MCA_orte_tmpdir_base="$tmp/ompi_$kind" timeout 60 "$launch" -n 2 "$tmp/tiny.yaml" run.dir="$tmp/$kind" dist.timeout_s=5 \
    >"$tmp/$kind.out" 2>&1; echo $? >"$tmp/$kind.rc") &
done
wait
for kind in exit kill hang; do
  out=$(cat "$tmp/$kind.out")
  rc=$(cat "$tmp/$kind.rc")
  ((rc != 0)) || fail "$kind: the job exited 0: $out"
  ((rc != 124)) || fail "$kind: the job hung (killed by timeout 60): $out"
  grep -q "injected fault '$kind' at step 3" <<<"$out" || fail "$kind: the fault did not fire: $out"
done
((SECONDS - start < 40)) || fail "the failed jobs took $((SECONDS - start)) s to end"
# The stalled rank: rank 0 names the collective and the timeout, and exits 3 itself.
grep -q "gattn: rank 0 of 2: dist: .* did not complete within 5 s (dist.timeout_s): another of the 2 ranks died or stalled" \
  "$tmp/hang.out" || fail "no timeout line from rank 0: $(cat "$tmp/hang.out")"
[[ $(cat "$tmp/exit.rc") == 3 ]] || fail "the job whose rank exited 3 should exit 3, got $(cat "$tmp/exit.rc")"

out=$("$launch" -n 0 "$tmp/tiny.yaml" 2>&1)
(($? == 2)) || fail "-n 0 should exit 2"
grep -q "positive number of ranks" <<<"$out" || fail "-n 0 message: $out"
# Far more ranks than cores (a typo, -n 1000) are refused before any starts, unless asked for.
out=$("$launch" -n 100000 "$tmp/tiny.yaml" 2>&1)
(($? == 2)) || fail "-n 100000 should exit 2: $out"
grep -q "^launch: -n 100000 is more than 4 ranks per core .*pass --oversubscribe" <<<"$out" || fail "-n 100000 message: $out"
[[ $(wc -l <<<"$out") -eq 1 ]] || fail "-n 100000: not one line: $out"
out=$("$launch" -n 100000 --oversubscribe "$tmp/missing.yaml" 2>&1)
(($? == 2)) && grep -q "does not exist" <<<"$out" || fail "--oversubscribe is not accepted: $out"
out=$("$launch" -n 2 "$tmp/missing.yaml" 2>&1)
(($? == 2)) || fail "a missing config should exit 2"
grep -q "does not exist" <<<"$out" || fail "missing config message: $out"
# A config error under mpirun: exit 2 from the job, the key named.
out=$("$launch" -n 2 "$tmp/tiny.yaml" run.dir="$tmp/bad" dist.timeout_s=0 2>&1)
rc=$?
((rc == 2)) || fail "a bad dist.timeout_s under mpirun exited $rc: $out"
grep -q "dist.timeout_s must be > 0" <<<"$out" || fail "bad dist.timeout_s message: $out"
echo ok
