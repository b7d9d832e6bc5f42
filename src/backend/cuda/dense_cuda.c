/*
 * The CUDA backend's dense primitives on descriptors (backend.h: gemm,
 * orthonormalize) for device data: one strided-batched cuBLAS GEMM in the
 * data's precision (no TF32 or other reduced-precision modes: the results
 * must agree with the CPU's), and cuSOLVER's Householder QR with Q formed.
 * Stream-ordered on the state's stream: the next primitive reads the result
 * there, a copy to the host waits for it.
 */
#include <limits.h>

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
  cublasStatus_t st = cublasGemmStridedBatchedEx(
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
