/*
 * The requests of the sparse eigensolver's backend steps (backend.h's
 * lincomb, dots and the CSR Laplacian plan), shared by the backends and by
 * src/graph/sparse_eigs.c and src/spectral/spectral_sparse.c, which reach
 * them through the scheduler (sched.h).
 */
#ifndef GSTAT_BACKEND_SPARSE_REQ_H
#define GSTAT_BACKEND_SPARSE_REQ_H

#include "core/internal.h"

/* Per column c of blocks of n rows: Z[:, c] = g[c] Z[:, c] + a[c] X[:, c] +
 * b[c] Y[:, c], each term evaluated left to right. Z, X and Y are n x m
 * float64 with unit row stride, in one memory (the host's or a device's);
 * X or Y NULL drops its term (its coefficients unused), g NULL means Z is
 * not read (as BLAS's beta = 0). Z may be X or Y (the same columns). The
 * coefficients are host arrays of m. */
typedef struct gstat_i_lincomb_req {
  const gstat_matrix *Z, *X, *Y;
  const double *g, *a, *b;
} gstat_i_lincomb_req;

/* A graph Laplacian's action on blocks, planned once for many products:
 * Y = diag(p) X - diag(s) A diag(s) X for the symmetric CSR adjacency A
 * (weights >= 0, the graph layer validated it). Host arrays, kept by the
 * caller until the plan is released. The unnormalized Laplacian D - A is
 * p = degrees, s = NULL (1); the normalized I - D^-1/2 A D^-1/2 is p = 1
 * where the degree is > 0 (else 0) and s = D^-1/2 (1 for isolated nodes,
 * which have no entries). */
typedef struct gstat_i_csr_lap {
  int64_t n;
  const int64_t *offsets; /* n + 1; offsets[0] may be > 0 (a borrowed slice) */
  const int64_t *indices; /* column of entry e: indices[e] - base */
  int64_t base;
  const double *weights; /* NULL: every weight 1 */
  const double *p;       /* n */
  const double *s;       /* n, or NULL: 1 */
} gstat_i_csr_lap;

#endif /* GSTAT_BACKEND_SPARSE_REQ_H */
