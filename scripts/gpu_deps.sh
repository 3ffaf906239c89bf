#!/usr/bin/env bash
# Downloads, on a Debian machine with network (this one), the .deb files of the libraries gattn
# builds against into .gpu_deps/, for a GPU machine that has CUDA, CMake and a compiler but neither
# these libraries nor a network: scripts/gpu_check.sh unpacks them into a prefix there (with
# --unpack, below). Run once before a device check, and carry .gpu_deps with the working tree
# (git-ignored; about 33 MB).
#
#   scripts/gpu_deps.sh                  # then, with the device tool: run scripts/gpu_check.sh, carry [".gpu_deps"]
#   scripts/gpu_deps.sh --unpack DEB DIR # unpacks one .deb into the prefix DIR (no dpkg needed)
#
# OpenMPI comes with its libraries (PMIx, hwloc, libevent, the fabric and verbs libraries it links):
# unpacked under DIR/usr it runs from there once OPAL_PREFIX=DIR/usr says where its plugins, help
# texts and wrapper data are, with DIR/usr/bin on PATH and its library directories on
# LD_LIBRARY_PATH (scripts/mpi_relocation_check.sh shows mpirun -n 2 so, the system's OpenMPI
# hidden). --unpack adds the mpirun and mpicxx names that Debian's alternatives would.
#
# Not included: the C and C++ runtimes and libgomp (the GPU machine's compiler brings its own, and
# older copies on the library path would shadow them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# --unpack DEB DIR: dpkg-deb where the machine has it, else the .deb's ar members by hand.
if [[ ${1:-} == --unpack ]]; then
  deb=$2 dir=$3
  mkdir -p "$dir"
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$deb" "$dir"
  else
    member=$(ar t "$deb" | grep '^data\.tar')
    case "$member" in
      *.xz) ar p "$deb" "$member" | tar -xJ -C "$dir" ;;
      *.zst) ar p "$deb" "$member" | zstd -dc | tar -x -C "$dir" ;;
      *) ar p "$deb" "$member" | tar -x -C "$dir" ;;
    esac
  fi
  for name in mpirun mpiexec mpicc mpicxx; do
    [[ -e $dir/usr/bin/$name.openmpi ]] && ln -sf "$name.openmpi" "$dir/usr/bin/$name"
  done
  exit 0
fi
out="$root/.gpu_deps"
packages=(
  libyaml-cpp-dev libyaml-cpp0.7            # config files
  libcli11-dev nlohmann-json3-dev           # header-only: the CLI, JSON
  libgtest-dev                              # the test suites
  libbenchmark-dev libbenchmark1debian      # the benchmarks
  libopenblas-openmp-dev libopenblas0-openmp libopenblas-dev libgfortran5 libquadmath0  # CPU GEMMs (f64)
  # oneDNN (f32 CPU GEMMs) is optional for the build and left out: its 7 MB would push the carried
  # tree past the device tool's 64 MiB, and the device run measures the GPU, not CPU GEMMs.
  libsentencepiece-dev libsentencepiece0 libssl-dev libssl3  # subword tokenizers
  # Hugging Face tokenizers: PCRE2 for the pre-tokenizer regexes, ICU for NFC and character classes
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 libicu-dev libicu72
  zlib1g-dev                                # checkpoint checksums (configure needs ZLIB)
  # OpenMPI and what it links: multi-rank runs (2 ranks sharing one GPU through the staged backend)
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libpmix2 libmunge2 libhwloc15 libhwloc-plugins
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1
  libnl-3-200 libnl-route-3-200 libpsm-infinipath1 libpsm2-2 libnuma1 libudev1 libatomic1
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
