#!/usr/bin/env bash
# gattn's default OpenMP wait policy (framework/runtime/library_environment.h): with nothing set it
# runs with GOMP_SPINCOUNT=1000 and says so; a policy in the environment is kept; the marker asks
# for libgomp's own default; a training run works through the re-execution.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

policy() { env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u GATTN_OPENMP_POLICY_SET "$@" "$gattn" --version | grep '^openmp wait: '; }

[[ $(policy) == "openmp wait: GOMP_SPINCOUNT=1000 (gattn's default)" ]] || fail "default: '$(policy)'"
[[ $(policy OMP_WAIT_POLICY=PASSIVE) == "openmp wait: OMP_WAIT_POLICY=PASSIVE (environment)" ]] ||
  fail "OMP_WAIT_POLICY kept: '$(policy OMP_WAIT_POLICY=PASSIVE)'"
[[ $(policy GOMP_SPINCOUNT=77) == "openmp wait: GOMP_SPINCOUNT=77 (environment)" ]] ||
  fail "GOMP_SPINCOUNT kept: '$(policy GOMP_SPINCOUNT=77)'"
[[ $(policy GATTN_OPENMP_POLICY_SET=1) == "openmp wait: libgomp's default" ]] ||
  fail "marker: '$(policy GATTN_OPENMP_POLICY_SET=1)'"

# The arguments survive the re-execution.
write_tiny_recall "$tmp/tiny.yaml"
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$gattn" train --config "$tmp/tiny.yaml" \
  run.dir="$tmp/run" train.max_steps=3 >"$tmp/out" 2>"$tmp/err" || fail "train after re-execution: $(cat "$tmp/err")"
[[ -f $tmp/run/metrics.jsonl ]] || fail "no metrics.jsonl"
echo "ok"
