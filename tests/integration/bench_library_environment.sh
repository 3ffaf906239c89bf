#!/usr/bin/env bash
# The benchmark programs start with gattn's library environment (benchmarks/
# library_environment_first.cpp): the OpenBLAS core and the OpenMP wait policy they report in their
# context are the ones `gattn --version` reports, with and without the user's own values. Skipped
# where the benchmarks are not built (GATTN_BUILD_BENCHMARKS=OFF).
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
bench="$(dirname "$gattn")/benchmarks/gattn_bench_ops"
if [[ ! -x $bench ]]; then
  echo "skip: no $bench (benchmarks not built)"
  exit 0
fi

clean=(env -u OPENBLAS_CORETYPE -u GATTN_OPENBLAS_CORE_SET -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u GATTN_OPENMP_POLICY_SET)
# compare VAR=VALUE...: the two context lines of one quick benchmark run against --version's.
compare() {
  local version context
  version=$("${clean[@]}" "$@" "$gattn" --version) || fail "gattn --version exited $? ($*)"
  context=$("${clean[@]}" "$@" OMP_NUM_THREADS=1 "$bench" --benchmark_filter=BM_GeluForward \
    --benchmark_min_time=0.001 2>&1 >/dev/null) || fail "$bench exited $? ($*): $context"
  for key in "blas core" "openmp wait"; do
    want=$(grep "^$key: " <<<"$version") || fail "--version has no '$key' line ($*): $version"
    grep -qxF -- "$want" <<<"$context" || fail "the benchmark's context lacks '$want' ($*): $context"
  done
}
compare
compare OPENBLAS_CORETYPE=Haswell
compare GATTN_OPENBLAS_CORE_SET=1 OMP_WAIT_POLICY=PASSIVE
# The choice is gattn's own where this CPU needs one: then the benchmark did not run OpenBLAS's
# detection (on an Emerald Rapids Xeon, its Prescott kernels).
if "${clean[@]}" "$gattn" --version | grep -q "^blas core: .*(gattn's choice for this CPU)"; then
  "${clean[@]}" OMP_NUM_THREADS=1 "$bench" --benchmark_filter=BM_GeluForward --benchmark_min_time=0.001 2>&1 >/dev/null |
    grep -q "^blas core: .*(gattn's choice for this CPU)" || fail "the benchmark kept OpenBLAS's detection"
fi
echo "ok"
