/* Pairwise squared distances by blocked GEMM, and k-nearest-neighbour lists
 * (internal, for affinity.c). */
#ifndef GSTAT_GRAPH_KNN_H
#define GSTAT_GRAPH_KNN_H

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

/* The k nearest neighbours of every point: nbr[i*k + r] (sorted by index in
 * each row) and their squared distances d2[i*k + r]. With include_self, i
 * is its own first neighbour and k - 1 others follow; ties by the smaller index. */
gstat_status gstat_i_knn(gstat_ctx *ctx, int64_t n, int64_t p, const double *X, double *block,
                         int64_t k, bool include_self, int64_t *nbr, double *d2);

#endif /* GSTAT_GRAPH_KNN_H */
