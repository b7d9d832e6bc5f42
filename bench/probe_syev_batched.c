/*
 * What limits cusolverDnXsyevBatched at mid n (the routine gstat's 32 < n <
 * 2048 path calls)? One table for a batch of n x n matrices (f32 or f64) in
 * device memory, median of REPS with CUDA events, each run including the
 * copy of the input the solver overwrites:
 *   one call       the whole batch in one call on one stream
 *   split S        the batch cut into S parts, one call each on S streams
 *                  (own handles and workspaces), joined with events
 *   graph          the one call captured into a CUDA graph and replayed
 *                  (nan when cuSOLVER cannot be captured)
 *   graph S        split S captured as one graph (S parallel branches)
 * If the time hardly changes with the batch, the routine is bound by its
 * sequence of small steps: splitting can only help if steps from different
 * streams overlap, a graph only if launch overhead is a large part.
 *
 *   probe_syev_batched [--alg K] f32|f64 N REPS BATCH...
 *
 * --alg K selects XsyevBatched's algorithm K (cusolverDnSetAdvOptions with
 * CUSOLVERDN_SYEVBATCHED; 0 is the default).
 */
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "probe_util.h"
#include "sym_batch_device.h"

enum { MAX_SPLIT = 8 };

typedef struct {
  int64_t n, batch;
  cudaDataType t;
  size_t es;
  char *a0, *a, *w;
  int *info;
  cudaStream_t main, side[MAX_SPLIT];
  cudaEvent_t fork, join[MAX_SPLIT];
  cusolverDnHandle_t h[MAX_SPLIT];
  cusolverDnParams_t p;
  probe_ws ws[MAX_SPLIT];
} probe;

static size_t bytes_a(const probe *q) {
  return q->es * (size_t)(q->batch * q->n * q->n);
}

/* Solve matrices [b0, b0 + nb) with handle k (on its stream). */
static int solve(probe *q, int k, int64_t b0, int64_t nb) {
  size_t off = q->es * (size_t)(b0 * q->n * q->n);
  return cusolverDnXsyevBatched(q->h[k], q->p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                q->n, q->t, q->a + off, q->n, q->t,
                                q->w + q->es * (size_t)(b0 * q->n), q->t, q->ws[k].dev,
                                q->ws[k].dev_bytes, q->ws[k].host, q->ws[k].host_bytes,
                                q->info + b0, nb) != CUSOLVER_STATUS_SUCCESS;
}

static void reserve(probe *q, int k, int64_t nb) {
  size_t dev = 0, host = 0;
  if (cusolverDnXsyevBatched_bufferSize(q->h[k], q->p, CUSOLVER_EIG_MODE_VECTOR,
                                        CUBLAS_FILL_MODE_LOWER, q->n, q->t, q->a, q->n, q->t, q->w,
                                        q->t, &dev, &host, nb) != CUSOLVER_STATUS_SUCCESS) {
    fprintf(stderr, "bufferSize failed\n");
    exit(1);
  }
  probe_ws_reserve(&q->ws[k], dev, host);
}

/* One timed run: copy, then the batch in `parts` calls over as many streams. */
static int run_split(probe *q, int parts) {
  CK(cudaMemcpyAsync(q->a, q->a0, bytes_a(q), cudaMemcpyDeviceToDevice, q->main));
  CK(cudaEventRecord(q->fork, q->main));
  int64_t per = (q->batch + parts - 1) / parts;
  for (int k = 0; k < parts; k++) {
    int64_t b0 = k * per, nb = q->batch - b0 < per ? q->batch - b0 : per;
    if (nb <= 0) break;
    CK(cudaStreamWaitEvent(q->side[k], q->fork, 0));
    if (solve(q, k, b0, nb)) return 1;
    CK(cudaEventRecord(q->join[k], q->side[k]));
    CK(cudaStreamWaitEvent(q->main, q->join[k], 0));
  }
  return 0;
}

static float median_ms(probe *q, int parts, cudaGraphExec_t graph, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t = malloc(sizeof(float) * (size_t)(reps + 1));
  for (int r = 0; r <= reps; r++) { /* the first is a warm-up */
    CK(cudaEventRecord(e0, q->main));
    if (graph) {
      CK(cudaGraphLaunch(graph, q->main));
    } else if (run_split(q, parts)) {
      free(t);
      return NAN;
    }
    CK(cudaEventRecord(e1, q->main));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t[r], e0, e1));
  }
  float med = probe_median_f(t + 1, reps);
  free(t);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return med;
}

/* The run in `parts` calls captured into one graph (parallel branches when
 * parts > 1); NULL when capture fails. */
static cudaGraphExec_t capture(probe *q, int parts) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = NULL;
  if (cudaStreamBeginCapture(q->main, cudaStreamCaptureModeRelaxed) != cudaSuccess) return NULL;
  int bad = run_split(q, parts);
  bad |= cudaStreamEndCapture(q->main, &g) != cudaSuccess;
  if (!bad && g) bad = cudaGraphInstantiate(&exec, g, 0) != cudaSuccess;
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
  return bad ? NULL : exec;
}

int main(int argc, char **argv) {
  int alg = 0;
  if (argc > 2 && !strcmp(argv[1], "--alg")) {
    alg = atoi(argv[2]);
    argc -= 2;
    argv += 2;
  }
  if (argc < 5) {
    fprintf(stderr, "usage: probe_syev_batched [--alg K] f32|f64 N REPS BATCH...\n");
    return 2;
  }
  const int f64 = argv[1][1] == '6';
  const int64_t n = atoll(argv[2]);
  const int reps = atoi(argv[3]);
  static const int splits[] = {2, 4, 8};
  enum { NS = sizeof splits / sizeof splits[0] };
  cusolverDnParams_t check;
  cusolverDnCreateParams(&check);
  cusolverStatus_t accepted =
      alg ? cusolverDnSetAdvOptions(check, CUSOLVERDN_SYEVBATCHED, (cusolverAlgMode_t)alg)
          : CUSOLVER_STATUS_SUCCESS;
  cusolverDnDestroyParams(check);
  if (accepted != CUSOLVER_STATUS_SUCCESS) { /* cuSOLVER 12.0.4 (CUDA 13.0) takes only 0 */
    fprintf(stderr, "algorithm %d is not accepted (status %d)\n", alg, (int)accepted);
    return 1;
  }
  printf("XsyevBatched %s, algorithm %d, n = %lld, median of %d (ms)\n",
         f64 ? "float64" : "float32", alg, (long long)n, reps);
  printf("%8s %9s %9s %9s %9s %9s %9s %9s %9s\n", "batch", "one call", "split 2", "split 4",
         "split 8", "graph", "graph 2", "graph 4", "graph 8");
  for (int c = 4; c < argc; c++) {
    probe q = {0};
    q.n = n;
    q.batch = atoll(argv[c]);
    q.t = f64 ? CUDA_R_64F : CUDA_R_32F;
    q.es = f64 ? 8 : 4;
    size_t na = (size_t)(q.batch * n * n);
    q.a0 = bench_sym_batch_device(q.batch, n, f64); /* bench_cuda's matrices */
    CK(cudaMalloc((void **)&q.a, q.es * na));
    CK(cudaMalloc((void **)&q.w, q.es * (size_t)(q.batch * n)));
    CK(cudaMalloc((void **)&q.info, sizeof(int) * (size_t)q.batch));
    CK(cudaStreamCreateWithFlags(&q.main, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&q.fork, cudaEventDisableTiming));
    cusolverDnCreateParams(&q.p);
    if (alg) cusolverDnSetAdvOptions(q.p, CUSOLVERDN_SYEVBATCHED, (cusolverAlgMode_t)alg);
    for (int k = 0; k < MAX_SPLIT; k++) {
      CK(cudaStreamCreateWithFlags(&q.side[k], cudaStreamNonBlocking));
      CK(cudaEventCreateWithFlags(&q.join[k], cudaEventDisableTiming));
      cusolverDnCreate(&q.h[k]);
      cusolverDnSetStream(q.h[k], q.side[k]);
      reserve(&q, k, q.batch);
    }
    printf("%8lld %9.3f", (long long)q.batch, median_ms(&q, 1, NULL, reps));
    for (int i = 0; i < NS; i++) printf(" %9.3f", median_ms(&q, splits[i], NULL, reps));
    for (int i = -1; i < NS; i++) {
      cudaGraphExec_t g = capture(&q, i < 0 ? 1 : splits[i]);
      printf(" %9.3f", g ? median_ms(&q, 1, g, reps) : NAN);
      if (g) cudaGraphExecDestroy(g);
    }
    printf("\n");
    fflush(stdout);
    for (int k = 0; k < MAX_SPLIT; k++) {
      cusolverDnDestroy(q.h[k]);
      cudaStreamDestroy(q.side[k]);
      cudaEventDestroy(q.join[k]);
      probe_ws_free(&q.ws[k]);
    }
    cusolverDnDestroyParams(q.p);
    cudaEventDestroy(q.fork);
    cudaStreamDestroy(q.main);
    cudaFree(q.a0);
    cudaFree(q.a);
    cudaFree(q.w);
    cudaFree(q.info);
  }
  return 0;
}
