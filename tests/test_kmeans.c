/*
 * k-means of one large graph's embedding (src/spectral/kmeans.c): the runs
 * spread over threads give the serial result bitwise; cancellation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "spectral/spectral_internal.h"

/* One large graph's k-means spreads its runs over threads: the serial
 * result bitwise (labels, inertia, iterations), for several thread counts;
 * a cancelling callback stops it. */
static int stop_now(int64_t done, int64_t total, const char *what, void *user) {
  (void)user, (void)what, (void)done, (void)total;
  return 1;
}

static void test_kmeans_parallel_runs(void **state) {
  (void)state;
  enum { N = 25000, DIM = 3, K = 6 };
  double *X = malloc(sizeof(double) * N * DIM);
  tu_rng rng = tu_rng_new();
  for (int64_t i = 0; i < N; i++) /* overlapping blobs: runs end in different optima */
    for (int a = 0; a < DIM; a++) X[i * DIM + a] = (double)(i % K) * (a == 0) + tu_normal(&rng);
  gstat_i_kmeans_opt o = {K, 7, 300, 1e-4, 42, NULL, NULL};
  size_t work = gstat_i_kmeans_scratch(N, DIM, K);
  double *scratch = malloc(sizeof(double) * work), in_serial, in_par;
  int64_t *ls = malloc(sizeof(int64_t) * 2 * N), *lp = ls + N, it_serial, it_par;
  assert_true(gstat_i_kmeans(X, N, DIM, &o, ls, &in_serial, &it_serial, scratch));
  for (int threads = 2; threads <= 4; threads++) {
    gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, threads, NULL, NULL);
    memset(lp, 0xff, sizeof(int64_t) * N);
    assert_true(gstat_i_kmeans_runs(ctx, X, N, DIM, &o, lp, &in_par, &it_par, scratch));
    assert_memory_equal(ls, lp, sizeof(int64_t) * N);
    assert_true(in_par == in_serial);
    assert_int_equal(it_par, it_serial);
    gstat_ctx_destroy(ctx);
  }
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 2, stop_now, NULL);
  o.tick = gstat_i_sc_km_tick;
  o.tick_arg = ctx;
  assert_false(gstat_i_kmeans_runs(ctx, X, N, DIM, &o, lp, &in_par, &it_par, scratch));
  gstat_ctx_destroy(ctx);
  free(X);
  free(scratch);
  free(ls);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kmeans_parallel_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
