/* gstat_cholesky, gstat_cholesky_solve, gstat_triangular_solve: LAPACK's
 * ratios over sizes, batches, layouts, triangles and dtypes; per-element
 * failures reported without losing the other elements. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static const int64_t sizes[] = {0, 1, 2, 3, 5, 20, 32, 33, 64, 128, 500};
#define NSIZES (sizeof sizes / sizeof sizes[0])
static const double max_ratio = 60;

static double ulp_of(gstat_dtype dt) {
  return dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
}

/* The factor as a lower triangle L (A = L L^T) from F as stored with uplo;
 * the opposite strict triangle of F must have been written as zero. */
static void factor_as_lower(const gstat_matrix *F, int64_t b, gstat_uplo uplo, double *l) {
  int64_t n = F->rows;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double x = uplo == GSTAT_LOWER ? tu_get(F, b, i, j) : tu_get(F, b, j, i);
      if (i < j) assert_true(x == 0);
      l[i + j * n] = x;
    }
}

static void chol_case(gstat_ctx *ctx, gstat_dtype dtype, int64_t n, int64_t nb, gstat_uplo uplo,
                      tu_layout lin, tu_layout lout, int64_t nrhs) {
  double ulp = ulp_of(dtype);
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(dtype, nb, n, n, lin);
  tu_buf F = tu_buf_new(dtype, nb, n, n, lout);
  tu_buf B = tu_buf_new(dtype, nb, n, nrhs, lin);
  tu_buf X = tu_buf_new(dtype, nb, n, nrhs, lout);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n + 1));
  double *bb = malloc(sizeof(double) * (size_t)(nb * n * nrhs + 1));
  for (int64_t b = 0; b < nb; b++) {
    tu_spd(&rng, n, 1e3, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n);
    for (int64_t j = 0; j < n; j++) /* unread triangle: NaN must be ignored */
      for (int64_t i = 0; i < j; i++)
        tu_set(&A.m, b, uplo == GSTAT_LOWER ? i : j, uplo == GSTAT_LOWER ? j : i, NAN);
    for (int64_t k = 0; k < n * nrhs; k++)
      bb[b * n * nrhs + k] = tu_round(dtype, 2 * tu_uniform(&rng) - 1);
    for (int64_t j = 0; j < nrhs; j++)
      for (int64_t i = 0; i < n; i++) tu_set(&B.m, b, i, j, bb[b * n * nrhs + i + j * n]);
  }
  int64_t *info = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  gstat_status st = gstat_cholesky(ctx, &A.m, uplo, &F.m, info);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_true(tu_all_written(&F) && tu_outside_untouched(&F));
  assert_int_equal(gstat_cholesky_solve(ctx, &F.m, uplo, &B.m, &X.m, info), GSTAT_OK);
  assert_true(tu_all_written(&X) && tu_outside_untouched(&X));

  double *l = malloc(sizeof(double) * (size_t)(n * n + 1));
  double *x = malloc(sizeof(double) * (size_t)(n * nrhs + 1));
  for (int64_t b = 0; b < nb; b++) {
    assert_int_equal(info[b], 0);
    factor_as_lower(&F.m, b, uplo, l);
    double r = tu_chol_residual(n, a + b * n * n, l, ulp);
    tu_read(&X.m, b, x);
    double s = tu_solve_residual(n, nrhs, a + b * n * n, false, x, bb + b * n * nrhs, ulp);
    if (!(r <= max_ratio && s <= max_ratio))
      fprintf(stderr, "n=%lld chol residual %.3g solve residual %.3g\n", (long long)n, r, s);
    assert_true(r <= max_ratio);
    assert_true(s <= max_ratio);
  }
  free(l);
  free(x);
  free(a);
  free(bb);
  free(info);
  tu_buf_free(&A);
  tu_buf_free(&F);
  tu_buf_free(&B);
  tu_buf_free(&X);
}

static void sizes_for(gstat_dtype dtype) {
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  int k = 0;
  for (size_t s = 0; s < NSIZES; s++)
    for (int u = 0; u < 2; u++, k++) {
      if (tu_quick() && sizes[s] > 128) continue;
      chol_case(ctx, dtype, sizes[s], sizes[s] <= 64 ? 3 : 1, (gstat_uplo)u, (tu_layout)(k % 3),
                (tu_layout)((k / 3) % 3), 1 + k % 4);
    }
  gstat_ctx_destroy(ctx);
}

static void test_cholesky_f32(void **state) {
  (void)state;
  sizes_for(GSTAT_F32);
}

static void test_cholesky_f64(void **state) {
  (void)state;
  sizes_for(GSTAT_F64);
}

static void test_cholesky_batches(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t batches[] = {0, 1, 7, 1000};
  for (size_t i = 0; i < 4; i++)
    for (int u = 0; u < 2; u++)
      chol_case(ctx, GSTAT_F32, 32, tu_quick() && batches[i] > 7 ? 50 : batches[i], (gstat_uplo)u,
                TU_ROW_MAJOR, (tu_layout)(i % 3), 2);
  gstat_ctx_destroy(ctx);
}

/* Element 1 of 4 fails at minor 3, element 3 at minor 1: the others are
 * still factored, info names both, the message names the first. */
static void test_not_positive_definite(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t n = 5, nb = 4;
  double a[4 * 25], f[4 * 25];
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
  /* element 1: make the leading 3x3 block indefinite */
  a[25 + 2 + 2 * n] = -5;
  /* element 3: a negative first pivot */
  a[75] = -1;
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, nb, n, n);
  gstat_matrix F = gstat_matrix_col_major(f, GSTAT_F64, nb, n, n);
  int64_t info[4];
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &F, info), GSTAT_ENOTPD);
  assert_int_equal(info[0], 0);
  assert_int_equal(info[1], 3);
  assert_int_equal(info[2], 0);
  assert_int_equal(info[3], 1);
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "cholesky: batch element 1 is not positive definite (leading minor of order "
                      "3); 2 of 4 elements failed");
  double l[25];
  for (int64_t b = 0; b < nb; b += 2) {
    factor_as_lower(&F, b, GSTAT_LOWER, l);
    assert_true(tu_chol_residual(n, a + b * n * n, l, DBL_EPSILON) <= max_ratio);
  }
  for (int k = 0; k < 25; k++) assert_true(isnan(f[25 + k]) && isnan(f[75 + k]));
  gstat_ctx_destroy(ctx);
}

/* Failures spread over a batch of 200, at the edges of the dispatcher's
 * 64-element scan blocks and at both ends: info names each, the message
 * counts them all (the scan skips whole blocks of zeros). */
static void test_not_positive_definite_scattered(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t n = 3, nb = 200;
  const int64_t bad[] = {0, 63, 64, 130, 199};
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
  double *f = malloc(sizeof(double) * (size_t)(nb * n * n));
  int64_t *info = malloc(sizeof(int64_t) * (size_t)nb);
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) a[bad[k] * n * n] = -1;
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, nb, n, n);
  gstat_matrix F = gstat_matrix_col_major(f, GSTAT_F64, nb, n, n);
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &F, info), GSTAT_ENOTPD);
  for (int64_t b = 0, k = 0; b < nb; b++) {
    bool is_bad = k < 5 && b == bad[k];
    assert_int_equal(info[b], is_bad ? 1 : 0);
    k += is_bad;
  }
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "cholesky: batch element 0 is not positive definite (leading minor of order "
                      "1); 5 of 200 elements failed");
  free(a);
  free(f);
  free(info);
  gstat_ctx_destroy(ctx);
}

/* The same in batches long enough for the interleaved-lanes kernel (16 f32
 * or 8 f64 matrices at once) plus a remainder done one by one: failures in a
 * group and in the remainder, in place and not, both triangles, both dtypes. */
static void test_not_positive_definite_in_lane_groups(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t n = 6, nb = 37, bad[] = {3, 17, 35}, minor[] = {4, 1, 6};
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
  double *f = malloc(sizeof(double) * (size_t)(nb * n * n));
  float *af = malloc(sizeof(float) * (size_t)(nb * n * n));
  assert_non_null(a);
  assert_non_null(f);
  assert_non_null(af);
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
  for (int i = 0; i < 3; i++) { /* zero out the minor's last pivot: indefinite there */
    double *m = a + bad[i] * n * n;
    int64_t k = minor[i] - 1;
    m[k + k * n] = -100;
  }
  for (int dt = 0; dt < 2; dt++)
    for (int u = 0; u < 2; u++)
      for (int in_place = 0; in_place < 2; in_place++) {
        int64_t info[37];
        gstat_status st;
        if (dt == 0) {
          memcpy(f, a, sizeof(double) * (size_t)(nb * n * n));
          gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, nb, n, n);
          gstat_matrix F = gstat_matrix_row_major(f, GSTAT_F64, nb, n, n);
          st = gstat_cholesky(ctx, in_place ? &F : &A, (gstat_uplo)u, &F, info);
        } else {
          for (int64_t i = 0; i < nb * n * n; i++) af[i] = (float)a[i];
          float *ff = (float *)f;
          if (in_place) memcpy(ff, af, sizeof(float) * (size_t)(nb * n * n));
          gstat_matrix A = gstat_matrix_row_major(af, GSTAT_F32, nb, n, n);
          gstat_matrix F = gstat_matrix_row_major(ff, GSTAT_F32, nb, n, n);
          st = gstat_cholesky(ctx, in_place ? &F : &A, (gstat_uplo)u, &F, info);
        }
        assert_int_equal(st, GSTAT_ENOTPD);
        for (int64_t b = 0, j = 0; b < nb; b++) {
          bool failed = j < 3 && b == bad[j];
          assert_int_equal(info[b], failed ? minor[j] : 0);
          for (int64_t e = 0; e < n * n; e++) {
            double v = dt == 0 ? f[b * n * n + e] : (double)((float *)f)[b * n * n + e];
            if (failed)
              assert_true(isnan(v));
            else
              assert_false(isnan(v));
          }
          if (failed) j++;
        }
        /* the good ones are right factors: check element 0 and 36 */
        for (int64_t b = 0; b < nb; b += 36) {
          double l[36];
          for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
              int64_t at = b * n * n + (u == GSTAT_LOWER ? i * n + j : j * n + i);
              l[i + j * n] = j > i ? 0 : dt == 0 ? f[at] : (double)((float *)f)[at];
            }
          /* a is symmetric, so its row-major storage is its column-major one */
          assert_true(tu_chol_residual(n, a + b * n * n, l, dt == 0 ? DBL_EPSILON : FLT_EPSILON) <=
                      max_ratio);
        }
      }
  free(a);
  free(f);
  free(af);
  gstat_ctx_destroy(ctx);
}

/* Triangular solves, all uplo x trans x diag combinations. */
static void test_triangular_solve(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t ns[] = {1, 7, 64, 150};
  int k = 0;
  for (size_t s = 0; s < 4; s++)
    for (int u = 0; u < 2; u++)
      for (int t = 0; t < 2; t++)
        for (int d = 0; d < 2; d++, k++) {
          int64_t n = ns[s], nb = 2, nrhs = 3;
          gstat_dtype dt = k % 2 ? GSTAT_F64 : GSTAT_F32;
          double ulp = ulp_of(dt);
          tu_rng rng = tu_rng_new();
          tu_buf T = tu_buf_new(dt, nb, n, n, (tu_layout)(k % 3));
          tu_buf B = tu_buf_new(dt, nb, n, nrhs, TU_ROW_MAJOR);
          tu_buf X = tu_buf_new(dt, nb, n, nrhs, (tu_layout)((k + 1) % 3));
          double *m = malloc(sizeof(double) * (size_t)(n * n)),
                 *x = malloc(sizeof(double) * (size_t)(n * nrhs));
          double *bb = malloc(sizeof(double) * (size_t)(nb * n * nrhs));
          for (int64_t b = 0; b < nb; b++) {
            for (int64_t j = 0; j < n; j++)
              for (int64_t i = 0; i < n; i++) {
                bool in = u == GSTAT_LOWER ? i >= j : i <= j;
                double v = i == j ? (d ? 1 : tu_round(dt, 2 + tu_uniform(&rng)))
                                  : tu_round(dt, (2 * tu_uniform(&rng) - 1) / (double)n);
                tu_set(&T.m, b, i, j, in ? (i == j && d ? NAN : v) : NAN); /* unread parts: NaN */
              }
            for (int64_t q = 0; q < n * nrhs; q++)
              bb[b * n * nrhs + q] = tu_round(dt, tu_normal(&rng));
            for (int64_t j = 0; j < nrhs; j++)
              for (int64_t i = 0; i < n; i++) tu_set(&B.m, b, i, j, bb[b * n * nrhs + i + j * n]);
          }
          gstat_status st = gstat_triangular_solve(ctx, &T.m, (gstat_uplo)u, (gstat_trans)t,
                                                   (gstat_diag)d, &B.m, &X.m, NULL);
          if (st) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
          assert_int_equal(st, GSTAT_OK);
          assert_true(tu_all_written(&X) && tu_outside_untouched(&X));
          for (int64_t b = 0; b < nb; b++) {
            for (int64_t j = 0; j < n; j++)
              for (int64_t i = 0; i < n; i++) {
                bool in = u == GSTAT_LOWER ? i >= j : i <= j;
                m[i + j * n] = !in ? 0 : (i == j && d) ? 1 : tu_get(&T.m, b, i, j);
              }
            tu_read(&X.m, b, x);
            double r = tu_solve_residual(n, nrhs, m, t == GSTAT_TRANS, x, bb + b * n * nrhs, ulp);
            if (!(r <= max_ratio))
              fprintf(stderr, "trsolve n=%lld u%d t%d d%d ratio %.3g\n", (long long)n, u, t, d, r);
            assert_true(r <= max_ratio);
          }
          free(m);
          free(x);
          free(bb);
          tu_buf_free(&T);
          tu_buf_free(&B);
          tu_buf_free(&X);
        }
  gstat_ctx_destroy(ctx);
}

/* Solves in place (X is B), and a singular factor is reported per element. */
static void test_solve_in_place_and_singular(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  double l[2 * 4] = {2, 1, 0, 4, /* second: zero at diagonal entry 2 */ 1, 1, 0, 0};
  double b[2 * 2] = {2, 6, 1, 1};
  gstat_matrix L = gstat_matrix_col_major(l, GSTAT_F64, 2, 2, 2);
  gstat_matrix B = gstat_matrix_col_major(b, GSTAT_F64, 2, 2, 1);
  int64_t info[2];
  assert_int_equal(
      gstat_triangular_solve(ctx, &L, GSTAT_LOWER, GSTAT_NO_TRANS, GSTAT_NON_UNIT, &B, &B, info),
      GSTAT_ESINGULAR);
  assert_int_equal(info[0], 0);
  assert_int_equal(info[1], 2);
  assert_true(b[0] == 1 && b[1] == 1.25); /* [2 0; 1 4] x = [2; 6] */
  assert_true(isnan(b[2]) && isnan(b[3]));
  assert_string_equal(
      gstat_ctx_last_error(ctx),
      "triangular_solve: batch element 1 has a singular triangle (zero diagonal entry 2)");
  gstat_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cholesky_f32),
      cmocka_unit_test(test_cholesky_f64),
      cmocka_unit_test(test_cholesky_batches),
      cmocka_unit_test(test_not_positive_definite),
      cmocka_unit_test(test_not_positive_definite_scattered),
      cmocka_unit_test(test_not_positive_definite_in_lane_groups),
      cmocka_unit_test(test_triangular_solve),
      cmocka_unit_test(test_solve_in_place_and_singular),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
