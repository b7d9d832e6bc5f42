/*
 * The small kernels of stage 1 of the two-stage eigensolver (two_stage.c):
 * a panel's reflectors from geqrf's compact form as an explicit matrix, the
 * triangular factor T of a wide block reflector I - V T V^T, and the
 * identity that Q1 is formed from. Float64,
 * asynchronous on `st`, returning cudaGetLastError() after the launch.
 */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_BAND_REFLECTORS_H
#define GSTAT_BACKEND_CUDA_KERNELS_BAND_REFLECTORS_H

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* v (m x r, ld ldv) = the unit lower trapezoid of p (ld ld): geqrf's
 * reflectors below the diagonal, ones on it, zeros above. */
cudaError_t gstat_cu_explicit_v(const double *p, int64_t ld, double *v, int64_t m, int64_t r,
                                int64_t ldv, cudaStream_t st);

/* The upper triangular T (r x r, ld r, r <= 1024) of the forward
 * block reflector of r reflectors, from their Gram matrix g = V^T V (r x
 * r, ld r; its strict upper triangle read) and tau (as LAPACK's dlarft).
 * A thread per row: for blocks wider than gstat_cu_larft's warp takes. */
cudaError_t gstat_cu_larft_rows(const double *g, const double *tau, double *t, int r,
                                cudaStream_t st);

/* Ones on the diagonal of m (n x n, ld ld); nothing else is written. */
cudaError_t gstat_cu_unit_diagonal(double *m, int64_t n, int64_t ld, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_KERNELS_BAND_REFLECTORS_H */
