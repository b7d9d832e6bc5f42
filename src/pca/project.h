/* Scores of host data on fitted components, without a centred copy (project.c). */
#ifndef GSTAT_PCA_PROJECT_H
#define GSTAT_PCA_PROJECT_H

#include "core/internal.h"

/*
 * out (n x k doubles, row-major) = ((X_b - mean) / scale) comp^T for element
 * b of the host matrix X (n x p, any layout and dtype), computed in ct over
 * row blocks with the context's threads. scale NULL: 1; comp k x p doubles,
 * row-major. Workspace: GSTAT_WS_PCA_AUX. Statuses: GSTAT_OK, GSTAT_ENOMEM.
 */
gstat_status gstat_i_pca_project(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct,
                                 const double *mean, const double *scale, const double *comp,
                                 int64_t k, double *out);

#endif /* GSTAT_PCA_PROJECT_H */
