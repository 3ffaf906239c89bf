#!/usr/bin/env bash
# Configures (Release, warnings as errors) and builds gattn into build/. Extra arguments go to
# CMake's configure step, e.g. -DGATTN_CUDA=OFF. Re-running with nothing changed takes seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# An existing build dir keeps its generator; only pass -G on first configure.
if [[ -f build/CMakeCache.txt ]]; then generator=(); fi

mkdir -p build
if ! cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DGATTN_WERROR=ON "$@" >build/configure.log 2>&1; then
  cat build/configure.log >&2
  echo "build: CMake configure failed (log above, also in build/configure.log)" >&2
  exit 2
fi
cmake --build build -j "$(nproc)"
