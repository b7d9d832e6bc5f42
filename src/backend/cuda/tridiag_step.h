/*
 * What the two drivers around our tridiagonal eigensolver share
 * (sytrd_eigh.c: the lockstep solver; sytrd_split.c: cuSOLVER's reduction
 * around it): the carving of their device workspaces, the error-step
 * macros, and the step itself (kernels/tridiag_eig.cu): eigenvalues by
 * bisection and, with vectors, twisted factorizations and the one read
 * back that says whether the batch is degenerate.
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

/* The step's device scratch (byte offsets in a workspace): eigenvalues in
 * double (n per problem), ||T|| and the pivot guard (2), the input's
 * scaling sigma (1), with vectors the tridiagonal eigenvectors and their
 * bottom-up factors (n x n doubles each) and the degenerate flags (nb + 1
 * ints). */
typedef struct {
  size_t wd, norms, sigma, zt, u, flags;
} gstat_cu_tridiag_parts;

/* Carve the parts for nb problems of order n from offset *at. */
gstat_cu_tridiag_parts gstat_cu_tridiag_parts_at(size_t *at, int64_t n, int64_t nb, int want);

typedef struct {
  int cdt; /* 1 float32, 2 float64: d, e, w and X */
  int64_t n, nb;
  const void *d, *e; /* device, n per problem (e's first n - 1 used) */
  char *base;        /* the workspace the parts were carved from */
  gstat_cu_tridiag_parts parts;
  void *w;        /* out: eigenvalues (divided by sigma), n per problem */
  int *info;      /* out: 0, or 1 where T was not finite */
  void *X;        /* out: the tridiagonal eigenvectors, n x n per problem; NULL: values only */
  double gap_tol; /* vectors: the relative gap below which a batch is degenerate */
  int *host_flag; /* vectors: pinned host int for the read back */
  cudaStream_t stream;
} gstat_cu_tridiag_step_args;

/* Values only: queued on the stream, no synchronization. With vectors: one
 * synchronization, *degenerate = 1 when some gap is below gap_tol * ||T||.
 * Returns cudaSuccess or the first error, with *what naming the step. */
cudaError_t gstat_cu_tridiag_step(const gstat_cu_tridiag_step_args *a, int *degenerate,
                                  const char **what);

#endif /* GSTAT_BACKEND_CUDA_TRIDIAG_STEP_H */
