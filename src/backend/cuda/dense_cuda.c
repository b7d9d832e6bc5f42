/*
 * The CUDA backend's dense primitives on descriptors (backend.h: gemm,
 * orthonormalize) for device data: one strided-batched cuBLAS GEMM in the
 * data's precision (no TF32 or other reduced-precision modes: the results
 * must agree with the CPU's), a gemv for a product with one column; orthonormalization by
 * cuSOLVER's Householder QR with Q formed, or by Cholesky QR twice for a tall matrix whose
 * condition allows it (two Gram matrices, two trmm: few, large passes over the matrix, where geqrf
 * works column by column: bench/README.md, "Cholesky QR"); products with the inverse of a lower
 * factor (trtri, trmm). Stream-ordered on the state's stream: the next primitive reads the result
 * there, a copy to the host waits for it.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/gemm_view.h"

static bool int_sized(int64_t a, int64_t b, int64_t c) {
  return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX;
}

/* Elements apart in the batch: 0 for a matrix of batch 1 (shared). */
static long long batch_step(const gstat_matrix *m) {
  return m->batch == 1 ? 0 : (long long)m->batch_stride;
}

gstat_status gstat_cu_gemm(void *state, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb,
                           double alpha, const gstat_matrix *A, const gstat_matrix *B, double beta,
                           const gstat_matrix *C) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int dt = (int)C->dtype;
  if ((dt != GSTAT_F32 && dt != GSTAT_F64) || (int)A->dtype != dt || (int)B->dtype != dt)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "gemm: A, B and C must share float32 or float64");
  gstat_i_gemm_plan p = gstat_i_gemm_plan_of(ta, tb, A, B, C);
  if (!p.ok || !int_sized(p.m, p.n, p.k) || !int_sized(p.ld1, p.ld2, p.ldc) ||
      !int_sized(C->batch, 1, 1))
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "gemm: an operand has no unit stride or exceeds cuBLAS's int range");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "gemm: simulated device out of memory");
  const gstat_matrix *first = p.swap ? B : A, *second = p.swap ? A : B;
  bool f64 = dt == GSTAT_F64;
  cudaDataType_t t = f64 ? CUDA_R_64F : CUDA_R_32F;
  const float af = (float)alpha, bf = (float)beta;
  const void *pa = f64 ? (const void *)&alpha : (const void *)&af,
             *pb = f64 ? (const void *)&beta : (const void *)&bf;
  cublasOperation_t o1 = p.t1 == GSTAT_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N,
                    o2 = p.t2 == GSTAT_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t st;
  /* a matrix times one vector (the sparse solver's projections): gemv, not
   * a split-K GEMM (bench/README.md, "The 10^6 sparse solve, profiled") */
  if (p.n == 1 && C->batch == 1 && p.m > 0 && p.k > 0) { /* gemv leaves y alone when k = 0 */
    int64_t rows = p.t1 == GSTAT_TRANS ? p.k : p.m, cols = p.t1 == GSTAT_TRANS ? p.m : p.k;
    int incx = p.t2 == GSTAT_TRANS ? (int)p.ld2 : 1;
    st = f64 ? cublasDgemv(s->blas, o1, (int)rows, (int)cols, &alpha, first->data, (int)p.ld1,
                           second->data, incx, &beta, C->data, 1)
             : cublasSgemv(s->blas, o1, (int)rows, (int)cols, &af, first->data, (int)p.ld1,
                           second->data, incx, &bf, C->data, 1);
  } else
    st = cublasGemmStridedBatchedEx(
        s->blas, o1, o2, (int)p.m, (int)p.n, (int)p.k, pa, first->data, t, (int)p.ld1,
        batch_step(first), second->data, t, (int)p.ld2, batch_step(second), pb, C->data, t,
        (int)p.ldc, (long long)C->batch_stride, (int)C->batch,
        f64 ? CUBLAS_COMPUTE_64F_PEDANTIC : CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return gstat_cu_host->fail(ctx,
                               st == CUBLAS_STATUS_ALLOC_FAILED ? GSTAT_ENOMEM : GSTAT_EBACKEND,
                               "gemm: cuBLAS failed (cublasStatus %d)", (int)st);
  return GSTAT_OK;
}

/* How syrk_lower forms a lower triangle: cuBLAS's GEMM of the whole
 * product (the comparison), our tiles of the lower triangle over row blocks
 * summed in double (gstat_cu_gram_lower: about 5/8 of a GEMM's work at
 * order 2000), or cuBLAS's syrk (about as fast, but one float32 sum down
 * the long dimension: several times the error). The default is the tiles;
 * the environment's GSTAT_CUDA_SYRK (gemm, tiles, cublas) picks another,
 * for the benchmark that compares them (bench/README.md, "The Gram matrix
 * as a lower triangle"). */
typedef enum { SYRK_GEMM, SYRK_TILES, SYRK_CUBLAS } syrk_way;

static syrk_way syrk_choice(void) {
  const char *w = getenv("GSTAT_CUDA_SYRK");
  if (w && strcmp(w, "gemm") == 0) return SYRK_GEMM;
  if (w && strcmp(w, "cublas") == 0) return SYRK_CUBLAS;
  return SYRK_TILES;
}

static cublasStatus_t cublas_syrk(gstat_cu_state *s, bool f64, bool x_row_major, int64_t rows,
                                  int64_t cols, const void *x, void *c) {
  /* C = X^T X; X column-major rows x cols is op T, row-major (= X^T
   * column-major cols x rows) op N */
  cublasOperation_t op = x_row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  int ld = (int)(x_row_major ? cols : rows);
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  return f64 ? cublasDsyrk(s->blas, CUBLAS_FILL_MODE_LOWER, op, (int)cols, (int)rows, &one, x, ld,
                           &zero, c, (int)cols)
             : cublasSsyrk(s->blas, CUBLAS_FILL_MODE_LOWER, op, (int)cols, (int)rows, &onef, x, ld,
                           &zerof, c, (int)cols);
}

gstat_status gstat_cu_syrk_lower(void *state, gstat_ctx *ctx, gstat_trans trans,
                                 const gstat_matrix *A, const gstat_matrix *C) {
  gstat_cu_state *s = state;
  int dt = (int)C->dtype, a_row = 0, c_row = 0;
  int64_t n = C->rows;
  syrk_way way = syrk_choice();
  if ((dt != GSTAT_F32 && dt != GSTAT_F64) || C->cols != n || way == SYRK_GEMM ||
      !gstat_cu_dense_element(A, dt, 0, &a_row) || !gstat_cu_dense_element(C, dt, 0, &c_row) ||
      (c_row && n > 1) || !int_sized(A->rows, A->cols, C->batch))
    return GSTAT_EUNSUPPORTED; /* the scheduler's gemm */
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "syrk: simulated device out of memory");
  cudaSetDevice(s->device);
  /* C = X^T X with X = A (TRANS) or A^T (NO_TRANS: the same memory read
   * the other way round) */
  bool x_row_major = trans == GSTAT_TRANS ? a_row : !a_row;
  int64_t rows = trans == GSTAT_TRANS ? A->rows : A->cols;
  for (int64_t b = 0; b < C->batch; b++) {
    void *c = (void *)gstat_cu_dense_element(C, dt, b, &c_row);
    const char *x = gstat_cu_dense_element(A, dt, A->batch == 1 ? 0 : b, &a_row);
    if (way == SYRK_TILES) {
      gstat_status st = gstat_cu_gram_lower(s, ctx, dt, x_row_major, rows, n, x, c);
      if (st != GSTAT_OK) return st;
      continue;
    }
    cublasStatus_t bs = cublas_syrk(s, dt == GSTAT_F64, x_row_major, rows, n, x, c);
    if (bs != CUBLAS_STATUS_SUCCESS)
      return gstat_cu_host->fail(ctx,
                                 bs == CUBLAS_STATUS_ALLOC_FAILED ? GSTAT_ENOMEM : GSTAT_EBACKEND,
                                 "syrk: cuBLAS failed (cublasStatus %d)", (int)bs);
  }
  return GSTAT_OK;
}

/* cuSOLVER's work for geqrf and orgqr of an m x n matrix (elements). */
static cusolverStatus_t qr_work(gstat_cu_state *s, bool f64, int m, int n, void *a, int lda,
                                void *tau, int *lwork) {
  int l1 = 0, l2 = 0;
  cusolverStatus_t st;
  if (f64) {
    st = cusolverDnDgeqrf_bufferSize(s->solver, m, n, a, lda, &l1);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnDorgqr_bufferSize(s->solver, m, n, n, a, lda, tau, &l2);
  } else {
    st = cusolverDnSgeqrf_bufferSize(s->solver, m, n, a, lda, &l1);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnSorgqr_bufferSize(s->solver, m, n, n, a, lda, tau, &l2);
  }
  *lwork = l1 > l2 ? l1 : l2;
  return st;
}

/* geqrf then orgqr of one element in place (info: the two calls' verdicts). */
static cusolverStatus_t qr_one(gstat_cu_state *s, bool f64, int m, int n, void *a, int lda,
                               void *tau, void *work, int lwork, int *info) {
  cusolverStatus_t st;
  if (f64) {
    st = cusolverDnDgeqrf(s->solver, m, n, a, lda, tau, work, lwork, info);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnDorgqr(s->solver, m, n, n, a, lda, tau, work, lwork, info + 1);
  } else {
    st = cusolverDnSgeqrf(s->solver, m, n, a, lda, tau, work, lwork, info);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnSorgqr(s->solver, m, n, n, a, lda, tau, work, lwork, info + 1);
  }
  return st;
}

gstat_status gstat_cu_xtrtri_lower(gstat_cu_state *s, gstat_ctx *ctx, int cdt, void *L, int64_t n,
                                   int *dInfo) {
  cudaDataType t = cdt == GSTAT_F64 ? CUDA_R_64F : CUDA_R_32F;
  size_t dev = 0, host = 0;
  cusolverStatus_t cs = cusolverDnXtrtri_bufferSize(s->solver, CUBLAS_FILL_MODE_LOWER,
                                                    CUBLAS_DIAG_NON_UNIT, n, t, L, n, &dev, &host);
  if (cs != CUSOLVER_STATUS_SUCCESS) return gstat_cu_solver_fail(ctx, "trtri", "workspace", cs);
  void *dwork = gstat_cu_buffer(s, ctx, CU_WORK, dev ? dev : 1);
  void *hwork = gstat_cu_host_buffer(s, ctx, &s->host_work, host ? host : 1);
  if (!dwork || !hwork) return GSTAT_ENOMEM;
  cs = cusolverDnXtrtri(s->solver, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_NON_UNIT, n, t, L, n, dwork,
                        dev, hwork, host, dInfo);
  return cs == CUSOLVER_STATUS_SUCCESS ? GSTAT_OK
                                       : gstat_cu_solver_fail(ctx, "trtri", "Xtrtri", cs);
}

gstat_status gstat_cu_mul_inverse(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int rm, int64_t n,
                                  int64_t p, const void *Li, const void *u, void *w) {
  int in = (int)n, ip = (int)p;
  cublasSideMode_t side = rm ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  cublasOperation_t op = rm ? CUBLAS_OP_N : CUBLAS_OP_T;
  int m = rm ? ip : in, k = rm ? in : ip, ld = rm ? ip : in;
  const double one = 1;
  const float onef = 1;
  cublasStatus_t bs = cdt == GSTAT_F64
                          ? cublasDtrmm(s->blas, side, CUBLAS_FILL_MODE_LOWER, op,
                                        CUBLAS_DIAG_NON_UNIT, m, k, &one, Li, ip, u, ld, w, ld)
                          : cublasStrmm(s->blas, side, CUBLAS_FILL_MODE_LOWER, op,
                                        CUBLAS_DIAG_NON_UNIT, m, k, &onef, Li, ip, u, ld, w, ld);
  return bs == CUBLAS_STATUS_SUCCESS
             ? GSTAT_OK
             : gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "trmm: cuBLAS failed (cublasStatus %d)",
                                   (int)bs);
}

/* One Cholesky QR pass: G = A^T A (lower; A dense, m x n, leading dimension
 * m), G = L L^T, G <- L^-1, Q = A L^-T (m x n) by one trmm; A is left as it
 * was. */
static gstat_status cholqr_pass(gstat_cu_state *s, gstat_ctx *ctx, bool f64, int m, int n,
                                const void *a, void *q, void *G, int *info) {
  int cdt = f64 ? GSTAT_F64 : GSTAT_F32;
  GSTAT_CU_TRY(gstat_cu_gram_lower(s, ctx, cdt, 0, m, n, a, G));
  GSTAT_CU_TRY(gstat_cu_xpotrf(s, ctx, cdt, G, n, 1, info));
  GSTAT_CU_TRY(gstat_cu_xtrtri_lower(s, ctx, cdt, G, n, info + 1));
  return gstat_cu_mul_inverse(s, ctx, cdt, 0, m, n, G, a, q);
}

/* Cholesky QR twice of the single element A (m x n, dense column-major):
 * A -> Q1 -> Q2 in two scratch copies, then, after one read back of both
 * passes' infos and the first factor's diagonal, Q2 into A. *taken is false
 * (A untouched) when a Gram matrix was not positive definite or the first
 * factor's diagonal spans more than the dtype allows (cond(A) beyond about
 * eps^-1/2, where two passes no longer reach orthogonality): Householder QR
 * then. */
static gstat_status cholesky_qr(gstat_cu_state *s, gstat_ctx *ctx, bool f64, int m, int n, void *a,
                                bool *taken) {
  size_t es = f64 ? 8 : 4, mat = ((size_t)m * (size_t)n * es + 255) / 256 * 256;
  char *w = gstat_cu_buffer(s, ctx, CU_QR, 2 * mat + (size_t)(2 * n * n) * es);
  int *info = gstat_cu_buffer(s, ctx, CU_INFO, 4 * sizeof(int));
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_info, 4 * sizeof(int) + (size_t)n * es);
  *taken = false;
  if (!w || !info || !h) return GSTAT_ENOMEM;
  char *q1 = w, *q2 = w + mat, *g1 = w + 2 * mat, *g2 = g1 + (size_t)(n * n) * es;
  GSTAT_CU_TRY(cholqr_pass(s, ctx, f64, m, n, a, q1, g1, info));
  GSTAT_CU_TRY(cholqr_pass(s, ctx, f64, m, n, q1, q2, g2, info + 2));
  cudaError_t err = cudaMemcpyAsync(h, info, 4 * sizeof(int), cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) /* the diagonal of L^-1: 1 / L_ii */
    err = cudaMemcpy2DAsync(h + 4 * sizeof(int), es, g1, (size_t)(n + 1) * es, es, (size_t)n,
                            cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "qr", "reading info", err);
  const int *hinfo = (const int *)h;
  const char *diag = h + 4 * sizeof(int);
  double lo = INFINITY, top = 0;
  bool usable = !hinfo[0] && !hinfo[1] && !hinfo[2] && !hinfo[3];
  for (int j = 0; j < n; j++) {
    double d = fabs(f64 ? ((const double *)diag)[j] : (double)((const float *)diag)[j]);
    usable = usable && isfinite(d) && d > 0;
    lo = fmin(lo, d);
    top = fmax(top, d);
  }
  /* the least min / max of L's diagonal (bench/README.md, "Cholesky QR") */
  if (!usable || lo < (f64 ? 1e-6 : 1e-2) * top) return GSTAT_OK;
  err = cudaMemcpyAsync(a, q2, (size_t)m * (size_t)n * es, cudaMemcpyDeviceToDevice, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "qr", "copy", err);
  *taken = true;
  return GSTAT_OK;
}

gstat_status gstat_cu_orthonormalize(void *state, gstat_ctx *ctx, const gstat_matrix *A) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int dt = (int)A->dtype;
  int64_t m = A->rows, n = A->cols;
  bool colmajor = (m <= 1 || A->row_stride == 1) && (n <= 1 || A->col_stride >= m);
  if ((dt != GSTAT_F32 && dt != GSTAT_F64) || !colmajor || !int_sized(m, n, A->col_stride) || m < n)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "qr: A must be column-major float32/float64 with rows >= cols");
  if (m == 0 || n == 0 || A->batch == 0) return GSTAT_OK;
  bool f64 = dt == GSTAT_F64;
  size_t es = gstat_cu_dtype_bytes(dt);
  int lda = n > 1 ? (int)A->col_stride : (int)(m > 1 ? m : 1), lwork = 0;
  if (A->batch == 1 && lda == m && gstat_cu_qr_by_cholesky(m, n)) {
    bool taken = false;
    GSTAT_CU_TRY(cholesky_qr(s, ctx, f64, (int)m, (int)n, A->data, &taken));
    if (taken) return GSTAT_OK;
  }
  int *d_info = gstat_cu_buffer(s, ctx, CU_INFO, sizeof(int) * 2 * (size_t)A->batch);
  char *tau = gstat_cu_buffer(s, ctx, CU_VEC, (size_t)n * es);
  if (!d_info || !tau) return GSTAT_ENOMEM;
  cusolverStatus_t cs = qr_work(s, f64, (int)m, (int)n, A->data, lda, tau, &lwork);
  if (cs != CUSOLVER_STATUS_SUCCESS) return gstat_cu_solver_fail(ctx, "qr", "workspace query", cs);
  void *work = gstat_cu_buffer(s, ctx, CU_WORK, (size_t)(lwork > 0 ? lwork : 1) * es);
  if (!work) return GSTAT_ENOMEM;
  for (int64_t b = 0; b < A->batch; b++) {
    char *a = (char *)A->data + (size_t)(b * A->batch_stride) * es;
    cs = qr_one(s, f64, (int)m, (int)n, a, lda, tau, work, lwork, d_info + 2 * b);
    if (cs != CUSOLVER_STATUS_SUCCESS) return gstat_cu_solver_fail(ctx, "qr", "geqrf/orgqr", cs);
  }
  /* info < 0 is an argument error (a bug): read back once for the batch */
  int *h = gstat_cu_host_buffer(s, ctx, &s->host_info, sizeof(int) * 2 * (size_t)A->batch);
  if (!h) return GSTAT_ENOMEM;
  cudaError_t err = cudaMemcpyAsync(h, d_info, sizeof(int) * 2 * (size_t)A->batch,
                                    cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "qr", "reading info", err);
  for (int64_t i = 0; i < 2 * A->batch; i++)
    if (h[i] != 0)
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "qr: cuSOLVER returned info %d", h[i]);
  return GSTAT_OK;
}
