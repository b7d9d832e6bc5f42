/*
 * How a backend hands a gstat_matrix element to a BLAS-style GEMM: as a
 * column-major matrix with a leading dimension, or as the transpose of one
 * (a row-major element). Header-only: the CPU backend, the CUDA module and
 * the fake module share it (the modules do not link libgstat).
 */
#ifndef GSTAT_BACKEND_GEMM_VIEW_H
#define GSTAT_BACKEND_GEMM_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "gstat/linalg.h"

/* An element as BLAS sees it: ld, and whether the column-major matrix at
 * the element's address is the element's transpose. */
typedef struct gstat_i_blas_view {
  bool ok; /* false: no unit stride (the element cannot be handed to BLAS) */
  bool transposed;
  int64_t ld;
} gstat_i_blas_view;

static inline gstat_i_blas_view gstat_i_blas_view_of(const gstat_matrix *m) {
  gstat_i_blas_view v = {false, false, 0};
  int64_t r = m->rows, c = m->cols;
  if (r == 0 || c == 0) { /* nothing is read (k = 0): BLAS asks only ld >= max(1, rows) */
    v.ok = true;
    v.ld = r > 1 ? r : 1;
  } else if ((r <= 1 || m->row_stride == 1) && (c <= 1 || m->col_stride >= (r > 1 ? r : 1))) {
    v.ok = true;
    v.ld = c > 1 ? m->col_stride : (r > 1 ? r : 1);
  } else if ((c <= 1 || m->col_stride == 1) && (r <= 1 || m->row_stride >= (c > 1 ? c : 1))) {
    v.ok = true;
    v.transposed = true;
    v.ld = r > 1 ? m->row_stride : (c > 1 ? c : 1);
  }
  return v;
}

/* One GEMM C = alpha op(A) op(B) + beta C in column-major BLAS terms: the
 * operands' order, transposes and leading dimensions, and the sizes m x n
 * (C as BLAS sees it) and k. A row-major C is computed as C^T = op(B)^T
 * op(A)^T. ok false when an element has no unit stride. */
typedef struct gstat_i_gemm_plan {
  bool ok;
  bool swap; /* first BLAS operand is B */
  gstat_trans t1, t2;
  int64_t m, n, k, ld1, ld2, ldc;
} gstat_i_gemm_plan;

static inline gstat_trans gstat_i_flip(gstat_trans t, bool flip) {
  return flip ? (t == GSTAT_TRANS ? GSTAT_NO_TRANS : GSTAT_TRANS) : t;
}

static inline gstat_i_gemm_plan gstat_i_gemm_plan_of(gstat_trans ta, gstat_trans tb,
                                                     const gstat_matrix *A, const gstat_matrix *B,
                                                     const gstat_matrix *C) {
  gstat_i_gemm_plan p;
  gstat_i_blas_view va = gstat_i_blas_view_of(A), vb = gstat_i_blas_view_of(B),
                    vc = gstat_i_blas_view_of(C);
  p.ok = va.ok && vb.ok && vc.ok;
  p.k = ta == GSTAT_TRANS ? A->rows : A->cols;
  p.ldc = vc.ld;
  if (!vc.transposed) {
    p.swap = false;
    p.m = C->rows;
    p.n = C->cols;
    p.t1 = gstat_i_flip(ta, va.transposed);
    p.t2 = gstat_i_flip(tb, vb.transposed);
    p.ld1 = va.ld;
    p.ld2 = vb.ld;
  } else { /* C^T = op(B)^T op(A)^T */
    p.swap = true;
    p.m = C->cols;
    p.n = C->rows;
    p.t1 = gstat_i_flip(tb, !vb.transposed);
    p.t2 = gstat_i_flip(ta, !va.transposed);
    p.ld1 = vb.ld;
    p.ld2 = va.ld;
  }
  return p;
}

#endif /* GSTAT_BACKEND_GEMM_VIEW_H */
