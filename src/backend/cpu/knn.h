/* The CPU's exact k-nearest-neighbour searches (knn.c), for the knn
 * primitive of primitives_cpu.c; the contract is backend.h's. */
#ifndef GSTAT_BACKEND_CPU_KNN_H
#define GSTAT_BACKEND_CPU_KNN_H

#include <stdbool.h>

#include "core/internal.h"

/* The k-d tree keeps a query's coordinates on the stack: at most this many. */
#define GSTAT_I_KNN_TREE_MAX_DIMS 16

/* Element b of X (n x p host, any dtype and strides, finite) searched by a
 * k-d tree (p <= GSTAT_I_KNN_TREE_MAX_DIMS; exact float64 distances) or by
 * blocked GEMM distances (float32 data in float32). Statuses: GSTAT_OK,
 * GSTAT_ENOMEM, GSTAT_ECANCELED (the progress callback). */
gstat_status gstat_i_knn_tree(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                              bool include_self, int64_t *nbr, double *d2);
gstat_status gstat_i_knn_gemm(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                              bool include_self, int64_t *nbr, double *d2);

/* NN-descent (knn_nndescent.c): approximate lists, seeded, in the same form
 * (sorted by index, float64 squared distances), a true neighbour possibly
 * missed. Lists of k others are searched GSTAT_I_KNN_NND_EXTRA / 2 longer
 * (at least); few points (n - 1 <= twice the list) or lists above
 * GSTAT_I_KNN_NND_MAX_LIST take the exact GEMM search. */
#define GSTAT_I_KNN_NND_EXTRA 16
#define GSTAT_I_KNN_NND_MAX_LIST 256
gstat_status gstat_i_knn_nndescent(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                                   bool include_self, uint64_t seed, int64_t *nbr, double *d2);

#endif /* GSTAT_BACKEND_CPU_KNN_H */
