/* Stage 1's small kernels (band_reflectors.h). */
#include "band_reflectors.h"
#include "common.cuh"

namespace {

__global__ void explicit_v_kernel(const double *p, int64_t ld, double *v, int64_t m, int64_t ldv) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i >= m) return;
  v[i + j * ldv] = i > j ? p[i + j * ld] : (i == j ? 1.0 : 0.0);
}

__global__ void larft_kernel(const double *g, const double *tau, double *t, int r) {
  const int j = threadIdx.x;
  if (j < r) gstat_cu::larft_row(g, r, tau, t, r, r, j);
}

__global__ void unit_diagonal_kernel(double *m, int64_t n, int64_t ld) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) m[i + i * ld] = 1.0;
}

}  // namespace

extern "C" cudaError_t gstat_cu_explicit_v(const double *p, int64_t ld, double *v, int64_t m,
                                           int64_t r, int64_t ldv, cudaStream_t st) {
  if (m < 1 || r < 1) return cudaSuccess;
  explicit_v_kernel<<<dim3((unsigned)((m + 255) / 256), (unsigned)r), 256, 0, st>>>(p, ld, v, m,
                                                                                    ldv);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_larft_rows(const double *g, const double *tau, double *t, int r,
                                           cudaStream_t st) {
  if (r < 1) return cudaSuccess;
  if (r > 1024) return cudaErrorInvalidValue;
  larft_kernel<<<1, (unsigned)((r + 31) / 32 * 32), 0, st>>>(g, tau, t, r);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_unit_diagonal(double *m, int64_t n, int64_t ld, cudaStream_t st) {
  if (n < 1) return cudaSuccess;
  unit_diagonal_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(m, n, ld);
  return cudaGetLastError();
}
