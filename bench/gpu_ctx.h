/* The GPU benchmarks' gstat context: the CUDA backend, no finiteness check
 * of the input (the raw anchors check nothing either). */
#ifndef GSTAT_BENCH_GPU_CTX_H
#define GSTAT_BENCH_GPU_CTX_H

#include <gstat/gstat.h>
#include <stdio.h>
#include <stdlib.h>

/* A new context (gstat_ctx_destroy it); prints why and exits 1 when there
 * is no CUDA backend. */
static inline gstat_ctx *bench_gpu_ctx(void) {
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = GSTAT_BACKEND_CUDA;
  opt.check_finite = 0;
  gstat_ctx *ctx = NULL;
  if (gstat_ctx_create(&ctx, &opt) != GSTAT_OK) {
    fprintf(stderr, "no CUDA backend\n");
    exit(1);
  }
  return ctx;
}

#endif
