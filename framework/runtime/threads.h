// CPU thread count for both our OpenMP loops and OpenBLAS (one OpenMP pool serves both).
#pragma once

namespace gattn {

// n <= 0 means all cores.
void set_num_threads(int n);
int num_threads();
// The cores this process may run on (its affinity mask): what train.threads 0 shares out.
int num_procs();

}  // namespace gattn
