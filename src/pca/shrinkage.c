/*
 * Shrinkage covariance estimators with scikit-learn's shrinkage values:
 * Ledoit-Wolf (sklearn.covariance.LedoitWolf) and OAS (sklearn.covariance.OAS,
 * the formula of scikit-learn >= 1.3). S is the maximum-likelihood
 * covariance (divisor n), mu = trace(S) / p, result (1 - s) S + s mu I.
 *
 * The sums are taken in double. Where scikit-learn subtracts two large
 * quantities (||S||_F^2 / p - mu^2) we use the equal ||S - mu I||_F^2 / p,
 * which has no cancellation when S is close to mu I.
 *
 * Written over the scheduler, wherever X lies: the fused co-moment gives the
 * means and S, kept where X lies; Ledoit-Wolf's sum of ||x_k - mean||^4 is a
 * reduction of the rows primitive; S's diagonal and off-diagonal sum of
 * squares give the shrinkage, and one symmetric map of S forms the result.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "pca/data.h"
#include "backend/sched.h"

/* The shrinkage of one dataset from S (= Xc^T Xc / n) given as its diagonal
 * (p values, mean mu) and the sum of squares of its strict lower triangle,
 * and, for Ledoit-Wolf, norms4 = sum over rows of ||x_k - mean||^4. */
static double choose_shrinkage(gstat_shrinkage method, int64_t n, int64_t p, const double *diag,
                               double mu, double lower2, double norms4) {
  if (p == 1) return 0.0; /* one feature: any shrinkage gives the same matrix; sklearn says 0 */
  double dev2 = 2 * lower2, all2 = 2 * lower2;
  for (int64_t i = 0; i < p; i++) {
    dev2 += (diag[i] - mu) * (diag[i] - mu);
    all2 += diag[i] * diag[i];
  }
  double dn = (double)n, dp = (double)p;
  if (method == GSTAT_SHRINK_LEDOIT_WOLF) {
    double beta = (norms4 / dn - all2) / (dp * dn);
    double delta = dev2 / dp;
    if (beta < 0) beta = 0; /* only rounding can make it negative */
    if (beta > delta) beta = delta;
    return beta == 0 ? 0.0 : beta / delta;
  }
  /* OAS: alpha = mean(S^2), num = alpha + mu^2, den = (n + 1)(alpha - mu^2 / p),
   * and alpha - mu^2 / p = ||S - mu I||^2 / p^2 */
  double alpha = all2 / (dp * dp);
  double num = alpha + mu * mu;
  double den = (dn + 1.0) * (dev2 / (dp * dp));
  if (den == 0) return 1.0;
  double r = num / den;
  return r < 1.0 ? r : 1.0;
}

/* Where the p x p co-moments are formed and shrunk: beside X (device
 * memory for device data, so that only p + 1 numbers an element cross to
 * the host), else host doubles. */
typedef struct {
  gstat_matrix S; /* batch x p x p: the co-moments, then the results */
  gstat_matrix m; /* p x 1 in S's memory: assume_centered's mean */
  double *mean;   /* host, batch x p */
  double *diag;   /* host, batch x p: S's diagonal / n */
} shrink_work;

static gstat_status shrink_work_get(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    shrink_work *w) {
  int64_t batch = X->batch, p = X->cols;
  gstat_dtype ct = gstat_i_compute_dtype(X->dtype);
  size_t sbytes = (size_t)(batch * p * p + p) * gstat_dtype_size(ct);
  void *mem = NULL;
  /* none there (host data, or the device is out of memory): host doubles */
  bool host = gstat_i_sched_device_memory(ctx, fn, X, sbytes, &mem) != GSTAT_OK;
  gstat_i_ws_plan pl = {0, true};
  size_t o_s = gstat_i_ws_take(&pl, host ? batch * p * p + p : 0, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, 2 * batch * p, sizeof(double));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws)
    return pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                                pl.size)
                 : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
  if (host) {
    ct = GSTAT_F64;
    mem = ws + o_s;
  }
  w->S = gstat_matrix_col_major(mem, ct, batch, p, p);
  w->m = gstat_matrix_col_major((char *)mem + (size_t)(batch * p * p) * gstat_dtype_size(ct), ct, 1,
                                p, 1);
  if (!host) {
    w->S.location = w->m.location = X->location;
    w->S.device = w->m.device = X->device;
  }
  w->mean = (double *)(ws + o_mean);
  w->diag = w->mean + batch * p;
  return GSTAT_OK;
}

/* Element b's co-moment into w->S (X^T X with assume_centered: co-moment +
 * n mean mean^T, no cancellation), its mean (0 when assume_centered) and
 * diagonal / n to the host. */
static gstat_status form_moments(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                                 int assume_centered, shrink_work *w) {
  int64_t n = X->rows, p = X->cols;
  gstat_matrix Sb = gstat_i_batch_part(&w->S, b, 1);
  double *mb = w->mean + b * p, *db = w->diag + b * p;
  bool host = Sb.location != GSTAT_CUDA; /* host doubles: the co-moment lands there as M */
  gstat_status st = host ? gstat_i_sched_comoment(ctx, fn, X, b, mb, Sb.data, NULL)
                         : gstat_i_sched_comoment(ctx, fn, X, b, mb, NULL, &Sb);
  if (st == GSTAT_OK && assume_centered) {
    gstat_matrix mh = gstat_matrix_col_major(mb, GSTAT_F64, 1, p, 1);
    st = gstat_i_sched_copy(ctx, fn, "mean", &mh, &w->m);
    if (st == GSTAT_OK)
      st = gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_TRANS, (double)n, &w->m, &w->m, 1.0,
                              &Sb);
    memset(mb, 0, sizeof(double) * (size_t)p);
  }
  gstat_matrix diag = Sb, dh = gstat_matrix_col_major(db, GSTAT_F64, 1, p, 1);
  diag.cols = 1;
  diag.row_stride = p + 1;
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "S", &diag, &dh);
  for (int64_t j = 0; j < p; j++) db[j] /= (double)n;
  return st;
}

/* Every element's moments before anything is written. A NaN/Inf shows in
 * the means or the diagonal: only then is X scanned, to name it. */
static gstat_status moments(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                            int assume_centered, shrink_work *w) {
  int64_t p = X->cols;
  bool finite = true;
  for (int64_t b = 0; b < X->batch; b++) {
    gstat_status st = form_moments(ctx, fn, X, b, assume_centered, w);
    if (st != GSTAT_OK) return st;
    for (int64_t j = 0; j < p; j++)
      finite &= isfinite(w->mean[b * p + j]) && isfinite(w->diag[b * p + j]);
  }
  int64_t bi, ri, ci;
  gstat_status st = GSTAT_OK;
  if (!finite && gstat_i_sched_find_nonfinite(ctx, fn, "X", X, &bi, &ri, &ci, &st))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                        "%s: batch element %" PRId64 " of X has a non-finite value at (%" PRId64
                        ", %" PRId64 ")",
                        fn, bi, ri, ci);
  return st;
}

/* Element b: its mean out, its shrinkage chosen, (1 - s) S + s mu I formed
 * where S lies and copied into C. */
static gstat_status shrink_one(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                               gstat_shrinkage method, int assume_centered, shrink_work *w,
                               gstat_matrix *C, gstat_matrix *mean_out, double *shrinkage) {
  int64_t n = X->rows, p = X->cols;
  double *mb = w->mean + b * p, *db = w->diag + b * p;
  gstat_status st = GSTAT_OK;
  if (mean_out) { /* p x 1 or 1 x p: the same p values along the one long side */
    gstat_matrix mo = *mean_out;
    if (mo.rows == 1) { /* view 1 x p as p x 1 */
      mo.rows = p;
      mo.cols = 1;
      mo.row_stride = mean_out->col_stride;
      mo.col_stride = mean_out->row_stride;
    }
    st = gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, mb, p, &mo, b);
    if (st != GSTAT_OK) return st;
  }
  double sums[2] = {0, 0}; /* Ledoit-Wolf: sum_k ||x_k - mean||^4 */
  if (method == GSTAT_SHRINK_LEDOIT_WOLF && p > 1) {
    gstat_i_rows_req r = {.X = X, .b = b, .center = assume_centered ? NULL : mb, .sums = sums};
    st = gstat_i_sched_rows(ctx, fn, &r);
    if (st != GSTAT_OK) return st;
  }
  gstat_matrix Sb = gstat_i_batch_part(&w->S, b, 1), Cb = gstat_i_batch_part(C, b, 1);
  double lower2 = 0;
  if (p > 1) st = gstat_i_sched_offdiag_sumsq(ctx, fn, &Sb, &lower2);
  if (st != GSTAT_OK) return st;
  double tr = 0, dn = (double)n;
  for (int64_t i = 0; i < p; i++) tr += db[i];
  double mu = tr / (double)p,
         sh = choose_shrinkage(method, n, p, db, mu, lower2 / (dn * dn), sums[1]);
  double a = (1.0 - sh) / dn, c = sh * mu;
  st = gstat_i_sched_sym_affine(ctx, fn, &Sb, &a, &c);
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "C", &Sb, &Cb);
  if (st == GSTAT_OK && shrinkage) shrinkage[b] = sh;
  return st;
}

gstat_status gstat_cov_shrink(gstat_ctx *ctx, const gstat_matrix *X, gstat_shrinkage method,
                              int assume_centered, gstat_matrix *C, gstat_matrix *mean_out,
                              double *shrinkage) {
  static const char fn[] = "cov_shrink";
  gstat_status st = GSTAT_OK;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  st = gstat_i_check_matrix(ctx, fn, "X", X);
  if (st != GSTAT_OK) goto done;
  if (!C) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: C is NULL", fn);
    goto done;
  }
  st = gstat_i_check_matrix(ctx, fn, "C", C);
  if (st != GSTAT_OK) goto done;
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  if (C->batch != batch || C->rows != p || C->cols != p) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: C is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                      " x %" PRId64 " x %" PRId64,
                      fn, C->batch, C->rows, C->cols, batch, p, p);
    goto done;
  }
  if (mean_out) {
    st = gstat_i_check_matrix(ctx, fn, "mean", mean_out);
    if (st != GSTAT_OK) goto done;
    bool col = mean_out->rows == p && mean_out->cols == 1,
         row = mean_out->rows == 1 && mean_out->cols == p;
    if (mean_out->batch != batch || !(col || row)) {
      st = gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: mean is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x 1",
                        fn, mean_out->batch, mean_out->rows, mean_out->cols, batch, p);
      goto done;
    }
    st = gstat_i_check_alias(ctx, fn, "mean", mean_out, "X", X, false);
    if (st == GSTAT_OK) st = gstat_i_check_alias(ctx, fn, "mean", mean_out, "C", C, false);
    if (st != GSTAT_OK) goto done;
  }
  if (method != GSTAT_SHRINK_LEDOIT_WOLF && method != GSTAT_SHRINK_OAS) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: method=%d is not a gstat_shrinkage", fn, (int)method);
    goto done;
  }
  st = gstat_i_check_alias(ctx, fn, "C", C, "X", X, false);
  if (st != GSTAT_OK) goto done;
  if (batch > 0 && p > 0 && n == 0) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X has no rows (n = 0)", fn);
    goto done;
  }
  if (n > INT32_MAX || p > INT32_MAX) {
    st =
        gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                     "%s: X is %" PRId64 " x %" PRId64 ", beyond the BLAS integer range", fn, n, p);
    goto done;
  }
  if (batch == 0 || p == 0) {
    for (int64_t b = 0; shrinkage && b < batch; b++) shrinkage[b] = 0.0;
    goto done;
  }
  shrink_work w;
  st = shrink_work_get(ctx, fn, X, &w);
  if (st == GSTAT_OK) st = moments(ctx, fn, X, assume_centered, &w);
  for (int64_t b = 0; st == GSTAT_OK && b < batch; b++)
    st = shrink_one(ctx, fn, X, b, method, assume_centered, &w, C, mean_out, shrinkage);
done:
  return st;
}
