/*
 * Where does cusolverDnXsyevd spend its time on one large matrix (gstat's
 * large-n path)? Its three stages, timed apart with CUDA events on bench_cuda's
 * matrices (median of REPS, each run including the copy of the input):
 *   sytrd     the reduction to tridiagonal form ([SD]sytrd)
 *   ormtr     applying its Q to an n x n matrix ([SD]ormtr), the
 *             back-transformation of the tridiagonal solver's vectors
 *   values    Xsyevd without vectors (sytrd plus the tridiagonal values)
 *   vectors   Xsyevd with vectors (all of it)
 * vectors - sytrd - ormtr is about the tridiagonal divide and conquer. A
 * faster reduction (two-stage: a band by blocked GEMMs, then bulge chasing)
 * can only gain what sytrd takes.
 *
 *   probe_syevd_parts f32|f64 N REPS
 */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_check.h"
#include "probe_util.h"
#include "sym_batch_device.h"

enum { SYTRD, ORMTR, VALUES, VECTORS, PARTS };

typedef struct {
  int n, f64;
  size_t es;
  char *a0, *a, *c, *c0, *d, *e, *tau, *w;
  int *info;
  cusolverDnHandle_t h;
  cusolverDnParams_t p;
  probe_ws ws;
} probe;

static void check(cusolverStatus_t st, const char *what) {
  if (st != CUSOLVER_STATUS_SUCCESS) {
    fprintf(stderr, "%s failed (%d)\n", what, (int)st);
    exit(1);
  }
}

/* Every stage's workspace, so that no timed run allocates. */
static void reserve(probe *q) {
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  cudaDataType t = q->f64 ? CUDA_R_64F : CUDA_R_32F;
  int lw = 0, lo_w = 0;
  size_t dev = 0, host = 0;
  if (q->f64) {
    check(cusolverDnDsytrd_bufferSize(q->h, lo, q->n, (double *)q->a, q->n, (double *)q->d,
                                      (double *)q->e, (double *)q->tau, &lw),
          "sytrd_bufferSize");
    check(cusolverDnDormtr_bufferSize(q->h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, q->n, q->n,
                                      (double *)q->a, q->n, (double *)q->tau, (double *)q->c, q->n,
                                      &lo_w),
          "ormtr_bufferSize");
  } else {
    check(cusolverDnSsytrd_bufferSize(q->h, lo, q->n, (float *)q->a, q->n, (float *)q->d,
                                      (float *)q->e, (float *)q->tau, &lw),
          "sytrd_bufferSize");
    check(cusolverDnSormtr_bufferSize(q->h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, q->n, q->n,
                                      (float *)q->a, q->n, (float *)q->tau, (float *)q->c, q->n,
                                      &lo_w),
          "ormtr_bufferSize");
  }
  probe_ws_reserve(&q->ws, (size_t)(lw > lo_w ? lw : lo_w) * q->es, 0);
  check(cusolverDnXsyevd_bufferSize(q->h, q->p, CUSOLVER_EIG_MODE_VECTOR, lo, q->n, t, q->a, q->n,
                                    t, q->w, t, &dev, &host),
        "Xsyevd_bufferSize");
  probe_ws_reserve(&q->ws, dev, host);
}

/* One run of stage `part`; ORMTR needs the reflectors of a SYTRD run in a. */
static void run(probe *q, int part) {
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  cudaDataType t = q->f64 ? CUDA_R_64F : CUDA_R_32F;
  size_t mat = q->es * (size_t)q->n * (size_t)q->n;
  int lw = (int)(q->ws.dev_bytes / q->es);
  if (part == ORMTR) {
    CK(cudaMemcpyAsync(q->c, q->c0, mat, cudaMemcpyDeviceToDevice, 0));
    check(
        q->f64
            ? cusolverDnDormtr(q->h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, q->n, q->n, (double *)q->a,
                               q->n, (double *)q->tau, (double *)q->c, q->n, q->ws.dev, lw, q->info)
            : cusolverDnSormtr(q->h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, q->n, q->n, (float *)q->a,
                               q->n, (float *)q->tau, (float *)q->c, q->n, q->ws.dev, lw, q->info),
        "ormtr");
    return;
  }
  CK(cudaMemcpyAsync(q->a, q->a0, mat, cudaMemcpyDeviceToDevice, 0));
  if (part == SYTRD)
    check(q->f64 ? cusolverDnDsytrd(q->h, lo, q->n, (double *)q->a, q->n, (double *)q->d,
                                    (double *)q->e, (double *)q->tau, q->ws.dev, lw, q->info)
                 : cusolverDnSsytrd(q->h, lo, q->n, (float *)q->a, q->n, (float *)q->d,
                                    (float *)q->e, (float *)q->tau, q->ws.dev, lw, q->info),
          "sytrd");
  else
    check(cusolverDnXsyevd(q->h, q->p,
                           part == VALUES ? CUSOLVER_EIG_MODE_NOVECTOR : CUSOLVER_EIG_MODE_VECTOR,
                           lo, q->n, t, q->a, q->n, t, q->w, t, q->ws.dev, q->ws.dev_bytes,
                           q->ws.host, q->ws.host_bytes, q->info),
          "Xsyevd");
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s f32|f64 N REPS\n", argv[0]);
    return 2;
  }
  probe q = {0};
  q.f64 = argv[1][1] == '6';
  q.n = atoi(argv[2]);
  const int reps = atoi(argv[3]);
  q.es = q.f64 ? 8 : 4;
  size_t mat = q.es * (size_t)q.n * (size_t)q.n, vec = q.es * (size_t)q.n;
  q.a0 = bench_sym_batch_device(1, q.n, q.f64);
  q.c0 = bench_sym_batch_device(1, q.n, q.f64); /* any n x n matrix for ormtr */
  CK(cudaMalloc((void **)&q.a, mat));
  CK(cudaMalloc((void **)&q.c, mat));
  CK(cudaMalloc((void **)&q.d, vec));
  CK(cudaMalloc((void **)&q.e, vec));
  CK(cudaMalloc((void **)&q.tau, vec));
  CK(cudaMalloc((void **)&q.w, vec));
  CK(cudaMalloc((void **)&q.info, sizeof(int)));
  check(cusolverDnCreate(&q.h), "create");
  check(cusolverDnCreateParams(&q.p), "params");
  reserve(&q);
  float *t[PARTS];
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int k = 0; k < PARTS; k++) t[k] = malloc(sizeof(float) * (size_t)reps);
  for (int r = -1; r < reps; r++) /* round -1 warms up */
    for (int k = 0; k < PARTS; k++) {
      if (k == ORMTR) run(&q, SYTRD); /* fresh reflectors, untimed */
      CK(cudaEventRecord(e0, 0));
      run(&q, k);
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      if (r >= 0) CK(cudaEventElapsedTime(&t[k][r], e0, e1));
    }
  const char *names[PARTS] = {"sytrd", "ormtr", "values", "vectors"};
  float med[PARTS];
  printf("%s 1x%d, median of %d (ms):", q.f64 ? "float64" : "float32", q.n, reps);
  for (int k = 0; k < PARTS; k++) {
    med[k] = probe_median_f(t[k], reps);
    printf(" %s=%.2f", names[k], med[k]);
    free(t[k]);
  }
  printf(" rest=%.2f sytrd_share=%.2f\n", med[VECTORS] - med[SYTRD] - med[ORMTR],
         med[SYTRD] / med[VECTORS]);
  return 0;
}
