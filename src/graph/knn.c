/* gstat_knn: neighbour lists in scikit-learn's kneighbors order, over the
 * scheduler's knn primitive (which lists them by index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/graph.h"
#include "backend/sched.h"

typedef struct ranked {
  double d;
  int64_t j;
} ranked;

static int by_distance(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

/* Row i (by index, d2 squared) into (distance, index) order, the point
 * itself first when it is listed; distances become Euclidean. */
static void rank_row(int64_t i, int64_t k, bool self, int64_t *nbr, double *d2, ranked *tmp) {
  int64_t m = 0;
  for (int64_t r = 0; r < k; r++)
    if (!(self && nbr[r] == i)) tmp[m++] = (ranked){d2[r], nbr[r]};
  qsort(tmp, (size_t)m, sizeof *tmp, by_distance);
  int64_t at = 0;
  if (self) {
    nbr[0] = i;
    d2[at++] = 0.0;
  }
  for (int64_t r = 0; r < m; r++, at++) {
    nbr[at] = tmp[r].j;
    d2[at] = sqrt(tmp[r].d);
  }
}

static gstat_status check_knn(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t k,
                              int include_self, const int64_t *indices) {
  if (!X) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X is NULL", fn);
  if (!indices) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: indices is NULL", fn);
  gstat_status st = gstat_i_check_matrix(ctx, fn, "X", X);
  if (st != GSTAT_OK) return st;
  if (X->batch != 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X holds %lld datasets; this function takes one", fn,
                        (long long)X->batch);
  int64_t n = X->rows, most = include_self ? n : n - 1;
  if (k < 1 || k > most)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: k=%lld must be in [1, %lld] for %lld points%s", fn,
                        (long long)k, (long long)most, (long long)n,
                        include_self ? " (the point itself included)" : "");
  int64_t b, i, j;
  if (X->cols > 0 && gstat_i_sched_find_nonfinite(ctx, fn, "X", X, &b, &i, &j, &st))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE, "%s: X row %lld column %lld is NaN or Inf", fn,
                        (long long)i, (long long)j);
  return st;
}

void gstat_knn_options_init(gstat_knn_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->algorithm = GSTAT_KNN_AUTO;
}

gstat_status gstat_knn(gstat_ctx *ctx, const gstat_matrix *X, int64_t k, int include_self,
                       int64_t *indices, double *distances) {
  return gstat_knn_with_options(ctx, X, k, include_self, NULL, indices, distances);
}

gstat_status gstat_knn_with_options(gstat_ctx *ctx, const gstat_matrix *X, int64_t k,
                                    int include_self, const gstat_knn_options *opt,
                                    int64_t *indices, double *distances) {
  static const char fn[] = "knn";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_knn_options o;
  gstat_knn_options_init(&o);
  if (opt) o = *opt;
  if (o.algorithm < GSTAT_KNN_AUTO || o.algorithm > GSTAT_KNN_NNDESCENT)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.algorithm=%d is not a gstat_knn_algorithm", fn,
                        (int)o.algorithm);
  gstat_status st = check_knn(ctx, fn, X, k, include_self, indices);
  if (st != GSTAT_OK) return st;
  int64_t n = X->rows;
  size_t cells = (size_t)n * (size_t)k; /* fits: the caller holds n x k indices */
  size_t scratch = distances ? 0 : cells,
         bytes = sizeof(double) * scratch + sizeof(ranked) * (size_t)k;
  char *mem = gstat_i_alloc(ctx, bytes);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", fn, bytes);
  double *d2 = distances ? distances : (double *)mem;
  ranked *tmp = (ranked *)(mem + sizeof(double) * scratch);
  st = gstat_i_sched_knn_with(ctx, fn, X, 0, k, include_self != 0, (int)o.algorithm, o.seed,
                              indices, d2);
  if (st == GSTAT_OK)
    for (int64_t i = 0; i < n; i++)
      rank_row(i, k, include_self != 0, indices + i * k, d2 + i * k, tmp);
  gstat_i_free(ctx, mem, bytes);
  return st;
}
