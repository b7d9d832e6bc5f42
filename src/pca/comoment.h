/* Column means and co-moment of host data in one pass (comoment.c). */
#ifndef GSTAT_PCA_COMOMENT_H
#define GSTAT_PCA_COMOMENT_H

#include "core/internal.h"

/*
 * mean (p doubles) and S = sum_i (x_i - mean)(x_i - mean)^T (p x p in the
 * compute type ct, column-major, ld lds, both triangles) of element b of the
 * host matrix X (n x p, n >= 1, any layout and dtype), threaded over row
 * blocks with the context's threads. NaN/Inf propagate into mean and S (the
 * caller checks). Workspace: GSTAT_WS_PCA_AUX. Statuses: GSTAT_OK, GSTAT_ENOMEM.
 */
gstat_status gstat_i_comoment(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct,
                              double *mean, void *S, int64_t lds);

#endif /* GSTAT_PCA_COMOMENT_H */
