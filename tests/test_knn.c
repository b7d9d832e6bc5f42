/* The CPU's exact k-nearest-neighbour searches (src/backend/cpu/knn.h,
 * internal API): the k-d tree and the blocked GEMM search against brute
 * force with exact float64 distances, on random data of 1..16 dimensions
 * (float64 and float32, every layout, a batch element past the first),
 * lattice data full of exact ties (ties go to the smaller index, on both
 * paths), many copies of one point (the tree must stay fast: a tree that
 * lost the tie rule's pruning would take minutes here), k from 1 to n, with
 * and without the point itself, and cancellation through the progress
 * callback. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/knn.h"
#include "testutil.h"

typedef gstat_status (*knn_fn)(gstat_ctx *, const gstat_matrix *, int64_t, int64_t, bool, int64_t *,
                               double *);

static bool quick(void) {
  return getenv("GSTAT_TEST_QUICK") != NULL;
}

typedef struct cand {
  double d;
  int64_t j;
} cand;

static int by_distance(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->d != y->d) return x->d < y->d ? -1 : 1;
  return (x->j > y->j) - (x->j < y->j);
}

static int by_index(const void *a, const void *b) {
  const cand *x = a, *y = b;
  return (x->j > y->j) - (x->j < y->j);
}

/* Brute force over the points' values (x: n x p row-major doubles): every
 * row's others by (distance, index), n x (n - 1). */
static cand *reference_order(int64_t n, int64_t p, const double *x) {
  cand *c = malloc(sizeof(cand) * (size_t)(n * (n > 1 ? n - 1 : 1)));
  for (int64_t i = 0; i < n; i++) {
    cand *row = c + i * (n - 1);
    int64_t m = 0;
    for (int64_t j = 0; j < n; j++) {
      if (j == i) continue;
      double s = 0;
      for (int64_t a = 0; a < p; a++) {
        double g = x[i * p + a] - x[j * p + a];
        s += g * g;
      }
      row[m++] = (cand){s, j};
    }
    qsort(row, (size_t)m, sizeof(cand), by_distance);
  }
  return c;
}

/* The search's lists equal the reference's; distances to rel_tol. */
static void check_case(knn_fn search, const char *name, const tu_buf *X, int64_t b,
                       const cand *order, int64_t k, bool self, double rel_tol) {
  int64_t n = X->m.rows, p = X->m.cols;
  int64_t *nbr = malloc(sizeof(int64_t) * (size_t)(n * k));
  double *d2 = malloc(sizeof(double) * (size_t)(n * k));
  cand *want = malloc(sizeof(cand) * (size_t)k);
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  assert_int_equal(search(ctx, &X->m, b, k, self, nbr, d2), GSTAT_OK);
  for (int64_t i = 0; i < n; i++) {
    int64_t skip = self ? 1 : 0;
    if (self) want[0] = (cand){0.0, i};
    memcpy(want + skip, order + i * (n - 1), sizeof(cand) * (size_t)(k - skip));
    qsort(want, (size_t)k, sizeof(cand), by_index);
    for (int64_t r = 0; r < k; r++) {
      int64_t e = i * k + r;
      if (nbr[e] == want[r].j && fabs(d2[e] - want[r].d) <= rel_tol * want[r].d) continue;
      print_error(
          "%s n=%lld p=%lld k=%lld self=%d: row %lld slot %lld: %lld (%.17g), expected "
          "%lld (%.17g)\n",
          name, (long long)n, (long long)p, (long long)k, self, (long long)i, (long long)r,
          (long long)nbr[e], d2[e], (long long)want[r].j, want[r].d);
      fail();
    }
  }
  gstat_ctx_destroy(ctx);
  free(want);
  free(nbr);
  free(d2);
}

/* Element b = 1 of a two-element buffer holds the points; x their values. */
static tu_buf points(tu_rng *r, gstat_dtype dt, tu_layout layout, int64_t n, int64_t p, double grid,
                     double *x) {
  tu_buf X = tu_buf_new(dt, 2, n, p, layout);
  for (int64_t i = 0; i < n; i++)
    for (int64_t a = 0; a < p; a++) {
      double v = grid > 0 ? floor(tu_uniform(r) * grid) : tu_normal(r);
      v = tu_round(dt, v);
      x[i * p + a] = v;
      tu_set(&X.m, 1, i, a, v);
      tu_set(&X.m, 0, i, a, 0.0);
    }
  return X;
}

static void test_random(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  const int64_t dims[] = {1, 2, 3, 5, 10, 16}, sizes[] = {1, 2, 40, 700};
  const int64_t big = quick() ? 700 : 1500;
  for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
    for (size_t si = 0; si <= sizeof sizes / sizeof *sizes; si++) {
      int64_t n = si < 4 ? sizes[si] : big, p = dims[di];
      gstat_dtype dt = (si + di) % 2 ? GSTAT_F32 : GSTAT_F64;
      tu_layout layout = (tu_layout)((si + di) % TU_LAYOUT_COUNT);
      double *x = malloc(sizeof(double) * (size_t)(n * p));
      tu_buf X = points(&r, dt, layout, n, p, 0, x);
      cand *order = reference_order(n, p, x);
      for (int self = 0; self <= 1; self++) {
        int64_t most = self ? n : n - 1;
        const int64_t ks[] = {1, 10, n <= 40 ? most : 50}; /* all of them on the small sets */
        for (int ki = 0; ki < 3; ki++) {
          int64_t k = ks[ki] < most ? ks[ki] : most;
          if (k < 1) continue;
          check_case(gstat_i_knn_tree, "tree", &X, 1, order, k, self, 1e-13);
          /* the GEMM path is exact too (its rounded distances only choose
           * candidates): float32 data included, distances bit for bit */
          check_case(gstat_i_knn_gemm, "gemm", &X, 1, order, k, self, 0.0);
        }
      }
      free(order);
      tu_buf_free(&X);
      free(x);
    }
}

/* Integer points with many exact ties and duplicates: both paths, both
 * dtypes, give the reference's lists exactly (the tie rule). */
static void test_ties(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  const int64_t dims[] = {1, 2, 3, 7};
  for (size_t di = 0; di < 4; di++)
    for (int d = 0; d < 2; d++) {
      int64_t n = 600, p = dims[di];
      gstat_dtype dt = d ? GSTAT_F32 : GSTAT_F64;
      double *x = malloc(sizeof(double) * (size_t)(n * p));
      tu_buf X = points(&r, dt, TU_COL_MAJOR, n, p, 4.0, x);
      cand *order = reference_order(n, p, x);
      for (int self = 0; self <= 1; self++)
        for (int64_t k = 1; k <= 25; k += 12) {
          check_case(gstat_i_knn_tree, "tree", &X, 1, order, k, self, 0.0);
          check_case(gstat_i_knn_gemm, "gemm", &X, 1, order, k, self, 0.0);
        }
      free(order);
      tu_buf_free(&X);
      free(x);
    }
}

/* Data near float32's overflow and underflow (and beyond float32's range):
 * the tree's float32 filter must not lose a neighbour. */
static void test_scaled(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  const double scales[] = {1e150, 1e-150, 1e38, 1e-38};
  int64_t n = 500, p = 4;
  for (int si = 0; si < 4; si++) {
    double *x = malloc(sizeof(double) * (size_t)(n * p));
    tu_buf X = points(&r, GSTAT_F64, TU_ROW_MAJOR, n, p, 0, x);
    for (int64_t i = 0; i < n; i++)
      for (int64_t a = 0; a < p; a++) {
        /* a large offset on one axis: the centring matters too */
        double v = (x[i * p + a] + (a == 0 ? 1e3 : 0)) * scales[si];
        x[i * p + a] = v;
        tu_set(&X.m, 1, i, a, v);
      }
    cand *order = reference_order(n, p, x);
    check_case(gstat_i_knn_tree, "tree", &X, 1, order, 7, true, 1e-13);
    free(order);
    tu_buf_free(&X);
    free(x);
  }
}

/* float32 points far from the origin in 16 dimensions: the float32 GEMM's
 * rounding (about |x|^2 2^-24 p) exceeds the gaps between neighbours, so a
 * search that ranked by the GEMM's distances would pick wrong ones; the
 * bounded candidates and exact distances must not. */
static void test_gemm_offset(void **state) {
  (void)state;
  tu_rng r = tu_rng_new();
  int64_t n = 400, p = 16;
  double *x = malloc(sizeof(double) * (size_t)(n * p));
  tu_buf X = points(&r, GSTAT_F32, TU_ROW_MAJOR, n, p, 0, x);
  for (int64_t i = 0; i < n; i++)
    for (int64_t a = 0; a < p; a++) {
      double v = tu_round(GSTAT_F32, x[i * p + a] * 0.05 + 300.0);
      x[i * p + a] = v;
      tu_set(&X.m, 1, i, a, v);
    }
  cand *order = reference_order(n, p, x);
  for (int self = 0; self <= 1; self++) {
    check_case(gstat_i_knn_gemm, "gemm", &X, 1, order, 10, self, 0.0);
    check_case(gstat_i_knn_tree, "tree", &X, 1, order, 10, self, 0.0);
  }
  free(order);
  tu_buf_free(&X);
  free(x);
}

/* n copies of one point: every neighbour list is the smallest indices. */
static void test_one_point(void **state) {
  (void)state;
  int64_t n = quick() ? 20000 : 200000, p = 3, k = 10;
  double *x = malloc(sizeof(double) * (size_t)(n * p));
  for (int64_t e = 0; e < n * p; e++) x[e] = 1.5;
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  int64_t *nbr = malloc(sizeof(int64_t) * (size_t)(n * k));
  double *d2 = malloc(sizeof(double) * (size_t)(n * k));
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  assert_int_equal(gstat_i_knn_tree(ctx, &X, 0, k, false, nbr, d2), GSTAT_OK);
  for (int64_t i = 0; i < n; i++)
    for (int64_t r = 0; r < k; r++) {
      int64_t want = r < i ? r : r + 1; /* the k smallest others */
      assert_int_equal(nbr[i * k + r], want);
      assert_true(d2[i * k + r] == 0.0);
    }
  gstat_ctx_destroy(ctx);
  free(nbr);
  free(d2);
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
  int64_t n = 300, p = 4, k = 5;
  double *x = malloc(sizeof(double) * (size_t)(n * p));
  tu_buf X = points(&r, GSTAT_F64, TU_ROW_MAJOR, n, p, 0, x);
  int64_t *nbr = malloc(sizeof(int64_t) * (size_t)(n * k));
  double *d2 = malloc(sizeof(double) * (size_t)(n * k));
  int calls = 0;
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_AUTO, 0, cancel_at_once, &calls);
  assert_non_null(ctx);
  assert_int_equal(gstat_i_knn_tree(ctx, &X.m, 1, k, true, nbr, d2), GSTAT_ECANCELED);
  assert_int_equal(gstat_i_knn_gemm(ctx, &X.m, 1, k, true, nbr, d2), GSTAT_ECANCELED);
  assert_int_equal(calls, 2);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "knn: cancelled"));
  gstat_ctx_destroy(ctx);
  tu_buf_free(&X);
  free(nbr);
  free(d2);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random),    cmocka_unit_test(test_ties),
      cmocka_unit_test(test_scaled),    cmocka_unit_test(test_gemm_offset),
      cmocka_unit_test(test_one_point), cmocka_unit_test(test_cancel)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
