/*
 * gstat covariance analysis: covariance and correlation matrices (weights,
 * missing values), shrinkage estimators, Mahalanobis distances, and a
 * mergeable streaming accumulator.
 *
 * Conventions common to every function here:
 * - A data matrix X is a gstat_matrix of batch x n x p: n observations (rows)
 *   of p variables (columns), any strides, dtype F32, F64 or BF16, host
 *   memory. A batch holds independent datasets of the same shape.
 * - Computation: float64 for F64 input, float32 (with float64 means) for F32
 *   and BF16 input; PAIRWISE with missing values and the accumulator work in
 *   float64 whatever the input. Centering is always done first (two-pass),
 *   never E[XY] - E[X]E[Y], so results stay accurate when |mean| >> spread.
 *   Each output is written in the dtype of its descriptor (any of the three).
 * - NaN in X means "missing" and is handled as gstat_cov_options.missing
 *   says; +-Inf is GSTAT_ENOTFINITE when the context checks finiteness.
 * - Caller-owned outputs, never overlapping an input; workspace comes from
 *   the context and is reused, so repeating a call of one shape allocates
 *   nothing after the first. On an argument error nothing is written.
 * - Sizes n and p above INT32_MAX are GSTAT_EUNSUPPORTED (BLAS integers).
 */
#ifndef GSTAT_COVARIANCE_H
#define GSTAT_COVARIANCE_H

#include "gstat/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How NaN (missing) entries are treated, as R's cov(use = ...). */
typedef enum gstat_missing {
  GSTAT_MISSING_EVERYTHING = 0, /* NaN propagates: a column with a NaN gives NaN entries */
  GSTAT_MISSING_COMPLETE = 1,   /* "complete.obs": rows with any NaN are dropped */
  GSTAT_MISSING_PAIRWISE = 2    /* "pairwise.complete.obs": entry (i,j) uses the rows where
                                   both columns are present (means per pair, as R) */
} gstat_missing;

typedef struct gstat_cov_options {
  /* Divisor correction, >= 0: divisor = (sum of weights) - ddof (numpy/torch
   * rule; with analytic weights: sum(w) - ddof * sum(w * aw) / sum(w), w the
   * row weights). Default 1 (unbiased); 0 gives the maximum-likelihood
   * estimate (R cov.wt "ML"). With missing values the sums run over the rows
   * that are used (per pair for PAIRWISE). */
  int64_t ddof;
  /* Optional per-row weights of length n (NULL: none), as torch.cov/numpy.cov:
   * fweights are non-negative integer repeat counts, aweights non-negative
   * importance weights. Both may be given (their product weights the rows). */
  const double *fweights;
  const double *aweights;
  gstat_missing missing; /* default GSTAT_MISSING_EVERYTHING */
  int correlation;       /* nonzero: the correlation matrix instead (unit diagonal) */
  /* nonzero: moments about 0, the data taken as already centred (scikit-learn's
   * assume_centered): no mean is subtracted and the reported means are 0.
   * Not with missing = PAIRWISE (GSTAT_EUNSUPPORTED). */
  int assume_centered;
} gstat_cov_options;

/* Defaults: ddof 1, no weights, missing EVERYTHING, covariance, centred. */
GSTAT_API void gstat_cov_options_init(gstat_cov_options *opt);

/*
 * Covariance (or correlation) matrix of each dataset in a batch.
 *
 * X     batch x n x p data.
 * opt   NULL for the defaults.
 * C     batch x p x p output (full symmetric matrix written).
 * mean  optional batch x p x 1 output: the (weighted) column means used
 *       (for PAIRWISE: the means over each column's present rows).
 *
 * A divisor <= 0 (e.g. n = 1 with ddof = 1, ddof > n, n = 0, zero total
 * weight, or no complete row for COMPLETE) divides by 0 as numpy does: a
 * nonzero co-moment gives +-Inf, a zero one (n <= 1, no rows) NaN, and a
 * correlation NaN; the call still returns GSTAT_OK (R's cov gives NA for
 * n = 1); means over no rows (or no weight) are NaN.
 * A zero-variance column gives NaN correlations in its row and column, its
 * diagonal entry included (numpy; R returns NA off the diagonal, 1 on it,
 * with a warning); a constant column's covariances are exact zeros.
 * Correlations are clamped to [-1, 1]. batch = 0 or p = 0 writes nothing.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shapes, overlap, ddof < 0, unknown
 * missing mode, negative or non-finite weights, weights of a non-integer
 * value for fweights, ...); GSTAT_ENOTFINITE (Inf in X while the context
 * checks finiteness; unchecked, an Inf makes its column's entries NaN);
 * GSTAT_ENOMEM; GSTAT_EUNSUPPORTED (device memory).
 */
GSTAT_API gstat_status gstat_covariance(gstat_ctx *ctx, const gstat_matrix *X,
                                        const gstat_cov_options *opt, gstat_matrix *C,
                                        gstat_matrix *mean);

/* Shrinkage estimators of scikit-learn's sklearn.covariance. */
typedef enum gstat_shrinkage {
  GSTAT_SHRINK_LEDOIT_WOLF = 0, /* sklearn.covariance.LedoitWolf */
  GSTAT_SHRINK_OAS = 1          /* sklearn.covariance.OAS */
} gstat_shrinkage;

/*
 * Shrunk covariance (1 - s) S + s mu I of each dataset, where S is the
 * maximum-likelihood covariance (divisor n) and mu = trace(S) / p, with the
 * shrinkage s chosen as scikit-learn chooses it (same values):
 * - LEDOIT_WOLF: s = min(b, d) / d with d = ||S - mu I||_F^2 / p and
 *   b = (sum_i ||x_i||^4 / n - ||S||_F^2) / (p n) over the centered rows x_i
 *   (s = 0 when min(b, d) = 0);
 * - OAS (scikit-learn >= 1.3): with a = ||S||_F^2 / p^2,
 *   s = min(1, (a + mu^2) / ((n + 1) (a - mu^2 / p))), and 1 when the
 *   denominator is 0.
 * p = 1 gives s = 0 (any s gives the same matrix), as scikit-learn.
 *
 * X               batch x n x p data without missing values, n >= 1 (NaN or
 *                 Inf: GSTAT_ENOTFINITE whatever the context's finiteness option).
 * assume_centered nonzero: do not subtract the column means (as sklearn).
 * C               batch x p x p output.
 * mean            optional batch x p x 1 (or batch x 1 x p) output: the column
 *                 means subtracted (scikit-learn's location_; 0 when
 *                 assume_centered), any dtype. NULL: not reported.
 * shrinkage       optional array of `batch` doubles receiving s.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shapes, overlap, n = 0, unknown method);
 * GSTAT_ENOTFINITE; GSTAT_ENOMEM; GSTAT_EUNSUPPORTED (device memory).
 */
GSTAT_API gstat_status gstat_cov_shrink(gstat_ctx *ctx, const gstat_matrix *X,
                                        gstat_shrinkage method, int assume_centered,
                                        gstat_matrix *C, gstat_matrix *mean, double *shrinkage);

/*
 * Squared Mahalanobis distances (x - center)^T S^-1 (x - center) of every row
 * x of X, as R's mahalanobis(), computed through the Cholesky factor of S
 * (never an explicit inverse).
 *
 * X         batch x n x p points.
 * center    batch x p x 1 (or batch x 1 x p), or NULL for zero.
 * S         batch x p x p symmetric covariance; only its lower triangle is
 *           read. With `inverted` nonzero, S is already the inverse
 *           covariance and the result is (x-c)^T S (x-c), computed by a
 *           matrix product without any factorization (S need not be
 *           positive definite then, as in R).
 * d2        batch x n x 1 output. p = 0 gives zeros.
 * NaN/Inf in X, center or the lower triangle of S is GSTAT_ENOTFINITE when
 * the context checks finiteness (otherwise it propagates).
 * Statuses: GSTAT_OK; GSTAT_ENOTPD (S not positive definite; the message names
 * the first such batch element and its leading minor, and how many failed;
 * a failed element's distances are NaN, the others are computed);
 * GSTAT_EINVAL; GSTAT_ENOTFINITE; GSTAT_ENOMEM; GSTAT_EUNSUPPORTED.
 */
GSTAT_API gstat_status gstat_mahalanobis(gstat_ctx *ctx, const gstat_matrix *X,
                                         const gstat_matrix *center, const gstat_matrix *S,
                                         int inverted, gstat_matrix *d2);

/* ---- mergeable streaming accumulator -------------------------------------------
 *
 * Holds (weight sum, mean, co-moment matrix M = sum w (x - mean)(x - mean)^T) in
 * float64 for p variables. Chunks of rows are added one at a time (each chunk
 * is centered on its own mean, then merged by Chan et al.'s pairwise update),
 * and two accumulators merge the same way, so any split of the rows into
 * chunks, files or processes gives the covariance of the whole data to
 * rounding. Internally the rows are shifted by fixed values taken from the
 * first rows seen, so the merges stay accurate when |mean| >> spread, even
 * one row at a time. The accumulator owns its memory (malloc'd by the C
 * library, not through the context's allocator) and is not tied to a
 * context: every call takes one for workspace and error messages. One
 * accumulator is used by one thread at a time. */
typedef struct gstat_cov_accum gstat_cov_accum;

/*
 * New empty accumulator for p >= 1 variables. missing: EVERYTHING (a NaN
 * makes the affected entries NaN from then on) or COMPLETE (rows with a NaN
 * are skipped and counted); PAIRWISE is GSTAT_EUNSUPPORTED. On failure *acc
 * is left as it was. Statuses: GSTAT_OK; GSTAT_EINVAL; GSTAT_EUNSUPPORTED;
 * GSTAT_ENOMEM.
 */
GSTAT_API gstat_status gstat_cov_accum_create(gstat_ctx *ctx, int64_t p, gstat_missing missing,
                                              gstat_cov_accum **acc);

/* Free an accumulator (NULL is a no-op). */
GSTAT_API void gstat_cov_accum_destroy(gstat_cov_accum *acc);

/* Forget all data (back to the empty state). */
GSTAT_API void gstat_cov_accum_reset(gstat_cov_accum *acc);

/*
 * Add a chunk of rows: X is 1 x rows x p, any dtype and strides (rows may
 * be 0 or 1); weights is NULL or `rows` finite non-negative frequency
 * weights (non-integer values are accepted; the divisor is always
 * weight - ddof). Host rows are processed in blocks (float64 workspace of
 * about 16 Mi values, not a copy of the chunk). Rows in CUDA memory
 * (location GSTAT_CUDA, the context's device) are reduced on the GPU (mean
 * and co-moment in X's compute type: float32 for F32/BF16 data; with
 * weights or missing = COMPLETE, the weighted co-moment of the complete
 * rows) and merged here; a NaN (EVERYTHING) or Inf there is
 * GSTAT_ENOTFINITE while the context checks finiteness. On a failed
 * argument check the accumulator is unchanged.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shape, weights); GSTAT_ENOTFINITE (Inf
 * while the context checks finiteness); GSTAT_ENOMEM; GSTAT_EUNSUPPORTED
 * (device rows without a usable CUDA backend);
 * GSTAT_EBACKEND (a CUDA failure). Rows that would make the total weight
 * overflow a double, or the row counts pass 2^53, are GSTAT_EINVAL (their
 * export could not be merged back), as are such merges and states below.
 */
GSTAT_API gstat_status gstat_cov_accum_add(gstat_ctx *ctx, gstat_cov_accum *acc,
                                           const gstat_matrix *X, const double *weights);

/* acc <- acc merged with other (other unchanged; same p and missing mode,
 * else GSTAT_EINVAL). other may be acc itself (the data counted twice). */
GSTAT_API gstat_status gstat_cov_accum_merge(gstat_ctx *ctx, gstat_cov_accum *acc,
                                             const gstat_cov_accum *other);

/* Number of variables p (these four readers give 0 for NULL). */
GSTAT_API int64_t gstat_cov_accum_dim(const gstat_cov_accum *acc);

/* Rows accumulated, and rows skipped because of missing values (COMPLETE). */
GSTAT_API int64_t gstat_cov_accum_rows(const gstat_cov_accum *acc);
GSTAT_API int64_t gstat_cov_accum_rows_skipped(const gstat_cov_accum *acc);

/* Sum of the weights (= rows without weights). */
GSTAT_API double gstat_cov_accum_weight(const gstat_cov_accum *acc);

/*
 * The state as a flat array of gstat_cov_accum_state_size(p) doubles, for
 * sending to another process and merging there (MPI, Dask): export writes it,
 * merge_state merges such an array into acc as gstat_cov_accum_merge would.
 * The layout is versioned and checked (a foreign array, another p or mode is
 * GSTAT_EINVAL); both ends must share the double format. state_size gives 0
 * for p < 1 or an overflowing size; export returns GSTAT_EINVAL for NULLs.
 */
GSTAT_API size_t gstat_cov_accum_state_size(int64_t p);
GSTAT_API gstat_status gstat_cov_accum_export(const gstat_cov_accum *acc, double *state);
GSTAT_API gstat_status gstat_cov_accum_merge_state(gstat_ctx *ctx, gstat_cov_accum *acc,
                                                   const double *state);

/*
 * Covariance (correlation when `correlation` is nonzero) from the
 * accumulator: C (1 x p x p) = M / (weight - ddof), ddof >= 0; mean
 * (optional, 1 x p x 1). weight - ddof <= 0 divides by 0 (+-Inf, NaN for a
 * zero co-moment; GSTAT_OK), and zero weight gives NaN means, as
 * gstat_covariance; correlations follow its rules.
 */
GSTAT_API gstat_status gstat_cov_accum_covariance(gstat_ctx *ctx, const gstat_cov_accum *acc,
                                                  int64_t ddof, int correlation, gstat_matrix *C,
                                                  gstat_matrix *mean);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_COVARIANCE_H */
