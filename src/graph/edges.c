/* Edge lists to CSR: counting sort by source, sort each row, sum duplicates,
 * then symmetrize. */
#include <math.h>
#include <stdlib.h>

#include "graph/graph_internal.h"

typedef struct pair {
  int64_t col;
  double w;
} pair;

static int by_col(const void *a, const void *b) {
  int64_t x = ((const pair *)a)->col, y = ((const pair *)b)->col;
  return (x > y) - (x < y);
}

gstat_status gstat_csr_from_edges(gstat_ctx *ctx, int64_t n, int64_t n_edges, const int64_t *src,
                                  const int64_t *dst, const double *weights, gstat_symmetrize sym,
                                  gstat_csr **out) {
  static const char fn[] = "csr_from_edges";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!out) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  if (n < 0) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: n=%lld must be >= 0", fn, (long long)n);
  if (n_edges < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: n_edges=%lld must be >= 0", fn, (long long)n_edges);
  if (n_edges > 0 && (!src || !dst))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, !src ? "src" : "dst");
  if (sym < GSTAT_SYM_CHECK || sym > GSTAT_SYM_MIN)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: sym=%d is not a gstat_symmetrize", fn, (int)sym);
  for (int64_t e = 0; e < n_edges; e++) {
    if (src[e] < 0 || src[e] >= n || dst[e] < 0 || dst[e] >= n)
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: edge %lld (%lld -> %lld) has a node outside [0, %lld)", fn,
                          (long long)e, (long long)src[e], (long long)dst[e], (long long)n);
    if (weights && !isfinite(weights[e]))
      return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                          "%s: weights[%lld] (edge %lld -> %lld) is NaN or Inf", fn, (long long)e,
                          (long long)src[e], (long long)dst[e]);
    if (weights && weights[e] < 0)
      return gstat_i_fail(
          ctx, GSTAT_EINVAL,
          "%s: weights[%lld]=%g (edge %lld -> %lld) is negative: weights must be >= 0", fn,
          (long long)e, weights[e], (long long)src[e], (long long)dst[e]);
  }
  gstat_status st = GSTAT_OK;
  gstat_csr *dir = NULL;
  int64_t *off = calloc((size_t)n + 2, sizeof *off);
  pair *p = malloc(sizeof(pair) * (size_t)(n_edges + 1));
  if (!off || !p || (uint64_t)n_edges > SIZE_MAX / sizeof(pair)) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for %lld edges", fn,
                      (long long)n_edges);
    goto done;
  }
  for (int64_t e = 0; e < n_edges; e++) off[src[e] + 1]++;
  for (int64_t i = 0; i < n; i++) off[i + 1] += off[i];
  for (int64_t e = 0; e < n_edges; e++) {
    int64_t q = off[src[e]]++;
    p[q].col = dst[e];
    p[q].w = weights ? weights[e] : 1.0;
  }
  for (int64_t i = n; i > 0; i--) off[i] = off[i - 1];
  off[0] = 0;
  /* sort rows, sum duplicates in place; count the distinct entries */
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t lo = off[i], hi = off[i + 1];
    qsort(p + lo, (size_t)(hi - lo), sizeof(pair), by_col);
    off[i] = kept;
    for (int64_t e = lo; e < hi; e++) {
      if (kept > off[i] && p[kept - 1].col == p[e].col)
        p[kept - 1].w += p[e].w;
      else
        p[kept++] = p[e];
    }
  }
  off[n] = kept;
  dir = gstat_i_csr_new(n, kept, true);
  if (!dir) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the CSR", fn);
    goto done;
  }
  for (int64_t i = 0; i <= n; i++) ((int64_t *)dir->offsets)[i] = off[i];
  for (int64_t e = 0; e < kept; e++) {
    ((int64_t *)dir->indices)[e] = p[e].col;
    ((double *)dir->weights)[e] = p[e].w;
  }
  gstat_i_csr_in in = {n, 0, dir->offsets, dir->indices, dir->weights};
  if (sym == GSTAT_SYM_CHECK) {
    gstat_i_err err = {0};
    if (gstat_i_csr_check_symmetric(&err, fn, "the edge list", &in, ctx, NULL) != GSTAT_OK) {
      st = gstat_i_err_raise(ctx, &err);
      goto done;
    }
    *out = dir;
    dir = NULL;
    goto done;
  }
  *out = gstat_i_csr_symmetrized(&in, sym, GSTAT_LOOPS_KEEP, false);
  if (!*out) st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the symmetrized CSR", fn);
done:
  gstat_csr_free(dir);
  free(off);
  free(p);
  return st;
}
