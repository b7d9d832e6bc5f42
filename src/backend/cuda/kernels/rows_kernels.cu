/* Kernels of the rows primitive (rows_kernels.h): centring and scaling in
 * the data's own order, and the per-row reduction, accumulated in double,
 * with the block's sums of d and d^2 added to two global totals. */
#include "common.cuh"
#include "rows_kernels.h"

namespace gstat_cu {
namespace {

constexpr int kRowsPerBlock = kLinearThreads / 32; /* row-major: a warp per row */

template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    rows_center(const T *x, T *u, int64_t n, int64_t p, bool row_major,
                const double *__restrict__ center, const double *__restrict__ inv) {
  const int64_t total = n * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t j = row_major ? e % p : e / n;
    const double c = center ? center[j] : 0.0, f = inv ? inv[j] : 1.0;
    u[e] = (T)(((double)x[e] - c) * f);
  }
}

__device__ __forceinline__ double term(double a, double b, bool has_b, int64_t j,
                                       const double *center, const double *inv) {
  if (center) a -= center[j];
  if (inv) a *= inv[j];
  return a * (has_b ? b : a);
}

/* The block's d values (one per thread slot, 0 where none) into sums. */
__device__ void add_sums(double v, bool valid, double *sums) {
  __shared__ double part[2][kLinearThreads / 32];
  double s1 = valid ? v : 0.0, s2 = valid ? v * v : 0.0;
  for (int o = 16; o > 0; o /= 2) {
    s1 += __shfl_down_sync(kFullMask, s1, o);
    s2 += __shfl_down_sync(kFullMask, s2, o);
  }
  const int w = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    part[0][w] = s1;
    part[1][w] = s2;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 1; k < kLinearThreads / 32; k++) {
      s1 += part[0][k];
      s2 += part[1][k];
    }
    atomicAdd(sums, s1);
    atomicAdd(sums + 1, s2);
  }
}

/* Column-major: a thread per row, the columns in order (coalesced across
 * the threads). */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    reduce_cols(const T *__restrict__ a, const T *__restrict__ b, int64_t n, int64_t p,
                const double *__restrict__ center, const double *__restrict__ inv,
                double *__restrict__ d, double *__restrict__ sums) {
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  double s = 0.0;
  if (i < n)
    for (int64_t j = 0; j < p; j++)
      s += term((double)a[i + j * n], b ? (double)b[i + j * n] : 0.0, b != nullptr, j, center, inv);
  if (i < n && d) d[i] = s;
  add_sums(s, i < n, sums);
}

/* Row-major: a warp per row, its lanes along the row (coalesced). */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    reduce_rows(const T *__restrict__ a, const T *__restrict__ b, int64_t n, int64_t p,
                const double *__restrict__ center, const double *__restrict__ inv,
                double *__restrict__ d, double *__restrict__ sums) {
  const int64_t i = (int64_t)blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  double s = 0.0;
  if (i < n)
    for (int64_t j = lane; j < p; j += 32)
      s += term((double)a[i * p + j], b ? (double)b[i * p + j] : 0.0, b != nullptr, j, center, inv);
  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(kFullMask, s, o);
  if (i < n && lane == 0 && d) d[i] = s;
  add_sums(s, i < n && lane == 0, sums);
}

}  // namespace
}  // namespace gstat_cu

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_rows_center(int dtype, const void *x, void *u, int64_t n, int64_t p,
                                            int row_major, const double *center, const double *inv,
                                            cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0) return cudaErrorInvalidValue;
  if (n == 0 || p == 0) return cudaSuccess;
  unsigned blocks = linear_blocks(n * p);
  if (dtype == kF32)
    rows_center<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)x, (float *)u, n, p,
                                                              row_major != 0, center, inv);
  else
    rows_center<double><<<blocks, kLinearThreads, 0, stream>>>((const double *)x, (double *)u, n, p,
                                                               row_major != 0, center, inv);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_rows_reduce(int dtype, const void *a, const void *b, int64_t n,
                                            int64_t p, int row_major, const double *center,
                                            const double *inv, double *d, double *sums,
                                            cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0 || !sums) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (row_major) {
    unsigned blocks = (unsigned)((n + kRowsPerBlock - 1) / kRowsPerBlock);
    if (dtype == kF32)
      reduce_rows<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)a, (const float *)b,
                                                                n, p, center, inv, d, sums);
    else
      reduce_rows<double><<<blocks, kLinearThreads, 0, stream>>>(
          (const double *)a, (const double *)b, n, p, center, inv, d, sums);
  } else {
    unsigned blocks = (unsigned)((n + kLinearThreads - 1) / kLinearThreads);
    if (dtype == kF32)
      reduce_cols<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)a, (const float *)b,
                                                                n, p, center, inv, d, sums);
    else
      reduce_cols<double><<<blocks, kLinearThreads, 0, stream>>>(
          (const double *)a, (const double *)b, n, p, center, inv, d, sums);
  }
  return cudaGetLastError();
}
