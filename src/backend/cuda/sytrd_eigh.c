/* The lockstep eigensolver of sytrd_eigh.h: reduce, solve the tridiagonal problems, back-transform.
 */
#include "backend/cuda/sytrd_eigh.h"

#include <stdlib.h>

#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/tridiag_step.h"

enum { P = GSTAT_CU_SYTRD_PANEL };

/* The device workspace, in bytes from its start. */
typedef struct {
  size_t x, wpan, vec, g, t, y, y2; /* compute type */
  gstat_cu_tridiag_parts tri;       /* the tridiagonal step's */
  size_t total;
} layout;

static layout device_layout(int cdt, int64_t n, int64_t nb, int want) {
  layout l;
  size_t at = 0, es = cdt == 2 ? 8 : 4, n2 = (size_t)(n * n) * (size_t)nb, v = want ? 1 : 0;
  l.x = gstat_cu_ws_part(&at, v * n2 * es);                  /* eigenvectors, back-transformed */
  l.wpan = gstat_cu_ws_part(&at, (size_t)(n * P * nb) * es); /* the panel's w vectors */
  l.vec = gstat_cu_ws_part(&at, gstat_cu_sytrd_vec_elems(n, nb) * es); /* d, e, tau, y, dots */
  l.g = gstat_cu_ws_part(&at, v * (size_t)(P * P * nb) * es);          /* V^T V of a block */
  l.t = gstat_cu_ws_part(&at, v * (size_t)(P * P * nb) * es);          /* its triangular factor */
  l.y = gstat_cu_ws_part(&at, v * (size_t)(P * n * nb) * es);          /* V^T X */
  l.y2 = gstat_cu_ws_part(&at, v * (size_t)(P * n * nb) * es);         /* T V^T X */
  l.tri = gstat_cu_tridiag_parts_at(&at, n, nb, want);
  l.total = at;
  return l;
}

int gstat_cu_sytrd_eigh_fits(int64_t n) {
  return n >= 2 && n <= GSTAT_CU_SYTRD_MAX_N;
}

size_t gstat_cu_sytrd_eigh_bytes(int cdt, int64_t n, int64_t nb, int want) {
  return device_layout(cdt, n, nb, want).total;
}

/* Strided batched GEMM in the compute type: C = alpha op(A) op(B) + beta C
 * for each of the nb matrices (strides in elements). */
typedef struct {
  cublasHandle_t h;
  int cdt;
  int nb;
} gemm_ctx;

static cublasStatus_t gemm(const gemm_ctx *g, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                           int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                           int64_t sa, const void *B, int64_t ldb, int64_t sb, double beta, void *C,
                           int64_t ldc, int64_t sc) {
  if (g->cdt == 2)
    return cublasDgemmStridedBatched(g->h, ta, tb, (int)m, (int)n, (int)k, &alpha, A, (int)lda, sa,
                                     B, (int)ldb, sb, &beta, C, (int)ldc, sc, g->nb);
  float fa = (float)alpha, fb = (float)beta;
  return cublasSgemmStridedBatched(g->h, ta, tb, (int)m, (int)n, (int)k, &fa, A, (int)lda, sa, B,
                                   (int)ldb, sb, &fb, C, (int)ldc, sc, g->nb);
}

#define BLAS(call, name) GSTAT_CU_LIB_STEP(call, CUBLAS_STATUS_SUCCESS, name)

/* A = Q T Q^T: T's d and e into vec, Q's reflectors into A's columns. */
static cudaError_t reduce(const gstat_cu_sytrd_eigh_args *a, const gemm_ctx *g, void *wpan,
                          void *vec, double *scratch, double *sigma, const char **what) {
  const int64_t n = a->n, nb = a->nb, n2 = n * n;
  const size_t es = a->cdt == 2 ? 8 : 4;
  char *A = a->a;
  cudaError_t err;
  GSTAT_CU_STEP(gstat_cu_sytrd_scale(a->cdt, A, n, nb, scratch, sigma, a->stream), "scaling");
  GSTAT_CU_STEP(gstat_cu_sytrd_symmetrize(a->cdt, A, n, nb, a->stream), "symmetrize");
  for (int64_t k = 0; k < n; k++) {
    int64_t finish = k > 0 ? k - 1 : -1;
    if (k % P == 0 && k > 0) {
      /* the panel ends: its last w, then A22 -= V W^T + W V^T */
      GSTAT_CU_STEP(gstat_cu_sytrd_column(a->cdt, A, wpan, vec, n, nb, finish, -1, a->stream),
                    "column");
      finish = -1;
      int64_t p = k - P, mt = n - k;
      char *V = A + (size_t)(k + p * n) * es, *W = (char *)wpan + (size_t)k * es;
      char *C = A + (size_t)(k + k * n) * es;
      BLAS(gemm(g, CUBLAS_OP_N, CUBLAS_OP_T, mt, mt, P, -1.0, V, n, n2, W, n, n * P, 1.0, C, n, n2),
           "cuBLAS gemm (panel update)");
      BLAS(gemm(g, CUBLAS_OP_N, CUBLAS_OP_T, mt, mt, P, -1.0, W, n, n * P, V, n, n2, 1.0, C, n, n2),
           "cuBLAS gemm (panel update)");
    }
    GSTAT_CU_STEP(gstat_cu_sytrd_column(a->cdt, A, wpan, vec, n, nb, finish, k, a->stream),
                  "column");
    if (k < n - 1)
      GSTAT_CU_STEP(gstat_cu_sytrd_symv(a->cdt, A, wpan, vec, n, nb, k, a->stream), "product");
  }
  return cudaSuccess;
}

/* X := Q X, Q = H_0 ... H_{n-2}: blocks of P reflectors, the last first,
 * each as I - V T V^T (three products and the factor T). */
static cudaError_t back_transform(const gstat_cu_sytrd_eigh_args *a, const gemm_ctx *g,
                                  const layout *l, char *base, char *X, const char **what) {
  const int64_t n = a->n, nb = a->nb, n2 = n * n;
  const size_t es = a->cdt == 2 ? 8 : 4;
  char *A = a->a, *G = base + l->g, *T = base + l->t;
  char *Y = base + l->y, *Y2 = base + l->y2;
  const char *tau = base + l->vec + (size_t)(2 * n * nb) * es;
  cudaError_t err;
  for (int64_t p = ((n - 2) / P) * P; p >= 0; p -= P) {
    int64_t nbw = n - 1 - p < P ? n - 1 - p : P, m = n - p - 1;
    const char *V = A + (size_t)(p + 1 + p * n) * es;
    char *X1 = X + (size_t)(p + 1) * es;
    BLAS(gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, nbw, nbw, m, 1.0, V, n, n2, V, n, n2, 0.0, G, nbw,
              nbw * nbw),
         "cuBLAS gemm (V^T V)");
    GSTAT_CU_STEP(gstat_cu_larft(a->cdt, G, tau + (size_t)p * es, T, nbw, n, nb, a->stream),
                  "larft");
    BLAS(gemm(g, CUBLAS_OP_T, CUBLAS_OP_N, nbw, n, m, 1.0, V, n, n2, X1, n, n2, 0.0, Y, nbw,
              nbw * n),
         "cuBLAS gemm (V^T X)");
    BLAS(gemm(g, CUBLAS_OP_N, CUBLAS_OP_N, nbw, n, nbw, 1.0, T, nbw, nbw * nbw, Y, nbw, nbw * n,
              0.0, Y2, nbw, nbw * n),
         "cuBLAS gemm (T Y)");
    BLAS(gemm(g, CUBLAS_OP_N, CUBLAS_OP_N, m, n, nbw, -1.0, V, n, n2, Y2, nbw, nbw * n, 1.0, X1, n,
              n2),
         "cuBLAS gemm (X - V Y)");
  }
  return cudaSuccess;
}

/* The matrices the tridiagonal step flagged (host_flag), handed to
 * solve_dense in one call: their tridiagonal matrices gathered dense into
 * U's place (free after the step), solved, and their vectors scattered into
 * X; the bisection values stay (as accurate, and the same as values-only
 * calls give). Values, info and the list of matrices go in Zt's place. */
static cudaError_t hand_back(const gstat_cu_sytrd_eigh_args *a, const layout *l, char *base,
                             const void *d, const void *e, char *X, const char **what) {
  const int64_t n = a->n, nb = a->nb;
  const size_t es = a->cdt == 2 ? 8 : 4;
  int *list = malloc(sizeof(int) * (size_t)nb);
  if (!list) return cudaErrorMemoryAllocation;
  int64_t k = 0;
  for (int64_t b = 0; b < nb; b++)
    if (a->host_flag[b]) list[k++] = (int)b;
  if (k == 0) { /* flags[nb] comes with some flags[b]: not expected */
    free(list);
    *what = "hand-back list";
    return cudaErrorInvalidValue;
  }
  char *Tc = base + l->tri.u, *wk = base + l->tri.zt;
  size_t at = (size_t)(k * n) * es;
  int *info_c = (int *)(wk + ((at + 255) & ~(size_t)255)), *idx = info_c + k;
  /* from pageable memory: the copy is staged before the call returns */
  cudaError_t err =
      cudaMemcpyAsync(idx, list, sizeof(int) * (size_t)k, cudaMemcpyHostToDevice, a->stream);
  free(list);
  if (err != cudaSuccess) {
    *what = "hand-back list";
    return err;
  }
  GSTAT_CU_STEP(gstat_cu_tridiag_gather(a->cdt, d, e, n, idx, k, Tc, a->stream),
                "hand-back gather");
  if ((err = a->solve_dense(a->solve_ctx, Tc, wk, info_c, k, what)) != cudaSuccess) return err;
  GSTAT_CU_STEP(gstat_cu_tridiag_scatter(a->cdt, Tc, info_c, n, idx, k, X, a->info, a->stream),
                "hand-back scatter");
  if (a->handed_back) *a->handed_back = k;
  return cudaSuccess;
}

cudaError_t gstat_cu_sytrd_eigh(const gstat_cu_sytrd_eigh_args *a, int *degenerate,
                                const char **what) {
  const int64_t n = a->n, nb = a->nb;
  const size_t es = a->cdt == 2 ? 8 : 4, n2 = (size_t)(n * n);
  *degenerate = 0;
  if (a->handed_back) *a->handed_back = 0;
  if (!gstat_cu_sytrd_eigh_fits(n) || nb < 1 || nb > 65535 || (a->cdt != 1 && a->cdt != 2) ||
      (a->want && !a->host_flag)) {
    *what = "arguments";
    return cudaErrorInvalidValue;
  }
  layout l = device_layout(a->cdt, n, nb, a->want);
  char *base = a->work, *vec = base + l.vec;
  gemm_ctx g = {a->blas, a->cdt, (int)nb};
  cudaError_t err;
  BLAS(cublasSetStream(a->blas, a->stream), "cuBLAS stream");
  /* the step's norms serve the scaling as scratch until bisection */
  err = reduce(a, &g, base + l.wpan, vec, (double *)(base + l.tri.norms),
               (double *)(base + l.tri.sigma), what);
  if (err != cudaSuccess) return err;
  char *X = base + l.x;
  gstat_cu_tridiag_step_args t = {.cdt = a->cdt,
                                  .n = n,
                                  .nb = nb,
                                  .d = vec,
                                  .e = vec + (size_t)(n * nb) * es,
                                  .base = base,
                                  .parts = l.tri,
                                  .w = a->w,
                                  .info = a->info,
                                  .X = a->want ? X : NULL,
                                  .gap_tol = a->gap_tol,
                                  .host_flag = a->host_flag,
                                  .clusters = a->clusters,
                                  .stream = a->stream};
  err = gstat_cu_tridiag_step(&t, degenerate, what);
  if (err != cudaSuccess || !a->want) return err;
  if (*degenerate && a->solve_dense) {
    err = hand_back(a, &l, base, t.d, t.e, X, what);
    if (err == cudaErrorMemoryAllocation) return cudaSuccess; /* degenerate, as without it */
    if (err != cudaSuccess) return err;
    *degenerate = 0;
  }
  if (*degenerate) return cudaSuccess;
  if (a->cdt == 2) {
    /* double's twisted vectors are orthogonal to about 1e-12 (eps ||T|| /
     * gap); one Newton-Schulz step towards the nearest orthogonal matrix,
     * X := X (3 I - X^T X) / 2, squares that error and keeps the residual
     * (bench/README.md). S in U's place, the result in Zt's. */
    char *S = base + l.tri.u, *X2 = base + l.tri.zt;
    int64_t nn = (int64_t)n2;
    BLAS(gemm(&g, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, 1.0, X, n, nn, X, n, nn, 0.0, S, n, nn),
         "cuBLAS gemm (X^T X)");
    GSTAT_CU_STEP(cudaMemcpyAsync(X2, X, n2 * (size_t)nb * es, cudaMemcpyDeviceToDevice, a->stream),
                  "copying the vectors");
    BLAS(gemm(&g, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, -0.5, X, n, nn, S, n, nn, 1.5, X2, n, nn),
         "cuBLAS gemm (orthogonalization)");
    X = X2;
  }
  err = back_transform(a, &g, &l, base, X, what);
  if (err != cudaSuccess) return err;
  GSTAT_CU_STEP(cudaMemcpyAsync(a->a, X, n2 * (size_t)nb * es, cudaMemcpyDeviceToDevice, a->stream),
                "copying the vectors");
  return cudaSuccess;
}
