/* The CPU backend's thread rules, timing-free: small work runs on one thread,
 * large work on the context's threads, never more than the pieces, never a
 * team inside a parallel region (nested calls would oversubscribe), and a
 * batch reports progress in slices by its work. Checked through the rule
 * functions and gstat_ctx_last_threads. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/cpu/blas_threads.h"
#include "backend/cpu/primitives_cpu.h"
#include "testutil.h"

static void test_rule(void **state) {
  (void)state;
  assert_int_equal(gstat_i_cpu_rule_threads(8, 1000, 1.0), 8);      /* large: all */
  assert_int_equal(gstat_i_cpu_rule_threads(8, 3, 1.0), 3);         /* at most the pieces */
  assert_int_equal(gstat_i_cpu_rule_threads(8, 1000, 1e-6), 1);     /* small: one */
  assert_int_equal(gstat_i_cpu_rule_threads(1, 1000, 1.0), 1);      /* the limit */
  assert_int_equal(gstat_i_cpu_rule_threads(8, 1000, 0.0), 1);      /* no work */
  assert_int_equal(gstat_i_cpu_rule_threads(8, INT64_MAX, 1e9), 8); /* no overflow */
  assert_int_equal(gstat_i_cpu_rule_threads(8, INT64_MAX, 1e300), 8);
  assert_int_equal(gstat_i_cpu_rule_threads(8, INT64_MAX, NAN), 1);
  /* a thread per rules.thread_seconds of work: the count grows with it */
  int prev = 1;
  for (double s = 1e-5; s < 1; s *= 2) {
    int nt = gstat_i_cpu_rule_threads(64, INT64_MAX, s);
    assert_true(nt >= prev);
    prev = nt;
  }
  assert_true(prev > 1);
  assert_int_equal(gstat_i_cpu_slices(0), 1);
  assert_int_equal(gstat_i_cpu_slices(1e-4), 1);
  assert_int_equal(gstat_i_cpu_slices(1), 16);    /* at most 16 slices ... */
  assert_int_equal(gstat_i_cpu_slices(100), 400); /* ... unless one would pass 0.25 s */
  assert_int_equal(gstat_i_cpu_slices(NAN), 1);
  assert_true(gstat_i_cpu_slices(0.05) > 1);
}

static gstat_ctx *ctx_threads(int threads, gstat_progress_fn progress, void *user) {
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, threads, progress, user);
  assert_non_null(ctx);
  assert_int_equal(gstat_ctx_num_threads(ctx), threads);
  return ctx;
}

/* batch x n x n symmetric positive definite matrices, eigenvalues into w */
typedef struct {
  double *a, *w;
  gstat_matrix A, W;
} batch;

static batch batch_new(int64_t count, int64_t n) {
  batch b;
  b.a = calloc((size_t)(count * n * n), sizeof(double));
  b.w = calloc((size_t)(count * n), sizeof(double));
  assert_non_null(b.a);
  assert_non_null(b.w);
  tu_rng r = tu_rng_new();
  for (int64_t e = 0; e < count; e++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j <= i; j++) {
        double v = i == j ? n + tu_uniform(&r) : tu_uniform(&r) / n;
        b.a[(e * n + i) * n + j] = b.a[(e * n + j) * n + i] = v;
      }
  b.A = gstat_matrix_row_major(b.a, GSTAT_F64, count, n, n);
  b.W = gstat_vector_batch(b.w, GSTAT_F64, count, n);
  return b;
}

static void batch_free(batch *b) {
  free(b->a);
  free(b->w);
}

static int eigh_threads(gstat_ctx *ctx, batch *b) {
  assert_int_equal(gstat_eigh(ctx, &b->A, GSTAT_LOWER, &b->W, NULL, NULL), GSTAT_OK);
  return gstat_ctx_last_threads(ctx);
}

/* The work picks the threads: a few small matrices run on one, a batch of
 * 2000 16 x 16 on all four (one with a pthreads OpenBLAS, which must not be
 * called from our parallel loops); a context of one thread stays on one. */
static void test_batch_threads(void **state) {
  (void)state;
  gstat_ctx *four = ctx_threads(4, NULL, NULL), *one = ctx_threads(1, NULL, NULL);
  const int loop_threads = gstat_i_blas_threads_conflict_with_openmp() ? 1 : 4;
  batch tiny = batch_new(3, 4), big = batch_new(2000, 16);
  assert_int_equal(eigh_threads(four, &tiny), 1);
  assert_int_equal(eigh_threads(four, &big), loop_threads);
  assert_int_equal(eigh_threads(one, &big), 1);
  /* an empty batch does no CPU work */
  gstat_matrix A0 = big.A, W0 = big.W;
  A0.batch = W0.batch = 0;
  assert_int_equal(gstat_eigh(four, &A0, GSTAT_LOWER, &W0, NULL, NULL), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_threads(four), 0);
  /* covariance: a small table on one thread, a tall one on four */
  enum { ROWS = 20000, COLS = 100 };
  double *x = malloc(sizeof(double) * ROWS * COLS), *c = malloc(sizeof(double) * COLS * COLS);
  assert_non_null(x);
  assert_non_null(c);
  tu_rng r = tu_rng_new();
  for (int i = 0; i < ROWS * COLS; i++) x[i] = tu_normal(&r);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, ROWS, COLS);
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, COLS, COLS);
  assert_int_equal(gstat_covariance(four, &X, NULL, &C, NULL), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_threads(four), loop_threads);
  gstat_matrix Xs = gstat_matrix_row_major(x, GSTAT_F64, 1, 50, 4);
  gstat_matrix Cs = gstat_matrix_row_major(c, GSTAT_F64, 1, 4, 4);
  assert_int_equal(gstat_covariance(four, &Xs, NULL, &Cs, NULL), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_threads(four), 1);
  free(x);
  free(c);
  batch_free(&tiny);
  batch_free(&big);
  gstat_ctx_destroy(four);
  gstat_ctx_destroy(one);
}

/* With passive waits (gstat_set_passive_waits) one eigh of order 400 keeps
 * LAPACK's reduction, a chain of small parallel calls, on one thread; with
 * spinning waits its BLAS may take the context's four. */
static void test_passive_waits_keep_lapack_serial(void **state) {
  (void)state;
  gstat_ctx *four = ctx_threads(4, NULL, NULL);
  batch one = batch_new(1, 400);
  assert_int_equal(eigh_threads(four, &one), 4);
  gstat_set_passive_waits(1);
  assert_int_equal(eigh_threads(four, &one), 1);
  gstat_set_passive_waits(0);
  assert_int_equal(eigh_threads(four, &one), 4);
  batch_free(&one);
  gstat_ctx_destroy(four);
}

/* Called from inside the caller's parallel region, each thread's context
 * runs its batch on one thread: threads x our threads stays at the limit. */
static void test_nested_single(void **state) {
  (void)state;
  enum { OUTER = 2 };
  batch big[OUTER];
  gstat_ctx *ctx[OUTER];
  int seen[OUTER] = {0}, ran = 0;
  for (int t = 0; t < OUTER; t++) {
    big[t] = batch_new(2000, 16);
    ctx[t] = ctx_threads(4, NULL, NULL);
  }
  omp_set_max_active_levels(2); /* nesting allowed: the rule alone must keep one */
#pragma omp parallel num_threads(OUTER) reduction(+ : ran)
  {
    int t = omp_get_thread_num();
    if (omp_in_parallel() &&
        gstat_eigh(ctx[t], &big[t].A, GSTAT_LOWER, &big[t].W, NULL, NULL) == GSTAT_OK) {
      seen[t] = gstat_ctx_last_threads(ctx[t]);
      ran++;
    }
  }
  omp_set_max_active_levels(1);
  assert_int_equal(ran, OUTER);
  for (int t = 0; t < OUTER; t++) assert_int_equal(seen[t], 1);
  for (int t = 0; t < OUTER; t++) {
    batch_free(&big[t]);
    gstat_ctx_destroy(ctx[t]);
  }
}

static int reports;
static int count_reports(int64_t done, int64_t total, const char *what, void *user) {
  (void)done;
  (void)total;
  (void)what;
  (void)user;
  reports++;
  return 0;
}

/* With a progress callback a batch runs in slices of about
 * rules.slice_seconds of work: one for a small batch (one parallel region,
 * no reports between), several for a long one. */
static void test_slices_by_work(void **state) {
  (void)state;
  gstat_ctx *ctx = ctx_threads(2, count_reports, NULL);
  batch small = batch_new(200, 6), large = batch_new(400, 96);
  reports = 0;
  eigh_threads(ctx, &small);
  assert_int_equal(reports, 0);
  reports = 0;
  eigh_threads(ctx, &large);
  assert_true(reports > 1);
  assert_true(reports <= 16);
  batch_free(&small);
  batch_free(&large);
  gstat_ctx_destroy(ctx);
}

/* The BLAS thread setting reaches the BLAS: OpenMP's for an OpenMP (or
 * other) BLAS and, for a pthreads OpenBLAS (run this test with one
 * preloaded), OpenBLAS's own count, which reads no OpenMP setting; both
 * restored after. */
static void test_blas_threads_reach_blas(void **state) {
  (void)state;
  int (*get_parallel)(void), (*get)(void);
  void (*set)(int);
  *(void **)&get_parallel = dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  *(void **)&get = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  *(void **)&set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  bool pthreads = get_parallel && get_parallel() == 1;
  assert_true(!pthreads || (get && set));
  if (pthreads) set(4); /* what a pthreads OpenBLAS starts with: every core */
  omp_set_num_threads(5);
  gstat_i_blas_threads_saved s = gstat_i_blas_threads_enter(1);
  assert_int_equal(omp_get_max_threads(), 1);
  if (pthreads) assert_int_equal(get(), 1);
  gstat_i_blas_threads_leave(s);
  assert_int_equal(omp_get_max_threads(), 5);
  if (pthreads) assert_int_equal(get(), 4);
  /* inside a parallel region the process-wide count is not touched */
  if (pthreads) {
    int inner = -1;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
      {
        gstat_i_blas_threads_saved t = gstat_i_blas_threads_enter(1);
        inner = get();
        gstat_i_blas_threads_leave(t);
      }
    }
    assert_int_equal(inner, 4);
  }
  print_message("BLAS threading: %s\n", pthreads ? "pthreads OpenBLAS" : "OpenMP's setting");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rule),
      cmocka_unit_test(test_batch_threads),
      cmocka_unit_test(test_passive_waits_keep_lapack_serial),
      cmocka_unit_test(test_nested_single),
      cmocka_unit_test(test_slices_by_work),
      cmocka_unit_test(test_blas_threads_reach_blas),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
