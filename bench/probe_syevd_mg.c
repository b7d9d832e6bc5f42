/*
 * probe_syevd_mg f32|f64 N REPS TILE...
 *
 * Is cuSOLVER's multi-GPU eigensolver (cusolverMgSyevd, deprecated in
 * CUDA 13) faster than cusolverDnXsyevd on one large matrix when given a
 * single GPU? One matrix (bench_cuda's, sym_batch.h), lower triangle, with
 * vectors: the median wall time (both calls return with the matrix solved;
 * a device synchronize after each) of Xsyevd and of MgSyevd with each
 * column tile size, and the largest eigenvalue difference from Xsyevd's
 * (of max |A|).
 */
#define _POSIX_C_SOURCE 200809L
#define DISABLE_CUSOLVERMG_DEPRECATED
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cusolverDn.h>
#include <cusolverMg.h>

#include "probe_util.h"
#include "sym_batch.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

#define MG(call)                                                                  \
  do {                                                                            \
    cusolverStatus_t s_ = (call);                                                 \
    if (s_ != CUSOLVER_STATUS_SUCCESS) {                                          \
      fprintf(stderr, "%s:%d cuSOLVER status %d\n", __FILE__, __LINE__, (int)s_); \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: probe_syevd_mg f32|f64 N REPS TILE...\n");
    return 2;
  }
  int cdt = strcmp(argv[1], "f64") == 0 ? 2 : 1;
  int64_t n = atoll(argv[2]);
  int reps = atoi(argv[3]);
  size_t es = cdt == 2 ? 8 : 4, nn = (size_t)(n * n);
  cudaDataType dt = cdt == 2 ? CUDA_R_64F : CUDA_R_32F;
  double *A = malloc(sizeof(double) * nn);
  void *hA = malloc(es * nn), *hw = malloc(es * (size_t)n), *hw_ref = malloc(es * (size_t)n);
  bench_sym_batch(A, 1, n, 7);
  bench_store(A, nn, cdt == 2, hA);
  double amax = 0;
  for (size_t i = 0; i < nn; i++) amax = fmax(amax, fabs(A[i]));
  void *dA0, *dA, *dW;
  int *dInfo;
  CK(cudaMalloc(&dA0, es * nn));
  CK(cudaMalloc(&dA, es * nn));
  CK(cudaMalloc(&dW, es * (size_t)n));
  CK(cudaMalloc((void **)&dInfo, sizeof(int)));
  CK(cudaMemcpy(dA0, hA, es * nn, cudaMemcpyHostToDevice));
  double *t = malloc(sizeof(double) * (size_t)reps);

  cusolverDnHandle_t sol;
  cusolverDnParams_t par;
  cusolverDnCreate(&sol);
  cusolverDnCreateParams(&par);
  size_t dev_b = 0, host_b = 0;
  MG(cusolverDnXsyevd_bufferSize(sol, par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, dt,
                                 dA, n, dt, dW, dt, &dev_b, &host_b));
  probe_ws ws = {0};
  probe_ws_reserve(&ws, dev_b, host_b);
  for (int r = 0; r < reps; r++) {
    CK(cudaMemcpy(dA, dA0, es * nn, cudaMemcpyDeviceToDevice));
    CK(cudaDeviceSynchronize());
    double t0 = now_ms();
    MG(cusolverDnXsyevd(sol, par, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, dt, dA, n,
                        dt, dW, dt, ws.dev, dev_b, ws.host, host_b, dInfo));
    CK(cudaDeviceSynchronize());
    t[r] = now_ms() - t0;
  }
  qsort(t, (size_t)reps, sizeof(double), probe_cmp_double);
  printf("| %s | %lld | Xsyevd | %.2f | |\n", argv[1], (long long)n, t[reps / 2]);
  CK(cudaMemcpy(hw_ref, dW, es * (size_t)n, cudaMemcpyDeviceToHost));

  int dev = 0;
  cusolverMgHandle_t mg;
  cudaLibMgGrid_t grid;
  MG(cusolverMgCreate(&mg));
  MG(cusolverMgDeviceSelect(mg, 1, &dev));
  MG(cusolverMgCreateDeviceGrid(&grid, 1, 1, &dev, CUDALIBMG_GRID_MAPPING_COL_MAJOR));
  for (int a = 4; a < argc; a++) {
    int64_t tile = atoll(argv[a]);
    cudaLibMgMatrixDesc_t desc;
    MG(cusolverMgCreateMatrixDesc(&desc, n, n, n, tile, dt, grid));
    void *arrA[1] = {dA};
    int64_t lwork = 0;
    MG(cusolverMgSyevd_bufferSize(mg, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n,
                                  arrA, 1, 1, desc, hw, dt, dt, &lwork));
    void *work;
    CK(cudaMalloc(&work, (size_t)lwork * es));
    CK(cudaMemset(work, 0, (size_t)lwork * es));
    void *arrW[1] = {work};
    int info = 0;
    for (int r = 0; r < reps; r++) {
      CK(cudaMemcpy(dA, dA0, es * nn, cudaMemcpyDeviceToDevice));
      CK(cudaDeviceSynchronize());
      double t0 = now_ms();
      MG(cusolverMgSyevd(mg, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, (int)n, arrA, 1, 1,
                         desc, hw, dt, dt, arrW, lwork, &info));
      CK(cudaDeviceSynchronize());
      t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), probe_cmp_double);
    double wd = 0;
    for (int64_t i = 0; i < n; i++)
      wd = fmax(wd, fabs(probe_get(hw, cdt, (size_t)i) - probe_get(hw_ref, cdt, (size_t)i)));
    printf("| %s | %lld | MgSyevd tile %lld | %.2f | info %d, w diff %.1e |\n", argv[1],
           (long long)n, (long long)tile, t[reps / 2], info, wd / amax);
    cudaFree(work);
    cusolverMgDestroyMatrixDesc(desc);
  }
  return 0;
}
