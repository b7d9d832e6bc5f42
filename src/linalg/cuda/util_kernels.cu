// Small device kernels of the CUDA backend's Cholesky and solve paths.
#include "linalg/cuda/util_kernels.h"

namespace {

template <typename T>
__global__ void zero_upper(T *a, int64_t n, int64_t total) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t within = k % (n * n), i = within % n, j = within / n;
    if (i < j) a[k] = T(0);
  }
}

template <typename T>
__global__ void diag_info(const T *a, int64_t n, int64_t batch, int *info) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch; b += (int64_t)gridDim.x * blockDim.x) {
    int first = 0;
    for (int64_t i = n - 1; i >= 0; i--)
      if (a[b * n * n + i * (n + 1)] == T(0)) first = (int)(i + 1);
    info[b] = first;
  }
}

__global__ void fill_ptrs(void **ptrs, char *base, size_t stride, int64_t batch) {
  for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch; b += (int64_t)gridDim.x * blockDim.x)
    ptrs[b] = base + (size_t)b * stride;
}

unsigned blocks_for(int64_t work) {
  int64_t b = (work + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

}  // namespace

extern "C" cudaError_t gstat_cu_zero_upper(int dtype, void *a, int64_t n, int64_t batch, cudaStream_t stream) {
  int64_t total = n * n * batch;
  if (total == 0) return cudaSuccess;
  if (dtype == 2) zero_upper<<<blocks_for(total), 256, 0, stream>>>(static_cast<double *>(a), n, total);
  else zero_upper<<<blocks_for(total), 256, 0, stream>>>(static_cast<float *>(a), n, total);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch, int *info,
                                          cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  if (dtype == 2) diag_info<<<blocks_for(batch), 256, 0, stream>>>(static_cast<const double *>(a), n, batch, info);
  else diag_info<<<blocks_for(batch), 256, 0, stream>>>(static_cast<const float *>(a), n, batch, info);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_fill_ptrs(void **ptrs, void *base, size_t stride_bytes, int64_t batch,
                                          cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  fill_ptrs<<<blocks_for(batch), 256, 0, stream>>>(ptrs, static_cast<char *>(base), stride_bytes, batch);
  return cudaGetLastError();
}
