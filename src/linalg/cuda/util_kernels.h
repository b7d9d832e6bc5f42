/* Small device kernels of the CUDA backend's Cholesky and solve paths. */
#ifndef GSTAT_LINALG_CUDA_UTIL_KERNELS_H
#define GSTAT_LINALG_CUDA_UTIL_KERNELS_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Zero the strict upper triangle of a dense column-major batch (dtype 1/2). */
cudaError_t gstat_cu_zero_upper(int dtype, void *a, int64_t n, int64_t batch, cudaStream_t stream);

/* info[b] = 1-based index of the first zero on the diagonal of element b, 0 if none. */
cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch, int *info,
                               cudaStream_t stream);

/* ptrs[b] = base + b * stride_bytes (pointer arrays of the *Batched routines). */
cudaError_t gstat_cu_fill_ptrs(void **ptrs, void *base, size_t stride_bytes, int64_t batch,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
