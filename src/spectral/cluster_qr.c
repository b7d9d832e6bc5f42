/* Cluster-QR (Damle, Minden and Ying, "Simple, direct and efficient
 * multi-way spectral clustering", 2019): the column-pivoted QR of E^T picks
 * k representative nodes; the orthogonal polar factor of their rows rotates
 * E, and each node goes to its largest |entry|. No randomness. */
#include <math.h>
#include <string.h>

#include "backend/dense.h"
#include "spectral/spectral_internal.h"

size_t gstat_i_cluster_qr_scratch(int64_t n, int64_t k) {
  return (size_t)(k * n + n + 4 * k * k + k + 8);
}

gstat_status gstat_i_cluster_qr(const double *E, int64_t n, int64_t k, int64_t *labels,
                                double *scratch) {
  double *A = scratch, *M = A + k * n, *U = M + k * k, *VT = U + k * k, *R = VT + k * k,
         *s = R + k * k;
  int64_t *piv = (int64_t *)(s + k);
  /* E row-major n x k is E^T column-major k x n */
  memcpy(A, E, sizeof(double) * (size_t)(k * n));
  gstat_status st = gstat_i_geqp3(NULL, GSTAT_F64, k, n, A, k, piv);
  if (st != GSTAT_OK) return st;
  for (int64_t b = 0; b < k; b++) /* M = E[piv[:k], :]^T */
    for (int64_t a = 0; a < k; a++) M[a + b * k] = E[piv[b] * k + a];
  st = gstat_i_gesvd(NULL, GSTAT_F64, k, k, M, k, s, U, k, VT, k);
  if (st != GSTAT_OK) return st;
  for (int64_t c = 0; c < k; c++) /* R = U VT */
    for (int64_t a = 0; a < k; a++) {
      double t = 0;
      for (int64_t j = 0; j < k; j++) t += U[a + j * k] * VT[j + c * k];
      R[a + c * k] = t;
    }
  for (int64_t i = 0; i < n; i++) {
    int64_t arg = 0;
    double best = -1;
    for (int64_t c = 0; c < k; c++) {
      double t = 0;
      for (int64_t a = 0; a < k; a++) t += E[i * k + a] * R[a + c * k];
      if (fabs(t) > best) {
        best = fabs(t);
        arg = c;
      }
    }
    labels[i] = arg;
  }
  return GSTAT_OK;
}
