/*
 * A batch of covariance matrices, their eigendecomposition and Cholesky
 * factors, and the residuals that show the results are right.
 *
 * 8 groups of 200 observations of 6 variables: the covariance of each group
 * is formed here (two-pass), then gstat_eigh and gstat_cholesky run on the
 * whole batch at once.
 */
#include <gstat/gstat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { GROUPS = 8, OBS = 200, VARS = 6 };

static double uniform(unsigned long long *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) * 0x1.0p-53;
}

/* Covariance (divisor n - 1) of x, OBS x VARS row-major, into c (row-major). */
static void covariance(const double *x, double *c) {
  double mean[VARS] = {0};
  for (int i = 0; i < OBS; i++)
    for (int j = 0; j < VARS; j++) mean[j] += x[i * VARS + j] / OBS;
  for (int j = 0; j < VARS; j++)
    for (int k = 0; k < VARS; k++) {
      double s = 0;
      for (int i = 0; i < OBS; i++) s += (x[i * VARS + j] - mean[j]) * (x[i * VARS + k] - mean[k]);
      c[j * VARS + k] = s / (OBS - 1);
    }
}

int main(void) {
  static double x[OBS * VARS], cov[GROUPS * VARS * VARS], w[GROUPS * VARS];
  static double v[GROUPS * VARS * VARS], l[GROUPS * VARS * VARS];
  unsigned long long seed = 42;
  for (int g = 0; g < GROUPS; g++) {
    /* correlated variables: each one leans on the one before */
    for (int i = 0; i < OBS; i++)
      for (int j = 0; j < VARS; j++)
        x[i * VARS + j] = (uniform(&seed) - 0.5) * (1 + g) + (j ? 0.8 * x[i * VARS + j - 1] : 0);
    covariance(x, cov + g * VARS * VARS);
  }

  gstat_ctx *ctx;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return 1;
  gstat_matrix C = gstat_matrix_row_major(cov, GSTAT_F64, GROUPS, VARS, VARS);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, GROUPS, VARS);
  gstat_matrix V = gstat_matrix_row_major(v, GSTAT_F64, GROUPS, VARS, VARS);
  gstat_matrix L = gstat_matrix_row_major(l, GSTAT_F64, GROUPS, VARS, VARS);
  int64_t info[GROUPS];
  gstat_status st = gstat_eigh(ctx, &C, GSTAT_LOWER, &W, &V, info);
  if (st == GSTAT_OK) st = gstat_cholesky(ctx, &C, GSTAT_LOWER, &L, info);
  if (st != GSTAT_OK) {
    fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(ctx));
    gstat_ctx_destroy(ctx);
    return 1;
  }

  printf("gstat %s, backend %s: %d covariance matrices of %d variables\n", gstat_version_string(),
         gstat_ctx_last_backend_name(ctx), GROUPS, VARS);
  printf("%5s %12s %12s %14s %14s\n", "group", "min eig", "max eig", "|C-VWV'|max", "|C-LL'|max");
  for (int g = 0; g < GROUPS; g++) {
    const double *c = cov + g * VARS * VARS, *vg = v + g * VARS * VARS, *lg = l + g * VARS * VARS;
    const double *wg = w + g * VARS;
    double re = 0, rc = 0;
    for (int i = 0; i < VARS; i++)
      for (int j = 0; j < VARS; j++) {
        double e = 0, f = 0;
        for (int k = 0; k < VARS; k++) {
          e += vg[i * VARS + k] * wg[k] * vg[j * VARS + k];
          f += lg[i * VARS + k] * lg[j * VARS + k];
        }
        re = fmax(re, fabs(c[i * VARS + j] - e));
        rc = fmax(rc, fabs(c[i * VARS + j] - f));
      }
    printf("%5d %12.6f %12.6f %14.3e %14.3e\n", g, wg[0], wg[VARS - 1], re, rc);
  }
  gstat_ctx_destroy(ctx);
  return 0;
}
