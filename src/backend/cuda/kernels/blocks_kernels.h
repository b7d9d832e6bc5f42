/* The sparse eigensolver's block kernels (blocks_kernels.cu), driven by
 * src/backend/cuda/sparse_cuda.c: column-major float64 blocks of n rows
 * with leading dimensions, asynchronous on `stream`. */
#ifndef GSTAT_BACKEND_CUDA_BLOCKS_KERNELS_H
#define GSTAT_BACKEND_CUDA_BLOCKS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Columns per lincomb launch (its coefficients travel as kernel arguments). */
#define GSTAT_CU_LINCOMB_COLS 96

/* Z[:, c] = g[c] Z[:, c] + a[c] X[:, c] + b[c] Y[:, c] for c < m <=
 * GSTAT_CU_LINCOMB_COLS (host coefficients, copied into the launch); X or Y
 * NULL drops the term, g NULL does not read Z. */
cudaError_t gstat_cu_lincomb(int64_t n, int64_t m, double *Z, int64_t ldz, const double *X,
                             int64_t ldx, const double *Y, int64_t ldy, const double *g,
                             const double *a, const double *b, cudaStream_t stream);

/* out[c] (device) = X[:, c] . Y[:, c], one thread block per column summing
 * in an order fixed by n. */
cudaError_t gstat_cu_dots(int64_t n, int64_t m, const double *X, int64_t ldx, const double *Y,
                          int64_t ldy, double *out, cudaStream_t stream);

/* Y[:, c] = p .* X[:, c] (p device, n). */
cudaError_t gstat_cu_diag_times(int64_t n, int64_t m, const double *p, const double *X, int64_t ldx,
                                double *Y, int64_t ldy, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_BLOCKS_KERNELS_H */
