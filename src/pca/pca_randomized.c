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
#include "backend/dense.h"
#include "backend/sched.h"
#include "pca/pca_internal.h"

#define TRY(expr)                      \
  do {                                 \
    status = (expr);                   \
    if (status != GSTAT_OK) goto done; \
  } while (0)

/* The dense p x l doubles d into Z (compute dtype) or back: a loop for the
 * host's workspace (no allocation), a copy through the scheduler for the
 * device. */
static gstat_status exchange(gstat_ctx *ctx, double *d, const gstat_matrix *Z, bool into_Z) {
  gstat_matrix dm = gstat_matrix_col_major(d, GSTAT_F64, 1, Z->rows, Z->cols);
  if (Z->location != GSTAT_HOST)
    return into_Z ? gstat_i_sched_copy(ctx, "pca", "Z", &dm, (gstat_matrix *)Z)
                  : gstat_i_sched_copy(ctx, "pca", "Z", Z, &dm);
  int64_t count = Z->rows * Z->cols;
  bool f64 = Z->dtype == GSTAT_F64;
  for (int64_t i = 0; i < count; i++) {
    if (into_Z && f64)
      ((double *)Z->data)[i] = d[i];
    else if (into_Z)
      ((float *)Z->data)[i] = (float)d[i];
    else
      d[i] = f64 ? ((double *)Z->data)[i] : (double)((float *)Z->data)[i];
  }
  return GSTAT_OK;
}

gstat_status gstat_i_pca_randomized(gstat_ctx *ctx, const gstat_matrix *Xc, const gstat_matrix *Y,
                                    const gstat_matrix *Z, int64_t k, int64_t l, int64_t q,
                                    uint64_t seed, double *sigma, double *comp) {
  gstat_status status = GSTAT_OK;
  gstat_dtype ct = Xc->dtype;
  int64_t n = Xc->rows, p = Xc->cols;
  size_t esz = gstat_dtype_size(ct);
  /* sections rounded to 64 bytes: the float sketches precede double arrays;
   * device data bring their sketches (Y, Z) along */
  bool host = Y == NULL;
  size_t y_size = host ? ((size_t)(n * l) * esz + 63) / 64 * 64 : 0,
         z_size = host ? ((size_t)(p * l) * esz + 63) / 64 * 64 : 0;
  size_t zd_size = (size_t)(p * l) * sizeof(double), g_size = (size_t)(l * l) * sizeof(double);
  size_t total = y_size + z_size + 2 * zd_size + g_size + (size_t)l * sizeof(double);
  char *mem = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %zu bytes", total);
  gstat_matrix hY = gstat_matrix_col_major(mem, ct, 1, n, l),
               hZ = gstat_matrix_col_major(mem + y_size, ct, 1, p, l);
  if (host) {
    Y = &hY;
    Z = &hZ;
  }
  double *Zd = (double *)(mem + y_size + z_size), *M = Zd + p * l, *G = M + p * l, *w = G + l * l;
  const char *fn = "pca";

  /* Omega: p x l standard normal, in Z (through doubles: the same values
   * in either memory) */
  gstat_i_rng rng;
  gstat_i_rng_seed(&rng, seed);
  for (int64_t i = 0; i < p * l; i++) Zd[i] = gstat_i_rng_normal(&rng);
  TRY(exchange(ctx, Zd, Z, true));
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_NO_TRANS, 1.0, Xc, Z, 0.0, Y));
  for (int64_t it = 0; it < q; it++) {
    TRY(gstat_i_progress(ctx, "pca: power iterations", it, q));
    TRY(gstat_i_sched_orthonormalize(ctx, fn, Y));
    TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, Xc, Y, 0.0, Z));
    TRY(gstat_i_sched_orthonormalize(ctx, fn, Z));
    TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_NO_TRANS, 1.0, Xc, Z, 0.0, Y));
  }
  if (q > 0) TRY(gstat_i_progress(ctx, "pca: power iterations", q, q));
  TRY(gstat_i_sched_orthonormalize(ctx, fn, Y));
  /* Z = Xc^T Q = B^T (p x l), then everything small in double on the host */
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, Xc, Y, 0.0, Z));
  TRY(exchange(ctx, Zd, Z, false));
  TRY(gstat_i_syrk(ctx, GSTAT_F64, GSTAT_TRANS, l, p, 1.0, Zd, p, 0.0, G, l));
  gstat_matrix Gm = gstat_matrix_col_major(G, GSTAT_F64, 1, l, l);
  gstat_matrix wm = gstat_vector_batch(w, GSTAT_F64, 1, l);
  TRY(gstat_i_eigh_host(ctx, &Gm, GSTAT_LOWER, &wm, &Gm, NULL));
  /* right singular vectors: columns of B^T U = Z U, normalized (norm = sigma) */
  TRY(gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, p, l, l, 1.0, Zd, p, G, l, 0.0,
                   M, p));
  for (int64_t i = 0; i < k; i++) {
    double lam = w[l - 1 - i];
    sigma[i] = lam > 0 ? sqrt(lam) : 0;
    const double *col = M + (l - 1 - i) * p;
    double nrm = gstat_i_pca_norm(col, p);
    if (sigma[i] > 0 && nrm > 0)
      for (int64_t j = 0; j < p; j++) comp[i * p + j] = col[j] / nrm;
    else
      gstat_i_pca_complete_row(comp, i, p);
  }
done:
  return status;
}
