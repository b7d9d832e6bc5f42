/* .Call glue for PCA: gstat_pca on R's column-major data (no copy), results
 * reshaped into prcomp's fields. */
#include <math.h>
#include <string.h>

#include "rgstat.h"

SEXP rg_pca(SEXP x, SEXP center, SEXP scale, SEXP k, SEXP method, SEXP seed) {
  static const char *names[] = {"sdev",   "rotation",      "x", "center", "scale",
                                "method", "total_variance"};
  static const char *methods[] = {"auto", "covariance", "gram", "randomized"};
  int64_t n, p;
  double *xd = rg_real_matrix(x, "x", &n, &p);
  gstat_pca_options opt;
  gstat_pca_options_init(&opt);
  opt.center = Rf_asLogical(center) == TRUE;
  opt.scale = Rf_asLogical(scale) == TRUE;
  opt.n_components = rg_int(k, "rank.");
  opt.method = (gstat_pca_method)rg_int(method, "method");
  opt.seed = (uint64_t)rg_double(seed, "seed");
  gstat_matrix X = rg_colmajor(xd, 1, n, p);
  gstat_pca_result *res = NULL;
  rg_call c;
  rg_begin(&c, "gs_prcomp");
  gstat_status st = gstat_pca(c.ctx, &X, &opt, &res);
  if (st != GSTAT_OK) gstat_pca_result_free(res);
  rg_check(&c, st);
  rg_end(&c);

  int64_t kk = res->n_components;
  SEXP out = PROTECT(rg_named_list(7, names));
  SEXP sdev = Rf_allocVector(REALSXP, kk);
  SET_VECTOR_ELT(out, 0, sdev);
  /* prcomp: singular values / sqrt(max(1, n - 1)) */
  double div = sqrt(n > 1 ? (double)(n - 1) : 1.0);
  for (int64_t i = 0; i < kk; i++) REAL(sdev)[i] = res->singular_values[i] / div;
  /* components are row-major k x p: the same bytes as a column-major p x k */
  SEXP rot = Rf_allocMatrix(REALSXP, (int)p, (int)kk);
  SET_VECTOR_ELT(out, 1, rot);
  if (kk > 0) memcpy(REAL(rot), res->components, (size_t)(p * kk) * sizeof(double));
  SEXP scores = Rf_allocMatrix(REALSXP, (int)n, (int)kk);
  SET_VECTOR_ELT(out, 2, scores);
  /* row-major n x k into R's column-major, in 32 x 32 tiles (a plain loop
   * strides through one side at every element: slow for wide scores) */
  double *sc = REAL(scores);
  for (int64_t r0 = 0; r0 < n; r0 += 32)
    for (int64_t i0 = 0; i0 < kk; i0 += 32) {
      int64_t r1 = r0 + 32 < n ? r0 + 32 : n, i1 = i0 + 32 < kk ? i0 + 32 : kk;
      for (int64_t i = i0; i < i1; i++)
        for (int64_t r = r0; r < r1; r++) sc[r + i * n] = res->scores[r * kk + i];
    }
  SEXP mean = Rf_allocVector(REALSXP, p);
  SET_VECTOR_ELT(out, 3, mean);
  memcpy(REAL(mean), res->mean, (size_t)p * sizeof(double));
  SEXP scl = Rf_allocVector(REALSXP, p);
  SET_VECTOR_ELT(out, 4, scl);
  memcpy(REAL(scl), res->scale, (size_t)p * sizeof(double));
  int m = (int)res->method;
  SET_VECTOR_ELT(out, 5, Rf_mkString(m >= 0 && m <= 3 ? methods[m] : "unknown"));
  SET_VECTOR_ELT(out, 6, Rf_ScalarReal(res->total_variance[0]));
  gstat_pca_result_free(res);
  UNPROTECT(1);
  return out;
}
