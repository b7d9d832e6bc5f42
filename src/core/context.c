/* The context: options, cached workspace, last error and backends that ran
 * (creating and destroying it, which sets up its backends: backend/backends.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

void gstat_ctx_options_init(gstat_ctx_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->backend = GSTAT_BACKEND_AUTO;
  opt->num_threads = 0;
  opt->check_finite = 1;
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
  ctx->last_threads = 0;
}

int gstat_ctx_num_threads(const gstat_ctx *ctx) {
  return ctx ? ctx->num_threads : 0;
}

int gstat_ctx_last_threads(const gstat_ctx *ctx) {
  return ctx ? ctx->last_threads : 0;
}

gstat_status gstat_i_fail(gstat_ctx *ctx, gstat_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
  va_end(ap);
  return status;
}

gstat_status gstat_i_err_set(gstat_i_err *err, gstat_status status, const char *fmt, ...) {
  if (err->status != GSTAT_OK) return status;
  err->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
  return status;
}

gstat_status gstat_i_err_raise(gstat_ctx *ctx, const gstat_i_err *err) {
  if (err->status == GSTAT_OK) return GSTAT_OK;
  return gstat_i_fail(ctx, err->status, "%s", err->msg);
}

gstat_status gstat_i_progress(gstat_ctx *ctx, const char *what, int64_t done, int64_t total) {
  if (!ctx->opt.progress || ctx->progress_muted > 0) return GSTAT_OK;
  if (ctx->opt.progress(done, total, what, ctx->opt.progress_user) == 0) return GSTAT_OK;
  return gstat_i_fail(ctx, GSTAT_ECANCELED,
                      "%s: cancelled by the progress callback at %lld of %lld", what,
                      (long long)done, (long long)total);
}
