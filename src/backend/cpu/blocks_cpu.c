/* The sparse eigensolver's block steps on the host (backend.h's lincomb and
 * dots): plain loops over column-major blocks, threaded by the size rule of
 * the dense loops; a dot is summed by one thread in row order, so results do
 * not depend on the thread count. */
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

/* Column c of M (unit row stride). */
static double *column(const gstat_matrix *M, int64_t c) {
  return M ? (double *)M->data + c * M->col_stride : NULL;
}

gstat_status gstat_i_cpu_lincomb(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r) {
  (void)state;
  int64_t n = r->Z->rows, m = r->Z->cols;
  double len = (double)n * (double)m;
  int nt = gstat_i_loop_threads(ctx, n * m, 4.0 * len, 32.0 * len);
  for (int64_t c = 0; c < m; c++) {
    double *z = column(r->Z, c);
    const double *x = column(r->X, c), *y = column(r->Y, c);
    double g = r->g ? r->g[c] : 0, a = x ? r->a[c] : 0, b = y ? r->b[c] : 0;
    bool keep = r->g != NULL;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) {
      double v = keep ? g * z[i] : 0.0;
      if (x) v += a * x[i];
      if (y) v += b * y[i];
      z[i] = v;
    }
  }
  return GSTAT_OK;
}

gstat_status gstat_i_cpu_dots(void *state, gstat_ctx *ctx, const gstat_matrix *X,
                              const gstat_matrix *Y, double *out) {
  (void)state;
  int64_t n = X->rows, m = X->cols;
  int nt = gstat_i_loop_threads(ctx, m, 2.0 * (double)n * (double)m, 16.0 * (double)n * (double)m);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t c = 0; c < m; c++) {
    const double *x = column(X, c), *y = column(Y, c);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += x[i] * y[i];
    out[c] = acc;
  }
  return GSTAT_OK;
}
