#!/usr/bin/env bash
# Installs the Debian packages gattn builds against, only when something is missing (idempotent,
# fast when all is there). The CUDA toolkit is not installed here: the build uses it when the
# machine has it in its standard place (/usr/local/cuda). `--bench` also installs what the
# comparison scripts under benchmarks/scripts/ need: PyTorch from Debian, the other GEMM libraries that
# benchmarks/scripts/gemm_libs.sh measures (BLIS, oneDNN, LIBXSMM), and it points the system BLAS at the
# OpenMP OpenBLAS, so PyTorch runs at its best beside us (Debian prefers the pthread variant when both
# are installed, and that one fights PyTorch's OpenMP pool). The report test uses Debian's python3
# (/usr/bin/python3) for PIL.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  ccache  # scripts/build.sh compiles through it: rebuilds and the second build directory reuse objects
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-openmp-dev
  libdnnl-dev  # oneDNN: the f32 GEMMs (docs/benchmarks.md, "GEMM libraries")
  zlib1g-dev  # CRC-32 of checkpoint tensors
  libsentencepiece-dev libssl-dev  # gattn tokenize; the tokenizer's SHA-256 and base64
  libpcre2-dev libicu-dev  # Hugging Face tokenizers: their regexes; NFC and character classes
  clang-format  # ./scripts/test.sh checks the tree is formatted
  libopenmpi-dev openmpi-bin
  python3-numpy
  chromium python3-pil  # the report test renders report.html headless and checks the screenshot
)
bench=0
if [[ ${1:-} == --bench ]]; then
  bench=1
  packages+=(python3-torch python3-yaml libopenblas0-openmp libblis-openmp-dev libxsmm-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((bench)); then
  # The BLAS PyTorch loads is whatever libblas.so.3 points at: make it the OpenMP OpenBLAS.
  arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
  for lib in libblas.so.3 liblapack.so.3; do
    target=/usr/lib/$arch/openblas-openmp/$lib
    current=$(readlink -f "/usr/lib/$arch/$lib" || true)
    if [[ -e $target && $current != "$(readlink -f "$target")" ]]; then
      echo "setup: pointing $lib at the OpenMP OpenBLAS (was $current)"
      "${sudo_cmd[@]}" update-alternatives --quiet --set "$lib-$arch" "$target"
    fi
  done
fi
