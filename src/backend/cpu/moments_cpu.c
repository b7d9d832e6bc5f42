/*
 * The CPU backend's weighted and missing-value co-moments (backend.h's
 * wcomoment, nan_rows, pairwise) on host data: the element loaded into a
 * dense column-major buffer of the compute type, the kept rows moved to the
 * top, column means by a corrected two-pass sum, centred, scaled by
 * sqrt(weight), one syrk; the pairwise co-moments by a plain two-pass loop
 * per pair of columns in float64, as R does. Centring first (never E[XY] -
 * E[X]E[Y]) keeps the result accurate when |mean| >> spread.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

/* Keep the rows listed by keep at the top of each column of the n x p
 * buffer x (in place: a destination never lies after its source), ld = the
 * kept count m, which is returned. */
static int64_t compact_rows(gstat_dtype ct, int64_t n, int64_t p, void *x,
                            const unsigned char *keep) {
  int64_t m = 0;
  for (int64_t r = 0; r < n; r++) m += keep[r] != 0;
  for (int64_t c = 0; c < p; c++) {
    int64_t d = c * m;
    if (ct == GSTAT_F64) {
      double *v = x;
      for (int64_t r = 0; r < n; r++)
        if (keep[r]) v[d++] = v[r + c * n];
    } else {
      float *v = x;
      for (int64_t r = 0; r < n; r++)
        if (keep[r]) v[d++] = v[r + c * n];
    }
  }
  return m;
}

static inline double get(gstat_dtype ct, const void *x, int64_t k) {
  return ct == GSTAT_F64 ? ((const double *)x)[k] : (double)((const float *)x)[k];
}

gstat_status gstat_i_cpu_wcomoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                   const double *w, const unsigned char *keep, bool about_zero,
                                   double *mean, double *M) {
  (void)state;
  int64_t n = X->rows, p = X->cols;
  gstat_dtype ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, gstat_dtype_size(ct));
  size_t o_cf = gstat_i_ws_take(&pl, ct == GSTAT_F64 ? 0 : p * p, sizeof(float));
  size_t o_w = gstat_i_ws_take(&pl, w ? n : 0, sizeof(double));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, pl.size) : NULL;
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "covariance: cannot allocate workspace");
  void *x = ws + o_x;
  double *wk = w ? (double *)(ws + o_w) : NULL, wsum = 0;
  gstat_i_dense_load(X, b, ct, x, n > 0 ? n : 1);
  int64_t m = keep ? compact_rows(ct, n, p, x, keep) : n;
  for (int64_t r = 0, k = 0; w && r < n; r++) { /* the kept rows' weights, in row order */
    if (keep && !keep[r]) continue;
    wk[k++] = w[r];
    wsum += w[r];
  }
  if (!w) wsum = (double)m;
  if (about_zero) { /* moments about 0; a NaN still marks its column */
    for (int64_t c = 0; c < p; c++) {
      mean[c] = 0.0;
      for (int64_t r = 0; r < m; r++)
        if (isnan(get(ct, x, r + c * m))) mean[c] = NAN;
    }
  } else {
    gstat_i_col_means(ct, m, p, x, wk, wsum, mean);
    gstat_i_exact_constant_means(ct, m, p, x, mean);
    gstat_i_center_scale(ct, m, p, x, mean, NULL);
  }
  if (wk) {
    for (int64_t r = 0; r < m; r++) wk[r] = sqrt(wk[r]); /* zero weight: a zero row */
    gstat_i_scale_rows(ct, m, p, x, wk);
  }
  void *out = ct == GSTAT_F64 ? (void *)M : (void *)(ws + o_cf);
  gstat_status st = gstat_i_syrk(ctx, ct, GSTAT_TRANS, p, m, 1.0, x, m > 0 ? m : 1, 0.0, out, p);
  if (st == GSTAT_OK && ct != GSTAT_F64)
    for (int64_t k = 0; k < p * p; k++) M[k] = (double)((const float *)out)[k];
  return st;
}

/* keep and the smallest infinite index, in memory order for any layout. */
#define DEFINE_NAN_ROWS(T, SFX, IS_NAN, IS_INF)                                     \
  static void nan_rows_##SFX(const gstat_matrix *X, int64_t b, unsigned char *keep, \
                             int64_t *inf_at) {                                     \
    const T *base = (const T *)X->data + b * X->batch_stride;                       \
    int64_t n = X->rows, p = X->cols;                                               \
    bool rows_outer = X->row_stride >= X->col_stride;                               \
    int64_t no = rows_outer ? n : p, ni = rows_outer ? p : n;                       \
    int64_t so = rows_outer ? X->row_stride : X->col_stride;                        \
    int64_t si = rows_outer ? X->col_stride : X->row_stride;                        \
    for (int64_t o = 0; o < no; o++) {                                              \
      const T *v = base + o * so;                                                   \
      for (int64_t k = 0; k < ni; k++) {                                            \
        T e = v[k * si];                                                            \
        if (IS_NAN(e)) keep[rows_outer ? o : k] = 0;                                \
        if (IS_INF(e)) {                                                            \
          int64_t at = rows_outer ? o * p + k : k * p + o;                          \
          if (*inf_at < 0 || at < *inf_at) *inf_at = at;                            \
        }                                                                           \
      }                                                                             \
    }                                                                               \
  }

#define BF16_NAN(e) (((e)&0x7fffu) > 0x7f80u)
#define BF16_INF(e) (((e)&0x7fffu) == 0x7f80u)
DEFINE_NAN_ROWS(double, f64, isnan, isinf)
DEFINE_NAN_ROWS(float, f32, isnan, isinf)
DEFINE_NAN_ROWS(uint16_t, bf16, BF16_NAN, BF16_INF)

gstat_status gstat_i_cpu_nan_rows(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  unsigned char *keep, int64_t *inf_at) {
  (void)state;
  (void)ctx;
  memset(keep, 1, (size_t)X->rows);
  *inf_at = -1;
  if (X->dtype == GSTAT_F64)
    nan_rows_f64(X, b, keep, inf_at);
  else if (X->dtype == GSTAT_F32)
    nan_rows_f32(X, b, keep, inf_at);
  else
    nan_rows_bf16(X, b, keep, inf_at);
  return GSTAT_OK;
}

/* Weighted mean of x over the rows where it and y (when given) are present,
 * corrected by a second pass; also the weight sums. Returns the row count. */
static int64_t pair_mean(int64_t n, const double *w, const double *aw, const double *x,
                         const double *y, double *mean, double *wsum, double *wasum) {
  int64_t cnt = 0;
  double s = 0, ws = 0, was = 0, first = NAN;
  bool constant = true;
  for (int64_t r = 0; r < n; r++) {
    if (isnan(x[r]) || (y && isnan(y[r]))) continue;
    double wr = w ? w[r] : 1.0;
    if (cnt == 0) first = x[r];
    constant = constant && x[r] == first;
    cnt++;
    ws += wr;
    s += wr * x[r];
    if (aw) was += wr * aw[r];
  }
  double m = s / ws, e = 0;
  for (int64_t r = 0; r < n; r++) {
    if (isnan(x[r]) || (y && isnan(y[r]))) continue;
    e += (w ? w[r] : 1.0) * (x[r] - m);
  }
  *mean = constant && cnt > 0 ? first : m + e / ws; /* exact: zero variance stays zero */
  *wsum = ws;
  *wasum = was;
  return cnt;
}

/* Entry (a, b) from the rows where both columns are present, with that
 * pair's own means (a corrected two-pass sum: sum w da db - (sum w da)(sum
 * w db) / W). */
static void pair_entry(int64_t n, int64_t p, const double *x, const double *w, const double *aw,
                       int64_t a, int64_t b, const gstat_i_pairwise_out *o) {
  const double *xa = x + a * n, *xb = x + b * n;
  double ma, mb, ws, was;
  int64_t ab = a + b * p, ba = b + a * p;
  int64_t cnt = pair_mean(n, w, aw, xa, xb, &ma, &ws, &was);
  o->W[ab] = o->W[ba] = ws;
  if (o->WA) o->WA[ab] = o->WA[ba] = was;
  o->C[ab] = o->C[ba] = o->V[ab] = o->V[ba] = NAN;
  if (cnt == 0 || !(ws > 0)) return;
  pair_mean(n, w, aw, xb, xa, &mb, &ws, &was);
  double ea = 0, eb = 0, sab = 0, saa = 0, sbb = 0;
  for (int64_t r = 0; r < n; r++) {
    if (isnan(xa[r]) || isnan(xb[r])) continue;
    double wr = w ? w[r] : 1.0, da = xa[r] - ma, db = xb[r] - mb;
    ea += wr * da;
    eb += wr * db;
    sab += wr * da * db;
    saa += wr * da * da;
    sbb += wr * db * db;
  }
  o->C[ab] = o->C[ba] = sab - ea * eb / ws;
  o->V[ab] = saa - ea * ea / ws;
  o->V[ba] = sbb - eb * eb / ws;
}

gstat_status gstat_i_cpu_pairwise(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  const double *w, const double *aw,
                                  const gstat_i_pairwise_out *o) {
  (void)state;
  int64_t n = X->rows, p = X->cols;
  gstat_i_ws_plan pl = {0, true};
  gstat_i_ws_take(&pl, n * p, sizeof(double));
  double *x = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, pl.size) : NULL;
  if (!x) return gstat_i_fail(ctx, GSTAT_ENOMEM, "covariance: cannot allocate workspace");
  gstat_i_dense_load(X, b, GSTAT_F64, x, n > 0 ? n : 1);
  for (int64_t a = 0; a < p; a++) {
    double ws, was;
    int64_t cnt = pair_mean(n, w, aw, x + a * n, NULL, &o->mean[a], &ws, &was);
    if (cnt == 0 || !(ws > 0)) o->mean[a] = NAN;
  }
  for (int64_t bb = 0; bb < p; bb++)
    for (int64_t a = bb; a < p; a++) pair_entry(n, p, x, w, aw, a, bb, o);
  return GSTAT_OK;
}
