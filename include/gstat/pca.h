/*
 * gstat principal component analysis.
 *
 * gstat_pca() fits a PCA to each dataset of a batch (batch x n x p, rows =
 * observations, any strides, F32/F64/BF16 host memory) and returns a result
 * object holding everything scikit-learn's PCA and R's prcomp() report.
 * Computation is float64 for F64 input and float32 for F32/BF16 input; the
 * result arrays are float64 either way.
 *
 * Sign convention (all methods, dtypes and backends): in each component the
 * entry of largest magnitude is positive (the first one on ties), as
 * scikit-learn >= 1.5 and gstat_eigh.
 *
 * Missing values are not accepted here (NaN/Inf: GSTAT_ENOTFINITE whatever the
 * context's finiteness option); drop or impute them first, or stream the rows
 * through a gstat_cov_accum with GSTAT_MISSING_COMPLETE and use
 * gstat_pca_from_accum().
 */
#ifndef GSTAT_PCA_H
#define GSTAT_PCA_H

#include "gstat/core.h"
#include "gstat/covariance.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gstat_pca_method {
  GSTAT_PCA_AUTO = 0,            /* chosen by shape (see gstat_pca) */
  GSTAT_PCA_COVARIANCE_EIGH = 1, /* eigh of the p x p covariance: n >> p */
  GSTAT_PCA_GRAM_EIGH = 2,       /* eigh of the n x n Gram matrix: p >> n */
  GSTAT_PCA_RANDOMIZED = 3       /* randomized range finder (Halko et al.): k << min(n, p) */
} gstat_pca_method;

/* The cap on opt.power_iterations. The sketch's error shrinks like
 * (sigma_{l+1} / sigma_k)^(2q+1): beyond a few dozen iterations nothing
 * changes in float64, so a larger count is a mistake, not a request. */
#define GSTAT_PCA_MAX_POWER_ITERATIONS 1000

typedef struct gstat_pca_options {
  /* Number of components k: > 0 a count (at most min(n, p)); 0 means all
   * min(n, p), unless variance_fraction is set. */
  int64_t n_components;
  /* In (0, 1): keep the smallest k whose cumulative explained-variance ratio
   * exceeds it (scikit-learn's float n_components). 0: not used. Needs an
   * exact method; for a batch, k is the largest over the datasets. */
  double variance_fraction;
  int center;               /* default 1: subtract column means */
  int scale;                /* default 0; nonzero: divide centered columns by their standard
                               deviation (divisor n - 1), as prcomp(scale. = TRUE); a
                               constant column is GSTAT_EINVAL (named in the message) */
  int whiten;               /* default 0; nonzero: scores have unit variance (sklearn whiten) */
  gstat_pca_method method;  /* default GSTAT_PCA_AUTO */
  int64_t oversamples;      /* randomized: extra random vectors, default 10 */
  int64_t power_iterations; /* randomized: default -1 = scikit-learn's rule
                               (7 when k < 0.1 min(n, p), else 4); at most
                               GSTAT_PCA_MAX_POWER_ITERATIONS. Each iteration
                               reports progress ("pca: power iterations") and
                               may be cancelled there */
  uint64_t seed;            /* randomized: seed of the random test matrix */
  int compute_scores;       /* default 1: fill result->scores */
} gstat_pca_options;

/* Defaults as documented in gstat_pca_options. */
GSTAT_API void gstat_pca_options_init(gstat_pca_options *opt);

/*
 * A fitted PCA. Arrays are float64, row-major, owned by the result (malloc'd
 * by the C library, not the context's allocator: a result may outlive its
 * context; free it with gstat_pca_result_free). For dataset b of the batch:
 *   components[(b*k + i)*p + j]       component i (unit length), feature j
 *   explained_variance[b*k + i]       variance along component i (divisor n-1)
 *   explained_variance_ratio[b*k + i] its share of the total variance (NaN
 *                                     when the data have none, as sklearn)
 *   singular_values[b*k + i]          of the centered (scaled) data
 *   mean[b*p + j], scale[b*p + j]     centering and scaling used (0 / 1 when off)
 *   noise_variance[b]                 mean variance of the discarded directions
 *                                     (probabilistic PCA, as sklearn); 0 if none
 *   total_variance[b]                 sum of all variances (trace of the covariance)
 *   scores[(b*n + r)*k + i]           projection of row r (NULL when not computed)
 */
typedef struct gstat_pca_result {
  int64_t batch, n_samples, n_features, n_components;
  gstat_pca_method method; /* the method that ran (AUTO resolved) */
  int whiten;
  double *components;
  double *explained_variance;
  double *explained_variance_ratio;
  double *singular_values;
  double *mean;
  double *scale;
  double *noise_variance;
  double *total_variance;
  double *scores;
} gstat_pca_result;

/*
 * Fit PCA to each dataset of X.
 *
 * X     batch x n x p data (n >= 1, p >= 1; n = 1 gives zero variances).
 * opt   NULL for the defaults.
 * res   in/out: *res == NULL allocates a new result; a result from an earlier
 *       call is reused (its arrays are grown only when too small, so a loop
 *       of same-shape calls allocates nothing after the first).
 *
 * AUTO picks RANDOMIZED when k is a count below min(n, p) / 10 and
 * min(n, p) > 1000; otherwise COVARIANCE_EIGH when p <= n and GRAM_EIGH when
 * p > n. The eigen decompositions of a batch run
 * as one batched gstat_eigh on the context's backend. X in CUDA memory stays
 * there (AUTO then takes COVARIANCE_EIGH): the co-moment or Gram matrices,
 * the randomized sketches and their products run on the GPU; only small
 * results come to the host (components, and matrices whose eigh is faster
 * on the CPU).
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shape, k > min(n, p), bad option, constant
 * column with scale); GSTAT_ENOTFINITE (NaN/Inf in X; the message names the
 * element); GSTAT_ENOCONV; GSTAT_ENOMEM; GSTAT_EUNSUPPORTED (device memory).
 * GSTAT_ECANCELED (the context's progress callback, called after each dataset
 * of the batch, asked to stop). On failure *res may hold a partly filled
 * result (or stay NULL): free it with gstat_pca_result_free as usual.
 */
GSTAT_API gstat_status gstat_pca(gstat_ctx *ctx, const gstat_matrix *X,
                                 const gstat_pca_options *opt, gstat_pca_result **res);

/*
 * PCA of the data an accumulator has seen (covariance-eigh method; the
 * options' method must be AUTO or COVARIANCE_EIGH). Scores are not computed:
 * pass the data again through gstat_pca_transform. n_samples is the number
 * of rows accumulated. Same statuses as gstat_pca.
 */
GSTAT_API gstat_status gstat_pca_from_accum(gstat_ctx *ctx, const gstat_cov_accum *acc,
                                            const gstat_pca_options *opt, gstat_pca_result **res);

/*
 * A symmetric eigensolver that gstat_pca_from_accum_eigh calls instead of
 * gstat_eigh (gstat_mpi's distributed one, for instance).
 *
 * On entry S holds the p x p matrix to decompose (float64, column-major,
 * leading dimension p, both triangles filled); on return S must hold the
 * unit eigenvectors (column j belongs to w[j]) and w the p eigenvalues in
 * ascending order. Eigenvector signs do not matter: components get the
 * library's sign rule afterwards. S and w belong to ctx's workspace, so the
 * callback must not run PCA or covariance functions on ctx. Return GSTAT_OK,
 * or the status the PCA call should fail with. `user` is passed through.
 */
typedef gstat_status (*gstat_pca_eigh_fn)(gstat_ctx *ctx, int64_t p, double *S, double *w,
                                          void *user);

/*
 * gstat_pca_from_accum with the eigen decomposition done by `eigh` (NULL:
 * gstat_eigh, i.e. exactly gstat_pca_from_accum). Everything else (the
 * matrix handed to the solver, scaling, k, variances, signs) is the same
 * code, so two solvers that agree on the eigenpairs give the same result.
 * `eigh` is called at most once, and only after every argument check passed.
 * Statuses: those of gstat_pca_from_accum; a failure of the callback is
 * returned as is (the context's message then says the callback failed).
 */
GSTAT_API gstat_status gstat_pca_from_accum_eigh(gstat_ctx *ctx, const gstat_cov_accum *acc,
                                                 const gstat_pca_options *opt,
                                                 gstat_pca_eigh_fn eigh, void *user,
                                                 gstat_pca_result **res);

/*
 * Project data on a fitted PCA: scores = ((X - mean) / scale) components^T,
 * divided by sqrt(explained_variance) when the PCA was whitened.
 *
 * X       batch x m x p (the result's batch and p; any m).
 * scores  batch x m x k output, any dtype.
 */
GSTAT_API gstat_status gstat_pca_transform(gstat_ctx *ctx, const gstat_pca_result *res,
                                           const gstat_matrix *X, gstat_matrix *scores);

/* The inverse map: X = (scores [* sqrt(explained_variance)]) components * scale + mean.
 * scores batch x m x k, X batch x m x p output. */
GSTAT_API gstat_status gstat_pca_inverse_transform(gstat_ctx *ctx, const gstat_pca_result *res,
                                                   const gstat_matrix *scores, gstat_matrix *X);

/* Free a result (NULL is a no-op). */
GSTAT_API void gstat_pca_result_free(gstat_pca_result *res);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_PCA_H */
