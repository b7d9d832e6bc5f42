/* Unblocked Cholesky for small matrices, where LAPACK's call overhead
 * dominates (measured crossover in backend_cpu.c). */
#ifndef GSTAT_BACKEND_CPU_CHOL_SMALL_H
#define GSTAT_BACKEND_CPU_CHOL_SMALL_H

#include <stdint.h>

/* a: n x n column-major (lda); the lower triangle is read and overwritten by
 * L with A = L L^T; the strict upper triangle is not touched. Returns 0, or
 * k > 0 when the leading minor of order k is not positive definite. */
int gstat_i_chol_small_f32(int64_t n, float *a, int64_t lda);
int gstat_i_chol_small_f64(int64_t n, double *a, int64_t lda);

#endif /* GSTAT_BACKEND_CPU_CHOL_SMALL_H */
