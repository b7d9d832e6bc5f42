/* gstat_laplacian (dense, batched) and gstat_laplacian_csr (caller buffers). */
#include <stdio.h>
#include <string.h>

#include "core/matrix.h"
#include "graph/graph_internal.h"
#include "backend/dense.h"

static gstat_status check_kind(gstat_ctx *ctx, const char *fn, gstat_laplacian_kind kind) {
  if (kind < GSTAT_LAPLACIAN_UNNORMALIZED || kind > GSTAT_LAPLACIAN_RANDOM_WALK)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: kind=%d is not a gstat_laplacian_kind", fn,
                        (int)kind);
  return GSTAT_OK;
}

static gstat_status check_out(gstat_ctx *ctx, const char *fn, const char *name,
                              const gstat_matrix *m, int64_t batch, int64_t rows, int64_t cols) {
  gstat_status st = gstat_i_check_matrix(ctx, fn, name, m);
  if (st != GSTAT_OK) return st;
  if (m->batch != batch || m->rows != rows || m->cols != cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s is %lld x %lld x %lld, expected %lld x %lld x %lld", fn, name,
                        (long long)m->batch, (long long)m->rows, (long long)m->cols,
                        (long long)batch, (long long)rows, (long long)cols);
  return GSTAT_OK;
}

/* The workspace of one n x n Laplacian and its degrees (doubles). */
static double *lap_workspace(gstat_ctx *ctx, const char *fn, int64_t n) {
  size_t cells;
  if (!gstat_i_mul_size((size_t)n, (size_t)n, &cells) || cells > SIZE_MAX / 8 - (size_t)n) {
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
    return NULL;
  }
  double *A = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, 8 * (cells + (size_t)n));
  if (!A)
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %lld x %lld workspace", fn, (long long)n,
                 (long long)n);
  return A;
}

/* A CSR graph's Laplacian, formed on the host and stored where L and
 * degrees lie. */
static gstat_status csr_laplacian(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                  gstat_laplacian_kind kind, gstat_matrix *L,
                                  gstat_matrix *degrees) {
  int64_t n = G->csr.n;
  double *A = lap_workspace(ctx, fn, n);
  if (!A) return GSTAT_ENOMEM;
  double *d = A + n * n;
  gstat_i_graph g;
  gstat_status st = gstat_i_graph_from(ctx, fn, G, 0, &g);
  if (st != GSTAT_OK) return st;
  gstat_i_csr_in in = {g.n, g.base, g.offsets, g.indices, g.weights};
  gstat_i_csr_to_dense(&in, GSTAT_SYM_CHECK, GSTAT_LOOPS_KEEP, A);
  gstat_i_graph_release(ctx, &g);
  gstat_i_dense_laplacian(n, A, kind, d);
  st = gstat_i_sched_store(ctx, fn, "L", GSTAT_F64, A, n, L, 0);
  if (st == GSTAT_OK && degrees)
    st = gstat_i_sched_store(ctx, fn, "degrees", GSTAT_F64, d, n, degrees, 0);
  return st;
}

gstat_status gstat_laplacian(gstat_ctx *ctx, const gstat_graph *G, gstat_laplacian_kind kind,
                             gstat_matrix *L, gstat_matrix *degrees) {
  static const char fn[] = "laplacian";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_status st = gstat_i_check_graph(ctx, fn, G);
  if (st == GSTAT_OK) st = check_kind(ctx, fn, kind);
  if (st != GSTAT_OK) return st;
  if (!L) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: L is NULL", fn);
  bool dense = G->format == GSTAT_GRAPH_DENSE;
  int64_t batch = dense ? G->adjacency.batch : 1, n = dense ? G->adjacency.rows : G->csr.n;
  st = check_out(ctx, fn, "L", L, batch, n, n);
  if (st == GSTAT_OK && degrees) st = check_out(ctx, fn, "degrees", degrees, batch, n, 1);
  if (st == GSTAT_OK && dense)
    st = gstat_i_check_alias(ctx, fn, "L", L, "G.adjacency", &G->adjacency, true);
  if (st == GSTAT_OK && dense && degrees)
    st = gstat_i_check_alias(ctx, fn, "degrees", degrees, "G.adjacency", &G->adjacency, false);
  if (st == GSTAT_OK && degrees)
    st = gstat_i_check_alias(ctx, fn, "degrees", degrees, "L", L, false);
  if (st != GSTAT_OK) return st;
  if (batch == 0 || n == 0) return GSTAT_OK;

  if (!dense) return csr_laplacian(ctx, fn, G, kind, L, degrees);
  return gstat_i_sched_laplacian(ctx, fn, &G->adjacency, G->symmetrize,
                                 G->self_loops == GSTAT_LOOPS_DROP, kind, L, degrees);
}

/* Entries of g's Laplacian: its off-diagonal pairs of positive weight and
 * the diagonal. */
static int64_t laplacian_entries(const gstat_i_graph *g) {
  int64_t need = g->n;
  for (int64_t i = 0; i < g->n; i++)
    for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
      need += g->indices[e] - g->base != i && (!g->weights || g->weights[e] > 0);
  return need;
}

/* g's Laplacian of `kind` (degrees d) into CSR arrays with room for it,
 * rows sorted with the diagonal in its place; returns the entries written. */
static int64_t fill_laplacian(const gstat_i_graph *g, const double *d, gstat_laplacian_kind kind,
                              int64_t *offsets, int64_t *indices, double *values) {
  const int64_t n = g->n;
  int64_t out = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    double di = d[i], si = gstat_i_inv_sqrt_degree(di), loop = 0;
    bool diag_done = false;
    for (int64_t e = g->offsets[i]; e <= g->offsets[i + 1]; e++) {
      int64_t j = e < g->offsets[i + 1] ? g->indices[e] - g->base : n;
      double w = e < g->offsets[i + 1] ? (g->weights ? g->weights[e] : 1.0) : 0.0;
      if (j == i) {
        loop = w;
        continue;
      }
      if (j > i && !diag_done) { /* the diagonal goes in its sorted place */
        indices[out] = i;
        values[out++] = kind == GSTAT_LAPLACIAN_UNNORMALIZED ? di - loop
                        : kind == GSTAT_LAPLACIAN_SYMMETRIC  ? (di > 0 ? 1.0 : 0.0) - loop * si * si
                                                             : (di > 0 ? 1.0 - loop / di : 0.0);
        diag_done = true;
      }
      if (j == n || !(w > 0)) continue;
      indices[out] = j;
      values[out++] = kind == GSTAT_LAPLACIAN_UNNORMALIZED ? -w
                      : kind == GSTAT_LAPLACIAN_SYMMETRIC
                          ? -gstat_i_norm_weight(w, si, gstat_i_inv_sqrt_degree(d[j]))
                          : -w / di;
    }
    offsets[i + 1] = out;
  }
  return out;
}

gstat_status gstat_laplacian_csr(gstat_ctx *ctx, const gstat_graph *G, gstat_laplacian_kind kind,
                                 int64_t capacity, int64_t *offsets, int64_t *indices,
                                 double *values, int64_t *nnz, double *degrees) {
  static const char fn[] = "laplacian_csr";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_status st = gstat_i_check_graph(ctx, fn, G);
  if (st == GSTAT_OK) st = check_kind(ctx, fn, kind);
  if (st != GSTAT_OK) return st;
  if (!nnz) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: nnz is NULL", fn);
  if (G->format == GSTAT_GRAPH_DENSE && G->adjacency.batch != 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: G.adjacency holds %lld graphs; this function takes one", fn,
                        (long long)G->adjacency.batch);
  if (offsets && (!indices || !values))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, !indices ? "indices" : "values");
  gstat_graph H;
  gstat_i_staged copy;
  st = gstat_i_graph_on_host(ctx, fn, G, &H, &copy);
  if (st != GSTAT_OK) return st;
  gstat_i_graph g;
  st = gstat_i_graph_from(ctx, fn, &H, 0, &g);
  gstat_i_sched_release(ctx, &copy); /* g holds its own CSR form of a dense graph */
  if (st != GSTAT_OK) return st;
  const int64_t n = g.n;
  /* a capacity of at least g's entries and the diagonal cannot fall short: no count first */
  if (!offsets || capacity < g.offsets[n] - g.offsets[0] + n) {
    *nnz = laplacian_entries(&g);
    if (offsets && capacity < *nnz)
      st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: capacity=%lld is below the %lld entries needed", fn,
                        (long long)capacity, (long long)*nnz);
    if (!offsets || st != GSTAT_OK) goto done;
  }
  double *d = degrees ? degrees : gstat_i_workspace(ctx, GSTAT_WS_GRAPH, 8 * (size_t)(n + 1));
  if (!d) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the degrees", fn);
    goto done;
  }
  gstat_i_graph_degrees(&g, d);
  *nnz = fill_laplacian(&g, d, kind, offsets, indices, values);
done:
  gstat_i_graph_release(ctx, &g);
  return st;
}
