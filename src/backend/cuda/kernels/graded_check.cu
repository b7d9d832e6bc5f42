/* Whether a batch is graded (gstat_cu_graded_check in kernels.h). */
#include "common.cuh"

namespace gstat_cu {
namespace {

/* A block takes kGradedTile rows of one matrix (a warp of lanes, one row
 * each): many blocks per matrix, so one large matrix is read by the whole
 * GPU, not by one block (bench/README.md, "The forty-fifth session's GPU
 * calls"). */
constexpr int kGradedTile = 32, kGradedThreads = 256, kGradedWarps = kGradedThreads / 32;

/* Non-negative doubles order as their bits: atomicMin / atomicMax on them. */
__device__ __forceinline__ unsigned long long bits(double x) {
  return (unsigned long long)__double_as_longlong(x);
}

/* grid (tiles, batch): the largest magnitude of each row of the tile (row
 * i of the symmetric matrix: its stored part along the row, m[i + j n],
 * and along column i, m[j + i n]; the lower triangle holds j <= i of the
 * first and j >= i of the second, the upper the reverse), then the tile's
 * smallest nonzero and largest of them into lohi[2 b], lohi[2 b + 1]. */
template <typename T>
__global__ void __launch_bounds__(kGradedThreads)
    row_maxima(const T *a, int n, bool upper, unsigned long long *lohi) {
  __shared__ double top_s[kGradedWarps][kGradedTile];
  const T *m = a + (size_t)blockIdx.y * n * n;
  const int r0 = blockIdx.x * kGradedTile, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int i = r0 + lane;
  double top = 0;
  /* along the rows: the tile's 32 rows of column j are contiguous */
  for (int j = warp; j < n && i < n; j += kGradedWarps)
    if (upper ? j >= i : j <= i) top = fmax(top, fabs((double)m[i + (size_t)j * n]));
  top_s[warp][lane] = top;
  __syncthreads();
  /* down the columns: column c's stored part, read by a warp */
  for (int t = warp; t < kGradedTile && r0 + t < n; t += kGradedWarps) {
    const int c = r0 + t;
    double col = 0;
    for (int j = upper ? lane : c + lane; upper ? j <= c : j < n; j += 32)
      col = fmax(col, fabs((double)m[j + (size_t)c * n]));
    for (int o = 16; o > 0; o >>= 1) col = fmax(col, __shfl_xor_sync(0xffffffffu, col, o));
    if (lane == 0) top_s[warp][t] = fmax(top_s[warp][t], col);
  }
  __syncthreads();
  if (warp != 0) return;
  double row = 0;
  for (int w = 0; w < kGradedWarps; w++) row = fmax(row, top_s[w][lane]);
  double lo = i < n && row > 0 ? row : INFINITY, hi = i < n ? row : 0;
  for (int o = 16; o > 0; o >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, o));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, o));
  }
  if (lane == 0) {
    atomicMin(lohi + 2 * blockIdx.y, bits(lo));
    atomicMax(lohi + 2 * blockIdx.y + 1, bits(hi));
  }
}

/* lohi's starting values: +inf and 0. */
__global__ void start_lohi(unsigned long long *lohi, int batch) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  lohi[2 * b] = bits(INFINITY);
  lohi[2 * b + 1] = bits(0.0);
}

/* *flag = 1 when some matrix's rows span more than `range` (every writer
 * writes 1; a zero matrix's lo stays +inf). */
__global__ void span_flag(const unsigned long long *lohi, int batch, double range, int *flag) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const double lo = __longlong_as_double((long long)lohi[2 * b]),
               hi = __longlong_as_double((long long)lohi[2 * b + 1]);
  if (hi > range * lo) *flag = 1;
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_graded_check(int dtype, const void *a, int64_t n, int64_t batch,
                                             int upper, double range, void *scratch, int *flag,
                                             cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || n > INT32_MAX || batch < 1 || batch > INT32_MAX)
    return cudaErrorInvalidValue;
  unsigned long long *lohi = static_cast<unsigned long long *>(scratch);
  const unsigned per = (unsigned)((batch + 255) / 256);
  cudaError_t err = cudaMemsetAsync(flag, 0, sizeof(int), stream);
  if (err != cudaSuccess) return err;
  start_lohi<<<per, 256, 0, stream>>>(lohi, (int)batch);
  const int64_t slice = 65535; /* matrices a launch (the grid's y) */
  for (int64_t b0 = 0; b0 < batch; b0 += slice) {
    const dim3 grid((unsigned)((n + kGradedTile - 1) / kGradedTile),
                    (unsigned)(batch - b0 < slice ? batch - b0 : slice));
    if (dtype == kF64)
      row_maxima<double><<<grid, kGradedThreads, 0, stream>>>(
          static_cast<const double *>(a) + b0 * n * n, (int)n, upper != 0, lohi + 2 * b0);
    else
      row_maxima<float><<<grid, kGradedThreads, 0, stream>>>(
          static_cast<const float *>(a) + b0 * n * n, (int)n, upper != 0, lohi + 2 * b0);
  }
  span_flag<<<per, 256, 0, stream>>>(lohi, (int)batch, range, flag);
  return cudaGetLastError();
}
