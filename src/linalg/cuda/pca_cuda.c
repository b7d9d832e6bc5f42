/*
 * PCA of data that already lies on the device (the backend table's pca_fit and
 * pca_scores): column means accumulated in double (two passes), a centered
 * copy, the co-moment (lower triangle) by row-blocked, tiled cuBLAS GEMMs, the batched eigh of this
 * module, and the scores by one GEMM over the kept centered copy. Only p x p matrices and the n x k
 * scores travel to the host.
 *
 * Cost for n x p fp32 data: 3 reads and 1 write of the data (sums, corrected
 * sums, centering) plus n p^2 multiply-adds (2 n p^2 as GEMM), which dominate for
 * p >= 100; then eigh of p x p.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linalg/cuda/cuda_state.h"
#include "linalg/cuda/kernels/kernels.h"

#define TRY_CU(expr, what)                                             \
  do {                                                                 \
    cudaError_t e_ = (expr);                                           \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "pca", what, e_); \
  } while (0)

#define TRY_BLAS(expr, what)                                                          \
  do {                                                                                \
    if ((expr) != CUBLAS_STATUS_SUCCESS)                                              \
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "pca: cuBLAS %s failed", what); \
  } while (0)

#define TRY(expr)                  \
  do {                             \
    gstat_status s_ = (expr);      \
    if (s_ != GSTAT_OK) return s_; \
  } while (0)

/* Element b as a dense device matrix of the compute type used in place:
 * row-major (i*p + j) or column-major (i + j*n); NULL when it is neither. */
static const char *dense_element(const gstat_matrix *X, int cdt, int64_t b, int *row_major) {
  if ((int)X->dtype != cdt) return NULL;
  int64_t n = X->rows, p = X->cols;
  const char *base =
      (const char *)X->data + (size_t)(b * X->batch_stride) * gstat_cu_dtype_bytes(cdt);
  if ((p <= 1 || X->col_stride == 1) && (n <= 1 || X->row_stride == p)) {
    *row_major = 1;
    return base;
  }
  if ((n <= 1 || X->row_stride == 1) && (p <= 1 || X->col_stride == n)) {
    *row_major = 0;
    return base;
  }
  return NULL;
}

/* mean (host, p) of the n x p element at x: double sums, then the sums of the
 * residuals (corrects the rounding of the first pass). */
static gstat_status column_means(gstat_cu_state *s, gstat_ctx *ctx, int cdt, const void *x,
                                 int64_t n, int64_t p, int row_major, double *d_sums,
                                 double *d_mean, double *mean, bool *nonfinite) {
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, sizeof(double) * (size_t)p);
  if (!h) return GSTAT_ENOMEM;
  for (int pass = 0; pass < 2; pass++) {
    TRY_CU(cudaMemsetAsync(d_sums, 0, sizeof(double) * (size_t)p, s->stream), "zeroing sums");
    TRY_CU(gstat_cu_col_sums(cdt, x, n, p, row_major, pass ? d_mean : NULL, d_sums, s->stream),
           "column sums");
    TRY_CU(
        cudaMemcpyAsync(h, d_sums, sizeof(double) * (size_t)p, cudaMemcpyDeviceToHost, s->stream),
        "sums");
    TRY_CU(cudaStreamSynchronize(s->stream), "sums");
    for (int64_t j = 0; j < p; j++) {
      if (!isfinite(h[j]))
        *nonfinite = true; /* a NaN/Inf in column j (finite floats cannot overflow a double sum) */
      mean[j] = pass ? mean[j] + h[j] / (double)n : h[j] / (double)n;
    }
    memcpy(h, mean, sizeof(double) * (size_t)p);
    TRY_CU(
        cudaMemcpyAsync(d_mean, h, sizeof(double) * (size_t)p, cudaMemcpyHostToDevice, s->stream),
        "means");
    TRY_CU(cudaStreamSynchronize(s->stream), "means"); /* h is reused by the next pass */
  }
  return GSTAT_OK;
}

/* The tile (oi.., oj..) of size ti x tj of Xc_rows^T Xc_rows for `count`
 * consecutive blocks of `rows` rows starting at row r0, into C (ld ldc,
 * consecutive results strideC apart): C = Xc[rows, oi:oi+ti]^T Xc[rows, oj:oj+tj]
 * + beta C. Row-major xc is the column-major p x n matrix A: C = A_i A_j^T. */
static cublasStatus_t tile_products(gstat_cu_state *s, int cdt, int row_major, int64_t n, int64_t p,
                                    const char *xc, int64_t r0, int64_t rows, int64_t count,
                                    int64_t oi, int64_t ti, int64_t oj, int64_t tj, double beta,
                                    void *C, int64_t ldc, int64_t strideC) {
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t step = row_major ? p : 1,
          feat = row_major ? 1 : n; /* element offsets of a row, a column */
  const char *Ai = xc + (size_t)(r0 * step + oi * feat) * es,
             *Aj = xc + (size_t)(r0 * step + oj * feat) * es;
  cublasOperation_t ta = row_major ? CUBLAS_OP_N : CUBLAS_OP_T,
                    tb = row_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lda = (int)(row_major ? p : n);
  long long strideA = (long long)(rows * step);
  const double one = 1;
  const float onef = 1, betaf = (float)beta;
  if (cdt == GSTAT_F64)
    return cublasDgemmStridedBatched(s->blas, ta, tb, (int)ti, (int)tj, (int)rows, &one,
                                     (const double *)Ai, lda, strideA, (const double *)Aj, lda,
                                     strideA, &beta, C, (int)ldc, strideC, (int)count);
  return cublasSgemmStridedBatched(s->blas, ta, tb, (int)ti, (int)tj, (int)rows, &onef,
                                   (const float *)Ai, lda, strideA, (const float *)Aj, lda, strideA,
                                   &betaf, C, (int)ldc, strideC, (int)count);
}

/* The lower triangle of S = Xc^T Xc. A single SYRK or GEMM down the n rows
 * runs only (p/128)^2 thread blocks along a very long k and leaves most of the
 * GPU idle when n >> p. Instead: R row blocks, each giving partial products in
 * one strided-batched GEMM per tile of the lower triangle (T x T tiles of
 * about p/T: (T+1)/2T of a full GEMM's work), summed in double afterwards,
 * which also shortens every fp32 accumulation chain from n to n/R terms. */
static gstat_status comoment(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int row_major, int64_t n,
                             int64_t p, const char *xc, void *S) {
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t R = n / (4 * p), T = p / 384;
  if (R > 64) R = 64;
  if (R < 1) R = 1;
  if (T > 4) T = 4;
  if (T < 1) T = 1;
  /* tiles in multiples of 128 keep cuBLAS on its large-tile kernels
   * (1e6 x 1000: 3 x 334-wide tiles ran at ~34 TFLOP/s, one full GEMM at ~50) */
  int64_t tile = ((p + T - 1) / T + 127) / 128 * 128;
  if (tile > p) tile = p;
  T = (p + tile - 1) / tile;
  int64_t rows = n / R, rest = n - R * rows;
  void *P = R > 1 ? gstat_cu_buffer(s, ctx, CU_PART, (size_t)(tile * tile) * es * (size_t)R) : NULL;
  if (R > 1 && !P) return GSTAT_ENOMEM;
  for (int64_t bi = 0; bi < T; bi++)
    for (int64_t bj = 0; bj <= bi; bj++) {
      int64_t oi = bi * tile, oj = bj * tile;
      if (oi >= p || oj >= p) continue;
      int64_t ti = p - oi < tile ? p - oi : tile, tj = p - oj < tile ? p - oj : tile;
      char *Sij = (char *)S + (size_t)(oi + oj * p) * es;
      if (R == 1) {
        TRY_BLAS(
            tile_products(s, cdt, row_major, n, p, xc, 0, n, 1, oi, ti, oj, tj, 0.0, Sij, p, 0),
            "gemm");
        continue;
      }
      TRY_BLAS(tile_products(s, cdt, row_major, n, p, xc, 0, rows, R, oi, ti, oj, tj, 0.0, P, ti,
                             ti * tj),
               "batched gemm");
      TRY_CU(gstat_cu_sum_partials(cdt, P, R, ti, tj, Sij, p, s->stream),
             "summing partial products");
      if (rest > 0)
        TRY_BLAS(tile_products(s, cdt, row_major, n, p, xc, R * rows, rest, 1, oi, ti, oj, tj, 1.0,
                               Sij, p, 0),
                 "gemm");
    }
  return GSTAT_OK;
}

gstat_status gstat_cu_pca_fit(void *state, gstat_ctx *ctx, const gstat_matrix *X, int center,
                              int scale, double *mean, double *sd, void *w, void *V) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  s->pca_batch = 0; /* nothing valid for pca_scores until this call succeeds */
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  if (n > INT32_MAX || p > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "pca: n or p exceeds cuBLAS's int range");
  /* Finiteness: the column sums of the centering reveal a NaN/Inf for free;
   * only then (or without centering) scan X to name the entry. */
  if (!center) TRY(gstat_cu_check_finite(s, ctx, "pca", "X", X, 0));
  bool nonfinite = false;
  size_t data = (size_t)(n * p) * es, cov = (size_t)(p * p) * es;
  char *dX = gstat_cu_buffer(s, ctx, CU_DATA, data * (size_t)batch);
  char *dS = gstat_cu_buffer(s, ctx, CU_COV, cov * (size_t)batch);
  double *dSums = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  if (!dX || !dS || !dSums) return GSTAT_ENOMEM;
  double *dMean = dSums + p, *dSd = dMean + p;
  int row_major = 0;
  bool constant = false;
  for (int64_t b = 0; b < batch; b++) {
    char *xc = dX + data * (size_t)b, *S = dS + cov * (size_t)b;
    double *mb = mean + b * p, *sb = sd + b * p;
    int rm = 0;
    const char *src = dense_element(X, cdt, b, &rm);
    if (!src) { /* other layouts and bf16: one gather into the centered buffer */
      TRY(gstat_cu_load(s, ctx, "pca", X, b, 1, cdt, xc, NULL));
      src = xc;
      rm = 0;
    }
    if (b > 0 && rm != row_major)
      return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "pca: batch elements differ in layout");
    row_major = rm;
    if (center) {
      TRY(column_means(s, ctx, cdt, src, n, p, row_major, dSums, dMean, mb, &nonfinite));
      if (nonfinite) {
        TRY(gstat_cu_check_finite(s, ctx, "pca", "X", X, 0));
        nonfinite = false; /* the context does not check: go on, results will hold NaN */
      }
    } else {
      for (int64_t j = 0; j < p; j++) mb[j] = 0;
      TRY_CU(cudaMemsetAsync(dMean, 0, sizeof(double) * (size_t)p, s->stream), "means");
    }
    TRY_CU(gstat_cu_center(cdt, src, xc, n, p, row_major, dMean, s->stream), "centering");
    TRY(comoment(s, ctx, cdt, row_major, n, p, xc, S));
    /* standard deviations from the diagonal of S */
    char *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, es * (size_t)p);
    if (!h) return GSTAT_ENOMEM;
    TRY_CU(cudaMemcpy2DAsync(h, es, S, es * (size_t)(p + 1), es, (size_t)p, cudaMemcpyDeviceToHost,
                             s->stream),
           "diagonal");
    TRY_CU(cudaStreamSynchronize(s->stream), "diagonal");
    for (int64_t j = 0; j < p; j++) {
      double d = cdt == GSTAT_F64 ? ((double *)h)[j] : (double)((float *)h)[j];
      sb[j] = n > 1 && d > 0 ? sqrt(d / (double)(n - 1)) : 0;
      if (!(sb[j] > 0)) constant = true;
    }
    if (scale && !constant) {
      memcpy(h, sb, sizeof(double) * (size_t)p);
      TRY_CU(cudaMemcpyAsync(dSd, h, sizeof(double) * (size_t)p, cudaMemcpyHostToDevice, s->stream),
             "deviations");
      TRY_CU(gstat_cu_scale_sym(cdt, S, p, dSd, s->stream), "scaling");
      TRY_CU(cudaStreamSynchronize(s->stream), "scaling"); /* h is reused */
    }
  }
  if (scale && constant) return GSTAT_OK; /* the caller names the column */
  gstat_matrix A = {dS, (gstat_dtype)cdt, GSTAT_CUDA, s->device, batch, p, p, p * p, 1, p};
  gstat_matrix wm = {w, (gstat_dtype)cdt, GSTAT_HOST, 0, batch, p, 1, p, 1, p};
  gstat_matrix Vm = {V, (gstat_dtype)cdt, GSTAT_HOST, 0, batch, p, p, p * p, 1, p};
  int64_t *info = calloc((size_t)batch, sizeof *info);
  if (!info)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %lld info entries",
                               (long long)batch);
  gstat_status st = gstat_cu_eigh(s, ctx, &A, GSTAT_LOWER, &wm, &Vm, info);
  for (int64_t b = 0; st == GSTAT_OK && b < batch; b++)
    if (info[b] != 0)
      st = gstat_cu_host->fail(ctx, GSTAT_ENOCONV,
                               "pca: the eigen decomposition of dataset %lld failed on the GPU",
                               (long long)b);
  free(info);
  if (st != GSTAT_OK) return st;
  s->pca_batch = batch;
  s->pca_n = n;
  s->pca_p = p;
  s->pca_cdt = cdt;
  s->pca_row_major = row_major;
  return GSTAT_OK;
}

gstat_status gstat_cu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, double *mean,
                               double *M) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  s->pca_batch = 0; /* the buffers below are pca_fit's */
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t n = X->rows, p = X->cols;
  if (n > INT32_MAX || p > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "comoment: n or p exceeds cuBLAS's int range");
  char *xc = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(n * p) * es);
  char *S = gstat_cu_buffer(s, ctx, CU_COV, (size_t)(p * p) * es);
  double *dSums = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  if (!xc || !S || !dSums) return GSTAT_ENOMEM;
  int row_major = 0;
  const char *src = dense_element(X, cdt, 0, &row_major);
  if (!src) {
    TRY(gstat_cu_load(s, ctx, "comoment", X, 0, 1, cdt, xc, NULL));
    src = xc;
    row_major = 0;
  }
  bool nonfinite = false; /* NaN/Inf propagate: the caller decides */
  TRY(column_means(s, ctx, cdt, src, n, p, row_major, dSums, dSums + p, mean, &nonfinite));
  TRY_CU(gstat_cu_center(cdt, src, xc, n, p, row_major, dSums + p, s->stream), "centering");
  TRY(comoment(s, ctx, cdt, row_major, n, p, xc, S));
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, (size_t)(p * p) * es);
  if (!h) return GSTAT_ENOMEM;
  TRY_CU(cudaMemcpyAsync(h, S, (size_t)(p * p) * es, cudaMemcpyDeviceToHost, s->stream),
         "co-moment");
  TRY_CU(cudaStreamSynchronize(s->stream), "co-moment");
  for (int64_t j = 0; j < p; j++) /* the lower triangle (column-major) is the valid one */
    for (int64_t i = j; i < p; i++) {
      size_t o = (size_t)(i + j * p);
      double v = cdt == GSTAT_F64 ? ((double *)h)[o] : (double)((float *)h)[o];
      M[i + j * p] = M[j + i * p] = v;
    }
  return GSTAT_OK;
}

gstat_status gstat_cu_pca_project(void *state, gstat_ctx *ctx, const gstat_matrix *X,
                                  const double *mean, const double *scale, const double *comp,
                                  const double *ev, int64_t k, gstat_matrix *Y) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  s->pca_batch = 0; /* the buffers below are pca_fit's */
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t m = X->rows, p = X->cols;
  if (m > INT32_MAX || p > INT32_MAX || k > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "pca_transform: sizes exceed cuBLAS's int range");
  if (m == 0 || k == 0) return GSTAT_OK;
  TRY(gstat_cu_check_finite(s, ctx, "pca_transform", "X", X, 0));
  size_t vbytes = (size_t)(p * k) * es, zbytes = (size_t)(m * k) * es;
  char *xc = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(m * p) * es);
  char *dV = gstat_cu_buffer(s, ctx, CU_PROJ, vbytes + zbytes + 256);
  double *dMean = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  size_t hbytes = vbytes > sizeof(double) * (size_t)p ? vbytes : sizeof(double) * (size_t)p;
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, hbytes);
  if (!xc || !dV || !dMean || !h) return GSTAT_ENOMEM;
  char *dZ = dV + (vbytes + 255) / 256 * 256;
  for (int64_t b = 0; b < X->batch; b++) {
    int rm = 0;
    const char *src = dense_element(X, cdt, b, &rm);
    if (!src) {
      TRY(gstat_cu_load(s, ctx, "pca_transform", X, b, 1, cdt, xc, NULL));
      src = xc;
      rm = 0;
    }
    memcpy(h, mean + b * p, sizeof(double) * (size_t)p);
    TRY_CU(cudaMemcpyAsync(dMean, h, sizeof(double) * (size_t)p, cudaMemcpyHostToDevice, s->stream),
           "means");
    TRY_CU(cudaStreamSynchronize(s->stream), "means"); /* h is reused */
    TRY_CU(gstat_cu_center(cdt, src, xc, m, p, rm, dMean, s->stream), "centering");
    /* V (p x k, column-major) = comp^T, / scale per feature, / sqrt(ev) per component */
    for (int64_t i = 0; i < k; i++) {
      double e = ev ? ev[b * k + i] : 1.0, f = e > 0 ? 1.0 / sqrt(e) : 0.0;
      for (int64_t j = 0; j < p; j++) {
        double v = comp[(b * k + i) * p + j] / (scale ? scale[b * p + j] : 1.0) * f;
        if (cdt == GSTAT_F64)
          ((double *)h)[j + i * p] = v;
        else
          ((float *)h)[j + i * p] = (float)v;
      }
    }
    TRY_CU(cudaMemcpyAsync(dV, h, vbytes, cudaMemcpyHostToDevice, s->stream), "components");
    /* Z (m x k, column-major) = Xc V; row-major Xc is the column-major p x m matrix */
    cublasOperation_t opx = rm ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldx = (int)(rm ? p : m);
    cublasStatus_t bs;
    if (cdt == GSTAT_F64) {
      const double one = 1, zero = 0;
      bs = cublasDgemm(s->blas, opx, CUBLAS_OP_N, (int)m, (int)k, (int)p, &one, (const double *)xc,
                       ldx, (const double *)dV, (int)p, &zero, (double *)dZ, (int)m);
    } else {
      const float one = 1, zero = 0;
      bs = cublasSgemm(s->blas, opx, CUBLAS_OP_N, (int)m, (int)k, (int)p, &one, (const float *)xc,
                       ldx, (const float *)dV, (int)p, &zero, (float *)dZ, (int)m);
    }
    TRY_BLAS(bs, "gemm");
    TRY(gstat_cu_store(s, ctx, "pca_transform", dZ, cdt, Y, b, 1, NULL));
    TRY_CU(cudaStreamSynchronize(s->stream), "scores"); /* h and the buffers are reused */
  }
  return GSTAT_OK;
}

gstat_status gstat_cu_pca_scores(void *state, gstat_ctx *ctx, int64_t b, const double *components,
                                 const double *scale, int64_t k, double *scores) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (b < 0 || b >= s->pca_batch || k < 0 || k > s->pca_p)
    return gstat_cu_host->fail(ctx, GSTAT_EINVAL,
                               "pca: no fitted data on the device for dataset %lld", (long long)b);
  int64_t n = s->pca_n, p = s->pca_p;
  int cdt = s->pca_cdt;
  size_t es = gstat_cu_dtype_bytes(cdt), vbytes = (size_t)(p * k) * es,
         zbytes = (size_t)(n * k) * es;
  if (k == 0 || n == 0) return GSTAT_OK;
  char *dV = gstat_cu_buffer(s, ctx, CU_PROJ, vbytes + zbytes + 256);
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, vbytes > zbytes ? vbytes : zbytes);
  if (!dV || !h) return GSTAT_ENOMEM;
  char *dZ = dV + (vbytes + 255) / 256 * 256;
  /* V (p x k, column-major) = components^T, divided by the scale per feature */
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < p; j++) {
      double v = components[i * p + j] / (scale ? scale[j] : 1.0);
      if (cdt == GSTAT_F64)
        ((double *)h)[j + i * p] = v;
      else
        ((float *)h)[j + i * p] = (float)v;
    }
  TRY_CU(cudaMemcpyAsync(dV, h, vbytes, cudaMemcpyHostToDevice, s->stream), "components");
  const char *xc = (const char *)gstat_cu_buffer(s, ctx, CU_DATA, 0) + (size_t)(b * n * p) * es;
  /* Z^T (k x n) = V^T Xc^T: the n x k row-major scores, column-major k x n */
  cublasOperation_t opx = s->pca_row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  int ldx = (int)(s->pca_row_major ? p : n);
  cublasStatus_t bs;
  if (cdt == GSTAT_F64) {
    const double one = 1, zero = 0;
    bs = cublasDgemm(s->blas, CUBLAS_OP_T, opx, (int)k, (int)n, (int)p, &one, (const double *)dV,
                     (int)p, (const double *)xc, ldx, &zero, (double *)dZ, (int)k);
  } else {
    const float one = 1, zero = 0;
    bs = cublasSgemm(s->blas, CUBLAS_OP_T, opx, (int)k, (int)n, (int)p, &one, (const float *)dV,
                     (int)p, (const float *)xc, ldx, &zero, (float *)dZ, (int)k);
  }
  TRY_BLAS(bs, "gemm");
  TRY_CU(cudaStreamSynchronize(s->stream), "components"); /* h is reused below */
  TRY_CU(cudaMemcpyAsync(h, dZ, zbytes, cudaMemcpyDeviceToHost, s->stream), "scores");
  TRY_CU(cudaStreamSynchronize(s->stream), "scores");
  for (int64_t e = 0; e < n * k; e++)
    scores[e] = cdt == GSTAT_F64 ? ((double *)h)[e] : (double)((float *)h)[e];
  return GSTAT_OK;
}
