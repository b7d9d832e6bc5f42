#ifndef GSTAT_BACKEND_CPU_EIGH_SMALL_H
#define GSTAT_BACKEND_CPU_EIGH_SMALL_H

/* Full symmetric eigendecomposition of one small matrix, meant to be called concurrently over
 * batches, where LAPACK's per-call overhead dominates (faster than LAPACK's syevd up to n ~ 256).
 * Method: Householder tridiagonalization, explicit Q, implicit QL/QR (LAPACK's steqr) with the
 * rotations applied to Q as they are made, ascending sort. */

#include <stddef.h>
#include <stdint.h>

/* Bytes of scratch that gstat_i_eigh_small_{f32,f64} need for order n. */
size_t gstat_i_eigh_small_workspace(int64_t n, int want_vectors, size_t elem_size);

/* a: column-major n x n, leading dimension lda >= n; only the lower triangle (i >= j) is read.
 * On return w[0..n-1] holds the eigenvalues in ascending order; if want_vectors, column j of a
 * holds the unit eigenvector for w[j], otherwise a's content is unspecified.
 * work: at least gstat_i_eigh_small_workspace(n, want_vectors, sizeof(T)) bytes, 64-byte aligned.
 * Returns 0, or k > 0 when the iteration failed to converge (k = number of unconverged
 * off-diagonals, as LAPACK's info); for n >= 2 a NaN or Inf in the lower triangle gives w (and
 * the vectors) all NaN and k = n - 1. n <= 1 needs no work. No allocation, no global state,
 * reentrant. */
int gstat_i_eigh_small_f32(int64_t n, float *a, int64_t lda, float *w, int want_vectors,
                           void *work);
int gstat_i_eigh_small_f64(int64_t n, double *a, int64_t lda, double *w, int want_vectors,
                           void *work);

/* The first half of the above, for solvers of a few eigenpairs (eigh_lowest.c): a's lower
 * triangle (n >= 2), scaled by 2^se into max|.| in [1,2), reduced to the tridiagonal (d, e)
 * (d[0..n-1], e[0..n-2]) by Householder reflectors kept in work (at least
 * gstat_i_eigh_small_workspace(n, 1, sizeof(T)) bytes, 64-byte aligned; left for the back
 * transform). The eigenvalues of (d, e) are 2^se times a's. Returns 0, or -1 (nothing done)
 * for a NaN or Inf in a's lower triangle. */
int gstat_i_tridiag_small_f32(int64_t n, const float *a, int64_t lda, float *d, float *e, int *se,
                              void *work);
int gstat_i_tridiag_small_f64(int64_t n, const double *a, int64_t lda, double *d, double *e,
                              int *se, void *work);

/* Z <- Q Z for the m columns of Z (n x m, ld ldz): eigenvectors of (d, e) into a's, with the
 * reflectors that gstat_i_tridiag_small_* left in work. */
void gstat_i_tridiag_small_apply_q_f32(int64_t n, const void *work, int64_t m, float *Z,
                                       int64_t ldz);
void gstat_i_tridiag_small_apply_q_f64(int64_t n, const void *work, int64_t m, double *Z,
                                       int64_t ldz);

#endif
