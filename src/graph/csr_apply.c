/*
 * Threaded CSR times a block of vectors (SpMM), Y = A X, X and Y n x m
 * column-major. Rows are split into chunks of about equal nonzero count
 * (degree-skewed graphs would unbalance a plain row split) and each row is
 * summed by one thread in index order, so the result does not depend on the
 * thread count. Columns go in groups of up to 8 so that a row's indices and
 * values are read once per group instead of once per column.
 */

#include "graph/sparse_eigs.h"
#include "backend/dense.h"

enum {
  GROUP = 8,            /* columns summed together (accumulators in registers) */
  CHUNKS_PER_THREAD = 4 /* slack for uneven rows */
};

/* Rows [r0, r1) for CB columns (CB a constant after inlining, so the
 * accumulator loop unrolls). Entry (row j, column c) of the input is at
 * X[j * xr + c * xc]: xr = 1, xc = n column-major, or xr = CB, xc = 1 for a
 * packed panel whose CB values of a row share a cache line. */
static inline void rows_group(const gstat_i_csr *A, int64_t r0, int64_t r1, const int CB,
                              const double *restrict X, int64_t xr, int64_t xc,
                              double *restrict Y) {
  const int64_t n = A->n;
  const int64_t *restrict off = A->offsets;
  const int64_t *restrict idx = A->indices;
  const double *restrict val = A->values;
  for (int64_t i = r0; i < r1; i++) {
    double acc[GROUP] = {0};
    if (val) {
      for (int64_t p = off[i]; p < off[i + 1]; p++) {
        const double v = val[p];
        const double *x = X + idx[p] * xr;
        for (int c = 0; c < CB; c++) acc[c] += v * x[c * xc];
      }
    } else {
      for (int64_t p = off[i]; p < off[i + 1]; p++) {
        const double *x = X + idx[p] * xr;
        for (int c = 0; c < CB; c++) acc[c] += x[c * xc];
      }
    }
    for (int c = 0; c < CB; c++) Y[i + c * n] = acc[c];
  }
}

static void rows_apply(const gstat_i_csr *A, int64_t r0, int64_t r1, int cb, const double *X,
                       int64_t xr, int64_t xc, double *Y) {
  switch (cb) {
    case 1: rows_group(A, r0, r1, 1, X, xr, xc, Y); break;
    case 2: rows_group(A, r0, r1, 2, X, xr, xc, Y); break;
    case 3: rows_group(A, r0, r1, 3, X, xr, xc, Y); break;
    case 4: rows_group(A, r0, r1, 4, X, xr, xc, Y); break;
    case 5: rows_group(A, r0, r1, 5, X, xr, xc, Y); break;
    case 6: rows_group(A, r0, r1, 6, X, xr, xc, Y); break;
    case 7: rows_group(A, r0, r1, 7, X, xr, xc, Y); break;
    default: rows_group(A, r0, r1, 8, X, xr, xc, Y); break;
  }
}

/* The first row i with offsets[i] + i >= t: offsets[i] + i ascends strictly,
 * so it splits rows by nonzeros + 1 (an empty row still costs a store). */
static int64_t row_of_work(const int64_t *off, int64_t n, int64_t t) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (off[mid] + mid < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* A group of several columns is first packed row by row into `panel`
 * (n x GROUP): the gathers X[idx] then touch one cache line per nonzero
 * instead of one per column: on a kNN graph numbered without locality,
 * packed columns cost less than single products, read in place more
 * (bench/README.md, "Measurements moved from code comments"). Without a
 * panel (allocation failed) the columns are read where they are. */
gstat_status gstat_i_csr_apply(gstat_ctx *ctx, void *csr, int64_t n, int64_t m, const double *X,
                               double *Y) {
  const gstat_i_csr *A = csr;
  if (!A || n != A->n || m < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "csr_apply: operator of size %lld applied to n=%lld",
                        A ? (long long)A->n : -1LL, (long long)n);
  if (n == 0 || m == 0) return GSTAT_OK;
  const int64_t work = A->offsets[n] + n;
  const double cols = (double)(m < GROUP ? m : GROUP);
  int nt = gstat_i_loop_threads(ctx, n, 2.0 * (double)work * cols,
                                12.0 * (double)work + 16.0 * (double)n * cols);
  const int64_t chunks = (int64_t)nt * CHUNKS_PER_THREAD;
  size_t panel_bytes = sizeof(double) * (size_t)n * (size_t)(m < GROUP ? m : GROUP);
  double *panel = m > 1 ? gstat_i_alloc(ctx, panel_bytes) : NULL;
  for (int64_t c0 = 0; c0 < m; c0 += GROUP) {
    const int cb = m - c0 < GROUP ? (int)(m - c0) : GROUP;
    const double *Xc = X + c0 * n;
    double *Yc = Y + c0 * n;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
      if (panel && cb > 1) {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++)
          for (int c = 0; c < cb; c++) panel[i * cb + c] = Xc[i + c * n];
      }
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < chunks; t++) {
        int64_t r0 = t == 0 ? 0 : row_of_work(A->offsets, n, work / chunks * t);
        int64_t r1 = t == chunks - 1 ? n : row_of_work(A->offsets, n, work / chunks * (t + 1));
        if (r1 <= r0) continue;
        if (panel && cb > 1)
          rows_apply(A, r0, r1, cb, panel, cb, 1, Yc);
        else
          rows_apply(A, r0, r1, cb, Xc, 1, n, Yc);
      }
    }
  }
  gstat_i_free(ctx, panel, panel_bytes);
  return GSTAT_OK;
}
