/* PCA steps on device-resident data, dispatched to the CUDA module (see
 * linalg/dense.h): src/pca stays free of backend code. */
#include "linalg/backend.h"
#include "linalg/dense.h"

static gstat_status backend_for_pca(gstat_ctx *ctx, gstat_i_backend *be) {
  gstat_status st = gstat_i_cuda_backend(ctx, be);
  if (st != GSTAT_OK) return st;
  if (!be->ops->pca_fit || !be->ops->pca_scores)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "pca: the CUDA backend has no PCA support");
  return GSTAT_OK;
}

gstat_status gstat_i_device_pca_fit(gstat_ctx *ctx, const gstat_matrix *X, int center, int scale,
                                    double *mean, double *sd, void *w, void *V) {
  gstat_i_backend be;
  gstat_status st = backend_for_pca(ctx, &be);
  if (st != GSTAT_OK) return st;
  st = be.ops->pca_fit(be.state, ctx, X, center, scale, mean, sd, w, V);
  ctx->last_backends |= be.ops->ran_flag;
  return st;
}

gstat_status gstat_i_device_comoment(gstat_ctx *ctx, const gstat_matrix *X, double *mean,
                                     double *M) {
  gstat_i_backend be;
  gstat_status st = gstat_i_cuda_backend(ctx, &be);
  if (st != GSTAT_OK) return st;
  if (!be.ops->comoment)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "the CUDA backend has no co-moment support");
  st = be.ops->comoment(be.state, ctx, X, mean, M);
  ctx->last_backends |= be.ops->ran_flag;
  return st;
}

gstat_status gstat_i_device_pca_project(gstat_ctx *ctx, const gstat_matrix *X, const double *mean,
                                        const double *scale, const double *comp, const double *ev,
                                        int64_t k, gstat_matrix *Y) {
  gstat_i_backend be;
  gstat_status st = gstat_i_cuda_backend(ctx, &be);
  if (st != GSTAT_OK) return st;
  if (!be.ops->pca_project)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                        "pca_transform: the CUDA backend has no projection support");
  st = be.ops->pca_project(be.state, ctx, X, mean, scale, comp, ev, k, Y);
  ctx->last_backends |= be.ops->ran_flag;
  return st;
}

gstat_status gstat_i_device_pca_scores(gstat_ctx *ctx, int64_t b, const double *components,
                                       const double *scale, int64_t k, double *scores) {
  gstat_i_backend be;
  gstat_status st = backend_for_pca(ctx, &be);
  if (st != GSTAT_OK) return st;
  return be.ops->pca_scores(be.state, ctx, b, components, scale, k, scores);
}
