#!/usr/bin/env bash
# Data-parallel training on one node: `scripts/launch.sh -n N CONFIG [key.path=value ...] [--resume auto]`
# starts N ranks of build/gattn train under OpenMPI's mpirun; more than 4 ranks per core only with
# --oversubscribe (before CONFIG). Each rank trains train.batch_size
# rows of every global batch; ranks on CPUs share the cores (train.threads 0 gives each its part),
# on GPUs (device: cuda) each rank takes the GPU of its local rank. Multi-node runs (docs/distributed-and-gpu.md):
#   mpirun -n 16 --hostfile hosts --map-by ppr:8:node build/gattn train --config CONFIG ...
#   srun -N 2 --ntasks-per-node=8 --gpus-per-node=8 --mpi=pmix build/gattn train --config CONFIG ...
# Extra mpirun options go in GATTN_MPIRUN_ARGS (e.g. "--mca btl_tcp_if_include eth0").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  echo "usage: scripts/launch.sh -n N [--oversubscribe] CONFIG [key.path=value ...] [--resume auto|DIR] [--stop-after STEPS]" >&2
  exit 2
}
ranks=""
oversubscribe=0
while (($# > 0)); do
  case $1 in
    -n)
      (($# >= 2)) || usage
      ranks=$2
      shift 2
      ;;
    -n*)
      ranks=${1#-n}
      shift
      ;;
    --oversubscribe)
      oversubscribe=1
      shift
      ;;
    -h | --help) usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "launch: -n needs a positive number of ranks, got '${ranks}'" >&2; usage; }
# Every rank is a full process with its own copy of the model: far more ranks than cores only
# thrash (and a typo such as -n 1000 would start them all). Above 4 per core, ask for it explicitly.
cores=$(nproc 2>/dev/null || echo 1)
max_ranks=$((4 * cores))
if ((${#ranks} > 9 || ranks > max_ranks)) && ((!oversubscribe)); then
  echo "launch: -n $ranks is more than 4 ranks per core ($cores cores: at most $max_ranks); pass --oversubscribe to start them anyway" >&2
  exit 2
fi
(($# >= 1)) || usage
config=$1
shift
[[ -f $config ]] || { echo "launch: config file '$config' does not exist" >&2; exit 2; }
gattn="${GATTN_BIN:-$root/build/gattn}"  # GATTN_BIN: another build (the tests pass theirs)
[[ -x $gattn ]] || { echo "launch: $gattn is not built; run ./scripts/build.sh first" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "launch: mpirun not found; run ./scripts/setup.sh (installs openmpi-bin)" >&2; exit 2; }

flags=(-n "$ranks")
# Root (containers, CI) is refused by OpenMPI unless allowed explicitly.
if [[ $(id -u) -eq 0 ]]; then flags+=(--allow-run-as-root); fi
# More ranks than cores is allowed (a small machine still runs a 2-rank check); no binding, so
# each rank's OpenMP threads may use any core; OMP settings pass to every rank.
flags+=(--oversubscribe --bind-to none)
for var in OMP_NUM_THREADS OMP_WAIT_POLICY GATTN_TEST_FAULT; do
  if [[ -n ${!var:-} ]]; then flags+=(-x "$var"); fi
done
# shellcheck disable=SC2206  # GATTN_MPIRUN_ARGS is a list of words on purpose
extra=(${GATTN_MPIRUN_ARGS:-})
exec mpirun "${flags[@]}" "${extra[@]}" "$gattn" train --config "$config" "$@"
