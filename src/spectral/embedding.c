/* Spectral embedding from eigenvectors, and the eigengap choice of k: the
 * library's entry points over the shared per-graph code (assign_impl.h). */
#include "spectral/assign_impl.h"
#include "spectral/spectral_internal.h"

void gstat_i_embedding(int64_t n, const double *V, int64_t ldv, int64_t first, int64_t dim,
                       const double *d, bool normalize_rows, double *E) {
  gstat_i_embedding_impl(n, V, ldv, first, dim, d, normalize_rows, E);
}

int64_t gstat_i_eigengap(const double *w, int64_t kmax) {
  return gstat_i_eigengap_impl(w, kmax);
}
