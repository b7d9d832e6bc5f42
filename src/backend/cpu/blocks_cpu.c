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

/* z = g z + a x + b y over n entries, each case its own loop (vectorized;
 * a term's absence is not a multiplication by 0, which would carry a NaN). */
static void lincomb_column(int64_t n, double *z, const double *x, const double *y, bool keep,
                           double g, double a, double b, int nt) {
  if (keep && x && y) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = g * z[i] + a * x[i] + b * y[i];
  } else if (keep && x) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = g * z[i] + a * x[i];
  } else if (keep && y) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = g * z[i] + b * y[i];
  } else if (keep) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = g * z[i];
  } else if (x && y) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + b * y[i];
  } else if (x || y) {
    const double *v = x ? x : y;
    double f = x ? a : b;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = f * v[i];
  } else {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < n; i++) z[i] = 0;
  }
}

gstat_status gstat_i_cpu_lincomb(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r) {
  (void)state;
  int64_t n = r->Z->rows, m = r->Z->cols;
  double len = (double)n * (double)m;
  int nt = gstat_i_loop_threads(ctx, n * m, 4.0 * len, 32.0 * len);
  for (int64_t c = 0; c < m; c++) {
    const double *x = column(r->X, c), *y = column(r->Y, c);
    lincomb_column(n, column(r->Z, c), x, y, r->g != NULL, r->g ? r->g[c] : 0, x ? r->a[c] : 0,
                   y ? r->b[c] : 0, nt);
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
