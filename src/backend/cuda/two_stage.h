/*
 * One float64 symmetric matrix by a two-stage reduction (for large n, where
 * cuSOLVER's one-stage Dsytrd is a chain of latency-bound column steps):
 *   1. dense to a band of half-width b = 32 by block reflectors (cuSOLVER
 *      Xgeqrf per panel of b columns, cuBLAS symm / syr2k for the two-sided
 *      update);
 *   2. band to tridiagonal by bulge chasing (kernels/sb2st.cu);
 *   3. our tridiagonal step (bisection, twisted factorizations;
 *      kernels/tridiag_eig.cu), then one Newton-Schulz step for
 *      orthogonality;
 *   4. Q1 Q2 formed: Q1 from stage 1's reflectors (four panels at a time,
 *      as dorgqr), then times stage 2's (block reflectors of 32 sweeps,
 *      batched gemms), on a side stream while 2. and 3. run (they leave
 *      most of the GPU idle); the vectors are Q1 Q2 Z, one gemm.
 * Eigenvectors from twisted factorizations are orthogonal to eps ||T|| /
 * gap: a matrix with an eigenvalue gap below the tolerance is reported as
 * degenerate and must be solved another way.
 *
 * Plain CUDA interface (no gstat_cu_state).
 */
#ifndef GSTAT_BACKEND_CUDA_TWO_STAGE_H
#define GSTAT_BACKEND_CUDA_TWO_STAGE_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/tridiag_step.h"

typedef struct {
  int64_t n;       /* gstat_cu_two_stage_fits(n) */
  double *a;       /* in: column-major n x n, lower triangle read; out: vectors */
  double *w;       /* out: n eigenvalues, ascending */
  int *info;       /* device: 0, or 1 where T was not finite (NaN values) */
  void *work;      /* device, gstat_cu_two_stage_bytes' bytes */
  void *host_work; /* host, the *host_bytes it reported (may be NULL when 0) */
  int *host_flag;  /* pinned host ints (2): the degenerate check */
  double gap_tol;  /* relative eigenvalue gap below which A is degenerate */
  cudaStream_t stream;
  cusolverDnHandle_t solver; /* set to `stream` by the call */
  cusolverDnParams_t params;
  cublasHandle_t blas; /* set to `stream` by the call */
  /* NULL: everything on `stream`. Else Q1 Q2 (4.) is formed on `side`,
   * while `stream` chases the bulges and solves T, with side_blas (set to
   * `side` by the call); `stream` waits for it before the call returns. */
  cudaStream_t side;
  cublasHandle_t side_blas;
  int side_sms;               /* SMs side_blas targets while the chase runs: -1 those the
                               * chase leaves when a third of the GPU or more, 0 all */
  cudaEvent_t ev[2];          /* the hand-offs between the streams */
  cudaEvent_t *marks;         /* NULL, or six events recorded on `stream`: after 1., 2., the
                               * step, Newton-Schulz, the wait for Q1 Q2 and the last product,
                               * for bench/probe_two_stage */
  gstat_cu_clusters clusters; /* the cluster step (tridiag_step.h) */
} gstat_cu_two_stage_args;

/* Whether the path takes order n. */
int gstat_cu_two_stage_fits(int64_t n);

/* Device bytes the call needs for order n, its host bytes in *host_bytes
 * (0: cuSOLVER's size query failed); a: the device matrix the call will
 * solve (not read). */
size_t gstat_cu_two_stage_bytes(cusolverDnHandle_t solver, cusolverDnParams_t params, int64_t n,
                                const double *a, size_t *host_bytes);

/* Runs the decomposition on `stream`; it synchronizes after the
 * tridiagonal eigenvectors to read the degenerate flag (and again after
 * the cluster step, when eigenvalue gaps are not above gap_tol * ||T||):
 * *degenerate = 1 means the cluster step could not serve A; then A holds
 * reflectors and no vectors (solve it another way). Returns cudaSuccess or
 * the first error, with *what naming the step. */
cudaError_t gstat_cu_two_stage(const gstat_cu_two_stage_args *a, int *degenerate,
                               const char **what);

#endif /* GSTAT_BACKEND_CUDA_TWO_STAGE_H */
