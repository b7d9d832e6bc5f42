/*
 * Squared Mahalanobis distances, as R's mahalanobis(): per dataset, factor
 * S = L L^T (never an explicit inverse) and reduce each row to
 * ||L^-1 (x - center)||^2; with `inverted`, S is the precision matrix P and
 * d2 = (x - c)^T P (x - c). Written over the scheduler: the factor is
 * gstat_cholesky's, the rows primitive centres, solves and reduces the rows
 * where X lies (host or device) into scratch beside X (batch x n doubles,
 * the size of d2), and d2 is written once every element is known good. X (and a centre lying
 * where X does, read there: no copy to the host and back) is scanned for NaN/Inf only when a sum
 * of distances is not finite (a NaN/Inf there always shows): the distances' own pass is the
 * check, as in torch's one pass over X.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/covariance.h"
#include "backend/sched.h"

/* One call's state: its shape, the centres and factor info on the host. */
typedef struct maha {
  const char *fn;
  int64_t batch, n, p;
  int inverted;
  gstat_dtype ct;           /* X's compute dtype: the factors' */
  double *c;                /* batch x p centres read to the host, or NULL */
  const gstat_matrix *cvec; /* or the caller's centre, in X's memory */
  int64_t *info;            /* batch: the factors' */
  double *fill;             /* n: NaN or 0, for the elements without a reduction */
  unsigned char *bad;       /* batch: the element's sum of d2 is not finite */
  double sums[2];           /* the last element's sum of d2 and of its squares */
} maha;

static bool same_memory(const gstat_matrix *a, const gstat_matrix *b) {
  return a->location == b->location && (a->location == GSTAT_HOST || a->device == b->device);
}

static gstat_status not_finite(gstat_ctx *ctx, const char *fn, const char *name, int64_t b,
                               int64_t i, int64_t j) {
  return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: batch element %" PRId64 " of %s has a non-finite value at (%" PRId64
                      ", %" PRId64 ")",
                      fn, b, name, i, j);
}

/* GSTAT_ENOTFINITE naming the first NaN/Inf of the lower triangle of S,
 * element b0 of the caller's (a host copy of device S: only on the paths
 * where a factor failed or a sum is not finite), or GSTAT_OK when it has
 * none. */
static gstat_status check_lower(gstat_ctx *ctx, const char *fn, const gstat_matrix *S, int64_t b0) {
  gstat_i_staged h = {0};
  gstat_status st = gstat_i_sched_stage(ctx, fn, "S", S, true, &h);
  int64_t b, i, j;
  if (st == GSTAT_OK && gstat_i_find_nonfinite(&h.m, GSTAT_I_TRI_LOWER, &b, &i, &j))
    st = not_finite(ctx, fn, "S", b0 + b, i, j);
  gstat_i_sched_release(ctx, &h);
  return st;
}

/* The centres as batch x p host doubles (a row or column, host or device),
 * checked when the context checks finiteness: for a centre that does not
 * lie where X does. */
static gstat_status load_centers(gstat_ctx *ctx, maha *m, const gstat_matrix *center) {
  gstat_matrix cv = *center; /* p x 1 or 1 x p: either way p values in order */
  if (cv.rows == 1) {
    cv.rows = m->p;
    cv.cols = 1;
    cv.row_stride = center->col_stride;
    cv.col_stride = center->row_stride;
  }
  gstat_matrix to = gstat_vector_batch(m->c, GSTAT_F64, m->batch, m->p);
  gstat_status st = gstat_i_sched_copy(ctx, m->fn, "center", &cv, &to);
  for (int64_t e = 0; st == GSTAT_OK && ctx->opt.check_finite && e < m->batch * m->p; e++)
    if (!isfinite(m->c[e])) {
      int64_t b = e / m->p, j = e % m->p;
      st = center->rows == 1 ? not_finite(ctx, m->fn, "center", b, 0, j)
                             : not_finite(ctx, m->fn, "center", b, j, 0);
    }
  return st;
}

/* Memory where X lies for the factors (batch x p x p, compute dtype) and
 * the distances (batch x n doubles): device memory kept by the backend, or
 * host workspace. GSTAT_EUNSUPPORTED when the device offers none. */
static gstat_status chain_memory(gstat_ctx *ctx, const maha *m, const gstat_matrix *X,
                                 gstat_matrix *F, gstat_matrix *D) {
  size_t fbytes, total;
  if (!gstat_i_mul_size((size_t)(m->batch * m->p), (size_t)m->p * gstat_dtype_size(m->ct),
                        &fbytes) ||
      !gstat_i_add_size((fbytes + 63) / 64 * 64, sizeof(double) * (size_t)(m->batch * m->n) + 64,
                        &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", m->fn);
  void *mem = NULL;
  if (X->location == GSTAT_CUDA) {
    gstat_status st = gstat_i_sched_device_memory(ctx, m->fn, X, total, &mem);
    if (st != GSTAT_OK) return st;
  } else if (!(mem = gstat_i_workspace(ctx, GSTAT_WS_PCA, total))) {
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", m->fn,
                        total);
  }
  *F = gstat_matrix_col_major(mem, m->ct, m->batch, m->p, m->p);
  *D = gstat_vector_batch((char *)mem + (fbytes + 63) / 64 * 64, GSTAT_F64, m->batch, m->n);
  F->location = D->location = X->location;
  F->device = D->device = X->device;
  return GSTAT_OK;
}

/* The factors L of S into F (inverted: P itself, or its copy in X's memory
 * into F), element failures in m->info; *T: what the rows primitive reads. */
static gstat_status factor(gstat_ctx *ctx, maha *m, const gstat_matrix *X, const gstat_matrix *S,
                           gstat_matrix *F, const gstat_matrix **T) {
  const gstat_matrix *A = S;
  memset(m->info, 0, sizeof(int64_t) * (size_t)m->batch);
  if (!same_memory(S, X)) { /* the factor where the rows are */
    gstat_status st = gstat_i_sched_copy(ctx, m->fn, "S", S, F);
    if (st != GSTAT_OK) return st;
    A = F;
  }
  *T = m->inverted ? A : F;
  if (m->inverted) return GSTAT_OK;
  gstat_status st = gstat_i_sched_cholesky(ctx, m->fn, A, F, m->info);
  if (st == GSTAT_ENOTFINITE) { /* the factor's check: named in S's own terms */
    ctx->last_error[0] = '\0';
    gstat_status named = check_lower(ctx, m->fn, S, 0);
    return named != GSTAT_OK ? named : gstat_i_fail(ctx, st, "%s: S is not finite", m->fn);
  }
  /* a NaN fails its factor where the backend did not check: named as S's */
  for (int64_t b = 0;
       st == GSTAT_OK && S->location != GSTAT_HOST && ctx->opt.check_finite && b < m->batch; b++)
    if (m->info[b] != 0) {
      gstat_matrix sb = gstat_i_batch_part(S, b, 1);
      st = check_lower(ctx, m->fn, &sb, b);
    }
  return st;
}

/* After the distances: a sum that is not finite (or a failed factor, whose
 * rows were not reduced) names the NaN/Inf of the centre (read where X
 * lies, unchecked so far), of X, or (inverted) of P; a finite X and S whose
 * distances overflow are let be. */
static gstat_status check_sums(gstat_ctx *ctx, maha *m, const gstat_matrix *X,
                               const gstat_matrix *S) {
  gstat_status st = GSTAT_OK;
  bool any = false;
  for (int64_t b = 0; b < m->batch; b++) any |= m->bad[b] != 0;
  if (!any || !ctx->opt.check_finite) return GSTAT_OK;
  int64_t b0, i0, j0;
  if (m->cvec && gstat_i_sched_find_nonfinite(ctx, m->fn, "center", m->cvec, &b0, &i0, &j0, &st))
    return not_finite(ctx, m->fn, "center", b0, i0, j0);
  if (st == GSTAT_OK && gstat_i_sched_find_nonfinite(ctx, m->fn, "X", X, &b0, &i0, &j0, &st))
    return not_finite(ctx, m->fn, "X", b0, i0, j0);
  for (int64_t b = 0; st == GSTAT_OK && m->inverted && b < m->batch; b++)
    if (m->bad[b]) {
      gstat_matrix sb = gstat_i_batch_part(S, b, 1);
      st = check_lower(ctx, m->fn, &sb, b);
    }
  return st;
}

/* Every element's distances into D (X in the memory of F and D:
 * chain_memory), checked, then into d2. */
static gstat_status distances(gstat_ctx *ctx, maha *m, const gstat_matrix *X, const gstat_matrix *S,
                              gstat_matrix *d2, gstat_matrix *F, gstat_matrix *D) {
  const gstat_matrix *T;
  gstat_status st = factor(ctx, m, X, S, F, &T);
  for (int64_t b = 0; st == GSTAT_OK && b < m->batch; b++) {
    gstat_matrix db = gstat_i_batch_part(D, b, 1);
    m->bad[b] = 0;
    if (m->info[b] != 0 || m->p == 0) { /* NaN for a failed factor, 0 for an empty sum */
      /* its rows are not reduced, so a NaN/Inf of X there would not show */
      m->bad[b] = m->info[b] != 0;
      for (int64_t r = 0; r < m->n; r++) m->fill[r] = m->info[b] != 0 ? NAN : 0.0;
      st = gstat_i_sched_store(ctx, m->fn, "d2", GSTAT_F64, m->fill, m->n, &db, 0);
      continue;
    }
    gstat_matrix tb = gstat_i_batch_part(T, b, 1);
    gstat_matrix cb = m->cvec ? gstat_i_batch_part(m->cvec, b, 1) : (gstat_matrix){0};
    gstat_i_rows_req r = {.X = X,
                          .b = b,
                          .center = m->c ? m->c + b * m->p : NULL,
                          .center_vec = m->cvec ? &cb : NULL,
                          .L = m->inverted ? NULL : &tb,
                          .Q = m->inverted ? &tb : NULL,
                          .d = &db,
                          .sums = m->sums};
    st = gstat_i_sched_rows(ctx, m->fn, &r);
    m->bad[b] = !isfinite(m->sums[0]);
  }
  if (st == GSTAT_OK) st = check_sums(ctx, m, X, S);
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, m->fn, "d2", D, d2);
  return st;
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
  gstat_i_staged hx = {0};
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(gstat_i_check_matrix(ctx, fn, "X", X));
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  TRY(gstat_i_check_shape(ctx, fn, "S", S, batch, p, p));
  TRY(gstat_i_check_shape(ctx, fn, "d2", d2, batch, n, 1));
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
  maha m = {.fn = fn,
            .batch = batch,
            .n = n,
            .p = p,
            .inverted = inverted,
            .ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32};
  int64_t b0, i0, j0;
  gstat_i_ws_plan pl = {0, true};
  size_t o_c = gstat_i_ws_take(&pl, center ? batch * p : 0, sizeof(double));
  size_t o_info = gstat_i_ws_take(&pl, batch, sizeof(int64_t));
  size_t o_fill = gstat_i_ws_take(&pl, n, sizeof(double));
  size_t o_bad = gstat_i_ws_take(&pl, batch, 1);
  char *ws = pl.ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl.size) : NULL;
  if (!ws) {
    st = pl.ok ? gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn,
                              pl.size)
               : gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
    goto done;
  }
  m.c = center ? (double *)(ws + o_c) : NULL;
  m.info = (int64_t *)(ws + o_info);
  m.fill = (double *)(ws + o_fill);
  m.bad = (unsigned char *)(ws + o_bad);
  if (ctx->opt.check_finite && S->location == GSTAT_HOST &&
      gstat_i_find_nonfinite(S, GSTAT_I_TRI_LOWER, &b0, &i0, &j0)) {
    st = not_finite(ctx, fn, "S", b0, i0, j0);
    goto done;
  }
  gstat_matrix F, D;
  st = chain_memory(ctx, &m, X, &F, &D);
  if (st == GSTAT_EUNSUPPORTED || st == GSTAT_ENOMEM) { /* no device memory: host copies */
    ctx->last_error[0] = '\0';
    TRY(gstat_i_sched_stage(ctx, fn, "X", X, true, &hx));
    X = &hx.m;
    st = chain_memory(ctx, &m, X, &F, &D);
  }
  TRY(st);
  if (center && same_memory(center, X)) { /* read there by the rows primitive */
    m.cvec = center;
    m.c = NULL;
  } else if (center)
    TRY(load_centers(ctx, &m, center));
  TRY(distances(ctx, &m, X, S, d2, &F, &D));
  int64_t failed = 0, first = -1;
  for (int64_t b = 0; b < batch; b++)
    if (m.info[b] != 0) {
      if (first < 0) first = b;
      failed++;
    }
  if (failed == 1)
    st = gstat_i_fail(ctx, GSTAT_ENOTPD,
                      "%s: batch element %" PRId64
                      " of S is not positive definite (leading minor of order %" PRId64 ")",
                      fn, first, m.info[first]);
  else if (failed > 1)
    st = gstat_i_fail(ctx, GSTAT_ENOTPD,
                      "%s: batch element %" PRId64
                      " of S is not positive definite (leading minor of order %" PRId64
                      "); %" PRId64 " of %" PRId64 " elements failed",
                      fn, first, m.info[first], failed, batch);
done:
  gstat_i_sched_release(ctx, &hx);
  return st;
}
