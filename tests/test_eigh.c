/* gstat_eigh: LAPACK's accuracy ratios over matrix families, sizes, batches,
 * layouts, triangles and dtypes; outputs fully written and nothing else. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
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

/* Fill the triangle that is not read with NaN: it must be ignored. */
static void poison_unread(tu_buf *a, int64_t b, gstat_uplo uplo) {
  int64_t n = a->m.rows;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++)
      if ((uplo == GSTAT_LOWER && i < j) || (uplo == GSTAT_UPPER && i > j))
        tu_set(&a->m, b, i, j, NAN);
}

/* Largest-magnitude entry of each column positive (first on ties). */
static void assert_signs(int64_t n, const double *v) {
  for (int64_t j = 0; j < n; j++) {
    int64_t at = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(v[i + j * n]) > fabs(v[at + j * n])) at = i;
    assert_true(v[at + j * n] > 0);
  }
}

typedef struct {
  gstat_dtype dtype;
  tu_family family;
  int64_t n, batch;
  gstat_uplo uplo;
  tu_layout in_layout, out_layout;
} eig_case;

/* Runs one case: with vectors and values only; checks every ratio. */
static void run_case(gstat_ctx *ctx, const eig_case *c) {
  int64_t n = c->n, nb = c->batch;
  double ulp = ulp_of(c->dtype);
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(c->dtype, nb, n, n, c->in_layout);
  tu_buf W = tu_buf_new(c->dtype, nb, n, 1, c->out_layout);
  tu_buf W2 = tu_buf_new(c->dtype, nb, n, 1, TU_COL_MAJOR);
  tu_buf V = tu_buf_new(c->dtype, nb, n, n, c->out_layout);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n + 1));
  for (int64_t b = 0; b < nb; b++) {
    tu_symmetric(&rng, c->family, n, ulp, c->dtype != GSTAT_F64, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n);
    poison_unread(&A, b, c->uplo);
  }
  unsigned char *a_before = malloc(A.raw_bytes);
  memcpy(a_before, A.raw, A.raw_bytes);
  int64_t *info = malloc(sizeof(int64_t) * (size_t)(nb + 1));

  gstat_status st = gstat_eigh(ctx, &A.m, c->uplo, &W.m, &V.m, info);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_int_equal(gstat_eigh(ctx, &A.m, c->uplo, &W2.m, NULL, NULL), GSTAT_OK);
  assert_memory_equal(a_before, A.raw, A.raw_bytes); /* input untouched */
  assert_true(tu_all_written(&W) && tu_all_written(&V) && tu_all_written(&W2));
  assert_true(tu_outside_untouched(&W) && tu_outside_untouched(&V) && tu_outside_untouched(&W2));

  double *w = malloc(sizeof(double) * (size_t)(n + 1)),
         *w2 = malloc(sizeof(double) * (size_t)(n + 1));
  double *v = malloc(sizeof(double) * (size_t)(n * n + 1));
  double anorm_ulp_n;
  for (int64_t b = 0; b < nb; b++) {
    assert_int_equal(info[b], 0);
    tu_read(&W.m, b, w);
    tu_read(&W2.m, b, w2);
    tu_read(&V.m, b, v);
    double res = tu_eig_residual(n, a + b * n * n, w, v, ulp);
    double orth = tu_orthogonality(n, v, ulp);
    if (!(res <= max_ratio && orth <= max_ratio))
      fprintf(stderr, "%s n=%lld %s residual %.3g orthogonality %.3g\n", tu_family_name(c->family),
              (long long)n, c->dtype == GSTAT_F64 ? "f64" : "f32", res, orth);
    assert_true(res <= max_ratio);
    assert_true(orth <= max_ratio);
    for (int64_t i = 1; i < n; i++) assert_true(w[i - 1] <= w[i]);
    assert_signs(n, v);
    /* values only agrees with values + vectors */
    double anorm = 0;
    for (int64_t i = 0; i < n; i++) anorm = fmax(anorm, fabs(w[i]));
    anorm_ulp_n = fmax(anorm, DBL_MIN) * (double)n * ulp;
    for (int64_t i = 0; i < n; i++) assert_true(fabs(w[i] - w2[i]) <= max_ratio * anorm_ulp_n);
  }
  free(w);
  free(w2);
  free(v);
  free(a);
  free(a_before);
  free(info);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&W2);
  tu_buf_free(&V);
}

/* Every family x size, rotating through layouts and triangles. */
static void families_and_sizes(gstat_dtype dtype) {
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  int k = 0;
  for (int f = 0; f < TU_FAMILY_COUNT; f++)
    for (size_t s = 0; s < NSIZES; s++, k++) {
      if (tu_quick() && sizes[s] > 128) continue;
      eig_case c = {dtype,
                    (tu_family)f,
                    sizes[s],
                    sizes[s] <= 64 ? 3 : 1,
                    k % 2 ? GSTAT_UPPER : GSTAT_LOWER,
                    (tu_layout)(k % 3),
                    (tu_layout)((k / 3) % 3)};
      run_case(ctx, &c);
    }
  gstat_ctx_destroy(ctx);
}

static void test_families_f32(void **state) {
  (void)state;
  families_and_sizes(GSTAT_F32);
}

static void test_families_f64(void **state) {
  (void)state;
  families_and_sizes(GSTAT_F64);
}

/* Batches 0, 1, 7, 1000, every layout pair and both triangles. */
static void test_batches_and_layouts(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const int64_t batches[] = {0, 1, 7, 1000};
  for (size_t i = 0; i < 4; i++)
    for (int lin = 0; lin < TU_LAYOUT_COUNT; lin++)
      for (int lout = 0; lout < TU_LAYOUT_COUNT; lout++)
        for (int u = 0; u < 2; u++) {
          int64_t nb = batches[i];
          if (nb == 1000 && (lin != lout || tu_quick())) nb = 40;
          eig_case c = {lin == 2 ? GSTAT_F64 : GSTAT_F32,
                        TU_RANDOM,
                        20,
                        nb,
                        (gstat_uplo)u,
                        (tu_layout)lin,
                        (tu_layout)lout};
          run_case(ctx, &c);
        }
  gstat_ctx_destroy(ctx);
}

/* V given as A itself (in place), row- and column-major. */
static void test_in_place(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  for (int layout = 0; layout < TU_LAYOUT_COUNT; layout++)
    for (int64_t n = 1; n <= 130; n += 43) {
      tu_rng rng = tu_rng_new();
      int64_t nb = 3;
      tu_buf A = tu_buf_new(GSTAT_F64, nb, n, n, (tu_layout)layout);
      tu_buf W = tu_buf_new(GSTAT_F64, nb, n, 1, TU_COL_MAJOR);
      double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
      double *w = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)(n * n));
      for (int64_t b = 0; b < nb; b++) {
        tu_symmetric(&rng, TU_RANDOM, n, DBL_EPSILON, false, a + b * n * n);
        tu_store_matrix(&A, b, a + b * n * n);
      }
      assert_int_equal(gstat_eigh(ctx, &A.m, GSTAT_LOWER, &W.m, &A.m, NULL), GSTAT_OK);
      for (int64_t b = 0; b < nb; b++) {
        tu_read(&W.m, b, w);
        tu_read(&A.m, b, v);
        assert_true(tu_eig_residual(n, a + b * n * n, w, v, DBL_EPSILON) <= max_ratio);
        assert_true(tu_orthogonality(n, v, DBL_EPSILON) <= max_ratio);
      }
      assert_true(tu_outside_untouched(&A));
      free(a);
      free(w);
      free(v);
      tu_buf_free(&A);
      tu_buf_free(&W);
    }
  gstat_ctx_destroy(ctx);
}

/* bf16 (and any narrower output) is the float32 result on the bf16-rounded
 * input, rounded to nearest even: exactly, element by element. The residual
 * of the bf16 output, in bf16 ulps (2^-7), is reported and bounded. */
static void test_bf16(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  const double bf16_ulp = 0x1p-7, bound = 4;
  const int64_t ns[] = {1, 5, 32, 100};
  for (size_t k = 0; k < 4; k++) {
    int64_t n = ns[k], nb = 4;
    tu_rng rng = tu_rng_new();
    tu_buf A16 = tu_buf_new(GSTAT_BF16, nb, n, n, TU_ROW_MAJOR);
    tu_buf A32 = tu_buf_new(GSTAT_F32, nb, n, n, TU_ROW_MAJOR);
    tu_buf W16 = tu_buf_new(GSTAT_BF16, nb, n, 1, TU_COL_MAJOR);
    tu_buf V16 = tu_buf_new(GSTAT_BF16, nb, n, n, TU_COL_MAJOR);
    tu_buf W32 = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR);
    tu_buf V32 = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
    tu_buf Wmix = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR);
    double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
    for (int64_t b = 0; b < nb; b++) {
      tu_symmetric(&rng, TU_RANDOM, n, FLT_EPSILON, true, a + b * n * n);
      tu_store_matrix(&A16, b, a + b * n * n); /* a now holds the bf16 values */
      tu_store_matrix(&A32, b, a + b * n * n);
    }
    assert_int_equal(gstat_eigh(ctx, &A16.m, GSTAT_LOWER, &W16.m, &V16.m, NULL), GSTAT_OK);
    assert_int_equal(gstat_eigh(ctx, &A32.m, GSTAT_LOWER, &W32.m, &V32.m, NULL), GSTAT_OK);
    assert_int_equal(gstat_eigh(ctx, &A16.m, GSTAT_LOWER, &Wmix.m, NULL, NULL), GSTAT_OK);
    double worst = 0;
    double *w = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)(n * n));
    for (int64_t b = 0; b < nb; b++) {
      for (int64_t i = 0; i < n; i++) {
        assert_true(tu_get(&W16.m, b, i, 0) == tu_round(GSTAT_BF16, tu_get(&W32.m, b, i, 0)));
        for (int64_t j = 0; j < n; j++)
          assert_true(tu_get(&V16.m, b, i, j) == tu_round(GSTAT_BF16, tu_get(&V32.m, b, i, j)));
      }
      tu_read(&W16.m, b, w);
      tu_read(&V16.m, b, v);
      worst = fmax(worst, tu_eig_residual(n, a + b * n * n, w, v, bf16_ulp));
      worst = fmax(worst, tu_orthogonality(n, v, bf16_ulp));
      for (int64_t i = 0; i < n; i++) /* eigenvalues-only with f32 output: same as f32 input */
        assert_true(fabs(tu_get(&Wmix.m, b, i, 0) - tu_get(&W32.m, b, i, 0)) <=
                    max_ratio * (double)n * FLT_EPSILON * fmax(1, fabs(tu_get(&W32.m, b, i, 0))));
    }
    fprintf(stderr, "# bf16 n=%lld: worst residual/orthogonality %.3f bf16 ulps*n (bound %.0f)\n",
            (long long)n, worst, bound);
    assert_true(worst <= bound);
    free(w);
    free(v);
    free(a);
    tu_buf_free(&A16);
    tu_buf_free(&A32);
    tu_buf_free(&W16);
    tu_buf_free(&V16);
    tu_buf_free(&W32);
    tu_buf_free(&V32);
    tu_buf_free(&Wmix);
  }
  gstat_ctx_destroy(ctx);
}

/* Known answer: diag(3, 1, 2) gives 1, 2, 3 and unit vectors, signs positive. */
static void test_known_diagonal(void **state) {
  (void)state;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  double a[9] = {3, 0, 0, 0, 1, 0, 0, 0, 2}, w[3], v[9];
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 1, 3, 3);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, 3);
  gstat_matrix V = gstat_matrix_row_major(v, GSTAT_F64, 1, 3, 3);
  assert_int_equal(gstat_eigh(ctx, &A, GSTAT_UPPER, &W, &V, NULL), GSTAT_OK);
  assert_true(w[0] == 1 && w[1] == 2 && w[2] == 3);
  /* column j of V (row-major) is the eigenvector of w[j] */
  const double expect[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
  for (int i = 0; i < 9; i++) assert_true(fabs(v[i] - expect[i]) < 1e-15);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cpu");
  gstat_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_diagonal), cmocka_unit_test(test_families_f32),
      cmocka_unit_test(test_families_f64),   cmocka_unit_test(test_batches_and_layouts),
      cmocka_unit_test(test_in_place),       cmocka_unit_test(test_bf16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
