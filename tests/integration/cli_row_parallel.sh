#!/usr/bin/env bash
# Row-parallel training (train.parallel, recipes/train/row_parallel.h): two parts of each batch on
# two threads train what splitting every op over the threads trains (losses, gradient norms and gate
# means to 1e-5, with gradient accumulation, and with two ranks of two parts each); the run says so
# at the start, `auto` picks it where the threads divide the batch, a stopped run resumes bit for bit
# with gumbel noise in the gates (each part draws its own stream), --profile-ops times the wait for
# the other part, and what cannot be split is refused with one line.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/dist.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/expect.sh"

cores=$(env -u OMP_NUM_THREADS nproc)  # nproc reads OMP_NUM_THREADS, which lib/dist.sh sets to 1
if ((cores < 2)); then
  echo "ok (skipped: row-parallel training needs 2 cores, this machine has $cores)"
  exit 0
fi
write_dist_config "$tmp/text.yaml" "$tmp/unused"
base=(train.threads=2 train.batch_size=8 train.max_steps=20)

run() {  # run NAME ARGS...: train into $tmp/NAME, output in $tmp/NAME.out
  local name=$1
  shift
  "$gattn" train --config "$tmp/text.yaml" run.dir="$tmp/$name" "${base[@]}" "$@" >"$tmp/$name.out" 2>&1 ||
    fail "$name exited $?: $(cat "$tmp/$name.out")"
}

run ops train.parallel=ops
! grep -q "row-parallel" "$tmp/ops.out" || fail "ops mode announced row parts: $(cat "$tmp/ops.out")"
run rows train.parallel=rows
grep -q "row-parallel: 2 parts of 4 rows, one thread each" "$tmp/rows.out" || fail "no row-parallel line: $(cat "$tmp/rows.out")"
close_metrics "$tmp/ops/metrics.jsonl" "$tmp/rows/metrics.jsonl" || fail "rows and ops train differently"
run auto
grep -q "row-parallel: 2 parts of 4 rows" "$tmp/auto.out" || fail "auto did not split 8 rows over 2 threads"
run auto_odd train.batch_size=7
! grep -q "row-parallel" "$tmp/auto_odd.out" || fail "auto split 7 rows over 2 threads"

# Gradient accumulation: each micro-batch splits.
run accum_ops train.parallel=ops train.grad_accum=2 train.batch_size=4
run accum_rows train.parallel=rows train.grad_accum=2 train.batch_size=4
close_metrics "$tmp/accum_ops/metrics.jsonl" "$tmp/accum_rows/metrics.jsonl" || fail "rows with grad_accum differ"

# Two ranks of two parts each (4 rows per rank) train what one rank of 8 rows does.
out=$(ranks 2 "$tmp/text.yaml" run.dir="$tmp/ranks" train.threads=2 train.batch_size=4 train.max_steps=20 \
  train.parallel=rows) || fail "2 ranks × 2 row parts failed: $out"
close_metrics "$tmp/ops/metrics.jsonl" "$tmp/ranks/metrics.jsonl" || fail "2 ranks × 2 parts differ from 1 × 8 rows"

# Bit-for-bit resume in rows mode, gumbel noise in the gates: every part's noise stream continues.
noisy=(train.parallel=rows model.gate.activation=gumbel_sigmoid train.max_steps=24 train.log_every=1
  eval.every=8 checkpoint.every=8 checkpoint.keep_last=0)
run full "${noisy[@]}"
run split "${noisy[@]}" --stop-after 10
grep -q "stopped at step 10 of 24" "$tmp/split.out" || fail "no stop: $(cat "$tmp/split.out")"
run split "${noisy[@]}" --resume auto
same_metrics "$tmp/full/metrics.jsonl" "$tmp/split/metrics.jsonl" || fail "resumed row-parallel metrics differ"
same_tensors "$tmp/full/checkpoints/step_00000024/model.safetensors" \
  "$tmp/split/checkpoints/step_00000024/model.safetensors" || fail "resumed row-parallel weights differ"
# The parts draw different noise: the run is not the ops run's (whose rows share one stream).
run noisy_ops train.parallel=ops model.gate.activation=gumbel_sigmoid train.max_steps=24 train.log_every=1 eval.every=8
! same_metrics "$tmp/noisy_ops/metrics.jsonl" "$tmp/full/metrics.jsonl" >/dev/null ||
  fail "row parts drew the ops run's noise: part 1 should have its own stream"

# The op profile: the lead thread's part, the wait for the other and the adding of its gradients.
run profiled train.parallel=rows --profile-ops
for section in "(row parts: waiting)" "(row parts: adding gradients)" "| linear |"; do
  grep -qF "$section" "$tmp/profiled.out" || fail "profile lacks '$section': $(cat "$tmp/profiled.out")"
done

# Refused: rows that the threads do not divide; an unknown mode.
expect 2 "threads do not divide it" train --config "$tmp/text.yaml" run.dir="$tmp/bad" "${base[@]}" \
  train.batch_size=7 train.parallel=rows
expect 2 "train.parallel" train --config "$tmp/text.yaml" run.dir="$tmp/bad" "${base[@]}" train.parallel=layers
[[ ! -e $tmp/bad ]] || fail "a refused run created its directory"
echo "ok"
