/*
 * Covariance and correlation matrices of a batch of datasets, written once
 * over the scheduler for host and device data alike.
 *
 * Unweighted data without NaN: the fused co-moment primitive (on device data
 * a plain covariance is finished where the co-moment lies). Otherwise per
 * dataset: the rows with a NaN (nan_rows, which also finds an Inf to
 * refuse), then the weighted co-moment of the rows taken (wcomoment: every
 * row, or the complete ones under COMPLETE), or, for PAIRWISE with missing
 * values, the pair weights and co-moments (pairwise); the divisor
 * (numpy/torch's), the correlation and NaN for undefined entries here. The
 * backends centre before they multiply (never E[XY] - E[X]E[Y]).
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

/* What the general path keeps (host buffers in the GSTAT_WS_COV workspace). */
typedef struct cov_job {
  int64_t n, p;
  const gstat_cov_options *opt;
  double *c;    /* p x p result (the pairwise co-moments first) */
  double *mean; /* p */
  double *w;    /* n row weights fweight * aweight (weighted only) */
  double *W;    /* PAIRWISE: p x p pair weights, */
  double *WA;   /* sums of weight * aweight (analytic weights only), */
  double *V;    /* and variances over the pair's rows */
} cov_job;

static bool weighted(const gstat_cov_options *opt) {
  return opt->fweights || opt->aweights;
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

/* The rows listed by keep (all when keep is NULL): their weight sums here,
 * their weighted co-moment from the primitive, wherever X lies. */
static gstat_status dense_path(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                               cov_job *j, const unsigned char *keep) {
  const gstat_cov_options *opt = j->opt;
  int64_t p = j->p, m = 0;
  bool wtd = weighted(opt);
  double wsum = 0, wasum = 0;
  for (int64_t r = 0; r < j->n; r++) {
    if (keep && !keep[r]) continue;
    m++;
    if (!wtd) continue;
    wsum += j->w[r];
    if (opt->aweights) wasum += j->w[r] * opt->aweights[r];
  }
  if (!wtd) wsum = (double)m;
  if (m == 0 || !(wsum > 0)) { /* no data (or no weight): nothing is defined */
    fill_nan(j->mean, p);
    fill_nan(j->c, p * p);
    return GSTAT_OK;
  }
  gstat_status st = gstat_i_sched_wcomoment(ctx, fn, X, b, wtd ? j->w : NULL, keep,
                                            opt->assume_centered != 0, j->mean, j->c);
  if (st != GSTAT_OK) return st;
  /* NaN kept (EVERYTHING), or an unchecked Inf: the column's mean is not
   * finite; make its row and column NaN whatever BLAS did with it */
  for (int64_t c = 0; c < p; c++)
    if (!isfinite(j->mean[c]))
      for (int64_t k = 0; k < p; k++) j->c[c + k * p] = j->c[k + c * p] = NAN;
  gstat_i_cov_finish(p, j->c, p, divisor(opt, wsum, wasum), opt->correlation);
  return GSTAT_OK;
}

/* PAIRWISE with missing values: entry (a, b) from the rows where both
 * columns are present, with that pair's own means (and, for correlation,
 * its own standard deviations), as R's cov/cor(use = "pairwise"): the
 * primitive's pair weights and co-moments, divided here. */
static gstat_status pairwise_path(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                                  cov_job *j) {
  const gstat_cov_options *opt = j->opt;
  int64_t p = j->p;
  gstat_i_pairwise_out o = {j->mean, j->W, opt->aweights ? j->WA : NULL, j->c, j->V};
  gstat_status st =
      gstat_i_sched_pairwise(ctx, fn, X, b, weighted(opt) ? j->w : NULL, opt->aweights, &o);
  if (st != GSTAT_OK) return st;
  for (int64_t bb = 0; bb < p; bb++)
    for (int64_t a = bb; a < p; a++) { /* reads c[a + bb p] only before writing it */
      int64_t ab = a + bb * p, ba = bb + a * p;
      double ws = j->W[ab], v = NAN;
      if (ws > 0) {
        double cab = j->c[ab], vaa = j->V[ab], vbb = j->V[ba];
        double d = divisor(opt, ws, o.WA ? o.WA[ab] : 0.0);
        if (!(d > 0)) {
          v = gstat_i_over_no_dof(cab, d, opt->correlation);
        } else if (!opt->correlation) {
          v = cab / d;
        } else if (vaa > 0 && vbb > 0) {
          v = a == bb ? 1.0 : cab / (sqrt(vaa) * sqrt(vbb));
          if (v > 1)
            v = 1;
          else if (v < -1)
            v = -1;
        }
      }
      j->c[ab] = j->c[ba] = v;
    }
  return GSTAT_OK;
}

/* keep: element b's rows without NaN (NULL when not scanned: EVERYTHING). */
static gstat_status one_dataset(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                                cov_job *j, const unsigned char *keep) {
  gstat_missing mode = j->opt->missing;
  bool any_nan = false;
  for (int64_t r = 0; keep && r < j->n && !any_nan; r++) any_nan = !keep[r];
  if (!any_nan || mode == GSTAT_MISSING_EVERYTHING) return dense_path(ctx, fn, X, b, j, NULL);
  if (mode == GSTAT_MISSING_COMPLETE) return dense_path(ctx, fn, X, b, j, keep);
  return pairwise_path(ctx, fn, X, b, j);
}

/* Device data, a plain covariance: the co-moments stay where X lies and
 * become the covariance there (one symmetric map); only the means come to
 * the host. *served stays false, nothing written, where this does not apply
 * (host data, weights, correlation, no positive divisor, a NaN/Inf in the
 * means): one_pass then decides on the host. */
static gstat_status device_pass(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                const gstat_cov_options *opt, gstat_matrix *C, gstat_matrix *mean,
                                bool *served) {
  *served = false;
  int64_t n = X->rows, p = X->cols, batch = X->batch;
  double div = divisor(opt, (double)n, 0), zero = 0.0, inv = 1.0 / div;
  if (weighted(opt) || n < 1 || opt->assume_centered || opt->correlation || !(div > 0))
    return GSTAT_OK;
  gstat_dtype ct = gstat_i_compute_dtype(X->dtype);
  void *mem;
  double *ms = gstat_i_workspace(ctx, GSTAT_WS_COV, sizeof(double) * (size_t)(batch * p));
  if (!ms || gstat_i_sched_device_memory(ctx, fn, X, (size_t)(batch * p * p) * gstat_dtype_size(ct),
                                         &mem) != GSTAT_OK)
    return GSTAT_OK; /* host data (or no room there) */
  gstat_matrix S = gstat_matrix_col_major(mem, ct, batch, p, p);
  S.location = X->location;
  S.device = X->device;
  bool finite = true;
  for (int64_t b = 0; b < batch; b++) {
    gstat_matrix Sb = gstat_i_batch_part(&S, b, 1);
    gstat_status st = gstat_i_sched_comoment(ctx, fn, X, b, ms + b * p, NULL, &Sb);
    if (st != GSTAT_OK) return st;
    for (int64_t k = 0; k < p; k++) finite &= isfinite(ms[b * p + k]) != 0;
  }
  if (!finite) return GSTAT_OK;
  for (int64_t b = 0; b < batch; b++) {
    gstat_matrix Sb = gstat_i_batch_part(&S, b, 1), Cb = gstat_i_batch_part(C, b, 1);
    gstat_status st = gstat_i_sched_sym_affine(ctx, fn, &Sb, &inv, &zero);
    if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "C", &Sb, &Cb);
    if (st == GSTAT_OK && mean)
      st = gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, ms + b * p, p, mean, b);
    if (st != GSTAT_OK) return st;
  }
  *served = true;
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

#define TRY_RET(expr)              \
  do {                             \
    st = (expr);                   \
    if (st != GSTAT_OK) return st; \
  } while (0)

/* Weights or NaN: every element scanned (nan_rows) before anything is
 * written, then each element's co-moments from the primitives. */
static gstat_status general_path(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                 const gstat_cov_options *opt, gstat_matrix *C,
                                 gstat_matrix *mean) {
  gstat_status st = GSTAT_OK;
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  cov_job j;
  memset(&j, 0, sizeof j);
  j.n = n;
  j.p = p;
  j.opt = opt;
  /* which rows have a NaN (and where an Inf is), wherever X lies: needed
   * unless NaN simply propagate (EVERYTHING) and Inf is let through */
  bool scan = n > 0 && (opt->missing != GSTAT_MISSING_EVERYTHING || ctx->opt.check_finite);
  bool pw = opt->missing == GSTAT_MISSING_PAIRWISE;
  gstat_i_ws_plan pl = {0, true};
  size_t o_c = gstat_i_ws_take(&pl, p * p, sizeof(double)); /* n, p < 2^31: no overflow */
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_w = gstat_i_ws_take(&pl, weighted(opt) ? n : 0, sizeof(double));
  size_t o_pw = gstat_i_ws_take(&pl, pw ? 3 * p * p : 0, sizeof(double));
  size_t o_keep = gstat_i_ws_take(&pl, scan ? batch * n : 0, 1);
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws)
    return pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                                pl.size)
                 : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
  j.c = (double *)(ws + o_c);
  j.mean = (double *)(ws + o_mean);
  j.w = (double *)(ws + o_w);
  j.W = (double *)(ws + o_pw);
  j.WA = j.W + p * p;
  j.V = j.WA + p * p;
  unsigned char *keep = (unsigned char *)(ws + o_keep);
  for (int64_t r = 0; weighted(opt) && r < n; r++)
    j.w[r] = (opt->fweights ? opt->fweights[r] : 1.0) * (opt->aweights ? opt->aweights[r] : 1.0);
  for (int64_t b = 0; scan && b < batch; b++) { /* every element before anything is written */
    int64_t inf_at;
    TRY_RET(gstat_i_sched_nan_rows(ctx, fn, X, b, keep + b * n, &inf_at));
    if (ctx->opt.check_finite && inf_at >= 0)
      return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                          "%s: batch element %" PRId64 " of X has an infinite value at (%" PRId64
                          ", %" PRId64 ")",
                          fn, b, inf_at / p, inf_at % p);
  }
  for (int64_t b = 0; b < batch; b++) {
    TRY_RET(one_dataset(ctx, fn, X, b, &j, scan ? keep + b * n : NULL));
    TRY_RET(gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, j.c, p, C, b));
    if (mean) TRY_RET(gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, j.mean, p, mean, b));
  }
  if (!ctx->last_backends) ctx->last_backends |= GSTAT_RAN_CPU; /* no rows: all on the host */
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
  TRY(device_pass(ctx, fn, X, opt, C, mean, &served));
  if (served) goto done;
  TRY(one_pass(ctx, fn, X, opt, C, mean, &served));
  if (served) goto done;
  TRY(general_path(ctx, fn, X, opt, C, mean));
done:
  return st;
}
