// Host entry to the CUDA axpy kernel (y += alpha * x over host buffers, copied through the device).
// Only defined when the build has CUDA (GATTN_WITH_CUDA).
#pragma once

namespace gattn::cuda {
void axpy_host(float* y, const float* x, float alpha, long long n);
}
