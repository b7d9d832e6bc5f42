/* Dense Laplacians of one or many graphs on the device (laplacian_kernels.h):
 * the degrees with the validation, then the entries in place. Built without
 * FMA contraction, as the CPU build, so degrees and entries round as the
 * CPU's (graph/weights_impl.h's rules). */
#include <float.h>

#include "common.cuh"
#include "graph/weights_impl.h"
#include "laplacian_kernels.h"

namespace {

/* the symmetrized a_ij of graph column-major A (n x n) */
__device__ inline double sym_at(const double *A, int64_t n, int sym, int drop_loops, int64_t i,
                                int64_t j) {
  if (i == j) return drop_loops ? 0.0 : A[i + i * n];
  return i > j ? gstat_i_sym_pair(sym, A[i + j * n], A[j + i * n])
               : gstat_i_sym_pair(sym, A[j + i * n], A[i + j * n]);
}

/* A thread per column j of graph blockIdx.y: the column sum in row order. */
__global__ void degrees_kernel(const double *__restrict__ A, int64_t n, int sym, int drop_loops,
                               double eps, double *__restrict__ deg, int *__restrict__ bad) {
  const int64_t g = blockIdx.y, j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const double *a = A + g * n * n;
  double s = 0;
  int badness = 0;
  for (int64_t i = 0; i < n; i++) {
    double lo = a[i + j * n], up = a[j + i * n];
    if (!(lo >= 0 && lo <= DBL_MAX)) badness = 1;
    if (sym == GSTAT_SYM_CHECK && !gstat_i_sym_agree(lo, up, eps)) badness = 1;
    s += sym_at(a, n, sym, drop_loops, i, j);
  }
  deg[g * n + j] = s;
  if (badness) atomicOr(bad, 1);
}

/* A thread per pair i >= j of graph blockIdx.z (2-D tiles of the lower
 * triangle; the upper tiles return at once). */
__global__ void fill_kernel(double *__restrict__ A, int64_t n, int sym, int drop_loops, int kind,
                            const double *__restrict__ deg) {
  const int64_t g = blockIdx.z;
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= n || j > i) return;
  double *a = A + g * n * n;
  const double *d = deg + g * n;
  double w = sym_at(a, n, sym, drop_loops, i, j);
  a[i + j * n] = gstat_i_laplacian_entry(kind, w, i == j, d[i], d[j]);
  if (i != j) a[j + i * n] = gstat_i_laplacian_entry(kind, w, false, d[j], d[i]);
}

}  // namespace

extern "C" cudaError_t gstat_cu_lap_degrees(const double *A, int64_t nb, int64_t n, int sym,
                                            int drop_loops, double eps, double *deg, int *bad,
                                            cudaStream_t stream) {
  if (nb < 0 || n < 0 || nb > 65535) return cudaErrorInvalidValue;
  if (nb == 0 || n == 0) return cudaSuccess;
  const int threads = 128;
  dim3 grid((unsigned)((n + threads - 1) / threads), (unsigned)nb);
  degrees_kernel<<<grid, threads, 0, stream>>>(A, n, sym, drop_loops, eps, deg, bad);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_lap_fill(double *A, int64_t nb, int64_t n, int sym, int drop_loops,
                                         int kind, const double *deg, cudaStream_t stream) {
  if (nb < 0 || n < 0 || nb > 65535 || (n + 7) / 8 > 65535) return cudaErrorInvalidValue;
  if (nb == 0 || n == 0) return cudaSuccess;
  dim3 block(32, 8);
  dim3 grid((unsigned)((n + 31) / 32), (unsigned)((n + 7) / 8), (unsigned)nb);
  fill_kernel<<<grid, block, 0, stream>>>(A, n, sym, drop_loops, kind, deg);
  return cudaGetLastError();
}
