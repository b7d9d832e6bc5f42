/* .Call glue for eigen, Cholesky and Cholesky solves. Inputs are R's
 * column-major doubles described in place; R reads the lower triangle for
 * eigen() and the upper one for chol(), and so does this glue. */
#define USE_FC_LEN_T /* Fortran string lengths passed as R's headers say */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "rgstat.h"

#include <R_ext/Lapack.h>
#ifndef FCONE
#define FCONE
#endif

/* gstat gives ascending eigenvalues; R's eigen() gives them decreasing. */
static void reverse_order(int64_t n, double *w, double *v) {
  for (int64_t i = 0, j = n - 1; i < j; i++, j--) {
    double t = w[i];
    w[i] = w[j];
    w[j] = t;
    if (v) {
      double *a = v + i * n, *b = v + j * n;
      for (int64_t r = 0; r < n; r++) {
        t = a[r];
        a[r] = b[r];
        b[r] = t;
      }
    }
  }
}

static SEXP eigen_result(SEXP values, SEXP vectors) {
  static const char *names[] = {"values", "vectors"};
  SEXP out = PROTECT(rg_named_list(2, names));
  SET_VECTOR_ELT(out, 0, values);
  SET_VECTOR_ELT(out, 1, vectors);
  UNPROTECT(1);
  return out;
}

SEXP rg_eigen(SEXP x, SEXP only_values) {
  int64_t n, m;
  double *a = rg_real_matrix(x, "x", &n, &m);
  if (n != m) Rf_error("gs_eigen: non-square matrix (%lld x %lld)", (long long)n, (long long)m);
  int vals_only = Rf_asLogical(only_values) == TRUE;
  SEXP values = PROTECT(Rf_allocVector(REALSXP, n));
  SEXP vectors = PROTECT(vals_only ? R_NilValue : Rf_allocMatrix(REALSXP, (int)n, (int)n));
  gstat_matrix A = rg_colmajor(a, 1, n, n);
  gstat_matrix w = gstat_vector_batch(REAL(values), GSTAT_F64, 1, n);
  gstat_matrix V = rg_colmajor(vals_only ? NULL : REAL(vectors), 1, n, n);
  rg_call c;
  rg_begin(&c, "gs_eigen");
  rg_check(&c, gstat_eigh(c.ctx, &A, GSTAT_LOWER, &w, vals_only ? NULL : &V, NULL));
  rg_end(&c);
  reverse_order(n, REAL(values), vals_only ? NULL : REAL(vectors));
  SEXP out = eigen_result(values, vectors);
  UNPROTECT(2);
  return out;
}

/* xs: an n x n x B double array, or a list of B double n x n matrices (the
 * R wrapper groups a list by size). The list is gathered into one batch. */
SEXP rg_eigen_batch(SEXP xs, SEXP only_values) {
  int64_t n, batch;
  double *a;
  int nprot = 0;
  if (TYPEOF(xs) == VECSXP) {
    batch = XLENGTH(xs);
    if (batch == 0) Rf_error("gs_eigen_batch: empty list");
    int64_t r, cc;
    rg_real_matrix(VECTOR_ELT(xs, 0), "every element of xs", &n, &cc);
    SEXP buf = PROTECT(Rf_allocVector(REALSXP, (R_xlen_t)(n * n * batch)));
    nprot++;
    a = REAL(buf);
    for (int64_t b = 0; b < batch; b++) {
      double *src = rg_real_matrix(VECTOR_ELT(xs, b), "every element of xs", &r, &cc);
      if (r != n || cc != n)
        Rf_error("gs_eigen_batch: element %lld is %lld x %lld, expected %lld x %lld",
                 (long long)b + 1, (long long)r, (long long)cc, (long long)n, (long long)n);
      memcpy(a + b * n * n, src, (size_t)(n * n) * sizeof(double));
    }
  } else {
    SEXP dim = Rf_getAttrib(xs, R_DimSymbol);
    if (TYPEOF(xs) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 3)
      Rf_error("gs_eigen_batch: xs must be a list of matrices or a 3-d array");
    n = INTEGER(dim)[0];
    batch = INTEGER(dim)[2];
    if (INTEGER(dim)[1] != n)
      Rf_error("gs_eigen_batch: the array's slices are not square (%lld x %d)", (long long)n,
               INTEGER(dim)[1]);
    a = REAL(xs);
  }
  int vals_only = Rf_asLogical(only_values) == TRUE;
  SEXP values = PROTECT(Rf_allocMatrix(REALSXP, (int)n, (int)batch));
  SEXP vectors =
      PROTECT(vals_only ? R_NilValue : Rf_allocVector(REALSXP, (R_xlen_t)(n * n * batch)));
  nprot += 2;
  if (!vals_only) {
    SEXP dim = PROTECT(Rf_allocVector(INTSXP, 3));
    INTEGER(dim)[0] = INTEGER(dim)[1] = (int)n;
    INTEGER(dim)[2] = (int)batch;
    Rf_setAttrib(vectors, R_DimSymbol, dim);
    UNPROTECT(1);
  }
  gstat_matrix A = rg_colmajor(a, batch, n, n);
  gstat_matrix w = gstat_vector_batch(REAL(values), GSTAT_F64, batch, n);
  gstat_matrix V = rg_colmajor(vals_only ? NULL : REAL(vectors), batch, n, n);
  rg_call c;
  rg_begin(&c, "gs_eigen_batch");
  rg_check(&c, gstat_eigh(c.ctx, &A, GSTAT_LOWER, &w, vals_only ? NULL : &V, NULL));
  rg_end(&c);
  SEXP out;
  bool list = TYPEOF(xs) == VECSXP;
  for (int64_t b = 0; !list && b < batch; b++)
    reverse_order(n, REAL(values) + b * n, vals_only ? NULL : REAL(vectors) + b * n * n);
  if (list) { /* a list in, a list of "eigen" objects out (reversed while copied) */
    out = PROTECT(Rf_allocVector(VECSXP, batch));
    nprot++;
    SEXP cls = PROTECT(Rf_mkString("eigen"));
    nprot++;
    for (int64_t b = 0; b < batch; b++) {
      SEXP v = PROTECT(Rf_allocVector(REALSXP, n));
      const double *wb = REAL(values) + b * n;
      for (int64_t i = 0; i < n; i++) REAL(v)[i] = wb[n - 1 - i];
      SEXP m = R_NilValue;
      if (!vals_only) {
        m = PROTECT(Rf_allocMatrix(REALSXP, (int)n, (int)n));
        const double *vb = REAL(vectors) + b * n * n;
        for (int64_t i = 0; i < n; i++)
          memcpy(REAL(m) + i * n, vb + (n - 1 - i) * n, (size_t)n * sizeof(double));
      }
      SEXP e = eigen_result(v, m);
      Rf_setAttrib(e, R_ClassSymbol, cls);
      SET_VECTOR_ELT(out, b, e);
      UNPROTECT(vals_only ? 1 : 2);
    }
  } else {
    out = eigen_result(values, vectors);
  }
  UNPROTECT(nprot);
  return out;
}

/* isSymmetric()'s measure of each n x n matrix of a list or 3-d array, as
 * all.equal(x, t(x)) computes it: over the entries where x and t(x) differ,
 * the mean absolute difference relative to the mean absolute value of x when
 * that exceeds tol (else absolute); NA/NaN entries left out (the solver
 * reports them). One
 * pass over each matrix, so gs_eigen_batch can check a batch as eigen()
 * checks each matrix without R copies of the array. */
static double asymmetry(const double *a, int64_t n, double tol) {
  double diff = 0, size = 0;
  int64_t count = 0;
  /* each pair once: (i, j) and (j, i) differ together, by the same amount */
  for (int64_t j = 1; j < n; j++)
    for (int64_t i = 0; i < j; i++) {
      double x = a[i + j * n], y = a[j + i * n];
      if (ISNAN(x) || ISNAN(y) || x == y) continue; /* all.equal counts differing entries */
      diff += 2 * fabs(x - y);
      size += fabs(x) + fabs(y);
      count += 2;
    }
  if (count == 0) return 0;
  diff /= (double)count;
  size /= (double)count;
  return isfinite(size) && size > tol ? diff / size : diff;
}

SEXP rg_asymmetry(SEXP xs, SEXP tol) {
  double t = rg_double(tol, "tol");
  int list = TYPEOF(xs) == VECSXP;
  int64_t n = 0, batch, r, cc;
  if (list) {
    batch = XLENGTH(xs);
  } else {
    SEXP dim = Rf_getAttrib(xs, R_DimSymbol);
    if (TYPEOF(xs) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 3)
      Rf_error("internal: rg_asymmetry needs a list or a 3-d double array");
    n = INTEGER(dim)[0];
    batch = INTEGER(dim)[2];
  }
  SEXP out = PROTECT(Rf_allocVector(REALSXP, batch));
  for (int64_t b = 0; b < batch; b++) {
    const double *a;
    if (list) {
      a = rg_real_matrix(VECTOR_ELT(xs, b), "every element of xs", &r, &cc);
      n = r == cc ? r : 0;
    } else {
      a = REAL(xs) + b * n * n;
    }
    REAL(out)[b] = asymmetry(a, n, t);
  }
  UNPROTECT(1);
  return out;
}

SEXP rg_chol(SEXP x) {
  int64_t n, m;
  double *a = rg_real_matrix(x, "x", &n, &m);
  if (n != m)
    Rf_error("gs_chol: 'x' must be a square matrix (it is %lld x %lld)", (long long)n,
             (long long)m);
  SEXP f = PROTECT(Rf_allocMatrix(REALSXP, (int)n, (int)n));
  gstat_matrix A = rg_colmajor(a, 1, n, n), F = rg_colmajor(REAL(f), 1, n, n);
  rg_call c;
  rg_begin(&c, "gs_chol");
  rg_check(&c, gstat_cholesky(c.ctx, &A, GSTAT_UPPER, &F, NULL));
  rg_end(&c);
  UNPROTECT(1);
  return f;
}

/* chol(x, pivot = TRUE): the pivoted Cholesky factorization of LAPACK's
 * dpstrf, which gstat's backends do not have, called in R's own LAPACK so
 * that the factor, pivot and rank are the very ones base R computes. Like
 * chol() the lower triangle is zero and only the upper one is read. Returns
 * list(R, pivot, rank, info); info > 0 (rank deficient or not positive
 * semidefinite) is R's warning, raised by the R wrapper. */
SEXP rg_chol_pivot(SEXP x, SEXP tol) {
  static const char *names[] = {"R", "pivot", "rank", "info"};
  int64_t n, m;
  const double *a = rg_real_matrix(x, "x", &n, &m);
  if (n != m || n > INT32_MAX)
    Rf_error("gs_chol: 'x' must be a square matrix (it is %lld x %lld)", (long long)n,
             (long long)m);
  double t = rg_double(tol, "tol");
  int ni = (int)n, rank = 0, info = 0;
  SEXP out = PROTECT(rg_named_list(4, names));
  SEXP f = Rf_allocMatrix(REALSXP, ni, ni);
  SET_VECTOR_ELT(out, 0, f);
  SEXP piv = Rf_allocVector(INTSXP, n);
  SET_VECTOR_ELT(out, 1, piv);
  double *r = REAL(f);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) r[i + j * n] = i <= j ? a[i + j * n] : 0.0;
  if (n > 0) {
    double *work = (double *)R_alloc(2 * (size_t)n, sizeof(double));
    F77_CALL(dpstrf)("U", &ni, r, &ni, INTEGER(piv), &rank, &t, work, &info FCONE);
  }
  if (info < 0) Rf_error("gs_chol: LAPACK dpstrf refused argument %d", -info);
  SET_VECTOR_ELT(out, 2, Rf_ScalarInteger(rank));
  SET_VECTOR_ELT(out, 3, Rf_ScalarInteger(info));
  UNPROTECT(1);
  return out;
}

static void factor_shape(SEXP r, const char *fname, int64_t *n) {
  int64_t m;
  rg_real_matrix(r, "the Cholesky factor", n, &m);
  if (*n != m)
    Rf_error("%s: the Cholesky factor must be square (it is %lld x %lld)", fname, (long long)*n,
             (long long)m);
}

SEXP rg_chol_solve(SEXP r, SEXP b) {
  int64_t n, bn, nrhs;
  factor_shape(r, "gs_chol_solve", &n);
  double *bd = rg_real_matrix(b, "b", &bn, &nrhs);
  if (bn != n)
    Rf_error("gs_chol_solve: 'b' has %lld rows, the factor is %lld x %lld", (long long)bn,
             (long long)n, (long long)n);
  SEXP x = PROTECT(Rf_allocMatrix(REALSXP, (int)n, (int)nrhs));
  gstat_matrix F = rg_colmajor(REAL(r), 1, n, n), B = rg_colmajor(bd, 1, n, nrhs),
               X = rg_colmajor(REAL(x), 1, n, nrhs);
  rg_call c;
  rg_begin(&c, "gs_chol_solve");
  rg_check(&c, gstat_cholesky_solve(c.ctx, &F, GSTAT_UPPER, &B, &X, NULL));
  rg_end(&c);
  UNPROTECT(1);
  return x;
}

SEXP rg_chol2inv(SEXP r) {
  int64_t n;
  factor_shape(r, "gs_chol2inv", &n);
  SEXP x = PROTECT(Rf_allocMatrix(REALSXP, (int)n, (int)n));
  double *xd = REAL(x);
  memset(xd, 0, (size_t)(n * n) * sizeof(double));
  for (int64_t i = 0; i < n; i++) xd[i * n + i] = 1.0;
  gstat_matrix F = rg_colmajor(REAL(r), 1, n, n), X = rg_colmajor(xd, 1, n, n);
  rg_call c;
  rg_begin(&c, "gs_chol2inv");
  rg_check(&c, gstat_cholesky_solve(c.ctx, &F, GSTAT_UPPER, &X, &X, NULL)); /* in place */
  rg_end(&c);
  UNPROTECT(1);
  return x;
}
