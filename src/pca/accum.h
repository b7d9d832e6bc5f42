/* The streaming covariance accumulator's state (internal: read by
 * gstat_pca_from_accum; written only by accum.c). */
#ifndef GSTAT_PCA_ACCUM_H
#define GSTAT_PCA_ACCUM_H

#include "core/internal.h"
#include "gstat/covariance.h"

/*
 * The rows are accumulated as x - shift, where shift is fixed by the first
 * rows the accumulator sees: the running mean (dmean) is then of the order
 * of the spread, not of |mean|, so its rounding does not leak into M when
 * |mean| >> spread (a plain running mean would cost ulp(|mean|) / spread of
 * accuracy at every merge).
 *
 * An empty accumulator has weight 0, dmean 0 and M 0. A column that met a
 * NaN in EVERYTHING mode has a NaN mean and NaN in its row and column of M,
 * for good: IEEE arithmetic carries the NaN through every later merge.
 */
struct gstat_cov_accum {
  int64_t p;
  gstat_missing missing; /* EVERYTHING or COMPLETE */
  int64_t rows;          /* rows accumulated (skipped ones not included) */
  int64_t skipped;       /* rows dropped for a NaN (COMPLETE) */
  double weight;         /* sum of the row weights (= rows without weights) */
  bool anchored;         /* shift has been set */
  double *shift;         /* p */
  double *dmean;         /* p: weighted column means minus shift */
  double *mean;          /* p: shift + dmean, kept up to date (0 when empty) */
  double *comoment;      /* p x p, column-major, exactly symmetric: sum w (x - mean)(x - mean)^T */
};

/* Read access for other src/pca code (with the fields p, rows, weight).
 * The covariance is comoment / (weight - ddof). */
static inline const double *gstat_i_cov_accum_mean(const gstat_cov_accum *acc) {
  return acc->mean;
}
static inline const double *gstat_i_cov_accum_comoment(const gstat_cov_accum *acc) {
  return acc->comoment;
}

#endif /* GSTAT_PCA_ACCUM_H */
