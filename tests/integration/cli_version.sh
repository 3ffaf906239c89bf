#!/usr/bin/env bash
# `gattn --version` prints the key: value lines of docs/cli.md; a bad flag is a usage error (exit 2).
set -u
gattn="$1"
out=$("$gattn" --version) || { echo "FAIL: --version exited $?"; exit 1; }
for key in version "build type" blas cuda nccl mpi; do
  grep -q "^$key: " <<<"$out" || { echo "FAIL: no '$key:' line in:"; echo "$out"; exit 1; }
done
"$gattn" --no-such-flag >/dev/null 2>&1
rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: unknown flag exited $rc, expected 2"; exit 1; }
echo "ok"
