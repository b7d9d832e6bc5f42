/* The PCA result object: one memory block for all arrays, reused across
 * calls of the same (or smaller) shape; plus helpers every method shares. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/dense.h"
#include "core/internal.h"
#include "core/sign_rule.h"
#include "pca/pca_internal.h"

#define TRY(expr)                  \
  do {                             \
    gstat_status s_ = (expr);      \
    if (s_ != GSTAT_OK) return s_; \
  } while (0)

/* The public struct first, so a gstat_pca_result * is a result_block *. */
typedef struct result_block {
  gstat_pca_result pub;
  double *block;
  size_t capacity; /* doubles */
} result_block;

/* *total += a * b * c, false on overflow. */
static bool add_mul(size_t *total, int64_t a, int64_t b, int64_t c) {
  size_t ab, abc;
  return gstat_i_mul_size((size_t)a, (size_t)b, &ab) && gstat_i_mul_size(ab, (size_t)c, &abc) &&
         gstat_i_add_size(*total, abc, total);
}

gstat_status gstat_i_pca_result_prepare(gstat_ctx *ctx, const char *fn, gstat_pca_result **res,
                                        int64_t batch, int64_t n, int64_t p, int64_t k,
                                        bool scores) {
  size_t need = 0;
  bool ok = add_mul(&need, batch, k, p) && add_mul(&need, batch, k, 3) &&
            add_mul(&need, batch, p, 2) && add_mul(&need, batch, 2, 1) &&
            (!scores || add_mul(&need, batch, n, k));
  if (!ok || need > SIZE_MAX / sizeof(double))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: result size overflows", fn);
  result_block *r = (result_block *)*res;
  if (!r) {
    r = calloc(1, sizeof *r);
    if (!r) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the result", fn);
  }
  if (r->capacity < need) {
    double *block = malloc((need ? need : 1) * sizeof(double));
    if (!block) {
      if (!*res) free(r);
      return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes for the result", fn,
                          need * sizeof(double));
    }
    free(r->block);
    r->block = block;
    r->capacity = need;
  }
  double *q = r->block;
  gstat_pca_result *pub = &r->pub;
  pub->batch = batch;
  pub->n_samples = n;
  pub->n_features = p;
  pub->n_components = k;
  pub->components = q, q += batch * k * p;
  pub->explained_variance = q, q += batch * k;
  pub->explained_variance_ratio = q, q += batch * k;
  pub->singular_values = q, q += batch * k;
  pub->mean = q, q += batch * p;
  pub->scale = q, q += batch * p;
  pub->noise_variance = q, q += batch;
  pub->total_variance = q, q += batch;
  pub->scores = scores ? q : NULL;
  *res = pub;
  return GSTAT_OK;
}

void gstat_pca_result_free(gstat_pca_result *res) {
  if (!res) return;
  result_block *r = (result_block *)res;
  free(r->block);
  free(r);
}

void gstat_i_pca_fix_signs(double *comp, int64_t k, int64_t p) {
  for (int64_t i = 0; i < k; i++) {
    double *row = comp + i * p;
    /* a NaN in front decides (no flip), as the rule's first comparing pass did */
    int64_t at = isnan(row[0]) ? 0 : gstat_i_first_abs_max_f64(row, p);
    if (at < p && row[at] < 0)
      for (int64_t j = 0; j < p; j++) row[j] = -row[j];
  }
}

double gstat_i_pca_norm(const double *v, int64_t p) {
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= p; j += 4)
    for (int t = 0; t < 4; t++) s[t] += v[j + t] * v[j + t];
  for (; j < p; j++) s[0] += v[j] * v[j];
  return sqrt((s[0] + s[1]) + (s[2] + s[3]));
}

/* For row i and each block B of at most 64 rows before it, c = U_B^T r and
 * r -= U_B c, U being the rows as the columns of a p x k column-major
 * matrix; twice (Kahan: twice is enough). Through BLAS: a scalar loop's dot
 * products are chains of dependent additions, milliseconds at p = 20000
 * (bench/README.md, "Where the Gram row's host time went"). */
static gstat_status gram_schmidt_twice(gstat_ctx *ctx, double *comp, int64_t k, int64_t p) {
  enum { BLOCK = 64 };
  double c[BLOCK]; /* on the stack: a reused result allocates nothing */
  for (int64_t i = 1; i < k; i++) {
    double *row = comp + i * p;
    for (int pass = 0; pass < 2; pass++)
      for (int64_t q0 = 0; q0 < i; q0 += BLOCK) {
        int64_t m = i - q0 < BLOCK ? i - q0 : BLOCK;
        const double *U = comp + q0 * p;
        gstat_status st = gstat_i_gemm(ctx, GSTAT_F64, GSTAT_TRANS, GSTAT_NO_TRANS, m, 1, p, 1.0, U,
                                       p, row, p, 0.0, c, m);
        if (st == GSTAT_OK)
          st = gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, p, 1, m, -1.0, U, p, c,
                            m, 1.0, row, p);
        if (st != GSTAT_OK) return st;
      }
    double nrm = gstat_i_pca_norm(row, p);
    for (int64_t j = 0; j < p; j++) row[j] /= nrm;
  }
  return GSTAT_OK;
}

/* One Cholesky QR step on the rows of V (p x k column-major: row i of the
 * components is column i): C = V^T V = L L^T (dense.h's potrf), W := V L^-T
 * (the small inverse by trsm, then one product), Gram-Schmidt of the rows
 * in their order as BLAS-3 calls. ws: 2 k^2 doubles. *offset: the largest
 * |L - I| entry, how far V was from orthonormal; *ok false when C is not
 * numerically positive definite. */
static gstat_status cholesky_qr_step(gstat_ctx *ctx, const double *V, int64_t k, int64_t p,
                                     double *ws, double *W, bool *ok, double *offset) {
  double *L = ws, *Lit = ws + k * k;
  int64_t info = 0;
  TRY(gstat_i_gemm(ctx, GSTAT_F64, GSTAT_TRANS, GSTAT_NO_TRANS, k, k, p, 1.0, V, p, V, p, 0.0, L,
                   k));
  TRY(gstat_i_potrf(ctx, GSTAT_F64, k, L, k, &info));
  *ok = info == 0;
  if (!*ok) return GSTAT_OK;
  *offset = 0;
  for (int64_t j = 0; j < k; j++)
    for (int64_t i = j; i < k; i++) {
      *offset = fmax(*offset, fabs(L[i + j * k] - (i == j ? 1.0 : 0.0)));
      Lit[i + j * k] = Lit[j + i * k] = i == j;
    }
  TRY(gstat_i_trsm(ctx, GSTAT_F64, true, GSTAT_LOWER, GSTAT_TRANS, GSTAT_NON_UNIT, k, k, 1.0, L, k,
                   Lit, k));
  return gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, p, k, k, 1.0, V, p, Lit, k,
                      0.0, W, p);
}

/* Rows orthonormal in their order by Cholesky QR: three BLAS-3 calls a step
 * in place of Gram-Schmidt's 4 (k - 1) matrix-vector ones (bench/README.md,
 * "The components' Cholesky QR"). A step's loss of orthogonality is about
 * eps cond(V)^2: the rows come in nearly orthonormal (off by eps_X
 * (sigma_1 / sigma_i)^2), where one step reaches rounding; a second step
 * when they were further off; Gram-Schmidt twice when the second step is
 * still far from the identity or the rows are not numerically independent. */
gstat_status gstat_i_pca_orthonormalize_rows(gstat_ctx *ctx, double *comp, int64_t k, int64_t p) {
  if (k < 2) return GSTAT_OK;
  double *ws = gstat_i_workspace(ctx, GSTAT_WS_COV, sizeof(double) * (size_t)(2 * k * k + k * p));
  if (!ws) return gram_schmidt_twice(ctx, comp, k, p);
  double *W = ws + 2 * k * k, offset = 0;
  bool ok;
  TRY(cholesky_qr_step(ctx, comp, k, p, ws, W, &ok, &offset));
  if (ok && offset < 1e-3) {
    memcpy(comp, W, sizeof(double) * (size_t)(k * p));
    return GSTAT_OK;
  }
  if (ok) TRY(cholesky_qr_step(ctx, W, k, p, ws, comp, &ok, &offset));
  if (ok && offset < 1e-4) return GSTAT_OK;
  return gram_schmidt_twice(ctx, comp, k, p); /* comp: V itself or two steps on */
}

void gstat_i_pca_complete_row(double *comp, int64_t i, int64_t p) {
  double *v = comp + i * p;
  for (int64_t axis = 0; axis < p; axis++) {
    for (int64_t j = 0; j < p; j++) v[j] = j == axis ? 1.0 : 0.0;
    for (int pass = 0; pass < 2; pass++) /* twice is enough (Kahan) */
      for (int64_t q = 0; q < i; q++) {
        const double *u = comp + q * p;
        double dot = 0;
        for (int64_t j = 0; j < p; j++) dot += u[j] * v[j];
        for (int64_t j = 0; j < p; j++) v[j] -= dot * u[j];
      }
    double nrm = 0;
    for (int64_t j = 0; j < p; j++) nrm += v[j] * v[j];
    nrm = sqrt(nrm);
    if (nrm > 0.5) { /* this axis has a large part outside the span so far */
      for (int64_t j = 0; j < p; j++) v[j] /= nrm;
      return;
    }
  }
}
