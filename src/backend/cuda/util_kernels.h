/* Small device kernels of the CUDA backend: Cholesky and solve paths, info checks. */
#ifndef GSTAT_BACKEND_CUDA_UTIL_KERNELS_H
#define GSTAT_BACKEND_CUDA_UTIL_KERNELS_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* After a batched factorization of the lower triangles of a dense column-major
 * batch (dtype 1/2): element b becomes all NaN when info[b] != 0, else its
 * strict upper triangle is zeroed. One pass over the upper triangles. */
cudaError_t gstat_cu_finish_cholesky(int dtype, void *a, int64_t n, int64_t batch, const int *info,
                                     cudaStream_t stream);

/* info[b] = 1-based index of the first zero on the diagonal of element b, 0 if none. */
cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch, int *info,
                               cudaStream_t stream);

/* ptrs[b] = base + b * stride_bytes (pointer arrays of the *Batched routines). */
cudaError_t gstat_cu_fill_ptrs(void **ptrs, void *base, size_t stride_bytes, int64_t batch,
                               cudaStream_t stream);

/* *any = 1 if some of the count ints at v are nonzero; *any is left as it
 * is otherwise (the caller zeroes it first). */
cudaError_t gstat_cu_any_nonzero(const int *v, int64_t count, unsigned *any, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
