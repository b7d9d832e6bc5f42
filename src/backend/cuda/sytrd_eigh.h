/*
 * Symmetric eigendecomposition of a batch in lockstep, all on the GPU:
 *   1. our reduction to tridiagonal form (kernels/sytrd_batched.cu, cuBLAS
 *      for the panels' rank-2k updates), every step one launch for the batch;
 *   2. the tridiagonal eigenvalues by bisection and, with vectors, the
 *      tridiagonal eigenvectors by twisted factorizations, in double
 *      (kernels/tridiag_eig.cu);
 *   3. with vectors, the back-transformation by blocks of reflectors (cuBLAS).
 * cusolverDnXsyevBatched's time at mid n hardly grows with the batch
 * (latency-bound); this path's does, from a lower start (bench/README.md).
 * Eigenvectors from twisted factorizations are orthogonal to eps ||T|| /
 * gap: clusters of eigenvalues with gaps below the tolerance get theirs by
 * inverse iteration (kernels/tridiag_clusters.cu); a matrix that step
 * cannot serve is handed back (solve_dense), or else makes the batch
 * degenerate, to be solved another way.
 *
 * Plain CUDA interface (no gstat_cu_state), so that bench/ can drive it too.
 */
#ifndef GSTAT_BACKEND_CUDA_SYTRD_EIGH_H
#define GSTAT_BACKEND_CUDA_SYTRD_EIGH_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/tridiag_step.h"

typedef struct {
  int cdt; /* 1 float32, 2 float64 */
  int64_t n, nb;
  int want;                   /* non-zero: eigenvectors too */
  void *a;                    /* in: nb dense column-major n x n, lower triangle read; out:
                               * the eigenvectors (values only: overwritten) */
  void *w;                    /* out: nb x n eigenvalues, ascending */
  int *info;                  /* device, nb: 0, or 1 where T was not finite (NaN values) */
  void *work;                 /* device, gstat_cu_sytrd_eigh_bytes' bytes */
  int *host_flag;             /* pinned host ints, nb + 1 (vectors only): the degenerate check */
  double gap_tol;             /* vectors: the relative eigenvalue gap below which a
                               * matrix's clusters need the cluster step */
  gstat_cu_clusters clusters; /* the cluster step (tridiag_step.h) */
  cudaStream_t stream;
  cublasHandle_t blas; /* set to `stream` by the call */
  /* Optional (vectors): the matrices whose gaps are too small are handed
   * back one by one. solve_dense(ctx, T, wk, info, k) solves the k dense
   * symmetric n x n matrices at T (compute type, column-major, both
   * triangles) on `stream`, their eigenvectors (ascending) overwriting them,
   * values into wk (k x n) and info (k ints); it returns
   * cudaErrorMemoryAllocation when it has no room (the batch is then
   * degenerate as without it). NULL: any such matrix makes the batch
   * degenerate. handed_back (may be NULL): how many were handed back. */
  cudaError_t (*solve_dense)(void *ctx, void *T, void *wk, int *info, int64_t k, const char **what);
  void *solve_ctx;
  int64_t *handed_back;
} gstat_cu_sytrd_eigh_args;

/* Whether the path takes order n (2 <= n <= GSTAT_CU_SYTRD_MAX_N). */
int gstat_cu_sytrd_eigh_fits(int64_t n);

/* Device bytes the call needs for nb matrices of order n. */
size_t gstat_cu_sytrd_eigh_bytes(int cdt, int64_t n, int64_t nb, int want);

/* Runs the decomposition, queued on `stream`. Values only: no host
 * synchronization. Vectors: it synchronizes once, after the tridiagonal
 * eigenvectors, to read the degenerate flag: *degenerate = 1 means some
 * matrix has a gap below gap_tol * ||T|| (and solve_dense did not take
 * those matrices); then the eigenvectors are not computed and A holds
 * reflectors (solve the batch another way). Returns
 * cudaSuccess or the first error, with *what naming the step. */
cudaError_t gstat_cu_sytrd_eigh(const gstat_cu_sytrd_eigh_args *a, int *degenerate,
                                const char **what);

#endif /* GSTAT_BACKEND_CUDA_SYTRD_EIGH_H */
