#!/usr/bin/env bash
# The OpenBLAS core (framework/runtime/openblas_core.h): on an Intel CPU with AVX-512 gattn names
# SkylakeX unless the user set OPENBLAS_CORETYPE; elsewhere OpenBLAS detects; the marker keeps
# OpenBLAS's own detection; --version says which.
set -u
gattn="$1"
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

core() { env -u OPENBLAS_CORETYPE -u GATTN_OPENBLAS_CORE_SET "$@" "$gattn" --version | grep '^blas core: '; }

flags=$(grep -m1 '^flags' /proc/cpuinfo)
vendor=$(grep -m1 '^vendor_id' /proc/cpuinfo | sed 's/.*: //')
avx512=yes
for f in avx512f avx512dq avx512bw avx512vl; do [[ " $flags " == *" $f "* ]] || avx512=no; done
if [[ $vendor == GenuineIntel && $avx512 == yes ]]; then
  [[ $(core) == "blas core: SkylakeX (gattn's choice for this CPU)" ]] || fail "Intel AVX-512 default: '$(core)'"
else
  [[ $(core) == *"(OpenBLAS's detection)" ]] || fail "default elsewhere: '$(core)'"
fi
[[ $(core OPENBLAS_CORETYPE=Haswell) == "blas core: Haswell (OPENBLAS_CORETYPE=Haswell, environment)" ]] ||
  fail "OPENBLAS_CORETYPE kept: '$(core OPENBLAS_CORETYPE=Haswell)'"
[[ $(core GATTN_OPENBLAS_CORE_SET=1) == *"(OpenBLAS's detection)" ]] || fail "marker: '$(core GATTN_OPENBLAS_CORE_SET=1)'"
# With the OpenMP policy set by the user, the core is still chosen (one re-execution serves both).
[[ $(core OMP_WAIT_POLICY=PASSIVE) == "$(core)" ]] || fail "with OMP_WAIT_POLICY: '$(core OMP_WAIT_POLICY=PASSIVE)'"
echo "ok"
