/* Column means and co-moment of host data in one pass (comoment.c). */
#ifndef GSTAT_PCA_COMOMENT_H
#define GSTAT_PCA_COMOMENT_H

#include <stdbool.h>

#include "core/internal.h"

/*
 * mean (p doubles) and S = sum_i (x_i - mean)(x_i - mean)^T (p x p in the
 * compute type ct, column-major, ld lds, both triangles) of element b of the
 * host matrix X (n x p, n >= 1, any layout and dtype), threaded over row
 * blocks with the context's threads. NaN/Inf propagate into mean and S (the
 * caller checks). Workspace: GSTAT_WS_PCA_AUX. Statuses: GSTAT_OK, GSTAT_ENOMEM.
 */
/* Whether the one-pass route pays for n x p data: tall data (the per-block
 * merges cost O(p^2) each, the per-thread p x p states must stay cached);
 * otherwise one syrk over a centred copy is the better plan. */
static inline bool gstat_i_comoment_pays(int64_t n, int64_t p) {
  return p <= 2048 && n >= 2 * p;
}

gstat_status gstat_i_comoment(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct,
                              double *mean, void *S, int64_t lds);

#endif /* GSTAT_PCA_COMOMENT_H */
