/* Projection on a fitted PCA and its inverse. */
#include <math.h>
#include <stdbool.h>

#include "core/matrix.h"
#include "backend/dense.h"
#include "backend/gemm_view.h"
#include "backend/sched.h"
#include "pca/data.h"
#include "pca/pca_internal.h"

#define TRY(expr)                  \
  do {                             \
    gstat_status s_ = (expr);      \
    if (s_ != GSTAT_OK) return s_; \
  } while (0)

/* Shared checks: res, the input and output descriptors and their shapes. */
static gstat_status check_args(gstat_ctx *ctx, const char *fn, const gstat_pca_result *res,
                               const char *in_name, const gstat_matrix *in, int64_t in_cols,
                               const char *out_name, const gstat_matrix *out, int64_t out_cols) {
  if (!res) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: res is NULL", fn);
  if (!in) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, in_name);
  if (!out) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, out_name);
  TRY(gstat_i_check_matrix(ctx, fn, in_name, in));
  TRY(gstat_i_check_matrix(ctx, fn, out_name, out));
  if (in->location == GSTAT_CUDA && out->location == GSTAT_CUDA && out->device != in->device)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                        "%s: the output is on another device than the input", fn);
  if (in->batch != res->batch || in->cols != in_cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s is %lld x %lld x %lld; the PCA needs batch %lld "
                        "and %lld columns",
                        fn, in_name, (long long)in->batch, (long long)in->rows, (long long)in->cols,
                        (long long)res->batch, (long long)in_cols);
  if (out->batch != in->batch || out->rows != in->rows || out->cols != out_cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s is %lld x %lld x %lld, expected %lld x %lld x %lld", fn, out_name,
                        (long long)out->batch, (long long)out->rows, (long long)out->cols,
                        (long long)in->batch, (long long)in->rows, (long long)out_cols);
  TRY(gstat_i_check_alias(ctx, fn, out_name, out, in_name, in, false));
  int64_t b, i, j;
  gstat_status st = GSTAT_OK;
  if (gstat_i_sched_find_nonfinite(ctx, fn, in_name, in, &b, &i, &j, &st))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE, "%s: %s[%lld] row %lld column %lld is NaN or Inf",
                        fn, in_name, (long long)b, (long long)i, (long long)j);
  return st;
}

/* Workspace: the input rows (m x cin), the output (m x cout) and the
 * components (p x k) in the compute type. */
static gstat_status workspace(gstat_ctx *ctx, const char *fn, gstat_dtype ct, int64_t m,
                              int64_t cin, int64_t cout, int64_t p, int64_t k, char **in,
                              char **out, char **V) {
  size_t esz = gstat_dtype_size(ct), a = (size_t)(m * cin) * esz, c = (size_t)(m * cout) * esz;
  size_t v = (size_t)(p * k) * esz;
  a = (a + 63) / 64 * 64;
  c = (c + 63) / 64 * 64;
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA, a + c + v);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate workspace", fn);
  *in = ws;
  *out = ws + a;
  *V = ws + a + c;
  return GSTAT_OK;
}

/* Components of dataset b as a p x k column-major buffer of type ct. */
static void load_components(const gstat_pca_result *res, int64_t b, gstat_dtype ct, char *V) {
  const double *comp = res->components + b * res->n_components * res->n_features;
  int64_t len = res->n_components * res->n_features;
  for (int64_t i = 0; i < len; i++) {
    if (ct == GSTAT_F64)
      ((double *)V)[i] = comp[i];
    else
      ((float *)V)[i] = (float)comp[i];
  }
}

/* Undo the whitening: column i of the m x k buffer times sqrt(explained_variance[i]). */
static void unwhiten_columns(const gstat_pca_result *res, int64_t b, gstat_dtype ct, int64_t m,
                             char *Z) {
  int64_t k = res->n_components;
  for (int64_t i = 0; i < k; i++) {
    double ev = res->explained_variance[b * k + i];
    double f = sqrt(ev > 0 ? ev : 0);
    for (int64_t r = 0; r < m; r++) {
      if (ct == GSTAT_F64)
        ((double *)Z)[r + i * m] *= f;
      else
        ((float *)Z)[r + i * m] = (float)(((float *)Z)[r + i * m] * f);
    }
  }
}

/* X (host) = scores V^T * scale + mean, unwhitened first. */
static gstat_status inverse_on_host(gstat_ctx *ctx, const char *fn, const gstat_pca_result *res,
                                    const gstat_matrix *scores, const gstat_matrix *X) {
  int64_t m = scores->rows, p = res->n_features, k = res->n_components;
  gstat_dtype ct = gstat_i_compute_dtype(scores->dtype);
  char *Z = NULL, *A = NULL, *V = NULL;
  TRY(workspace(ctx, fn, ct, m, k, p, p, k, &Z, &A, &V));
  for (int64_t b = 0; b < scores->batch; b++) {
    gstat_i_dense_load(scores, b, ct, Z, m);
    if (res->whiten) unwhiten_columns(res, b, ct, m, Z);
    load_components(res, b, ct, V);
    /* A (m x p) = Z (m x k) V^T, V being p x k (the scheduler records the CPU) */
    gstat_matrix Zm = gstat_matrix_col_major(Z, ct, 1, m, k),
                 Vm = gstat_matrix_col_major(V, ct, 1, p, k),
                 Am = gstat_matrix_col_major(A, ct, 1, m, p);
    TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_TRANS, 1.0, &Zm, &Vm, 0.0, &Am));
    const double *mean = res->mean + b * p, *scale = res->scale + b * p;
    for (int64_t j = 0; j < p; j++)
      for (int64_t r = 0; r < m; r++) {
        if (ct == GSTAT_F64)
          ((double *)A)[r + j * m] = ((double *)A)[r + j * m] * scale[j] + mean[j];
        else
          ((float *)A)[r + j * m] = (float)(((float *)A)[r + j * m] * scale[j] + mean[j]);
      }
    gstat_i_dense_store(ct, A, m, X, b);
  }
  return GSTAT_OK;
}

/* Device data: X = scores W^T + 1 mean^T, W (p x k) the components with
 * row j times scale[j] and column i times sqrt(explained_variance[i]) when
 * whitened (built on the host, small), one batched GEMM and a rank-one
 * update on the device. scores and X are used in place when they have the
 * compute dtype and a unit stride, else through dense device copies.
 * GSTAT_EUNSUPPORTED or GSTAT_ENOMEM when there is no device memory for it. */
static gstat_status inverse_on_device(gstat_ctx *ctx, const char *fn, const gstat_pca_result *res,
                                      const gstat_matrix *scores, const gstat_matrix *X) {
  int64_t nb = scores->batch, m = scores->rows, p = res->n_features, k = res->n_components;
  gstat_dtype ct = gstat_i_compute_dtype(scores->dtype);
  bool z_direct = scores->dtype == ct && gstat_i_blas_view_of(scores).ok;
  bool x_direct = X->dtype == ct && gstat_i_blas_view_of(X).ok;
  gstat_i_dev_region reg = {NULL, 0, X->location, X->device};
  gstat_matrix W, mu, ones, Z, A;
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) TRY(gstat_i_dev_region_open(ctx, fn, X, &reg));
    W = gstat_i_dev_take(&reg, ct, nb, p, k);
    mu = gstat_i_dev_take(&reg, ct, nb, 1, p);
    ones = gstat_i_dev_take(&reg, ct, 1, m, 1);
    Z = z_direct ? *scores : gstat_i_dev_take(&reg, ct, nb, m, k);
    A = x_direct ? *X : gstat_i_dev_take(&reg, ct, nb, m, p);
  }
  size_t wbytes = sizeof(double) * (size_t)(nb * p * k);
  double *w = gstat_i_alloc(ctx, wbytes ? wbytes : 1);
  if (!w) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", fn, wbytes);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < k; i++) {
      double ev = res->explained_variance[b * k + i];
      double f = res->whiten ? sqrt(ev > 0 ? ev : 0) : 1.0;
      for (int64_t j = 0; j < p; j++)
        w[(b * k + i) * p + j] = res->components[(b * k + i) * p + j] * f * res->scale[b * p + j];
    }
  gstat_status st = gstat_i_dev_put(ctx, fn, w, &W);
  gstat_i_free(ctx, w, wbytes ? wbytes : 1);
  TRY(st);
  TRY(gstat_i_dev_put(ctx, fn, res->mean, &mu));
  TRY(gstat_i_dev_fill(ctx, fn, &ones, 1.0));
  if (!z_direct) TRY(gstat_i_sched_copy(ctx, fn, "scores", scores, &Z));
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_TRANS, 1.0, &Z, &W, 0.0, &A));
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_NO_TRANS, 1.0, &ones, &mu, 1.0, &A));
  return x_direct ? GSTAT_OK : gstat_i_sched_copy(ctx, fn, "X", &A, (gstat_matrix *)X);
}

gstat_status gstat_pca_transform(gstat_ctx *ctx, const gstat_pca_result *res, const gstat_matrix *X,
                                 gstat_matrix *scores) {
  const char *fn = "pca_transform";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_args(ctx, fn, res, "X", X, res ? res->n_features : 0, "scores", scores,
                 res ? res->n_components : 0));
  int64_t m = X->rows, p = res->n_features, k = res->n_components;
  if (m == 0 || k == 0) return GSTAT_OK;
  /* centred and projected in one pass over X, where X lies (no copy of X) */
  for (int64_t b = 0; b < X->batch; b++)
    TRY(gstat_i_sched_project(ctx, fn, X, b, res->mean + b * p, res->scale + b * p,
                              res->components + b * k * p,
                              res->whiten ? res->explained_variance + b * k : NULL, k, scores));
  return GSTAT_OK;
}

gstat_status gstat_pca_inverse_transform(gstat_ctx *ctx, const gstat_pca_result *res,
                                         const gstat_matrix *scores, gstat_matrix *X) {
  const char *fn = "pca_inverse_transform";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_args(ctx, fn, res, "scores", scores, res ? res->n_components : 0, "X", X,
                 res ? res->n_features : 0));
  if (scores->rows == 0) return GSTAT_OK;
  if (scores->location == GSTAT_CUDA && X->location == GSTAT_CUDA) {
    gstat_status st = inverse_on_device(ctx, fn, res, scores, X);
    if (st != GSTAT_EUNSUPPORTED && st != GSTAT_ENOMEM) return st;
    ctx->last_error[0] = '\0'; /* no device memory for it: on host copies */
  }
  gstat_i_staged hs, hx = {0}; /* host data, or data in both memories */
  TRY(gstat_i_sched_stage(ctx, fn, "scores", scores, true, &hs));
  gstat_status st = gstat_i_sched_stage(ctx, fn, "X", X, false, &hx);
  if (st == GSTAT_OK) st = inverse_on_host(ctx, fn, res, &hs.m, &hx.m);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "X", &hx, X);
  gstat_i_sched_release(ctx, &hx);
  gstat_i_sched_release(ctx, &hs);
  return st;
}
