/*
 * Cholesky and the triangular / Cholesky solves on the GPU. Every factor is
 * handled as a lower triangle: an upper input is loaded through its
 * transposed view (U = L^T), so one code path serves both.
 *   factor: n <= 64    our register kernel (kernels/cholesky_small.cu)
 *           n < 512    potrfBatched and one pass that zeroes the upper triangles
 *           n >= 512   blocked: our kernels per block column and a GEMM;
 *                      one matrix (up to 4 from n = 2048): cuSOLVER's Xpotrf;
 *                      wide batches of n ~ 1024: potrfBatched (chol_rules)
 *   solves: cublas trsmBatched (twice for Cholesky); few large systems
 *           Xpotrs or trsm per matrix (solve_rules); an upper factor that
 *           lies dense on the device is used as it lies, its ops flipped
 * Dense device data needs no wait for the finiteness scan: its verdict
 * stays on the device, where the kernels that write F or X read it first (a
 * guard), and comes back with the info summary: one host round trip a call.
 */
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/util_kernels.h"

/* How a chunk is factored (path_for). */
typedef enum { CHOL_SMALL, CHOL_BATCHED, CHOL_XPOTRF, CHOL_BLOCKED } chol_path;

/* The factorization by size (the measurements: bench/README.md, "Cholesky
 * against torch" and the GPU tables). Own kernel to n = 64, potrfBatched
 * above, blocked (own kernels + GEMM) from 512, where each block column's
 * fixed latency is amortized over a batch. Few large matrices: cuSOLVER's
 * Xpotrf (its own blocked, tuned factorization) one after another beats our
 * block columns, whose latency chain does not amortize without a batch.
 * Wide batches of n ~ 1024 go back to potrfBatched: at 60x1024 the bare
 * routine beat the blocked path (the batch crossover between 16 and 60 is
 * interpolated, the range of n kept between 64x512's tie and 4x2048's loss;
 * to be measured). Staging: with a deferred scan, the potrfBatched and
 * Xpotrf paths factor in our buffer and the guarded finish pass writes F,
 * one more pass over the batch that costs less than the host's wait for the
 * scan up to this size (an estimate, to be measured). */
static const struct {
  int64_t small_max_n, blocked_min_n, xpotrf_min_n;
  int64_t xpotrf_few_min_n, xpotrf_few_max_batch;
  int64_t wide_min_n, wide_max_n, wide_min_batch;
  size_t staged_max_bytes;
} chol_rules = {64, 512, 512, 2048, 4, 768, 1536, 32, (size_t)16 << 20};

static chol_path path_for(int64_t n, int64_t batch) {
  if (n <= chol_rules.small_max_n) return CHOL_SMALL;
  if ((n >= chol_rules.xpotrf_min_n && batch == 1) ||
      (n >= chol_rules.xpotrf_few_min_n && batch <= chol_rules.xpotrf_few_max_batch))
    return CHOL_XPOTRF;
  if (n < chol_rules.blocked_min_n) return CHOL_BATCHED;
  if (n >= chol_rules.wide_min_n && n <= chol_rules.wide_max_n &&
      batch >= chol_rules.wide_min_batch)
    return CHOL_BATCHED;
  return CHOL_BLOCKED;
}

gstat_status gstat_cu_xpotrf(gstat_cu_state *s, gstat_ctx *ctx, int cdt, char *dA, int64_t n,
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
  return cs == CUSOLVER_STATUS_SUCCESS ? GSTAT_OK
                                       : gstat_cu_solver_fail(ctx, "cholesky", "Xpotrf", cs);
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
 * the trailing matrix (all of it: the finish pass zeroes its upper triangle).
 * Each block column costs about the same latency whatever the batch
 * (the diagonal block's 32 dependent steps, three launches), so it pays
 * from n = 512 on, where potrfBatched is slower still (bench/README.md,
 * "Measurements moved from code comments"). */
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
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "cholesky", "blocked factor", err);
}

/* potrfBatched on the dense batch dA, in place. */
static gstat_status factor_batched(gstat_cu_state *s, gstat_ctx *ctx, int cdt, void *dA, int64_t n,
                                   int64_t nb, int *dInfo) {
  void **ptrs = pointers(s, ctx, 0, dA, (size_t)(n * n) * gstat_cu_dtype_bytes(cdt), nb);
  if (!ptrs)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "cholesky: cannot build the pointer array");
  cusolverStatus_t cs = cdt == GSTAT_F64
                            ? cusolverDnDpotrfBatched(s->solver, CUBLAS_FILL_MODE_LOWER, (int)n,
                                                      (double **)ptrs, (int)n, dInfo, (int)nb)
                            : cusolverDnSpotrfBatched(s->solver, CUBLAS_FILL_MODE_LOWER, (int)n,
                                                      (float **)ptrs, (int)n, dInfo, (int)nb);
  return cs == CUSOLVER_STATUS_SUCCESS ? GSTAT_OK
                                       : gstat_cu_solver_fail(ctx, "cholesky", "potrfBatched", cs);
}

/* One chunk's factorization. src/dst: the caller's A and F when both are
 * dense lower device batches (else NULL: A is loaded into our buffer and
 * the factor stored from it). guard: a deferred scan's verdict (NULL: none),
 * so nothing may write F unless it says every input is finite: the register
 * kernel reads it, and the cuSOLVER paths factor in our buffer, which the
 * guarded finish pass copies to F. */
typedef struct {
  const gstat_matrix *A, *F;
  gstat_uplo uplo;
  chol_path path;
  const unsigned long long *guard;
  const gstat_cu_scan *scan;
} chol_job;

static gstat_status chol_chunk(gstat_cu_state *s, gstat_ctx *ctx, const chol_job *j, int64_t b0,
                               int64_t nb, int64_t *info) {
  int cdt = gstat_cu_compute_dtype(j->A->dtype);
  int64_t n = j->A->rows;
  size_t stride = (size_t)(n * n) * gstat_cu_dtype_bytes(cdt);
  char *src = j->uplo == GSTAT_LOWER ? gstat_cu_dense(j->A, cdt, b0) : NULL;
  char *dst = j->uplo == GSTAT_LOWER ? gstat_cu_dense(j->F, cdt, b0) : NULL;
  bool direct = src && dst, staged = direct && j->guard && j->path != CHOL_SMALL;
  /* factored in: F itself (direct, unguarded), or our buffer */
  void *dA = direct && !staged ? dst : gstat_cu_buffer(s, ctx, CU_MAT, stride * (size_t)nb);
  /* the input's lower triangle copied in with zeros above; Xpotrf leaves
   * them (the blocked path's GEMMs and potrfBatched may not), so after it
   * the finishing pass writes failed elements only */
  bool copied = direct && j->path != CHOL_SMALL && src != (char *)dA;
  bool upper_zeroed = copied && !staged && j->path == CHOL_XPOTRF;
  int *dInfo = gstat_cu_buffer(s, ctx, CU_INFO, sizeof(int) * (size_t)nb);
  /* set by the pass that writes info last (the register kernel or the
   * finish pass): no reduction over info afterwards */
  unsigned *any = gstat_cu_info_verdict(s, ctx);
  if (!dA || !dInfo || !any) return GSTAT_ENOMEM;
  gstat_status st = GSTAT_OK;
  cudaError_t err = cudaMemsetAsync(any, 0, sizeof *any, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "cholesky", "clearing the verdict", err);
  if (!direct) {
    gstat_matrix in = as_lower(j->A, j->uplo);
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, "cholesky", &in, b0, nb, cdt, dA, NULL));
  } else if (copied) {
    err = gstat_cu_copy_lower(cdt, src, dA, n, nb, s->stream);
    if (err != cudaSuccess) return gstat_cu_fail(ctx, "cholesky", "copying the input", err);
  }
  switch (j->path) {
    case CHOL_SMALL: /* reads A, writes F: no copy first, no finishing pass */
      err = gstat_cu_cholesky_small_to(cdt, direct ? src : dA, dA, n, nb, dInfo, j->guard, any,
                                       s->stream);
      break;
    case CHOL_XPOTRF: st = gstat_cu_xpotrf(s, ctx, cdt, dA, n, nb, dInfo); break;
    case CHOL_BLOCKED: st = factor_blocked(s, ctx, cdt, dA, n, nb, dInfo); break;
    case CHOL_BATCHED: st = factor_batched(s, ctx, cdt, dA, n, nb, dInfo); break;
  }
  if (st != GSTAT_OK) return st;
  if (err == cudaSuccess && j->path != CHOL_SMALL)
    err = gstat_cu_finish_cholesky_to(cdt, dA, staged ? dst : dA, n, nb, dInfo, j->guard, any,
                                      upper_zeroed, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "cholesky", "factor kernel", err);
  gstat_matrix out = as_lower(j->F, j->uplo);
  if (!direct) GSTAT_CU_TRY(gstat_cu_store(s, ctx, "cholesky", dA, cdt, &out, b0, nb, NULL));
  return gstat_cu_collect_info_scanned(s, ctx, "cholesky", dInfo, false, nb, info + b0, s->stream,
                                       j->scan, true);
}

gstat_status gstat_cu_cholesky(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *F, int64_t *info) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int cdt = gstat_cu_compute_dtype(A->dtype);
  chol_job j = {A, F, uplo, path_for(A->rows, A->batch), NULL, NULL};
  int tri = uplo == GSTAT_UPPER ? 2 : 1;
  bool direct = uplo == GSTAT_LOWER && gstat_cu_dense(A, cdt, 0) && gstat_cu_dense(F, cdt, 0);
  size_t bytes = (size_t)(A->batch * A->rows * A->rows) * gstat_cu_dtype_bytes(cdt);
  bool defer =
      direct && (j.path == CHOL_SMALL || ((j.path == CHOL_BATCHED || j.path == CHOL_XPOTRF) &&
                                          bytes <= chol_rules.staged_max_bytes));
  gstat_cu_scan scan = {{"A", NULL}, {A, NULL}};
  if (defer) {
    GSTAT_CU_TRY(gstat_cu_scan_deferred(s, ctx, "cholesky", A, tri, 0, &j.guard));
    if (j.guard) j.scan = &scan;
  } else {
    GSTAT_CU_TRY(gstat_cu_check_finite(s, ctx, "cholesky", "A", A, tri));
  }
  int64_t chunk = chunk_for(s, A, 0);
  for (int64_t b0 = 0; b0 < A->batch; b0 += chunk) {
    int64_t nb = A->batch - b0 < chunk ? A->batch - b0 : chunk;
    GSTAT_CU_TRY(chol_chunk(s, ctx, &j, b0, nb, info));
  }
  return GSTAT_OK;
}

/* Few large systems: cuSOLVER's Xpotrs (Cholesky) or cuBLAS's trsm per
 * matrix instead of trsmBatched, whose kernels suit many small systems
 * (the crossover mirrors Xpotrf's, an estimate to be measured:
 * bench/gpu_chol_vs_torch.py). */
static const struct { int64_t min_n, max_batch; } solve_rules = {512, 4};

/* The factor or triangle of one solve: where it lies (the caller's dense
 * batch, or our lower copy), its fill and whether the passes' ops flip (an
 * upper triangle used as it lies is the transpose of the lower one the
 * passes are written for). */
typedef struct {
  char *data;
  cublasFillMode_t fill;
  bool flip;
} solve_factor;

/* op(T) X = B per element with cuBLAS's plain trsm (one matrix at a time)
 * or trsmBatched over pointer arrays. */
static gstat_status trsm_pass(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, int cdt,
                              const solve_factor *f, cublasOperation_t op, cublasDiagType_t diag,
                              char *dX, int64_t n, int64_t nrhs, int64_t nb, bool single) {
  size_t es = gstat_cu_dtype_bytes(cdt), ls = (size_t)(n * n) * es, xs = (size_t)(n * nrhs) * es;
  if (f->flip) op = op == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
  const double one = 1;
  const float onef = 1;
  if (single) {
    for (int64_t b = 0; b < nb && bs == CUBLAS_STATUS_SUCCESS; b++)
      bs = cdt == GSTAT_F64 ? cublasDtrsm(s->blas, CUBLAS_SIDE_LEFT, f->fill, op, diag, (int)n,
                                          (int)nrhs, &one, (const double *)(f->data + ls * b),
                                          (int)n, (double *)(dX + xs * b), (int)n)
                            : cublasStrsm(s->blas, CUBLAS_SIDE_LEFT, f->fill, op, diag, (int)n,
                                          (int)nrhs, &onef, (const float *)(f->data + ls * b),
                                          (int)n, (float *)(dX + xs * b), (int)n);
  } else {
    void **pl = pointers(s, ctx, 0, f->data, ls, nb), **pb = pointers(s, ctx, 1, dX, xs, nb);
    if (!pl || !pb)
      return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "%s: cannot build the pointer arrays", fn);
    bs = cdt == GSTAT_F64 ? cublasDtrsmBatched(s->blas, CUBLAS_SIDE_LEFT, f->fill, op, diag, (int)n,
                                               (int)nrhs, &one, (const double *const *)pl, (int)n,
                                               (double *const *)pb, (int)n, (int)nb)
                          : cublasStrsmBatched(s->blas, CUBLAS_SIDE_LEFT, f->fill, op, diag, (int)n,
                                               (int)nrhs, &onef, (const float *const *)pl, (int)n,
                                               (float *const *)pb, (int)n, (int)nb);
  }
  if (bs != CUBLAS_STATUS_SUCCESS)
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "%s: trsm failed (cublasStatus %d)", fn,
                               (int)bs);
  return GSTAT_OK;
}

/* Xpotrs on each element: the factor's fill as it lies, no flip. Its info
 * only reports bad arguments: it goes to the flags after the infos (a
 * nonzero one has the element recomputed on the CPU). */
static gstat_status potrs_single(gstat_cu_state *s, gstat_ctx *ctx, int cdt, const solve_factor *f,
                                 char *dX, int64_t n, int64_t nrhs, int64_t nb, int *dFlags) {
  cudaDataType t = cdt == GSTAT_F64 ? CUDA_R_64F : CUDA_R_32F;
  size_t es = gstat_cu_dtype_bytes(cdt), ls = (size_t)(n * n) * es, xs = (size_t)(n * nrhs) * es;
  cusolverStatus_t cs = CUSOLVER_STATUS_SUCCESS;
  for (int64_t b = 0; b < nb && cs == CUSOLVER_STATUS_SUCCESS; b++)
    cs = cusolverDnXpotrs(s->solver, s->params, f->fill, n, nrhs, t, f->data + ls * b, n, t,
                          dX + xs * b, n, dFlags + b);
  return cs == CUSOLVER_STATUS_SUCCESS ? GSTAT_OK
                                       : gstat_cu_solver_fail(ctx, "cholesky_solve", "Xpotrs", cs);
}

/* One solve call: op(L) X = B for each op in `passes` (NO_TRANS then TRANS
 * for Cholesky: L L^T X = B), L the lower triangle of T or the transpose of
 * its upper one. scan (NULL: none): the deferred scans of T (slot 0) and B
 * (slot 1), whose guards keep X as it was unless both are finite. */
typedef struct {
  const char *fn;
  const gstat_matrix *T, *B;
  gstat_matrix *X;
  gstat_uplo uplo;
  const cublasOperation_t *passes;
  int npass;
  cublasDiagType_t diag;
  const unsigned long long *guard[2];
  const gstat_cu_scan *scan;
} solve_job;

/* A dense device T in the compute type is used as it lies; a dense device X
 * receives B and the solution in place (no store), or, guarded, the
 * solution from our buffer in one guarded copy. */
static gstat_status solve_chunk(gstat_cu_state *s, gstat_ctx *ctx, const solve_job *j, int64_t b0,
                                int64_t nb, int64_t *info) {
  const char *fn = j->fn;
  int cdt = gstat_cu_compute_dtype(j->T->dtype);
  int64_t n = j->T->rows, nrhs = j->B->cols;
  size_t es = gstat_cu_dtype_bytes(cdt), lstride = (size_t)(n * n) * es,
         bstride = (size_t)(n * nrhs) * es;
  bool single = n >= solve_rules.min_n && j->T->batch <= solve_rules.max_batch;
  bool potrs = single && j->npass == 2;
  char *dT = gstat_cu_dense(j->T, cdt, b0);
  solve_factor f = {dT, CUBLAS_FILL_MODE_LOWER, false};
  if (dT && j->uplo == GSTAT_UPPER) f.fill = CUBLAS_FILL_MODE_UPPER, f.flip = true;
  if (!dT) f.data = gstat_cu_buffer(s, ctx, CU_MAT, lstride * (size_t)nb);
  char *dX = gstat_cu_dense(j->X, cdt, b0); /* non-NULL whenever guarded */
  /* where B is solved: X itself, or our buffer */
  char *dW = dX && !j->scan ? dX : gstat_cu_buffer(s, ctx, CU_RHS, bstride * (size_t)nb);
  int *dInfo = gstat_cu_buffer(s, ctx, CU_INFO, 2 * sizeof(int) * (size_t)nb);
  /* the diagonal check sets the info verdict (unless Xpotrs's flags join it) */
  unsigned *any = gstat_cu_info_verdict(s, ctx);
  if (!f.data || !dW || !dInfo || !any) return GSTAT_ENOMEM;
  if (!dT) {
    gstat_matrix in = as_lower(j->T, j->uplo);
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, fn, &in, b0, nb, cdt, f.data, NULL));
  }
  if (gstat_cu_dense(j->B, cdt, b0) != dW)
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, fn, j->B, b0, nb, cdt, dW, NULL));
  cudaError_t err = cudaMemsetAsync(any, 0, sizeof *any, s->stream);
  if (err == cudaSuccess)
    err = j->diag == CUBLAS_DIAG_UNIT
              ? cudaMemsetAsync(dInfo, 0, sizeof(int) * (size_t)nb, s->stream)
              : gstat_cu_diag_info(cdt, f.data, n, nb, dInfo, any, s->stream);
  if (err == cudaSuccess && potrs)
    err = cudaMemsetAsync(dInfo + nb, 0, sizeof(int) * (size_t)nb, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "diagonal check", err);
  if (potrs) {
    GSTAT_CU_TRY(potrs_single(s, ctx, cdt, &f, dW, n, nrhs, nb, dInfo + nb));
  } else {
    for (int p = 0; p < j->npass; p++)
      GSTAT_CU_TRY(trsm_pass(s, ctx, fn, cdt, &f, j->passes[p], j->diag, dW, n, nrhs, nb, single));
  }
  if (j->scan) {
    err = gstat_cu_copy_guarded(dX, dW, bstride * (size_t)nb, j->guard[0], j->guard[1], s->stream);
    if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "copying X", err);
  } else if (!dX) {
    GSTAT_CU_TRY(gstat_cu_store(s, ctx, fn, dW, cdt, j->X, b0, nb, NULL));
  }
  return gstat_cu_collect_info_scanned(s, ctx, fn, dInfo, potrs, nb, info + b0, s->stream, j->scan,
                                       !potrs);
}

/* With a dense device X the scans of T and B are not waited for (their
 * guards keep X as it was); otherwise the host waits for each. */
static gstat_status solve(gstat_cu_state *s, gstat_ctx *ctx, solve_job *j, int64_t *info) {
  cudaSetDevice(s->device);
  const char *tname = strcmp(j->fn, "cholesky_solve") ? "T" : "F";
  bool unit = j->diag == CUBLAS_DIAG_UNIT;
  int tri = j->uplo == GSTAT_UPPER ? (unit ? 4 : 2) : (unit ? 3 : 1);
  gstat_cu_scan scan = {{tname, "B"}, {j->T, j->B}};
  if (gstat_cu_dense(j->X, gstat_cu_compute_dtype(j->T->dtype), 0)) {
    GSTAT_CU_TRY(gstat_cu_scan_deferred(s, ctx, j->fn, j->T, tri, 0, &j->guard[0]));
    GSTAT_CU_TRY(gstat_cu_scan_deferred(s, ctx, j->fn, j->B, 0, 1, &j->guard[1]));
    if (j->guard[0]) j->scan = &scan;
  } else {
    GSTAT_CU_TRY(gstat_cu_check_finite(s, ctx, j->fn, tname, j->T, tri));
    GSTAT_CU_TRY(gstat_cu_check_finite(s, ctx, j->fn, "B", j->B, 0));
  }
  int64_t chunk = chunk_for(s, j->T, j->B->cols);
  for (int64_t b0 = 0; b0 < j->T->batch; b0 += chunk) {
    int64_t nb = j->T->batch - b0 < chunk ? j->T->batch - b0 : chunk;
    GSTAT_CU_TRY(solve_chunk(s, ctx, j, b0, nb, info));
  }
  return GSTAT_OK;
}

gstat_status gstat_cu_cholesky_solve(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                     gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                     int64_t *info) {
  static const cublasOperation_t passes[2] = {CUBLAS_OP_N, CUBLAS_OP_T};
  solve_job j = {.fn = "cholesky_solve",
                 .T = F,
                 .B = B,
                 .X = X,
                 .uplo = uplo,
                 .passes = passes,
                 .npass = 2,
                 .diag = CUBLAS_DIAG_NON_UNIT};
  return solve(state, ctx, &j, info);
}

gstat_status gstat_cu_triangular_solve(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                       gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                       const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  /* an upper T was loaded as its transpose, so the operation flips */
  bool flip = (trans == GSTAT_TRANS) != (uplo == GSTAT_UPPER);
  const cublasOperation_t pass = flip ? CUBLAS_OP_T : CUBLAS_OP_N;
  solve_job j = {.fn = "triangular_solve",
                 .T = T,
                 .B = B,
                 .X = X,
                 .uplo = uplo,
                 .passes = &pass,
                 .npass = 1,
                 .diag = diag == GSTAT_UNIT ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT};
  return solve(state, ctx, &j, info);
}
