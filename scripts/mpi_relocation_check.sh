#!/usr/bin/env bash
# Shows that the OpenMPI in .gpu_deps (scripts/gpu_deps.sh) runs from a relocated prefix, as
# scripts/gpu_check.sh uses it on the GPU machine: unpacks every .deb into a temporary prefix,
# builds a small MPI program with that prefix's mpicxx and runs it with `mpirun -n 2` from there.
# Where the machine has an OpenMPI of its own and unshare(1) may make a mount namespace, that
# OpenMPI's files are hidden for the run (/dev/null mounted over each, empty directories over its
# plugin and data directories), so nothing of it can be picked up; PATH and LD_LIBRARY_PATH name
# only the prefix's OpenMPI either way.
#
#   scripts/mpi_relocation_check.sh [DEB_DIR]    # default .gpu_deps; exit 0 when both ranks report
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
debs="${1:-$root/.gpu_deps}"
ls "$debs"/openmpi-bin_*.deb >/dev/null 2>&1 || { echo "mpi_relocation_check: no OpenMPI .debs in $debs (run scripts/gpu_deps.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$debs"/*.deb; do bash "$root/scripts/gpu_deps.sh" --unpack "$f" "$work/prefix"; done
prefix="$work/prefix/usr"
libs="$prefix/lib/x86_64-linux-gnu"
cat >"$work/ranks.cpp" <<'CPP'
#include <mpi.h>
#include <cstdio>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, one = 1, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d of %d: allreduce sum %d\n", rank, size, sum);
  MPI_Finalize();
  return sum == size ? 0 : 1;
}
CPP

# The run, as a script of its own so it can start inside a new mount namespace.
cat >"$work/run.sh" <<RUN
set -euo pipefail
export OPAL_PREFIX="$prefix"
export PATH="$prefix/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export LD_LIBRARY_PATH="$libs:$libs/openmpi/lib"
hide() {  # mount /dev/null over each of the system OpenMPI's files, an empty directory over its directories
  local p
  for p in \$(dpkg -L openmpi-bin openmpi-common libopenmpi3 libpmix2 2>/dev/null); do
    if [[ -d \$p && ! -L \$p && \$p == */openmpi* ]]; then mount -t tmpfs none "\$p" 2>/dev/null || true
    elif [[ -f \$p || -L \$p ]] && [[ \$p == /usr/lib/* || \$p == /usr/bin/* ]]; then mount --bind /dev/null "\$p" 2>/dev/null || true
    fi
  done
  if [[ -s /usr/lib/x86_64-linux-gnu/libmpi.so.40 ]]; then echo "the system's libmpi is still visible"; exit 1; fi
  echo "system OpenMPI hidden: /usr/bin/mpirun.openmpi -> \$(stat -L -c %F /usr/bin/mpirun.openmpi), \$(ls -A /usr/lib/x86_64-linux-gnu/openmpi | wc -l) entries in /usr/lib/x86_64-linux-gnu/openmpi"
}
if [[ \${HIDE:-0} == 1 ]]; then hide; fi
echo "mpirun: \$(command -v mpirun) (\$(mpirun --version | head -1)), OPAL_PREFIX=\$OPAL_PREFIX"
mpicxx "$work/ranks.cpp" -o "$work/ranks"
echo "ranks links \$(ldd "$work/ranks" | grep -o 'libmpi.so.40 => [^ ]*')"
root_flag=()
if [[ \$(id -u) -eq 0 ]]; then root_flag=(--allow-run-as-root); fi
echo "+ mpirun -n 2 \${root_flag[*]} --oversubscribe --bind-to none $work/ranks"
mpirun -n 2 "\${root_flag[@]}" --oversubscribe --bind-to none "$work/ranks"
RUN

if dpkg -s libopenmpi3 >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]] && unshare -m true 2>/dev/null; then
  echo "mpi_relocation_check: the system's OpenMPI is installed; hiding it in a mount namespace"
  unshare -m env HIDE=1 bash "$work/run.sh"
else
  bash "$work/run.sh"
fi
echo "mpi_relocation_check: ok"
