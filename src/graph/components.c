/* gstat_graph_components: breadth-first labelling over positive-weight edges. */
#include <string.h>

#include "graph/graph_internal.h"

static gstat_status components_host(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                    int64_t *n_components, int64_t *labels);

/* A dense graph in device memory: on a host copy (no device primitive yet). */
gstat_status gstat_graph_components(gstat_ctx *ctx, const gstat_graph *G, int64_t *n_components,
                                    int64_t *labels) {
  static const char fn[] = "graph_components";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_status st = gstat_i_check_graph(ctx, fn, G);
  if (st != GSTAT_OK) return st;
  if (!n_components) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: n_components is NULL", fn);
  gstat_graph H;
  gstat_i_staged copy;
  st = gstat_i_graph_on_host(ctx, fn, G, &H, &copy);
  if (st == GSTAT_OK) st = components_host(ctx, fn, &H, n_components, labels);
  gstat_i_sched_release(ctx, &copy);
  return st;
}

static gstat_status components_host(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                    int64_t *n_components, int64_t *labels) {
  gstat_status st = GSTAT_OK;
  /* either direction of an edge connects: the union (MAX) of A and A^T */
  gstat_graph U = *G;
  U.symmetrize = GSTAT_SYM_MAX;
  if (G->format == GSTAT_GRAPH_CSR) {
    gstat_i_graph g;
    int64_t n = G->csr.n;
    st = gstat_i_graph_from(ctx, fn, &U, 0, &g);
    if (st != GSTAT_OK) return st;
    int64_t *ws = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, sizeof(int64_t) * (size_t)(2 * n + 1));
    if (!ws) {
      st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate workspace for %lld nodes", fn,
                        (long long)n);
    } else {
      n_components[0] = gstat_i_graph_components(ctx, &g, ws, ws + n);
      if (labels) memcpy(labels, ws, sizeof(int64_t) * (size_t)n);
    }
    gstat_i_graph_release(ctx, &g);
    return st;
  }
  const gstat_matrix *M = &G->adjacency;
  int64_t n = M->rows;
  size_t cells;
  if (!gstat_i_mul_size((size_t)n, (size_t)n, &cells) || cells > SIZE_MAX / 8 - 2 * (size_t)n - 1)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
  double *A = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, 8 * (cells + 2 * (size_t)n + 1));
  if (!A) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate workspace", fn);
  int64_t *lab = (int64_t *)(A + cells), *stack = lab + n;
  gstat_i_err err = {0};
  /* validate every element before writing anything */
  for (int64_t b = 0; b < M->batch; b++)
    if (gstat_i_dense_adjacency(&err, fn, "G.adjacency", M, b, n, GSTAT_SYM_MAX, G->self_loops,
                                NULL) != GSTAT_OK)
      return gstat_i_err_raise(ctx, &err);
  for (int64_t b = 0; b < M->batch; b++) {
    gstat_i_dense_adjacency(&err, fn, "G.adjacency", M, b, n, GSTAT_SYM_MAX, G->self_loops, A);
    n_components[b] = gstat_i_dense_components(n, A, lab, stack);
    if (labels) memcpy(labels + b * n, lab, sizeof(int64_t) * (size_t)n);
  }
  return GSTAT_OK;
}
