// Launcher detection from environment variables.
#include "framework/dist/launch_env.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace gattn::dist {

namespace {

std::optional<int> int_var(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 24) return std::nullopt;
  return static_cast<int>(x);
}

}  // namespace

LaunchInfo detect_launch(const std::function<const char*(const char*)>& getenv) {
  LaunchInfo info;
  auto take = [&](const char* launcher, std::optional<int> size, std::optional<int> rank, std::optional<int> local_rank,
                  std::optional<int> local_size) {
    info.launched = true;
    info.launcher = launcher;
    info.size = std::max(size.value_or(1), 1);
    info.rank = rank.value_or(0);
    info.local_rank = local_rank.value_or(0);
    info.local_size = std::max(local_size.value_or(1), 1);
    return info;
  };
  if (auto size = int_var(getenv, "OMPI_COMM_WORLD_SIZE"))
    return take("openmpi", size, int_var(getenv, "OMPI_COMM_WORLD_RANK"), int_var(getenv, "OMPI_COMM_WORLD_LOCAL_RANK"),
                int_var(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE"));
  // Under srun the local layout comes from Slurm even when MPI is wired up through PMI or PMIx.
  const auto slurm_local_rank = int_var(getenv, "SLURM_LOCALID");
  const auto slurm_local_size = int_var(getenv, "SLURM_NTASKS_PER_NODE");
  if (auto size = int_var(getenv, "PMI_SIZE"))
    return take("pmi", size, int_var(getenv, "PMI_RANK"),
                int_var(getenv, "MPI_LOCALRANKID").has_value() ? int_var(getenv, "MPI_LOCALRANKID") : slurm_local_rank,
                int_var(getenv, "MPI_LOCALNRANKS").has_value() ? int_var(getenv, "MPI_LOCALNRANKS") : slurm_local_size);
  if (auto rank = int_var(getenv, "PMIX_RANK"))
    return take("pmix", int_var(getenv, "SLURM_STEP_NUM_TASKS"), rank, slurm_local_rank, slurm_local_size);
  if (auto size = int_var(getenv, "SLURM_STEP_NUM_TASKS"))
    return take("slurm", size, int_var(getenv, "SLURM_PROCID"), slurm_local_rank, slurm_local_size);
  return info;
}

LaunchInfo detect_launch() {
  return detect_launch([](const char* name) { return std::getenv(name); });
}

}  // namespace gattn::dist
