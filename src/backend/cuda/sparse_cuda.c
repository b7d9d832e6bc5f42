/*
 * The sparse eigensolver's steps on the device (backend.h's lincomb, dots
 * and the CSR Laplacian plan): the plan copies the graph once, with the
 * symmetric kind's scaling folded into the weights (weights_impl.h's rule),
 * and applies Y = diag(p) X - A' X: one column as one diagonal kernel and
 * cuSPARSE's SpMV, a block of several columns by our CSR kernel on
 * row-major copies of X and Y (blocks_kernels.h); A is never transposed and
 * each entry sums in a fixed order: the same result every call. Indices are
 * 32-bit where n and the stored entries allow (a quarter fewer bytes a
 * stored entry).
 */
#include <cusparse.h>
#include <omp.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/blocks_kernels.h"
#include "graph/weights_impl.h"

/* Column-major float64 in this device's memory, or NULL. */
static double *device_block(const gstat_cu_state *s, const gstat_matrix *M) {
  if (!M || M->location != GSTAT_CUDA || M->device != s->device || M->dtype != GSTAT_F64 ||
      M->row_stride != 1 || (M->cols > 1 && M->col_stride < M->rows))
    return NULL;
  return M->data;
}

static gstat_status not_taken(gstat_ctx *ctx, const char *fn) {
  return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                             "%s: blocks must be column-major float64 in this device's memory", fn);
}

gstat_status gstat_cu_lincomb_op(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  double *Z = device_block(s, r->Z), *X = device_block(s, r->X), *Y = device_block(s, r->Y);
  if (!Z || (r->X && !X) || (r->Y && !Y)) return not_taken(ctx, "lincomb");
  int64_t n = r->Z->rows, m = r->Z->cols;
  for (int64_t c0 = 0; c0 < m; c0 += GSTAT_CU_LINCOMB_COLS) {
    int64_t cols = m - c0 < GSTAT_CU_LINCOMB_COLS ? m - c0 : GSTAT_CU_LINCOMB_COLS;
    cudaError_t e = gstat_cu_lincomb(
        n, cols, Z + c0 * r->Z->col_stride, r->Z->col_stride, X ? X + c0 * r->X->col_stride : NULL,
        X ? r->X->col_stride : 1, Y ? Y + c0 * r->Y->col_stride : NULL, Y ? r->Y->col_stride : 1,
        r->g ? r->g + c0 : NULL, r->a ? r->a + c0 : NULL, r->b ? r->b + c0 : NULL, s->stream);
    if (e != cudaSuccess) return gstat_cu_fail(ctx, "lincomb", "kernel", e);
  }
  return GSTAT_OK; /* ordered on the stream before whatever reads Z */
}

gstat_status gstat_cu_dots_op(void *state, gstat_ctx *ctx, const gstat_matrix *X,
                              const gstat_matrix *Y, double *out) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  double *x = device_block(s, X), *y = device_block(s, Y);
  if (!x || !y) return not_taken(ctx, "dots");
  int64_t m = X->cols;
  double *d =
      gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)m * (1 + GSTAT_CU_DOTS_PARTS));
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, sizeof(double) * (size_t)m);
  if (!d || !h) return GSTAT_ENOMEM;
  cudaError_t e =
      gstat_cu_dots(X->rows, m, x, X->col_stride, y, Y->col_stride, d, d + m, s->stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(h, d, sizeof(double) * (size_t)m, cudaMemcpyDeviceToHost, s->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) return gstat_cu_fail(ctx, "dots", "reduction", e);
  for (int64_t c = 0; c < m; c++) out[c] = h[c];
  return GSTAT_OK;
}

/* ---- the Laplacian plan ---- */

typedef struct lap_plan {
  int64_t n, nnz;
  void *off, *idx; /* device: rebased to 0; int32 when n and nnz fit (narrow), else int64 */
  bool narrow;
  double *val, *p; /* device: scaled weights, the diagonal */
  cusparseHandle_t handle;
  cusparseSpMatDescr_t A;
  void *buffer;
  size_t buffer_bytes;
  double *rows; /* device: a block of X and one of Y, row-major (2 n m doubles) */
  size_t rows_bytes;
} lap_plan;

void gstat_cu_csr_lap_release(void *state, void *plan) {
  (void)state;
  lap_plan *P = plan;
  if (!P) return;
  if (P->A) cusparseDestroySpMat(P->A);
  if (P->handle) cusparseDestroy(P->handle);
  cudaFree(P->off);
  cudaFree(P->idx);
  cudaFree(P->val);
  cudaFree(P->p);
  cudaFree(P->buffer);
  cudaFree(P->rows);
  free(P);
}

static gstat_status sparse_fail(gstat_ctx *ctx, const char *what, cusparseStatus_t st) {
  return gstat_cu_host->fail(ctx,
                             st == CUSPARSE_STATUS_ALLOC_FAILED ? GSTAT_ENOMEM : GSTAT_EBACKEND,
                             "csr_lap: %s: %s", what, cusparseGetErrorString(st));
}

/* The graph in host arrays of the device's layout: offsets from 0, indices
 * from 0 (int32 when narrow: a quarter fewer bytes per stored entry for the
 * product to read), weights scaled (s_i w s_j) where s is given. */
static void host_layout(const gstat_i_csr_lap *A, bool narrow, void *off_, void *idx_,
                        double *val) {
  int64_t first = A->offsets[0];
  int32_t *off32 = off_, *idx32 = idx_;
  int64_t *off64 = off_, *idx64 = idx_;
  /* threads: one pass over every stored entry, and the first touch of the
   * fresh arrays, before a large graph's upload */
  int nt = A->offsets[A->n] - first > (1 << 18) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t i = 0; i <= A->n; i++) {
    int64_t o = A->offsets[i] - first;
    if (narrow)
      off32[i] = (int32_t)o;
    else
      off64[i] = o;
  }
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t i = 0; i < A->n; i++)
    for (int64_t e = A->offsets[i]; e < A->offsets[i + 1]; e++) {
      int64_t j = A->indices[e] - A->base, at = e - first;
      double w = A->weights ? A->weights[e] : 1.0;
      if (narrow)
        idx32[at] = (int32_t)j;
      else
        idx64[at] = j;
      val[at] = A->s ? gstat_i_norm_weight(w, A->s[i], A->s[j]) : w;
    }
}

/* A copy to the device ordered on the module's stream and waited for. */
static cudaError_t copy_in(cudaStream_t st, void *dst, const void *src, size_t bytes) {
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, st);
  return e == cudaSuccess ? cudaStreamSynchronize(st) : e;
}

static gstat_status upload(gstat_cu_state *s, gstat_ctx *ctx, lap_plan *P,
                           const gstat_i_csr_lap *A) {
  size_t n1 = (size_t)(P->n + 1), nz = (size_t)(P->nnz > 0 ? P->nnz : 1);
  size_t isz = P->narrow ? sizeof(int32_t) : sizeof(int64_t);
  void *off = malloc(isz * n1), *idx = malloc(isz * nz);
  double *val = malloc(sizeof(double) * nz);
  gstat_status st = off && idx && val ? GSTAT_OK : GSTAT_ENOMEM;
  if (st == GSTAT_OK) host_layout(A, P->narrow, off, idx, val);
  cudaError_t e = cudaSuccess;
  if (st == GSTAT_OK &&
      ((e = cudaMalloc(&P->off, isz * n1)) != cudaSuccess ||
       (e = cudaMalloc(&P->idx, isz * nz)) != cudaSuccess ||
       (e = cudaMalloc((void **)&P->val, sizeof(double) * nz)) != cudaSuccess ||
       (e = cudaMalloc((void **)&P->p, sizeof(double) * (size_t)P->n + 8)) != cudaSuccess ||
       (e = copy_in(s->stream, P->off, off, isz * n1)) != cudaSuccess ||
       (e = copy_in(s->stream, P->idx, idx, isz * nz)) != cudaSuccess ||
       (e = copy_in(s->stream, P->val, val, sizeof(double) * nz)) != cudaSuccess ||
       (e = copy_in(s->stream, P->p, A->p, sizeof(double) * (size_t)P->n)) != cudaSuccess))
    st = gstat_cu_fail(ctx, "csr_lap", "copying the graph", e);
  else if (st == GSTAT_ENOMEM)
    st = gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "csr_lap: cannot allocate the graph's host copy");
  free(off);
  free(idx);
  free(val);
  return st;
}

gstat_status gstat_cu_csr_lap_plan(void *state, gstat_ctx *ctx, const gstat_i_csr_lap *A,
                                   void **plan) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  *plan = NULL;
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "csr_lap: simulated device out of memory");
  lap_plan *P = calloc(1, sizeof *P);
  if (!P) return GSTAT_ENOMEM;
  P->n = A->n;
  P->nnz = A->offsets[A->n] - A->offsets[0];
  P->narrow = P->n < INT32_MAX && P->nnz < INT32_MAX;
  gstat_status st = upload(s, ctx, P, A);
  cusparseStatus_t cs = CUSPARSE_STATUS_SUCCESS;
  if (st == GSTAT_OK &&
      ((cs = cusparseCreate(&P->handle)) != CUSPARSE_STATUS_SUCCESS ||
       (cs = cusparseCreateCsr(&P->A, P->n, P->n, P->nnz, P->off, P->idx, P->val,
                               P->narrow ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I,
                               P->narrow ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I,
                               CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F)) != CUSPARSE_STATUS_SUCCESS))
    st = sparse_fail(ctx, "creating the matrix", cs);
  if (st != GSTAT_OK) {
    gstat_cu_csr_lap_release(state, P);
    return st;
  }
  *plan = P;
  return GSTAT_OK;
}

/* y -= A' x for one column through cuSPARSE (its SpMV kernels), its
 * buffer grown as needed. */
static gstat_status spmv(gstat_cu_state *s, gstat_ctx *ctx, lap_plan *P, double *x, double *y) {
  cusparseDnMatDescr_t Xd = NULL, Yd = NULL;
  const double alpha = -1.0, beta = 1.0;
  const cusparseOrder_t order = CUSPARSE_ORDER_COL;
  const cusparseSpMMAlg_t alg = CUSPARSE_SPMM_ALG_DEFAULT;
  size_t need = 0;
  cusparseStatus_t cs = cusparseSetStream(P->handle, s->stream);
  if (cs == CUSPARSE_STATUS_SUCCESS)
    cs = cusparseCreateDnMat(&Xd, P->n, 1, P->n, x, CUDA_R_64F, order);
  if (cs == CUSPARSE_STATUS_SUCCESS)
    cs = cusparseCreateDnMat(&Yd, P->n, 1, P->n, y, CUDA_R_64F, order);
  if (cs == CUSPARSE_STATUS_SUCCESS)
    cs = cusparseSpMM_bufferSize(P->handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, P->A, Xd, &beta, Yd,
                                 CUDA_R_64F, alg, &need);
  gstat_status st = cs == CUSPARSE_STATUS_SUCCESS ? GSTAT_OK : sparse_fail(ctx, "SpMM setup", cs);
  if (st == GSTAT_OK && need > P->buffer_bytes) {
    cudaFree(P->buffer);
    P->buffer = NULL;
    P->buffer_bytes = 0;
    cudaError_t e = cudaMalloc(&P->buffer, need);
    if (e != cudaSuccess) st = gstat_cu_fail(ctx, "csr_lap", "SpMM buffer", e);
    if (e == cudaSuccess) P->buffer_bytes = need;
  }
  if (st == GSTAT_OK &&
      (cs = cusparseSpMM(P->handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                         CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, P->A, Xd, &beta, Yd, CUDA_R_64F,
                         alg, P->buffer)) != CUSPARSE_STATUS_SUCCESS)
    st = sparse_fail(ctx, "SpMM", cs);
  if (Xd) cusparseDestroyDnMat(Xd);
  if (Yd) cusparseDestroyDnMat(Yd);
  return st;
}

/* dst (cols x rows, ld ldd) = src^T (src rows x cols, ld lds), on the
 * stream: geam's 1 src^T + 0 src^T (its second operand never the
 * uninitialized dst; finite entries come through exactly). */
static bool transpose(gstat_cu_state *s, int64_t rows, int64_t cols, const double *src, int64_t lds,
                      double *dst, int64_t ldd) {
  const double one = 1.0, zero = 0.0;
  return cublasDgeam(s->blas, CUBLAS_OP_T, CUBLAS_OP_T, (int)cols, (int)rows, &one, src, (int)lds,
                     &zero, src, (int)lds, dst, (int)ldd) == CUBLAS_STATUS_SUCCESS;
}

/* The plan's scratch for a row-major X and Y of m columns, grown as needed. */
static gstat_status row_major_blocks(gstat_ctx *ctx, lap_plan *P, int64_t m, double **xr,
                                     double **yr) {
  size_t need = sizeof(double) * (size_t)(2 * P->n * m);
  if (need > P->rows_bytes) {
    cudaFree(P->rows);
    P->rows = NULL;
    P->rows_bytes = 0;
    cudaError_t e = cudaMalloc((void **)&P->rows, need);
    if (e != cudaSuccess) return gstat_cu_fail(ctx, "csr_lap", "row-major blocks", e);
    P->rows_bytes = need;
  }
  *xr = P->rows;
  *yr = P->rows + P->n * m;
  return GSTAT_OK;
}

/* Y = diag(p) X - A' X for a block of several columns by our CSR kernel
 * (the diagonal fused) on row-major copies of X and Y: faster than
 * cuSPARSE's row-major SpMM, which also needs the diagonal kernel and a
 * third transpose (bench/README.md, "The 10^6 sparse solve, profiled"). */
static gstat_status block_apply(gstat_cu_state *s, gstat_ctx *ctx, lap_plan *P, int64_t m,
                                const double *x, int64_t ldx, double *y, int64_t ldy) {
  cudaError_t e;
  double *xr = NULL, *yr = NULL;
  gstat_status st = row_major_blocks(ctx, P, m, &xr, &yr);
  if (st != GSTAT_OK) return st;
  if (P->n > INT32_MAX || m > INT32_MAX || !transpose(s, P->n, m, x, ldx, xr, m))
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "csr_lap: cuBLAS transpose failed");
  e = gstat_cu_csr_rows(P->n, m, P->narrow, P->off, P->idx, P->val, P->p, xr, yr, s->stream);
  if (e != cudaSuccess) return gstat_cu_fail(ctx, "csr_lap", "CSR kernel", e);
  if (!transpose(s, m, P->n, yr, m, y, ldy))
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "csr_lap: cuBLAS transpose failed");
  return GSTAT_OK;
}

gstat_status gstat_cu_csr_lap_apply(void *state, gstat_ctx *ctx, void *plan, const gstat_matrix *X,
                                    const gstat_matrix *Y) {
  gstat_cu_state *s = state;
  lap_plan *P = plan;
  cudaSetDevice(s->device);
  double *x = device_block(s, X), *y = device_block(s, Y);
  if (!x || !y || X->rows != P->n) return not_taken(ctx, "csr_lap");
  if (gstat_cu_fault_now() == FAULT_SOLVER)
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "csr_lap: simulated SpMM failure");
  int64_t m = X->cols, ldx = X->cols > 1 ? X->col_stride : P->n;
  int64_t ldy = Y->cols > 1 ? Y->col_stride : P->n;
  if (m > 1) return block_apply(s, ctx, P, m, x, ldx, y, ldy);
  cudaError_t e = gstat_cu_diag_times(P->n, m, P->p, x, ldx, y, ldy, s->stream);
  if (e != cudaSuccess) return gstat_cu_fail(ctx, "csr_lap", "diagonal", e);
  if (m == 0 || P->nnz == 0) return GSTAT_OK;
  return spmv(s, ctx, P, x, y);
}
