/*
 * probe_two_stage N REPS
 *
 * gstat's two-stage float64 eigensolver (src/backend/cuda/two_stage.c) on
 * one matrix of order N, part by part (Q1 Q2 formed on a side stream; on
 * the main one after the rest with GSTAT_TWO_STAGE_SERIAL set; on every SM
 * while the chase runs with GSTAT_TWO_STAGE_ALL_SMS set), against Xsyevd on the same matrix
 * (bench_cuda's, sym_batch.h), in the same rounds: median ms of each part
 * over REPS (CUDA events), then the checks: the eigenvalues against
 * Xsyevd's (relative to max|A|), max |A z - w z| / max|A| and
 * max |Z^T Z - I|.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cusolverDn.h>

extern "C" {
#include "backend/cuda/two_stage.h" /* a C header without C++ guards */
}
#include "probe_util.h"
#include "sym_batch_device.h"

#define CB(x)                                                       \
  do {                                                              \
    cublasStatus_t s_ = (x);                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                              \
      fprintf(stderr, "%s:%d cuBLAS %d\n", __FILE__, __LINE__, s_); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

/* r(:, j) -= w_j z(:, j): the residual's eigenvalue term. */
__global__ void sub_scaled(double *r, const double *z, const double *w, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i < n) r[i + j * n] -= w[j] * z[i + j * n];
}

/* r -= I */
__global__ void minus_identity(double *r, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) r[i + i * n] -= 1.0;
}

static double max_abs(const double *d, size_t count) {
  double *h = (double *)malloc(sizeof(double) * count), m = 0;
  CK(cudaMemcpy(h, d, sizeof(double) * count, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++) m = fmax(m, fabs(h[i]));
  free(h);
  return m;
}

/* the two-stage's parts (the first with the copy of A, as Xsyevd's) */
enum { PARTS = 8 };
static const char *part_name[PARTS] = {"sy2sb",     "sb2st",        "tridiagonal", "NS",
                                       "wait Q1Q2", "gemm Q1 Q2 Z", "return",      "Xsyevd"};

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: probe_two_stage N REPS\n");
    return 2;
  }
  int64_t n = atoll(argv[1]);
  int reps = atoi(argv[2]);
  size_t nn = (size_t)(n * n), bytes = sizeof(double) * nn;
  double *a0 = (double *)bench_sym_batch_device(1, n, 1), *a, *r, *w, *wref;
  int *info, *host_flag;
  CK(cudaMalloc((void **)&a, bytes));
  CK(cudaMalloc((void **)&r, bytes));
  CK(cudaMalloc((void **)&w, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&wref, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&info, sizeof(int)));
  CK(cudaMallocHost((void **)&host_flag, 2 * sizeof(int))); /* the flag of one matrix and the any */
  cudaStream_t st;
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  cusolverDnParams_t params;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CB(cublasCreate(&blas));
  CB(cublasSetStream(blas, st));
  CS(cusolverDnCreate(&solver));
  CS(cusolverDnSetStream(solver, st));
  CS(cusolverDnCreateParams(&params));
  /* GSTAT_TWO_STAGE_SERIAL set: Q1 Q2 on the main stream after the rest */
  const bool serial = getenv("GSTAT_TWO_STAGE_SERIAL") != NULL;
  cudaStream_t side;
  cublasHandle_t side_blas;
  cudaEvent_t hand[3];
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  CB(cublasCreate(&side_blas));
  for (int i = 0; i < 3; i++) CK(cudaEventCreateWithFlags(&hand[i], cudaEventDisableTiming));
  size_t host_bytes = 0, ws_bytes = gstat_cu_two_stage_bytes(solver, params, n, a, &host_bytes);
  if (!ws_bytes) {
    fprintf(stderr, "the two-stage path does not take n = %lld\n", (long long)n);
    return 1;
  }
  void *work, *host_work = malloc(host_bytes + 1);
  CK(cudaMalloc(&work, ws_bytes));
  probe_ws ws;
  memset(&ws, 0, sizeof ws);
  cudaEvent_t ev[PARTS + 1];
  for (int i = 0; i <= PARTS; i++) CK(cudaEventCreate(&ev[i]));
  float *ms = (float *)malloc(sizeof(float) * (size_t)(PARTS * reps));
  int degenerate = 0;
  for (int rep = -1; rep < reps; rep++) {
    CK(cudaEventRecord(ev[0], st));
    CK(cudaMemcpyAsync(a, a0, bytes, cudaMemcpyDeviceToDevice, st));
    gstat_cu_two_stage_args t = {n,
                                 a,
                                 w,
                                 info,
                                 work,
                                 host_work,
                                 host_flag,
                                 1e-8,
                                 st,
                                 solver,
                                 params,
                                 blas,
                                 serial ? NULL : side,
                                 side_blas,
                                 getenv("GSTAT_TWO_STAGE_ALL_SMS") ? 0 : -1,
                                 {hand[0], hand[1]},
                                 ev + 1,
                                 {0, 0, 0.0, 0, NULL}};
    const char *what = "";
    cudaError_t err = gstat_cu_two_stage(&t, &degenerate, &what);
    if (err != cudaSuccess || degenerate) {
      fprintf(stderr, "two-stage: %s: %s%s\n", what, cudaGetErrorString(err),
              degenerate ? " (degenerate)" : "");
      return 1;
    }
    CK(cudaEventRecord(ev[7], st));
    CK(cudaMemcpyAsync(r, a0, bytes, cudaMemcpyDeviceToDevice, st));
    size_t db, hb;
    CS(cusolverDnXsyevd_bufferSize(solver, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                   n, CUDA_R_64F, r, n, CUDA_R_64F, wref, CUDA_R_64F, &db, &hb));
    probe_ws_reserve(&ws, db, hb);
    CS(cusolverDnXsyevd(solver, params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n,
                        CUDA_R_64F, r, n, CUDA_R_64F, wref, CUDA_R_64F, ws.dev, db, ws.host, hb,
                        info));
    CK(cudaEventRecord(ev[8], st));
    CK(cudaEventSynchronize(ev[8]));
    if (rep >= 0)
      for (int i = 0; i < PARTS; i++)
        CK(cudaEventElapsedTime(&ms[i * reps + rep], ev[i], ev[i + 1]));
  }
  /* checks: a holds the vectors */
  double amax = max_abs(a0, nn), wdiff = 0;
  double *hw = (double *)malloc(sizeof(double) * (size_t)n),
         *hwr = (double *)malloc(sizeof(double) * (size_t)n);
  CK(cudaMemcpy(hw, w, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hwr, wref, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; i++) wdiff = fmax(wdiff, fabs(hw[i] - hwr[i]));
  const double one = 1.0, zero = 0.0;
  int ni = (int)n;
  dim3 grid((unsigned)((n + 255) / 256), (unsigned)n);
  CB(cublasDsymm(blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, ni, ni, &one, a0, ni, a, ni, &zero,
                 r, ni));
  sub_scaled<<<grid, 256, 0, st>>>(r, a, w, n);
  CK(cudaStreamSynchronize(st));
  double res = max_abs(r, nn) / amax;
  CB(cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni, ni, &one, a, ni, a, ni, &zero, r, ni));
  minus_identity<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(r, n);
  CK(cudaStreamSynchronize(st));
  double orth = max_abs(r, nn);
  float total = 0;
  printf("| f64 | 1x%lld |", (long long)n);
  for (int i = 0; i < PARTS; i++) {
    float m = probe_median_f(ms + i * reps, reps);
    if (i < PARTS - 1) total += m;
    printf(" %s %.3f |", part_name[i], m);
  }
  printf(" two-stage %.3f ms | w diff %.1e | residual %.1e | orthogonality %.1e |\n", total,
         wdiff / amax, res, orth);
  return 0;
}
