/* The Laplacian operator's internal entry points, for the sparse eigensolver
 * (their signatures match gstat_i_apply_fn in graph/sparse_eigs.h). */
#ifndef GSTAT_GRAPH_LAPLACIAN_OP_H
#define GSTAT_GRAPH_LAPLACIAN_OP_H

#include "core/internal.h"
#include "gstat/graph.h"

/* gstat_laplacian_op_create without the begin/argument checks (G checked). */
gstat_status gstat_i_laplacian_op_new(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                      gstat_laplacian_kind kind, gstat_laplacian_op **out);

/* Y (n x m, column-major) = L X; `op` is a gstat_laplacian_op *. */
gstat_status gstat_i_laplacian_apply(gstat_ctx *ctx, void *op, int64_t n, int64_t m,
                                     const double *X, double *Y);

/* The CSR operator as a backend's Laplacian request (backend/sparse_req.h),
 * with p (n doubles of the caller's) filled: false for a dense operator. */
struct gstat_i_csr_lap;
bool gstat_i_laplacian_op_csr(const gstat_laplacian_op *op, double *p, struct gstat_i_csr_lap *out);

/* The CSR operator with its nodes renumbered breadth-first, for products
 * with locality (graph_order.c): node order[i] of op is node i of *out
 * (order: n, the caller frees it; *out: gstat_laplacian_op_destroy).
 * GSTAT_EUNSUPPORTED (no error set) for a dense operator. */
gstat_status gstat_i_laplacian_op_renumbered(gstat_ctx *ctx, const char *fn,
                                             const gstat_laplacian_op *op, gstat_laplacian_op **out,
                                             int64_t **order);

/* Connected components of the operator's graph (labels and stack: n each),
 * on the threads ctx's rules give the pass. */
int64_t gstat_i_laplacian_op_components(gstat_ctx *ctx, const gstat_laplacian_op *op,
                                        int64_t *labels, int64_t *stack);

#endif /* GSTAT_GRAPH_LAPLACIAN_OP_H */
