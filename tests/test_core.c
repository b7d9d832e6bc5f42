/* Core: status strings, bf16 rounding, descriptor helpers, allocator hooks
 * and the cached workspace (a loop of same-shape calls allocates nothing). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dlfcn.h>

#include "testutil.h"

static void test_status_strings(void **state) {
  (void)state;
  for (int s = GSTAT_OK; s <= GSTAT_ECANCELED; s++) {
    const char *str = gstat_status_string((gstat_status)s);
    assert_non_null(str);
    assert_true(strncmp(str, "GSTAT_", 6) == 0);
  }
  assert_string_equal(gstat_status_string(GSTAT_ENOTPD),
                      "GSTAT_ENOTPD: matrix not positive definite");
  assert_string_equal(gstat_status_string((gstat_status)1234), "GSTAT_E?: unknown status");
  assert_string_equal(gstat_version_string(), "0.1.0");
}

static void test_bf16_rounding(void **state) {
  (void)state;
  assert_int_equal(gstat_f32_to_bf16(1.0f), 0x3f80);
  /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to even (1) */
  assert_int_equal(gstat_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  /* 1 + 3 * 2^-8 is a tie between 1 + 2^-7 (odd) and 1 + 2^-6: to even (up) */
  assert_int_equal(gstat_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  /* just above a tie rounds up */
  assert_int_equal(gstat_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  assert_int_equal(gstat_f32_to_bf16(-2.0f), 0xc000);
  assert_true(isnan(gstat_bf16_to_f32(gstat_f32_to_bf16(NAN))));
  assert_true(isinf(gstat_bf16_to_f32(gstat_f32_to_bf16(INFINITY))));
  assert_true(isinf(gstat_bf16_to_f32(gstat_f32_to_bf16(3.4e38f)))); /* overflow rounds to inf */
  for (uint32_t h = 0; h < 0x7f80; h += 7)
    assert_int_equal(gstat_f32_to_bf16(gstat_bf16_to_f32((uint16_t)h)), h);
}

static void test_descriptor_helpers(void **state) {
  (void)state;
  float x[24];
  gstat_matrix r = gstat_matrix_row_major(x, GSTAT_F32, 2, 3, 4);
  assert_true(r.row_stride == 4 && r.col_stride == 1 && r.batch_stride == 12 &&
              r.location == GSTAT_HOST);
  gstat_matrix c = gstat_matrix_col_major(x, GSTAT_F32, 2, 3, 4);
  assert_true(c.row_stride == 1 && c.col_stride == 3 && c.batch_stride == 12);
  gstat_matrix v = gstat_vector_batch(x, GSTAT_F32, 4, 6);
  assert_true(v.rows == 6 && v.cols == 1 && v.row_stride == 1 && v.batch_stride == 6);
  assert_int_equal(gstat_dtype_size(GSTAT_BF16), 2);
  assert_int_equal(gstat_dtype_size((gstat_dtype)0), 0);
}

/* A counting allocator: every byte the library asks for passes through it. */

static void test_workspace_reuse(void **state) {
  (void)state;
  tu_alloc_counter cnt = {0};
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.allocator = tu_counting_allocator(&cnt);
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_OK);
  assert_int_equal(cnt.allocs, 1); /* the context itself */

  const int64_t shapes[][2] = {{64, 16}, {3, 200}}; /* (batch, n): small kernel and LAPACK */
  for (int s = 0; s < 2; s++) {
    int64_t nb = shapes[s][0], n = shapes[s][1];
    tu_rng rng = tu_rng_new();
    double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
           *w = malloc(sizeof(double) * (size_t)(nb * n));
    double *v = malloc(sizeof(double) * (size_t)(nb * n * n)),
           *rhs = malloc(sizeof(double) * (size_t)(nb * n * 2));
    for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
    for (int64_t k = 0; k < nb * n * 2; k++) rhs[k] = tu_normal(&rng);
    gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, nb, n, n);
    gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, nb, n);
    gstat_matrix V = gstat_matrix_col_major(v, GSTAT_F64, nb, n, n);
    gstat_matrix B = gstat_matrix_col_major(rhs, GSTAT_F64, nb, n, 2);
    int64_t before = 0;
    for (int rep = 0; rep < 6; rep++) {
      assert_int_equal(gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, NULL), GSTAT_OK);
      assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &V, NULL), GSTAT_OK);
      assert_int_equal(gstat_cholesky_solve(ctx, &V, GSTAT_LOWER, &B, &B, NULL), GSTAT_OK);
      if (rep == 0) before = cnt.allocs;
    }
    assert_true(before > 1);              /* the first call did allocate its workspace... */
    assert_int_equal(cnt.allocs, before); /* ...and the next five calls nothing */
    free(a);
    free(w);
    free(v);
    free(rhs);
  }
  gstat_ctx_release_workspace(ctx);
  gstat_ctx_destroy(ctx);
  assert_int_equal(cnt.allocs, cnt.frees);
  assert_int_equal(cnt.live, 0);
  assert_int_equal(cnt.bad_alignment, 0); /* every request a power of two >= 16 */
}

/* An allocator that fails: the call reports GSTAT_ENOMEM and writes nothing. */
static void *failing_alloc(size_t size, size_t align, void *user) {
  int *budget = user;
  if (*budget <= 0) return NULL;
  (*budget)--;
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void plain_free(void *p, size_t size, void *user) {
  (void)size;
  (void)user;
  free(p);
}

static void test_out_of_memory(void **state) {
  (void)state;
  int budget = 1; /* the context only */
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.allocator.alloc = failing_alloc;
  opt.allocator.free = plain_free;
  opt.allocator.user = &budget;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_OK);
  tu_buf A = tu_buf_new(GSTAT_F32, 2, 8, 8, TU_COL_MAJOR);
  tu_buf W = tu_buf_new(GSTAT_F32, 2, 8, 1, TU_COL_MAJOR);
  for (int64_t b = 0; b < 2; b++)
    for (int64_t i = 0; i < 8; i++)
      for (int64_t j = 0; j < 8; j++) tu_set(&A.m, b, i, j, i == j);
  int64_t info[2] = {-5, -5};
  assert_int_equal(gstat_eigh(ctx, &A.m, GSTAT_LOWER, &W.m, NULL, info), GSTAT_ENOMEM);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "eigh: cannot allocate"));
  assert_true(tu_untouched(&W));
  assert_int_equal(gstat_cholesky(ctx, &A.m, GSTAT_LOWER, &A.m, NULL), GSTAT_ENOMEM);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "cholesky: cannot allocate the info array"));
  budget = 0;
  gstat_ctx *ctx2 = NULL;
  assert_int_equal(gstat_ctx_create(&ctx2, &opt), GSTAT_ENOMEM);
  assert_null(ctx2);
  gstat_ctx_destroy(ctx);
  tu_buf_free(&A);
  tu_buf_free(&W);
}

/* A DYNAMIC_ARCH OpenBLAS that fell back to its generic Prescott kernels on a
 * CPU with AVX2/AVX-512 has been switched to the matching kernels by the
 * first context (src/backend/cpu/openblas_core.c). */
static void test_openblas_kernels_not_generic(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  char *(*corename)(void);
  *(void **)&corename = dlsym(RTLD_DEFAULT, "openblas_get_corename");
  if (!corename || !dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init")) {
    gstat_ctx_destroy(ctx);
    skip(); /* not a DYNAMIC_ARCH OpenBLAS: nothing to check */
  }
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      !getenv("OPENBLAS_CORETYPE") && !getenv("GSTAT_OPENBLAS_CORETYPE"))
    assert_string_not_equal(corename(), "Prescott");
#endif
  gstat_ctx_destroy(ctx);
}

static int64_t progress_calls;
static int stop_at_second(int64_t done, int64_t total, const char *what, void *user) {
  (void)user;
  assert_true(done > 0 && done <= total);
  assert_true(strcmp(what, "eigh") == 0 || strcmp(what, "cholesky") == 0);
  return ++progress_calls >= 2;
}

/* The CPU batch loop reports progress between slices (of about 20 ms of
 * work: cpu_rules.slice_seconds) and can be cancelled. */
static void test_linalg_progress_cancel(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, stop_at_second, NULL);
  assert_non_null(ctx);
  enum { NB = 200, N = 96 };
  double *a = calloc(NB * N * N, sizeof(double)), *w = calloc(NB * N, sizeof(double));
  assert_non_null(a);
  assert_non_null(w);
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++) a[b * N * N + i * N + i] = 1 + i;
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, N);
  progress_calls = 0;
  assert_int_equal(gstat_eigh(ctx, &A, GSTAT_LOWER, &W, NULL, NULL), GSTAT_ECANCELED);
  assert_int_equal(progress_calls, 2);
  assert_true(
      strncmp(gstat_ctx_last_error(ctx), "eigh: cancelled by the progress callback at ", 44) == 0);
  progress_calls = -100; /* no stop: the whole batch, reported in slices */
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &A, NULL), GSTAT_OK);
  assert_true(progress_calls > -100);
  free(a);
  free(w);
  gstat_ctx_destroy(ctx);
}

static int64_t first_report;
static int stop_at_first(int64_t done, int64_t total, const char *what, void *user) {
  (void)total;
  (void)what;
  (void)user;
  first_report = done;
  return 1;
}

/* A long CPU batch reports after at most about a quarter second of
 * one-thread work (cpu_rules.slice_max_seconds), not in 16 slices whatever
 * its length: 100 eigh of order 256 (~5 s by the rules) report every 5. */
static void test_linalg_progress_slices_bounded(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 1, stop_at_first, NULL);
  assert_non_null(ctx);
  enum { NB = 100, N = 256 };
  double *a = calloc((size_t)NB * N * N, sizeof(double)), *w = calloc(NB * N, sizeof(double));
  double *v = calloc((size_t)NB * N * N, sizeof(double));
  assert_true(a && w && v);
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++) a[(size_t)b * N * N + (size_t)i * N + i] = 1 + i;
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, N);
  gstat_matrix V = gstat_matrix_col_major(v, GSTAT_F64, NB, N, N);
  first_report = 0;
  assert_int_equal(gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, NULL), GSTAT_ECANCELED);
  assert_true(first_report > 0 && first_report * 16 < NB);
  free(a);
  free(w);
  free(v);
  gstat_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_strings),
      cmocka_unit_test(test_bf16_rounding),
      cmocka_unit_test(test_descriptor_helpers),
      cmocka_unit_test(test_workspace_reuse),
      cmocka_unit_test(test_out_of_memory),
      cmocka_unit_test(test_openblas_kernels_not_generic),
      cmocka_unit_test(test_linalg_progress_cancel),
      cmocka_unit_test(test_linalg_progress_slices_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
