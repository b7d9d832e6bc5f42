/*
 * probe_syevd_layout f32|f64 N REPS [syevj]
 *
 * Whether the memory layout of one large matrix changes the speed of
 * cusolverDnXsyevd, the routine gstat, torch and CuPy all call for a
 * single float64 matrix of 4096 or 8192:
 *   - a leading dimension padded past N (N = 4096 and 8192 are powers of
 *     two: every column starts at the same cache set);
 *   - part of the matrix kept in L2 (a persisting access-policy window on
 *     the solver's stream), over the last columns or over the whole matrix
 *     with a hit ratio.
 * Padded variants pay their copies in and out (cudaMemcpy2DAsync) inside
 * the timing; the plain one pays its copy in. Rounds interleave the
 * variants; median ms (CUDA events) and the largest eigenvalue difference
 * from the plain call's. With "syevj", also cuSOLVER's one-matrix Jacobi
 * solver (Dsyevj/Ssyevj, default tolerance), timed once after a warm-up.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "probe_util.h"
#include "sym_batch_device.h"

typedef struct {
  const char *name;
  int64_t pad; /* elements added to the leading dimension */
  int persist; /* 0 none, 1 the last columns, 2 the whole matrix by hit ratio */
} variant;

static const variant variants[] = {
    {"plain (lda = n)", 0, 0},         {"lda = n + 8", 8, 0},
    {"lda = n + 32", 32, 0},           {"lda = n + 64", 64, 0},
    {"lda = n + 128", 128, 0},         {"L2 window, last columns", 0, 1},
    {"L2 window, whole matrix", 0, 2}, {"lda = n + 32, L2 last columns", 32, 1},
};
enum { VARIANTS = sizeof variants / sizeof variants[0] };

/* Set (or clear, when bytes is 0) a persisting window on the stream. */
static void set_window(cudaStream_t st, void *base, size_t bytes, float hit) {
  cudaStreamAttrValue a;
  memset(&a, 0, sizeof a);
  a.accessPolicyWindow.base_ptr = base;
  a.accessPolicyWindow.num_bytes = bytes;
  a.accessPolicyWindow.hitRatio = bytes ? hit : 0.0f;
  a.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  a.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  CK(cudaStreamSetAttribute(st, cudaStreamAttributeAccessPolicyWindow, &a));
  if (!bytes) CK(cudaCtxResetPersistingL2Cache());
}

static void time_syevj(int f64, int64_t n, const void *dA0, size_t es, cudaStream_t st) {
  cusolverDnHandle_t h;
  syevjInfo_t info;
  cusolverDnCreate(&h);
  cusolverDnSetStream(h, st);
  cusolverDnCreateSyevjInfo(&info);
  void *dA, *dW;
  int *dInfo, lwork = 0;
  CK(cudaMalloc(&dA, es * (size_t)(n * n)));
  CK(cudaMalloc(&dW, es * (size_t)n));
  CK(cudaMalloc((void **)&dInfo, sizeof(int)));
  cusolverStatus_t cs =
      f64 ? cusolverDnDsyevj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n,
                                        dA, (int)n, dW, &lwork, info)
          : cusolverDnSsyevj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n,
                                        dA, (int)n, dW, &lwork, info);
  void *work = NULL;
  if (cs == CUSOLVER_STATUS_SUCCESS) CK(cudaMalloc(&work, es * (size_t)lwork));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float ms = 0;
  for (int r = 0; r < 2 && cs == CUSOLVER_STATUS_SUCCESS; r++) {
    CK(cudaMemcpyAsync(dA, dA0, es * (size_t)(n * n), cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e0, st));
    cs = f64 ? cusolverDnDsyevj(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n, dA,
                                (int)n, dW, work, lwork, dInfo, info)
             : cusolverDnSsyevj(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n, dA,
                                (int)n, dW, work, lwork, dInfo, info);
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
  }
  int sweeps = -1;
  cusolverDnXsyevjGetSweeps(h, info, &sweeps);
  if (cs == CUSOLVER_STATUS_SUCCESS)
    printf("| 1x%lld | syevj (one matrix) | %.3f ms | %d sweeps |\n", (long long)n, ms, sweeps);
  else
    printf("| 1x%lld | syevj (one matrix) | refused (%d) |\n", (long long)n, (int)cs);
  cudaFree(work);
  cudaFree(dA);
  cudaFree(dW);
  cudaFree(dInfo);
  cusolverDnDestroySyevjInfo(info);
  cusolverDnDestroy(h);
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: probe_syevd_layout f32|f64 N REPS [syevj]\n");
    return 2;
  }
  int f64 = strcmp(argv[1], "f64") == 0;
  int64_t n = atoll(argv[2]);
  int reps = atoi(argv[3]);
  size_t es = f64 ? 8 : 4, pitch_max = es * (size_t)(n + 128);
  cudaDataType t = f64 ? CUDA_R_64F : CUDA_R_32F;
  void *dA0 = bench_sym_batch_device(1, n, f64), *dA, *dV, *dW;
  int *dInfo;
  CK(cudaMalloc(&dA, pitch_max * (size_t)n));
  CK(cudaMalloc(&dV, es * (size_t)(n * n)));
  CK(cudaMalloc(&dW, es * (size_t)n));
  CK(cudaMalloc((void **)&dInfo, sizeof(int)));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cusolverDnHandle_t h;
  cusolverDnParams_t par;
  cusolverDnCreate(&h);
  cusolverDnSetStream(h, st);
  cusolverDnCreateParams(&par);

  int dev;
  struct cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  size_t persist = (size_t)prop.persistingL2CacheMaxSize,
         window_max = (size_t)prop.accessPolicyMaxWindowSize;
  int can_persist = persist > 0 && window_max > 0;
  if (can_persist) CK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, persist));
  printf("L2 %d MiB, persisting at most %.1f MiB, window at most %.1f MiB\n",
         prop.l2CacheSize >> 20, persist / 1048576.0, window_max / 1048576.0);

  probe_ws ws = {0};
  size_t dev_b = 0, host_b = 0;
  for (int v = 0; v < VARIANTS; v++) {
    int64_t lda = n + variants[v].pad;
    size_t db, hb;
    if (cusolverDnXsyevd_bufferSize(h, par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, t,
                                    dA, lda, t, dW, t, &db, &hb) != CUSOLVER_STATUS_SUCCESS) {
      fprintf(stderr, "Xsyevd_bufferSize refused lda %lld\n", (long long)lda);
      return 1;
    }
    if (db > dev_b) dev_b = db;
    if (hb > host_b) host_b = hb;
  }
  probe_ws_reserve(&ws, dev_b, host_b);

  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *ms = malloc(sizeof(float) * (size_t)(VARIANTS * reps));
  double *w0 = malloc(sizeof(double) * (size_t)n), wdiff[VARIANTS] = {0};
  void *hw = malloc(es * (size_t)n);
  int usable[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) usable[v] = !variants[v].persist || can_persist;
  for (int r = -1; r < reps; r++)
    for (int v = 0; v < VARIANTS; v++) {
      if (!usable[v]) continue;
      const variant *x = &variants[v];
      int64_t lda = n + x->pad;
      size_t pitch = es * (size_t)lda, cols_in_window = window_max / pitch;
      if (cols_in_window * pitch > persist) cols_in_window = persist / pitch;
      if (cols_in_window > (size_t)n) cols_in_window = (size_t)n;
      CK(cudaEventRecord(e0, st));
      if (x->persist == 1)
        set_window(st, (char *)dA + pitch * ((size_t)n - cols_in_window), pitch * cols_in_window,
                   1.0f);
      else if (x->persist == 2) {
        size_t bytes = pitch * (size_t)n < window_max ? pitch * (size_t)n : window_max;
        set_window(st, dA, bytes, fminf(1.0f, (float)persist / (float)bytes));
      }
      CK(cudaMemcpy2DAsync(dA, pitch, dA0, es * (size_t)n, es * (size_t)n, (size_t)n,
                           cudaMemcpyDeviceToDevice, st));
      cusolverStatus_t cs =
          cusolverDnXsyevd(h, par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, t, dA, lda,
                           t, dW, t, ws.dev, dev_b, ws.host, host_b, dInfo);
      if (x->pad)
        CK(cudaMemcpy2DAsync(dV, es * (size_t)n, dA, pitch, es * (size_t)n, (size_t)n,
                             cudaMemcpyDeviceToDevice, st));
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      if (x->persist) set_window(st, NULL, 0, 0.0f);
      if (cs != CUSOLVER_STATUS_SUCCESS) {
        printf("%s: Xsyevd refused (%d)\n", x->name, (int)cs);
        usable[v] = 0;
        continue;
      }
      if (r >= 0) CK(cudaEventElapsedTime(&ms[v * reps + r], e0, e1));
      if (r == -1) {
        CK(cudaMemcpy(hw, dW, es * (size_t)n, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < n; i++) {
          double wi = probe_get(hw, f64 ? 2 : 1, (size_t)i);
          if (v == 0) w0[i] = wi;
          wdiff[v] = fmax(wdiff[v], fabs(wi - w0[i]));
        }
      }
    }
  for (int v = 0; v < VARIANTS; v++) {
    if (!usable[v]) {
      printf("| %s | 1x%lld | %s | not run |\n", argv[1], (long long)n, variants[v].name);
      continue;
    }
    printf("| %s | 1x%lld | %s | %.3f ms | w diff %.1e |\n", argv[1], (long long)n,
           variants[v].name, probe_median_f(ms + v * reps, reps), wdiff[v]);
  }
  if (argc == 5 && strcmp(argv[4], "syevj") == 0) time_syevj(f64, n, dA0, es, st);
  probe_ws_free(&ws);
  free(ms);
  free(w0);
  free(hw);
  return 0;
}
