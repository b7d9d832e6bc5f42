/*
 * What the two drivers around our tridiagonal eigensolver share
 * (sytrd_eigh.c: the lockstep solver; sytrd_split.c: cuSOLVER's reduction
 * around it): the carving of their device workspaces, the error-step
 * macros, and the step itself (kernels/tridiag_eig.cu): eigenvalues by
 * bisection and, with vectors, twisted factorizations, the one read back
 * that says whether some eigenvalues are too close for them and, where
 * they are, inverse iteration on those clusters (kernels/tridiag_clusters.cu)
 * and a second read back of the matrices it could not serve.
 */
#ifndef GSTAT_BACKEND_CUDA_TRIDIAG_STEP_H
#define GSTAT_BACKEND_CUDA_TRIDIAG_STEP_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* A part of `bytes` at offset *at of a workspace; *at moves past it,
 * 256-byte aligned. */
static inline size_t gstat_cu_ws_part(size_t *at, size_t bytes) {
  size_t here = *at;
  *at += (bytes + 255) & ~(size_t)255;
  return here;
}

/* Run a CUDA call; on failure name the step in *what and return its error
 * (in a function with `cudaError_t err` and `const char **what`). */
#define GSTAT_CU_STEP(call, name)        \
  do {                                   \
    if ((err = (call)) != cudaSuccess) { \
      *what = (name);                    \
      return err;                        \
    }                                    \
  } while (0)

/* Likewise for a cuBLAS or cuSOLVER call, successful when it returns `ok`
 * (CUBLAS_STATUS_SUCCESS, CUSOLVER_STATUS_SUCCESS); its failure is
 * cudaErrorUnknown, named in *what. */
#define GSTAT_CU_LIB_STEP(call, ok, name) \
  do {                                    \
    if ((call) != (ok)) {                 \
      *what = (name);                     \
      return cudaErrorUnknown;            \
    }                                     \
  } while (0)

/* What a caller asks of the cluster step and learns from it. */
typedef struct {
  int run;            /* 0: matrices with clusters are flagged (host_flag) as
                       * they were before the step existed */
  int fail;           /* the hand-back's test (GSTAT_CUDA_FAULT=clusters): every
                       * cluster's vectors fail their check */
  double max_work;    /* a cluster of c slots in a block of m rows with
                       * m c^2 above this hands its matrix back */
  int wide;           /* float64: such a cluster goes to the wide path
                       * (Cholesky QR over many blocks) instead; an
                       * experiment, off by default */
  int64_t *clustered; /* may be NULL: += the matrices the cluster step served */
} gstat_cu_clusters;

/* The step's device scratch (byte offsets in a workspace): eigenvalues in
 * double (n per problem), ||T|| and the pivot guard (2), the input's
 * scaling sigma (1), with vectors the tridiagonal eigenvectors and their
 * bottom-up factors (n x n doubles each), the flags (nb + 1 ints), the
 * slots' links (n bytes per problem) and the list of matrices with
 * clusters (nb ints); the values' order (n ints per problem); the wide
 * path's list of clusters (n / 2 per problem) and its count. */
typedef struct {
  size_t wd, norms, sigma, zt, u, flags, links, idx, perm, wide, wide_count;
  int wide_cap;
} gstat_cu_tridiag_parts;

/* Carve the parts for nb problems of order n from offset *at. */
gstat_cu_tridiag_parts gstat_cu_tridiag_parts_at(size_t *at, int64_t n, int64_t nb, int want);

typedef struct {
  int cdt; /* 1 float32, 2 float64: d, e, w and X */
  int64_t n, nb;
  const void *d, *e; /* device, n per problem (e's first n - 1 used) */
  char *base;        /* the workspace the parts were carved from */
  gstat_cu_tridiag_parts parts;
  void *w;            /* out: eigenvalues (divided by sigma), n per problem */
  int *info;          /* out: 0, or 1 where T was not finite */
  void *X;            /* out: the tridiagonal eigenvectors, n x n per problem (columns of rank below
                       * first_rank unspecified); NULL: values only */
  int64_t first_rank; /* vectors: only for the values of rank first_rank.. (ascending; 0: all) */
  double gap_tol;     /* vectors: the relative gap below which a batch is degenerate */
  int *host_flag;     /* vectors: pinned host ints (nb + 1) for the read backs;
                       * on return host_flag[b] != 0 where matrix b's vectors
                       * are not reliable, host_flag[nb] != 0 when any is */
  gstat_cu_clusters clusters;
  cudaStream_t stream;
} gstat_cu_tridiag_step_args;

/* Values only: queued on the stream, no synchronization. With vectors: one
 * synchronization, two when some gaps are not above gap_tol * ||T|| (the
 * cluster step then runs); *degenerate = 1 when some matrix's vectors are
 * still not reliable (host_flag says which). Returns cudaSuccess or the
 * first error, with *what naming the step. */
cudaError_t gstat_cu_tridiag_step(const gstat_cu_tridiag_step_args *a, int *degenerate,
                                  const char **what);

#endif /* GSTAT_BACKEND_CUDA_TRIDIAG_STEP_H */
