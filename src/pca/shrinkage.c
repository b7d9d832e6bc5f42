/*
 * Shrinkage covariance estimators with scikit-learn's shrinkage values:
 * Ledoit-Wolf (sklearn.covariance.LedoitWolf) and OAS (sklearn.covariance.OAS,
 * the formula of scikit-learn >= 1.3). S is the maximum-likelihood
 * covariance (divisor n), mu = trace(S) / p, result (1 - s) S + s mu I.
 *
 * The sums are taken in double. Where scikit-learn subtracts two large
 * quantities (||S||_F^2 / p - mu^2) we use the equal ||S - mu I||_F^2 / p,
 * which has no cancellation when S is close to mu I.
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "linalg/dense.h"
#include "linalg/sched.h"
#include "pca/data.h"

/* ||S - mu I||_F^2 and ||S||_F^2 of the p x p matrix s (ld p). */
static void frobenius(gstat_dtype ct, int64_t p, const void *s, double mu, double *dev2,
                      double *all2) {
  double d = 0, a = 0;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) {
      double v = ct == GSTAT_F64 ? ((const double *)s)[i + j * p] : ((const float *)s)[i + j * p];
      a += v * v;
      if (i == j) v -= mu;
      d += v * v;
    }
  *dev2 = d;
  *all2 = a;
}

/* sum over rows of (sum_j x_ij^2)^2: the <X2^T, X2> term of Ledoit-Wolf. */
static double row_norms4(gstat_dtype ct, int64_t n, int64_t p, const void *x, double *rn) {
  for (int64_t i = 0; i < n; i++) rn[i] = 0;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) {
      double v = ct == GSTAT_F64 ? ((const double *)x)[i + j * n] : ((const float *)x)[i + j * n];
      rn[i] += v * v;
    }
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += rn[i] * rn[i];
  return s;
}

/* The shrinkage of one dataset from S (= X^T X / n), and the row norms. */
static double choose_shrinkage(gstat_shrinkage method, gstat_dtype ct, int64_t n, int64_t p,
                               const void *x, const void *s, double *rn) {
  if (p == 1) return 0.0; /* one feature: any shrinkage gives the same matrix; sklearn says 0 */
  double tr = 0;
  for (int64_t i = 0; i < p; i++)
    tr += ct == GSTAT_F64 ? ((const double *)s)[i + i * p] : ((const float *)s)[i + i * p];
  double mu = tr / (double)p, dev2, all2;
  frobenius(ct, p, s, mu, &dev2, &all2);
  double dn = (double)n, dp = (double)p;
  if (method == GSTAT_SHRINK_LEDOIT_WOLF) {
    double beta_ = row_norms4(ct, n, p, x, rn);
    double beta = (beta_ / dn - all2) / (dp * dn);
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

gstat_status gstat_cov_shrink(gstat_ctx *ctx, const gstat_matrix *X, gstat_shrinkage method,
                              int assume_centered, gstat_matrix *C, gstat_matrix *mean_out,
                              double *shrinkage) {
  static const char fn[] = "cov_shrink";
  gstat_status st = GSTAT_OK;
  gstat_i_staged hx = {0};
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
  st = gstat_i_sched_stage(ctx, fn, "X", X, true, &hx); /* device data: a host copy */
  if (st != GSTAT_OK) goto done;
  X = &hx.m;
  int64_t bi, ri, ci;
  if (gstat_i_find_nonfinite(X, GSTAT_I_TRI_FULL, &bi, &ri, &ci)) { /* whatever check_finite says */
    st = gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: batch element %" PRId64 " of X has a non-finite value at (%" PRId64
                      ", %" PRId64 ")",
                      fn, bi, ri, ci);
    goto done;
  }

  gstat_dtype ct = gstat_i_compute_dtype(X->dtype);
  size_t es = gstat_dtype_size(ct);
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, es);
  size_t o_s = gstat_i_ws_take(&pl, p * p, es);
  size_t o_c = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_rn = gstat_i_ws_take(&pl, n, sizeof(double));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) {
    st = pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                              pl.size)
               : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
    goto done;
  }
  void *x = ws + o_x, *s = ws + o_s;
  double *c = (double *)(ws + o_c), *mean = (double *)(ws + o_mean), *rn = (double *)(ws + o_rn);

  for (int64_t b = 0; b < batch; b++) {
    gstat_i_dense_load(X, b, ct, x, n);
    if (!assume_centered) {
      gstat_i_col_means(ct, n, p, x, NULL, (double)n, mean);
      gstat_i_exact_constant_means(ct, n, p, x, mean);
      gstat_i_center_scale(ct, n, p, x, mean, NULL);
    } else {
      memset(mean, 0, sizeof(double) * (size_t)p);
    }
    if (mean_out) { /* p x 1 or 1 x p: the same p values along the one long side */
      gstat_matrix mo = *mean_out;
      if (mo.rows == 1) { /* view 1 x p as p x 1 */
        mo.rows = p;
        mo.cols = 1;
        mo.row_stride = mean_out->col_stride;
        mo.col_stride = mean_out->row_stride;
      }
      st = gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, mean, p, &mo, b);
      if (st != GSTAT_OK) goto done;
    }
    st = gstat_i_syrk(ctx, ct, GSTAT_TRANS, p, n, 1.0 / (double)n, x, n, 0.0, s, p);
    if (st != GSTAT_OK) goto done;
    double sh = choose_shrinkage(method, ct, n, p, x, s, rn);
    double tr = 0;
    for (int64_t k = 0; k < p * p; k++)
      c[k] = ct == GSTAT_F64 ? ((const double *)s)[k] : ((const float *)s)[k];
    for (int64_t i = 0; i < p; i++) tr += c[i + i * p];
    double mu = tr / (double)p;
    for (int64_t k = 0; k < p * p; k++) c[k] *= 1.0 - sh;
    for (int64_t i = 0; i < p; i++) c[i + i * p] += sh * mu;
    st = gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, c, p, C, b);
    if (st != GSTAT_OK) goto done;
    if (shrinkage) shrinkage[b] = sh;
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
done:
  gstat_i_sched_release(ctx, &hx);
  return st;
}
