/*
 * Covariance and correlation matrices of a batch of datasets.
 *
 * Unweighted data without NaN: the scheduler's fused co-moment, on whichever
 * backend runs it (host or device data). Otherwise, per dataset (device data
 * through a host copy): load it into a dense column-major buffer, drop incomplete rows
 * (COMPLETE), take column means by a corrected two-pass sum, center, scale the
 * rows by sqrt(weight) and form C = Xc^T Xc with syrk, then divide by the
 * numpy/torch divisor. Never E[XY] - E[X]E[Y]: centering first keeps the
 * result accurate when |mean| >> spread. PAIRWISE with missing values runs a
 * plain two-pass loop per pair of columns in float64, as R does.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "backend/dense.h"
#include "backend/sched.h"
#include "pca/data.h"

void gstat_cov_options_init(gstat_cov_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->ddof = 1;
  opt->fweights = NULL;
  opt->aweights = NULL;
  opt->missing = GSTAT_MISSING_EVERYTHING;
  opt->correlation = 0;
  opt->assume_centered = 0;
}

/* Everything one dataset's computation needs; buffers live in the
 * GSTAT_WS_COV workspace. */
typedef struct cov_job {
  gstat_dtype ct; /* compute type of the data buffer */
  int64_t n, p;
  const gstat_cov_options *opt;
  void *x;             /* n x p data, column-major, ld n (ld = kept rows after compaction) */
  double *c;           /* p x p result */
  float *cf;           /* p x p float32 syrk output (ct == F32) */
  double *mean;        /* p */
  double *w;           /* n combined weights of the kept rows (weighted only) */
  unsigned char *keep; /* n: row has no NaN */
} cov_job;

static inline double get(gstat_dtype ct, const void *x, int64_t k) {
  return ct == GSTAT_F64 ? ((const double *)x)[k] : (double)((const float *)x)[k];
}

static bool weighted(const gstat_cov_options *opt) {
  return opt->fweights || opt->aweights;
}

/* Row weight before any missing-value handling: fweight * aweight. */
static inline double row_weight(const gstat_cov_options *opt, int64_t r) {
  double w = 1.0;
  if (opt->fweights) w *= opt->fweights[r];
  if (opt->aweights) w *= opt->aweights[r];
  return w;
}

/* numpy/torch: sum(w) - ddof, or sum(w) - ddof * sum(w * aw) / sum(w) with
 * analytic weights. */
static double divisor(const gstat_cov_options *opt, double wsum, double wasum) {
  if (opt->ddof == 0) return wsum;
  if (!opt->aweights) return wsum - (double)opt->ddof;
  return wsum - (double)opt->ddof * wasum / wsum;
}

static void fill_nan(double *a, int64_t count) {
  for (int64_t k = 0; k < count; k++) a[k] = NAN;
}

/* Mark the rows without NaN; true when there is any NaN. */
static bool scan_nan(cov_job *j) {
  bool any = false;
  memset(j->keep, 1, (size_t)j->n);
  for (int64_t c = 0; c < j->p; c++) {
    for (int64_t r = 0; r < j->n; r++)
      if (isnan(get(j->ct, j->x, r + c * j->n))) {
        j->keep[r] = 0;
        any = true;
      }
  }
  return any;
}

/* Move the kept rows to the top of each column (in place: a destination
 * never lies after its source), packed with ld = kept count. */
static int64_t compact_rows(cov_job *j) {
  int64_t m = 0;
  for (int64_t r = 0; r < j->n; r++) m += j->keep[r];
  for (int64_t c = 0; c < j->p; c++) {
    int64_t d = c * m;
    if (j->ct == GSTAT_F64) {
      double *x = j->x;
      for (int64_t r = 0; r < j->n; r++)
        if (j->keep[r]) x[d++] = x[r + c * j->n];
    } else {
      float *x = j->x;
      for (int64_t r = 0; r < j->n; r++)
        if (j->keep[r]) x[d++] = x[r + c * j->n];
    }
  }
  return m;
}

/* The dense path: m rows (the first m of the buffer, ld m) go in; rows
 * listed by keep (all when keep is NULL) give the weights. */
static gstat_status dense_path(gstat_ctx *ctx, cov_job *j, int64_t m, const unsigned char *keep) {
  const gstat_cov_options *opt = j->opt;
  int64_t p = j->p;
  bool wtd = weighted(opt);
  double wsum = 0, wasum = 0;
  if (wtd) {
    int64_t k = 0;
    for (int64_t r = 0; r < j->n; r++) {
      if (keep && !keep[r]) continue;
      double w = row_weight(opt, r);
      j->w[k++] = w;
      wsum += w;
      if (opt->aweights) wasum += w * opt->aweights[r];
    }
  } else {
    wsum = (double)m;
  }
  if (m == 0 || !(wsum > 0)) { /* no data (or no weight): nothing is defined */
    fill_nan(j->mean, p);
    fill_nan(j->c, p * p);
    return GSTAT_OK;
  }
  if (opt->assume_centered) { /* moments about 0; a NaN still marks its column */
    for (int64_t c = 0; c < p; c++) {
      j->mean[c] = 0.0;
      for (int64_t r = 0; r < m; r++)
        if (isnan(get(j->ct, j->x, r + c * m))) j->mean[c] = NAN;
    }
  } else {
    gstat_i_col_means(j->ct, m, p, j->x, wtd ? j->w : NULL, wsum, j->mean);
    gstat_i_exact_constant_means(j->ct, m, p, j->x, j->mean);
    gstat_i_center_scale(j->ct, m, p, j->x, j->mean, NULL);
  }
  if (wtd) {
    for (int64_t r = 0; r < m; r++) j->w[r] = sqrt(j->w[r]); /* zero weight: a zero row */
    gstat_i_scale_rows(j->ct, m, p, j->x, j->w);
  }
  void *out = j->ct == GSTAT_F64 ? (void *)j->c : (void *)j->cf;
  gstat_status st = gstat_i_syrk(ctx, j->ct, GSTAT_TRANS, p, m, 1.0, j->x, m, 0.0, out, p);
  if (st != GSTAT_OK) return st;
  if (j->ct != GSTAT_F64)
    for (int64_t k = 0; k < p * p; k++) j->c[k] = (double)j->cf[k];
  /* NaN kept (EVERYTHING), or an unchecked Inf: the column's mean is not
   * finite; make its row and column NaN whatever BLAS did with it */
  for (int64_t c = 0; c < p; c++)
    if (!isfinite(j->mean[c]))
      for (int64_t k = 0; k < p; k++) j->c[c + k * p] = j->c[k + c * p] = NAN;
  gstat_i_cov_finish(p, j->c, p, divisor(opt, wsum, wasum), opt->correlation);
  return GSTAT_OK;
}

/* Weighted mean of x over the rows where it and y (when given) are present,
 * corrected by a second pass; also the weight sums. Returns the row count. */
static int64_t pair_mean(const cov_job *j, const double *x, const double *y, double *mean,
                         double *wsum, double *wasum) {
  const gstat_cov_options *opt = j->opt;
  bool wtd = weighted(opt);
  int64_t cnt = 0;
  double s = 0, ws = 0, was = 0, first = NAN;
  bool constant = true;
  for (int64_t r = 0; r < j->n; r++) {
    if (isnan(x[r]) || (y && isnan(y[r]))) continue;
    double w = wtd ? j->w[r] : 1.0;
    if (cnt == 0) first = x[r];
    constant = constant && x[r] == first;
    cnt++;
    ws += w;
    s += w * x[r];
    if (opt->aweights) was += w * opt->aweights[r];
  }
  double m = s / ws, e = 0;
  for (int64_t r = 0; r < j->n; r++) {
    if (isnan(x[r]) || (y && isnan(y[r]))) continue;
    e += (wtd ? j->w[r] : 1.0) * (x[r] - m);
  }
  *mean = constant && cnt > 0 ? first : m + e / ws; /* exact: zero variance stays zero */
  *wsum = ws;
  *wasum = was;
  return cnt;
}

/* PAIRWISE with missing values: entry (a, b) from the rows where both
 * columns are present, with that pair's own means (and, for correlation,
 * its own standard deviations), as R's cov/cor(use = "pairwise"). */
static void pairwise_path(cov_job *j) {
  const gstat_cov_options *opt = j->opt;
  int64_t n = j->n, p = j->p;
  bool wtd = weighted(opt);
  const double *x = j->x;
  if (wtd)
    for (int64_t r = 0; r < n; r++) j->w[r] = row_weight(opt, r);
  for (int64_t a = 0; a < p; a++) {
    double ws, was;
    int64_t cnt = pair_mean(j, x + a * n, NULL, &j->mean[a], &ws, &was);
    if (cnt == 0 || !(ws > 0)) j->mean[a] = NAN;
  }
  for (int64_t b = 0; b < p; b++)
    for (int64_t a = b; a < p; a++) {
      const double *xa = x + a * n, *xb = x + b * n;
      double ma, mb, ws, was;
      int64_t cnt = pair_mean(j, xa, xb, &ma, &ws, &was);
      double v = NAN;
      if (cnt > 0 && ws > 0) {
        pair_mean(j, xb, xa, &mb, &ws, &was);
        /* corrected two-pass: sum w da db - (sum w da)(sum w db) / W */
        double ea = 0, eb = 0, sab = 0, saa = 0, sbb = 0;
        for (int64_t r = 0; r < n; r++) {
          if (isnan(xa[r]) || isnan(xb[r])) continue;
          double w = wtd ? j->w[r] : 1.0, da = xa[r] - ma, db = xb[r] - mb;
          ea += w * da;
          eb += w * db;
          sab += w * da * db;
          saa += w * da * da;
          sbb += w * db * db;
        }
        double cab = sab - ea * eb / ws, vaa = saa - ea * ea / ws, vbb = sbb - eb * eb / ws;
        double d = divisor(opt, ws, was);
        if (!(d > 0)) {
          v = gstat_i_over_no_dof(cab, d, opt->correlation);
        } else if (!opt->correlation) {
          v = cab / d;
        } else if (vaa > 0 && vbb > 0) {
          v = a == b ? 1.0 : cab / (sqrt(vaa) * sqrt(vbb));
          if (v > 1)
            v = 1;
          else if (v < -1)
            v = -1;
        }
      }
      j->c[a + b * p] = j->c[b + a * p] = v;
    }
}

static gstat_status one_dataset(gstat_ctx *ctx, cov_job *j) {
  gstat_missing mode = j->opt->missing;
  bool any_nan = scan_nan(j);
  if (!any_nan || mode == GSTAT_MISSING_EVERYTHING) return dense_path(ctx, j, j->n, NULL);
  if (mode == GSTAT_MISSING_COMPLETE) {
    int64_t m = compact_rows(j);
    return dense_path(ctx, j, m, j->keep);
  }
  pairwise_path(j);
  return GSTAT_OK;
}

/* Unweighted data: means and co-moments by the fused co-moment primitive
 * (host or device data, no copy of X on the CPU), every element's before
 * anything is written. Data without NaN give the same answer in every
 * missing mode; with a NaN or Inf (the means show it) only EVERYTHING
 * without finiteness checks is served here, else *served stays false and the
 * general path runs (and names an Inf). */
static gstat_status one_pass(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                             const gstat_cov_options *opt, gstat_matrix *C, gstat_matrix *mean,
                             bool *served) {
  *served = false;
  int64_t n = X->rows, p = X->cols, batch = X->batch;
  if (weighted(opt) || n < 1 || opt->assume_centered) return GSTAT_OK;
  gstat_i_ws_plan pl = {0, true};
  size_t o_c = gstat_i_ws_take(&pl, batch * p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, batch * p, sizeof(double));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) return GSTAT_OK; /* every element's p x p at once did not fit: one at a time */
  double *cs = (double *)(ws + o_c), *ms = (double *)(ws + o_mean);
  bool finite = true;
  for (int64_t b = 0; b < batch; b++) {
    gstat_status st = gstat_i_sched_comoment(ctx, fn, X, b, ms + b * p, cs + b * p * p, NULL);
    if (st != GSTAT_OK) return st;
    for (int64_t k = 0; k < p; k++) finite &= isfinite(ms[b * p + k]) != 0;
  }
  /* a NaN outside EVERYTHING mode, or maybe an Inf to refuse: the general path */
  if (!finite && (opt->missing != GSTAT_MISSING_EVERYTHING || ctx->opt.check_finite))
    return GSTAT_OK;
  for (int64_t b = 0; b < batch; b++) {
    double *c = cs + b * p * p, *m = ms + b * p;
    for (int64_t k = 0; k < p; k++) /* a NaN column: its row and column are NaN */
      if (!isfinite(m[k]))
        for (int64_t i = 0; i < p; i++) c[k + i * p] = c[i + k * p] = NAN;
    gstat_i_cov_finish(p, c, p, divisor(opt, (double)n, 0), opt->correlation);
    gstat_status st = gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, c, p, C, b);
    if (st == GSTAT_OK && mean) st = gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, m, p, mean, b);
    if (st != GSTAT_OK) return st;
  }
  *served = true;
  return GSTAT_OK;
}

#define TRY(expr)                  \
  do {                             \
    st = (expr);                   \
    if (st != GSTAT_OK) goto done; \
  } while (0)

gstat_status gstat_covariance(gstat_ctx *ctx, const gstat_matrix *X, const gstat_cov_options *opt,
                              gstat_matrix *C, gstat_matrix *mean) {
  static const char fn[] = "covariance";
  gstat_status st = GSTAT_OK;
  gstat_i_staged hx = {0};
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_cov_options defaults;
  gstat_cov_options_init(&defaults);
  if (!opt) opt = &defaults;

  TRY(gstat_i_check_matrix(ctx, fn, "X", X));
  if (!C) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: C is NULL", fn);
    goto done;
  }
  TRY(gstat_i_check_matrix(ctx, fn, "C", C));
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  if (C->batch != batch || C->rows != p || C->cols != p) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: C is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                      " x %" PRId64 " x %" PRId64,
                      fn, C->batch, C->rows, C->cols, batch, p, p);
    goto done;
  }
  if (mean) {
    TRY(gstat_i_check_matrix(ctx, fn, "mean", mean));
    if (mean->batch != batch || mean->rows != p || mean->cols != 1) {
      st = gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: mean is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x 1",
                        fn, mean->batch, mean->rows, mean->cols, batch, p);
      goto done;
    }
  }
  TRY(gstat_i_check_alias(ctx, fn, "C", C, "X", X, false));
  TRY(gstat_i_check_alias(ctx, fn, "mean", mean, "X", X, false));
  TRY(gstat_i_check_alias(ctx, fn, "mean", mean, "C", C, false));
  if (opt->ddof < 0) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.ddof=%" PRId64 " must be >= 0", fn, opt->ddof);
    goto done;
  }
  if (opt->missing != GSTAT_MISSING_EVERYTHING && opt->missing != GSTAT_MISSING_COMPLETE &&
      opt->missing != GSTAT_MISSING_PAIRWISE) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.missing=%d is not a gstat_missing", fn,
                      (int)opt->missing);
    goto done;
  }
  if (opt->assume_centered && opt->missing == GSTAT_MISSING_PAIRWISE) {
    st = gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                      "%s: opt.assume_centered with missing=PAIRWISE is not supported", fn);
    goto done;
  }
  TRY(gstat_i_check_weights(ctx, fn, "fweights", opt->fweights, n, true));
  TRY(gstat_i_check_weights(ctx, fn, "aweights", opt->aweights, n, false));
  if (n > INT32_MAX || p > INT32_MAX) {
    st =
        gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                     "%s: X is %" PRId64 " x %" PRId64 ", beyond the BLAS integer range", fn, n, p);
    goto done;
  }
  if (batch == 0 || p == 0) goto done;
  bool served;
  TRY(one_pass(ctx, fn, X, opt, C, mean, &served));
  if (served) goto done;
  TRY(gstat_i_sched_stage(ctx, fn, "X", X, true, &hx)); /* device data: a host copy */
  X = &hx.m;
  int64_t bi, ri, ci;
  if (ctx->opt.check_finite && n > 0 && gstat_i_find_inf(X, &bi, &ri, &ci)) {
    st = gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: batch element %" PRId64 " of X has an infinite value at (%" PRId64
                      ", %" PRId64 ")",
                      fn, bi, ri, ci);
    goto done;
  }

  cov_job j;
  memset(&j, 0, sizeof j);
  j.ct = opt->missing == GSTAT_MISSING_PAIRWISE ? GSTAT_F64 : gstat_i_compute_dtype(X->dtype);
  j.n = n;
  j.p = p;
  j.opt = opt;
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, gstat_dtype_size(j.ct));
  size_t o_c = gstat_i_ws_take(&pl, p * p, sizeof(double)); /* n, p < 2^31: no overflow */
  size_t o_cf = gstat_i_ws_take(&pl, j.ct == GSTAT_F64 ? 0 : p * p, sizeof(float));
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_w = gstat_i_ws_take(&pl, weighted(opt) ? n : 0, sizeof(double));
  size_t o_keep = gstat_i_ws_take(&pl, n, 1);
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) {
    st = pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                              pl.size)
               : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
    goto done;
  }
  j.x = ws + o_x;
  j.c = (double *)(ws + o_c);
  j.cf = (float *)(ws + o_cf);
  j.mean = (double *)(ws + o_mean);
  j.w = (double *)(ws + o_w);
  j.keep = (unsigned char *)(ws + o_keep);

  for (int64_t b = 0; b < batch; b++) {
    gstat_i_dense_load(X, b, j.ct, j.x, n > 0 ? n : 1);
    TRY(one_dataset(ctx, &j));
    TRY(gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, j.c, p, C, b));
    if (mean) TRY(gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, j.mean, p, mean, b));
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
done:
  gstat_i_sched_release(ctx, &hx);
  return st;
}
