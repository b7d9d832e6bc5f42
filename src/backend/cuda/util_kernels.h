/* Small device kernels of the CUDA backend: Cholesky and solve paths, info checks. */
#ifndef GSTAT_BACKEND_CUDA_UTIL_KERNELS_H
#define GSTAT_BACKEND_CUDA_UTIL_KERNELS_H

#include <cuda_runtime.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* After a batched factorization of the lower triangles of a dense
 * column-major batch (dtype 1/2) in src: element b of dst becomes all NaN
 * when info[b] != 0, else src's lower triangle (src == dst: in place) with
 * zeros above it; upper_zeroed (in place only): those zeros are there
 * already (gstat_cu_copy_lower put the input in), so only failed elements
 * are written. guard (NULL: none): a deferred finiteness scan's first index;
 * unless it is ULLONG_MAX (every input finite) nothing is written. any
 * (NULL: none) becomes 1 when some info[b] != 0 (the caller zeroes it
 * first). */
cudaError_t gstat_cu_finish_cholesky_to(int dtype, const void *src, void *dst, int64_t n,
                                        int64_t batch, const int *info,
                                        const unsigned long long *guard, unsigned *any,
                                        bool upper_zeroed, cudaStream_t stream);

/* dst = the lower triangles of src (dense column-major, dtype 1/2) with
 * zeros above them: the input of a factorization that reads only the lower
 * triangle, in one pass that reads half of what a whole copy reads. */
cudaError_t gstat_cu_copy_lower(int dtype, const void *src, void *dst, int64_t n, int64_t batch,
                                cudaStream_t stream);

/* info[b] = 1-based index of the first zero on the diagonal of element b, 0
 * if none; *any (NULL: none) becomes 1 when some element has one (the
 * caller zeroes it first). */
cudaError_t gstat_cu_diag_info(int dtype, const void *a, int64_t n, int64_t batch, int *info,
                               unsigned *any, cudaStream_t stream);

/* dst = src (bytes a multiple of 4), unless g0 or g1 (each NULL: none), a
 * deferred finiteness scan's first index, is not ULLONG_MAX. */
cudaError_t gstat_cu_copy_guarded(void *dst, const void *src, size_t bytes,
                                  const unsigned long long *g0, const unsigned long long *g1,
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
