/*
 * Where a gstat_eigh call on device data spends its time beyond the Jacobi
 * kernel (n <= 32): the same matrices and buffers timed as
 *   gstat_ms      gstat_eigh (check_finite off, info NULL), as bench_cuda;
 *   kernel_ms     the Jacobi kernel alone (gstat_cu_eigh_jacobi), its info
 *                 and flags left on the device;
 *   host_ms       the gstat call's wall time on the host (clock_gettime);
 * each with vectors and values only (_values), medians of REPS rounds, the
 * routines alternating within a round (CUDA events on the legacy stream).
 *   probe_jacobi_call f32|f64 BATCH N REPS
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cuda_runtime.h>
#include <gstat/gstat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_check.h"
#include "gpu_ctx.h"
#include "backend/cuda/kernels/kernels.h"
#include "probe_util.h"
#include "sym_batch_device.h"

typedef struct {
  int f64;
  int64_t batch, n;
  void *a, *w, *v;
  int *info; /* info then flags, for the bare kernel */
  gstat_ctx *ctx;
  double host_ms;
} probe;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static void run_gstat(probe *p, int want_v) {
  gstat_dtype dt = p->f64 ? GSTAT_F64 : GSTAT_F32;
  gstat_matrix A = gstat_matrix_col_major(p->a, dt, p->batch, p->n, p->n);
  gstat_matrix W = gstat_vector_batch(p->w, dt, p->batch, p->n);
  gstat_matrix V = gstat_matrix_col_major(p->v, dt, p->batch, p->n, p->n);
  A.location = W.location = V.location = GSTAT_CUDA;
  double t0 = now_ms();
  if (gstat_eigh(p->ctx, &A, GSTAT_LOWER, &W, want_v ? &V : NULL, NULL) != GSTAT_OK) {
    fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(p->ctx));
    exit(1);
  }
  p->host_ms = now_ms() - t0;
}

static void run_kernel(probe *p, int want_v) {
  CK(gstat_cu_eigh_jacobi(p->f64 ? 2 : 1, p->a, 0, p->n, p->batch, p->w, want_v ? p->v : NULL,
                          p->info, p->info + p->batch, 0));
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: probe_jacobi_call f32|f64 BATCH N REPS\n");
    return 2;
  }
  probe p = {.f64 = !strcmp(argv[1], "f64"), .batch = atoll(argv[2]), .n = atoll(argv[3])};
  int reps = atoi(argv[4]);
  size_t es = p.f64 ? 8 : 4, na = (size_t)(p.batch * p.n * p.n);
  p.a = bench_sym_batch_device(p.batch, p.n, p.f64);
  CK(cudaMalloc(&p.v, na * es));
  CK(cudaMalloc(&p.w, (size_t)(p.batch * p.n) * es));
  CK(cudaMalloc((void **)&p.info, 2 * sizeof(int) * (size_t)p.batch));
  p.ctx = bench_gpu_ctx();
  enum { kRoutines = 6 };
  const char *names[kRoutines] = {"gstat_ms",        "kernel_ms",        "host_ms",
                                  "gstat_values_ms", "kernel_values_ms", "host_values_ms"};
  double *t[kRoutines];
  for (int k = 0; k < kRoutines; k++) t[k] = malloc(sizeof(double) * (size_t)reps);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  run_gstat(&p, 1); /* warm-up: buffers, module */
  run_gstat(&p, 0);
  run_kernel(&p, 1);
  CK(cudaDeviceSynchronize());
  for (int r = 0; r < reps; r++)
    for (int v = 1; v >= 0; v--)
      for (int kernel = 0; kernel < 2; kernel++) {
        float ms;
        CK(cudaEventRecord(e0, 0));
        if (kernel)
          run_kernel(&p, v);
        else
          run_gstat(&p, v);
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&ms, e0, e1));
        int base = v ? 0 : 3;
        t[base + kernel][r] = ms;
        if (!kernel) t[base + 2][r] = p.host_ms;
      }
  printf("%s %lldx%lld:", argv[1], (long long)p.batch, (long long)p.n);
  for (int k = 0; k < kRoutines; k++) {
    printf(" %s=%.4f", names[k], probe_median(t[k], reps));
    free(t[k]);
  }
  printf("\n");
  gstat_ctx_destroy(p.ctx);
  cudaFree(p.a);
  cudaFree(p.v);
  cudaFree(p.w);
  cudaFree(p.info);
  return 0;
}
