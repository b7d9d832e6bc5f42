/* The covariance helpers of data.h: Inf search, weight checks, the divisor and correlation step. */
#include <math.h>

#include "pca/data.h"

/* ---- covariance helpers ---- */

static bool is_inf_at(const char *p, gstat_dtype dtype) {
  switch (dtype) {
    case GSTAT_F32: return isinf(*(const float *)p);
    case GSTAT_F64: return isinf(*(const double *)p);
    case GSTAT_BF16: return (*(const uint16_t *)p & 0x7fffu) == 0x7f80u;
  }
  return false;
}

bool gstat_i_find_inf(const gstat_matrix *m, int64_t *bo, int64_t *io, int64_t *jo) {
  /* walk in memory order: the dimension with the larger stride outside */
  bool rows_outer = m->rows > 1 && m->cols > 1 && m->row_stride > m->col_stride;
  int64_t outer_n = rows_outer ? m->rows : m->cols, inner_n = rows_outer ? m->cols : m->rows;
  size_t es = gstat_dtype_size(m->dtype);
  ptrdiff_t os = (ptrdiff_t)((rows_outer ? m->row_stride : m->col_stride) * (int64_t)es);
  ptrdiff_t is = (ptrdiff_t)((rows_outer ? m->col_stride : m->row_stride) * (int64_t)es);
  for (int64_t b = 0; b < m->batch; b++) {
    const char *base = (const char *)m->data + (size_t)(b * m->batch_stride) * es;
    for (int64_t o = 0; o < outer_n; o++)
      for (int64_t k = 0; k < inner_n; k++)
        if (is_inf_at(base + o * os + k * is, m->dtype)) {
          *bo = b;
          *io = rows_outer ? o : k;
          *jo = rows_outer ? k : o;
          return true;
        }
  }
  return false;
}

gstat_status gstat_i_check_weights(gstat_ctx *ctx, const char *fn, const char *name,
                                   const double *w, int64_t n, bool integer) {
  if (!w) return GSTAT_OK;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(w[i]))
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s[%lld]=%g is not finite", fn, name,
                          (long long)i, w[i]);
    if (w[i] < 0)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s[%lld]=%g must be >= 0", fn, name, (long long)i,
                          w[i]);
    if (integer && w[i] != floor(w[i]))
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s[%lld]=%g is not an integer", fn, name,
                          (long long)i, w[i]);
  }
  return GSTAT_OK;
}

double gstat_i_over_no_dof(double comoment, double divisor, int correlation) {
  if (correlation || isnan(divisor) || isnan(comoment) || comoment == 0) return NAN;
  return comoment > 0 ? INFINITY : -INFINITY;
}

void gstat_i_cov_finish(int64_t p, double *c, int64_t ld, double divisor, int correlation) {
  if (!(divisor > 0)) {
    for (int64_t j = 0; j < p; j++)
      for (int64_t i = 0; i < p; i++)
        c[i + j * ld] = gstat_i_over_no_dof(c[i + j * ld], divisor, correlation);
    return;
  }
  double inv = 1.0 / divisor; /* the rounding of the device's sym_affine, bit for bit */
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) c[i + j * ld] *= inv;
  if (!correlation) return;
  /* off-diagonal entries first: they read the variances on the diagonal */
  for (int64_t j = 0; j < p; j++) {
    double vj = c[j + j * ld];
    for (int64_t i = 0; i < p; i++) {
      if (i == j) continue;
      double vi = c[i + i * ld];
      double r = NAN;
      if (vi > 0 && vj > 0 && isfinite(vi) && isfinite(vj)) {
        r = c[i + j * ld] / (sqrt(vi) * sqrt(vj));
        if (r > 1)
          r = 1;
        else if (r < -1)
          r = -1;
      }
      c[i + j * ld] = r;
    }
  }
  for (int64_t j = 0; j < p; j++) {
    double v = c[j + j * ld];
    c[j + j * ld] = v > 0 && isfinite(v) ? 1.0 : NAN;
  }
}
