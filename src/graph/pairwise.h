/* Pairwise squared distances by blocked GEMM, row by row (internal, for
 * affinity.c; kNN lists are the scheduler's knn primitive). */
#ifndef GSTAT_GRAPH_PAIRWISE_H
#define GSTAT_GRAPH_PAIRWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

/* Called for every point i with d2[j] = ||x_i - x_j||^2 for all j (n
 * entries, >= 0, d2[i] = 0), from OpenMP threads: write only row i's outputs. */
typedef void (*gstat_i_dist_row_fn)(void *user, int64_t i, const double *d2);

/* X: n x p column-major double (ld n). `block` is scratch of at least
 * gstat_i_pairwise_scratch(n) doubles. */
int64_t gstat_i_pairwise_scratch(int64_t n);
gstat_status gstat_i_pairwise_rows(gstat_ctx *ctx, int64_t n, int64_t p, const double *X,
                                   double *block, gstat_i_dist_row_fn row, void *user);

#endif /* GSTAT_GRAPH_PAIRWISE_H */
