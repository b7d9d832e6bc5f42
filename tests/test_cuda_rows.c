/*
 * Mahalanobis distances and Ledoit-Wolf / OAS shrinkage of data in device
 * memory on a real GPU (the rows primitive, the factor and the co-moment on
 * the device): float32 and float64, row-major and column-major data, small
 * and large p, against the CPU on the same values on the host, with
 * last_backends saying CUDA; GSTAT_CUDA_FAULT=solver|nonfinite inside a
 * Mahalanobis call gives the CPU's distances and says "cuda+cpu". Without a
 * usable GPU it reports itself skipped (exit 77).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

enum { NB = 3 };

/* The values v (batch x rows x cols, row-major doubles) in dtype dt on the
 * device, row-major or column-major; *dev is to be freed by cudaFree. */
static gstat_matrix upload(const double *v, gstat_dtype dt, int64_t batch, int64_t rows,
                           int64_t cols, bool col_major, void **dev) {
  size_t es = gstat_dtype_size(dt), count = (size_t)(batch * rows * cols);
  char *h = malloc(count * es);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        double x = v[(b * rows + i) * cols + j];
        size_t at = (size_t)(b * rows * cols + (col_major ? i + j * rows : i * cols + j));
        if (dt == GSTAT_F64)
          ((double *)h)[at] = x;
        else
          ((float *)h)[at] = (float)x;
      }
  assert_int_equal(cudaMalloc(dev, count * es), cudaSuccess);
  assert_int_equal(cudaMemcpy(*dev, h, count * es, cudaMemcpyHostToDevice), cudaSuccess);
  free(h);
  gstat_matrix m = col_major ? gstat_matrix_col_major(*dev, dt, batch, rows, cols)
                             : gstat_matrix_row_major(*dev, dt, batch, rows, cols);
  m.location = GSTAT_CUDA;
  return m;
}

/* The same values in dtype dt on the host (row-major), in *buf (to free). */
static gstat_matrix on_host(const double *v, gstat_dtype dt, int64_t batch, int64_t rows,
                            int64_t cols, void **buf) {
  size_t count = (size_t)(batch * rows * cols);
  *buf = malloc(count * gstat_dtype_size(dt));
  for (size_t e = 0; e < count; e++) {
    if (dt == GSTAT_F64)
      ((double *)*buf)[e] = v[e];
    else
      ((float *)*buf)[e] = (float)v[e];
  }
  return gstat_matrix_row_major(*buf, dt, batch, rows, cols);
}

static void close_to(const char *what, const double *got, const double *want, int64_t count,
                     double tol) {
  for (int64_t e = 0; e < count; e++)
    if (!(fabs(got[e] - want[e]) <= tol * (1 + fabs(want[e])))) {
      print_error("%s: entry %lld is %.17g, the CPU's %.17g\n", what, (long long)e, got[e],
                  want[e]);
      fail();
    }
}

static void expect_ok(gstat_ctx *ctx, gstat_status st) {
  if (st != GSTAT_OK) print_error("%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
}

/* Data with a large mean and distinct spreads, centres near the means, and
 * diagonally dominant covariance matrices. */
static void make_case(int64_t n, int64_t p, double *x, double *c, double *s) {
  tu_rng rng = tu_rng_new();
  for (int64_t e = 0; e < NB * n * p; e++)
    x[e] = 50.0 + 0.01 * (double)(e % p) + tu_normal(&rng) * (1.0 + 0.1 * (double)(e % 7));
  for (int64_t e = 0; e < NB * p; e++) c[e] = 50.0 + 0.01 * (double)(e % p);
  for (int64_t b = 0; b < NB; b++)
    for (int64_t i = 0; i < p; i++)
      for (int64_t j = 0; j < p; j++)
        s[(b * p + i) * p + j] = (i == j ? 3.0 + 0.01 * (double)(i + b) : 0.0) +
                                 0.3 / (1.0 + (double)(i + j) + (double)b);
}

/* Distances (both forms) of NB datasets; out: 2 NB n values. */
static void distances(gstat_ctx *ctx, const gstat_matrix *X, const gstat_matrix *C,
                      const gstat_matrix *S, double *out, unsigned *ran) {
  int64_t n = X->rows;
  for (int inv = 0; inv < 2; inv++) {
    double *d = out + inv * NB * n;
    gstat_matrix D = gstat_vector_batch(d, GSTAT_F64, NB, n);
    void *dd = NULL;
    if (X->location == GSTAT_CUDA) {
      assert_int_equal(cudaMalloc(&dd, sizeof(double) * (size_t)(NB * n)), cudaSuccess);
      D.data = dd;
      D.location = GSTAT_CUDA;
    }
    expect_ok(ctx, gstat_mahalanobis(ctx, X, C, S, inv, &D));
    ran[inv] = gstat_ctx_last_backends(ctx);
    if (dd) {
      assert_int_equal(cudaMemcpy(d, dd, sizeof(double) * (size_t)(NB * n), cudaMemcpyDeviceToHost),
                       cudaSuccess);
      cudaFree(dd);
    }
  }
}

/* Ledoit-Wolf then OAS: NB p x p matrices (host output) and shrinkages each. */
static void shrunk(gstat_ctx *ctx, const gstat_matrix *X, double *out, unsigned *ran) {
  int64_t p = X->cols;
  const gstat_shrinkage methods[2] = {GSTAT_SHRINK_LEDOIT_WOLF, GSTAT_SHRINK_OAS};
  for (int k = 0; k < 2; k++) {
    double *c = out + k * NB * (p * p + 1);
    gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, NB, p, p);
    expect_ok(ctx, gstat_cov_shrink(ctx, X, methods[k], 0, &C, NULL, c + NB * p * p));
    ran[k] = gstat_ctx_last_backends(ctx);
  }
}

static void rows_case(gstat_ctx *gpu, gstat_ctx *cpu, gstat_dtype dt, int64_t n, int64_t p) {
  double *x = malloc(sizeof(double) * (size_t)(NB * n * p)), *c = malloc(sizeof(double) * NB * p);
  double *s = malloc(sizeof(double) * (size_t)(NB * p * p));
  make_case(n, p, x, c, s);
  int64_t nd = 2 * NB * n, ns = 2 * NB * (p * p + 1);
  double *want = malloc(sizeof(double) * (size_t)(nd + ns)),
         *got = malloc(sizeof(double) * (size_t)(nd + ns));
  void *hx, *hc, *hs;
  gstat_matrix X = on_host(x, dt, NB, n, p, &hx), C = on_host(c, GSTAT_F64, NB, p, 1, &hc),
               S = on_host(s, GSTAT_F64, NB, p, p, &hs);
  unsigned ran[2];
  distances(cpu, &X, &C, &S, want, ran);
  shrunk(cpu, &X, want + nd, ran);
  const double tol = dt == GSTAT_F64 ? 1e-9 : 2e-3;
  for (int cm = 0; cm < 2; cm++) {
    void *dx, *dc, *ds;
    gstat_matrix Xd = upload(x, dt, NB, n, p, cm, &dx), Cd = upload(c, GSTAT_F64, NB, p, 1, 0, &dc),
                 Sd = upload(s, GSTAT_F64, NB, p, p, cm, &ds);
    char what[96];
    snprintf(what, sizeof what, "%s %lld x %lld %s", dt == GSTAT_F64 ? "f64" : "f32", (long long)n,
             (long long)p, cm ? "column-major" : "row-major");
    distances(gpu, &Xd, &Cd, &Sd, got, ran);
    assert_int_equal(ran[0], GSTAT_RAN_CUDA);
    assert_int_equal(ran[1], GSTAT_RAN_CUDA);
    close_to(what, got, want, nd, tol);
    shrunk(gpu, &Xd, got + nd, ran);
    assert_int_equal(ran[0], GSTAT_RAN_CUDA);
    assert_int_equal(ran[1], GSTAT_RAN_CUDA);
    close_to(what, got + nd, want + nd, ns, tol);
    /* a failing solver, NaN output: element 1 or 2 of the factor recomputed on the CPU */
    const char *faults[2] = {"solver", "nonfinite"};
    for (int f = 0; f < 2; f++) {
      setenv("GSTAT_CUDA_FAULT", faults[f], 1);
      distances(gpu, &Xd, &Cd, &Sd, got, ran);
      unsetenv("GSTAT_CUDA_FAULT");
      assert_int_equal(ran[0], GSTAT_RAN_CUDA | GSTAT_RAN_CPU);
      close_to(what, got, want, NB * n, tol);
    }
    cudaFree(dx);
    cudaFree(dc);
    cudaFree(ds);
  }
  free(hx);
  free(hc);
  free(hs);
  free(x);
  free(c);
  free(s);
  free(want);
  free(got);
}

static void test_rows_statistics_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  /* the factor applied by trsm, and (n >= 16 p: the CUDA rules) through L^-1 */
  const int64_t shapes[4][2] = {{2000, 7}, {3000, 60}, {1500, 300}, {8000, 100}};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < 4; k++) rows_case(gpu, cpu, dts[d], shapes[k][0], shapes[k][1]);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

int main(void) {
  gstat_ctx *probe;
  if (gstat_ctx_create(&probe, NULL) != GSTAT_OK) return 1;
  int available = gstat_ctx_cuda_available(probe);
  gstat_ctx_destroy(probe);
  if (!available) {
    printf("test_cuda_rows: no usable CUDA device or module: SKIPPED\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_statistics_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
