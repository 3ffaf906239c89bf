#!/usr/bin/env bash
# Installs what is missing, checks the sources' formatting, builds everything (CPU sources, and CUDA
# sources when nvcc exists) and runs the whole test suite with ctest. Exit 0 only if every test passes. GPU tests skip cleanly
# without a device. Extra arguments go to ctest (e.g. -L unit, -R Matmul).
#
# Then, where the CUDA toolkit's headers are, the CUDA emulation build (build-emu/,
# -DGATTN_CUDA_EMULATE=ON) compiles every CUDA source with the host compiler and runs the GPU tests
# on the CPU: the launchers, kernels, cuBLAS calls and NCCL code all execute on a machine without a
# GPU. GATTN_SKIP_EMULATION=1 leaves it out (e.g. for a quick run of a few unit tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Each phase says how long it took, so a slow suite shows where its time goes.
phase_start=$SECONDS
phase_done() {
  echo "test: $1 took $((SECONDS - phase_start)) s (total $SECONDS s)"
  phase_start=$SECONDS
}

./scripts/setup.sh
./scripts/check_format.sh  # the tree follows .clang-format (scripts/check_format.sh --fix formats it)
phase_done "setup and the format check"
./scripts/build.sh
phase_done "the build"
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@")
phase_done "the tests"

cuda_headers=/usr/local/cuda/include/cuda_runtime.h
if [[ ${GATTN_SKIP_EMULATION:-0} == 1 ]]; then
  echo "test: the CUDA emulation suite is skipped (GATTN_SKIP_EMULATION=1)"
elif [[ ! -f $cuda_headers ]]; then
  echo "test: no CUDA toolkit headers ($cuda_headers): the CUDA emulation suite is skipped"
else
  echo "test: the CUDA emulation build (build-emu/) and the GPU tests on the CPU"
  GATTN_BUILD_DIR=build-emu GATTN_BUILD_TARGETS="gattn_gpu_tests gattn gattn_layer_checks" \
    ./scripts/build.sh -DGATTN_CUDA_EMULATE=ON -DGATTN_BUILD_BENCHMARKS=OFF
  phase_done "the CUDA emulation build"
  (cd build-emu && ctest -L gpu --output-on-failure -j "$(nproc)" --timeout 900)
  phase_done "the emulated GPU tests"
fi
