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
 * gap: a batch with an eigenvalue gap below the tolerance is reported as
 * degenerate and must be solved another way.
 *
 * Plain CUDA interface (no gstat_cu_state), so that bench/ can drive it too.
 */
#ifndef GSTAT_BACKEND_CUDA_SYTRD_EIGH_H
#define GSTAT_BACKEND_CUDA_SYTRD_EIGH_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int cdt; /* 1 float32, 2 float64 */
  int64_t n, nb;
  int want;       /* non-zero: eigenvectors too */
  void *a;        /* in: nb dense column-major n x n, lower triangle read; out:
                   * the eigenvectors (values only: overwritten) */
  void *w;        /* out: nb x n eigenvalues, ascending */
  int *info;      /* device, nb: 0, or 1 where T was not finite (NaN values) */
  void *work;     /* device, gstat_cu_sytrd_eigh_bytes' bytes */
  int *host_flag; /* pinned host int (vectors only): the degenerate check */
  double gap_tol; /* vectors: the relative eigenvalue gap below which the
                   * batch is degenerate */
  cudaStream_t stream;
  cublasHandle_t blas; /* set to `stream` by the call */
} gstat_cu_sytrd_eigh_args;

/* Whether the path takes order n (2 <= n <= GSTAT_CU_SYTRD_MAX_N). */
int gstat_cu_sytrd_eigh_fits(int64_t n);

/* Device bytes the call needs for nb matrices of order n. */
size_t gstat_cu_sytrd_eigh_bytes(int cdt, int64_t n, int64_t nb, int want);

/* Runs the decomposition, queued on `stream`. Values only: no host
 * synchronization. Vectors: it synchronizes once, after the tridiagonal
 * eigenvectors, to read the degenerate flag: *degenerate = 1 means some
 * matrix has a gap below gap_tol * ||T||; then the eigenvectors are not
 * computed and A holds reflectors (solve the batch another way). Returns
 * cudaSuccess or the first error, with *what naming the step. */
cudaError_t gstat_cu_sytrd_eigh(const gstat_cu_sytrd_eigh_args *a, int *degenerate,
                                const char **what);

#endif /* GSTAT_BACKEND_CUDA_SYTRD_EIGH_H */
