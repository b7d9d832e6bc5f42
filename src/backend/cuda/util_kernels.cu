// Small device kernels of the CUDA backend: Cholesky and solve paths, info checks.
#include <climits>
#include <cmath>

#include "backend/cuda/util_kernels.h"

namespace {

/* Block (x, y) handles column x of elements y, y + gridDim.y, ...: threads
 * walk the rows, so every store is coalesced and no index is divided. A
 * failed element (info != 0) becomes NaN; any other (every element when
 * info is NULL) gets its strict upper triangle zeroed, unless upper_zeroed
 * says it is zero already; in place (src == dst) the lower one is never
 * read, otherwise it is copied from src. guard (NULL: none) is a deferred
 * finiteness scan's verdict: anything but ULLONG_MAX and nothing is written.
 * any (NULL: none) becomes 1 when an element failed: the pass reads every
 * info anyway, so no reduction over them need follow. */
template <typename T>
__global__ void finish_cholesky(const T *src, T *dst, int64_t n, int64_t batch, const int *info,
                                const unsigned long long *guard, unsigned *any, bool upper_zeroed) {
  if (guard && *guard != ULLONG_MAX) return;
  const int64_t j = blockIdx.x;
  const bool copy = src != dst;
  const int64_t rows = copy ? n : upper_zeroed ? 0 : j;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T *col = dst + (b * n + j) * n;
    const T *from = src + (b * n + j) * n;
    if (info && info[b] != 0) {
      if (any && j == 0 && threadIdx.x == 0) *any = 1;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) col[i] = T(NAN);
    } else {
      for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) col[i] = i < j ? T(0) : from[i];
    }
  }
}

/* A block per element: its threads stride over the diagonal and the block
 * keeps the smallest index of a zero (a thread per element walked all n
 * entries in turn: milliseconds for one matrix of order 32768). any (NULL:
 * none) becomes 1 for a singular element: no reduction over info follows. */
template <typename T>
__global__ void diag_info(const T *a, int64_t n, int64_t batch, int *info, unsigned *any) {
  __shared__ int first;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    if (threadIdx.x == 0) first = INT_MAX;
    __syncthreads();
    int mine = INT_MAX;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      if (a[b * n * n + i * (n + 1)] == T(0)) {
        mine = (int)(i + 1);
        break; /* i ascends per thread: its first zero is its smallest */
      }
    if (mine != INT_MAX) atomicMin(&first, mine);
    __syncthreads();
    if (threadIdx.x == 0) {
      info[b] = first == INT_MAX ? 0 : first;
      if (any && first != INT_MAX) *any = 1;
    }
    __syncthreads(); /* first is read before the next element resets it */
  }
}

__global__ void fill_ptrs(void **ptrs, char *base, size_t stride, int64_t batch) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch;
       b += (int64_t)gridDim.x * blockDim.x)
    ptrs[b] = base + (size_t)b * stride;
}

/* *any = 1 if some v[i] != 0 (left alone otherwise): one store per block
 * at most, the flag being set only when an element failed. */
__global__ void any_nonzero(const int *v, int64_t count, unsigned *any) {
  bool seen = false;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x)
    seen |= v[i] != 0;
  if (__syncthreads_or(seen) && threadIdx.x == 0) *any = 1;
}

/* dst = src, 4-byte words, unless a guard says an input was not finite. */
__global__ void copy_guarded(unsigned *dst, const unsigned *src, size_t words,
                             const unsigned long long *g0, const unsigned long long *g1) {
  if ((g0 && *g0 != ULLONG_MAX) || (g1 && *g1 != ULLONG_MAX)) return;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

unsigned blocks_for(int64_t work) {
  int64_t b = (work + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

}  // namespace

extern "C" cudaError_t gstat_cu_finish_cholesky_to(int dtype, const void *src, void *dst, int64_t n,
                                                   int64_t batch, const int *info,
                                                   const unsigned long long *guard, unsigned *any,
                                                   bool upper_zeroed, cudaStream_t stream) {
  if (n == 0 || batch == 0) return cudaSuccess;
  if (n > INT32_MAX) return cudaErrorInvalidValue;
  dim3 grid((unsigned)n, (unsigned)(batch < 65535 ? batch : 65535));
  unsigned threads = n >= 256 ? 256 : n >= 128 ? 128 : n >= 64 ? 64 : 32;
  if (dtype == 2)
    finish_cholesky<<<grid, threads, 0, stream>>>(static_cast<const double *>(src),
                                                  static_cast<double *>(dst), n, batch, info, guard,
                                                  any, upper_zeroed);
  else
    finish_cholesky<<<grid, threads, 0, stream>>>(static_cast<const float *>(src),
                                                  static_cast<float *>(dst), n, batch, info, guard,
                                                  any, upper_zeroed);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_copy_lower(int dtype, const void *src, void *dst, int64_t n,
                                           int64_t batch, cudaStream_t stream) {
  return gstat_cu_finish_cholesky_to(dtype, src, dst, n, batch, NULL, NULL, NULL, false, stream);
}

extern "C" cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch,
                                          int *info, unsigned *any, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  unsigned blocks = (unsigned)(batch < 65535 ? batch : 65535);
  unsigned threads = n >= 256 ? 256 : n >= 128 ? 128 : n >= 64 ? 64 : 32;
  if (dtype == 2)
    diag_info<<<blocks, threads, 0, stream>>>(static_cast<const double *>(a), n, batch, info, any);
  else
    diag_info<<<blocks, threads, 0, stream>>>(static_cast<const float *>(a), n, batch, info, any);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_copy_guarded(void *dst, const void *src, size_t bytes,
                                             const unsigned long long *g0,
                                             const unsigned long long *g1, cudaStream_t stream) {
  if (bytes % 4 != 0) return cudaErrorInvalidValue;
  if (bytes == 0) return cudaSuccess;
  copy_guarded<<<blocks_for((int64_t)(bytes / 4)), 256, 0, stream>>>(
      static_cast<unsigned *>(dst), static_cast<const unsigned *>(src), bytes / 4, g0, g1);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_fill_ptrs(void **ptrs, void *base, size_t stride_bytes,
                                          int64_t batch, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  fill_ptrs<<<blocks_for(batch), 256, 0, stream>>>(ptrs, static_cast<char *>(base), stride_bytes,
                                                   batch);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_any_nonzero(const int *v, int64_t count, unsigned *any,
                                            cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  /* a few values per thread: 100000 elements' info and flags are 800 KB */
  int64_t blocks = (count + 256 * 8 - 1) / (256 * 8);
  any_nonzero<<<(unsigned)(blocks > 1024 ? 1024 : blocks), 256, 0, stream>>>(v, count, any);
  return cudaGetLastError();
}
