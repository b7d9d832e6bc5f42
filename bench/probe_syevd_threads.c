/*
 * Do matrices of gstat's large-n path (cusolverDnXsyevd, one call per
 * matrix) overlap on the GPU? For a batch of n x n matrices (f32 or f64) in
 * device memory, host wall time of the whole batch (input copy included,
 * cudaDeviceSynchronize at the end), median of REPS:
 *   one stream     one host thread, one handle, matrices in turn
 *   S streams      one host thread, S handles on S streams, round-robin
 *                  (gstat's loop before threads)
 *   T threads      T host threads, each with its own handle, stream and
 *                  workspace, matrices dealt round-robin
 * plus "host share": how much of one matrix's GPU time (events) the host
 * thread spends inside the Xsyevd call. Near 1 means the call blocks the
 * host until the work is done, so only host threads can overlap matrices.
 *
 *   probe_syevd_threads f32|f64 N BATCH REPS T...
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cuda_check.h"
#include "probe_util.h"
#include "sym_batch_device.h"

enum { MAX_T = 16 };
enum mode { XSYEVD, BATCHED, LEGACY };

typedef struct {
  int64_t n, batch;
  cudaDataType t;
  size_t es;
  char *a0, *a, *w;
  int *info;
  enum mode mode;
} problem;

typedef struct {
  const problem *q;
  cudaStream_t stream;
  cusolverDnHandle_t h;
  cusolverDnParams_t p;
  probe_ws ws;
  int first, step; /* matrices first, first + step, ... */
  int failed;
} worker;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Workspace bytes for the mode; the batched routine's for the whole batch
 * (an upper bound for any part). */
static int buffer_size(worker *k, const problem *q, size_t *dev, size_t *host) {
  const cusolverEigMode_t v = CUSOLVER_EIG_MODE_VECTOR;
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  const int n = (int)q->n;
  if (q->mode == BATCHED)
    return cusolverDnXsyevBatched_bufferSize(k->h, k->p, v, lo, q->n, q->t, q->a, q->n, q->t, q->w,
                                             q->t, dev, host, q->batch) != CUSOLVER_STATUS_SUCCESS;
  if (q->mode == XSYEVD)
    return cusolverDnXsyevd_bufferSize(k->h, k->p, v, lo, q->n, q->t, q->a, q->n, q->t, q->w, q->t,
                                       dev, host) != CUSOLVER_STATUS_SUCCESS;
  int lwork = 0;
  cusolverStatus_t st =
      q->es == 8
          ? cusolverDnDsyevd_bufferSize(k->h, v, lo, n, (double *)q->a, n, (double *)q->w, &lwork)
          : cusolverDnSsyevd_bufferSize(k->h, v, lo, n, (float *)q->a, n, (float *)q->w, &lwork);
  *dev = (size_t)lwork * q->es, *host = 0;
  return st != CUSOLVER_STATUS_SUCCESS;
}

static void worker_init(worker *k, const problem *q) {
  *k = (worker){.q = q};
  size_t dev = 0, host = 0;
  CK(cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking));
  if (cusolverDnCreate(&k->h) != CUSOLVER_STATUS_SUCCESS ||
      cusolverDnSetStream(k->h, k->stream) != CUSOLVER_STATUS_SUCCESS ||
      cusolverDnCreateParams(&k->p) != CUSOLVER_STATUS_SUCCESS || buffer_size(k, q, &dev, &host)) {
    fprintf(stderr, "cuSOLVER set-up failed\n");
    exit(1);
  }
  probe_ws_reserve(&k->ws, dev + 1, host + 1); /* never empty */
}

static void worker_free(worker *k) {
  probe_ws_free(&k->ws);
  cusolverDnDestroyParams(k->p);
  cusolverDnDestroy(k->h);
  cudaStreamDestroy(k->stream);
}

/* Matrices [b, b + nb) with worker k: one batched call, or one call each. */
static int solve(worker *k, int64_t b, int64_t nb) {
  const problem *q = k->q;
  const cusolverEigMode_t v = CUSOLVER_EIG_MODE_VECTOR;
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  size_t mat = q->es * (size_t)(q->n * q->n);
  char *a = q->a + mat * (size_t)b, *w = q->w + q->es * (size_t)(b * q->n);
  if (cudaMemcpyAsync(a, q->a0 + mat * (size_t)b, mat * (size_t)nb, cudaMemcpyDeviceToDevice,
                      k->stream) != cudaSuccess)
    return 1;
  if (q->mode == BATCHED)
    return cusolverDnXsyevBatched(k->h, k->p, v, lo, q->n, q->t, a, q->n, q->t, w, q->t, k->ws.dev,
                                  k->ws.dev_bytes, k->ws.host, k->ws.host_bytes, q->info + b,
                                  nb) != CUSOLVER_STATUS_SUCCESS;
  const int n = (int)q->n;
  for (int64_t i = 0; i < nb; i++, a += mat, w += q->es * (size_t)n) {
    cusolverStatus_t st;
    if (q->mode == XSYEVD)
      st = cusolverDnXsyevd(k->h, k->p, v, lo, q->n, q->t, a, q->n, q->t, w, q->t, k->ws.dev,
                            k->ws.dev_bytes, k->ws.host, k->ws.host_bytes, q->info + b + i);
    else if (q->es == 8)
      st = cusolverDnDsyevd(k->h, v, lo, n, (double *)a, n, (double *)w, k->ws.dev,
                            (int)(k->ws.dev_bytes / 8), q->info + b + i);
    else
      st = cusolverDnSsyevd(k->h, v, lo, n, (float *)a, n, (float *)w, k->ws.dev,
                            (int)(k->ws.dev_bytes / 4), q->info + b + i);
    if (st != CUSOLVER_STATUS_SUCCESS) return 1;
  }
  return 0;
}

/* Worker k's share of `parts`: contiguous for the batched routine, else
 * round-robin. */
static int solve_share(worker *k, int part, int parts) {
  const int64_t batch = k->q->batch;
  if (k->q->mode == BATCHED) {
    int64_t b0 = batch * part / parts, b1 = batch * (part + 1) / parts;
    return b1 > b0 ? solve(k, b0, b1 - b0) : 0;
  }
  for (int64_t b = part; b < batch; b += parts)
    if (solve(k, b, 1)) return 1;
  return 0;
}

static void *worker_run(void *arg) {
  worker *k = arg;
  k->failed = solve_share(k, k->first, k->step);
  return NULL;
}

/* One thread, the first `streams` workers. */
static double time_streams(worker *w, int streams) {
  double t0 = now_ms();
  if (w->q->mode == BATCHED) {
    for (int k = 0; k < streams; k++)
      if (solve_share(&w[k], k, streams)) return -1;
  } else {
    for (int64_t b = 0; b < w->q->batch; b++) /* interleaved, as gstat did */
      if (solve(&w[b % streams], b, 1)) return -1;
  }
  CK(cudaDeviceSynchronize());
  return now_ms() - t0;
}

static double time_threads(worker *w, int threads) {
  pthread_t tid[MAX_T];
  double t0 = now_ms();
  for (int k = 0; k < threads; k++) {
    w[k].first = k, w[k].step = threads, w[k].failed = 0;
    if (pthread_create(&tid[k], NULL, worker_run, &w[k])) return -1;
  }
  int failed = 0;
  for (int k = 0; k < threads; k++) {
    pthread_join(tid[k], NULL);
    failed |= w[k].failed;
  }
  CK(cudaDeviceSynchronize());
  return failed ? -1 : now_ms() - t0;
}

/* The host's time inside one call over the call's GPU time. */
static double host_share(worker *k) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaDeviceSynchronize());
  CK(cudaEventRecord(e0, k->stream));
  double t0 = now_ms();
  if (solve(k, 0, k->q->mode == BATCHED ? k->q->batch : 1)) return -1;
  double host = now_ms() - t0;
  CK(cudaEventRecord(e1, k->stream));
  CK(cudaEventSynchronize(e1));
  float gpu = 0;
  CK(cudaEventElapsedTime(&gpu, e0, e1));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return host / gpu;
}

int main(int argc, char **argv) {
  problem q = {0};
  if (argc > 1 && argv[1][0] == '-') {
    q.mode = argv[1][2] == 'b' ? BATCHED : LEGACY;
    argv++, argc--;
  }
  if (argc < 6) {
    fprintf(stderr, "usage: probe_syevd_threads [--batched|--legacy] f32|f64 N BATCH REPS T...\n");
    return 2;
  }
  const int f64 = argv[1][1] == '6';
  q.n = atoll(argv[2]);
  q.batch = atoll(argv[3]);
  const int reps = atoi(argv[4]);
  q.t = f64 ? CUDA_R_64F : CUDA_R_32F;
  q.es = f64 ? 8 : 4;
  q.a0 = bench_sym_batch_device(q.batch, q.n, f64);
  CK(cudaMalloc((void **)&q.a, q.es * (size_t)(q.batch * q.n * q.n)));
  CK(cudaMalloc((void **)&q.w, q.es * (size_t)(q.batch * q.n)));
  CK(cudaMalloc((void **)&q.info, sizeof(int) * (size_t)q.batch));
  worker w[MAX_T];
  for (int k = 0; k < MAX_T; k++) worker_init(&w[k], &q);
  double share = host_share(&w[0]);

  /* variants: one stream, 4 streams, then each T as threads */
  int nv = 2 + (argc - 5);
  int conf[2 + MAX_T];
  conf[0] = -1, conf[1] = -4;
  for (int i = 5; i < argc && i - 3 < 2 + MAX_T; i++) {
    int t = atoi(argv[i]);
    conf[i - 3] = t < 1 ? 1 : t > MAX_T ? MAX_T : t;
  }
  double *t = calloc((size_t)(nv * reps), sizeof(double));
  for (int r = -1; r < reps; r++) /* round -1 warms up */
    for (int v = 0; v < nv; v++) {
      double ms = conf[v] < 0 ? time_streams(w, -conf[v]) : time_threads(w, conf[v]);
      if (ms < 0) {
        fprintf(stderr, "variant %d failed\n", v);
        return 1;
      }
      if (r >= 0) t[v * reps + r] = ms;
    }
  const char *mode[] = {"Xsyevd", "XsyevBatched", "legacy syevd"};
  printf("%s %s %lldx%lld, host share of one call %.2f, median of %d (ms):", mode[q.mode],
         f64 ? "float64" : "float32", (long long)q.batch, (long long)q.n, share, reps);
  for (int v = 0; v < nv; v++) {
    double med = probe_median(t + v * reps, reps);
    if (conf[v] < 0)
      printf(" %d_stream%s=%.3f", -conf[v], conf[v] == -1 ? "" : "s", med);
    else
      printf(" %d_threads=%.3f", conf[v], med);
  }
  printf("\n");
  for (int k = 0; k < MAX_T; k++) worker_free(&w[k]);
  free(t);
  cudaFree(q.a0);
  cudaFree(q.a);
  cudaFree(q.w);
  cudaFree(q.info);
  return 0;
}
