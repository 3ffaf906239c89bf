#!/usr/bin/env bash
# Downloads, on a Debian machine with network (this one), the .deb files of the libraries gattn
# builds against into .gpu_deps/, for a GPU machine that has CUDA, CMake and a compiler but neither
# these libraries nor a network: scripts/gpu_check.sh unpacks them into a prefix there. Run once
# before a device check, and carry .gpu_deps with the working tree (git-ignored; about 14 MB).
#
#   scripts/gpu_deps.sh     # then, with the device tool: run scripts/gpu_check.sh, carry [".gpu_deps"]
#
# Not included: the C and C++ runtimes and libgomp (the GPU machine's compiler brings its own, and
# older copies on the library path would shadow them), and OpenMPI (large; optional for the build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/.gpu_deps"
packages=(
  libyaml-cpp-dev libyaml-cpp0.7            # config files
  libcli11-dev nlohmann-json3-dev           # header-only: the CLI, JSON
  libgtest-dev                              # the test suites
  libbenchmark-dev libbenchmark1debian      # the benchmarks
  libopenblas-openmp-dev libopenblas0-openmp libopenblas-dev libgfortran5 libquadmath0  # CPU GEMMs (f64)
  libdnnl-dev libdnnl2 ocl-icd-libopencl1   # f32 CPU GEMMs (oneDNN; optional for the build)
  libsentencepiece-dev libsentencepiece0 libssl-dev libssl3  # subword tokenizers
)
mkdir -p "$out"
rm -f "$out"/*.deb
(cd "$out" && apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
missing=0
for p in "${packages[@]}"; do
  ls "$out/${p}_"*.deb >/dev/null 2>&1 || { echo "gpu_deps: $p was not downloaded" >&2; missing=1; }
done
du -sh "$out"
exit "$missing"
