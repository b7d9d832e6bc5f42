/* The CUDA backend's kernels of the rows primitive (rows_kernels.cu), driven
 * by src/backend/cuda/rows_cuda.c; kernels.h's conventions (dtype codes 1
 * float32, 2 float64; asynchronous on `stream`; device pointers). Data are
 * dense n x p in the compute type, row-major (i * p + j) or column-major
 * (i + j * n). */
#ifndef GSTAT_BACKEND_CUDA_ROWS_KERNELS_H
#define GSTAT_BACKEND_CUDA_ROWS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* u = (x - center[j]) * inv[j] in x's own order (u may be x; center, inv
 * NULL: 0 and 1). */
cudaError_t gstat_cu_rows_center(int dtype, const void *x, void *u, int64_t n, int64_t p,
                                 int row_major, const double *center, const double *inv,
                                 cudaStream_t stream);

/* d[i] = sum_j a'_ij b_ij in double, with a' = (a - center[j]) * inv[j]
 * (center, inv NULL: a itself) and b = a' when b is NULL; sums[0] +=
 * sum_i d[i], sums[1] += sum_i d[i]^2 (d may be NULL). */
cudaError_t gstat_cu_rows_reduce(int dtype, const void *a, const void *b, int64_t n, int64_t p,
                                 int row_major, const double *center, const double *inv, double *d,
                                 double *sums, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_ROWS_KERNELS_H */
