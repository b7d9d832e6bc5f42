/*
 * The mergeable streaming covariance accumulator. Each chunk, shifted by the
 * accumulator's fixed shift (see accum.h), is centered on its own (two-pass)
 * mean and its co-moment formed by syrk, then merged by Chan, Golub and
 * LeVeque's pairwise update:
 *   W = Wa + Wb, d = mean_b - mean_a, mean += d Wb / W,
 *   M = Ma + Mb + d d^T Wa Wb / W,
 * so any split of the rows gives the one-pass result to rounding, and no
 * E[XY] - E[X]E[Y] cancellation ever happens.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/dense.h"
#include "backend/sched.h"
#include "pca/accum.h"
#include "pca/data.h"

/* Exported state: a header (magic, version, p, missing, rows, skipped,
 * weight, anchored), the p shifts, the p means minus shift, then the lower
 * triangle of M packed by columns. The magic number catches a wrong array. */
enum { STATE_HEADER = 8, STATE_VERSION = 1 };
static const double state_magic = 1735619681.0; /* "gsta" */

#define TRY(expr)                  \
  do {                             \
    st = (expr);                   \
    if (st != GSTAT_OK) goto done; \
  } while (0)

static char *workspace(gstat_ctx *ctx, const char *fn, const gstat_i_ws_plan *pl) {
  char *ws = pl->ok ? gstat_i_workspace(ctx, GSTAT_WS_COV, pl->size) : NULL;
  if (ws) return ws;
  if (pl->ok)
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn, pl->size);
  else
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the workspace size overflows", fn);
  return NULL;
}

gstat_status gstat_cov_accum_create(gstat_ctx *ctx, int64_t p, gstat_missing missing,
                                    gstat_cov_accum **acc) {
  static const char fn[] = "cov_accum_create";
  gstat_status st = GSTAT_OK;
  gstat_cov_accum *a = NULL;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!acc) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: acc is NULL", fn);
    goto done;
  }
  if (p < 1) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: p=%" PRId64 " must be >= 1", fn, p);
    goto done;
  }
  if (missing == GSTAT_MISSING_PAIRWISE) {
    st = gstat_i_fail(
        ctx, GSTAT_EUNSUPPORTED,
        "%s: GSTAT_MISSING_PAIRWISE cannot be accumulated (use EVERYTHING or COMPLETE)", fn);
    goto done;
  }
  if (missing != GSTAT_MISSING_EVERYTHING && missing != GSTAT_MISSING_COMPLETE) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: missing=%d is not a gstat_missing", fn, (int)missing);
    goto done;
  }
  size_t pp;
  if (!gstat_i_mul_size((size_t)p, (size_t)p, &pp) || pp > SIZE_MAX / sizeof(double)) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: p=%" PRId64 " is too large", fn, p);
    goto done;
  }
  a = calloc(1, sizeof *a);
  if (a) {
    a->shift = calloc((size_t)p, sizeof(double));
    a->dmean = calloc((size_t)p, sizeof(double));
    a->mean = calloc((size_t)p, sizeof(double));
    a->comoment = calloc(pp, sizeof(double));
  }
  if (!a || !a->shift || !a->dmean || !a->mean || !a->comoment) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the accumulator for p=%" PRId64, fn,
                      p);
    goto done;
  }
  a->p = p;
  a->missing = missing;
  *acc = a;
  a = NULL;
done:
  gstat_cov_accum_destroy(a);
  return st;
}

void gstat_cov_accum_destroy(gstat_cov_accum *acc) {
  if (!acc) return;
  free(acc->shift);
  free(acc->dmean);
  free(acc->mean);
  free(acc->comoment);
  free(acc);
}

void gstat_cov_accum_reset(gstat_cov_accum *acc) {
  if (!acc) return;
  acc->rows = acc->skipped = 0;
  acc->weight = 0;
  acc->anchored = false;
  memset(acc->shift, 0, sizeof(double) * (size_t)acc->p);
  memset(acc->dmean, 0, sizeof(double) * (size_t)acc->p);
  memset(acc->mean, 0, sizeof(double) * (size_t)acc->p);
  memset(acc->comoment, 0, sizeof(double) * (size_t)acc->p * (size_t)acc->p);
}

int64_t gstat_cov_accum_dim(const gstat_cov_accum *acc) {
  return acc ? acc->p : 0;
}
int64_t gstat_cov_accum_rows(const gstat_cov_accum *acc) {
  return acc ? acc->rows : 0;
}
int64_t gstat_cov_accum_rows_skipped(const gstat_cov_accum *acc) {
  return acc ? acc->skipped : 0;
}
double gstat_cov_accum_weight(const gstat_cov_accum *acc) {
  return acc ? acc->weight : 0.0;
}

/* Whether acc can take `rows` and `skipped` more rows of total weight `w`
 * and stay exportable: merge_state accepts counts up to 2^53 (exact in a
 * double) and a finite weight, so a state the library wrote must stay within
 * them, else an export would be an array no import takes. */
static gstat_status check_room(gstat_ctx *ctx, const char *fn, const gstat_cov_accum *acc,
                               int64_t rows, int64_t skipped, double w) {
  const int64_t max_count = INT64_C(1) << 53; /* operands <= 2^53: the sums cannot overflow */
  if (acc->rows + rows > max_count || acc->skipped + skipped > max_count)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: more than 2^53 rows in one accumulator", fn);
  if (!isfinite(acc->weight + w))
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: the total weight overflows (%g + %g is not a finite double)", fn,
                        acc->weight, w);
  return GSTAT_OK;
}

/* acc <- acc merged with b = (rows, skipped, wb, shift_b, dmean_b, Mb);
 * shift_b NULL: b never saw a row (it only counts skipped ones). delta is p
 * scratch doubles. b's arrays may be acc's own (a merge with itself): d is
 * taken before dmean changes, and each M entry of the lower triangle reads
 * only its own Mb entry before the upper one is written. */
static void merge_into(gstat_cov_accum *acc, int64_t rows, int64_t skipped, double wb,
                       const double *shift_b, const double *dmean_b, const double *mb,
                       double *delta) {
  int64_t p = acc->p;
  acc->rows += rows;
  acc->skipped += skipped;
  if (!shift_b) return;
  if (!acc->anchored) { /* empty: take b's shift, so d below is exactly b's */
    memmove(acc->shift, shift_b, sizeof(double) * (size_t)p);
    acc->anchored = true;
  }
  double wa = acc->weight, w = wa + wb;
  /* w == 0: both weightless; the factors are 0 and only NaN marks travel */
  double f = w > 0 ? wb / w : 0.0, g = w > 0 ? wa * (wb / w) : 0.0;
  for (int64_t i = 0; i < p; i++)
    delta[i] = (shift_b[i] - acc->shift[i]) + (dmean_b[i] - acc->dmean[i]);
  for (int64_t i = 0; i < p; i++) {
    acc->dmean[i] += delta[i] * f;
    acc->mean[i] = acc->shift[i] + acc->dmean[i];
  }
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = j; i < p; i++) {
      double v = acc->comoment[i + j * p] + mb[i + j * p] + g * delta[i] * delta[j];
      acc->comoment[i + j * p] = acc->comoment[j + i * p] = v;
    }
  acc->weight = w;
}

/* Add host rows X (1 x n x p, 1 <= n, one row block of gstat_cov_accum_add) to acc. */
static gstat_status add_host_rows(gstat_ctx *ctx, gstat_cov_accum *acc, const gstat_matrix *X,
                                  const double *weights, const char *fn) {
  gstat_status st = GSTAT_OK;
  int64_t n = X->rows, p = acc->p;
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, sizeof(double));
  size_t o_w = gstat_i_ws_take(&pl, n, sizeof(double));
  size_t o_m = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_keep = gstat_i_ws_take(&pl, n, 1);
  char *ws = workspace(ctx, fn, &pl);
  if (!ws) {
    st = GSTAT_ENOMEM;
    goto done;
  }
  double *x = (double *)(ws + o_x), *w = (double *)(ws + o_w), *mb = (double *)(ws + o_m);
  double *mean = (double *)(ws + o_mean), *delta = (double *)(ws + o_d);
  unsigned char *keep = (unsigned char *)(ws + o_keep);

  /* float64 throughout, whatever the input dtype */
  gstat_i_dense_load(X, 0, GSTAT_F64, x, n);
  int64_t m = n;
  if (acc->missing == GSTAT_MISSING_COMPLETE) {
    memset(keep, 1, (size_t)n);
    for (int64_t j = 0; j < p; j++)
      for (int64_t r = 0; r < n; r++)
        if (isnan(x[r + j * n])) keep[r] = 0;
    m = 0;
    for (int64_t r = 0; r < n; r++) m += keep[r];
    if (m < n) { /* pack the complete rows (in place: destinations never pass sources) */
      for (int64_t j = 0; j < p; j++) {
        int64_t d = j * m;
        for (int64_t r = 0; r < n; r++)
          if (keep[r]) x[d++] = x[r + j * n];
      }
    }
  }
  double wsum = 0;
  for (int64_t r = 0, k = 0; r < n; r++) {
    if (acc->missing == GSTAT_MISSING_COMPLETE && !keep[r]) continue;
    w[k] = weights ? weights[r] : 1.0;
    wsum += w[k++];
  }
  if (m == 0) { /* every row skipped */
    acc->skipped += n;
    goto done;
  }
  if (!acc->anchored) { /* the shift: each column's first finite value */
    for (int64_t j = 0; j < p; j++) {
      acc->shift[j] = 0.0;
      for (int64_t r = 0; r < m; r++)
        if (isfinite(x[r + j * m])) {
          acc->shift[j] = x[r + j * m];
          break;
        }
    }
    acc->anchored = true;
  }
  gstat_i_center_scale(GSTAT_F64, m, p, x, acc->shift, NULL);
  if (wsum > 0) {
    gstat_i_col_means(GSTAT_F64, m, p, x, weights ? w : NULL, wsum, mean);
    gstat_i_exact_constant_means(GSTAT_F64, m, p, x, mean);
    gstat_i_center_scale(GSTAT_F64, m, p, x, mean, NULL);
    if (weights) {
      for (int64_t r = 0; r < m; r++) w[r] = sqrt(w[r]);
      gstat_i_scale_rows(GSTAT_F64, m, p, x, w);
    }
    TRY(gstat_i_syrk(ctx, GSTAT_F64, GSTAT_TRANS, p, m, 1.0, x, m, 0.0, mb, p));
  } else {
    /* no weight: contributes nothing but the NaN marks of its columns */
    memset(mb, 0, sizeof(double) * (size_t)(p * p));
    for (int64_t j = 0; j < p; j++) {
      mean[j] = 0.0;
      for (int64_t r = 0; r < m; r++)
        if (isnan(x[r + j * m])) mean[j] = NAN;
    }
  }
  for (int64_t j = 0; j < p; j++) /* a NaN (or unchecked Inf) poisons its row and column */
    if (!isfinite(mean[j])) {
      mean[j] = NAN;
      for (int64_t k = 0; k < p; k++) mb[j + k * p] = mb[k + j * p] = NAN;
    }
  merge_into(acc, m, n - m, wsum, acc->shift, mean, mb, delta);
  ctx->last_backends |= GSTAT_RAN_CPU;
done:
  return st;
}

/* Rows in CUDA memory whose weights sum to 0: only their columns' NaN
 * marks count, read from a host copy by the host path. */
static gstat_status add_device_copy(gstat_ctx *ctx, gstat_cov_accum *acc, const gstat_matrix *X,
                                    const double *weights, const char *fn) {
  gstat_i_staged h;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "X", X, true, &h);
  if (st == GSTAT_OK) st = add_host_rows(ctx, acc, &h.m, weights, fn);
  gstat_i_sched_release(ctx, &h);
  return st;
}

/* Add rows in CUDA memory: mean and co-moment where they lie (the
 * scheduler's fused co-moment, or with weights or missing = COMPLETE its
 * NaN-row scan and weighted co-moment of the kept rows), merged here. */
static gstat_status add_device_rows(gstat_ctx *ctx, gstat_cov_accum *acc, const gstat_matrix *X,
                                    const double *weights, const char *fn) {
  gstat_status st = GSTAT_OK;
  int64_t n = X->rows, p = acc->p;
  if (n == 0) return GSTAT_OK;
  gstat_i_ws_plan pl = {0, true};
  size_t o_m = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_shift = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_keep = gstat_i_ws_take(&pl, n, 1);
  char *ws = workspace(ctx, fn, &pl);
  if (!ws) return GSTAT_ENOMEM;
  double *mb = (double *)(ws + o_m), *mean = (double *)(ws + o_mean);
  double *shift = (double *)(ws + o_shift), *delta = (double *)(ws + o_d);
  unsigned char *keep = NULL;
  int64_t m = n, inf_at;
  if (acc->missing == GSTAT_MISSING_COMPLETE) {
    keep = (unsigned char *)(ws + o_keep);
    TRY(gstat_i_sched_nan_rows(ctx, fn, X, 0, keep, &inf_at));
    m = 0;
    for (int64_t r = 0; r < n; r++) m += keep[r] != 0;
  }
  double wsum = 0;
  for (int64_t r = 0; r < n; r++)
    if (!keep || keep[r]) wsum += weights ? weights[r] : 1.0;
  if (m == 0) { /* every row skipped */
    acc->skipped += n;
    return GSTAT_OK;
  }
  if (!(wsum > 0)) return add_device_copy(ctx, acc, X, weights, fn);
  if (weights || keep)
    TRY(gstat_i_sched_wcomoment(ctx, fn, X, 0, weights, keep, false, mean, mb));
  else
    TRY(gstat_i_sched_comoment(ctx, fn, X, 0, mean, mb, NULL));
  /* the chunk's mean is its shift; a column with NaN/Inf is poisoned, as on the host */
  for (int64_t j = 0; j < p; j++) {
    if (isfinite(mean[j])) {
      shift[j] = mean[j];
      mean[j] = 0.0;
      continue;
    }
    if (ctx->opt.check_finite)
      return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                          "%s: X (CUDA memory) has a NaN or Inf in column %" PRId64, fn, j);
    shift[j] = 0.0;
    mean[j] = NAN;
    for (int64_t k = 0; k < p; k++) mb[j + k * p] = mb[k + j * p] = NAN;
  }
  merge_into(acc, m, n - m, wsum, shift, mean, mb, delta);
done:
  return st;
}

gstat_status gstat_cov_accum_add(gstat_ctx *ctx, gstat_cov_accum *acc, const gstat_matrix *X,
                                 const double *weights) {
  static const char fn[] = "cov_accum_add";
  gstat_status st = GSTAT_OK;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!acc) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: acc is NULL", fn);
    goto done;
  }
  TRY(gstat_i_check_matrix(ctx, fn, "X", X));
  int64_t n = X->rows, p = acc->p;
  if (X->batch != 1 || X->cols != p) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: X is %" PRId64 " x %" PRId64 " x %" PRId64
                      ", expected 1 x rows x %" PRId64,
                      fn, X->batch, X->rows, X->cols, p);
    goto done;
  }
  TRY(gstat_i_check_weights(ctx, fn, "weights", weights, n, false));
  if (n == 0) goto done;
  double wsum = weights ? 0.0 : (double)n;
  for (int64_t r = 0; weights && r < n; r++) wsum += weights[r];
  TRY(check_room(ctx, fn, acc, n, n, wsum));
  int64_t bi, ri, ci;
  if (X->location == GSTAT_HOST && ctx->opt.check_finite && gstat_i_find_inf(X, &bi, &ri, &ci)) {
    st = gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: X has an infinite value at (%" PRId64 ", %" PRId64 ")", fn, ri, ci);
    goto done;
  }

  if (X->location != GSTAT_HOST) {
    st = add_device_rows(ctx, acc, X, weights, fn);
    goto done;
  }
  /* Row blocks of ~16 Mi values: the float64 workspace stays small (not a
   * copy of the whole chunk) and each block's merge costs only O(p^2). */
  int64_t block = ((int64_t)1 << 24) / p;
  if (block < 1024) block = 1024;
  for (int64_t r0 = 0; r0 < n && st == GSTAT_OK; r0 += block) {
    gstat_matrix part = *X;
    part.rows = n - r0 < block ? n - r0 : block;
    part.data = (char *)X->data + (size_t)(r0 * X->row_stride) * gstat_dtype_size(X->dtype);
    st = add_host_rows(ctx, acc, &part, weights ? weights + r0 : NULL, fn);
  }
done:
  return st;
}

gstat_status gstat_cov_accum_merge(gstat_ctx *ctx, gstat_cov_accum *acc,
                                   const gstat_cov_accum *other) {
  static const char fn[] = "cov_accum_merge";
  gstat_status st = GSTAT_OK;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!acc || !other) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, acc ? "other" : "acc");
    goto done;
  }
  if (other->p != acc->p || other->missing != acc->missing) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: other has p=%" PRId64 ", missing=%d; acc has p=%" PRId64 ", missing=%d",
                      fn, other->p, (int)other->missing, acc->p, (int)acc->missing);
    goto done;
  }
  TRY(check_room(ctx, fn, acc, other->rows, other->skipped, other->weight));
  gstat_i_ws_plan pl = {0, true};
  gstat_i_ws_take(&pl, acc->p, sizeof(double));
  double *delta = (double *)workspace(ctx, fn, &pl);
  if (!delta) {
    st = GSTAT_ENOMEM;
    goto done;
  }
  merge_into(acc, other->rows, other->skipped, other->weight, other->anchored ? other->shift : NULL,
             other->dmean, other->comoment, delta);
done:
  return st;
}

size_t gstat_cov_accum_state_size(int64_t p) {
  size_t tri, total;
  if (p < 1 || !gstat_i_mul_size((size_t)p, (size_t)p + 1, &tri)) return 0;
  tri /= 2;
  if (!gstat_i_add_size(tri, 2 * (size_t)p + STATE_HEADER, &total) ||
      total > SIZE_MAX / sizeof(double))
    return 0;
  return total;
}

gstat_status gstat_cov_accum_export(const gstat_cov_accum *acc, double *state) {
  if (!acc || !state) return GSTAT_EINVAL;
  int64_t p = acc->p;
  state[0] = state_magic;
  state[1] = STATE_VERSION;
  state[2] = (double)p;
  state[3] = (double)acc->missing;
  state[4] = (double)acc->rows;
  state[5] = (double)acc->skipped;
  state[6] = acc->weight;
  state[7] = acc->anchored ? 1.0 : 0.0;
  memcpy(state + STATE_HEADER, acc->shift, sizeof(double) * (size_t)p);
  memcpy(state + STATE_HEADER + p, acc->dmean, sizeof(double) * (size_t)p);
  double *t = state + STATE_HEADER + 2 * p;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = j; i < p; i++) *t++ = acc->comoment[i + j * p];
  return GSTAT_OK;
}

/* A whole number in [0, 2^53]. */
static bool count_ok(double v) {
  return v >= 0 && v <= 9007199254740992.0 && v == floor(v);
}

gstat_status gstat_cov_accum_merge_state(gstat_ctx *ctx, gstat_cov_accum *acc,
                                         const double *state) {
  static const char fn[] = "cov_accum_merge_state";
  gstat_status st = GSTAT_OK;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!acc || !state) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, acc ? "state" : "acc");
    goto done;
  }
  if (state[0] != state_magic || state[1] != STATE_VERSION) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: state is not an array from gstat_cov_accum_export (version %d)", fn,
                      STATE_VERSION);
    goto done;
  }
  int64_t p = acc->p;
  if (state[2] != (double)p || state[3] != (double)acc->missing) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: state has p=%g, missing=%g; acc has p=%" PRId64 ", missing=%d", fn,
                      state[2], state[3], p, (int)acc->missing);
    goto done;
  }
  if (!count_ok(state[4]) || !count_ok(state[5]) || !isfinite(state[6]) || state[6] < 0 ||
      (state[7] != 0 && state[7] != 1)) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: state has invalid counts (rows=%g, skipped=%g, weight=%g)", fn, state[4],
                      state[5], state[6]);
    goto done;
  }
  TRY(check_room(ctx, fn, acc, (int64_t)state[4], (int64_t)state[5], state[6]));
  gstat_i_ws_plan pl = {0, true};
  size_t o_m = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, p, sizeof(double));
  char *ws = workspace(ctx, fn, &pl);
  if (!ws) {
    st = GSTAT_ENOMEM;
    goto done;
  }
  double *mb = (double *)(ws + o_m), *delta = (double *)(ws + o_d);
  const double *t = state + STATE_HEADER + 2 * p;
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = j; i < p; i++) mb[i + j * p] = mb[j + i * p] = *t++;
  merge_into(acc, (int64_t)state[4], (int64_t)state[5], state[6],
             state[7] != 0 ? state + STATE_HEADER : NULL, state + STATE_HEADER + p, mb, delta);
done:
  return st;
}

gstat_status gstat_cov_accum_covariance(gstat_ctx *ctx, const gstat_cov_accum *acc, int64_t ddof,
                                        int correlation, gstat_matrix *C, gstat_matrix *mean) {
  static const char fn[] = "cov_accum_covariance";
  gstat_status st = GSTAT_OK;
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!acc) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: acc is NULL", fn);
    goto done;
  }
  if (!C) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: C is NULL", fn);
    goto done;
  }
  int64_t p = acc->p;
  TRY(gstat_i_check_matrix(ctx, fn, "C", C));
  if (C->batch != 1 || C->rows != p || C->cols != p) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: C is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected 1 x %" PRId64
                      " x %" PRId64,
                      fn, C->batch, C->rows, C->cols, p, p);
    goto done;
  }
  if (mean) {
    TRY(gstat_i_check_matrix(ctx, fn, "mean", mean));
    if (mean->batch != 1 || mean->rows != p || mean->cols != 1) {
      st = gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: mean is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected 1 x %" PRId64
                        " x 1",
                        fn, mean->batch, mean->rows, mean->cols, p);
      goto done;
    }
  }
  TRY(gstat_i_check_alias(ctx, fn, "mean", mean, "C", C, false));
  if (ddof < 0) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: ddof=%" PRId64 " must be >= 0", fn, ddof);
    goto done;
  }
  gstat_i_ws_plan pl = {0, true};
  size_t o_c = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_mean = gstat_i_ws_take(&pl, p, sizeof(double));
  char *ws = workspace(ctx, fn, &pl);
  if (!ws) {
    st = GSTAT_ENOMEM;
    goto done;
  }
  double *c = (double *)(ws + o_c), *mu = (double *)(ws + o_mean);
  memcpy(c, acc->comoment, sizeof(double) * (size_t)(p * p));
  gstat_i_cov_finish(p, c, p, acc->weight - (double)ddof, correlation);
  TRY(gstat_i_sched_store(ctx, fn, "C", GSTAT_F64, c, p, C, 0));
  if (mean) {
    for (int64_t j = 0; j < p; j++) mu[j] = acc->weight > 0 ? acc->mean[j] : NAN;
    TRY(gstat_i_sched_store(ctx, fn, "mean", GSTAT_F64, mu, p, mean, 0));
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
done:
  return st;
}
