/*
 * The weighted and missing-value co-moment primitives (backend.h's
 * wcomoment, nan_rows, pairwise): what pairwise returns, shared by the
 * backends and the statistic (src/pca/covariance.c), and the last step of
 * its GEMM formulation, shared by the CUDA module and the tests' fake module.
 */
#ifndef GSTAT_BACKEND_MOMENTS_REQ_H
#define GSTAT_BACKEND_MOMENTS_REQ_H

#include <float.h>
#include <math.h>

#include "core/internal.h"

/* Pairwise co-moments of element b of X (n x p, NaN: missing), row weights
 * w (NULL: 1). Host doubles, p x p column-major, all entries. Entries of a
 * pair without weight (W <= 0) are unspecified. */
typedef struct gstat_i_pairwise_out {
  double *mean; /* p: each column's weighted mean over its present rows; NaN without weight */
  double *W;    /* W[a + b p]: the weight of the rows where a and b are both present */
  double *WA;   /* NULL, or the sum of w * aw over those rows (analytic weights aw) */
  double *C;    /* C[a + b p]: co-moment of a and b over those rows about their means there */
  double *V;    /* V[a + b p]: co-moment of a with itself over those rows (V[b + a p]: of b) */
} gstat_i_pairwise_out;

/* The GEMM formulation's last step. With x0 = x - shift (0 where missing),
 * m the presence mask and D the weights, W = m^T D m is in o->W, and
 * S = x0^T D m (S[a + b p]: sum of a over the pair's rows), Q = (x0 * x0)^T
 * D m and P = x0^T D x0 are given (sums over n rows): C = P - S_ab S_ba / W
 * and V = Q - S^2 / W. The shift (a column's mean, or its value when
 * constant) keeps the cancellation small; a variance within the rounding of
 * Q is zero, as the CPU's two-pass loop finds for a column constant on the
 * pair's rows (then the pair's co-moment is zero too). That rounding grows
 * with the rows: sums taken row after row (a GPU GEMM) err by ~sqrt(n) eps,
 * hundreds of eps at 10^6 rows, where a fixed 64 eps missed such columns. */
static inline void gstat_i_pairwise_from_sums(int64_t p, int64_t n, const double *shift,
                                              const double *S, const double *Q, const double *P,
                                              const gstat_i_pairwise_out *o) {
  const double tiny = 64 * DBL_EPSILON * sqrt(n > 1 ? (double)n : 1.0);
  for (int64_t a = 0; a < p; a++) {
    double waa = o->W[a + a * p];
    o->mean[a] = waa > 0 ? shift[a] + S[a + a * p] / waa : NAN;
  }
  for (int64_t b = 0; b < p; b++)
    for (int64_t a = 0; a < p; a++) {
      int64_t ab = a + b * p, ba = b + a * p;
      double ws = o->W[ab];
      if (!(ws > 0)) {
        o->C[ab] = o->V[ab] = NAN;
        continue;
      }
      double sa = S[ab], sb = S[ba];
      double vaa = Q[ab] - sa * sa / ws, vbb = Q[ba] - sb * sb / ws;
      if (vaa <= tiny * Q[ab]) vaa = 0;
      if (vbb <= tiny * Q[ba]) vbb = 0;
      o->V[ab] = vaa;
      o->C[ab] = vaa == 0 || vbb == 0 ? 0.0 : P[ab] - sa * sb / ws;
    }
}

#endif /* GSTAT_BACKEND_MOMENTS_REQ_H */
