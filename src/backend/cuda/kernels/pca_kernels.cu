/* Data-matrix kernels for PCA on the device: column sums accumulated in
 * double, centering, and the scaling of a co-moment matrix into a
 * correlation-type matrix. Data are dense, row-major (rs = p, cs = 1) or
 * column-major (rs = 1, cs = n), in the compute type. */
#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kColTile = 32; /* columns per block (row-major sums) */
constexpr int kRowLanes = 8; /* rows read at once per block (row-major sums) */
/* Column-sum grids aim at this many blocks (a few waves of an H100/H200: a
 * fixed 4096 rows a block left small inputs bandwidth-starved; bench/README.md,
 * "Where the small device statistics rows spend their time"), with at least
 * kMinRowsPerBlock rows a block to keep the atomics few. */
constexpr int64_t kSumBlocks = 2048;
constexpr int64_t kMinRowsPerBlock = 256;
constexpr int64_t kMaxRowBlocks = 65535;

/* The value a column sum adds for x, less the shift: the stored centred
 * value when the pass writes y (its sum is then that of y exactly). */
template <typename T>
__device__ __forceinline__ double shifted(T x, double c, T *y) {
  if (!y) return (double)x - c;
  const T v = (T)((double)x - c);
  *y = v;
  return (double)v;
}

/* Row-major: a warp reads 32 adjacent columns of one row (coalesced); each
 * block covers `rows` rows, its partial sums go to `sums` by atomics; with
 * y, the centred values are written there on the way. */
template <typename T>
__global__ void col_sums_rows(const T *__restrict__ x, int64_t n, int64_t p, int64_t rows,
                              const double *__restrict__ shift, double *__restrict__ sums,
                              T *__restrict__ y) {
  __shared__ double part[kRowLanes][kColTile];
  const int64_t j = (int64_t)blockIdx.x * kColTile + threadIdx.x;
  const int64_t i0 = (int64_t)blockIdx.y * rows;
  const int64_t i1 = i0 + rows < n ? i0 + rows : n;
  double s = 0;
  if (j < p) {
    const double c = shift ? shift[j] : 0.0;
    for (int64_t i = i0 + threadIdx.y; i < i1; i += kRowLanes)
      s += shifted(x[i * p + j], c, y ? y + i * p + j : nullptr);
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < p) {
    for (int r = 1; r < kRowLanes; r++) s += part[r][threadIdx.x];
    atomicAdd(sums + j, s);
  }
}

/* Column-major: one block per (column, row range), threads along the rows. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    col_sums_cols(const T *__restrict__ x, int64_t n, int64_t rows,
                  const double *__restrict__ shift, double *__restrict__ sums, T *__restrict__ y) {
  __shared__ double part[kLinearThreads / 32];
  const int64_t j = blockIdx.x;
  const int64_t i0 = (int64_t)blockIdx.y * rows;
  const int64_t i1 = i0 + rows < n ? i0 + rows : n;
  const double c = shift ? shift[j] : 0.0;
  double s = 0;
  for (int64_t i = i0 + threadIdx.x; i < i1; i += kLinearThreads)
    s += shifted(x[i + j * n], c, y ? y + i + j * n : nullptr);
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(kFullMask, s, o);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kLinearThreads / 32; w++) s += part[w];
    atomicAdd(sums + j, s);
  }
}

/* S(i, j) -= sums[i] sums[j] / n on the lower triangle of the dense
 * column-major p x p S: the co-moment about the centred data's own mean. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    sub_outer_lower(T *__restrict__ S, int64_t p, const double *__restrict__ sums, double n) {
  const int64_t total = p * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e % p, j = e / p;
    if (i >= j) S[e] = (T)((double)S[e] - sums[i] * sums[j] / n);
  }
}

/* mean[j] = sums[j] / n, or mean[j] += sums[j] / n (the residuals' pass). */
__global__ void __launch_bounds__(kLinearThreads)
    mean_step(const double *__restrict__ sums, double *__restrict__ mean, int64_t p, double n,
              bool first) {
  const int64_t j = (int64_t)blockIdx.x * kLinearThreads + threadIdx.x;
  if (j < p) mean[j] = first ? sums[j] / n : mean[j] + sums[j] / n;
}

/* y = x - mean[column], elementwise in the input's own order. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    center(const T *__restrict__ x, T *__restrict__ y, int64_t n, int64_t p, bool row_major,
           const double *__restrict__ mean) {
  const int64_t total = n * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t j = row_major ? e % p : e / n;
    y[e] = (T)((double)x[e] - mean[j]);
  }
}

/* S(i, j) /= sd[i] * sd[j] over a dense column-major p x p matrix. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    scale_sym(T *__restrict__ S, int64_t p, const double *__restrict__ sd) {
  const int64_t total = p * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride)
    S[e] = (T)((double)S[e] / (sd[e % p] * sd[e / p]));
}

/* S(i, j) (ld lds) = sum over r of P[r * rows * cols + i + j * rows], in double. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    sum_partials(const T *__restrict__ P, int64_t R, int64_t rows, int64_t cols, T *__restrict__ S,
                 int64_t lds) {
  const int64_t total = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    double s = 0;
    for (int64_t r = 0; r < R; r++) s += (double)P[r * total + e];
    S[e % rows + (e / rows) * lds] = (T)s;
  }
}

/* acc[e] += S[e] in double. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    add_to_double(const T *__restrict__ S, int64_t count, double *__restrict__ acc) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < count; e += stride)
    acc[e] += (double)S[e];
}

/* The block's sum of s, by warp shuffles and one thread's walk over the
 * warps: a fixed order, the same result every call. Valid in thread 0. */
__device__ double block_sum(double s) {
  __shared__ double warps[kLinearThreads / 32];
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(kFullMask, s, o);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < kLinearThreads / 32; w++) s += warps[w];
  return s;
}

/* part[j] = sum over i > j of S(i, j)^2: a block per column. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    offdiag_col_sumsq(const T *__restrict__ S, int64_t p, double *__restrict__ part) {
  const int64_t j = blockIdx.x;
  double s = 0;
  for (int64_t i = j + 1 + threadIdx.x; i < p; i += kLinearThreads) {
    const double v = (double)S[i + j * p];
    s += v * v;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) part[j] = s;
}

/* *out = sum of the p values of part: one block. */
__global__ void __launch_bounds__(kLinearThreads)
    sum_values(const double *__restrict__ part, int64_t p, double *__restrict__ out) {
  double s = 0;
  for (int64_t j = threadIdx.x; j < p; j += kLinearThreads) s += part[j];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}

/* S = a S + c I from the lower triangle into both: the thread of a lower
 * entry writes it and its mirror, so no entry is read after it was written. */
template <typename T>
__global__ void __launch_bounds__(kLinearThreads)
    sym_affine(T *__restrict__ S, int64_t p, double a, double c) {
  const int64_t total = p * p, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t i = e % p, j = e / p;
    if (i < j) continue;
    const double v0 = a * (double)S[e];
    const T v = (T)(i == j ? v0 + c : v0);
    S[e] = v;
    S[j + i * p] = v;
  }
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_col_sums(int dtype, const void *x, int64_t n, int64_t p,
                                         int row_major, const double *shift, double *sums, void *y,
                                         cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0) return cudaErrorInvalidValue;
  if (n == 0 || p == 0) return cudaSuccess;
  if (!x || !sums || (!row_major && p > INT32_MAX)) return cudaErrorInvalidValue;
  const int64_t col_blocks = row_major ? (p + kColTile - 1) / kColTile : p;
  const int64_t want = (kSumBlocks + col_blocks - 1) / col_blocks;
  int64_t rows = (n + want - 1) / want;
  if (rows < kMinRowsPerBlock) rows = kMinRowsPerBlock;
  if (rows < (n + kMaxRowBlocks - 1) / kMaxRowBlocks)
    rows = (n + kMaxRowBlocks - 1) / kMaxRowBlocks;
  const dim3 grid((unsigned)col_blocks, (unsigned)((n + rows - 1) / rows));
  if (row_major) {
    const dim3 block(kColTile, kRowLanes);
    if (dtype == kF32)
      col_sums_rows<float>
          <<<grid, block, 0, stream>>>((const float *)x, n, p, rows, shift, sums, (float *)y);
    else
      col_sums_rows<double>
          <<<grid, block, 0, stream>>>((const double *)x, n, p, rows, shift, sums, (double *)y);
  } else if (dtype == kF32) {
    col_sums_cols<float>
        <<<grid, kLinearThreads, 0, stream>>>((const float *)x, n, rows, shift, sums, (float *)y);
  } else {
    col_sums_cols<double>
        <<<grid, kLinearThreads, 0, stream>>>((const double *)x, n, rows, shift, sums, (double *)y);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sub_outer_lower(int dtype, void *S, int64_t p, const double *sums,
                                                int64_t n, cudaStream_t stream) {
  if (!compute_dtype(dtype) || p < 0 || n <= 0) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  if (!S || !sums) return cudaErrorInvalidValue;
  const unsigned blocks = linear_blocks(p * p);
  if (dtype == kF32)
    sub_outer_lower<float><<<blocks, kLinearThreads, 0, stream>>>((float *)S, p, sums, (double)n);
  else
    sub_outer_lower<double><<<blocks, kLinearThreads, 0, stream>>>((double *)S, p, sums, (double)n);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_mean_step(const double *sums, double *mean, int64_t n, int64_t p,
                                          int first, cudaStream_t stream) {
  if (n <= 0 || p < 0 || p / kLinearThreads >= INT32_MAX) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  mean_step<<<(unsigned)((p + kLinearThreads - 1) / kLinearThreads), kLinearThreads, 0, stream>>>(
      sums, mean, p, (double)n, first != 0);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_center(int dtype, const void *x, void *y, int64_t n, int64_t p,
                                       int row_major, const double *mean, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || p < 0) return cudaErrorInvalidValue;
  if (n == 0 || p == 0) return cudaSuccess;
  if (!x || !y || !mean) return cudaErrorInvalidValue;
  unsigned blocks = linear_blocks(n * p);
  if (dtype == kF32)
    center<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)x, (float *)y, n, p,
                                                         row_major != 0, mean);
  else
    center<double><<<blocks, kLinearThreads, 0, stream>>>((const double *)x, (double *)y, n, p,
                                                          row_major != 0, mean);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_scale_sym(int dtype, void *S, int64_t p, const double *sd,
                                          cudaStream_t stream) {
  if (!compute_dtype(dtype) || p < 0) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  if (!S || !sd) return cudaErrorInvalidValue;
  unsigned blocks = linear_blocks(p * p);
  if (dtype == kF32)
    scale_sym<float><<<blocks, kLinearThreads, 0, stream>>>((float *)S, p, sd);
  else
    scale_sym<double><<<blocks, kLinearThreads, 0, stream>>>((double *)S, p, sd);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sum_partials(int dtype, const void *P, int64_t R, int64_t rows,
                                             int64_t cols, void *S, int64_t lds,
                                             cudaStream_t stream) {
  if (!compute_dtype(dtype) || R < 0 || rows < 0 || cols < 0 || lds < rows)
    return cudaErrorInvalidValue;
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (!P || !S) return cudaErrorInvalidValue;
  unsigned blocks = linear_blocks(rows * cols);
  if (dtype == kF32)
    sum_partials<float>
        <<<blocks, kLinearThreads, 0, stream>>>((const float *)P, R, rows, cols, (float *)S, lds);
  else
    sum_partials<double>
        <<<blocks, kLinearThreads, 0, stream>>>((const double *)P, R, rows, cols, (double *)S, lds);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_add_to_double(int dtype, const void *S, int64_t count, double *acc,
                                              cudaStream_t stream) {
  if (!compute_dtype(dtype) || count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  if (!S || !acc) return cudaErrorInvalidValue;
  unsigned blocks = linear_blocks(count);
  if (dtype == kF32)
    add_to_double<float><<<blocks, kLinearThreads, 0, stream>>>((const float *)S, count, acc);
  else
    add_to_double<double><<<blocks, kLinearThreads, 0, stream>>>((const double *)S, count, acc);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_offdiag_sumsq(int dtype, const void *S, int64_t p, double *part,
                                              double *out, cudaStream_t stream) {
  if (!compute_dtype(dtype) || p < 0 || p > INT32_MAX) return cudaErrorInvalidValue;
  if (!S || !part || !out) return cudaErrorInvalidValue;
  if (p > 0) {
    if (dtype == kF32)
      offdiag_col_sumsq<float>
          <<<(unsigned)p, kLinearThreads, 0, stream>>>((const float *)S, p, part);
    else
      offdiag_col_sumsq<double>
          <<<(unsigned)p, kLinearThreads, 0, stream>>>((const double *)S, p, part);
  }
  sum_values<<<1, kLinearThreads, 0, stream>>>(part, p, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sym_affine(int dtype, void *S, int64_t p, double a, double c,
                                           cudaStream_t stream) {
  if (!compute_dtype(dtype) || p < 0) return cudaErrorInvalidValue;
  if (p == 0) return cudaSuccess;
  if (!S) return cudaErrorInvalidValue;
  unsigned blocks = linear_blocks(p * p);
  if (dtype == kF32)
    sym_affine<float><<<blocks, kLinearThreads, 0, stream>>>((float *)S, p, a, c);
  else
    sym_affine<double><<<blocks, kLinearThreads, 0, stream>>>((double *)S, p, a, c);
  return cudaGetLastError();
}
