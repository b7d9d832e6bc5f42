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

/* Make each row i >= 1 of comp (k x p, row-major) orthogonal to rows
 * 0..i-1 and of unit length, in order: classical Gram-Schmidt twice through
 * BLAS products. */
gstat_status gstat_i_pca_orthonormalize_rows(gstat_ctx *ctx, double *comp, int64_t k, int64_t p);

/* The Euclidean norm of the p values at v (four partial sums: no single
 * chain of dependent additions). */
double gstat_i_pca_norm(const double *v, int64_t p);

/* Replace row i of comp (k x p) by a unit vector orthogonal to rows 0..i-1,
 * built from the coordinate axes: the directions of zero variance, where
 * Xc^T u / sigma is undefined, still get an orthonormal component. */
void gstat_i_pca_complete_row(double *comp, int64_t i, int64_t p);

/*
 * Randomized truncated SVD of the centered n x p data Xc (dense column-major,
 * compute type, batch 1; host or device memory): the top k singular values
 * (descending) and right singular vectors (rows of comp, k x p row-major,
 * signs not yet fixed), from l >= k random vectors and q power iterations
 * (QR-normalized), seeded. Y (n x l) and Z (p x l), the sketches, lie in
 * device memory beside a device Xc; NULL for host data (host workspace).
 */
gstat_status gstat_i_pca_randomized(gstat_ctx *ctx, const gstat_matrix *Xc, const gstat_matrix *Y,
                                    const gstat_matrix *Z, int64_t k, int64_t l, int64_t q,
                                    uint64_t seed, double *sigma, double *comp);

/* ---- device data (pca_device.c) ---- */

/* Device memory carved into dense column-major matrices: a first pass with
 * base NULL adds up the size (used), gstat_i_dev_region_open allocates it
 * (the backend's chain memory) and resets used for the second pass. */
typedef struct gstat_i_dev_region {
  char *base;
  size_t used;
  gstat_location location;
  int32_t device;
} gstat_i_dev_region;

gstat_matrix gstat_i_dev_take(gstat_i_dev_region *r, gstat_dtype dt, int64_t batch, int64_t rows,
                              int64_t cols);
/* GSTAT_EUNSUPPORTED (no message) or GSTAT_ENOMEM when the device offers no
 * such memory: the caller then works on host copies. */
gstat_status gstat_i_dev_region_open(gstat_ctx *ctx, const char *fn, const gstat_matrix *like,
                                     gstat_i_dev_region *r);

/* Every entry of the device matrix M set to v. */
gstat_status gstat_i_dev_fill(gstat_ctx *ctx, const char *fn, const gstat_matrix *M, double v);
/* Host doubles (M's shape, dense column-major) into M, and back. */
gstat_status gstat_i_dev_put(gstat_ctx *ctx, const char *fn, const double *h,
                             const gstat_matrix *M);
gstat_status gstat_i_dev_get(gstat_ctx *ctx, const char *fn, const gstat_matrix *M, double *h);

/* The buffers of a centred copy on the device: Xc (nb x n x p), Xs (its
 * scaled copy; only for scaling), ones (1 x n x 1), vec (nb x 1 x p), all in
 * the compute dtype. */
typedef struct gstat_i_dev_prep {
  gstat_matrix Xc, Xs, ones, vec;
} gstat_i_dev_prep;

/* X (device) into d->Xc, less its column means (two passes: the second
 * removes the first one's rounding) when center, then divided by the column
 * deviations into d->Xs when scale. mean and sd: nb x p host doubles (0 and
 * 1 where not asked); h: nb x p doubles of scratch; *constant: the first
 * (b * p + j) whose deviation is not > 0 (then nothing is scaled), else -1. */
gstat_status gstat_i_dev_prepare(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                 const gstat_i_dev_prep *d, bool center, bool scale, double *mean,
                                 double *sd, double *h, int64_t *constant);
/* ss (nb x p host doubles) = the column sums of squares of each element of
 * Xc, through vec (nb x 1 x p, device). */
gstat_status gstat_i_dev_sumsq(gstat_ctx *ctx, const char *fn, const gstat_matrix *Xc,
                               const gstat_matrix *vec, double *ss);

#endif /* GSTAT_PCA_PCA_INTERNAL_H */
