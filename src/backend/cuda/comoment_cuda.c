/*
 * The CUDA backend's statistics primitives (backend.h): the fused co-moment
 * and the centred projection, for data in device memory or streamed from the
 * host in row chunks; the non-finite scan; the rules table of its cost model.
 *
 * Co-moment of device data: column means accumulated in double, a centred
 * copy written and summed in one pass (the sums correct the means), the lower
 * triangle by row-blocked, tiled cuBLAS GEMMs: for n x p fp32 data 3 reads
 * and 1 write of the data plus n p^2 multiply-adds (2 n p^2 as GEMM), which
 * dominate for p >= 100. Host data: each chunk is
 * copied in (pinned halves), centred about the first chunk's mean, its
 * co-moment added in double on the device; only p x p comes back.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"

/* The CUDA backend's rules for its cost model and chunking (bench/README.md,
 * "The cost model"). */
static const struct {
  double h2d_bytes;          /* the caller's pageable host memory to the device, per second */
  double flops[2];           /* sustained GEMM rate: float32, float64 */
  double call_seconds;       /* a call's fixed cost: launches, synchronizations */
  size_t chunk_bytes;        /* host rows moved per chunk */
  double knn_bytes;          /* knn: rate of the passes over a block of distances (GEMM write, three
                                selection reads), fitted to bench_knn_gpu on the H200 */
  int64_t kmeans_min_points; /* kmeans: fewer points stay on the CPU */
  bool kmeans_auto;          /* kmeans: AUTO sends host rows here */
  double kmeans_pass_seconds;     /* kmeans: a pass's launches and synchronization (estimate) */
  int64_t sparse_auto_min_nodes;  /* AUTO plans a host graph's Laplacian here from this many
                                     nodes (the crossovers: bench/README.md) */
  int64_t rows_inverse_min_ratio; /* rows: L^-1 by trtri and one trmm instead of a trsm from
                                     n >= this p (bench/README.md, "Mahalanobis by L^-1") */
  int64_t qr_cholesky_min_ratio;  /* orthonormalize: Cholesky QR instead of geqrf + orgqr from
                                     m >= this n (bench/README.md, "Cholesky QR") */
} cuda_rules = {
    .h2d_bytes = 30e9,
    .flops = {40e12, 20e12},
    .call_seconds = 0.5e-3,
    .chunk_bytes = (size_t)256 << 20,
    .knn_bytes = 1.5e12,
    .kmeans_min_points = 20000,
    .kmeans_auto = true,
    .kmeans_pass_seconds = 2e-5,
    .sparse_auto_min_nodes = 100000,
    .rows_inverse_min_ratio = 16,
    .qr_cholesky_min_ratio = 16,
};

bool gstat_cu_rows_by_inverse(int64_t n, int64_t p) {
  return n >= cuda_rules.rows_inverse_min_ratio * p;
}

bool gstat_cu_qr_by_cholesky(int64_t m, int64_t n) {
  const char *off = getenv("GSTAT_CUDA_CHOLESKY_QR"); /* "0": Householder always (tests) */
  return !(off && strcmp(off, "0") == 0) && m >= cuda_rules.qr_cholesky_min_ratio * n;
}

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

const char *gstat_cu_dense_element(const gstat_matrix *X, int cdt, int64_t b, int *row_major) {
  if ((int)X->dtype != cdt || X->location != GSTAT_CUDA) return NULL;
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

/* The means (p doubles) from the device to the host: one wait, after the
 * co-moment's products are queued. */
static gstat_status means_out(gstat_cu_state *s, gstat_ctx *ctx, const double *d_mean, int64_t p,
                              double *mean) {
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, sizeof(double) * (size_t)p);
  if (!h) return GSTAT_ENOMEM;
  TRY_CU(cudaMemcpyAsync(h, d_mean, sizeof(double) * (size_t)p, cudaMemcpyDeviceToHost, s->stream),
         "means");
  TRY_CU(cudaStreamSynchronize(s->stream), "means");
  memcpy(mean, h, sizeof(double) * (size_t)p); /* a NaN/Inf propagates: the caller decides */
  return GSTAT_OK;
}

/* d_mean (p, device) of the n x p element at x: double sums, then the sums
 * of the residuals x - m1 (correcting the first pass's rounding), both
 * divided on the device. With y, the second pass also writes y = x - m1 in
 * the dtype and sums those stored values, so d_sums then holds n times the
 * mean of y. Stream-ordered: nothing is read back. */
static gstat_status column_passes(gstat_cu_state *s, gstat_ctx *ctx, int cdt, const void *x,
                                  int64_t n, int64_t p, int row_major, double *d_sums,
                                  double *d_mean, void *y) {
  for (int pass = 0; pass < 2; pass++) {
    TRY_CU(cudaMemsetAsync(d_sums, 0, sizeof(double) * (size_t)p, s->stream), "zeroing sums");
    TRY_CU(gstat_cu_col_sums(cdt, x, n, p, row_major, pass ? d_mean : NULL, d_sums, pass ? y : NULL,
                             s->stream),
           "column sums");
    TRY_CU(gstat_cu_mean_step(d_sums, d_mean, n, p, pass == 0, s->stream), "means");
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
 * which also shortens every fp32 accumulation chain from n to n/R terms.
 * Blocks of max(p, 256) rows keep enough products per call for cuBLAS's
 * large tiles at mid n (bench/README.md, "Two reads of X"). */
gstat_status gstat_cu_gram_lower(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int row_major,
                                 int64_t n, int64_t p, const char *xc, void *S) {
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t R = n / (p > 256 ? p : 256), T = p / 384;
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

/* The lower triangle of the column-major p x p host buffer h (type cdt or
 * double) into both triangles of M (doubles), less n d d^T when d is given:
 * column by column, then the upper triangle mirrored in cache-sized tiles
 * (element-wise transposed writes of p = 1000 cost milliseconds). */
static void symmetric_out(int cdt, const void *h, int64_t p, double n, const double *d, double *M) {
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = j; i < p; i++) {
      size_t o = (size_t)(i + j * p);
      double v = cdt == GSTAT_F64 ? ((const double *)h)[o] : (double)((const float *)h)[o];
      M[o] = d ? v - n * d[i] * d[j] : v;
    }
  enum { kTile = 32 };
  for (int64_t jb = 0; jb < p; jb += kTile)
    for (int64_t ib = jb; ib < p; ib += kTile)
      for (int64_t j = jb; j < jb + kTile && j < p; j++)
        for (int64_t i = ib > j + 1 ? ib : j + 1; i < ib + kTile && i < p; i++)
          M[j + i * p] = M[i + j * p];
}

/* Element b of device-resident X: a first pass for the means m1 (double
 * sums), a second that writes the centred copy Y = X - m1 and sums it (d =
 * the mean of Y as stored), Y^T Y by gstat_cu_gram_lower, less n d d^T, mean = m1 + d
 * (the two-pass mean and centring in two reads of X instead of three); into
 * M on the host, or left in the dense device matrix dS when given. */
static gstat_status device_comoment(gstat_cu_state *s, gstat_ctx *ctx, const gstat_matrix *X,
                                    int64_t b, double *mean, double *M, char *dS) {
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t n = X->rows, p = X->cols;
  char *xc = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(n * p) * es);
  char *S = dS ? dS : gstat_cu_buffer(s, ctx, CU_COV, (size_t)(p * p) * es);
  double *dSums = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  if (!xc || !S || !dSums) return GSTAT_ENOMEM;
  double *dMean = dSums + p;
  int row_major = 0;
  const char *src = gstat_cu_dense_element(X, cdt, b, &row_major);
  if (!src) { /* centred in place below */
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, "comoment", X, b, 1, cdt, xc, NULL));
    src = xc;
    row_major = 0;
  }
  GSTAT_CU_TRY(column_passes(s, ctx, cdt, src, n, p, row_major, dSums, dMean, xc));
  GSTAT_CU_TRY(gstat_cu_gram_lower(s, ctx, cdt, row_major, n, p, xc, S));
  TRY_CU(gstat_cu_sub_outer_lower(cdt, S, p, dSums, n, s->stream), "co-moment");
  GSTAT_CU_TRY(means_out(s, ctx, dMean, p, mean));
  if (dS) return GSTAT_OK; /* stream-ordered: the next primitive reads it there */
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, (size_t)(p * p) * es);
  if (!h) return GSTAT_ENOMEM;
  TRY_CU(cudaMemcpyAsync(h, S, (size_t)(p * p) * es, cudaMemcpyDeviceToHost, s->stream),
         "co-moment");
  TRY_CU(cudaStreamSynchronize(s->stream), "co-moment");
  symmetric_out(cdt, h, p, 0, NULL, M);
  return GSTAT_OK;
}

/* Rows [r0, r0 + rows) of element b of m, as a descriptor of their own. */
static gstat_matrix row_range(const gstat_matrix *m, int64_t b, int64_t r0, int64_t rows) {
  gstat_matrix part = *m;
  part.data = (char *)m->data +
              (size_t)(b * m->batch_stride + r0 * m->row_stride) * gstat_cu_dtype_bytes(m->dtype);
  part.batch = 1;
  part.rows = rows;
  return part;
}

/* Whether the rows of m lie one after another (a range of rows is one span). */
static bool rows_contiguous(const gstat_matrix *m) {
  return m->cols <= 1 || m->col_stride == 1;
}

/* Rows per chunk of host data: the rules' chunk bytes, at least 1024 rows;
 * one chunk when a range of rows is not one span (a column-major chunk's
 * copy would span the whole element). */
static int64_t chunk_rows(const gstat_matrix *X) {
  if (!rows_contiguous(X)) return X->rows;
  size_t row = (size_t)X->cols * gstat_cu_dtype_bytes(gstat_cu_compute_dtype(X->dtype));
  int64_t rows = (int64_t)(cuda_rules.chunk_bytes / (row ? row : 1));
  if (rows < 1024) rows = 1024;
  return rows < X->rows ? rows : X->rows;
}

/* Element b of host X, streamed in row chunks: each is copied in, the first
 * one's exact mean becomes the shift c, every chunk adds sum(x - c) and the
 * co-moment of x - c (in double) on the device; at the end mean = c + d and
 * M = S_c - n d d^T with d = sum(x - c) / n (rounding-sized when c is near
 * the mean, as a chunk's mean is). */
static gstat_status host_comoment(gstat_cu_state *s, gstat_ctx *ctx, const gstat_matrix *X,
                                  int64_t b, double *mean, double *M) {
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t n = X->rows, p = X->cols, R = chunk_rows(X);
  size_t pp = (size_t)(p * p);
  char *xc = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(R * p) * es);
  char *S = gstat_cu_buffer(s, ctx, CU_COV, pp * (es + sizeof(double)));
  double *dSums = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, pp * sizeof(double));
  if (!xc || !S || !dSums || !h) return GSTAT_ENOMEM;
  double *dAcc = (double *)(S + (pp * es + 7) / 8 * 8), *dShift = dSums + p,
         *dTotal = dSums + 2 * p;
  TRY_CU(cudaMemsetAsync(dAcc, 0, pp * sizeof(double), s->stream), "zeroing the co-moment");
  TRY_CU(cudaMemsetAsync(dTotal, 0, sizeof(double) * (size_t)p, s->stream), "zeroing sums");
  for (int64_t r0 = 0; r0 < n; r0 += R) {
    int64_t rows = n - r0 < R ? n - r0 : R;
    gstat_matrix part = row_range(X, b, r0, rows);
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, "comoment", &part, 0, 1, cdt, xc, NULL));
    if (r0 == 0) { /* the shift: the first chunk's mean (two passes, in double) */
      GSTAT_CU_TRY(column_passes(s, ctx, cdt, xc, rows, p, 0, dSums, dShift, NULL));
      GSTAT_CU_TRY(means_out(s, ctx, dShift, p, mean));
    }
    TRY_CU(gstat_cu_col_sums(cdt, xc, rows, p, 0, dShift, dTotal, NULL, s->stream), "column sums");
    TRY_CU(gstat_cu_center(cdt, xc, xc, rows, p, 0, dShift, s->stream), "centering");
    GSTAT_CU_TRY(gstat_cu_gram_lower(s, ctx, cdt, 0, rows, p, xc, S));
    TRY_CU(gstat_cu_add_to_double(cdt, S, (int64_t)pp, dAcc, s->stream), "accumulating");
  }
  double d[1024], *dd = p <= 1024 ? d : malloc(sizeof(double) * (size_t)p);
  if (!dd)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "comoment: cannot allocate %lld doubles",
                               (long long)p);
  cudaError_t err =
      cudaMemcpyAsync(h, dTotal, sizeof(double) * (size_t)p, cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  for (int64_t j = 0; err == cudaSuccess && j < p; j++) {
    dd[j] = h[j] / (double)n;
    mean[j] += dd[j];
  }
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(h, dAcc, pp * sizeof(double), cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  if (err == cudaSuccess) symmetric_out(GSTAT_F64, h, p, (double)n, dd, M);
  if (dd != d) free(dd);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "comoment", "co-moment", err);
}

/* Host rows into the dense device matrix dS: through a host co-moment. */
static gstat_status host_comoment_to_device(gstat_cu_state *s, gstat_ctx *ctx,
                                            const gstat_matrix *X, int64_t b, double *mean,
                                            char *dS) {
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t pp = (size_t)(X->cols * X->cols), es = gstat_cu_dtype_bytes(cdt);
  double *M = malloc(sizeof(double) * (pp ? pp : 1));
  if (!M)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "comoment: cannot allocate %zu doubles", pp);
  gstat_status st = host_comoment(s, ctx, X, b, mean, M);
  char *h = st == GSTAT_OK ? gstat_cu_host_buffer(s, ctx, &s->host_pca, pp * es) : NULL;
  if (st == GSTAT_OK && !h) st = GSTAT_ENOMEM;
  for (size_t e = 0; h && e < pp; e++) {
    if (cdt == GSTAT_F64)
      ((double *)h)[e] = M[e];
    else
      ((float *)h)[e] = (float)M[e];
  }
  cudaError_t err = cudaSuccess;
  if (h) err = cudaMemcpyAsync(dS, h, pp * es, cudaMemcpyHostToDevice, s->stream);
  if (h && err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  free(M);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, "comoment", "co-moment", err);
  return st;
}

gstat_status gstat_cu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                               double *mean, double *M, const gstat_matrix *S) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (X->rows > INT32_MAX || X->cols > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "comoment: n or p exceeds cuBLAS's int range");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "comoment: simulated device out of memory");
  char *dS = NULL;
  if (!M && !(dS = gstat_cu_dense(S, gstat_cu_compute_dtype(X->dtype), 0)))
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "comoment: S must be dense and column-major in device memory");
  gstat_status st = X->location == GSTAT_CUDA ? device_comoment(s, ctx, X, b, mean, M, dS)
                    : dS                      ? host_comoment_to_device(s, ctx, X, b, mean, dS)
                                              : host_comoment(s, ctx, X, b, mean, M);
  if (st == GSTAT_OK && gstat_cu_fault_now() == FAULT_NONFINITE) mean[0] = NAN;
  return st;
}

/* V (p x k column-major, compute type, on the device) = comp^T with column
 * i times 1/sqrt(ev[i]) and row j divided by scale[j]. */
static gstat_status upload_components(gstat_cu_state *s, gstat_ctx *ctx, int cdt,
                                      const double *scale, const double *comp, const double *ev,
                                      int64_t k, int64_t p, void *dV) {
  size_t es = gstat_cu_dtype_bytes(cdt), vbytes = (size_t)(p * k) * es;
  char *h = gstat_cu_upload_buffer(s, ctx, vbytes);
  if (!h) return GSTAT_ENOMEM;
  for (int64_t i = 0; i < k; i++) {
    double e = ev ? ev[i] : 1.0, f = e > 0 ? 1.0 / sqrt(e) : 0.0;
    for (int64_t j = 0; j < p; j++) {
      double v = comp[i * p + j] / (scale ? scale[j] : 1.0) * f;
      if (cdt == GSTAT_F64)
        ((double *)h)[j + i * p] = v;
      else
        ((float *)h)[j + i * p] = (float)v;
    }
  }
  return gstat_cu_upload(s, ctx, dV, vbytes, "components");
}

/* Z (m x k, column-major) = Xc V for m centred rows (row-major xc is the
 * column-major p x m matrix). */
static cublasStatus_t scores_gemm(gstat_cu_state *s, int cdt, int rm, int64_t m, int64_t p,
                                  int64_t k, const void *xc, const void *V, void *Z) {
  cublasOperation_t opx = rm ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldx = (int)(rm ? p : m);
  if (cdt == GSTAT_F64) {
    const double one = 1, zero = 0;
    return cublasDgemm(s->blas, opx, CUBLAS_OP_N, (int)m, (int)k, (int)p, &one, xc, ldx, V, (int)p,
                       &zero, Z, (int)m);
  }
  const float one = 1, zero = 0;
  return cublasSgemm(s->blas, opx, CUBLAS_OP_N, (int)m, (int)k, (int)p, &one, xc, ldx, V, (int)p,
                     &zero, Z, (int)m);
}

gstat_status gstat_cu_project(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                              const double *mean, const double *scale, const double *comp,
                              const double *ev, int64_t k, gstat_matrix *Y) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  int64_t n = X->rows, p = X->cols;
  if (n > INT32_MAX || p > INT32_MAX || k > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "project: sizes exceed cuBLAS's int range");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "project: simulated device out of memory");
  if (n == 0 || k == 0) return GSTAT_OK;
  /* device data in one piece, host data in row chunks */
  int64_t R = X->location == GSTAT_CUDA || (Y->location == GSTAT_HOST && !rows_contiguous(Y))
                  ? n
                  : chunk_rows(X);
  size_t vbytes = (size_t)(p * k) * es, zbytes = (size_t)(R * k) * es;
  char *xc = gstat_cu_buffer(s, ctx, CU_DATA, (size_t)(R * p) * es);
  char *dV = gstat_cu_buffer(s, ctx, CU_PROJ, vbytes + zbytes + 256);
  double *dMean = gstat_cu_buffer(s, ctx, CU_SUMS, 3 * sizeof(double) * (size_t)p);
  double *h = gstat_cu_upload_buffer(s, ctx, sizeof(double) * (size_t)p);
  if (!xc || !dV || !dMean || !h) return GSTAT_ENOMEM;
  char *dZ = dV + (vbytes + 255) / 256 * 256;
  memcpy(h, mean, sizeof(double) * (size_t)p);
  GSTAT_CU_TRY(gstat_cu_upload(s, ctx, dMean, sizeof(double) * (size_t)p, "means"));
  GSTAT_CU_TRY(upload_components(s, ctx, cdt, scale, comp, ev, k, p, dV));
  for (int64_t r0 = 0; r0 < n; r0 += R) {
    int64_t rows = n - r0 < R ? n - r0 : R;
    int rm = 0;
    const char *src = R == n ? gstat_cu_dense_element(X, cdt, b, &rm) : NULL;
    if (!src) {
      gstat_matrix part = row_range(X, b, r0, rows);
      GSTAT_CU_TRY(gstat_cu_load(s, ctx, "project", &part, 0, 1, cdt, xc, NULL));
      src = xc;
      rm = 0;
    }
    TRY_CU(gstat_cu_center(cdt, src, xc, rows, p, rm, dMean, s->stream), "centering");
    TRY_BLAS(scores_gemm(s, cdt, rm, rows, p, k, xc, dV, dZ), "gemm");
    gstat_matrix out = row_range(Y, b, r0, rows);
    GSTAT_CU_TRY(gstat_cu_store(s, ctx, "project", dZ, cdt, &out, 0, 1, NULL));
  }
  TRY_CU(cudaStreamSynchronize(s->stream), "scores"); /* the buffers are reused */
  return GSTAT_OK;
}

gstat_status gstat_cu_find_nonfinite_first(void *state, gstat_ctx *ctx, const gstat_matrix *M,
                                           int64_t *first) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  return gstat_cu_first_nonfinite(s, ctx, "finiteness check", M, 0, first);
}

double gstat_cu_host_cost(void *state, const gstat_ctx *ctx, const gstat_i_work *w) {
  (void)state;
  (void)ctx;
  double n = (double)w->n, p = (double)w->p, items = (double)w->batch;
  double bytes = items * n * p * (double)gstat_cu_dtype_bytes((int)w->dtype);
  if (w->op == GSTAT_I_PRIM_KNN) { /* GEMM distances, their passes, the results back */
    double es = (double)gstat_cu_dtype_bytes(gstat_cu_compute_dtype(w->dtype));
    return cuda_rules.call_seconds +
           (bytes + items * n * (double)w->k * 16) / cuda_rules.h2d_bytes +
           2 * items * n * n * p / cuda_rules.flops[w->dtype == GSTAT_F64] +
           4 * items * n * n * es / cuda_rules.knn_bytes;
  }
  if (w->op == GSTAT_I_PRIM_KMEANS) { /* seeding and ~30 Lloyd steps a run, each a pass */
    if (w->n < cuda_rules.kmeans_min_points ||
        (ctx->opt.backend == GSTAT_BACKEND_AUTO && !cuda_rules.kmeans_auto))
      return -1.0;
    double k = (double)(w->k > 1 ? w->k : 1), passes = k * (3 + log(k)) + 60;
    return cuda_rules.call_seconds + n * p * 8 / cuda_rules.h2d_bytes + /* moved once */
           items * passes * (cuda_rules.kmeans_pass_seconds + n * p * 8 / cuda_rules.knn_bytes);
  }
  if (w->op == GSTAT_I_PRIM_CSR_LAP) /* the plan's copy of the graph, then its products */
    return ctx->opt.backend == GSTAT_BACKEND_AUTO && w->n < cuda_rules.sparse_auto_min_nodes
               ? -1.0
               : cuda_rules.call_seconds + (n + p) * 16 / cuda_rules.h2d_bytes;
  if (w->op != GSTAT_I_PRIM_COMOMENT && w->op != GSTAT_I_PRIM_PROJECT) return -1.0;
  double flops =
      w->op == GSTAT_I_PRIM_COMOMENT ? 2 * items * n * p * p : 2 * items * n * p * (double)w->k;
  return cuda_rules.call_seconds + bytes / cuda_rules.h2d_bytes +
         flops / cuda_rules.flops[w->dtype == GSTAT_F64];
}

/* S's data when it is dense float32/float64 in device memory, else NULL
 * after a failure naming op. */
static char *sym_dense(gstat_ctx *ctx, const char *op, const gstat_matrix *S) {
  int cdt = (int)S->dtype;
  char *dS = gstat_cu_dense(S, cdt, 0);
  if (!dS || (cdt != GSTAT_F32 && cdt != GSTAT_F64)) {
    gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                        "%s: S must be dense float32/float64 in device memory", op);
    return NULL;
  }
  return dS;
}

gstat_status gstat_cu_scale_sym_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                   const double *d) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int cdt = (int)S->dtype;
  int64_t p = S->rows;
  char *dS = sym_dense(ctx, "scale_sym", S);
  if (!dS) return GSTAT_EUNSUPPORTED;
  double *dd = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)(S->batch * p));
  double *h = gstat_cu_upload_buffer(s, ctx, sizeof(double) * (size_t)(S->batch * p));
  if (!dd || !h) return GSTAT_ENOMEM;
  memcpy(h, d, sizeof(double) * (size_t)(S->batch * p));
  GSTAT_CU_TRY(gstat_cu_upload(s, ctx, dd, sizeof(double) * (size_t)(S->batch * p), "deviations"));
  for (int64_t b = 0; b < S->batch; b++)
    TRY_CU(gstat_cu_scale_sym(cdt, dS + (size_t)(b * p * p) * gstat_cu_dtype_bytes(cdt), p,
                              dd + b * p, s->stream),
           "scaling");
  return GSTAT_OK;
}

gstat_status gstat_cu_offdiag_sumsq_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                       double *out) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  char *dS = sym_dense(ctx, "offdiag_sumsq", S);
  if (!dS) return GSTAT_EUNSUPPORTED;
  int cdt = (int)S->dtype;
  int64_t p = S->rows, nb = S->batch;
  double *part = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)(p + nb));
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, sizeof(double) * (size_t)nb);
  if (!part || !h) return GSTAT_ENOMEM;
  for (int64_t b = 0; b < nb; b++)
    TRY_CU(gstat_cu_offdiag_sumsq(cdt, dS + (size_t)(b * p * p) * gstat_cu_dtype_bytes(cdt), p,
                                  part, part + p + b, s->stream),
           "sums of squares");
  TRY_CU(
      cudaMemcpyAsync(h, part + p, sizeof(double) * (size_t)nb, cudaMemcpyDeviceToHost, s->stream),
      "sums of squares");
  TRY_CU(cudaStreamSynchronize(s->stream), "sums of squares");
  memcpy(out, h, sizeof(double) * (size_t)nb);
  return GSTAT_OK;
}

gstat_status gstat_cu_sym_affine_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                    const double *a, const double *c) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  char *dS = sym_dense(ctx, "sym_affine", S);
  if (!dS) return GSTAT_EUNSUPPORTED;
  int cdt = (int)S->dtype;
  int64_t p = S->rows;
  for (int64_t b = 0; b < S->batch; b++)
    TRY_CU(gstat_cu_sym_affine(cdt, dS + (size_t)(b * p * p) * gstat_cu_dtype_bytes(cdt), p, a[b],
                               c[b], s->stream),
           "symmetric update");
  return GSTAT_OK; /* stream-ordered: the next primitive reads S there */
}

void *gstat_cu_workspace(void *state, gstat_ctx *ctx, size_t bytes) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  return gstat_cu_buffer(s, ctx, CU_CHAIN, bytes);
}
