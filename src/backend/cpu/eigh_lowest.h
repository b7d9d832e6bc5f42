/* The m smallest eigenpairs of one small symmetric matrix (eigh_lowest_tmpl.h,
 * instantiated in cpu_ops.c). For batches of small matrices of which only a
 * few eigenvectors are used (the Laplacians of batch spectral clustering):
 * our Householder reduction (eigh_small.c), LAPACK's bisection (stebz) and
 * inverse iteration (stein, reorthogonalized within clusters), and our back
 * transform of the m vectors, in place of a full decomposition whose implicit
 * QL/QR sweep and n x n rotations dominate. From m > n / 2 on, the full small
 * eigh. */
#ifndef GSTAT_BACKEND_CPU_EIGH_LOWEST_H
#define GSTAT_BACKEND_CPU_EIGH_LOWEST_H

#include <stddef.h>
#include <stdint.h>

/* The largest order these take (as the small full eigh's). */
int64_t gstat_i_eigh_lowest_max_n(void);

/* Bytes of 64-byte aligned scratch for order n (<= the maximum), m pairs. */
size_t gstat_i_eigh_lowest_workspace(int64_t n, int64_t m, size_t elem_size);

/*
 * a: column-major n x n (1 <= n <= gstat_i_eigh_lowest_max_n()), ld lda >= n,
 * lower triangle read. On return w[0..m-1] holds the m (1 <= m <= n) smallest
 * eigenvalues ascending and columns 0..m-1 of a the unit eigenvectors, signs
 * as the full eigh's (largest-magnitude entry positive); the rest of a is
 * unspecified. work: gstat_i_eigh_lowest_workspace(n, m, sizeof(T)) bytes,
 * 64-byte aligned. Returns 0; or > 0 when bisection or inverse iteration
 * failed, or for a NaN or Inf in a (w and the m columns then NaN). No
 * allocation, reentrant.
 */
int gstat_i_eigh_lowest_f32(int64_t n, float *a, int64_t lda, int64_t m, float *w, void *work);
int gstat_i_eigh_lowest_f64(int64_t n, double *a, int64_t lda, int64_t m, double *w, void *work);

/*
 * Eigenpairs il..iu (1-based, ascending order) of the symmetric tridiagonal
 * (d[0..n-1], e[0..n-2]) by LAPACK's bisection and inverse iteration: values
 * ascending into w (room for n), unit vectors into the columns of Z (n x
 * (iu - il + 1), ld n). work: 5 n entries, iwork: 5 n + iu - il + 1 ints.
 * Returns 0, LAPACK's info, or n + 1 when bisection found another count.
 */
int gstat_i_tridiag_select_f32(int64_t n, const float *d, const float *e, int64_t il, int64_t iu,
                               float *w, float *Z, float *work, int *iwork);
int gstat_i_tridiag_select_f64(int64_t n, const double *d, const double *e, int64_t il, int64_t iu,
                               double *w, double *Z, double *work, int *iwork);

/* The eigenvector sign rule of every eigh (DESIGN.md: largest-magnitude entry
 * positive, the first on ties) on `cols` columns of length n, ld apart. */
void gstat_i_eig_signs_f32(float *v, int64_t n, int64_t cols, int64_t ld);
void gstat_i_eig_signs_f64(double *v, int64_t n, int64_t cols, int64_t ld);

#endif /* GSTAT_BACKEND_CPU_EIGH_LOWEST_H */
