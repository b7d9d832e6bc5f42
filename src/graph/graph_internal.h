/*
 * Graph internals shared by src/graph and src/spectral (never installed).
 *
 * Two working forms of a validated undirected graph:
 * - gstat_i_graph: CSR, symmetric, sorted rows without duplicates, weights
 *   finite and >= 0, self-loops only when kept. Borrowed from the caller
 *   when the input already is all that, else an owned copy.
 * - a dense symmetric adjacency (n x n, column-major double), for graphs
 *   small enough for dense eigen decompositions (and for batches).
 *
 * Errors are recorded in a gstat_i_err, not the context, so that the
 * per-graph work of a batch can run in parallel; the caller turns the first
 * one into the context's status and message (gstat_i_err_raise).
 */
#ifndef GSTAT_GRAPH_INTERNAL_H
#define GSTAT_GRAPH_INTERNAL_H

#include "graph/dense_rules.h" /* the dense adjacency and Laplacian rules, weights_impl.h */
#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "gstat/graph.h"
#include "backend/sched.h"

/* A CSR input: row i (local, 0 <= i < n) holds entries offsets[i] ..
 * offsets[i+1]-1 with column indices base .. base+n-1 (base > 0 for a graph
 * inside a ragged batch, whose indices are global). `first` is the entry
 * number of offsets[0] reported in messages. */
typedef struct gstat_i_csr_in {
  int64_t n, base;
  const int64_t *offsets, *indices;
  const double *weights;
} gstat_i_csr_in;

/* Offsets non-decreasing and inside [offsets[0], limit], indices inside the
 * node range and strictly increasing in each row (no duplicates), weights
 * finite and >= 0. `name` is the argument ("G", "Gs graph 3"). When
 * self_loops is not NULL it reports whether a diagonal entry exists. */
gstat_status gstat_i_csr_validate(gstat_i_err *err, const char *fn, const char *name,
                                  const gstat_i_csr_in *g, bool *self_loops);

/* Under GSTAT_SYM_CHECK: GSTAT_EINVAL naming the first entry (i, j) whose
 * mirror (j, i) is missing or differs beyond CHECK's tolerance
 * (gstat_i_sym_agree). *exact (when not NULL) says whether every pair is
 * equal, so that the graph can be used as it is. Rows are checked on the
 * threads ctx's rules give such a pass (NULL: one thread). */
gstat_status gstat_i_csr_check_symmetric(gstat_i_err *err, const char *fn, const char *name,
                                         const gstat_i_csr_in *g, gstat_ctx *ctx, bool *exact);

/* Combine a_ij and a_ji by a symmetrization mode (CHECK: their mean). */
double gstat_i_sym_combine(gstat_symmetrize mode, double a, double b);
/* Whether a and b agree to CHECK's tolerance for data that came in dtype dt. */
bool gstat_i_sym_close(double a, double b, gstat_dtype dt);

typedef struct gstat_i_graph {
  int64_t n, nnz;
  const int64_t *offsets; /* n + 1, offsets[0] may be > 0 (borrowed slice) */
  const int64_t *indices; /* column = indices[e] - base */
  const double *weights;  /* NULL: all 1 */
  int64_t base;
  void *owned; /* block holding copied offsets/indices/weights, or NULL */
  size_t owned_size;
} gstat_i_graph;

/* Validate a single graph (CSR, or DENSE element b) and bring it to the
 * working CSR form: borrowed when possible, else an owned copy. */
gstat_status gstat_i_graph_from(gstat_ctx *ctx, const char *fn, const gstat_graph *G, int64_t b,
                                gstat_i_graph *out);
void gstat_i_graph_release(gstat_ctx *ctx, gstat_i_graph *g);

/* out takes c as its owned CSR (freed by gstat_i_graph_release). */
void gstat_i_graph_adopt(gstat_i_graph *out, gstat_csr *c);

/* Breadth-first numbering of g's nodes, each component from its first
 * node: order[new] = old (n); seen: n bytes of scratch. */
void gstat_i_graph_bfs_order(const gstat_i_graph *g, int64_t *order, unsigned char *seen);
/* g with node order[i] renumbered i (rows sorted, weights 1 where g has
 * none), into out as an owned copy (graph_order.c). */
gstat_status gstat_i_graph_renumbered(gstat_ctx *ctx, const char *fn, const gstat_i_graph *g,
                                      const int64_t *order, gstat_i_graph *out);

/* d_i = sum_j w_ij (self-loops included when present). */
void gstat_i_graph_degrees(const gstat_i_graph *g, double *d);

/* Components over positive-weight edges; labels numbered by first node.
 * `parent` holds n entries of scratch; on the threads ctx's rules give the
 * pass (the result is the same for any count). Returns the count. */
int64_t gstat_i_graph_components(gstat_ctx *ctx, const gstat_i_graph *g, int64_t *labels,
                                 int64_t *parent);

/* Check a gstat_graph descriptor's fields (format, enums, dense matrix). */
gstat_status gstat_i_check_graph(gstat_ctx *ctx, const char *fn, const gstat_graph *G);

/* G with its dense adjacency in host memory, for the steps that have no
 * device primitive: *H = *G when it lies there already, else H's adjacency
 * is a host copy held by *copy (release it with gstat_i_sched_release). */
gstat_status gstat_i_graph_on_host(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                   gstat_graph *H, gstat_i_staged *copy);

/* ---- dense adjacency ---------------------------------------------------------- */

/* The same from a validated CSR input (directed entries scattered, then
 * symmetrized; CHECK inputs must have passed gstat_i_csr_check_symmetric). */
void gstat_i_csr_to_dense(const gstat_i_csr_in *g, gstat_symmetrize sym, gstat_self_loops loops,
                          double *A);

/* Library-owned CSR (gstat_csr_free frees it): one block after the header. */
gstat_csr *gstat_i_csr_new(int64_t n, int64_t nnz, bool weights);

/* Symmetrize a validated CSR input into a new library-owned sorted CSR:
 * w_ij = combine(a_ij, a_ji); self-loops dropped under DROP; explicit
 * zeros are kept as entries only when `keep_zeros`. NULL on allocation failure. */
gstat_csr *gstat_i_csr_symmetrized(const gstat_i_csr_in *g, gstat_symmetrize sym,
                                   gstat_self_loops loops, bool keep_zeros);

#endif /* GSTAT_GRAPH_INTERNAL_H */
