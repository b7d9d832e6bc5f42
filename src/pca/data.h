/*
 * Data-matrix preparation shared by covariance and PCA: the compute type,
 * the buffer ops of backend/dense.h (column means by a corrected two-pass
 * sum, centring and scaling in place), and covariance's helpers.
 */
#ifndef GSTAT_PCA_DATA_H
#define GSTAT_PCA_DATA_H

#include "core/internal.h"
#include "backend/dense.h" /* the buffer ops: column means, centring, scaling */

/* float64 for F64 data, float32 for F32 and BF16. */
static inline gstat_dtype gstat_i_compute_dtype(gstat_dtype d) {
  return d == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
}

/* ---- covariance helpers (covariance.c, shrinkage.c, mahalanobis.c, accum.c) ---- */

/* First +-Inf of a host batch (NaN is skipped: in covariance it means
 * "missing"): true and (*b, *i, *j) set when there is one. */
bool gstat_i_find_inf(const gstat_matrix *m, int64_t *b, int64_t *i, int64_t *j);

/* Weights w[0..n-1] (NULL: nothing to check) must be finite and >= 0, and
 * whole numbers when `integer`; the message names fn, name and the index. */
gstat_status gstat_i_check_weights(gstat_ctx *ctx, const char *fn, const char *name,
                                   const double *w, int64_t n, bool integer);

/* An entry whose divisor is <= 0 (ddof >= n, n = 1, no rows): numpy's
 * co-moment / max(divisor, 0), i.e. +-Inf, or NaN for a zero co-moment, a
 * NaN divisor or a correlation. */
double gstat_i_over_no_dof(double comoment, double divisor, int correlation);

/* Turn the co-moment matrix c (p x p, both triangles, ld) into a covariance
 * by dividing by `divisor` (gstat_i_over_no_dof when divisor <= 0), then
 * into a correlation when asked: unit diagonal, entries clamped to [-1, 1],
 * NaN in the row and column (diagonal included) of a variable whose variance
 * is zero or NaN. */
void gstat_i_cov_finish(int64_t p, double *c, int64_t ld, double divisor, int correlation);

#endif /* GSTAT_PCA_DATA_H */
