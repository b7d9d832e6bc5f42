/* Spectral embedding from eigenvectors, and the eigengap choice of k. */
#include <math.h>

#include "graph/graph_internal.h"
#include "spectral/spectral_internal.h"

void gstat_i_embedding(int64_t n, const double *V, int64_t ldv, int64_t first, int64_t dim,
                       const double *d, bool normalize_rows, double *E) {
  for (int64_t c = 0; c < dim; c++) {
    const double *v = V + (first + c) * ldv;
    int64_t arg = 0;
    double big = -1;
    for (int64_t i = 0; i < n; i++) {
      double x = d ? v[i] * gstat_i_inv_sqrt_degree(d[i]) : v[i];
      E[i * dim + c] = x;
      if (fabs(x) > big) {
        big = fabs(x);
        arg = i;
      }
    }
    if (n > 0 && E[arg * dim + c] < 0)
      for (int64_t i = 0; i < n; i++) E[i * dim + c] = -E[i * dim + c];
  }
  if (!normalize_rows) return;
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < dim; c++) s += E[i * dim + c] * E[i * dim + c];
    if (s > 0) {
      s = 1.0 / sqrt(s);
      for (int64_t c = 0; c < dim; c++) E[i * dim + c] *= s;
    }
  }
}

int64_t gstat_i_eigengap(const double *w, int64_t kmax) {
  int64_t best = 1;
  double gap = -INFINITY;
  for (int64_t k = 1; k <= kmax; k++)
    if (w[k] - w[k - 1] > gap) {
      gap = w[k] - w[k - 1];
      best = k;
    }
  return best;
}
