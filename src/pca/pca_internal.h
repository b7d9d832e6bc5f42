/* Pieces of the PCA implementation shared between src/pca/pca*.c. */
#ifndef GSTAT_PCA_PCA_INTERNAL_H
#define GSTAT_PCA_PCA_INTERNAL_H

#include <stdbool.h>

#include "core/internal.h"
#include "gstat/pca.h"

/* (Re)size *res for the given shape, reusing its memory when large enough;
 * sets the shape fields; scores NULL unless `scores`. */
gstat_status gstat_i_pca_result_prepare(gstat_ctx *ctx, const char *fn, gstat_pca_result **res,
                                        int64_t batch, int64_t n, int64_t p, int64_t k,
                                        bool scores);

/* Flip each of the k rows of comp (k x p, row-major) so that its entry of
 * largest magnitude is positive (the first one on ties). */
void gstat_i_pca_fix_signs(double *comp, int64_t k, int64_t p);

/* Replace row i of comp (k x p) by a unit vector orthogonal to rows 0..i-1,
 * built from the coordinate axes: the directions of zero variance, where
 * Xc^T u / sigma is undefined, still get an orthonormal component. */
void gstat_i_pca_complete_row(double *comp, int64_t i, int64_t p);

/*
 * Randomized truncated SVD of the centered n x p data Xc (column-major, ld n,
 * compute type ct): the top k singular values (descending) and right singular
 * vectors (rows of comp, k x p row-major, signs not yet fixed), from l >= k
 * random vectors and q power iterations (QR-normalized), seeded.
 */
gstat_status gstat_i_pca_randomized(gstat_ctx *ctx, gstat_dtype ct, int64_t n, int64_t p,
                                    const void *Xc, int64_t k, int64_t l, int64_t q, uint64_t seed,
                                    double *sigma, double *comp);

#endif /* GSTAT_PCA_PCA_INTERNAL_H */
