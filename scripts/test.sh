#!/usr/bin/env bash
# Installs what is missing, builds everything (CPU sources, and CUDA sources when nvcc exists) and
# runs the whole test suite with ctest. Exit 0 only if every test passes. GPU tests skip cleanly
# without a device. Extra arguments go to ctest (e.g. -L unit, -R Matmul).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

./scripts/setup.sh
./scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
