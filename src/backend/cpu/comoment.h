/* The CPU backend's fused co-moment and centred projection of host data
 * (comoment.c, project.c). */
#ifndef GSTAT_BACKEND_CPU_COMOMENT_H
#define GSTAT_BACKEND_CPU_COMOMENT_H

#include <stdbool.h>

#include "core/internal.h"

/* Whether n x p data are tall enough for threaded row blocks merged by
 * Chan et al.'s update (each merge costs O(p^2), the per-thread p x p states
 * must stay cached); other shapes are one block: one syrk over the centred
 * rows (bench/README.md). */
static inline bool gstat_i_comoment_pays(int64_t n, int64_t p) {
  return p <= 2048 && n >= 2 * p;
}

/*
 * mean (p doubles) and M = sum_i (x_i - mean)(x_i - mean)^T (p x p doubles,
 * column-major, both triangles) of element b of the host matrix X (n x p,
 * n >= 1, any layout and dtype), computed in X's compute type over row
 * blocks with the context's threads. NaN/Inf propagate into mean and M (the
 * caller checks). Workspace: GSTAT_WS_PCA_AUX. Statuses: GSTAT_OK, GSTAT_ENOMEM.
 */
gstat_status gstat_i_comoment(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, double *mean,
                              double *M);

/*
 * Element b of Y (m x k, host, any dtype and strides) = ((X_b - mean) /
 * scale) comp^T, column i times 1/sqrt(ev[i]) when ev is given (0 where ev
 * <= 0), for the host matrix X (m x p, any layout and dtype), computed in
 * X's compute type over row blocks with the context's threads. scale NULL:
 * 1; comp k x p doubles, row-major. Workspace: GSTAT_WS_PCA_AUX. Statuses:
 * GSTAT_OK, GSTAT_ENOMEM.
 */
gstat_status gstat_i_project(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, const double *mean,
                             const double *scale, const double *comp, const double *ev, int64_t k,
                             gstat_matrix *Y);

#endif /* GSTAT_BACKEND_CPU_COMOMENT_H */
