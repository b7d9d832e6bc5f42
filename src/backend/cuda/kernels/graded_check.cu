/* Whether a batch is graded (gstat_cu_graded_check in kernels.h). */
#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kGradedThreads = 256;

/* grid (batch), block kGradedThreads: *flag = 1 when, in some matrix, the
 * largest magnitudes of its nonzero rows (the stored triangle read both
 * ways) span more than `range`. */
template <typename T>
__global__ void __launch_bounds__(kGradedThreads)
    row_range(const T *a, int n, bool upper, double range, int *flag) {
  __shared__ double lo_s[kGradedThreads], hi_s[kGradedThreads];
  const T *m = a + (size_t)blockIdx.x * n * n;
  double lo = INFINITY, hi = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double top = 0;
    for (int j = 0; j < n; j++) {
      const bool here = upper ? j >= i : j <= i; /* A(i, j) stored at (i, j), else at (j, i) */
      top = fmax(top, fabs((double)(here ? m[i + (size_t)j * n] : m[j + (size_t)i * n])));
    }
    if (top > 0) lo = fmin(lo, top);
    hi = fmax(hi, top);
  }
  lo_s[threadIdx.x] = lo;
  hi_s[threadIdx.x] = hi;
  __syncthreads();
  for (int s = kGradedThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      lo_s[threadIdx.x] = fmin(lo_s[threadIdx.x], lo_s[threadIdx.x + s]);
      hi_s[threadIdx.x] = fmax(hi_s[threadIdx.x], hi_s[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && hi_s[0] > range * lo_s[0]) *flag = 1; /* every writer writes 1 */
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_graded_check(int dtype, const void *a, int64_t n, int64_t batch,
                                             int upper, double range, int *flag,
                                             cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || batch < 1 || batch > INT32_MAX)
    return cudaErrorInvalidValue;
  cudaError_t err = cudaMemsetAsync(flag, 0, sizeof(int), stream);
  if (err != cudaSuccess) return err;
  if (dtype == kF64)
    row_range<double><<<(unsigned)batch, kGradedThreads, 0, stream>>>(
        static_cast<const double *>(a), (int)n, upper != 0, range, flag);
  else
    row_range<float><<<(unsigned)batch, kGradedThreads, 0, stream>>>(
        static_cast<const float *>(a), (int)n, upper != 0, range, flag);
  return cudaGetLastError();
}
