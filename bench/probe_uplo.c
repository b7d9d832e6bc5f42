/*
 * Does the triangle cuSOLVER reads change its speed? A symmetric matrix
 * holds its data in both triangles, and gstat copies the input before the
 * solver anyway (the solver overwrites it), so a copy that mirrors the
 * caller's triangle into the other could hand the solver whichever triangle
 * it is faster on. Times cusolverDnXsyevBatched and cusolverDnXsyevd (one
 * call per matrix, one stream) on the same batch with CUBLAS_FILL_MODE_LOWER
 * and UPPER, in interleaved rounds (CUDA events, each run including the
 * copy of the input), median of REPS:
 *
 *   probe_uplo f32|f64 BATCH N REPS
 */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "probe_util.h"
#include "sym_batch_device.h"

enum { VARIANTS = 4 }; /* batched L, batched U, per matrix L, per matrix U */

typedef struct {
  int64_t n, batch;
  cudaDataType t;
  size_t es;
  char *a0, *a, *w;
  int *info;
  cusolverDnHandle_t h;
  cusolverDnParams_t p;
  probe_ws ws;
} probe;

static cublasFillMode_t fill_of(int v) {
  return v % 2 ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

/* Grow the workspace to what variant v needs. */
static void reserve(probe *q, int v) {
  size_t dev = 0, host = 0;
  cusolverStatus_t st =
      v < 2 ? cusolverDnXsyevBatched_bufferSize(q->h, q->p, CUSOLVER_EIG_MODE_VECTOR, fill_of(v),
                                                q->n, q->t, q->a, q->n, q->t, q->w, q->t, &dev,
                                                &host, q->batch)
            : cusolverDnXsyevd_bufferSize(q->h, q->p, CUSOLVER_EIG_MODE_VECTOR, fill_of(v), q->n,
                                          q->t, q->a, q->n, q->t, q->w, q->t, &dev, &host);
  if (st != CUSOLVER_STATUS_SUCCESS) {
    fprintf(stderr, "bufferSize failed (%d)\n", (int)st);
    exit(1);
  }
  probe_ws_reserve(&q->ws, dev, host);
}

static int run(probe *q, int v) {
  size_t mat = q->es * (size_t)(q->n * q->n);
  CK(cudaMemcpyAsync(q->a, q->a0, mat * (size_t)q->batch, cudaMemcpyDeviceToDevice, 0));
  if (v < 2)
    return cusolverDnXsyevBatched(q->h, q->p, CUSOLVER_EIG_MODE_VECTOR, fill_of(v), q->n, q->t,
                                  q->a, q->n, q->t, q->w, q->t, q->ws.dev, q->ws.dev_bytes,
                                  q->ws.host, q->ws.host_bytes, q->info,
                                  q->batch) != CUSOLVER_STATUS_SUCCESS;
  for (int64_t k = 0; k < q->batch; k++)
    if (cusolverDnXsyevd(q->h, q->p, CUSOLVER_EIG_MODE_VECTOR, fill_of(v), q->n, q->t,
                         q->a + mat * (size_t)k, q->n, q->t, q->w + q->es * (size_t)(k * q->n),
                         q->t, q->ws.dev, q->ws.dev_bytes, q->ws.host, q->ws.host_bytes,
                         q->info + k) != CUSOLVER_STATUS_SUCCESS)
      return 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s f32|f64 BATCH N REPS\n", argv[0]);
    return 2;
  }
  probe q = {0};
  const int f64 = argv[1][1] == '6';
  q.batch = atoll(argv[2]);
  q.n = atoll(argv[3]);
  const int reps = atoi(argv[4]);
  q.t = f64 ? CUDA_R_64F : CUDA_R_32F;
  q.es = f64 ? 8 : 4;
  const int64_t n = q.n;
  size_t na = (size_t)(q.batch * n * n);
  q.a0 = bench_sym_batch_device(q.batch, n, f64); /* bench_cuda's matrices */
  CK(cudaMalloc((void **)&q.a, q.es * na));
  CK(cudaMalloc((void **)&q.w, q.es * (size_t)(q.batch * n)));
  CK(cudaMalloc((void **)&q.info, sizeof(int) * (size_t)q.batch));
  cusolverDnCreate(&q.h);
  cusolverDnCreateParams(&q.p);
  /* the batched routine is far slower from n = 2048 (bench/README.md) */
  const int first = n >= 2048 ? 2 : 0;
  for (int v = first; v < VARIANTS; v++) reserve(&q, v);
  float *t[VARIANTS] = {0};
  for (int v = first; v < VARIANTS; v++) {
    t[v] = malloc(sizeof(float) * (size_t)reps);
    if (run(&q, v)) { /* warm-up */
      fprintf(stderr, "variant %d failed\n", v);
      return 1;
    }
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int r = 0; r < reps; r++)
    for (int v = first; v < VARIANTS; v++) {
      CK(cudaEventRecord(e0, 0));
      if (run(&q, v)) return 1;
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&t[v][r], e0, e1));
    }
  printf("%s %lldx%lld, median of %d (ms): ", f64 ? "float64" : "float32", (long long)q.batch,
         (long long)n, reps);
  const char *names[VARIANTS] = {"batched_L", "batched_U", "syevd_L", "syevd_U"};
  for (int v = first; v < VARIANTS; v++) {
    printf("%s=%.3f ", names[v], probe_median_f(t[v], reps));
    free(t[v]);
  }
  printf("\n");
  return 0;
}
