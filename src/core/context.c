/* The context: options, cached workspace, last error and backends that ran. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "linalg/cpu/openblas_core.h"
#include "linalg/backend.h"

void gstat_ctx_options_init(gstat_ctx_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->backend = GSTAT_BACKEND_AUTO;
  opt->num_threads = 0;
  opt->check_finite = 1;
}

static int default_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

gstat_status gstat_ctx_create(gstat_ctx **out, const gstat_ctx_options *opt) {
  if (!out) return GSTAT_EINVAL;
  *out = NULL;
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  if (opt) o = *opt;
  if (o.backend != GSTAT_BACKEND_AUTO && o.backend != GSTAT_BACKEND_CPU &&
      o.backend != GSTAT_BACKEND_CUDA)
    return GSTAT_EINVAL;
  if (o.num_threads < 0) return GSTAT_EINVAL;
  if ((o.allocator.alloc == NULL) != (o.allocator.free == NULL)) return GSTAT_EINVAL;
  if (o.cuda_device < 0) return GSTAT_EINVAL;

  gstat_i_openblas_fix_core();

  /* The context itself comes from the caller's allocator too. */
  gstat_ctx tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.opt = o;
  gstat_ctx *ctx = gstat_i_alloc(&tmp, sizeof *ctx);
  if (!ctx) return GSTAT_ENOMEM;
  *ctx = tmp;
  ctx->num_threads = o.num_threads > 0 ? o.num_threads : default_threads();
  if (ctx->num_threads < 1) ctx->num_threads = 1;
  /* Asking for CUDA explicitly is refused when it cannot be served, rather
   * than silently running on the CPU. */
  if (o.backend == GSTAT_BACKEND_CUDA && !gstat_ctx_cuda_available(ctx)) {
    gstat_ctx_destroy(ctx);
    return GSTAT_EUNSUPPORTED;
  }
  *out = ctx;
  return GSTAT_OK;
}

void gstat_ctx_destroy(gstat_ctx *ctx) {
  if (!ctx) return;
  if (ctx->cuda.ops && ctx->cuda.ops->destroy) ctx->cuda.ops->destroy(ctx->cuda.state);
  gstat_ctx_release_workspace(ctx);
  gstat_i_free(ctx, ctx, sizeof *ctx);
}

void gstat_ctx_release_workspace(gstat_ctx *ctx) {
  if (!ctx) return;
  for (int s = 0; s < GSTAT_WS_COUNT; s++) {
    gstat_i_free(ctx, ctx->ws[s].ptr, ctx->ws[s].size);
    ctx->ws[s].ptr = NULL;
    ctx->ws[s].size = 0;
  }
}

const char *gstat_ctx_last_error(const gstat_ctx *ctx) {
  return ctx ? ctx->last_error : "gstat: context is NULL";
}

unsigned gstat_ctx_last_backends(const gstat_ctx *ctx) {
  return ctx ? ctx->last_backends : 0u;
}

const char *gstat_ctx_last_backend_name(const gstat_ctx *ctx) {
  switch (gstat_ctx_last_backends(ctx)) {
    case GSTAT_RAN_CPU: return "cpu";
    case GSTAT_RAN_CUDA: return "cuda";
    case GSTAT_RAN_CPU | GSTAT_RAN_CUDA: return "cuda+cpu";
    default: return "none";
  }
}

void gstat_i_begin(gstat_ctx *ctx) {
  ctx->last_error[0] = '\0';
  ctx->last_backends = 0;
}

gstat_status gstat_i_fail(gstat_ctx *ctx, gstat_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
  va_end(ap);
  return status;
}

gstat_status gstat_i_progress(gstat_ctx *ctx, const char *what, int64_t done, int64_t total) {
  if (!ctx->opt.progress || ctx->progress_muted > 0) return GSTAT_OK;
  if (ctx->opt.progress(done, total, what, ctx->opt.progress_user) == 0) return GSTAT_OK;
  return gstat_i_fail(ctx, GSTAT_ECANCELED,
                      "%s: cancelled by the progress callback at %lld of %lld", what,
                      (long long)done, (long long)total);
}
