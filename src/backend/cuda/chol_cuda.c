/*
 * Cholesky and the triangular / Cholesky solves on the GPU. Every factor is
 * handled as a lower triangle: an upper input is loaded through its
 * transposed view (U = L^T), so one code path serves both.
 *   factor: n <= 64    our register kernel (kernels/cholesky_small.cu)
 *           n < 512    potrfBatched and one pass that zeroes the upper triangles
 *           n >= 512   blocked: our kernels per block column and a GEMM;
 *                      one matrix (up to 4 from n = 2048): cuSOLVER's Xpotrf
 *   solves: cublas trsmBatched (twice for Cholesky)
 */
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/util_kernels.h"

/* own kernel up to here: 1024x32 fp32 0.014 ms vs potrfBatched 0.044 ms
 * (H200); 512x64 see bench/README.md */
static const int64_t small_chol_max_n = 64;
/* Blocked factorization (own kernels + GEMM) from here on, potrfBatched
 * below. H200, float, ms, blocked vs potrfBatched: 512x128 0.204 / 0.192,
 * 64x512 0.760 / 0.794 (double 1.002 / 0.988), 16x1024 1.59 / 1.83, 4x2048
 * 3.20 / 4.48 (double 3.75 / 5.06), 1x4096 5.46 / 12.06, 1x8192 25.4 / 50.5,
 * 2x8192 59.6 / 61.3. Double 64x512 through gstat's potrfBatched path (its
 * pointer array, the zeroing pass) took 1.016 ms, blocked 1.002: 512 for both. */
static const int64_t blocked_chol_min_n = 512;
/* Few large matrices: cuSOLVER's Xpotrf (its own blocked, tuned
 * factorization) one after another beats our block columns, whose latency
 * chain does not amortize without a batch: a single matrix from n = 512, up
 * to 4 from n = 2048 (bench/README.md, "Cholesky against torch"). */
static bool uses_xpotrf(int64_t n, int64_t batch) {
  return (n >= 512 && batch == 1) || (n >= 2048 && batch <= 4);
}

/* Xpotrf on each matrix of the chunk in turn (lower, in place). */
static gstat_status factor_xpotrf(gstat_cu_state *s, gstat_ctx *ctx, int cdt, char *dA, int64_t n,
                                  int64_t nb, int *dInfo) {
  cudaDataType t = cdt == GSTAT_F64 ? CUDA_R_64F : CUDA_R_32F;
  size_t dev = 0, host = 0;
  cusolverStatus_t cs = cusolverDnXpotrf_bufferSize(s->solver, s->params, CUBLAS_FILL_MODE_LOWER, n,
                                                    t, dA, n, t, &dev, &host);
  if (cs != CUSOLVER_STATUS_SUCCESS)
    return gstat_cu_solver_fail(ctx, "cholesky", "Xpotrf_bufferSize", cs);
  void *dwork = gstat_cu_buffer(s, ctx, CU_WORK, dev ? dev : 1);
  void *hwork = gstat_cu_host_buffer(s, ctx, &s->host_work, host ? host : 1);
  if (!dwork || !hwork) return GSTAT_ENOMEM;
  size_t stride = (size_t)(n * n) * gstat_cu_dtype_bytes(cdt);
  for (int64_t b = 0; b < nb && cs == CUSOLVER_STATUS_SUCCESS; b++)
    cs = cusolverDnXpotrf(s->solver, s->params, CUBLAS_FILL_MODE_LOWER, n, t, dA + stride * b, n, t,
                          dwork, dev, hwork, host, dInfo + b);
  if (cs != CUSOLVER_STATUS_SUCCESS) return gstat_cu_solver_fail(ctx, "cholesky", "Xpotrf", cs);
  cudaError_t err = gstat_cu_finish_cholesky(cdt, dA, n, nb, dInfo, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "cholesky", "Xpotrf", err);
}

/* The `uplo` triangle of T as a lower triangle: T itself or its transpose. */
static gstat_matrix as_lower(const gstat_matrix *T, gstat_uplo uplo) {
  return uplo == GSTAT_LOWER ? *T : gstat_i_transposed(T);
}

static int64_t chunk_for(gstat_cu_state *s, const gstat_matrix *A, int64_t cols_rhs) {
  size_t es = gstat_cu_dtype_bytes(gstat_cu_compute_dtype(A->dtype));
  size_t per =
      (size_t)(A->rows * (A->rows + cols_rhs)) * (es + gstat_cu_dtype_bytes(A->dtype)) * 2 + 64;
  return gstat_cu_chunk(s, A->batch, per);
}

/* Pointer array ptrs[b] = base + b * stride (device). */
static void **pointers(gstat_cu_state *s, gstat_ctx *ctx, int slot, void *base, size_t stride,
                       int64_t nb) {
  void **p = gstat_cu_buffer(s, ctx, CU_PTRS, 2 * sizeof(void *) * (size_t)nb);
  if (!p) return NULL;
  p += slot * nb;
  return gstat_cu_fill_ptrs(p, base, stride, nb, s->stream) == cudaSuccess ? p : NULL;
}

/* Right-looking blocked Cholesky (lower) of the dense batch dA, in place:
 * per block column of GSTAT_CU_CHOL_BLOCK, our kernels factor the diagonal
 * block and solve the rows below it, and one strided batched GEMM updates
 * the trailing matrix (all of it: its upper triangle is zeroed at the end).
 * Each block column costs about the same latency whatever the batch
 * (the diagonal block's 32 dependent steps, three launches), so it pays
 * from n = 512 on, where potrfBatched is slower still (64x512 float: 2.9
 * Gflop in 0.8 ms). */
static gstat_status factor_blocked(gstat_cu_state *s, gstat_ctx *ctx, int cdt, void *dA, int64_t n,
                                   int64_t nb, int *dInfo) {
  size_t es = gstat_cu_dtype_bytes(cdt);
  long long stride = (long long)(n * n);
  cudaError_t err = cudaMemsetAsync(dInfo, 0, sizeof(int) * (size_t)nb, s->stream);
  for (int64_t k = 0; k < n && err == cudaSuccess; k += GSTAT_CU_CHOL_BLOCK) {
    int64_t kb = n - k < GSTAT_CU_CHOL_BLOCK ? n - k : GSTAT_CU_CHOL_BLOCK, m = n - k - kb;
    char *d = (char *)dA + (size_t)(k + k * n) * es; /* diagonal block */
    err = gstat_cu_cholesky_block(cdt, d, kb, m, n, stride, nb, k, dInfo, s->stream);
    if (err != cudaSuccess || m == 0) break;
    char *below = d + (size_t)kb * es, *trail = d + (size_t)(kb + kb * n) * es;
    cublasStatus_t bs;
    if (cdt == GSTAT_F64) {
      const double minus = -1, one = 1;
      bs = cublasDgemmStridedBatched(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)m, (int)m, (int)kb,
                                     &minus, (const double *)below, (int)n, stride,
                                     (const double *)below, (int)n, stride, &one, (double *)trail,
                                     (int)n, stride, (int)nb);
    } else {
      const float minus = -1, one = 1;
      bs = cublasSgemmStridedBatched(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)m, (int)m, (int)kb,
                                     &minus, (const float *)below, (int)n, stride,
                                     (const float *)below, (int)n, stride, &one, (float *)trail,
                                     (int)n, stride, (int)nb);
    }
    if (bs != CUBLAS_STATUS_SUCCESS) {
      cudaStreamSynchronize(s->stream); /* nothing may still write dA (the caller's F) after */
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND,
                                 "cholesky: trailing update failed (cublasStatus %d)", (int)bs);
    }
  }
  if (err == cudaSuccess) err = gstat_cu_finish_cholesky(cdt, dA, n, nb, dInfo, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "cholesky", "blocked factor", err);
}

static gstat_status chol_chunk(gstat_cu_state *s, gstat_ctx *ctx, const gstat_matrix *A,
                               gstat_uplo uplo, gstat_matrix *F, int64_t b0, int64_t nb,
                               int64_t *info) {
  int cdt = gstat_cu_compute_dtype(A->dtype);
  int64_t n = A->rows;
  size_t stride = (size_t)(n * n) * gstat_cu_dtype_bytes(cdt);
  /* dense lower device data: factor in the caller's F (a copy of A) */
  char *src = uplo == GSTAT_LOWER ? gstat_cu_dense(A, cdt, b0) : NULL;
  char *dst = uplo == GSTAT_LOWER ? gstat_cu_dense(F, cdt, b0) : NULL;
  bool in_place = src && dst;
  void *dA = in_place ? dst : gstat_cu_buffer(s, ctx, CU_MAT, stride * (size_t)nb);
  int *dInfo = gstat_cu_buffer(s, ctx, CU_INFO, sizeof(int) * (size_t)nb);
  if (!dA || !dInfo) return GSTAT_ENOMEM;
  gstat_matrix in = as_lower(A, uplo);
  gstat_status st = GSTAT_OK;
  cudaError_t err = cudaSuccess;
  if (!in_place)
    st = gstat_cu_load(s, ctx, "cholesky", &in, b0, nb, cdt, dA, NULL);
  else if (src != dst)
    err = cudaMemcpyAsync(dst, src, stride * (size_t)nb, cudaMemcpyDeviceToDevice, s->stream);
  if (st != GSTAT_OK) return st;
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "cholesky", "copying the input", err);
  if (n <= small_chol_max_n) {
    err = gstat_cu_cholesky_small(cdt, dA, n, nb, dInfo, s->stream);
  } else if (uses_xpotrf(n, A->batch)) {
    if ((st = factor_xpotrf(s, ctx, cdt, dA, n, nb, dInfo)) != GSTAT_OK) return st;
  } else if (n >= blocked_chol_min_n) {
    if ((st = factor_blocked(s, ctx, cdt, dA, n, nb, dInfo)) != GSTAT_OK) return st;
  } else {
    void **ptrs = pointers(s, ctx, 0, dA, stride, nb);
    if (!ptrs)
      return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "cholesky: cannot build the pointer array");
    cusolverStatus_t cs = cdt == GSTAT_F64
                              ? cusolverDnDpotrfBatched(s->solver, CUBLAS_FILL_MODE_LOWER, (int)n,
                                                        (double **)ptrs, (int)n, dInfo, (int)nb)
                              : cusolverDnSpotrfBatched(s->solver, CUBLAS_FILL_MODE_LOWER, (int)n,
                                                        (float **)ptrs, (int)n, dInfo, (int)nb);
    if (cs != CUSOLVER_STATUS_SUCCESS)
      return gstat_cu_solver_fail(ctx, "cholesky", "potrfBatched", cs);
    err = gstat_cu_finish_cholesky(cdt, dA, n, nb, dInfo, s->stream);
  }
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "cholesky", "factor kernel", err);
  gstat_matrix out = as_lower(F, uplo);
  if (!in_place &&
      (st = gstat_cu_store(s, ctx, "cholesky", dA, cdt, &out, b0, nb, NULL)) != GSTAT_OK)
    return st;
  return gstat_cu_collect_info(s, ctx, "cholesky", dInfo, false, nb, info + b0, s->stream);
}

gstat_status gstat_cu_cholesky(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *F, int64_t *info) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  gstat_status st0 = gstat_cu_check_finite(s, ctx, "cholesky", "A", A, uplo == GSTAT_UPPER ? 2 : 1);
  if (st0 != GSTAT_OK) return st0;
  int64_t chunk = chunk_for(s, A, 0);
  for (int64_t b0 = 0; b0 < A->batch; b0 += chunk) {
    int64_t nb = A->batch - b0 < chunk ? A->batch - b0 : chunk;
    gstat_status st = chol_chunk(s, ctx, A, uplo, F, b0, nb, info);
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}

/* Solve with the lower factor L in dL: op(L) X = B for each trans in
 * `passes` (NO_TRANS then TRANS for Cholesky: L L^T X = B). */
static gstat_status solve_chunk(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                const gstat_matrix *T, gstat_uplo uplo,
                                const cublasOperation_t *passes, int npass, cublasDiagType_t diag,
                                const gstat_matrix *B, gstat_matrix *X, int64_t b0, int64_t nb,
                                int64_t *info) {
  int cdt = gstat_cu_compute_dtype(T->dtype);
  int64_t n = T->rows, nrhs = B->cols;
  size_t es = gstat_cu_dtype_bytes(cdt), lstride = (size_t)(n * n) * es,
         bstride = (size_t)(n * nrhs) * es;
  void *dL = gstat_cu_buffer(s, ctx, CU_MAT, lstride * (size_t)nb);
  void *dB = gstat_cu_buffer(s, ctx, CU_RHS, bstride * (size_t)nb);
  int *dInfo = gstat_cu_buffer(s, ctx, CU_INFO, sizeof(int) * (size_t)nb);
  if (!dL || !dB || !dInfo) return GSTAT_ENOMEM;
  gstat_matrix in = as_lower(T, uplo);
  gstat_status st = gstat_cu_load(s, ctx, fn, &in, b0, nb, cdt, dL, NULL);
  if (st == GSTAT_OK) st = gstat_cu_load(s, ctx, fn, B, b0, nb, cdt, dB, NULL);
  if (st != GSTAT_OK) return st;
  cudaError_t err = diag == CUBLAS_DIAG_UNIT
                        ? cudaMemsetAsync(dInfo, 0, sizeof(int) * (size_t)nb, s->stream)
                        : gstat_cu_diag_info(cdt, dL, n, nb, dInfo, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "diagonal check", err);
  void **pl = pointers(s, ctx, 0, dL, lstride, nb), **pb = pointers(s, ctx, 1, dB, bstride, nb);
  if (!pl || !pb)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "%s: cannot build the pointer arrays", fn);
  for (int p = 0; p < npass; p++) {
    cublasStatus_t bs;
    if (cdt == GSTAT_F64) {
      const double one = 1;
      bs = cublasDtrsmBatched(s->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, passes[p], diag,
                              (int)n, (int)nrhs, &one, (const double *const *)pl, (int)n,
                              (double *const *)pb, (int)n, (int)nb);
    } else {
      const float one = 1;
      bs = cublasStrsmBatched(s->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, passes[p], diag,
                              (int)n, (int)nrhs, &one, (const float *const *)pl, (int)n,
                              (float *const *)pb, (int)n, (int)nb);
    }
    if (bs != CUBLAS_STATUS_SUCCESS)
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "%s: trsmBatched failed (cublasStatus %d)",
                                 fn, (int)bs);
  }
  if ((st = gstat_cu_store(s, ctx, fn, dB, cdt, X, b0, nb, NULL)) != GSTAT_OK) return st;
  return gstat_cu_collect_info(s, ctx, fn, dInfo, false, nb, info + b0, s->stream);
}

static gstat_status solve(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const gstat_matrix *T,
                          gstat_uplo uplo, const cublasOperation_t *passes, int npass,
                          cublasDiagType_t diag, const gstat_matrix *B, gstat_matrix *X,
                          int64_t *info) {
  cudaSetDevice(s->device);
  gstat_status st0 =
      gstat_cu_check_finite(s, ctx, fn, strcmp(fn, "cholesky_solve") ? "T" : "F", T,
                            uplo == GSTAT_UPPER ? (diag == CUBLAS_DIAG_UNIT ? 4 : 2)
                                                : (diag == CUBLAS_DIAG_UNIT ? 3 : 1));
  if (st0 == GSTAT_OK) st0 = gstat_cu_check_finite(s, ctx, fn, "B", B, 0);
  if (st0 != GSTAT_OK) return st0;
  int64_t chunk = chunk_for(s, T, B->cols);
  for (int64_t b0 = 0; b0 < T->batch; b0 += chunk) {
    int64_t nb = T->batch - b0 < chunk ? T->batch - b0 : chunk;
    gstat_status st = solve_chunk(s, ctx, fn, T, uplo, passes, npass, diag, B, X, b0, nb, info);
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}

gstat_status gstat_cu_cholesky_solve(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                     gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                     int64_t *info) {
  static const cublasOperation_t passes[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
  return solve(state, ctx, "cholesky_solve", F, uplo, passes, 2, CUBLAS_DIAG_NON_UNIT, B, X, info);
}

gstat_status gstat_cu_triangular_solve(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                       gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                       const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  /* an upper T was loaded as its transpose, so the operation flips */
  bool flip = (trans == GSTAT_TRANS) != (uplo == GSTAT_UPPER);
  const cublasOperation_t pass = flip ? CUBLAS_OP_T : CUBLAS_OP_N;
  return solve(state, ctx, "triangular_solve", T, uplo, &pass, 1,
               diag == GSTAT_UNIT ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, B, X, info);
}
