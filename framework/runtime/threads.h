// CPU thread count for both our OpenMP loops and OpenBLAS (one OpenMP pool serves both).
#pragma once

namespace gattn {

// n <= 0 means all cores.
void set_num_threads(int n);
int num_threads();

}  // namespace gattn
