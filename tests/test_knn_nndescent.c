/* gstat_knn_with_options: the approximate GSTAT_KNN_NNDESCENT against the
 * exact search on Gaussian blobs (make_blobs' shape: 10 centres in
 * [-10, 10]^p, unit variance) of 32-128 dimensions in float32 and float64,
 * recall >= 0.99 asserted (a found neighbour counts when its distance is
 * within the true k-th: ties are equally right); every listed distance
 * exact, rows ordered by (distance, index); the same answer for a seed on
 * 1 and 2 threads; few points and k up to n - 1; duplicated points; the
 * option's validation, TREE and BRUTE equal to AUTO, the affinity option,
 * and cancellation. GSTAT_TEST_QUICK shrinks the blobs (valgrind). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static bool quick(void) {
  return getenv("GSTAT_TEST_QUICK") != NULL;
}

/* n points in p dimensions (row-major doubles): `centers` blobs, or copies
 * of n / copies distinct blob points when copies > 1 (interleaved). */
static double *blobs(tu_rng *r, int64_t n, int64_t p, int64_t copies) {
  double *x = malloc(sizeof(double) * (size_t)(n * p)),
         *c = malloc(sizeof(double) * (size_t)(10 * p));
  for (int64_t e = 0; e < 10 * p; e++) c[e] = -10 + 20 * tu_uniform(r);
  int64_t distinct = n / copies;
  for (int64_t i = 0; i < n; i++) {
    if (i >= distinct) {
      memcpy(x + i * p, x + (i % distinct) * p, sizeof(double) * (size_t)p);
      continue;
    }
    int64_t b = (int64_t)(tu_uniform(r) * 10);
    for (int64_t a = 0; a < p; a++) x[i * p + a] = c[b * p + a] + tu_normal(r);
  }
  free(c);
  return x;
}

typedef struct run {
  int64_t *ind;
  double *dist;
} run;

static run search(gstat_ctx *ctx, const gstat_matrix *X, int64_t k, int self,
                  gstat_knn_algorithm alg, uint64_t seed) {
  int64_t n = X->rows;
  run out = {malloc(sizeof(int64_t) * (size_t)(n * k)), malloc(sizeof(double) * (size_t)(n * k))};
  gstat_knn_options o;
  gstat_knn_options_init(&o);
  o.algorithm = alg;
  o.seed = seed;
  gstat_status st = gstat_knn_with_options(ctx, X, k, self, &o, out.ind, out.dist);
  if (st != GSTAT_OK) print_error("%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  return out;
}

static void run_free(run *r) {
  free(r->ind);
  free(r->dist);
}

/* The distance of rows i and j as the exact search measures it (x holds
 * the values the dtype kept). */
static double exact_distance(const double *x, int64_t p, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t a = 0; a < p; a++) {
    double g = x[i * p + a] - x[j * p + a];
    s += g * g;
  }
  return sqrt(s);
}

/* Rows well formed (the point itself first with self, no repeats, ordered
 * by (distance, index), distances exact) and the recall against `want`. */
static double check_rows(const double *x, int64_t n, int64_t p, int64_t k, int self, const run *got,
                         const run *want) {
  int64_t hits = 0, skip = self ? 1 : 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t *g = got->ind + i * k;
    const double *d = got->dist + i * k;
    if (self) assert_true(g[0] == i && d[0] == 0.0);
    for (int64_t r = skip; r < k; r++) {
      assert_true(g[r] >= 0 && g[r] < n && g[r] != i);
      for (int64_t q = 0; q < r; q++) assert_true(g[q] != g[r]);
      assert_true(fabs(d[r] - exact_distance(x, p, i, g[r])) <= 1e-12 * d[r]);
      if (r > skip) assert_true(d[r - 1] < d[r] || (d[r - 1] == d[r] && g[r - 1] < g[r]));
      hits += d[r] <= want->dist[i * k + k - 1];
    }
  }
  return (double)hits / (double)(n * (k - skip));
}

/* x rounded to dt in place, and a row-major descriptor of it in dt. */
static gstat_matrix as_dtype(double *x, float *xf, gstat_dtype dt, int64_t n, int64_t p) {
  if (dt == GSTAT_F64) return gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  for (int64_t e = 0; e < n * p; e++) x[e] = xf[e] = (float)x[e];
  return gstat_matrix_row_major(xf, GSTAT_F32, 1, n, p);
}

static void test_recall_blobs(void **state) {
  (void)state;
  const struct {
    gstat_dtype dt;
    int64_t p;
    int self;
  } cases[] = {{GSTAT_F32, 32, 0},
               {GSTAT_F32, 64, 1},
               {GSTAT_F32, 128, 0},
               {GSTAT_F64, 32, 1},
               {GSTAT_F64, 128, 1}};
  int64_t n = quick() ? 1200 : 20000, k = 10;
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    tu_rng r = tu_rng_new();
    int64_t p = cases[c].p;
    double *x = blobs(&r, n, p, 1);
    float *xf = malloc(sizeof(float) * (size_t)(n * p));
    gstat_matrix X = as_dtype(x, xf, cases[c].dt, n, p);
    run want = search(ctx, &X, k, cases[c].self, GSTAT_KNN_BRUTE, 0);
    run got = search(ctx, &X, k, cases[c].self, GSTAT_KNN_NNDESCENT, 7);
    double recall = check_rows(x, n, p, k, cases[c].self, &got, &want);
    print_message("nndescent n=%lld p=%lld %s self=%d: recall %.5f\n", (long long)n, (long long)p,
                  cases[c].dt == GSTAT_F64 ? "f64" : "f32", cases[c].self, recall);
    assert_true(recall >= 0.99);
    run_free(&want);
    run_free(&got);
    free(xf);
    free(x);
  }
  gstat_ctx_destroy(ctx);
}

/* The same lists for a seed on 1 and 2 threads (samples, proposals and
 * their application do not depend on the thread count). */
static void test_deterministic(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  int64_t n = quick() ? 1000 : 5000, p = 40, k = 8;
  double *x = blobs(&r, n, p, 1);
  float *xf = malloc(sizeof(float) * (size_t)(n * p));
  gstat_matrix X = as_dtype(x, xf, GSTAT_F32, n, p);
  gstat_ctx *one = tu_ctx_progress(GSTAT_BACKEND_CPU, 1, NULL, NULL),
            *two = tu_ctx_progress(GSTAT_BACKEND_CPU, 2, NULL, NULL);
  run a = search(one, &X, k, 0, GSTAT_KNN_NNDESCENT, 11);
  run b = search(two, &X, k, 0, GSTAT_KNN_NNDESCENT, 11);
  run c = search(two, &X, k, 0, GSTAT_KNN_NNDESCENT, 11);
  assert_memory_equal(a.ind, b.ind, sizeof(int64_t) * (size_t)(n * k));
  assert_memory_equal(a.dist, b.dist, sizeof(double) * (size_t)(n * k));
  assert_memory_equal(b.ind, c.ind, sizeof(int64_t) * (size_t)(n * k));
  run_free(&a);
  run_free(&b);
  run_free(&c);
  gstat_ctx_destroy(one);
  gstat_ctx_destroy(two);
  free(xf);
  free(x);
}

/* Few points: k from 1 to n - 1 (n with the point itself); all others
 * listed when k asks for them, the exact answer's recall otherwise. */
static void test_small(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  const int64_t sizes[] = {1, 2, 3, 17, 80, 300};
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int64_t n = sizes[s], p = 20;
    double *x = blobs(&r, n, p, 1);
    gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
    for (int self = 0; self <= 1; self++)
      for (int64_t k = 1 + self, most = n - 1 + self; k <= most; k = k < 12 || k == most ? k + 1
                                                                     : k + n / 5 > most
                                                                         ? most
                                                                         : k + n / 5) {
        run want = search(ctx, &X, k, self, GSTAT_KNN_AUTO, 0);
        run got = search(ctx, &X, k, self, GSTAT_KNN_NNDESCENT, 3);
        double recall = check_rows(x, n, p, k, self, &got, &want);
        assert_true(recall >= (k == most ? 1.0 : 0.99));
        run_free(&want);
        run_free(&got);
      }
    free(x);
  }
  gstat_ctx_destroy(ctx);
}

/* Every point three times, and one point n times: the distances 0 are
 * found (any copy is a right answer), nothing hangs. */
static void test_duplicates(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  int64_t n = quick() ? 900 : 6000, p = 48, k = 10;
  double *x = blobs(&r, n, p, 3);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  run want = search(ctx, &X, k, 0, GSTAT_KNN_BRUTE, 0);
  run got = search(ctx, &X, k, 0, GSTAT_KNN_NNDESCENT, 5);
  assert_true(check_rows(x, n, p, k, 0, &got, &want) >= 0.99);
  for (int64_t i = 0; i < n; i++) assert_true(got.dist[i * k] == 0.0 && got.dist[i * k + 1] == 0.0);
  run_free(&want);
  run_free(&got);
  for (int64_t e = 0; e < n * p; e++) x[e] = 2.5;
  got = search(ctx, &X, k, 1, GSTAT_KNN_NNDESCENT, 5);
  want = search(ctx, &X, k, 1, GSTAT_KNN_BRUTE, 0);
  assert_true(check_rows(x, n, p, k, 1, &got, &want) == 1.0);
  run_free(&want);
  run_free(&got);
  gstat_ctx_destroy(ctx);
  free(x);
}

/* The option: unknown values refused, TREE above 16 dimensions refused,
 * TREE and BRUTE equal to AUTO, the affinity graph through NN-descent. */
static void test_options(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  int64_t n = 400, k = 6;
  double *x = blobs(&r, n, 20, 1);
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  int64_t *ind = malloc(sizeof(int64_t) * (size_t)(n * k));
  gstat_knn_options o;
  gstat_knn_options_init(&o);
  assert_int_equal(o.algorithm, GSTAT_KNN_AUTO);
  o.algorithm = (gstat_knn_algorithm)9;
  gstat_matrix X20 = gstat_matrix_row_major(x, GSTAT_F64, 1, n, 20);
  assert_int_equal(gstat_knn_with_options(ctx, &X20, k, 0, &o, ind, NULL), GSTAT_EINVAL);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "algorithm"));
  o.algorithm = GSTAT_KNN_TREE;
  assert_int_equal(gstat_knn_with_options(ctx, &X20, k, 0, &o, ind, NULL), GSTAT_EINVAL);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "16 dimensions"));
  gstat_matrix X5 = X20; /* the first 5 columns */
  X5.cols = 5;
  run want = search(ctx, &X5, k, 1, GSTAT_KNN_AUTO, 0);
  for (int alg = GSTAT_KNN_TREE; alg <= GSTAT_KNN_BRUTE; alg++) {
    run got = search(ctx, &X5, k, 1, (gstat_knn_algorithm)alg, 0);
    assert_memory_equal(got.ind, want.ind, sizeof(int64_t) * (size_t)(n * k));
    assert_memory_equal(got.dist, want.dist, sizeof(double) * (size_t)(n * k));
    run_free(&got);
  }
  run_free(&want);
  gstat_affinity_options a;
  gstat_affinity_options_init(&a);
  assert_int_equal(a.knn.algorithm, GSTAT_KNN_AUTO);
  a.kind = GSTAT_AFFINITY_KNN;
  a.n_neighbors = k;
  a.knn.algorithm = GSTAT_KNN_NNDESCENT;
  gstat_csr *g = NULL;
  assert_int_equal(gstat_affinity_csr(ctx, &X20, &a, &g), GSTAT_OK);
  assert_true(g->n == n && g->nnz >= n * (k - 1));
  gstat_csr_free(g);
  a.knn.algorithm = (gstat_knn_algorithm)-1;
  assert_int_equal(gstat_affinity_csr(ctx, &X20, &a, &g), GSTAT_EINVAL);
  gstat_ctx_destroy(ctx);
  free(ind);
  free(x);
}

static int cancel_at_once(int64_t done, int64_t total, const char *what, void *user) {
  (void)done;
  (void)total;
  (void)what;
  (*(int *)user)++;
  return 1;
}

static void test_cancel(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  int64_t n = 2000, p = 24, k = 5;
  double *x = blobs(&r, n, p, 1);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  int64_t *ind = malloc(sizeof(int64_t) * (size_t)(n * k));
  int calls = 0;
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, cancel_at_once, &calls);
  gstat_knn_options o;
  gstat_knn_options_init(&o);
  o.algorithm = GSTAT_KNN_NNDESCENT;
  assert_int_equal(gstat_knn_with_options(ctx, &X, k, 0, &o, ind, NULL), GSTAT_ECANCELED);
  assert_int_equal(calls, 1);
  gstat_ctx_destroy(ctx);
  free(ind);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recall_blobs), cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_small),        cmocka_unit_test(test_duplicates),
      cmocka_unit_test(test_options),      cmocka_unit_test(test_cancel)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
