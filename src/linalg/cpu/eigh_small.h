#ifndef GSTAT_LINALG_CPU_EIGH_SMALL_H
#define GSTAT_LINALG_CPU_EIGH_SMALL_H

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

#endif
