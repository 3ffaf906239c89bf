#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU (made for an H200, sm_90): builds gattn with CUDA
# into build-gpu/, runs the GPU tests (ctest -L gpu) and the CUDA op benchmark, and copies every log
# to $OUT (when set; else gpu_check_logs/ in the repository). Meant to finish well within 7 minutes
# on 16 cores so that a 15-minute device budget allows one rerun.
#
#   scripts/gpu_check.sh              # arch 90
#   GATTN_CUDA_ARCH=80 scripts/gpu_check.sh
#
# Exit status: 0 when the build and every GPU test pass, 1 when a test fails, 2 when the build fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

logs="${OUT:-$root/gpu_check_logs}"
mkdir -p "$logs"
arch="${GATTN_CUDA_ARCH:-90}"
jobs="$(nproc)"
start=$(date +%s)
elapsed() { echo "$(( $(date +%s) - start ))s"; }

echo "gpu_check: logs go to $logs"
{ nvidia-smi || echo "nvidia-smi failed"; } >"$logs/nvidia-smi.txt" 2>&1
head -15 "$logs/nvidia-smi.txt"

echo "gpu_check: configure (CUDA on, arch $arch) [$(elapsed)]"
generator=()
if command -v ninja >/dev/null 2>&1 && [[ ! -f build-gpu/CMakeCache.txt ]]; then generator=(-G Ninja); fi
configure() {
  cmake -S . -B build-gpu "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGATTN_WERROR=ON -DGATTN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DGATTN_BUILD_BENCHMARKS="$1" >"$logs/configure.log" 2>&1
}
targets=(gattn_gpu_tests gattn_bench_cuda_ops)
if ! configure ON; then
  # Google Benchmark may be missing on the GPU machine: the tests matter more than the benchmark.
  echo "gpu_check: configure with benchmarks failed; retrying without them (the benchmark is skipped)"
  targets=(gattn_gpu_tests)
  if ! configure OFF; then
    tail -30 "$logs/configure.log"
    echo "gpu_check: configure failed (log: $logs/configure.log)"
    exit 2
  fi
fi

echo "gpu_check: build ${targets[*]} with -j$jobs [$(elapsed)]"
if ! cmake --build build-gpu -j "$jobs" --target "${targets[@]}" >"$logs/build.log" 2>&1; then
  grep -n -m 20 -E "error|Error" "$logs/build.log"
  echo "gpu_check: build failed (log: $logs/build.log)"
  exit 2
fi

echo "gpu_check: ctest -L gpu [$(elapsed)]"
(cd build-gpu && ctest -L gpu --output-on-failure -j 4 --timeout 240) >"$logs/ctest_gpu.log" 2>&1
test_status=$?
tail -25 "$logs/ctest_gpu.log"
# A skip here means the device was not usable: say so loudly rather than report a silent pass.
if grep -q "no CUDA device" "$logs/ctest_gpu.log"; then echo "gpu_check: WARNING: tests skipped with 'no CUDA device'"; fi

if [[ -x build-gpu/benchmarks/gattn_bench_cuda_ops ]]; then
  echo "gpu_check: CUDA op benchmark (GPT-2 124M shapes) [$(elapsed)]"
  timeout 120 build-gpu/benchmarks/gattn_bench_cuda_ops --benchmark_min_time=0.2 >"$logs/bench_cuda_ops.log" 2>&1 ||
    echo "gpu_check: the benchmark failed or timed out (log: $logs/bench_cuda_ops.log)"
  cat "$logs/bench_cuda_ops.log"
fi

# Not there yet: the trainer (recipes/train.cpp) does not place the model on CUDA, and attention has
# no CUDA path (ops/attention.cpp is the CPU flash kernel; fused CUDA attention is issue 7).
echo "gpu_check: NOT RUN: the 200-step gpt2_124m-shaped training run on synthetic tokens (tokens/s, MFU)."
echo "gpu_check:          it needs 'gattn train ... device=cuda' (trainer on CUDA) and a CUDA attention path."

echo "gpu_check: done in $(elapsed); ctest exit status $test_status; logs in $logs"
if [[ $test_status -ne 0 ]]; then exit 1; fi
exit 0
