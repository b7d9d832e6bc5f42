/* The CUDA backend's kernels of the weighted and missing-value co-moments
 * (moments_kernels.cu), driven by src/backend/cuda/moments_cuda.c;
 * kernels.h's conventions (dtype codes 1 float32, 2 float64; asynchronous on
 * `stream`; device pointers). Data are dense column-major n x p (i + j n)
 * in the compute type; w (n doubles) NULL means 1, keep (n bytes) NULL
 * means every row. */
#ifndef GSTAT_BACKEND_CUDA_MOMENTS_KERNELS_H
#define GSTAT_BACKEND_CUDA_MOMENTS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* keep[i] = row i has no NaN; *inf_at = min(*inf_at, i p + j) over the
 * infinite x_ij (the caller sets it to UINT64_MAX first). */
cudaError_t gstat_cu_nan_rows(int dtype, const void *x, int64_t n, int64_t p, unsigned char *keep,
                              unsigned long long *inf_at, cudaStream_t stream);

/* mean[j] = sum w_i x_ij / sum w_i over the kept rows, corrected by a
 * second pass; a constant column's value exactly; about_zero: 0, or NaN
 * for a column with a NaN. One block per column. */
cudaError_t gstat_cu_kept_means(int dtype, const void *x, int64_t n, int64_t p, const double *w,
                                const unsigned char *keep, int about_zero, double *mean,
                                cudaStream_t stream);

/* x_ij = (x_ij - center[j]) sqrt(w_i) on the kept rows (rounded to the
 * compute type after each step, as the CPU does), 0 on the others; center
 * NULL: 0. */
cudaError_t gstat_cu_kept_center(int dtype, void *x, int64_t n, int64_t p, const double *w,
                                 const unsigned char *keep, const double *center,
                                 cudaStream_t stream);

/* Pairwise: shift[j] = the mean of column j's present (not NaN) entries,
 * its value when they are all equal, 0 when there are none; *inf |= 1 when
 * the column has an infinite entry. One block per column; float64 data. */
cudaError_t gstat_cu_pair_shift(const double *x, int64_t n, int64_t p, double *shift, unsigned *inf,
                                cudaStream_t stream);

/* The masked operands of the pairwise GEMMs, float64, element by element
 * (m: x_ij present): mode 0 dst = m; 1 dst = m w_i; 2 dst = m aw_i; 3 dst =
 * m ? x_ij - shift[j] : 0 (dst may be x); 4 dst = x_ij^2; 5 dst = w_i x_ij. */
cudaError_t gstat_cu_pair_fill(int mode, const double *x, int64_t n, int64_t p, const double *shift,
                               const double *w, const double *aw, double *dst, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_MOMENTS_KERNELS_H */
