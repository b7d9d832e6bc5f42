/*
 * The graph's rules for dense adjacencies, shared by the graph code and the
 * CPU backend's `laplacian` primitive (as weights_impl.h is with the CUDA
 * kernels): reading and validating an adjacency, the Laplacian formulas.
 * Backends may include this header, not graph_internal.h (ctest `layers`).
 */
#ifndef GSTAT_GRAPH_DENSE_RULES_H
#define GSTAT_GRAPH_DENSE_RULES_H

#include <stdint.h>

#include "core/internal.h"
#include "gstat/graph.h"
#include "graph/weights_impl.h" /* gstat_i_sym_pair, gstat_i_sym_agree, gstat_i_inv_sqrt_degree */

/* Read the leading n x n block of element b of M (any dtype) into A (n x n,
 * column-major double, may be NULL to only validate): checks finiteness and
 * signs, symmetrizes by `sym` (CHECK: refuse asymmetry beyond the dtype's
 * tolerance), zeroes the diagonal under DROP. */
gstat_status gstat_i_dense_adjacency(gstat_i_err *err, const char *fn, const char *name,
                                     const gstat_matrix *M, int64_t b, int64_t n,
                                     gstat_symmetrize sym, gstat_self_loops loops, double *A);
/* The same on nt threads (column tiles in parallel), for one large graph
 * outside any parallel region. */
gstat_status gstat_i_dense_adjacency_threads(gstat_i_err *err, const char *fn, const char *name,
                                             const gstat_matrix *M, int64_t b, int64_t n,
                                             gstat_symmetrize sym, gstat_self_loops loops, int nt,
                                             double *A);

/* Turn the symmetric adjacency A (n x n, col-major) into its Laplacian in
 * place; d receives the degrees. RANDOM_WALK gives the non-symmetric
 * I - D^-1 A. */
void gstat_i_dense_laplacian(int64_t n, double *A, gstat_laplacian_kind kind, double *d);

/* Components of a dense symmetric adjacency (entries > 0 are edges; labels
 * and stack: n each). */
int64_t gstat_i_dense_components(int64_t n, const double *A, int64_t *labels, int64_t *stack);

#endif
