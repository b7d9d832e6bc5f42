/* rgstat: shared helpers of the .Call glue (one gstat context per call). */
#ifndef RGSTAT_H
#define RGSTAT_H

#include <stdint.h>

#include <R.h>
#include <Rinternals.h>

#include "gstat/gstat.h"

/* The state of one .Call: the (shared) context it uses and what its
 * progress callback saw. */
typedef struct rg_call {
  gstat_ctx *ctx;
  const char *fname; /* R function name, prefixed to error messages */
  int interrupted;   /* the user pressed Ctrl-C during the C call */
  int last_percent;  /* of the last progress report passed to R */
  char last_what[64];
} rg_call;

/* Take the package's context for options(rgstat.backend, rgstat.threads),
 * creating it when there is none or the options changed. */
void rg_begin(rg_call *c, const char *fname);
/* Record which backend ran and what the GPU did. On failure: end the call
 * (the context stays), then signal the interrupt or
 * Rf_error("<fname>: <gstat message>"). Free every non-R resource first. */
void rg_check(rg_call *c, gstat_status st);
/* End the call (after a successful one); the context stays for the next. */
void rg_end(rg_call *c);

/* Argument helpers: they Rf_error before any context exists. */
double *rg_real_matrix(SEXP x, const char *what, int64_t *rows, int64_t *cols);
int rg_int(SEXP x, const char *what);
double rg_double(SEXP x, const char *what);

/* The gstat descriptor of an R matrix / 3-d array: column-major, no copy. */
gstat_matrix rg_colmajor(double *data, int64_t batch, int64_t rows, int64_t cols);

SEXP rg_named_list(int n, const char **names);

/* .Call entry points */
SEXP rg_backend_info(void);
SEXP rg_eigen(SEXP x, SEXP only_values);
SEXP rg_eigen_batch(SEXP xs, SEXP only_values);
SEXP rg_chol(SEXP x);
SEXP rg_chol_pivot(SEXP x, SEXP tol);
SEXP rg_asymmetry(SEXP xs, SEXP tol);
SEXP rg_chol_solve(SEXP r, SEXP b);
SEXP rg_chol2inv(SEXP r);
SEXP rg_cov(SEXP x, SEXP missing, SEXP cor, SEXP ddof, SEXP aweights);
SEXP rg_cov_shrink(SEXP x, SEXP method, SEXP assume_centered);
SEXP rg_mahalanobis(SEXP x, SEXP center, SEXP cov, SEXP inverted);
SEXP rg_pca(SEXP x, SEXP center, SEXP scale, SEXP k, SEXP method, SEXP seed);
SEXP rg_laplacian(SEXP graph, SEXP kind, SEXP symmetrize);
SEXP rg_spectral(SEXP graph, SEXP opts);
SEXP rg_spectral_batch(SEXP graphs, SEXP k, SEXP opts);
/* The R progress function for the next calls (NULL: none). */
SEXP rg_set_progress(SEXP fn);

#endif
