/* The CUDA backend's weighted and missing-value co-moments (moments_cuda.c),
 * for its ops table in module.c; the contracts are backend.h's. */
#ifndef GSTAT_BACKEND_CUDA_MOMENTS_CUDA_H
#define GSTAT_BACKEND_CUDA_MOMENTS_CUDA_H

#include "backend/backend.h"

gstat_status gstat_cu_wcomoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                const double *w, const unsigned char *keep, bool about_zero,
                                double *mean, double *M);
gstat_status gstat_cu_nan_rows_op(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  unsigned char *keep, int64_t *inf_at);
gstat_status gstat_cu_pairwise(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                               const double *w, const double *aw, const gstat_i_pairwise_out *o);

#endif /* GSTAT_BACKEND_CUDA_MOMENTS_CUDA_H */
