// How this process was started: alone, or as one rank of a job that mpirun, mpiexec or Slurm's
// srun launched. Read from the launcher's environment variables only, so a plain `gattn train`
// never touches MPI (a world of one with no MPI set-up visible to the user).
#pragma once
#include <functional>
#include <string>

namespace gattn::dist {

struct LaunchInfo {
  bool launched = false;  // started by an MPI-capable launcher: MPI_Init is needed
  std::string launcher;   // "openmpi", "pmi", "pmix", "slurm" or "" when not launched
  int rank = 0;           // hints from the environment; MPI's own answer wins once initialised
  int size = 1;
  int local_rank = 0;  // rank among this node's ranks: picks the GPU
  int local_size = 1;  // ranks on this node: shares the CPU cores among them
};

// Looks at, in order: OpenMPI's OMPI_COMM_WORLD_{SIZE,RANK,LOCAL_RANK,LOCAL_SIZE}; PMI_SIZE /
// PMI_RANK (MPICH's hydra, Slurm's PMI2); PMIX_RANK (PMIx, e.g. srun --mpi=pmix); and Slurm's step
// variables SLURM_STEP_NUM_TASKS / SLURM_PROCID / SLURM_LOCALID, which srun sets but a batch
// script does not (so `sbatch` running gattn directly stays a world of one). `getenv` is injected
// for tests; values that are not non-negative integers are ignored.
LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv);
// The same over the process's real environment.
LaunchInfo detect_launch();

}  // namespace gattn::dist
