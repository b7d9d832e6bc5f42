/*
 * A stand-in for the CUDA module, for testing the dispatcher's fallback on
 * machines without a GPU: it has the module's entry point and table, does
 * the work with the host's CPU backend, and fails on request
 * (GSTAT_FAKE_FAULT: "nodevice" at creation, "oom" for every call, "retry"
 * to flag every third element as unreliable after scribbling over it).
 */
#include <stdlib.h>
#include <string.h>

#include "linalg/backend.h"

static const gstat_i_host_services *host;

static const char *fault(void) {
  const char *f = getenv("GSTAT_FAKE_FAULT");
  return f ? f : "";
}

/* Scribble over element b's outputs and flag it, as a GPU that produced
 * garbage would; the dispatcher must recompute it. */
static void spoil(gstat_matrix *m, int64_t b, int64_t *info) {
  info[b] = GSTAT_I_INFO_RETRY;
  if (!m || m->dtype != GSTAT_F64) return;
  double *p = (double *)m->data + b * m->batch_stride;
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t j = 0; j < m->cols; j++) p[i * m->row_stride + j * m->col_stride] = 12345.0;
}

static gstat_status after(gstat_status st, gstat_matrix *out, gstat_matrix *w, int64_t batch,
                          int64_t *info) {
  if (st != GSTAT_OK || strcmp(fault(), "retry") != 0) return st;
  for (int64_t b = 1; b < batch; b += 3) {
    spoil(out, b, info);
    spoil(w, b, info);
  }
  return GSTAT_OK;
}

static gstat_status oom(gstat_ctx *ctx) {
  return host->fail(ctx, GSTAT_ENOMEM, "fake: simulated device out of memory");
}

static gstat_status eigh(void *s, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                         gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(host->cpu->eigh(NULL, ctx, A, uplo, w, V, info), V, w, A->batch, info);
}

static gstat_status cholesky(void *s, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                             gstat_matrix *F, int64_t *info) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(host->cpu->cholesky(NULL, ctx, A, uplo, F, info), F, NULL, A->batch, info);
}

static gstat_status cholesky_solve(void *s, gstat_ctx *ctx, const gstat_matrix *F, gstat_uplo uplo,
                                   const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(host->cpu->cholesky_solve(NULL, ctx, F, uplo, B, X, info), X, NULL, F->batch, info);
}

static gstat_status triangular_solve(void *s, gstat_ctx *ctx, const gstat_matrix *T,
                                     gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                     const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(host->cpu->triangular_solve(NULL, ctx, T, uplo, trans, diag, B, X, info), X, NULL,
               T->batch, info);
}

static int64_t allocations(void *s) {
  (void)s;
  return 0;
}

static void destroy(void *s) {
  free(s);
}

static const gstat_i_backend_ops ops = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .name = "fake-cuda",
    .ran_flag = GSTAT_RAN_CUDA,
    .eigh = eigh,
    .cholesky = cholesky,
    .cholesky_solve = cholesky_solve,
    .triangular_solve = triangular_solve,
    .destroy = destroy,
    .device_allocations = allocations,
};

static gstat_status create(gstat_ctx *ctx, int device, void **state) {
  (void)device;
  if (!strcmp(fault(), "nodevice"))
    return host->fail(ctx, GSTAT_EUNSUPPORTED, "fake: no CUDA device");
  *state = malloc(1);
  return *state ? GSTAT_OK : GSTAT_ENOMEM;
}

static gstat_status set_stream(void *state, void *stream) {
  (void)state;
  (void)stream;
  return GSTAT_OK;
}

static const gstat_i_module module = {GSTAT_I_BACKEND_API_VERSION, &ops, create, set_stream};

__attribute__((visibility("default"))) const gstat_i_module *gstat_cuda_module_v1(
    const gstat_i_host_services *h) {
  host = h;
  return &module;
}
