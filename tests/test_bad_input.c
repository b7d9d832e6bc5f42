/* Bad input, one table row per case: the status, the message, and that no
 * output (nor info) was written. Leaks on these paths are caught by the
 * sanitizer and valgrind runs of this same program. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

typedef struct {
  gstat_ctx *ctx;
  tu_buf A, W, V, F, B, X;
  gstat_matrix a, w, v, f, b, x; /* descriptors the cases may bend */
  int64_t info[2];
} fixture;

static void fixture_init(fixture *fx) {
  memset(fx, 0, sizeof *fx);
  assert_int_equal(gstat_ctx_create(&fx->ctx, NULL), GSTAT_OK);
  fx->A = tu_buf_new(GSTAT_F64, 2, 3, 3, TU_ROW_MAJOR);
  fx->W = tu_buf_new(GSTAT_F64, 2, 3, 1, TU_COL_MAJOR);
  fx->V = tu_buf_new(GSTAT_F64, 2, 3, 3, TU_ROW_MAJOR);
  fx->F = tu_buf_new(GSTAT_F64, 2, 3, 3, TU_ROW_MAJOR);
  fx->B = tu_buf_new(GSTAT_F64, 2, 3, 2, TU_ROW_MAJOR);
  fx->X = tu_buf_new(GSTAT_F64, 2, 3, 2, TU_ROW_MAJOR);
  for (int64_t b = 0; b < 2; b++)
    for (int64_t i = 0; i < 3; i++) {
      for (int64_t j = 0; j < 3; j++) tu_set(&fx->A.m, b, i, j, i == j ? 4.0 : 1.0);
      for (int64_t j = 0; j < 2; j++) tu_set(&fx->B.m, b, i, j, 1.0);
    }
  /* the factor input of the solves is A itself (SPD, a valid triangle) */
  fx->a = fx->A.m;
  fx->w = fx->W.m;
  fx->v = fx->V.m;
  fx->f = fx->F.m;
  fx->b = fx->B.m;
  fx->x = fx->X.m;
  fx->info[0] = fx->info[1] = -77;
}

static void fixture_free(fixture *fx) {
  gstat_ctx_destroy(fx->ctx);
  tu_buf_free(&fx->A);
  tu_buf_free(&fx->W);
  tu_buf_free(&fx->V);
  tu_buf_free(&fx->F);
  tu_buf_free(&fx->B);
  tu_buf_free(&fx->X);
}

static gstat_status eigh(fixture *fx) {
  return gstat_eigh(fx->ctx, &fx->a, GSTAT_LOWER, &fx->w, &fx->v, fx->info);
}
static gstat_status chol(fixture *fx) {
  return gstat_cholesky(fx->ctx, &fx->a, GSTAT_LOWER, &fx->f, fx->info);
}
static gstat_status csolve(fixture *fx) {
  return gstat_cholesky_solve(fx->ctx, &fx->a, GSTAT_LOWER, &fx->b, &fx->x, fx->info);
}
static gstat_status tsolve(fixture *fx) {
  return gstat_triangular_solve(fx->ctx, &fx->a, GSTAT_LOWER, GSTAT_NO_TRANS, GSTAT_NON_UNIT,
                                &fx->b, &fx->x, fx->info);
}

/* Each case bends the fixture and makes one call. */
#define CASE(name, ...)                   \
  static gstat_status name(fixture *fx) { \
    __VA_ARGS__;                          \
  }

CASE(eigh_null_ctx, return gstat_eigh(NULL, &fx->a, GSTAT_LOWER, &fx->w, &fx->v, fx->info))
CASE(eigh_null_a, return gstat_eigh(fx->ctx, NULL, GSTAT_LOWER, &fx->w, &fx->v, fx->info))
CASE(eigh_null_w, return gstat_eigh(fx->ctx, &fx->a, GSTAT_LOWER, NULL, &fx->v, fx->info))
CASE(eigh_null_data, fx->a.data = NULL; return eigh(fx))
CASE(eigh_negative_rows, fx->a.rows = -1; return eigh(fx))
CASE(eigh_negative_batch, fx->a.batch = -2; return eigh(fx))
CASE(eigh_zero_col_stride, fx->a.col_stride = 0; return eigh(fx))
CASE(eigh_negative_row_stride, fx->v.row_stride = -3; return eigh(fx))
CASE(eigh_overlapping_strides, fx->a.row_stride = 1; fx->a.col_stride = 1; return eigh(fx))
CASE(eigh_overlapping_batch, fx->a.batch_stride = 4; return eigh(fx))
CASE(eigh_not_square, fx->a.cols = 2; return eigh(fx))
CASE(eigh_w_shape, fx->w.rows = 2; return eigh(fx))
CASE(eigh_w_batch, fx->w.batch = 1; return eigh(fx))
CASE(eigh_v_shape, fx->v.batch = 1; return eigh(fx))
CASE(eigh_w_overlaps_a, fx->w.data = fx->a.data; return eigh(fx))
CASE(eigh_v_overlaps_a, fx->v.data = (double *)fx->a.data + 1; return eigh(fx))
CASE(eigh_v_overlaps_w, fx->v.data = fx->w.data; return eigh(fx))
CASE(eigh_span_overflow, fx->a.batch_stride = INT64_MAX / 2; return eigh(fx))
CASE(eigh_order_overflow, fx->a.rows = fx->a.cols = (int64_t)1 << 40;
     fx->a.row_stride = (int64_t)1 << 40; fx->a.batch_stride = 1; fx->a.batch = 1; return eigh(fx))
CASE(eigh_order_too_large, fx->a.rows = fx->a.cols = (int64_t)INT32_MAX + 1; fx->a.batch = 0;
     fx->w.batch = 0; fx->v.batch = 0; return eigh(fx))
CASE(eigh_bad_dtype, fx->a.dtype = (gstat_dtype)99; return eigh(fx))
CASE(eigh_bad_location, fx->w.location = (gstat_location)5; return eigh(fx))
CASE(eigh_bad_uplo, return gstat_eigh(fx->ctx, &fx->a, (gstat_uplo)7, &fx->w, &fx->v, fx->info))
CASE(eigh_mixed_memory, fx->w.location = GSTAT_CUDA; return eigh(fx))
CASE(eigh_device_memory, fx->a.location = fx->w.location = fx->v.location = GSTAT_CUDA;
     setenv("GSTAT_CUDA_MODULE", "/nonexistent/libgstat_cuda.so.0", 1); return eigh(fx))
CASE(eigh_nan, tu_set(&fx->a, 1, 2, 1, NAN); return eigh(fx))
CASE(eigh_inf_upper, tu_set(&fx->a, 0, 0, 2, INFINITY);
     return gstat_eigh(fx->ctx, &fx->a, GSTAT_UPPER, &fx->w, &fx->v, fx->info))
CASE(chol_null_f, return gstat_cholesky(fx->ctx, &fx->a, GSTAT_LOWER, NULL, fx->info))
CASE(chol_f_shape, fx->f.batch = 1; return chol(fx))
CASE(chol_f_overlaps_a, fx->f.data = (double *)fx->a.data + 2; return chol(fx))
CASE(chol_bad_uplo, return gstat_cholesky(fx->ctx, &fx->a, (gstat_uplo)-1, &fx->f, fx->info))
CASE(chol_nan, tu_set(&fx->a, 0, 1, 0, NAN); return chol(fx))
CASE(csolve_b_rows, fx->b.rows = 2; return csolve(fx))
CASE(csolve_null_x,
     return gstat_cholesky_solve(fx->ctx, &fx->a, GSTAT_LOWER, &fx->b, NULL, fx->info))
CASE(csolve_x_shape, fx->x.cols = 1; return csolve(fx))
CASE(csolve_x_overlaps_f, fx->x.data = fx->a.data; return csolve(fx))
CASE(csolve_nan_b, tu_set(&fx->b, 1, 0, 1, NAN); return csolve(fx))
CASE(tsolve_bad_trans, return gstat_triangular_solve(fx->ctx, &fx->a, GSTAT_LOWER, (gstat_trans)5,
                                                     GSTAT_NON_UNIT, &fx->b, &fx->x, fx->info))
CASE(tsolve_bad_diag, return gstat_triangular_solve(fx->ctx, &fx->a, GSTAT_LOWER, GSTAT_NO_TRANS,
                                                    (gstat_diag)9, &fx->b, &fx->x, fx->info))
CASE(tsolve_b_batch, fx->b.batch = 3; return tsolve(fx))

typedef struct {
  const char *name;
  gstat_status (*call)(fixture *);
  gstat_status status;
  const char *message; /* the context's message must contain this ("" for none) */
} bad_case;

static const bad_case cases[] = {
    {"NULL context", eigh_null_ctx, GSTAT_EINVAL, ""},
    {"NULL A", eigh_null_a, GSTAT_EINVAL, "eigh: A is NULL"},
    {"NULL w", eigh_null_w, GSTAT_EINVAL, "eigh: w is NULL"},
    {"NULL data", eigh_null_data, GSTAT_EINVAL, "eigh: A.data is NULL"},
    {"negative rows", eigh_negative_rows, GSTAT_EINVAL, "eigh: A.rows=-1 must be >= 0"},
    {"negative batch", eigh_negative_batch, GSTAT_EINVAL, "eigh: A.batch=-2 must be >= 0"},
    {"zero stride", eigh_zero_col_stride, GSTAT_EINVAL, "eigh: A.col_stride=0 must be >= 1"},
    {"negative stride", eigh_negative_row_stride, GSTAT_EINVAL,
     "eigh: V.row_stride=-3 must be >= 1"},
    {"overlapping strides", eigh_overlapping_strides, GSTAT_EINVAL, "eigh: A strides overlap"},
    {"overlapping batch", eigh_overlapping_batch, GSTAT_EINVAL,
     "eigh: A strides overlap: batch_stride=4"},
    {"not square", eigh_not_square, GSTAT_EINVAL, "eigh: A must be square, got 3 x 2"},
    {"w shape", eigh_w_shape, GSTAT_EINVAL, "eigh: w is 2 x 2 x 1, expected 2 x 3 x 1"},
    {"w batch", eigh_w_batch, GSTAT_EINVAL, "eigh: w is 1 x 3 x 1, expected 2 x 3 x 1"},
    {"V shape", eigh_v_shape, GSTAT_EINVAL, "eigh: V is 1 x 3 x 3, expected 2 x 3 x 3"},
    {"w overlaps A", eigh_w_overlaps_a, GSTAT_EINVAL, "eigh: w overlaps A"},
    {"V overlaps A", eigh_v_overlaps_a, GSTAT_EINVAL, "eigh: V overlaps A (only an identical view"},
    {"V overlaps w", eigh_v_overlaps_w, GSTAT_EINVAL, "eigh: V overlaps w"},
    {"span overflow", eigh_span_overflow, GSTAT_ENOMEM,
     "eigh: A spans more bytes than fit in memory"},
    {"order overflow", eigh_order_overflow, GSTAT_ENOMEM,
     "eigh: A spans more bytes than fit in memory"},
    {"order > INT32_MAX", eigh_order_too_large, GSTAT_EUNSUPPORTED,
     "eigh: A has order 2147483648 > INT32_MAX"},
    {"unknown dtype", eigh_bad_dtype, GSTAT_EINVAL, "eigh: A.dtype=99 is not a gstat_dtype"},
    {"unknown location", eigh_bad_location, GSTAT_EINVAL,
     "eigh: w.location=5 is not a gstat_location"},
    {"unknown uplo", eigh_bad_uplo, GSTAT_EINVAL,
     "eigh: uplo=7 is neither GSTAT_LOWER nor GSTAT_UPPER"},
    {"mixed memories", eigh_mixed_memory, GSTAT_EINVAL, "eigh: A and w are in different memories"},
    {"device memory, no CUDA", eigh_device_memory, GSTAT_EUNSUPPORTED,
     "eigh: the arguments are in CUDA device memory, but no CUDA backend: cannot load the CUDA "
     "module /nonexistent/libgstat_cuda.so.0"},
    {"NaN in read triangle", eigh_nan, GSTAT_ENOTFINITE,
     "eigh: batch element 1 of A has a non-finite value at (2, 1)"},
    {"Inf in upper", eigh_inf_upper, GSTAT_ENOTFINITE,
     "eigh: batch element 0 of A has a non-finite value at (0, 2)"},
    {"cholesky NULL F", chol_null_f, GSTAT_EINVAL, "cholesky: F is NULL"},
    {"cholesky F shape", chol_f_shape, GSTAT_EINVAL,
     "cholesky: F is 1 x 3 x 3, expected 2 x 3 x 3"},
    {"cholesky F overlaps A", chol_f_overlaps_a, GSTAT_EINVAL, "cholesky: F overlaps A"},
    {"cholesky uplo", chol_bad_uplo, GSTAT_EINVAL, "cholesky: uplo=-1 is neither"},
    {"cholesky NaN", chol_nan, GSTAT_ENOTFINITE,
     "cholesky: batch element 0 of A has a non-finite value at (1, 0)"},
    {"solve B rows", csolve_b_rows, GSTAT_EINVAL,
     "cholesky_solve: B is 2 x 2 x 2, expected 2 x 3 x nrhs"},
    {"solve NULL X", csolve_null_x, GSTAT_EINVAL, "cholesky_solve: X is NULL"},
    {"solve X shape", csolve_x_shape, GSTAT_EINVAL,
     "cholesky_solve: X is 2 x 3 x 1, expected 2 x 3 x 2"},
    {"solve X overlaps F", csolve_x_overlaps_f, GSTAT_EINVAL, "cholesky_solve: X overlaps F"},
    {"solve NaN in B", csolve_nan_b, GSTAT_ENOTFINITE,
     "cholesky_solve: batch element 1 of B has a non-finite value at (0, 1)"},
    {"trsolve trans", tsolve_bad_trans, GSTAT_EINVAL, "triangular_solve: trans=5 is neither"},
    {"trsolve diag", tsolve_bad_diag, GSTAT_EINVAL, "triangular_solve: diag=9 is neither"},
    {"trsolve B batch", tsolve_b_batch, GSTAT_EINVAL,
     "triangular_solve: B is 3 x 3 x 2, expected 2 x 3 x nrhs"},
};

static void test_bad_input_table(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    fixture fx;
    fixture_init(&fx);
    unsigned char *a_before = malloc(fx.A.raw_bytes);
    memcpy(a_before, fx.A.raw, fx.A.raw_bytes);
    gstat_status st = cases[k].call(&fx);
    const char *msg = gstat_ctx_last_error(fx.ctx);
    if (st != cases[k].status || !strstr(msg, cases[k].message))
      fprintf(stderr, "case '%s': got %d '%s'\n", cases[k].name, (int)st, msg);
    assert_int_equal(st, cases[k].status);
    assert_non_null(strstr(msg, cases[k].message));
    assert_true(strlen(msg) > 0 || cases[k].message[0] == '\0');
    /* nothing written: outputs still poison, info untouched */
    assert_true(tu_untouched(&fx.W) && tu_untouched(&fx.V) && tu_untouched(&fx.F) &&
                tu_untouched(&fx.X));
    assert_true(fx.info[0] == -77 && fx.info[1] == -77);
    assert_int_equal(gstat_ctx_last_backends(fx.ctx), 0);
    free(a_before);
    fixture_free(&fx);
  }
}

/* n = 0 and batch = 0 succeed and touch nothing; a NaN is accepted when
 * finiteness checks are off, and one in the unread triangle always is. */
static void test_empty_and_finite_options(void **state) {
  (void)state;
  fixture fx;
  fixture_init(&fx);
  fx.a.batch = fx.w.batch = fx.v.batch = 0;
  assert_int_equal(eigh(&fx), GSTAT_OK);
  fx.a.batch = fx.w.batch = fx.v.batch = 2;
  fx.a.rows = fx.a.cols = fx.w.rows = fx.v.rows = fx.v.cols = 0;
  assert_int_equal(eigh(&fx), GSTAT_OK);
  assert_true(tu_untouched(&fx.W) && tu_untouched(&fx.V));
  assert_string_equal(gstat_ctx_last_backend_name(fx.ctx), "none");
  fixture_free(&fx);

  fixture_init(&fx);
  tu_set(&fx.a, 0, 0, 2, NAN); /* upper triangle, not read */
  assert_int_equal(chol(&fx), GSTAT_OK);
  assert_string_equal(gstat_ctx_last_error(fx.ctx), "");
  fixture_free(&fx);

  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.check_finite = 0;
  fixture_init(&fx);
  gstat_ctx_destroy(fx.ctx);
  assert_int_equal(gstat_ctx_create(&fx.ctx, &opt), GSTAT_OK);
  tu_set(&fx.a, 1, 1, 1, NAN);
  gstat_status st = chol(&fx);
  assert_int_equal(st, GSTAT_ENOTPD); /* the NaN pivot is caught as not PD */
  assert_int_equal(fx.info[0], 0);
  assert_int_equal(fx.info[1], 2);
  fixture_free(&fx);
}

static void test_context_options(void **state) {
  (void)state;
  gstat_ctx *ctx = (gstat_ctx *)0x1;
  gstat_ctx_options opt;
  assert_int_equal(gstat_ctx_create(NULL, NULL), GSTAT_EINVAL);
  gstat_ctx_options_init(&opt);
  opt.num_threads = -1;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_EINVAL);
  assert_null(ctx);
  gstat_ctx_options_init(&opt);
  opt.backend = (gstat_backend)9;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_EINVAL);
  gstat_ctx_options_init(&opt);
  opt.allocator.user = NULL;
  opt.allocator.free = NULL;
  opt.allocator.alloc = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_OK);
  gstat_ctx_destroy(ctx);
  gstat_ctx_destroy(NULL);
  assert_string_equal(gstat_ctx_last_error(NULL), "gstat: context is NULL");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_input_table),
      cmocka_unit_test(test_empty_and_finite_options),
      cmocka_unit_test(test_context_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
