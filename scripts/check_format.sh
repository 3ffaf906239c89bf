#!/usr/bin/env bash
# Checks that every C++ and CUDA source in the repository is formatted as .clang-format says
# (Google style, 120 columns). Exit 0 when it is; otherwise lists the files and exits 1.
# `./scripts/check_format.sh --fix` formats them in place instead. clang-format comes from Debian
# (scripts/setup.sh installs it); the version pins the output, so the check uses the one on PATH.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "format: ${#bad[@]} file(s) differ from .clang-format ($(clang-format --version | head -1)):"
  printf '  %s\n' "${bad[@]}"
  echo "format: run ./scripts/check_format.sh --fix"
  exit 1
fi
echo "format: ${#files[@]} files follow .clang-format"
