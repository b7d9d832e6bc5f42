/*
 * Squared Mahalanobis distances, as R's mahalanobis(): per dataset, factor
 * S = L L^T (never an explicit inverse), solve Z L^T = X - center for all
 * rows at once, and sum the squares of each row of Z. With `inverted`, S is
 * the precision matrix P and d2 = rowsum(((X - c) P) o (X - c)).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "linalg/dense.h"
#include "linalg/sched.h"
#include "pca/data.h"

static inline double get(gstat_dtype ct, const void *x, int64_t k) {
  return ct == GSTAT_F64 ? ((const double *)x)[k] : (double)((const float *)x)[k];
}

/* Copy the strict lower triangle of the p x p buffer to the upper one. */
static void mirror_lower(gstat_dtype ct, int64_t p, void *s) {
  for (int64_t j = 1; j < p; j++)
    for (int64_t i = 0; i < j; i++) {
      if (ct == GSTAT_F64)
        ((double *)s)[i + j * p] = ((double *)s)[j + i * p];
      else
        ((float *)s)[i + j * p] = ((float *)s)[j + i * p];
    }
}

static gstat_status check_shape(gstat_ctx *ctx, const char *fn, const char *name,
                                const gstat_matrix *m, int64_t batch, int64_t rows, int64_t cols) {
  if (!m) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, name);
  gstat_status st = gstat_i_check_matrix(ctx, fn, name, m);
  if (st != GSTAT_OK) return st;
  if (m->batch != batch || m->rows != rows || m->cols != cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x %" PRId64,
                        fn, name, m->batch, m->rows, m->cols, batch, rows, cols);
  return GSTAT_OK;
}

static gstat_status check_finite(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *m, gstat_i_tri tri) {
  int64_t b, i, j;
  if (!m || !gstat_i_find_nonfinite(m, tri, &b, &i, &j)) return GSTAT_OK;
  return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: batch element %" PRId64 " of %s has a non-finite value at (%" PRId64
                      ", %" PRId64 ")",
                      fn, b, name, i, j);
}

#define TRY(expr)                  \
  do {                             \
    st = (expr);                   \
    if (st != GSTAT_OK) goto done; \
  } while (0)

gstat_status gstat_mahalanobis(gstat_ctx *ctx, const gstat_matrix *X, const gstat_matrix *center,
                               const gstat_matrix *S, int inverted, gstat_matrix *d2) {
  static const char fn[] = "mahalanobis";
  gstat_status st = GSTAT_OK;
  gstat_i_staged hx = {0}, hs = {0}, hc = {0};
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(gstat_i_check_matrix(ctx, fn, "X", X));
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  TRY(check_shape(ctx, fn, "S", S, batch, p, p));
  TRY(check_shape(ctx, fn, "d2", d2, batch, n, 1));
  if (center) {
    TRY(gstat_i_check_matrix(ctx, fn, "center", center));
    bool column = center->rows == p && center->cols == 1;
    bool row = center->rows == 1 && center->cols == p;
    if (center->batch != batch || !(column || row)) {
      st = gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: center is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x 1 or %" PRId64 " x 1 x %" PRId64,
                        fn, center->batch, center->rows, center->cols, batch, p, batch, p);
      goto done;
    }
  }
  TRY(gstat_i_check_alias(ctx, fn, "d2", d2, "X", X, false));
  TRY(gstat_i_check_alias(ctx, fn, "d2", d2, "S", S, false));
  TRY(gstat_i_check_alias(ctx, fn, "d2", d2, "center", center, false));
  if (n > INT32_MAX || p > INT32_MAX) {
    st =
        gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                     "%s: X is %" PRId64 " x %" PRId64 ", beyond the BLAS integer range", fn, n, p);
    goto done;
  }
  if (batch == 0 || n == 0) goto done;
  /* device data: host copies (no device primitive for this yet) */
  TRY(gstat_i_sched_stage(ctx, fn, "X", X, true, &hx));
  TRY(gstat_i_sched_stage(ctx, fn, "S", S, true, &hs));
  if (center) TRY(gstat_i_sched_stage(ctx, fn, "center", center, true, &hc));
  X = &hx.m;
  S = &hs.m;
  if (center) center = &hc.m;
  if (ctx->opt.check_finite) {
    TRY(check_finite(ctx, fn, "X", X, GSTAT_I_TRI_FULL));
    TRY(check_finite(ctx, fn, "center", center, GSTAT_I_TRI_FULL));
    TRY(check_finite(ctx, fn, "S", S, GSTAT_I_TRI_LOWER));
  }

  gstat_dtype ct = gstat_i_compute_dtype(X->dtype);
  size_t es = gstat_dtype_size(ct);
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, es);
  size_t o_y = gstat_i_ws_take(&pl, inverted ? n * p : 0, es);
  size_t o_s = gstat_i_ws_take(&pl, p * p, es);
  size_t o_c = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, n, sizeof(double));
  size_t o_info = gstat_i_ws_take(&pl, batch, sizeof(int64_t));
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) {
    st = pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                              pl.size)
               : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
    goto done;
  }
  void *x = ws + o_x, *y = ws + o_y, *s = ws + o_s;
  double *c = (double *)(ws + o_c), *d = (double *)(ws + o_d);
  int64_t *info = (int64_t *)(ws + o_info);
  int64_t failed = 0, first = -1;

  for (int64_t b = 0; b < batch; b++) {
    info[b] = 0;
    if (p > 0) {
      gstat_i_dense_load(S, b, ct, s, p);
      if (!inverted) TRY(gstat_i_potrf(ctx, ct, p, s, p, &info[b]));
    }
    if (info[b] != 0) {
      if (first < 0) first = b;
      failed++;
      for (int64_t r = 0; r < n; r++) d[r] = NAN;
    } else if (p == 0) {
      for (int64_t r = 0; r < n; r++) d[r] = 0.0; /* an empty sum */
    } else {
      gstat_i_dense_load(X, b, ct, x, n);
      if (center) {
        /* p x 1 or 1 x p: either way p values in order */
        gstat_matrix cv = *center;
        if (cv.rows == 1) {
          cv.rows = cv.cols;
          cv.cols = 1;
          cv.row_stride = center->col_stride;
          cv.col_stride = center->row_stride;
        }
        gstat_i_dense_load(&cv, b, GSTAT_F64, c, p);
        gstat_i_center_scale(ct, n, p, x, c, NULL);
      }
      for (int64_t r = 0; r < n; r++) d[r] = 0.0;
      if (!inverted) {
        /* Z L^T = Xc, so ||z_r||^2 = x_r^T (L L^T)^-1 x_r */
        TRY(gstat_i_trsm(ctx, ct, true, GSTAT_LOWER, GSTAT_TRANS, GSTAT_NON_UNIT, n, p, 1.0, s, p,
                         x, n));
        for (int64_t j = 0; j < p; j++)
          for (int64_t r = 0; r < n; r++) {
            double z = get(ct, x, r + j * n);
            d[r] += z * z;
          }
      } else {
        mirror_lower(ct, p, s);
        TRY(gstat_i_gemm(ctx, ct, GSTAT_NO_TRANS, GSTAT_NO_TRANS, n, p, p, 1.0, x, n, s, p, 0.0, y,
                         n));
        for (int64_t j = 0; j < p; j++)
          for (int64_t r = 0; r < n; r++) d[r] += get(ct, x, r + j * n) * get(ct, y, r + j * n);
      }
    }
    TRY(gstat_i_sched_store(ctx, fn, "d2", GSTAT_F64, d, n, d2, b));
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
  if (failed == 1)
    st = gstat_i_fail(ctx, GSTAT_ENOTPD,
                      "%s: batch element %" PRId64
                      " of S is not positive definite (leading minor of order %" PRId64 ")",
                      fn, first, info[first]);
  else if (failed > 1)
    st = gstat_i_fail(ctx, GSTAT_ENOTPD,
                      "%s: batch element %" PRId64
                      " of S is not positive definite (leading minor of order %" PRId64
                      "); %" PRId64 " of %" PRId64 " elements failed",
                      fn, first, info[first], failed, batch);
done:
  gstat_i_sched_release(ctx, &hc);
  gstat_i_sched_release(ctx, &hs);
  gstat_i_sched_release(ctx, &hx);
  return st;
}
