#!/usr/bin/env bash
# Configures (Release, warnings as errors) and builds gattn into build/. Extra arguments go to
# CMake's configure step, e.g. -DGATTN_CUDA=OFF. Re-running with nothing changed takes seconds.
# GATTN_BUILD_DIR picks another build directory and GATTN_BUILD_TARGETS (space-separated) limits
# what is built; scripts/test.sh uses both for the CUDA emulation build in build-emu/.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dir="${GATTN_BUILD_DIR:-build}"

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# An existing build dir keeps its generator; only pass -G on first configure.
if [[ -f $dir/CMakeCache.txt ]]; then generator=(); fi

# ccache, where installed (scripts/setup.sh installs it), makes a rebuild in a fresh clone or a
# second build directory (build-emu/) reuse what an earlier build compiled.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
mkdir -p "$dir"
if ! cmake -S . -B "$dir" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=Release -DGATTN_WERROR=ON "$@" >"$dir/configure.log" 2>&1; then
  cat "$dir/configure.log" >&2
  echo "build: CMake configure failed (log above, also in $dir/configure.log)" >&2
  exit 2
fi
targets=()
for t in ${GATTN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$(nproc)" "${targets[@]}"
