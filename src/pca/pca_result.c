/* The PCA result object: one memory block for all arrays, reused across
 * calls of the same (or smaller) shape; plus helpers every method shares. */
#include <math.h>
#include <stdlib.h>

#include "pca/pca_internal.h"

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
    int64_t arg = 0;
    for (int64_t j = 1; j < p; j++)
      if (fabs(row[j]) > fabs(row[arg])) arg = j;
    if (row[arg] < 0)
      for (int64_t j = 0; j < p; j++) row[j] = -row[j];
  }
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
