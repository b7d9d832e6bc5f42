/* Symmetric eigendecomposition of one matrix through LAPACK(E) + OpenBLAS.
 *
 * Recipe (vectors): xSYTRD (lower) -> xSTEDC('I') on the tridiagonal -> back-transformation
 * Q*Z with large compact-WY blocks (explicit V panel, T from SYRK, two GEMMs per block),
 * instead of xORMTR (block 32, mostly skinny GEMMs) as xSYEVD does.
 * Recipe (values only): xSYTRD + xSTERF, or the two-stage reduction for large n.
 * See eigh_lapack.c for the measurements behind the choices.
 *
 * BLAS threading is whatever OpenBLAS does in the calling context: called inside an OpenMP
 * parallel region it runs single-threaded, outside it uses OpenBLAS's threads. */
#ifndef GSTAT_BACKEND_CPU_EIGH_LAPACK_H
#define GSTAT_BACKEND_CPU_EIGH_LAPACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int64_t work_elems;  /* elements of T (float or double) */
  int64_t iwork_elems; /* elements of int (== lapack_int, checked at compile time in the .c) */
} gstat_i_eigh_lapack_ws;

/* Workspace (elements of T and of lapack_int/int) for order n; elem_size is 4 or 8.
 * Returns {-1, -1} for n < 0 or an unsupported elem_size. Always >= 1 element each. */
gstat_i_eigh_lapack_ws gstat_i_eigh_lapack_workspace(int64_t n, int want_vectors, size_t elem_size);

/* a: column-major n x n, lda >= max(1, n); ONLY the lower triangle is read (the upper may hold
 * garbage/NaN). On return w is ascending; if want_vectors, column j of a is the unit eigenvector
 * of w[j] (sign arbitrary); otherwise a is destroyed.
 * work/iwork sized by gstat_i_eigh_lapack_workspace (for the same n and want_vectors, or larger);
 * nothing is allocated here. Reentrant, no globals, no printing.
 * Returns 0, LAPACK's info > 0 (no convergence), or < 0 for a bad argument (-1: n, -3: lda,
 * -2: a/w/work NULL, -4: n too large for 32-bit LAPACK workspace sizes).
 * A non-finite entry in the lower triangle gives w (and a, if want_vectors) all NaN, return 0. */
int gstat_i_eigh_lapack_f32(int64_t n, float *a, int64_t lda, float *w, int want_vectors,
                            float *work, int *iwork);
int gstat_i_eigh_lapack_f64(int64_t n, double *a, int64_t lda, double *w, int want_vectors,
                            double *work, int *iwork);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CPU_EIGH_LAPACK_H */
