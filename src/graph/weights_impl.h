/* Edge-weight rules shared by the graph code and the CUDA module's spectral
 * kernels, inline for host and device (GSTAT_HD): symmetrization of a pair,
 * CHECK's symmetry tolerance, and the degree scaling. */
#ifndef GSTAT_GRAPH_WEIGHTS_IMPL_H
#define GSTAT_GRAPH_WEIGHTS_IMPL_H

#include <math.h>
#include <stdbool.h>

#include "core/hostdevice.h"
#include "gstat/graph.h"

/* The symmetrized weight of a pair (a, b) under `mode` (gstat_symmetrize). */
GSTAT_HD static inline double gstat_i_sym_pair(int mode, double a, double b) {
  switch (mode) {
    case GSTAT_SYM_MAX: return a > b ? a : b;
    case GSTAT_SYM_MIN: return a < b ? a : b;
    case GSTAT_SYM_SUM: return a + b;
    default: return 0.5 * a + 0.5 * b; /* MEAN, and CHECK (a and b agree) */
  }
}

/* Whether a and b agree to CHECK's tolerance for data of unit roundoff eps
 * (relative to the larger magnitude): what other libraries' rounding leaves
 * (scikit-learn's pairwise_kernels differs from its transpose by ~7 eps and
 * accepts 1e-10): 1e-10 in float64, 64 eps in float32, 4 eps in bfloat16. */
GSTAT_HD static inline bool gstat_i_sym_agree(double a, double b, double eps) {
  double tol = eps > 1e-3 ? 4 * eps : fmax(1e-10, 64 * eps);
  return a == b || fabs(a - b) <= tol * fmax(fabs(a), fabs(b));
}

/* 1 / sqrt(d), or 1 for d = 0 (scipy's isolated-node convention). */
GSTAT_HD static inline double gstat_i_inv_sqrt_degree(double d) {
  return d > 0 ? 1.0 / sqrt(d) : 1.0;
}

/* w s_i s_j of the symmetric Laplacian without overflow: s_i s_j alone passes
 * DBL_MAX for subnormal degrees (an RBF graph of unscaled data), while
 * w <= min(d_i, d_j) keeps the result in [0, 1]. The smaller factor first,
 * the same operands for (i, j) and (j, i): L stays exactly symmetric. */
GSTAT_HD static inline double gstat_i_norm_weight(double w, double si, double sj) {
  return si < sj ? (w * si) * sj : (w * sj) * si;
}

/* Entry (i, j) of the Laplacian of `kind` (gstat_laplacian_kind) from the
 * symmetrized weight a = a_ij, whether i == j, and the degrees d_i, d_j: the
 * operations and order of the CPU's gstat_i_dense_laplacian, so that the
 * GPU's Laplacians (the spectral and the laplacian kernels, built without
 * FMA contraction) round as the CPU's. */
GSTAT_HD static inline double gstat_i_laplacian_entry(int kind, double a, bool diag, double di,
                                                      double dj) {
  double v;
  if (kind == GSTAT_LAPLACIAN_UNNORMALIZED) {
    v = -a;
    return diag ? v + dj : v;
  }
  if (kind == GSTAT_LAPLACIAN_SYMMETRIC)
    v = -gstat_i_norm_weight(a, gstat_i_inv_sqrt_degree(di), gstat_i_inv_sqrt_degree(dj));
  else /* random walk: row i scaled by 1 / d_i */
    v = di > 0 ? -a / di : -a;
  return diag ? v + (dj > 0 ? 1.0 : 0.0) : v;
}

#endif /* GSTAT_GRAPH_WEIGHTS_IMPL_H */
