#!/usr/bin/env bash
# Builds and runs the GEMM library comparison (benchmarks/gemm_libs/): OpenBLAS, BLIS, oneDNN and
# LIBXSMM on the f32 GEMMs of the reference CPU model, 1 and 2 threads, then prints one markdown
# table (library, threads, GFLOP/s per product, step total in ms, % of the measured FMA peak).
# Each library's full output (per-product times, errors, LIBXSMM's JIT/copy path) is kept in
# $dir/gemm_libs/<lib>.md. Libraries CMake did not find are skipped with a note.
#
#   ./benchmarks/scripts/gemm_libs.sh                  # R = 768 rows (batch 12 × block 64)
#   ./benchmarks/scripts/gemm_libs.sh --rows 3072      # the T = 256 shape class
#
# Arguments go to every executable (--rows N, --threads 1,2, --min-time S). GATTN_BUILD_DIR picks
# the build directory (default build/; configured here if it is not yet). OMP_WAIT_POLICY is unset
# for the runs so each library sees libgomp's default spin-then-sleep behaviour.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
dir="${GATTN_BUILD_DIR:-build}"
libs=(openblas blis dnnl xsmm)

# The OpenBLAS one always exists (gattn needs OpenBLAS); building it also configures a new dir.
GATTN_BUILD_DIR="$dir" GATTN_BUILD_TARGETS=gattn_bench_gemm_openblas ./scripts/build.sh
known="$(cmake --build "$dir" --target help)"
targets=()
for lib in "${libs[@]}"; do
  if grep -q "gattn_bench_gemm_$lib\b" <<<"$known"; then targets+=(--target "gattn_bench_gemm_$lib"); fi
done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"

out="$dir/gemm_libs"
mkdir -p "$out"
ran=() failed=() skipped=()
for lib in "${libs[@]}"; do
  exe="$dir/benchmarks/gattn_bench_gemm_$lib"
  if [[ ! -x $exe ]]; then
    skipped+=("$lib")
    continue
  fi
  echo "gemm_libs: running $lib" >&2
  if env -u OMP_WAIT_POLICY "$exe" --threads 1,2 "$@" >"$out/$lib.md"; then ran+=("$lib"); else failed+=("$lib"); fi
done

# The compact tables follow each output's "<!-- summary -->" line: header once, then every row.
first=1
for lib in "${ran[@]}"; do
  if ((first)); then
    sed -n '/^<!-- summary -->$/,$p' "$out/$lib.md" | tail -n +2
    first=0
  else
    sed -n '/^<!-- summary -->$/,$p' "$out/$lib.md" | tail -n +4
  fi
done
echo
echo "Full tables: $out/{$(IFS=,; echo "${ran[*]}")}.md"
((${#skipped[@]} == 0)) || echo "Skipped (library not found when CMake configured $dir): ${skipped[*]}"
if ((${#failed[@]})); then
  echo "FAILED (wrong result or crash; see $out/<lib>.md and the message above): ${failed[*]}" >&2
  exit 1
fi
