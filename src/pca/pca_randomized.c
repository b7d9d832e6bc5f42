/*
 * Randomized truncated SVD (Halko, Martinsson and Tropp 2011, Algorithm 4.4
 * with QR re-orthonormalization between power iterations), the method of
 * scikit-learn's PCA(svd_solver="randomized"):
 *   Y = Xc Omega, (Y = Xc Xc^T Y) q times, Q = orth(Y), B = Q^T Xc,
 * then the SVD of the small l x p matrix B through eigh of B B^T in double.
 */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "gstat/linalg.h"
#include "linalg/dense.h"
#include "pca/pca_internal.h"

#define TRY(expr)                      \
  do {                                 \
    status = (expr);                   \
    if (status != GSTAT_OK) goto done; \
  } while (0)

gstat_status gstat_i_pca_randomized(gstat_ctx *ctx, gstat_dtype ct, int64_t n, int64_t p,
                                    const void *Xc, int64_t k, int64_t l, int64_t q, uint64_t seed,
                                    double *sigma, double *comp) {
  gstat_status status = GSTAT_OK;
  size_t esz = gstat_dtype_size(ct);
  /* sections rounded to 64 bytes: the float sketches precede double arrays */
  size_t y_size = ((size_t)(n * l) * esz + 63) / 64 * 64,
         z_size = ((size_t)(p * l) * esz + 63) / 64 * 64;
  size_t zd_size = (size_t)(p * l) * sizeof(double), g_size = (size_t)(l * l) * sizeof(double);
  int64_t qr_n = gstat_i_orthonormalize_work(ct, n, l),
          qr_p = gstat_i_orthonormalize_work(ct, p, l);
  if (qr_n == 0 || qr_p == 0)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "pca: dimensions exceed LAPACK's integer range");
  size_t qr_size = (size_t)(qr_n > qr_p ? qr_n : qr_p) * esz;
  size_t total = y_size + z_size + 2 * zd_size + g_size + (size_t)l * sizeof(double) + qr_size;
  char *mem = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %zu bytes", total);
  char *Y = mem, *Z = Y + y_size;
  double *Zd = (double *)(Z + z_size), *M = Zd + p * l, *G = M + p * l, *w = G + l * l;
  void *qr = w + l;

  /* Omega: p x l standard normal, in Z */
  gstat_i_rng rng;
  gstat_i_rng_seed(&rng, seed);
  for (int64_t i = 0; i < p * l; i++) {
    double v = gstat_i_rng_normal(&rng);
    if (ct == GSTAT_F64)
      ((double *)Z)[i] = v;
    else
      ((float *)Z)[i] = (float)v;
  }
  TRY(gstat_i_gemm(ctx, ct, GSTAT_NO_TRANS, GSTAT_NO_TRANS, n, l, p, 1.0, Xc, n, Z, p, 0.0, Y, n));
  for (int64_t it = 0; it < q; it++) {
    TRY(gstat_i_progress(ctx, "pca: power iterations", it, q));
    TRY(gstat_i_orthonormalize(ctx, ct, n, l, Y, n, qr));
    TRY(gstat_i_gemm(ctx, ct, GSTAT_TRANS, GSTAT_NO_TRANS, p, l, n, 1.0, Xc, n, Y, n, 0.0, Z, p));
    TRY(gstat_i_orthonormalize(ctx, ct, p, l, Z, p, qr));
    TRY(gstat_i_gemm(ctx, ct, GSTAT_NO_TRANS, GSTAT_NO_TRANS, n, l, p, 1.0, Xc, n, Z, p, 0.0, Y,
                     n));
  }
  if (q > 0) TRY(gstat_i_progress(ctx, "pca: power iterations", q, q));
  TRY(gstat_i_orthonormalize(ctx, ct, n, l, Y, n, qr));
  /* Z = Xc^T Q = B^T (p x l), then everything small in double */
  TRY(gstat_i_gemm(ctx, ct, GSTAT_TRANS, GSTAT_NO_TRANS, p, l, n, 1.0, Xc, n, Y, n, 0.0, Z, p));
  for (int64_t i = 0; i < p * l; i++)
    Zd[i] = ct == GSTAT_F64 ? ((double *)Z)[i] : (double)((float *)Z)[i];
  TRY(gstat_i_syrk(ctx, GSTAT_F64, GSTAT_TRANS, l, p, 1.0, Zd, p, 0.0, G, l));
  gstat_matrix Gm = gstat_matrix_col_major(G, GSTAT_F64, 1, l, l);
  gstat_matrix wm = gstat_vector_batch(w, GSTAT_F64, 1, l);
  TRY(gstat_i_eigh(ctx, &Gm, GSTAT_LOWER, &wm, &Gm, NULL));
  /* right singular vectors: columns of B^T U = Z U, normalized (norm = sigma) */
  TRY(gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, p, l, l, 1.0, Zd, p, G, l, 0.0,
                   M, p));
  for (int64_t i = 0; i < k; i++) {
    double lam = w[l - 1 - i];
    sigma[i] = lam > 0 ? sqrt(lam) : 0;
    const double *col = M + (l - 1 - i) * p;
    double nrm = 0;
    for (int64_t j = 0; j < p; j++) nrm += col[j] * col[j];
    nrm = sqrt(nrm);
    if (sigma[i] > 0 && nrm > 0)
      for (int64_t j = 0; j < p; j++) comp[i * p + j] = col[j] / nrm;
    else
      gstat_i_pca_complete_row(comp, i, p);
  }
done:
  return status;
}
