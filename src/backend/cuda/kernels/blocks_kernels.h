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

/* Parts of a column's dot product summed separately (dots' scratch). */
#define GSTAT_CU_DOTS_PARTS 256

/* out[c] (device) = X[:, c] . Y[:, c] for c < m <= 65535, in an order
 * fixed by n: parts of the rows summed by many blocks into scratch (device,
 * m * GSTAT_CU_DOTS_PARTS doubles), then the parts. */
cudaError_t gstat_cu_dots(int64_t n, int64_t m, const double *X, int64_t ldx, const double *Y,
                          int64_t ldy, double *out, double *scratch, cudaStream_t stream);

/* Y[:, c] = p .* X[:, c] (p device, n). */
cudaError_t gstat_cu_diag_times(int64_t n, int64_t m, const double *p, const double *X, int64_t ldx,
                                double *Y, int64_t ldy, cudaStream_t stream);

/* Y = diag(p) X - A X for row-major n x m blocks X, Y (ld m), A an n x n
 * CSR matrix (offsets from 0, indices; int32 when narrow, else int64; val),
 * p device (n). Each entry of Y sums in a fixed order. */
cudaError_t gstat_cu_csr_rows(int64_t n, int64_t m, int narrow, const void *off, const void *idx,
                              const double *val, const double *p, const double *X, double *Y,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_BLOCKS_KERNELS_H */
