/* Blocked pairwise distances (||x||^2 + ||y||^2 - 2 x.y through the GEMM of
 * src/backend/dense.h), row by row, for the RBF and epsilon affinities. */
#include <stdlib.h>

#include "graph/pairwise.h"
#include "backend/dense.h"

/* ~32 MiB of distances per block, at least one row */
static int64_t block_rows(int64_t n) {
  int64_t b = n > 0 ? ((int64_t)1 << 22) / n : 1;
  if (b < 1) b = 1;
  return b < n ? b : n;
}

int64_t gstat_i_pairwise_scratch(int64_t n) {
  return n * block_rows(n) + n + 1;
}

gstat_status gstat_i_pairwise_rows(gstat_ctx *ctx, int64_t n, int64_t p, const double *X,
                                   double *block, gstat_i_dist_row_fn row, void *user) {
  int64_t B = block_rows(n);
  double *sq = block + n * B;
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < p; c++) s += X[i + c * n] * X[i + c * n];
    sq[i] = s;
  }
  for (int64_t r0 = 0; r0 < n; r0 += B) {
    int64_t nb = n - r0 < B ? n - r0 : B;
    /* column r of the block: x_j . x_{r0+r} for every j */
    gstat_status st = gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_TRANS, n, nb, p, 1.0, X, n,
                                   X + r0, n, 0.0, block, n);
    if (st != GSTAT_OK) return st;
    /* each entry: the distance, then the row callback's kernel (~an exp) */
    int nt =
        gstat_i_loop_threads(ctx, nb, 25.0 * (double)nb * (double)n, 16.0 * (double)nb * (double)n);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 8) if (nt > 1)
    for (int64_t r = 0; r < nb; r++) {
      double *d2 = block + r * n;
      int64_t i = r0 + r;
      for (int64_t j = 0; j < n; j++) {
        double v = sq[i] + sq[j] - 2.0 * d2[j];
        d2[j] = v > 0 ? v : 0.0;
      }
      d2[i] = 0.0;
      row(user, i, d2);
    }
  }
  return GSTAT_OK;
}
