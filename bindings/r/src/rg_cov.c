/* .Call glue for covariance, shrinkage and Mahalanobis distances. The data
 * matrix (n observations x p variables) is R's column-major storage as is. */
#include "rgstat.h"

SEXP rg_cov(SEXP x, SEXP missing, SEXP cor, SEXP ddof, SEXP aweights) {
  static const char *names[] = {"cov", "center"};
  int64_t n, p;
  double *xd = rg_real_matrix(x, "x", &n, &p);
  gstat_cov_options opt;
  gstat_cov_options_init(&opt);
  opt.missing = (gstat_missing)rg_int(missing, "missing");
  opt.correlation = Rf_asLogical(cor) == TRUE;
  opt.ddof = rg_int(ddof, "ddof");
  if (aweights != R_NilValue) {
    if (TYPEOF(aweights) != REALSXP || XLENGTH(aweights) != n)
      Rf_error("weights must be a double vector of length nrow(x) = %lld", (long long)n);
    opt.aweights = REAL(aweights);
  }
  SEXP out = PROTECT(rg_named_list(2, names));
  SEXP cm = Rf_allocMatrix(REALSXP, (int)p, (int)p);
  SET_VECTOR_ELT(out, 0, cm);
  SEXP mean = Rf_allocVector(REALSXP, p);
  SET_VECTOR_ELT(out, 1, mean);
  gstat_matrix X = rg_colmajor(xd, 1, n, p), C = rg_colmajor(REAL(cm), 1, p, p);
  gstat_matrix M = gstat_vector_batch(REAL(mean), GSTAT_F64, 1, p);
  rg_call c;
  rg_begin(&c, "gs_cov");
  rg_check(&c, gstat_covariance(c.ctx, &X, &opt, &C, &M));
  rg_end(&c);
  UNPROTECT(1);
  return out;
}

SEXP rg_cov_shrink(SEXP x, SEXP method, SEXP assume_centered) {
  static const char *names[] = {"cov", "shrinkage"};
  int64_t n, p;
  double *xd = rg_real_matrix(x, "x", &n, &p);
  SEXP out = PROTECT(rg_named_list(2, names));
  SEXP cm = Rf_allocMatrix(REALSXP, (int)p, (int)p);
  SET_VECTOR_ELT(out, 0, cm);
  SEXP s = Rf_allocVector(REALSXP, 1);
  SET_VECTOR_ELT(out, 1, s);
  gstat_matrix X = rg_colmajor(xd, 1, n, p), C = rg_colmajor(REAL(cm), 1, p, p);
  rg_call c;
  rg_begin(&c, "gs_cov_shrink");
  rg_check(&c, gstat_cov_shrink(c.ctx, &X, (gstat_shrinkage)rg_int(method, "method"),
                                Rf_asLogical(assume_centered) == TRUE, &C, NULL, REAL(s)));
  rg_end(&c);
  UNPROTECT(1);
  return out;
}

SEXP rg_mahalanobis(SEXP x, SEXP center, SEXP cov, SEXP inverted) {
  int64_t n, p, cr, cc;
  double *xd = rg_real_matrix(x, "x", &n, &p);
  double *sd = rg_real_matrix(cov, "cov", &cr, &cc);
  if (cr != p || cc != p)
    Rf_error("gs_mahalanobis: 'cov' is %lld x %lld, 'x' has %lld columns", (long long)cr,
             (long long)cc, (long long)p);
  if (center != R_NilValue && (TYPEOF(center) != REALSXP || XLENGTH(center) != p))
    Rf_error("gs_mahalanobis: 'center' must have length ncol(x) = %lld", (long long)p);
  SEXP d2 = PROTECT(Rf_allocVector(REALSXP, n));
  gstat_matrix X = rg_colmajor(xd, 1, n, p), S = rg_colmajor(sd, 1, p, p);
  gstat_matrix D = gstat_vector_batch(REAL(d2), GSTAT_F64, 1, n);
  gstat_matrix C = gstat_vector_batch(center == R_NilValue ? NULL : REAL(center), GSTAT_F64, 1, p);
  rg_call c;
  rg_begin(&c, "gs_mahalanobis");
  rg_check(&c, gstat_mahalanobis(c.ctx, &X, center == R_NilValue ? NULL : &C, &S,
                                 Rf_asLogical(inverted) == TRUE, &D));
  rg_end(&c);
  UNPROTECT(1);
  return d2;
}
