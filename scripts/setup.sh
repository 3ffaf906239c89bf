#!/usr/bin/env bash
# Installs the Debian packages gattn builds against, only when something is missing (idempotent,
# fast when all is there). The CUDA toolkit is not installed here: the build uses it when the
# machine has it in its standard place (/usr/local/cuda). `--bench` also installs what the
# comparison scripts under scripts/bench/ need (PyTorch from Debian). The report test uses Debian's
# python3 (/usr/bin/python3) for PIL.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-openmp-dev
  zlib1g-dev  # CRC-32 of checkpoint tensors
  clang-format  # ./scripts/test.sh checks the tree is formatted
  libopenmpi-dev openmpi-bin
  python3-numpy
  chromium python3-pil  # the report test renders report.html headless and checks the screenshot
)
if [[ ${1:-} == --bench ]]; then packages+=(python3-torch python3-yaml); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
