/* Links against an installed gstat and factors a 2x2 matrix. */
#include <gstat/gstat.h>
#include <stdio.h>

int main(void) {
  gstat_ctx *ctx;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return 1;
  double a[4] = {4, 2, 2, 3}, w[2];
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 1, 2, 2);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, 2);
  gstat_status st = gstat_eigh(ctx, &A, GSTAT_LOWER, &W, NULL, NULL);
  printf("gstat %s: eigenvalues %.6f %.6f (%s)\n", gstat_version_string(), w[0], w[1],
         gstat_status_string(st));
  gstat_ctx_destroy(ctx);
  /* (7 -+ sqrt(17)) / 2 */
  return st != GSTAT_OK || w[0] < 1.438 || w[0] > 1.439 || w[1] < 5.561 || w[1] > 5.562;
}
