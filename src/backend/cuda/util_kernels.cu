// Small device kernels of the CUDA backend: Cholesky and solve paths, info checks.
#include <climits>
#include <cmath>

#include "backend/cuda/util_kernels.h"

namespace {

/* Block (x, y) handles column x of elements y, y + gridDim.y, ...: threads
 * walk the rows, so every store is coalesced and no index is divided. A
 * failed element (info != 0) becomes NaN, a factored one gets its strict
 * upper triangle zeroed; the lower one is never read. */
template <typename T>
__global__ void finish_cholesky(T *a, int64_t n, int64_t batch, const int *info) {
  const int64_t j = blockIdx.x;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T *col = a + (b * n + j) * n;
    if (info[b] != 0) {
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) col[i] = T(NAN);
    } else {
      for (int64_t i = threadIdx.x; i < j; i += blockDim.x) col[i] = T(0);
    }
  }
}

template <typename T>
__global__ void diag_info(const T *a, int64_t n, int64_t batch, int *info) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch;
       b += (int64_t)gridDim.x * blockDim.x) {
    int first = 0;
    for (int64_t i = n - 1; i >= 0; i--)
      if (a[b * n * n + i * (n + 1)] == T(0)) first = (int)(i + 1);
    info[b] = first;
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

unsigned blocks_for(int64_t work) {
  int64_t b = (work + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

}  // namespace

extern "C" cudaError_t gstat_cu_finish_cholesky(int dtype, void *a, int64_t n, int64_t batch,
                                                const int *info, cudaStream_t stream) {
  if (n == 0 || batch == 0) return cudaSuccess;
  if (n > INT32_MAX) return cudaErrorInvalidValue;
  dim3 grid((unsigned)n, (unsigned)(batch < 65535 ? batch : 65535));
  unsigned threads = n >= 256 ? 256 : n >= 128 ? 128 : n >= 64 ? 64 : 32;
  if (dtype == 2)
    finish_cholesky<<<grid, threads, 0, stream>>>(static_cast<double *>(a), n, batch, info);
  else
    finish_cholesky<<<grid, threads, 0, stream>>>(static_cast<float *>(a), n, batch, info);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch,
                                          int *info, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  if (dtype == 2)
    diag_info<<<blocks_for(batch), 256, 0, stream>>>(static_cast<const double *>(a), n, batch,
                                                     info);
  else
    diag_info<<<blocks_for(batch), 256, 0, stream>>>(static_cast<const float *>(a), n, batch, info);
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
