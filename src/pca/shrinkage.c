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
 * means and S; Ledoit-Wolf's sum of ||x_k - mean||^4 is a reduction of the
 * rows primitive; the p x p arithmetic runs on the host.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "backend/sched.h"

/* ||S - mu I||_F^2 and ||S||_F^2 of the p x p matrix s (ld p). */
static void frobenius(int64_t p, const double *s, double mu, double *dev2, double *all2) {
  double d = 0, a = 0;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) {
      double v = s[i + j * p];
      a += v * v;
      if (i == j) v -= mu;
      d += v * v;
    }
  *dev2 = d;
  *all2 = a;
}

/* The shrinkage of one dataset from S (= Xc^T Xc / n) and, for Ledoit-Wolf,
 * norms4 = sum over rows of ||x_k - mean||^4. */
static double choose_shrinkage(gstat_shrinkage method, int64_t n, int64_t p, const double *s,
                               double norms4) {
  if (p == 1) return 0.0; /* one feature: any shrinkage gives the same matrix; sklearn says 0 */
  double tr = 0;
  for (int64_t i = 0; i < p; i++) tr += s[i + i * p];
  double mu = tr / (double)p, dev2, all2;
  frobenius(p, s, mu, &dev2, &all2);
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

/* Means and S = co-moment / n of every element into mean and s (batch x p,
 * batch x p x p doubles); about 0 with assume_centered. A NaN/Inf shows in
 * the means: only then is X scanned, to name it. */
static gstat_status moments(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                            int assume_centered, double *mean, double *s) {
  int64_t n = X->rows, p = X->cols;
  bool finite = true;
  for (int64_t b = 0; b < X->batch; b++) {
    double *mb = mean + b * p, *sb = s + b * p * p;
    gstat_status st = gstat_i_sched_comoment(ctx, fn, X, b, mb, sb, NULL);
    if (st != GSTAT_OK) return st;
    for (int64_t j = 0; j < p; j++) finite &= isfinite(mb[j]) && isfinite(sb[j + j * p]);
    if (assume_centered) { /* X^T X = co-moment + n mean mean^T: no cancellation */
      for (int64_t j = 0; j < p; j++)
        for (int64_t i = 0; i < p; i++) sb[i + j * p] += (double)n * mb[i] * mb[j];
      memset(mb, 0, sizeof(double) * (size_t)p);
    }
    for (int64_t e = 0; e < p * p; e++) sb[e] /= (double)n;
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
  gstat_i_ws_plan pl = {0, true};
  size_t o_s = gstat_i_ws_take(&pl, batch * p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, batch * p, sizeof(double));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) {
    st = pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                              pl.size)
               : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
    goto done;
  }
  double *s = (double *)(ws + o_s), *mean = (double *)(ws + o_mean);
  st = moments(ctx, fn, X, assume_centered, mean, s);
  if (st != GSTAT_OK) goto done;

  for (int64_t b = 0; b < batch; b++) {
    double *mb = mean + b * p, *c = s + b * p * p;
    if (mean_out) { /* p x 1 or 1 x p: the same p values along the one long side */
      gstat_matrix mo = *mean_out;
      if (mo.rows == 1) { /* view 1 x p as p x 1 */
        mo.rows = p;
        mo.cols = 1;
        mo.row_stride = mean_out->col_stride;
        mo.col_stride = mean_out->row_stride;
      }
      st = gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, mb, p, &mo, b);
      if (st != GSTAT_OK) goto done;
    }
    double sums[2] = {0, 0}; /* Ledoit-Wolf: sum_k ||x_k - mean||^4 */
    if (method == GSTAT_SHRINK_LEDOIT_WOLF && p > 1) {
      gstat_i_rows_req r = {.X = X, .b = b, .center = assume_centered ? NULL : mb, .sums = sums};
      st = gstat_i_sched_rows(ctx, fn, &r);
      if (st != GSTAT_OK) goto done;
    }
    double sh = choose_shrinkage(method, n, p, c, sums[1]);
    double tr = 0;
    for (int64_t i = 0; i < p; i++) tr += c[i + i * p];
    double mu = tr / (double)p;
    for (int64_t k = 0; k < p * p; k++) c[k] *= 1.0 - sh;
    for (int64_t i = 0; i < p; i++) c[i + i * p] += sh * mu;
    st = gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, c, p, C, b);
    if (st != GSTAT_OK) goto done;
    if (shrinkage) shrinkage[b] = sh;
  }
done:
  return st;
}
