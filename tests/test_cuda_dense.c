/*
 * The CUDA module's dense primitives and rows primitive (dense_cuda.c,
 * rows_cuda.c) called through the scheduler on real device memory, in the
 * shapes the statistics above them reach but their own GPU tests do not:
 * vectors (n x 1, 1 x p, 1 x 1) and row-major C (the swapped GEMM), a shared
 * operand of batch 1 (stride 0), more than 65535 batch elements, QR of
 * n == 1 and square elements with padded columns, and the rows primitive
 * with n or p of 1, row-major, column-major and copied layouts, with L, with
 * Q, centred and scaled, d in float64 (written in place) or float32 (stored);
 * the weighted and missing-value co-moments (nan_rows, wcomoment, pairwise)
 * under gstat_covariance with NaN in the data, every mode and dtype, constant
 * columns, zero weights, all rows dropped, 2^24 + 5 rows, another device
 * current, against the CPU on a host copy of the same layout. Each call is checked against a host
 * reference and must have run on CUDA (no fallback). Without a usable GPU it reports itself skipped
 * (exit 77).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/sched.h"
#include "testutil.h"

/* A device matrix in one of four unit-stride layouts with a host mirror of
 * its values: 0 column-major with padded columns, 1 row-major with padded
 * rows, 2 dense column-major, 3 dense row-major; elements 5 apart beyond
 * their extent in the padded layouts. */
typedef struct {
  gstat_matrix m;
  void *dev;
  char *host; /* the bytes as on the device */
  size_t bytes;
} dmat;

static dmat dmat_new(gstat_dtype dt, int64_t batch, int64_t rows, int64_t cols, int layout) {
  dmat d;
  memset(&d, 0, sizeof d);
  gstat_matrix *m = &d.m;
  m->dtype = dt;
  m->batch = batch;
  m->rows = rows;
  m->cols = cols;
  m->location = GSTAT_CUDA;
  int64_t span;
  if (layout == 0 || layout == 2) {
    m->row_stride = 1;
    m->col_stride = rows + (layout == 0 ? 2 : 0);
    span = m->col_stride * cols;
  } else {
    m->col_stride = 1;
    m->row_stride = cols + (layout == 1 ? 3 : 0);
    span = m->row_stride * rows;
  }
  if (m->col_stride < 1) m->col_stride = 1; /* an empty extent */
  if (m->row_stride < 1) m->row_stride = 1;
  m->batch_stride = span + (layout < 2 ? 5 : 0);
  d.bytes = (size_t)(batch * m->batch_stride + 8) * gstat_dtype_size(dt);
  d.host = calloc(1, d.bytes);
  assert_int_equal(cudaMalloc(&d.dev, d.bytes), cudaSuccess);
  m->data = d.dev;
  return d;
}

static size_t offset(const gstat_matrix *m, int64_t b, int64_t i, int64_t j) {
  return (size_t)(b * m->batch_stride + i * m->row_stride + j * m->col_stride);
}

static void dmat_set(dmat *d, int64_t b, int64_t i, int64_t j, double v) {
  size_t o = offset(&d->m, b, i, j);
  if (d->m.dtype == GSTAT_F64)
    ((double *)d->host)[o] = v;
  else if (d->m.dtype == GSTAT_BF16)
    ((uint16_t *)d->host)[o] = gstat_f32_to_bf16((float)v);
  else
    ((float *)d->host)[o] = (float)v;
}

static double dmat_get(const dmat *d, int64_t b, int64_t i, int64_t j) {
  size_t o = offset(&d->m, b, i, j);
  if (d->m.dtype == GSTAT_BF16) return (double)gstat_bf16_to_f32(((uint16_t *)d->host)[o]);
  return d->m.dtype == GSTAT_F64 ? ((double *)d->host)[o] : (double)((float *)d->host)[o];
}

static void dmat_upload(dmat *d) {
  assert_int_equal(cudaMemcpy(d->dev, d->host, d->bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

static void dmat_download(dmat *d) {
  assert_int_equal(cudaMemcpy(d->host, d->dev, d->bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

static void dmat_fill(dmat *d, tu_rng *rng) {
  for (int64_t b = 0; b < d->m.batch; b++)
    for (int64_t i = 0; i < d->m.rows; i++)
      for (int64_t j = 0; j < d->m.cols; j++) dmat_set(d, b, i, j, tu_normal(rng));
  dmat_upload(d);
}

static void dmat_free(dmat *d) {
  cudaFree(d->dev);
  free(d->host);
}

/* The call ran on the GPU alone (no CPU fallback). */
static void ran_cuda(gstat_ctx *ctx, const char *what) {
  if (gstat_ctx_last_backends(ctx) != GSTAT_RAN_CUDA)
    fail_msg("%s: last_backends %u (%s)", what, gstat_ctx_last_backends(ctx),
             gstat_ctx_last_error(ctx));
}

static double op_get(const dmat *d, gstat_trans t, int64_t b, int64_t i, int64_t j) {
  int64_t e = d->m.batch == 1 ? 0 : b;
  return t == GSTAT_TRANS ? dmat_get(d, e, j, i) : dmat_get(d, e, i, j);
}

static void gemm_case(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, gstat_trans tb, int64_t m,
                      int64_t n, int64_t k, const int lay[3], int64_t nb, bool shared_a,
                      double beta) {
  tu_rng rng = tu_rng_new();
  int64_t ab = shared_a ? 1 : nb;
  dmat A = ta == GSTAT_TRANS ? dmat_new(dt, ab, k, m, lay[0]) : dmat_new(dt, ab, m, k, lay[0]);
  dmat B = tb == GSTAT_TRANS ? dmat_new(dt, nb, n, k, lay[1]) : dmat_new(dt, nb, k, n, lay[1]);
  dmat C = dmat_new(dt, nb, m, n, lay[2]);
  dmat_fill(&A, &rng);
  dmat_fill(&B, &rng);
  dmat_fill(&C, &rng);
  double *want = malloc(sizeof(double) * (size_t)(nb * m * n));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t t = 0; t < k; t++) s += op_get(&A, ta, b, i, t) * op_get(&B, tb, b, t, j);
        want[(b * m + i) * n + j] = -1.5 * s + beta * dmat_get(&C, b, i, j);
      }
  gstat_i_begin(ctx);
  assert_int_equal(gstat_i_sched_gemm(ctx, "test", ta, tb, -1.5, &A.m, &B.m, beta, &C.m), GSTAT_OK);
  char what[160];
  snprintf(what, sizeof what, "gemm dt %d ta %d tb %d %lldx%lldx%lld layouts %d%d%d batch %lld",
           (int)dt, (int)ta, (int)tb, (long long)m, (long long)n, (long long)k, lay[0], lay[1],
           lay[2], (long long)nb);
  ran_cuda(ctx, what);
  dmat_download(&C);
  double tol = (dt == GSTAT_F64 ? 1e-13 : 2e-6) * (double)(k + 4);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double w = want[(b * m + i) * n + j], g = dmat_get(&C, b, i, j);
        if (!(fabs(g - w) <= tol * (1 + fabs(w))))
          fail_msg("%s: C[%lld](%lld, %lld) = %g, want %g", what, (long long)b, (long long)i,
                   (long long)j, g, w);
      }
  free(want);
  dmat_free(&A);
  dmat_free(&B);
  dmat_free(&C);
}

static void test_gemm_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t shapes[6][3] = {{7, 5, 4}, {1, 5, 4}, {7, 1, 4}, {7, 5, 1}, {1, 1, 6}, {3, 4, 0}};
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 6; s++)
      for (int t = 0; t < 4; t++)
        for (int l = 0; l < 64; l++) {
          const int lay[3] = {l % 4, (l / 4) % 4, l / 16};
          gemm_case(ctx, dts[d], t % 2 ? GSTAT_TRANS : GSTAT_NO_TRANS,
                    t / 2 ? GSTAT_TRANS : GSTAT_NO_TRANS, shapes[s][0], shapes[s][1], shapes[s][2],
                    lay, 3, l % 3 == 0, (double)(l % 2));
        }
  gstat_ctx_destroy(ctx);
}

/* One dot product per element over 70000 elements (pca_device.c's column
 * sums of squares of a wide matrix): a batch count beyond 65535. */
static void test_gemm_many_elements(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  const int lay[3] = {2, 2, 2};
  gemm_case(ctx, GSTAT_F32, GSTAT_TRANS, GSTAT_NO_TRANS, 1, 1, 6, lay, 70000, false, 0.0);
  gemm_case(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, 6, 1, 1, lay, 70000, true, 1.0);
  gstat_ctx_destroy(ctx);
}

static void test_orthonormalize_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  /* the last two tall and alone: Cholesky QR unless GSTAT_CUDA_CHOLESKY_QR=0 (the CUDA rules:
   * m >= 16 n), the second with columns scaled over 7 decades (beyond it: Householder QR) */
  const int64_t shapes[6][2] = {{9, 4}, {5, 1}, {1, 1}, {6, 6}, {400, 8}, {400, 8}};
  for (int e = 0; e < 4; e++) /* float32, float64; Householder QR, then Cholesky QR allowed */
    for (int s = 0; s < 6; s++)
      for (int lay = 0; lay < 3; lay += 2) {
        int d = e % 2;
        if (e < 2)
          setenv("GSTAT_CUDA_CHOLESKY_QR", "0", 1);
        else
          unsetenv("GSTAT_CUDA_CHOLESKY_QR");
        gstat_dtype dt = d ? GSTAT_F64 : GSTAT_F32;
        double tol = d ? 1e-12 : 1e-5;
        int64_t nb = s < 4 ? 3 : 1, m = shapes[s][0], n = shapes[s][1];
        tu_rng rng = tu_rng_new();
        dmat A = dmat_new(dt, nb, m, n, lay);
        dmat_fill(&A, &rng);
        for (int64_t i = 0; s == 5 && i < m; i++)
          for (int64_t j = 0; j < n; j++)
            dmat_set(&A, 0, i, j, dmat_get(&A, 0, i, j) * pow(10, -j));
        if (s == 5) dmat_upload(&A);
        double *a0 = malloc(sizeof(double) * (size_t)(nb * m * n));
        for (int64_t b = 0; b < nb; b++)
          for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) a0[(b * m + i) * n + j] = dmat_get(&A, b, i, j);
        gstat_i_begin(ctx);
        assert_int_equal(gstat_i_sched_orthonormalize(ctx, "test", &A.m), GSTAT_OK);
        ran_cuda(ctx, "orthonormalize");
        dmat_download(&A);
        for (int64_t b = 0; b < nb; b++)
          for (int64_t p = 0; p < n; p++) {
            for (int64_t q = 0; q < n; q++) { /* Q^T Q = I */
              double sum = 0;
              for (int64_t i = 0; i < m; i++) sum += dmat_get(&A, b, i, p) * dmat_get(&A, b, i, q);
              assert_true(fabs(sum - (p == q)) <= tol * 10);
            }
            for (int64_t i = 0; i < m; i++) { /* column p of the input in the span */
              double r = a0[(b * m + i) * n + p];
              for (int64_t q = 0; q < n; q++) {
                double c = 0;
                for (int64_t t = 0; t < m; t++)
                  c += dmat_get(&A, b, t, q) * a0[(b * m + t) * n + p];
                r -= dmat_get(&A, b, i, q) * c;
              }
              assert_true(fabs(r) <= tol * 100);
            }
          }
        free(a0);
        dmat_free(&A);
      }
  unsetenv("GSTAT_CUDA_CHOLESKY_QR");
  gstat_ctx_destroy(ctx);
}

/* d_i of row i of element b of X (host mirror) as the rows primitive
 * defines it; L lower (column-major p x p doubles), Q symmetric. */
static double rows_ref(const dmat *X, int64_t b, int64_t i, const double *c, const double *s,
                       const double *L, const double *Q) {
  int64_t p = X->m.cols;
  double *u = malloc(sizeof(double) * (size_t)(p > 0 ? p : 1)), d = 0;
  for (int64_t j = 0; j < p; j++) u[j] = (dmat_get(X, b, i, j) - (c ? c[j] : 0)) / (s ? s[j] : 1);
  if (L)
    for (int64_t j = 0; j < p; j++) { /* forward substitution */
      for (int64_t t = 0; t < j; t++) u[j] -= L[j + t * p] * u[t];
      u[j] /= L[j + j * p];
    }
  for (int64_t j = 0; j < p; j++)
    if (Q)
      for (int64_t t = 0; t < p; t++) d += u[j] * Q[j > t ? j + t * p : t + j * p] * u[t];
    else
      d += u[j] * u[j];
  free(u);
  return d;
}

/* X (batch 2, element 1 used) in layout lay, mode 0 plain, 1 with L, 2 with Q. */
static void rows_case(gstat_ctx *ctx, gstat_dtype dt, int64_t n, int64_t p, int lay, int mode,
                      bool shift, gstat_dtype ddt) {
  tu_rng rng = tu_rng_new();
  dmat X = dmat_new(dt, 2, n, p, lay);
  dmat_fill(&X, &rng);
  double *c = malloc(sizeof(double) * (size_t)p), *s = malloc(sizeof(double) * (size_t)p);
  double *T = malloc(sizeof(double) * (size_t)(p * p));
  for (int64_t j = 0; j < p; j++) {
    c[j] = 0.3 * tu_normal(&rng);
    s[j] = 0.5 + tu_uniform(&rng);
  }
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++)
      T[i + j * p] = i == j ? 1.0 + tu_uniform(&rng) : 0.5 * tu_normal(&rng) / sqrt((double)p);
  for (int64_t j = 0; j < p; j++) /* Q symmetric (both triangles alike) */
    for (int64_t i = 0; i < j; i++) T[i + j * p] = T[j + i * p];
  /* the factor in X's dtype (used in place) or float64 for float32 X (copied) */
  gstat_dtype tdt = dt == GSTAT_F32 && lay == 0 ? GSTAT_F64 : dt;
  dmat Tm = dmat_new(tdt, 1, p, p, 2);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < p; i++) {
      dmat_set(&Tm, 0, i, j, T[i + j * p]);
      T[i + j * p] = dmat_get(&Tm, 0, i, j); /* as rounded */
    }
  dmat_upload(&Tm);
  dmat D = dmat_new(ddt, 1, n, 1, 2);
  double sums[2] = {-1, -1};
  gstat_i_rows_req r = {.X = &X.m,
                        .b = 1,
                        .center = shift ? c : NULL,
                        .scale = shift ? s : NULL,
                        .L = mode == 1 ? &Tm.m : NULL,
                        .Q = mode == 2 ? &Tm.m : NULL,
                        .d = &D.m,
                        .sums = sums};
  gstat_i_begin(ctx);
  assert_int_equal(gstat_i_sched_rows(ctx, "test", &r), GSTAT_OK);
  char what[160];
  snprintf(what, sizeof what, "rows dt %d %lldx%lld layout %d mode %d shift %d d dt %d", (int)dt,
           (long long)n, (long long)p, lay, mode, (int)shift, (int)ddt);
  ran_cuda(ctx, what);
  dmat_download(&D);
  double tol = dt == GSTAT_F64 && ddt == GSTAT_F64 ? 1e-11 : 2e-4, s1 = 0, s2 = 0;
  for (int64_t i = 0; i < n; i++) {
    double w = rows_ref(&X, 1, i, shift ? c : NULL, shift ? s : NULL, mode == 1 ? T : NULL,
                        mode == 2 ? T : NULL);
    double g = dmat_get(&D, 0, i, 0);
    s1 += w;
    s2 += w * w;
    if (!(fabs(g - w) <= tol * (1 + fabs(w))))
      fail_msg("%s: d[%lld] = %.17g, want %.17g", what, (long long)i, g, w);
  }
  if (!(fabs(sums[0] - s1) <= tol * (1 + fabs(s1)) && fabs(sums[1] - s2) <= tol * (1 + fabs(s2))))
    fail_msg("%s: sums %.17g %.17g, want %.17g %.17g", what, sums[0], sums[1], s1, s2);
  free(c);
  free(s);
  free(T);
  dmat_free(&X);
  dmat_free(&Tm);
  dmat_free(&D);
}

static void test_rows_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t shapes[5][2] = {{1, 1}, {1, 5}, {37, 1}, {37, 5}, {300, 40}};
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 5; s++)
      for (int lay = 0; lay < 4; lay++) /* padded column-major: the copy path */
        for (int mode = 0; mode < 3; mode++)
          for (int shift = 0; shift < 2; shift++)
            rows_case(ctx, dts[d], shapes[s][0], shapes[s][1], lay, mode, shift != 0,
                      (s + lay + mode) % 2 ? GSTAT_F32 : GSTAT_F64);
  gstat_ctx_destroy(ctx);
}

/* One case of test_cov_moments_shapes: X's dtype, shape and layout, the
 * variant of cov_case, the data's pattern (cov_fill), and the device made
 * current for the call (-1: the context's, 0). */
typedef struct {
  gstat_dtype dt;
  int64_t n, p;
  int lay, v, pattern, current;
} cov_shape;

/* X's values: 3 + j + N(0, 1), NaN planted in about one in 11 entries when
 * n > 1. Pattern 1 (p >= 4) adds what the GPU must reproduce exactly: column
 * 0 constant (its mean exactly the value, variance 0), column 1 constant on
 * the rows where column 2 is present but not overall (the pair's variance 0:
 * moments_req.h's rule after cuBLAS's sums), column p - 1 all NaN in element
 * 1 (COMPLETE drops every row; PAIRWISE pairs without weight). */
static void cov_fill(dmat *X, tu_rng *rng, int pattern) {
  int64_t n = X->m.rows, p = X->m.cols;
  for (int64_t b = 0; b < 2; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < p; j++) {
        bool missing = n > 1 && (i * 7 + j * 3 + b) % 11 == 0;
        double v = 3.0 + (double)j + tu_normal(rng);
        if (pattern == 1 && j == 0) v = 7.25;
        if (pattern == 1 && j == 1) v = (i * 7 + 6 + b) % 11 == 0 ? 9.0 + tu_normal(rng) : 5.5;
        if (pattern == 1 && j == p - 1 && b == 1) missing = true;
        dmat_set(X, b, i, j, missing ? NAN : v);
      }
  dmat_upload(X);
}

/* gstat_covariance of device X (batch 2) in variant v against the CPU's on
 * the host mirror (same layout): EVERYTHING weighted, COMPLETE, COMPLETE
 * with frequency weights and correlation, PAIRWISE, PAIRWISE with both
 * weights and correlation, COMPLETE about 0 weighted. Pattern 1 gives some
 * rows frequency weight 0. */
static void cov_case(gstat_ctx *ctx, gstat_ctx *cpu, cov_shape k) {
  tu_rng rng = tu_rng_new();
  int64_t n = k.n, p = k.p;
  dmat X = dmat_new(k.dt, 2, n, p, k.lay);
  cov_fill(&X, &rng, k.pattern);
  gstat_matrix H = X.m; /* the host mirror, same layout */
  H.data = X.host;
  H.location = GSTAT_HOST;
  double *fw = malloc(sizeof(double) * (size_t)n), *aw = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    fw[i] = (double)(i % 3 + (k.pattern == 1 ? 0 : 1));
    aw[i] = 0.25 + tu_uniform(&rng);
  }
  const gstat_missing modes[6] = {GSTAT_MISSING_EVERYTHING, GSTAT_MISSING_COMPLETE,
                                  GSTAT_MISSING_COMPLETE,   GSTAT_MISSING_PAIRWISE,
                                  GSTAT_MISSING_PAIRWISE,   GSTAT_MISSING_COMPLETE};
  int v = k.v;
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  o.missing = modes[v];
  o.aweights = v == 0 || v == 4 || v == 5 ? aw : NULL;
  o.fweights = v == 2 || v == 4 ? fw : NULL;
  o.correlation = v == 2 || v == 4;
  o.assume_centered = v == 5;
  size_t cc = (size_t)(2 * p * p), mc = (size_t)(2 * p);
  double *c = malloc(sizeof(double) * (cc + 1)), *m = malloc(sizeof(double) * (mc + 1));
  double *c0 = malloc(sizeof(double) * (cc + 1)), *m0 = malloc(sizeof(double) * (mc + 1));
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 2, p, p),
               M = gstat_vector_batch(m, GSTAT_F64, 2, p);
  gstat_matrix C0 = gstat_matrix_row_major(c0, GSTAT_F64, 2, p, p),
               M0 = gstat_vector_batch(m0, GSTAT_F64, 2, p);
  char what[200];
  snprintf(what, sizeof what, "covariance dt %d %lldx%lld layout %d variant %d pattern %d%s",
           (int)k.dt, (long long)n, (long long)p, k.lay, v, k.pattern,
           k.current > 0 ? ", another device current" : "");
  if (k.current > 0) assert_int_equal(cudaSetDevice(k.current), cudaSuccess);
  gstat_status st = gstat_covariance(ctx, &X.m, &o, &C, &M);
  if (k.current > 0) assert_int_equal(cudaSetDevice(0), cudaSuccess);
  if (st != GSTAT_OK) fail_msg("%s: %s", what, gstat_ctx_last_error(ctx));
  ran_cuda(ctx, what);
  assert_int_equal(gstat_covariance(cpu, &H, &o, &C0, &M0), GSTAT_OK);
  /* at 2^24 rows the CPU's own row-by-row sums of a repeated value err by
   * ~n eps (2e-10 seen against the fake's GEMMs) */
  double tol = k.dt == GSTAT_F64 ? fmax(1e-10, 16 * DBL_EPSILON * (double)n) : 2e-4;
  for (size_t e = 0; e < cc + mc; e++) {
    double g = e < cc ? c[e] : m[e - cc], w = e < cc ? c0[e] : m0[e - cc];
    if (!(g == w || fabs(g - w) <= tol * (1 + fabs(w))) && !(isnan(g) && isnan(w)))
      fail_msg("%s: entry %zu = %.17g, the CPU's %.17g", what, e, g, w);
  }
  free(c);
  free(m);
  free(c0);
  free(m0);
  free(fw);
  free(aw);
  dmat_free(&X);
}

/* Every dtype (bfloat16 read as float32), layout, variant and pattern on
 * small shapes (n or p of 1 included); rows beyond one grid of the linear
 * kernels (2^24 + 5: the grid-stride loops of the row scan, centring and
 * masks); with two GPUs, a call while another device is current. */
static void test_cov_moments_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t shapes[6][2] = {{1, 1}, {1, 4}, {2, 3}, {37, 1}, {37, 5}, {300, 40}};
  const gstat_dtype dts[3] = {GSTAT_F32, GSTAT_F64, GSTAT_BF16};
  for (int d = 0; d < 3; d++)
    for (int s = 0; s < 6; s++)
      for (int lay = 0; lay < 4; lay++) /* 2: dense column-major, read in place by nan_rows */
        for (int v = 0; v < 6; v++)
          for (int pat = 0; pat < (shapes[s][1] >= 4 ? 2 : 1); pat++)
            cov_case(ctx, cpu, (cov_shape){dts[d], shapes[s][0], shapes[s][1], lay, v, pat, -1});
  for (int v = 2; v <= 3; v++)
    cov_case(ctx, cpu, (cov_shape){GSTAT_F64, ((int64_t)1 << 24) + 5, 4, 3, v, 1, -1});
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 1)
    for (int v = 0; v < 6; v++) cov_case(ctx, cpu, (cov_shape){GSTAT_F64, 37, 5, 1, v, 1, 1});
  gstat_ctx_destroy(ctx);
  gstat_ctx_destroy(cpu);
}

/* The primitives at empty extents their contracts allow (covariance itself
 * returns before them): the weighted co-moment of p = 0 columns, the
 * pairwise co-moments of n = 0 rows (no weight: NaN) and of p = 0 columns,
 * the row scan of n = 0 rows; on CUDA alone (cuBLAS takes no leading
 * dimension of 0). */
static void test_moments_empty_extents(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  for (int d = 0; d < 2; d++) {
    gstat_dtype dt = d ? GSTAT_F64 : GSTAT_F32;
    double mean[3], M[9], W[9], C[9], V[9], w[3] = {1, 2, 3};
    unsigned char keep[3] = {1, 1, 1};
    int64_t inf_at = 5;
    dmat A = dmat_new(dt, 1, 3, 0, 2), B = dmat_new(dt, 1, 0, 3, 2);
    gstat_i_pairwise_out o = {mean, W, NULL, C, V};
    gstat_i_begin(ctx);
    assert_int_equal(gstat_i_sched_wcomoment(ctx, "test", &A.m, 0, w, keep, false, mean, M),
                     GSTAT_OK);
    ran_cuda(ctx, "wcomoment of 3 x 0");
    gstat_i_begin(ctx);
    assert_int_equal(gstat_i_sched_pairwise(ctx, "test", &A.m, 0, w, NULL, &o), GSTAT_OK);
    ran_cuda(ctx, "pairwise of 3 x 0");
    gstat_i_begin(ctx);
    assert_int_equal(gstat_i_sched_pairwise(ctx, "test", &B.m, 0, NULL, NULL, &o), GSTAT_OK);
    ran_cuda(ctx, "pairwise of 0 x 3");
    for (int k = 0; k < 9; k++) assert_true(W[k] == 0 && isnan(C[k]) && isnan(V[k]));
    for (int k = 0; k < 3; k++) assert_true(isnan(mean[k]));
    gstat_i_begin(ctx);
    assert_int_equal(gstat_i_sched_nan_rows(ctx, "test", &B.m, 0, keep, &inf_at), GSTAT_OK);
    assert_true(inf_at == -1);
    dmat_free(&A);
    dmat_free(&B);
  }
  gstat_ctx_destroy(ctx);
}

int main(void) {
  setenv("GSTAT_CUDA_MODULE", GSTAT_CUDA_MODULE_PATH, 0);
  gstat_ctx *probe;
  if (gstat_ctx_create(&probe, NULL) != GSTAT_OK) return 1;
  int available = gstat_ctx_cuda_available(probe);
  gstat_ctx_destroy(probe);
  if (!available) {
    printf("test_cuda_dense: no usable CUDA device or module: SKIPPED\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_shapes),           cmocka_unit_test(test_gemm_many_elements),
      cmocka_unit_test(test_orthonormalize_shapes), cmocka_unit_test(test_rows_shapes),
      cmocka_unit_test(test_cov_moments_shapes),    cmocka_unit_test(test_moments_empty_extents),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
