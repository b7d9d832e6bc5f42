/*
 * probe_solver_modes f32|f64 N BATCH REPS
 *
 * Whether cuSOLVER's handle modes change the speed of the eigensolver gstat
 * calls (XsyevBatched; Xsyevd for BATCH 1): the default, non-deterministic
 * results allowed (cusolverDnSetDeterministicMode) and, for float32, the
 * BF16x9 emulated math (cusolverDnSetMathMode). Rounds interleave the modes;
 * median ms (CUDA events) and the largest eigenvalue difference from the
 * default mode's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "probe_util.h"
#include "sym_batch_device.h"

enum { MODES = 3 };
static const char *mode_name[MODES] = {"default", "non-deterministic", "bf16x9 math"};

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: probe_solver_modes f32|f64 N BATCH REPS\n");
    return 2;
  }
  int f64 = strcmp(argv[1], "f64") == 0;
  int64_t n = atoll(argv[2]), nb = atoll(argv[3]);
  int reps = atoi(argv[4]);
  size_t es = f64 ? 8 : 4, mats = (size_t)(n * n * nb), vals = (size_t)(n * nb);
  cudaDataType t = f64 ? CUDA_R_64F : CUDA_R_32F;
  void *dA0 = bench_sym_batch_device(nb, n, f64), *dA, *dW; /* bench_cuda's matrices */
  int *dInfo;
  CK(cudaMalloc(&dA, es * mats));
  CK(cudaMalloc(&dW, es * vals));
  CK(cudaMalloc((void **)&dInfo, sizeof(int) * (size_t)nb));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cusolverDnHandle_t h[MODES];
  cusolverDnParams_t par;
  cusolverDnCreateParams(&par);
  int usable[MODES] = {1, 1, !f64};
  for (int m = 0; m < MODES; m++) {
    cusolverDnCreate(&h[m]);
    cusolverDnSetStream(h[m], st);
  }
  if (cusolverDnSetDeterministicMode(h[1], CUSOLVER_ALLOW_NON_DETERMINISTIC_RESULTS) !=
      CUSOLVER_STATUS_SUCCESS)
    usable[1] = 0;
  if (usable[2] &&
      cusolverDnSetMathMode(h[2], CUSOLVER_FP32_EMULATED_BF16X9_MATH) != CUSOLVER_STATUS_SUCCESS)
    usable[2] = 0;
  probe_ws ws[MODES] = {{0}};
  size_t dev_b[MODES] = {0}, host_b[MODES] = {0};
  for (int m = 0; m < MODES; m++) {
    if (!usable[m]) continue;
    cusolverStatus_t cs = nb == 1 ? cusolverDnXsyevd_bufferSize(h[m], par, CUSOLVER_EIG_MODE_VECTOR,
                                                                CUBLAS_FILL_MODE_LOWER, n, t, dA, n,
                                                                t, dW, t, &dev_b[m], &host_b[m])
                                  : cusolverDnXsyevBatched_bufferSize(
                                        h[m], par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                        n, t, dA, n, t, dW, t, &dev_b[m], &host_b[m], nb);
    if (cs != CUSOLVER_STATUS_SUCCESS)
      usable[m] = 0;
    else
      probe_ws_reserve(&ws[m], dev_b[m], host_b[m]);
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *ms = malloc(sizeof(float) * (size_t)(MODES * reps));
  double *w[MODES];
  double wdiff[MODES] = {0};
  for (int r = -1; r < reps; r++)
    for (int m = 0; m < MODES; m++) {
      if (!usable[m]) continue;
      CK(cudaMemcpyAsync(dA, dA0, es * mats, cudaMemcpyDeviceToDevice, st));
      CK(cudaEventRecord(e0, st));
      cusolverStatus_t cs =
          nb == 1
              ? cusolverDnXsyevd(h[m], par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, t,
                                 dA, n, t, dW, t, ws[m].dev, dev_b[m], ws[m].host, host_b[m], dInfo)
              : cusolverDnXsyevBatched(h[m], par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                       n, t, dA, n, t, dW, t, ws[m].dev, dev_b[m], ws[m].host,
                                       host_b[m], dInfo, nb);
      CK(cudaEventRecord(e1, st));
      CK(cudaEventSynchronize(e1));
      if (cs != CUSOLVER_STATUS_SUCCESS) {
        usable[m] = 0;
        continue;
      }
      if (r >= 0) CK(cudaEventElapsedTime(&ms[m * reps + r], e0, e1));
      if (r == -1) {
        void *hw = malloc(es * vals);
        CK(cudaMemcpy(hw, dW, es * vals, cudaMemcpyDeviceToHost));
        w[m] = malloc(sizeof(double) * vals);
        for (size_t i = 0; i < vals; i++)
          w[m][i] = f64 ? ((double *)hw)[i] : (double)((float *)hw)[i];
        free(hw);
        if (m > 0 && usable[0])
          for (size_t i = 0; i < vals; i++) wdiff[m] = fmax(wdiff[m], fabs(w[m][i] - w[0][i]));
      }
    }
  for (int m = 0; m < MODES; m++) {
    if (!usable[m]) {
      printf("| %s | %lldx%lld | %s | refused |\n", argv[1], (long long)nb, (long long)n,
             mode_name[m]);
      continue;
    }
    printf("| %s | %lldx%lld | %s | %.3f ms | w diff %.1e |\n", argv[1], (long long)nb,
           (long long)n, mode_name[m], probe_median_f(ms + m * reps, reps), wdiff[m]);
  }
  return 0;
}
