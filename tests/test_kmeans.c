/*
 * The assignment of one graph's embedding: k-means (src/spectral/kmeans.c),
 * whose runs spread over threads give the serial result bitwise, and
 * cancellation; cluster-QR (src/spectral/cluster_qr_impl.h, the code both
 * backends run) on families of embeddings.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "spectral/assign_impl.h"
#include "spectral/cluster_qr_impl.h"
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

/* Labels equal truth up to a renumbering (a bijection of k labels). */
static void same_partition(const int64_t *labels, const int64_t *truth, int64_t n, int64_t k) {
  int64_t map[16], back[16];
  for (int64_t c = 0; c < k; c++) map[c] = back[c] = -1;
  for (int64_t i = 0; i < n; i++) {
    assert_true(labels[i] >= 0 && labels[i] < k);
    if (map[truth[i]] < 0 && back[labels[i]] < 0)
      map[truth[i]] = labels[i], back[labels[i]] = truth[i];
    assert_int_equal(map[truth[i]], labels[i]);
  }
}

/* A random k x k orthogonal matrix (Gram-Schmidt of normal columns). */
static void random_rotation(tu_rng *rng, int64_t k, double *Q) {
  for (int64_t c = 0; c < k; c++) {
    double *q = Q + c * k, t = 0;
    for (int64_t a = 0; a < k; a++) q[a] = tu_normal(rng);
    for (int64_t o = 0; o < c; o++) {
      double d = 0;
      for (int64_t a = 0; a < k; a++) d += q[a] * Q[a + o * k];
      for (int64_t a = 0; a < k; a++) q[a] -= d * Q[a + o * k];
    }
    for (int64_t a = 0; a < k; a++) t += q[a] * q[a];
    for (int64_t a = 0; a < k; a++) q[a] /= sqrt(t);
  }
}

/* Cluster-QR recovers the clusters of a rotated unequal-size indicator
 * embedding, exact or noisy (repeated rows: ties); an embedding of
 * rank below k (repeated rows, a zero column, all zeros) still gets labels
 * in [0, k) and never NaN decisions. */
static void test_cluster_qr_families(void **state) {
  (void)state;
  enum { N = 900, K = 6 };
  tu_rng rng = tu_rng_new();
  double *E = malloc(sizeof(double) * N * K), Q[K * K];
  double *work = malloc(sizeof(double) * gstat_i_cluster_qr_scratch_impl(N, K));
  int64_t truth[N], labels[N], size[K] = {0};
  for (int64_t i = 0; i < N; i++) truth[i] = i < N / 2 ? i % 2 : 2 + i % 4, size[truth[i]]++;
  for (int rep = 0; rep < 3; rep++) {
    random_rotation(&rng, K, Q);
    double noise = rep == 2 ? 0 : 1e-2 * rep + 1e-3;
    for (int64_t i = 0; i < N; i++)
      for (int64_t a = 0; a < K; a++) {
        double t = 0;
        for (int64_t c = 0; c < K; c++) t += (c == truth[i]) / sqrt((double)size[c]) * Q[c + a * K];
        E[i * K + a] = t + noise * tu_normal(&rng) / sqrt((double)N);
      }
    assert_true(gstat_i_cluster_qr_impl(E, N, K, labels, work));
    same_partition(labels, truth, N, K);
  }
  for (int family = 0; family < 3; family++) {
    for (int64_t i = 0; i < N; i++)
      for (int64_t a = 0; a < K; a++)
        E[i * K + a] = family == 2   ? 0
                       : family == 0 ? (double)(i % 2 + a)
                       : a == 3      ? 0
                                     : tu_normal(&rng);
    assert_true(gstat_i_cluster_qr_impl(E, N, K, labels, work));
    for (int64_t i = 0; i < N; i++) assert_true(labels[i] >= 0 && labels[i] < K);
    if (family == 0) /* two distinct rows: at most two labels, one per row */
      for (int64_t i = 2; i < N; i++) assert_int_equal(labels[i], labels[i % 2]);
  }
  free(E);
  free(work);
}

/* The GPU k-means' pick by bisection over running sums (assign_impl.h) is
 * the serial walk's pick for every target: weights with zeros, ties, tiny
 * and huge values, targets at, between and beyond the running totals. */
static void test_kmeans_pick_sorted(void **state) {
  (void)state;
  enum { N = 2000 };
  tu_rng rng = tu_rng_new();
  double *w = malloc(sizeof(double) * N), *sums = malloc(sizeof(double) * N);
  for (int family = 0; family < 4; family++) {
    for (int64_t i = 0; i < N; i++) {
      double u = tu_uniform(&rng);
      w[i] = family == 0   ? u
             : family == 1 ? (u < 0.7 ? 0 : u) /* many zeros */
             : family == 2 ? (i % 3 ? 1e-300 : 1e300 * u)
                           : (i < N - 5 ? 0 : 1); /* weight only at the end */
    }
    int64_t last = gstat_i_km_running_sums(w, N, sums);
    double total = sums[N - 1];
    for (int t = 0; t < 3000; t++) {
      double r = t < 1000   ? tu_uniform(&rng) * total
                 : t < 2000 ? sums[(t * 7919) % N] /* exactly a running total */
                 : t < 2990 ? nextafter(sums[(t * 104729) % N], 0)
                            : total * (1 + (t - 2990) * 1e-3); /* at and past the end */
      assert_int_equal(gstat_i_km_pick_sorted(sums, N, last, r), gstat_i_km_pick(w, N, r));
    }
  }
  free(w);
  free(sums);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kmeans_parallel_runs),
      cmocka_unit_test(test_cluster_qr_families),
      cmocka_unit_test(test_kmeans_pick_sorted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
