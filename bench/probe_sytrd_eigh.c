/*
 * probe_sytrd_eigh [--values] [--check] [--twin] [--gap TOL] f32|f64 N BATCH REPS
 *
 * gstat's lockstep eigensolver (src/backend/cuda/sytrd_eigh.c: our batched
 * reduction, bisection and twisted factorizations in double, cuBLAS
 * back-transformation) against raw cusolverDnXsyevBatched on bench_cuda's
 * matrices (sym_batch.h): median ms (CUDA events), eigenvalue agreement,
 * whether the batch was found degenerate (gap below TOL * ||T||, default
 * 1e-8), and with --check the residual and orthogonality of the first and
 * last matrices (on the host, in double). --values: eigenvalues only.
 * --twin: two equal diagonal blocks (every eigenvalue double: degenerate).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "backend/cuda/sytrd_eigh.h"
#include "probe_util.h"
#include "sym_batch.h"

/* max |A v_j - w_j v_j| / max |A| and max |V^T V - I| of matrix b. */
static void check(const double *A, const void *V, const void *w, int cdt, int64_t n, int64_t b,
                  double *res, double *orth) {
  const double *a = A + b * n * n;
  double amax = 0, r = 0, o = 0;
  for (int64_t i = 0; i < n * n; i++) amax = fmax(amax, fabs(a[i]));
  double *v = malloc(sizeof(double) * (size_t)(n * n));
  for (int64_t i = 0; i < n * n; i++) v[i] = probe_get(V, cdt, (size_t)(b * n * n + i));
  for (int64_t j = 0; j < n; j++) {
    double lam = probe_get(w, cdt, (size_t)(b * n + j));
    for (int64_t i = 0; i < n; i++) {
      double s = -lam * v[i + j * n];
      for (int64_t l = 0; l < n; l++) s += a[i + l * n] * v[l + j * n];
      r = fmax(r, fabs(s));
    }
    for (int64_t k = 0; k <= j; k++) {
      double s = k == j ? -1.0 : 0.0;
      for (int64_t l = 0; l < n; l++) s += v[l + k * n] * v[l + j * n];
      o = fmax(o, fabs(s));
    }
  }
  free(v);
  *res = r / amax;
  *orth = o;
}

int main(int argc, char **argv) {
  int values = 0, checks = 0, twin = 0;
  double gap_tol = 1e-8;
  while (argc > 1 && argv[1][0] == '-') {
    values |= strcmp(argv[1], "--values") == 0;
    checks |= strcmp(argv[1], "--check") == 0;
    twin |= strcmp(argv[1], "--twin") == 0;
    if (strcmp(argv[1], "--gap") == 0 && argc > 2) gap_tol = atof(argv[2]), argv++, argc--;
    argv++, argc--;
  }
  if (argc != 5) {
    fprintf(
        stderr,
        "usage: probe_sytrd_eigh [--values] [--check] [--twin] [--gap TOL] f32|f64 N BATCH REPS\n");
    return 2;
  }
  cusolverEigMode_t jobz = values ? CUSOLVER_EIG_MODE_NOVECTOR : CUSOLVER_EIG_MODE_VECTOR;
  int cdt = strcmp(argv[1], "f64") == 0 ? 2 : 1;
  int64_t n = atoll(argv[2]), nb = atoll(argv[3]);
  int reps = atoi(argv[4]);
  size_t es = cdt == 2 ? 8 : 4, mats = (size_t)(n * n * nb);
  double *A = malloc(sizeof(double) * mats);
  void *hA = malloc(es * mats), *hV = malloc(es * mats), *hw = malloc(es * (size_t)(n * nb));
  void *hw_ref = malloc(es * (size_t)(n * nb));
  bench_sym_batch(A, nb, n, 7); /* bench_cuda's matrices */
  if (twin)                     /* two equal diagonal blocks: every eigenvalue double */
    for (int64_t b = 0; b < nb; b++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
          int64_t h = n / 2;
          int same = (i < h) == (j < h) && i < 2 * h && j < 2 * h;
          A[b * n * n + i + j * n] = same ? A[b * n * n + i % h + (j % h) * n] : 0.0;
        }
  bench_store(A, mats, cdt == 2, hA);
  void *dA0, *dA, *dW;
  int *dInfo;
  CK(cudaMalloc(&dA0, es * mats));
  CK(cudaMalloc(&dA, es * mats));
  CK(cudaMalloc(&dW, es * (size_t)(n * nb)));
  CK(cudaMalloc((void **)&dInfo, sizeof(int) * (size_t)nb));
  CK(cudaMemcpy(dA0, hA, es * mats, cudaMemcpyHostToDevice));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cusolverDnHandle_t sol;
  cusolverDnParams_t par;
  cublasHandle_t blas;
  cusolverDnCreate(&sol);
  cusolverDnSetStream(sol, st);
  cusolverDnCreateParams(&par);
  cublasCreate(&blas);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t_ref = malloc(sizeof(float) * (size_t)reps),
        *t_our = malloc(sizeof(float) * (size_t)reps);

  /* raw XsyevBatched */
  cudaDataType t = cdt == 2 ? CUDA_R_64F : CUDA_R_32F;
  size_t dev_b = 0, host_b = 0;
  if (cusolverDnXsyevBatched_bufferSize(sol, par, jobz, CUBLAS_FILL_MODE_LOWER, n, t, dA, n, t, dW,
                                        t, &dev_b, &host_b, nb) != CUSOLVER_STATUS_SUCCESS) {
    fprintf(stderr, "XsyevBatched_bufferSize failed\n");
    return 1;
  }
  probe_ws ws = {0};
  probe_ws_reserve(&ws, dev_b, host_b);
  for (int r = -1; r < reps; r++) {
    CK(cudaMemcpyAsync(dA, dA0, es * mats, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e0, st));
    if (cusolverDnXsyevBatched(sol, par, jobz, CUBLAS_FILL_MODE_LOWER, n, t, dA, n, t, dW, t,
                               ws.dev, dev_b, ws.host, host_b, dInfo,
                               nb) != CUSOLVER_STATUS_SUCCESS) {
      fprintf(stderr, "XsyevBatched failed\n");
      return 1;
    }
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    if (r >= 0) CK(cudaEventElapsedTime(&t_ref[r], e0, e1));
  }
  CK(cudaMemcpy(hw_ref, dW, es * (size_t)(n * nb), cudaMemcpyDeviceToHost));

  /* ours */
  void *work;
  int *hflag;
  CK(cudaMalloc(&work, gstat_cu_sytrd_eigh_bytes(cdt, n, nb, !values)));
  CK(cudaMallocHost((void **)&hflag, sizeof(int)));
  gstat_cu_sytrd_eigh_args args = {cdt,   n,    nb,    !values, dA, dW,
                                   dInfo, work, hflag, gap_tol, st, blas};
  int degenerate = 0;
  for (int r = -1; r < reps; r++) {
    CK(cudaMemcpyAsync(dA, dA0, es * mats, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(e0, st));
    const char *what = "";
    cudaError_t err = gstat_cu_sytrd_eigh(&args, &degenerate, &what);
    if (err != cudaSuccess) {
      fprintf(stderr, "sytrd_eigh: %s: %s\n", what, cudaGetErrorString(err));
      return 1;
    }
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    if (r >= 0) CK(cudaEventElapsedTime(&t_our[r], e0, e1));
  }
  int *hinfo = malloc(sizeof(int) * (size_t)nb);
  CK(cudaMemcpy(hinfo, dInfo, sizeof(int) * (size_t)nb, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hw, dW, es * (size_t)(n * nb), cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hV, dA, es * mats, cudaMemcpyDeviceToHost));
  int bad = 0;
  double wdiff = 0, wmax = 0;
  for (int64_t b = 0; b < nb; b++) bad += hinfo[b] != 0;
  for (int64_t i = 0; i < n * nb; i++) {
    wdiff = fmax(wdiff, fabs(probe_get(hw, cdt, (size_t)i) - probe_get(hw_ref, cdt, (size_t)i)));
    wmax = fmax(wmax, fabs(probe_get(hw_ref, cdt, (size_t)i)));
  }
  double res0 = NAN, orth0 = NAN, res1 = NAN, orth1 = NAN;
  if (checks && !values && !degenerate) {
    check(A, hV, hw, cdt, n, 0, &res0, &orth0);
    check(A, hV, hw, cdt, n, nb - 1, &res1, &orth1);
  }
  float ref = probe_median_f(t_ref, reps), our = probe_median_f(t_our, reps);
  printf("| %s%s | %lldx%lld | %.3f | %.3f | %.2f | %d | %.1e | %.1e | %.1e | %.1e | %.1e | %d |\n",
         argv[1], values ? " values" : "", (long long)nb, (long long)n, ref, our, ref / our,
         degenerate, wdiff / wmax, res0, res1, orth0, orth1, bad);
  return 0;
}
