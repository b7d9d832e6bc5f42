/* Kernels of the weighted and missing-value co-moments (moments_kernels.h):
 * a NaN-row scan, kept-row means and centring, the pairwise shift and the
 * masked operands of its GEMMs. Sums in double; block reductions through
 * shared memory. */
#include "common.cuh"
#include "moments_kernels.h"

namespace gstat_cu {
namespace {

/* Sum of v over the block (every thread gets it). */
__device__ double block_sum(double v, double *sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
    __syncthreads();
  }
  double s = sh[0];
  __syncthreads();
  return s;
}

/* Minimum (max_ false) or maximum of v over the block; NaN is skipped by
 * the comparisons. */
__device__ double block_ext(double v, double *sh, bool max_) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o /= 2) {
    if ((int)threadIdx.x < o) {
      double a = sh[threadIdx.x], b = sh[threadIdx.x + o];
      sh[threadIdx.x] = max_ ? (b > a ? b : a) : (b < a ? b : a);
    }
    __syncthreads();
  }
  double s = sh[0];
  __syncthreads();
  return s;
}

/* A thread per row, the columns in order (coalesced across the threads). */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    nan_rows(const T *x, int64_t n, int64_t p, unsigned char *keep, unsigned long long *inf_at) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    unsigned char k = 1;
    for (int64_t j = 0; j < p; j++) {
      const double v = (double)x[i + j * n];
      if (isnan(v)) k = 0;
      if (isinf(v)) atomicMin(inf_at, (unsigned long long)(i * p + j));
    }
    keep[i] = k;
  }
}

template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    kept_means(const T *x, int64_t n, const double *w, const unsigned char *keep, int about_zero,
               double *mean) {
  __shared__ double sh[kLinearThreads];
  const T *c = x + (int64_t)blockIdx.x * n;
  double s = 0, ws = 0, lo = INFINITY, hi = -INFINITY, nan = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (keep && !keep[i]) continue;
    const double v = (double)c[i], wi = w ? w[i] : 1.0;
    s += wi * v;
    ws += wi;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nan += isnan(v) ? 1.0 : 0.0;
  }
  s = block_sum(s, sh);
  ws = block_sum(ws, sh);
  nan = block_sum(nan, sh);
  lo = block_ext(lo, sh, false);
  hi = block_ext(hi, sh, true);
  const double m = s / ws;
  double r = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    if (!keep || keep[i]) r += (w ? w[i] : 1.0) * ((double)c[i] - m);
  r = block_sum(r, sh);
  if (threadIdx.x != 0) return;
  if (about_zero)
    mean[blockIdx.x] = nan > 0 ? quiet_nan<double>() : 0.0;
  else /* exact for a constant column: its variance stays 0 */
    mean[blockIdx.x] = lo == hi && nan == 0 ? lo : m + r / ws;
}

template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    kept_center(T *x, int64_t n, int64_t p, const double *w, const unsigned char *keep,
                const double *center) {
  const int64_t total = n * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e % n, j = e / n;
    if (keep && !keep[i]) {
      x[e] = (T)0;
      continue;
    }
    T v = (T)((double)x[e] - (center ? center[j] : 0.0));
    if (w) v = (T)((double)v * sqrt(w[i])); /* zero weight: a zero row */
    x[e] = v;
  }
}

__global__ void __launch_bounds__(kLinearThreads)
    pair_shift(const double *x, int64_t n, double *shift, unsigned *inf) {
  __shared__ double sh[kLinearThreads];
  const double *c = x + (int64_t)blockIdx.x * n;
  double s = 0, cnt = 0, lo = INFINITY, hi = -INFINITY, infs = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double v = c[i];
    if (isinf(v)) infs += 1;
    if (isnan(v)) continue;
    s += v;
    cnt += 1;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  s = block_sum(s, sh);
  cnt = block_sum(cnt, sh);
  infs = block_sum(infs, sh);
  lo = block_ext(lo, sh, false);
  hi = block_ext(hi, sh, true);
  if (threadIdx.x != 0) return;
  shift[blockIdx.x] = cnt == 0 ? 0.0 : lo == hi ? lo : s / cnt;
  if (infs > 0) atomicOr(inf, 1u);
}

__global__ void __launch_bounds__(kLinearThreads)
    pair_fill(int mode, const double *x, int64_t n, int64_t p, const double *shift, const double *w,
              const double *aw, double *dst) {
  const int64_t total = n * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e % n, j = e / n;
    const double v = x[e], wi = w ? w[i] : 1.0;
    const bool in = !isnan(v);
    double d;
    switch (mode) {
      case 0: d = in ? 1.0 : 0.0; break;
      case 1: d = in ? wi : 0.0; break;
      case 2: d = in ? aw[i] : 0.0; break;
      case 3: d = in ? v - shift[j] : 0.0; break;
      case 4: d = v * v; break;
      default: d = wi * v; break;
    }
    dst[e] = d;
  }
}

}  // namespace
}  // namespace gstat_cu

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_nan_rows(int dtype, const void *x, int64_t n, int64_t p,
                                         unsigned char *keep, unsigned long long *inf_at,
                                         cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  unsigned blocks = linear_blocks(n);
  if (dtype == kF32)
    nan_rows<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)x, n, p, keep, inf_at);
  else
    nan_rows<double><<<blocks, kLinearThreads, 0, stream>>>((const double *)x, n, p, keep, inf_at);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_kept_means(int dtype, const void *x, int64_t n, int64_t p,
                                           const double *w, const unsigned char *keep,
                                           int about_zero, double *mean, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0 || p > INT32_MAX) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  if (dtype == kF32)
    kept_means<float><<<(unsigned)p, kLinearThreads, 0, stream>>>((const float *)x, n, w, keep,
                                                                  about_zero, mean);
  else
    kept_means<double><<<(unsigned)p, kLinearThreads, 0, stream>>>((const double *)x, n, w, keep,
                                                                   about_zero, mean);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_kept_center(int dtype, void *x, int64_t n, int64_t p,
                                            const double *w, const unsigned char *keep,
                                            const double *center, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0) return cudaErrorInvalidValue;
  if (n == 0 || p == 0) return cudaSuccess;
  unsigned blocks = linear_blocks(n * p);
  if (dtype == kF32)
    kept_center<float><<<blocks, kLinearThreads, 0, stream>>>((float *)x, n, p, w, keep, center);
  else
    kept_center<double><<<blocks, kLinearThreads, 0, stream>>>((double *)x, n, p, w, keep, center);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_pair_shift(const double *x, int64_t n, int64_t p, double *shift,
                                           unsigned *inf, cudaStream_t stream) {
  if (n < 0 || p < 0 || p > INT32_MAX) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  pair_shift<<<(unsigned)p, kLinearThreads, 0, stream>>>(x, n, shift, inf);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_pair_fill(int mode, const double *x, int64_t n, int64_t p,
                                          const double *shift, const double *w, const double *aw,
                                          double *dst, cudaStream_t stream) {
  if (mode < 0 || mode > 5 || n < 0 || p < 0 || (mode == 2 && !aw)) return cudaErrorInvalidValue;
  if (n == 0 || p == 0) return cudaSuccess;
  pair_fill<<<linear_blocks(n * p), kLinearThreads, 0, stream>>>(mode, x, n, p, shift, w, aw, dst);
  return cudaGetLastError();
}
