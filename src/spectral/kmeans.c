/* k-means, renumbering and inertia: the library's entry points over the
 * shared per-graph code (assign_impl.h; the CUDA module runs the same). */
#include "spectral/assign_impl.h"
#include "spectral/spectral_internal.h"

size_t gstat_i_kmeans_scratch(int64_t n, int64_t dim, int64_t k) {
  return gstat_i_kmeans_scratch_impl(n, dim, k);
}

void gstat_i_kmeans(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                    int64_t *labels, double *inertia, int64_t *iterations, double *scratch) {
  gstat_i_kmeans_impl(X, n, dim, opt, labels, inertia, iterations, scratch);
}

void gstat_i_relabel(int64_t *labels, int64_t n, int64_t k, int64_t *map) {
  gstat_i_relabel_impl(labels, n, k, map);
}

double gstat_i_inertia(const double *X, int64_t n, int64_t dim, const int64_t *labels, int64_t k,
                       double *scratch) {
  return gstat_i_inertia_impl(X, n, dim, labels, k, scratch);
}
