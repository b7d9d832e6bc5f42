/*
 * A context's backends: creating and destroying a context (the CPU backend's
 * one-time OpenBLAS core check, the CUDA backend's state) and loading the
 * CUDA backend module at run time. libgstat has no CUDA library
 * in its NEEDED list: the module (libgstat_cuda.so.0, linked against cudart,
 * cuSOLVER and cuBLAS) is dlopen'ed on first use, from the directory this
 * library was loaded from or from $GSTAT_CUDA_MODULE. Without it, or without
 * a device, everything runs on the CPU.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/internal.h"
#include "backend/backend.h"
#include "backend/cpu/openblas_core.h"

static int check_finite(const gstat_ctx *ctx) {
  return ctx->opt.check_finite;
}

static const gstat_i_host_services host_services = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .fail = gstat_i_fail,
    .check_finite = check_finite,
    .cpu = &gstat_i_cpu_backend_ops,
};

/* Process-wide, written once under load_once, then read only. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const gstat_i_module *module;
static char load_error[512];

static void load_module(void) {
  char path[4096];
  const char *env = getenv("GSTAT_CUDA_MODULE");
  Dl_info self;
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else if (dladdr((const void *)&module, &self) && self.dli_fname &&
             strchr(self.dli_fname, '/')) {
    /* next to libgstat.so (or the executable, for the static library) */
    snprintf(path, sizeof path, "%s", self.dli_fname);
    *strrchr(path, '/') = '\0';
    size_t len = strlen(path);
    snprintf(path + len, sizeof path - len, "/libgstat_cuda.so.0");
  } else {
    snprintf(path, sizeof path, "libgstat_cuda.so.0");
  }
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    /* bounded parts: the message always fits load_error */
    snprintf(load_error, sizeof load_error, "cannot load the CUDA module %.300s: %.170s", path,
             dlerror());
    return;
  }
  gstat_i_module_entry_fn entry;
  void *sym = dlsym(handle, GSTAT_I_MODULE_ENTRY);
  *(void **)&entry = sym;
  const gstat_i_module *m = entry ? entry(&host_services) : NULL;
  if (!m || m->api_version != GSTAT_I_BACKEND_API_VERSION) {
    snprintf(load_error, sizeof load_error, "the CUDA module %.300s has no compatible %s", path,
             GSTAT_I_MODULE_ENTRY);
    dlclose(handle);
    return;
  }
  module = m; /* kept loaded for the life of the process */
}

gstat_status gstat_i_cuda_backend(gstat_ctx *ctx, gstat_i_backend *out) {
  gstat_i_backend_state *cu = &ctx->cuda;
  if (!cu->ops && !cu->unavailable) {
    pthread_once(&load_once, load_module);
    if (!module) {
      snprintf(cu->why, sizeof cu->why, "%.250s", load_error);
      cu->unavailable = 1;
    } else if (module->create(ctx, ctx->opt.cuda_device, &cu->state) != GSTAT_OK) {
      snprintf(cu->why, sizeof cu->why, "%.250s", ctx->last_error);
      cu->unavailable = 1;
    } else {
      cu->ops = module->ops;
      if (cu->stream) module->set_stream(cu->state, cu->stream);
    }
  }
  if (cu->unavailable) return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "no CUDA backend: %s", cu->why);
  out->ops = cu->ops;
  out->state = cu->state;
  return GSTAT_OK;
}

int gstat_ctx_cuda_available(gstat_ctx *ctx) {
  if (!ctx) return 0;
  gstat_i_backend be;
  char saved[sizeof ctx->last_error];
  memcpy(saved, ctx->last_error, sizeof saved);
  int ok = gstat_i_cuda_backend(ctx, &be) == GSTAT_OK;
  memcpy(ctx->last_error, saved, sizeof saved); /* asking is not a failed call */
  return ok;
}

gstat_status gstat_ctx_set_cuda_stream(gstat_ctx *ctx, void *stream) {
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_i_backend be;
  gstat_status st = gstat_i_cuda_backend(ctx, &be);
  if (st != GSTAT_OK) return st;
  ctx->cuda.stream = stream;
  return module->set_stream(ctx->cuda.state, stream);
}

int64_t gstat_ctx_device_allocations(const gstat_ctx *ctx) {
  if (!ctx || !ctx->cuda.ops || !ctx->cuda.ops->device_allocations) return 0;
  return ctx->cuda.ops->device_allocations(ctx->cuda.state);
}

gstat_status gstat_ctx_device_stats(const gstat_ctx *ctx, gstat_device_stats *stats,
                                    size_t stats_size) {
  if (!ctx || !stats || stats_size < GSTAT_DEVICE_STATS_SIZE_V1) return GSTAT_EINVAL;
  gstat_device_stats all;
  memset(&all, 0, sizeof all);
  if (ctx->cuda.ops && ctx->cuda.ops->device_stats)
    ctx->cuda.ops->device_stats(ctx->cuda.state, &all, sizeof all);
  all.allocations = gstat_ctx_device_allocations(ctx);
  /* A caller built against an older header gets the fields it knows; one
   * built against a newer header gets zeros past ours. */
  size_t known = stats_size < sizeof all ? stats_size : sizeof all;
  memcpy(stats, &all, known);
  if (stats_size > known) memset((char *)stats + known, 0, stats_size - known);
  return GSTAT_OK;
}

static int default_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int gstat_default_num_threads(void) {
  int n = default_threads();
  return n < 1 ? 1 : n;
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
