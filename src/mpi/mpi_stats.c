/*
 * Distributed covariance, correlation and PCA of row-partitioned data: each
 * rank accumulates its rows, the accumulators merge (mpi_reduce.c), and the
 * receiving rank(s) finish with the single-process functions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* Element (i, j) of a host matrix of batch 1, as a double. */
static double element(const gstat_matrix *X, int64_t i, int64_t j) {
  int64_t o = i * X->row_stride + j * X->col_stride;
  switch (X->dtype) {
    case GSTAT_F64: return ((const double *)X->data)[o];
    case GSTAT_F32: return ((const float *)X->data)[o];
    default: return gstat_bf16_to_f32(((const uint16_t *)X->data)[o]);
  }
}

/* Checks every function here shares: local X of batch 1 in host memory. */
static gstat_status check_local(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X, int root,
                                const char *fn) {
  if (!ctx) return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: ctx is NULL", fn);
  if (!X) return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: X is NULL", fn);
  if (!gstat_mpi_i_root_ok(m, root))
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: root=%d is not a rank of %d or GSTAT_MPI_ALL_RANKS", fn, root,
                            m->size);
  if (X->batch != 1 || X->rows < 0 || X->cols < 0)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: X is %lld x %lld x %lld; a 1 x n x p batch is needed", fn,
                            (long long)X->batch, (long long)X->rows, (long long)X->cols);
  if (X->dtype != GSTAT_F64 && X->dtype != GSTAT_F32 && X->dtype != GSTAT_BF16)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: X.dtype=%d is not a gstat_dtype", fn,
                            (int)X->dtype);
  if (X->rows > 0 && X->cols > 0 && !X->data)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: X.data is NULL", fn);
  return GSTAT_OK;
}

/* Create the local accumulator and add this rank's rows. */
static gstat_status accumulate(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                               gstat_missing missing, const double *weights, gstat_cov_accum **acc,
                               const char *fn) {
  gstat_status st = gstat_cov_accum_create(ctx, X->cols, missing, acc);
  if (st == GSTAT_OK && X->rows > 0) st = gstat_cov_accum_add(ctx, *acc, X, weights);
  if (st != GSTAT_OK) gstat_mpi_i_lib_fail(m, ctx, st, fn);
  return st;
}

gstat_status gstat_mpi_covariance(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                                  const gstat_cov_options *opt, int root, gstat_matrix *C,
                                  gstat_matrix *mean) {
  static const char fn[] = "mpi_covariance";
  if (!m) return GSTAT_EINVAL;
  m->msg[0] = '\0';
  gstat_cov_accum *acc = NULL;
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  if (opt) o = *opt;
  gstat_status st = check_local(m, ctx, X, root, fn);
  if (st != GSTAT_OK) {
  } else if (o.aweights || o.missing == GSTAT_MISSING_PAIRWISE) {
    st = gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED,
                          "%s: %s cannot be merged across ranks (the accumulator takes "
                          "frequency weights and the EVERYTHING or COMPLETE modes)",
                          fn, o.aweights ? "aweights" : "missing=PAIRWISE");
  } else if (o.missing != GSTAT_MISSING_EVERYTHING && o.missing != GSTAT_MISSING_COMPLETE) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: opt.missing=%d is not a gstat_missing", fn,
                          (int)o.missing);
  } else if (o.ddof < 0) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: opt.ddof=%lld must be >= 0", fn, (long long)o.ddof);
  } else if (gstat_mpi_i_receives(m, root) && !C) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: C is NULL on a receiving rank", fn);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  if ((st = gstat_mpi_i_same_p(m, X->cols, fn)) != GSTAT_OK || X->cols == 0) return st;
  st = gstat_mpi_i_agree(m, accumulate(m, ctx, X, o.missing, o.fweights, &acc, fn));
  if (st == GSTAT_OK) st = gstat_mpi_i_reduce(m, ctx, acc, root);
  if (st == GSTAT_OK) {
    if (gstat_mpi_i_receives(m, root)) {
      st = gstat_cov_accum_covariance(ctx, acc, o.ddof, o.correlation, C, mean);
      if (st != GSTAT_OK) gstat_mpi_i_lib_fail(m, ctx, st, fn);
    }
    st = gstat_mpi_i_agree(m, st);
  }
  gstat_cov_accum_destroy(acc);
  return st;
}

/* gstat_pca refuses NaN/Inf whatever the context says; so does the
 * distributed PCA. A NaN or Inf leaves a non-finite mean in the local
 * accumulator, so the rows are scanned (to name the entry) only then. */
static gstat_status check_finite_rows(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                                      const gstat_cov_accum *acc, const char *fn) {
  int64_t p = X->cols;
  if (X->rows == 0 || p == 0) return GSTAT_OK;
  double *buf = malloc(sizeof(double) * (size_t)(p * p + p));
  if (!buf)
    return gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: cannot allocate %lld doubles", fn,
                            (long long)(p * p + p));
  gstat_matrix C = gstat_matrix_row_major(buf, GSTAT_F64, 1, p, p);
  gstat_matrix mean = gstat_matrix_row_major(buf + p * p, GSTAT_F64, 1, p, 1);
  gstat_status st = gstat_cov_accum_covariance(ctx, acc, 0, 0, &C, &mean);
  int64_t bad = -1;
  for (int64_t j = 0; st == GSTAT_OK && j < p && bad < 0; j++)
    if (!isfinite(buf[p * p + j])) bad = j;
  free(buf);
  if (st != GSTAT_OK) return gstat_mpi_i_lib_fail(m, ctx, st, fn);
  if (bad < 0) return GSTAT_OK;
  if (X->location != GSTAT_HOST)
    return gstat_mpi_i_fail(m, GSTAT_ENOTFINITE,
                            "%s: X (CUDA memory) has a NaN or Inf in column %lld", fn,
                            (long long)bad);
  for (int64_t i = 0; i < X->rows; i++) {
    double v = element(X, i, bad);
    if (!isfinite(v))
      return gstat_mpi_i_fail(m, GSTAT_ENOTFINITE,
                              "%s: X[%lld, %lld] = %g (this rank's row %lld) is not finite", fn,
                              (long long)i, (long long)bad, v, (long long)i);
  }
  return gstat_mpi_i_fail(m, GSTAT_ENOTFINITE, "%s: X has a non-finite value in column %lld", fn,
                          (long long)bad);
}

/* The ScaLAPACK eigen step of gstat_mpi_pca, as gstat_pca_from_accum_eigh's
 * callback on the receiving rank(s). The other ranks wait in the same
 * agreement; a receiving rank that fails before its callback joins it after
 * gstat_pca_from_accum_eigh returns, so nobody waits in pdsyevd for it. */
typedef struct {
  gstat_mpi *m;
  int root;
  int called;
  gstat_status st; /* agreed status of the distributed step */
} scalapack_step;

static gstat_status scalapack_callback(gstat_ctx *ctx, int64_t p, double *S, double *w,
                                       void *user) {
  (void)ctx;
  scalapack_step *j = user;
  j->called = 1;
  j->st = gstat_mpi_i_agree(j->m, GSTAT_OK);
  if (j->st == GSTAT_OK) {
    gstat_matrix A = gstat_matrix_col_major(S, GSTAT_F64, 1, p, p);
    gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, p);
    j->st = gstat_mpi_i_scalapack_eigh(j->m, p, &A, GSTAT_LOWER, j->root, &W, &A, 1, "mpi_pca");
  }
  return j->st;
}

/* gstat_mpi_pca's last step with the ScaLAPACK eigensolver (acc merged on the
 * receiving ranks). Returns the status of every rank. */
static gstat_status pca_scalapack(gstat_mpi *m, gstat_ctx *ctx, gstat_cov_accum *acc,
                                  const gstat_pca_options *o, int root, gstat_pca_result **res,
                                  const char *fn) {
  scalapack_step j = {.m = m, .root = root};
  gstat_status phase, after = GSTAT_OK;
  if (gstat_mpi_i_receives(m, root)) {
    gstat_status st = gstat_pca_from_accum_eigh(ctx, acc, o, scalapack_callback, &j, res);
    if (!j.called) {
      if (st == GSTAT_OK) st = GSTAT_EBACKEND; /* cannot happen: p >= 1 */
      gstat_mpi_i_lib_fail(m, ctx, st, fn);
      phase = gstat_mpi_i_agree(m, st);
    } else {
      phase = j.st; /* agreed, message in m->msg */
      if (phase == GSTAT_OK && st != GSTAT_OK) after = gstat_mpi_i_lib_fail(m, ctx, st, fn);
    }
  } else {
    phase = gstat_mpi_i_agree(m, GSTAT_OK);
    if (phase == GSTAT_OK)
      phase = gstat_mpi_i_scalapack_eigh(m, gstat_cov_accum_dim(acc), NULL, GSTAT_LOWER, root, NULL,
                                         NULL, 1, fn);
  }
  return phase != GSTAT_OK ? phase : gstat_mpi_i_agree(m, after);
}

gstat_status gstat_mpi_pca(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                           const gstat_pca_options *opt, int root, gstat_pca_result **res) {
  static const char fn[] = "mpi_pca";
  if (!m) return GSTAT_EINVAL;
  m->msg[0] = '\0';
  gstat_cov_accum *acc = NULL;
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  if (opt) o = *opt;
  o.compute_scores = 0; /* each rank projects its own rows (gstat_pca_transform) */
  gstat_status st = check_local(m, ctx, X, root, fn);
  if (st != GSTAT_OK) {
  } else if (o.method != GSTAT_PCA_AUTO && o.method != GSTAT_PCA_COVARIANCE_EIGH) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL,
                          "%s: opt.method=%d; distributed PCA is covariance-eigh (AUTO or "
                          "COVARIANCE_EIGH)",
                          fn, (int)o.method);
  } else if (gstat_mpi_i_receives(m, root) && !res) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: res is NULL on a receiving rank", fn);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  if ((st = gstat_mpi_i_same_p(m, X->cols, fn)) != GSTAT_OK) return st;
  if (X->cols == 0) {
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: X has no columns (p = 0)", fn);
  }
  gstat_mpi_eigensolver solver;
  if ((st = gstat_mpi_i_pick_eigensolver(m, X->cols, fn, &solver)) != GSTAT_OK) return st;
  st = accumulate(m, ctx, X, GSTAT_MISSING_EVERYTHING, NULL, &acc, fn);
  if (st == GSTAT_OK) st = check_finite_rows(m, ctx, X, acc, fn);
  st = gstat_mpi_i_agree(m, st);
  if (st == GSTAT_OK) st = gstat_mpi_i_reduce(m, ctx, acc, root);
  if (st == GSTAT_OK && solver == GSTAT_MPI_EIGEN_SCALAPACK) {
    st = pca_scalapack(m, ctx, acc, &o, root, res, fn);
  } else if (st == GSTAT_OK) {
    if (gstat_mpi_i_receives(m, root)) {
      st = gstat_pca_from_accum(ctx, acc, &o, res);
      if (st != GSTAT_OK) gstat_mpi_i_lib_fail(m, ctx, st, fn);
    }
    st = gstat_mpi_i_agree(m, st);
  }
  gstat_cov_accum_destroy(acc);
  return st;
}
