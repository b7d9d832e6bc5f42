/*
 * The CUDA backend's rows primitive (backend.h, gstat_i_rows_req) on device
 * data. The rows stay in the layout they have (a row-major n x p element is
 * the column-major p x n matrix X^T): without L or Q one kernel centres,
 * scales and reduces them as it reads X; with L, a centred copy U is solved
 * in place by one cuBLAS trsm (L Z^T = U^T, or Z L^T = U column-major), or,
 * for many rows against p (the rules table), multiplied by L^-1 (cuSOLVER's
 * trtri, then one trmm: GEMM-like, where the trsm of a small triangle
 * against many right-hand sides is not); with Q, W = U Q by one symm; then
 * the per-row reduction, in double.
 */
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/rows_kernels.h"
#include "backend/cuda/rows_cuda.h"

#define TRY_CU(expr, what)                                              \
  do {                                                                  \
    cudaError_t e_ = (expr);                                            \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "rows", what, e_); \
  } while (0)

#define TRY_BLAS(expr, what)                                                           \
  do {                                                                                 \
    if ((expr) != CUBLAS_STATUS_SUCCESS)                                               \
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "rows: cuBLAS %s failed", what); \
  } while (0)

/* Element b of device X as a dense matrix of the compute type, used in
 * place: row-major or column-major; NULL when it is neither. */
static const char *dense_rows(const gstat_matrix *X, int cdt, int64_t b, int *row_major) {
  if ((int)X->dtype != cdt || X->location != GSTAT_CUDA) return NULL;
  int64_t n = X->rows, p = X->cols;
  const char *base =
      (const char *)X->data + (size_t)(b * X->batch_stride) * gstat_cu_dtype_bytes(cdt);
  *row_major = (p <= 1 || X->col_stride == 1) && (n <= 1 || X->row_stride == p);
  if (*row_major) return base;
  return (n <= 1 || X->row_stride == 1) && (p <= 1 || X->col_stride == n) ? base : NULL;
}

/* U = op(L)^-1 U in place (Z^T = L^-1 U^T for row-major U, Z = U L^-T for
 * column-major), or W = U Q (W^T = Q U^T), L and Q dense p x p. */
static gstat_status solve_or_multiply(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int rm, int64_t n,
                                      int64_t p, const void *L, const void *Q, void *u, void *w) {
  int in = (int)n, ip = (int)p;
  cublasSideMode_t side = rm ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
  int m = rm ? ip : in, k = rm ? in : ip, ld = rm ? ip : in;
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  if (L && cdt == GSTAT_F64)
    TRY_BLAS(cublasDtrsm(s->blas, side, CUBLAS_FILL_MODE_LOWER, rm ? CUBLAS_OP_N : CUBLAS_OP_T,
                         CUBLAS_DIAG_NON_UNIT, m, k, &one, L, ip, u, ld),
             "trsm");
  else if (L)
    TRY_BLAS(cublasStrsm(s->blas, side, CUBLAS_FILL_MODE_LOWER, rm ? CUBLAS_OP_N : CUBLAS_OP_T,
                         CUBLAS_DIAG_NON_UNIT, m, k, &onef, L, ip, u, ld),
             "trsm");
  else if (cdt == GSTAT_F64)
    TRY_BLAS(
        cublasDsymm(s->blas, side, CUBLAS_FILL_MODE_LOWER, m, k, &one, Q, ip, u, ld, &zero, w, ld),
        "symm");
  else
    TRY_BLAS(cublasSsymm(s->blas, side, CUBLAS_FILL_MODE_LOWER, m, k, &onef, Q, ip, u, ld, &zerof,
                         w, ld),
             "symm");
  return GSTAT_OK;
}

/* Li = L^-1 (p x p, lower triangle; L dense, its lower triangle read). L is
 * a Cholesky factor with a positive diagonal, so trtri cannot fail for want
 * of a pivot: its info is not read back (no host wait). */
static gstat_status inverse_factor(gstat_cu_state *s, gstat_ctx *ctx, int cdt, const void *L,
                                   int64_t p, void *Li) {
  TRY_CU(cudaMemcpyAsync(Li, L, (size_t)(p * p) * gstat_cu_dtype_bytes(cdt),
                         cudaMemcpyDeviceToDevice, s->stream),
         "factor copy");
  int *info = gstat_cu_buffer(s, ctx, CU_INFO, sizeof(int));
  return info ? gstat_cu_xtrtri_lower(s, ctx, cdt, Li, p, info) : GSTAT_ENOMEM;
}

/* The p x p matrix T dense in the compute type: T itself, or a copy. */
static const void *dense_matrix(gstat_cu_state *s, gstat_ctx *ctx, int cdt, const gstat_matrix *T,
                                gstat_status *st) {
  const void *t = gstat_cu_dense(T, cdt, 0);
  if (t) return t;
  void *m =
      gstat_cu_buffer(s, ctx, CU_MAT, (size_t)(T->rows * T->cols) * gstat_cu_dtype_bytes(cdt));
  *st = m ? gstat_cu_load(s, ctx, "rows", T, 0, 1, cdt, m, NULL) : GSTAT_ENOMEM;
  return *st == GSTAT_OK ? m : NULL;
}

/* centre and 1/scale to the device (dc, dc + p), the totals zeroed; a
 * centre in device memory (center_vec) is gathered there, after the upload
 * in stream order. */
static gstat_status upload_shift(gstat_cu_state *s, gstat_ctx *ctx, const gstat_i_rows_req *r,
                                 int64_t p, double *dc) {
  size_t bytes = sizeof(double) * (size_t)(2 * p + 2);
  double *h = gstat_cu_upload_buffer(s, ctx, bytes);
  if (!h) return GSTAT_ENOMEM;
  for (int64_t j = 0; j < p; j++) {
    h[j] = r->center ? r->center[j] : 0.0;
    h[p + j] = r->scale ? 1.0 / r->scale[j] : 1.0;
  }
  h[2 * p] = h[2 * p + 1] = 0.0;
  GSTAT_CU_TRY(gstat_cu_upload(s, ctx, dc, bytes, "centre"));
  if (!r->center_vec) return GSTAT_OK;
  /* p x 1 or 1 x p gathered column-major: either way p values in order */
  return gstat_cu_load(s, ctx, "rows", r->center_vec, 0, 1, GSTAT_F64, dc, NULL);
}

/* Where the kernel writes d: the caller's dense float64 device vector, or
 * the scratch dd (then stored). */
static double *d_target(const gstat_matrix *d, double *dd) {
  if (d && d->dtype == GSTAT_F64 && d->location == GSTAT_CUDA &&
      (d->rows <= 1 || d->row_stride == 1))
    return (double *)d->data;
  return dd;
}

static gstat_status rows_on_device(gstat_cu_state *s, gstat_ctx *ctx, const gstat_i_rows_req *r) {
  const gstat_matrix *X = r->X, *T = r->L ? r->L : r->Q;
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t n = X->rows, p = X->cols;
  double *dc = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)(2 * p + 2 + n));
  if (!dc) return GSTAT_ENOMEM;
  double *dtot = dc + 2 * p, *dd = dc + 2 * p + 2;
  GSTAT_CU_TRY(upload_shift(s, ctx, r, p, dc));
  bool shift = r->center || r->center_vec || r->scale;
  int rm = 0;
  const char *src = dense_rows(X, cdt, r->b, &rm);
  char *u = NULL;
  if (!src || T) { /* a copy: for the solve or product, or of a layout kernels do not read */
    u = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(n * p) * es);
    if (!u) return GSTAT_ENOMEM;
  }
  if (!src) {
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, "rows", X, r->b, 1, cdt, u, NULL));
    src = u;
  }
  const void *a = src, *b = NULL;
  if (T) {
    TRY_CU(gstat_cu_rows_center(cdt, src, u, n, p, rm, shift ? dc : NULL, shift ? dc + p : NULL,
                                s->stream),
           "centring");
    gstat_status st = GSTAT_OK;
    const void *t = dense_matrix(s, ctx, cdt, T, &st);
    bool inverse = r->L && gstat_cu_rows_by_inverse(n, p);
    size_t wbytes = (size_t)(n * p) * es, at = (wbytes + 255) / 256 * 256; /* then L^-1 */
    char *w = r->Q || inverse
                  ? gstat_cu_buffer(s, ctx, CU_PROJ, inverse ? at + (size_t)(p * p) * es : wbytes)
                  : NULL;
    if (!t) return st;
    if ((r->Q || inverse) && !w) return GSTAT_ENOMEM;
    if (inverse) {
      GSTAT_CU_TRY(inverse_factor(s, ctx, cdt, t, p, w + at));
      GSTAT_CU_TRY(gstat_cu_mul_inverse(s, ctx, cdt, rm, n, p, w + at, u, w));
      a = w;
    } else {
      GSTAT_CU_TRY(
          solve_or_multiply(s, ctx, cdt, rm, n, p, r->L ? t : NULL, r->Q ? t : NULL, u, w));
      a = u;
      b = w;
    }
    shift = false;
  }
  double *dt = d_target(r->d, dd);
  TRY_CU(gstat_cu_rows_reduce(cdt, a, b, n, p, rm, shift ? dc : NULL, shift ? dc + p : NULL, dt,
                              dtot, s->stream),
         "reduction");
  if (r->d && dt == dd)
    GSTAT_CU_TRY(gstat_cu_store(s, ctx, "rows", dd, GSTAT_F64, r->d, 0, 1, NULL));
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, 2 * sizeof(double));
  if (!h) return GSTAT_ENOMEM;
  TRY_CU(cudaMemcpyAsync(h, dtot, 2 * sizeof(double), cudaMemcpyDeviceToHost, s->stream), "sums");
  TRY_CU(cudaStreamSynchronize(s->stream), "sums"); /* the buffers are reused */
  if (r->sums) memcpy(r->sums, h, 2 * sizeof(double));
  return GSTAT_OK;
}

gstat_status gstat_cu_rows(void *state, gstat_ctx *ctx, const gstat_i_rows_req *r) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (r->sums) r->sums[0] = r->sums[1] = 0.0;
  if (r->X->location != GSTAT_CUDA || (r->center_vec && r->center_vec->location != GSTAT_CUDA))
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "rows: X and its centre must lie in device memory");
  if (r->X->rows > INT32_MAX || r->X->cols > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "rows: n or p exceeds cuBLAS's int range");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "rows: simulated device out of memory");
  if (r->X->rows == 0) return GSTAT_OK;
  return rows_on_device(s, ctx, r);
}
