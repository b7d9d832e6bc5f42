/*
 * Cluster-QR (Damle, Minden and Ying, "Simple, direct and efficient multi-way
 * spectral clustering", 2019), inline for host and device code (GSTAT_HD) so
 * that the CPU engine and the CUDA module give the same labels: a
 * column-pivoted QR of E^T picks k representative nodes, the orthogonal polar
 * factor of their rows rotates E, and each node goes to its largest |entry|.
 * No randomness, no LAPACK: the pivots come from Gram-Schmidt with exact
 * residual norms (the pivots of LAPACK's geqp3 in exact arithmetic), the
 * polar factor from a one-sided Jacobi SVD of the k x k rows.
 */
#ifndef GSTAT_SPECTRAL_CLUSTER_QR_IMPL_H
#define GSTAT_SPECTRAL_CLUSTER_QR_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/hostdevice.h"

/* Doubles of scratch gstat_i_cluster_qr_impl needs. */
GSTAT_HD static inline size_t gstat_i_cluster_qr_scratch_impl(int64_t n, int64_t k) {
  return (size_t)(k * n + n + 3 * k * k + k + 8);
}

/* The k representative nodes (piv): greedy column pivoting of E^T (n x k
 * row-major E), the residual R (n x k) and its squared row norms r2 as work. */
GSTAT_HD static inline void gstat_i_cqr_pivots(const double *E, int64_t n, int64_t k, double *R,
                                               double *r2, int64_t *piv) {
  for (int64_t i = 0; i < n; i++) {
    double t = 0;
    for (int64_t a = 0; a < k; a++) {
      R[i * k + a] = E[i * k + a];
      t += E[i * k + a] * E[i * k + a];
    }
    r2[i] = t;
  }
  for (int64_t s = 0; s < k; s++) {
    int64_t p = 0;
    for (int64_t i = 1; i < n; i++) /* the first largest, as LAPACK's idamax */
      if (r2[i] > r2[p]) p = i;
    piv[s] = p;
    double len = sqrt(r2[p]);
    r2[p] = -1;               /* picked: never again */
    if (!(len > 0)) continue; /* rank below k: nothing left to remove */
    const double *q = R + p * k;
    double inv = 1.0 / len;
    for (int64_t i = 0; i < n; i++) {
      if (r2[i] < 0) continue;
      double c = 0, t = 0;
      for (int64_t a = 0; a < k; a++) c += q[a] * R[i * k + a];
      c *= inv * inv;
      for (int64_t a = 0; a < k; a++) {
        R[i * k + a] -= c * q[a];
        t += R[i * k + a] * R[i * k + a];
      }
      r2[i] = t;
    }
  }
}

/* Rotates columns p and q of the k x k column-major X by (c, s). */
GSTAT_HD static inline void gstat_i_cqr_rotate(double *X, int64_t k, int64_t p, int64_t q, double c,
                                               double s) {
  for (int64_t a = 0; a < k; a++) {
    double xp = X[a + p * k], xq = X[a + q * k];
    X[a + p * k] = c * xp - s * xq;
    X[a + q * k] = s * xp + c * xq;
  }
}

/* Squared length below which a column of M counts as zero (M's rank below
 * k): a relative 1e-14 of M's Frobenius norm. */
GSTAT_HD static inline double gstat_i_cqr_negligible(const double *M, int64_t k) {
  double t = 0;
  for (int64_t i = 0; i < k * k; i++) t += M[i] * M[i];
  return 1e-28 * t;
}

/* One-sided Jacobi on M (k x k, column-major): on return M = U S, V holds
 * the right singular vectors; columns of negligible length are left alone
 * (their rounding would never settle). False when 60 sweeps do not
 * converge. */
GSTAT_HD static inline bool gstat_i_cqr_jacobi(double *M, double *V, int64_t k, double tiny) {
  for (int64_t i = 0; i < k * k; i++) V[i] = (i % (k + 1)) == 0 ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 60; sweep++) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < k; p++)
      for (int64_t q = p + 1; q < k; q++) {
        double al = 0, be = 0, ga = 0;
        for (int64_t a = 0; a < k; a++) {
          al += M[a + p * k] * M[a + p * k];
          be += M[a + q * k] * M[a + q * k];
          ga += M[a + p * k] * M[a + q * k];
        }
        if (!(al > tiny && be > tiny && fabs(ga) > 1e-15 * sqrt(al * be))) continue;
        double zeta = (be - al) / (2 * ga);
        double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        double c = 1 / sqrt(1 + t * t), s = c * t;
        gstat_i_cqr_rotate(M, k, p, q, c, s);
        gstat_i_cqr_rotate(V, k, p, q, c, s);
        rotated = true;
      }
    if (!rotated) return true;
  }
  return false;
}

/* The columns of M = U S made orthonormal: each divided by its length, a
 * column of zero length (M of rank below k) completed from the unit vectors
 * by Gram-Schmidt against the others. */
GSTAT_HD static inline void gstat_i_cqr_unit_columns(double *M, int64_t k, double tiny) {
  int64_t unit = 0;
  for (int64_t c = 0; c < k; c++) {
    double *u = M + c * k, t = 0;
    for (int64_t a = 0; a < k; a++) t += u[a] * u[a];
    while (!(t > tiny) && unit < k) { /* a unit vector the others leave */
      for (int64_t a = 0; a < k; a++) u[a] = a == unit ? 1.0 : 0.0;
      unit++;
      for (int64_t o = 0; o < k; o++) {
        if (o == c) continue;
        double *v = M + o * k, vv = 0, uv = 0;
        for (int64_t a = 0; a < k; a++) vv += v[a] * v[a], uv += u[a] * v[a];
        if (vv > tiny)
          for (int64_t a = 0; a < k; a++) u[a] -= uv / vv * v[a];
      }
      t = 0;
      for (int64_t a = 0; a < k; a++) t += u[a] * u[a];
    }
    double inv = t > 0 ? 1 / sqrt(t) : 0;
    for (int64_t a = 0; a < k; a++) u[a] *= inv;
  }
}

/* Labels 0..k-1 of the n nodes of E (n x k, row-major); false when the
 * small SVD does not converge. scratch: gstat_i_cluster_qr_scratch_impl. */
GSTAT_HD static inline bool gstat_i_cluster_qr_impl(const double *E, int64_t n, int64_t k,
                                                    int64_t *labels, double *scratch) {
  double *R = scratch, *r2 = R + k * n, *M = r2 + n, *V = M + k * k, *P = V + k * k;
  int64_t *piv = (int64_t *)(P + k * k);
  gstat_i_cqr_pivots(E, n, k, R, r2, piv);
  for (int64_t b = 0; b < k; b++) /* M = E[piv, :]^T */
    for (int64_t a = 0; a < k; a++) M[a + b * k] = E[piv[b] * k + a];
  double tiny = gstat_i_cqr_negligible(M, k);
  if (!gstat_i_cqr_jacobi(M, V, k, tiny)) return false;
  gstat_i_cqr_unit_columns(M, k, tiny);
  for (int64_t c = 0; c < k; c++) /* the polar factor P = U V^T */
    for (int64_t a = 0; a < k; a++) {
      double t = 0;
      for (int64_t j = 0; j < k; j++) t += M[a + j * k] * V[c + j * k];
      P[a + c * k] = t;
    }
  for (int64_t i = 0; i < n; i++) {
    int64_t arg = 0;
    double best = -1;
    for (int64_t c = 0; c < k; c++) {
      double t = 0;
      for (int64_t a = 0; a < k; a++) t += E[i * k + a] * P[a + c * k];
      if (fabs(t) > best) {
        best = fabs(t);
        arg = c;
      }
    }
    labels[i] = arg;
  }
  return true;
}

#endif /* GSTAT_SPECTRAL_CLUSTER_QR_IMPL_H */
