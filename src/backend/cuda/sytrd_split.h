/*
 * One float32 symmetric matrix by cuSOLVER's reduction to tridiagonal form
 * (cusolverDnSsytrd), our tridiagonal eigensolver in double (bisection and
 * twisted factorizations, kernels/tridiag_eig.cu) and cuSOLVER's
 * back-transformation (cusolverDnSormtr). cuSOLVER's float32 Xsyevd spends
 * long in its own tridiagonal stage (bench/probe_syevd_parts; bench/README.md,
 * "Measurements moved from code comments"); its reduction is the faster half.
 * Eigenvectors from twisted factorizations are orthogonal to eps ||T|| /
 * gap: a matrix with an eigenvalue gap below the tolerance is reported as
 * degenerate and must be solved another way.
 *
 * Plain CUDA interface (no gstat_cu_state).
 */
#ifndef GSTAT_BACKEND_CUDA_SYTRD_SPLIT_H
#define GSTAT_BACKEND_CUDA_SYTRD_SPLIT_H

#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cuda/tridiag_step.h"

typedef struct {
  int64_t n;                  /* 2 <= n <= GSTAT_CU_TRIDIAG_MAX_N */
  float *a;                   /* in: column-major n x n, lower triangle read; out: vectors */
  int64_t k;                  /* 0: every vector; else the top k only, into a's last k
                               * columns (the others unspecified) */
  float *w;                   /* out: n eigenvalues, ascending */
  int *info;                  /* device: 0, or 1 where T was not finite (NaN values) */
  void *work;                 /* device, gstat_cu_sytrd_split_bytes' bytes */
  int *host_flag;             /* pinned host ints (2): the degenerate check */
  double gap_tol;             /* relative eigenvalue gap below which A is degenerate */
  gstat_cu_clusters clusters; /* the cluster step (tridiag_step.h) */
  cudaStream_t stream;
  cusolverDnHandle_t solver; /* set to `stream` by the call */
} gstat_cu_sytrd_split_args;

/* Whether the path takes order n. */
int gstat_cu_sytrd_split_fits(int64_t n);

/* Device bytes the call needs for order n (0: cuSOLVER's size query
 * failed); a: the device matrix the call will solve (not read). */
size_t gstat_cu_sytrd_split_bytes(cusolverDnHandle_t solver, int64_t n, const float *a);

/* Runs the decomposition on `stream`; it synchronizes after the
 * tridiagonal eigenvectors to read the degenerate flag (and again after
 * the cluster step, when eigenvalue gaps are not above gap_tol * ||T||):
 * *degenerate = 1 means the cluster step could not serve A; then A holds
 * reflectors and no vectors (solve it another way). Returns cudaSuccess or
 * the first error, with *what naming the step. */
cudaError_t gstat_cu_sytrd_split(const gstat_cu_sytrd_split_args *a, int *degenerate,
                                 const char **what);

#endif /* GSTAT_BACKEND_CUDA_SYTRD_SPLIT_H */
