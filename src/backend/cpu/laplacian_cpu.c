/* The CPU's dense Laplacian primitive (backend.h's laplacian): every element
 * validated first (L may be A itself), then read, symmetrized and turned into
 * its Laplacian in a double workspace, stored in L's dtype and layout. The
 * reading and the formulas are the graph code's own (graph_internal.h), so
 * the public gstat_laplacian and the spectral engine round alike. */
#include <stdio.h>

#include "core/matrix.h"
#include "graph/dense_rules.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

gstat_status gstat_i_cpu_laplacian(void *state, gstat_ctx *ctx, const char *fn,
                                   const gstat_matrix *A, int sym, int drop_loops, int kind,
                                   const gstat_matrix *L, const gstat_matrix *deg) {
  (void)state;
  int64_t batch = A->batch, n = A->rows;
  if (batch == 0 || n == 0) return GSTAT_OK;
  gstat_self_loops loops = drop_loops ? GSTAT_LOOPS_DROP : GSTAT_LOOPS_KEEP;
  size_t cells;
  if (!gstat_i_mul_size((size_t)n, (size_t)n, &cells) || cells > SIZE_MAX / 8 - (size_t)n)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
  double *W = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, 8 * (cells + (size_t)n));
  if (!W)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %lld x %lld workspace", fn,
                        (long long)n, (long long)n);
  double *d = W + cells;
  gstat_i_err err = {0};
  char name[48];
  for (int64_t b = 0; b < batch; b++) {
    snprintf(name, sizeof name, "G.adjacency[%lld]", (long long)b);
    if (gstat_i_dense_adjacency(&err, fn, name, A, b, n, (gstat_symmetrize)sym, loops, NULL) !=
        GSTAT_OK)
      return gstat_i_err_raise(ctx, &err);
  }
  for (int64_t b = 0; b < batch; b++) {
    gstat_i_dense_adjacency(&err, fn, name, A, b, n, (gstat_symmetrize)sym, loops, W);
    gstat_i_dense_laplacian(n, W, (gstat_laplacian_kind)kind, d);
    gstat_i_dense_store(GSTAT_F64, W, n, L, b);
    if (deg) gstat_i_dense_store(GSTAT_F64, d, n, deg, b);
  }
  return GSTAT_OK;
}
