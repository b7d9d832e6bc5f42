/*
 * What host arrays cost the CUDA backend's eigh, in one run:
 *   bench_cuda_host f32|f64 BATCH N REPS
 * prints key=value pairs, medians of REPS wall-clock times (ms) after a
 * warm-up:
 *   device_ms          A, w and V in device memory (no copies)
 *   host_pageable_ms   A, w and V in malloc'd host memory
 *   host_pinned_ms     A, w and V in cudaMallocHost'd host memory
 *   copy_pageable_ms   cudaMemcpy of A's bytes in and V's and w's out,
 *                      pageable host memory (what the host path moves)
 *   copy_pinned_ms     the same copies from and to pinned memory
 * So host_pageable - device is what the transfers add now, and
 * copy_pageable vs copy_pinned is what pinned staging could save at most.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <cuda_runtime.h>
#include <gstat/gstat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_check.h"
#include "gpu_ctx.h"
#include "sym_batch.h"

typedef struct {
  gstat_ctx *ctx;
  gstat_dtype dt;
  int64_t batch, n;
  gstat_location where;
  void *a, *w, *v;                  /* the arrays gstat_eigh sees */
  void *host_a, *host_vw, *dev_buf; /* for the raw copies */
  size_t a_bytes, vw_bytes;
} run;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static int eigh_once(run *r) {
  gstat_matrix A = gstat_matrix_col_major(r->a, r->dt, r->batch, r->n, r->n);
  gstat_matrix W = gstat_vector_batch(r->w, r->dt, r->batch, r->n);
  gstat_matrix V = gstat_matrix_col_major(r->v, r->dt, r->batch, r->n, r->n);
  A.location = W.location = V.location = r->where;
  if (gstat_eigh(r->ctx, &A, GSTAT_LOWER, &W, &V, NULL) != GSTAT_OK) {
    fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(r->ctx));
    return 1;
  }
  return r->where == GSTAT_CUDA && cudaDeviceSynchronize() != cudaSuccess;
}

static int copies_once(run *r) {
  CK(cudaMemcpy(r->dev_buf, r->host_a, r->a_bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(r->host_vw, r->dev_buf, r->vw_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

static double median_ms(int (*fn)(run *), run *r, int reps) {
  if (fn(r)) return -1;
  double *t = malloc(sizeof(double) * (size_t)reps);
  for (int k = 0; k < reps; k++) {
    double t0 = now_ms();
    if (fn(r)) return -1;
    t[k] = now_ms() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp);
  double m = t[reps / 2];
  free(t);
  return m;
}

/* Random symmetric matrices with a dominant diagonal, dense column-major. */
static void fill(void *a, int f64, int64_t batch, int64_t n) {
  size_t count = (size_t)(batch * n * n);
  double *d = malloc(sizeof(double) * count);
  bench_sym_batch(d, batch, n, 11);
  if (!f64) bench_pack_float(d, count);
  memcpy(a, d, count * (f64 ? sizeof(double) : sizeof(float)));
  free(d);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s f32|f64 BATCH N REPS\n", argv[0]);
    return 2;
  }
  int f64 = !strcmp(argv[1], "f64"), reps = atoi(argv[4]);
  run r;
  memset(&r, 0, sizeof r);
  r.dt = f64 ? GSTAT_F64 : GSTAT_F32;
  r.batch = atoll(argv[2]);
  r.n = atoll(argv[3]);
  size_t es = f64 ? 8 : 4;
  r.a_bytes = (size_t)(r.batch * r.n * r.n) * es;
  r.vw_bytes = r.a_bytes + (size_t)(r.batch * r.n) * es;
  r.ctx = bench_gpu_ctx();
  void *pageable = malloc(r.a_bytes), *pageable_w = malloc(r.vw_bytes - r.a_bytes),
       *pageable_v = malloc(r.a_bytes);
  void *pinned, *pinned_w, *pinned_v, *dev, *dev_w, *dev_v;
  CK(cudaMallocHost(&pinned, r.a_bytes));
  CK(cudaMallocHost(&pinned_w, r.vw_bytes - r.a_bytes));
  CK(cudaMallocHost(&pinned_v, r.a_bytes));
  CK(cudaMalloc(&dev, r.a_bytes));
  CK(cudaMalloc(&dev_w, r.vw_bytes - r.a_bytes));
  CK(cudaMalloc(&dev_v, r.a_bytes));
  CK(cudaMalloc(&r.dev_buf, r.vw_bytes));
  fill(pageable, f64, r.batch, r.n);
  memcpy(pinned, pageable, r.a_bytes);
  CK(cudaMemcpy(dev, pageable, r.a_bytes, cudaMemcpyHostToDevice));
  memset(pageable_v, 0, r.a_bytes); /* touch every page before timing */
  memset(pageable_w, 0, r.vw_bytes - r.a_bytes);

  r.where = GSTAT_CUDA, r.a = dev, r.w = dev_w, r.v = dev_v;
  printf("device_ms=%.4f ", median_ms(eigh_once, &r, reps));
  r.where = GSTAT_HOST, r.a = pageable, r.w = pageable_w, r.v = pageable_v;
  printf("host_pageable_ms=%.4f ", median_ms(eigh_once, &r, reps));
  r.a = pinned, r.w = pinned_w, r.v = pinned_v;
  printf("host_pinned_ms=%.4f ", median_ms(eigh_once, &r, reps));
  void *pageable_vw = malloc(r.vw_bytes), *pinned_vw;
  CK(cudaMallocHost(&pinned_vw, r.vw_bytes));
  memset(pageable_vw, 0, r.vw_bytes);
  r.host_a = pageable, r.host_vw = pageable_vw;
  printf("copy_pageable_ms=%.4f ", median_ms(copies_once, &r, reps));
  r.host_a = pinned, r.host_vw = pinned_vw;
  printf("copy_pinned_ms=%.4f\n", median_ms(copies_once, &r, reps));
  gstat_ctx_destroy(r.ctx);
  return 0;
}
