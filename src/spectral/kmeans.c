/* k-means, renumbering and inertia: the library's entry points over the
 * shared per-graph code (assign_impl.h; the CUDA module runs the same). */
#include "core/internal.h"
#include "spectral/assign_impl.h"
#include "spectral/spectral_internal.h"
#include "backend/sched.h"

size_t gstat_i_kmeans_scratch(int64_t n, int64_t dim, int64_t k) {
  return gstat_i_kmeans_scratch_impl(n, dim, k);
}

bool gstat_i_kmeans(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                    int64_t *labels, double *inertia, int64_t *iterations, double *scratch) {
  return gstat_i_kmeans_impl(X, n, dim, opt, labels, inertia, iterations, scratch);
}

bool gstat_i_sc_km_tick(void *ctx, int64_t done, int64_t total) {
  return gstat_i_progress((gstat_ctx *)ctx, "kmeans: iterations", done, total) == GSTAT_OK;
}

/* One graph's k-means through the scheduler (the CPU spreads the runs over
 * its threads; a GPU takes a large embedding where the context or AUTO sends
 * it); the serial code when that fails for want of memory. */
bool gstat_i_kmeans_runs(void *ctxv, const double *X, int64_t n, int64_t dim,
                         const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                         int64_t *iterations, double *scratch) {
  gstat_ctx *ctx = ctxv;
  gstat_matrix E = gstat_matrix_row_major((void *)X, GSTAT_F64, 1, n, dim);
  gstat_status st = gstat_i_sched_kmeans(ctx, "kmeans", &E, opt, labels, inertia, iterations);
  if (st == GSTAT_ECANCELED) return false;
  if (st == GSTAT_OK) return true;
  ctx->last_error[0] = '\0';
  return gstat_i_kmeans_impl(X, n, dim, opt, labels, inertia, iterations, scratch);
}
