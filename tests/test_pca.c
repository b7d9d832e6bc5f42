/* PCA: every method against an independent SVD (LAPACK dgesvd of the centered
 * data, in the test), layouts and dtypes, batches, scaling, whitening,
 * transform and inverse, variance fractions, rank deficiency, the
 * accumulator path, result reuse without allocation, and bad input.
 * Comparisons with scikit-learn and R on real data are in test_reference.c. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lapacke.h>

#include "testutil.h"

/* The exact answer: singular values and right singular vectors of the
 * centered data (column-major n x p double), signs by gstat's rule. */
typedef struct {
  int64_t n, p, r;
  double mean[64];
  double s[64];       /* r singular values, descending */
  double vt[64 * 64]; /* r x p, row i = component i (row-major) */
} svd_ref;

static void reference(const double *x, int64_t n, int64_t p, svd_ref *ref) {
  assert_true(p <= 64 && (n < p ? n : p) <= 64);
  ref->n = n;
  ref->p = p;
  ref->r = n < p ? n : p;
  double *xc = malloc(sizeof(double) * (size_t)(n * p));
  double *u = malloc(sizeof(double) * (size_t)(n * ref->r));
  double vt[64 * 64], superb[64];
  assert_non_null(xc);
  assert_non_null(u);
  for (int64_t j = 0; j < p; j++) {
    long double m = 0;
    for (int64_t i = 0; i < n; i++) m += x[i + j * n];
    ref->mean[j] = (double)(m / n);
    for (int64_t i = 0; i < n; i++) xc[i + j * n] = x[i + j * n] - ref->mean[j];
  }
  assert_int_equal(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', (int)n, (int)p, xc, (int)n, ref->s, u,
                                  (int)n, vt, (int)ref->r, superb),
                   0);
  for (int64_t i = 0; i < ref->r; i++) {
    int64_t arg = 0;
    for (int64_t j = 1; j < p; j++)
      if (fabs(vt[i + j * ref->r]) > fabs(vt[i + arg * ref->r])) arg = j;
    double sg = vt[i + arg * ref->r] < 0 ? -1 : 1;
    for (int64_t j = 0; j < p; j++) ref->vt[i * p + j] = sg * vt[i + j * ref->r];
  }
  free(xc);
  free(u);
}

/* Random data with a decaying spectrum and an offset (so centering matters). */
static void make_data(tu_rng *rng, int64_t n, int64_t p, double *x) {
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++)
      x[i + j * n] = tu_normal(rng) * pow(0.7, (double)j) + 3.0 * (double)(j + 1);
  /* mix the columns a little: components are then not the axes */
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 1; j < p; j++) x[i + j * n] += 0.3 * x[i + (j - 1) * n];
}

static double rel(double a, double b) {
  return fabs(a - b) / fmax(fabs(b), DBL_MIN);
}

/* res (dataset b) against ref for the first k components. */
static void check_against(const gstat_pca_result *res, int64_t b, const svd_ref *ref, int64_t k,
                          double tol, const double *x) {
  int64_t n = ref->n, p = ref->p, r = ref->r;
  double total = 0, smax = ref->s[0];
  for (int64_t i = 0; i < r; i++) total += ref->s[i] * ref->s[i] / (double)(n - 1);
  for (int64_t j = 0; j < p; j++)
    assert_true(fabs(res->mean[b * p + j] - ref->mean[j]) <= tol * (1 + fabs(ref->mean[j])));
  for (int64_t i = 0; i < k; i++) {
    double ev = ref->s[i] * ref->s[i] / (double)(n - 1);
    /* relative to the largest: tiny values carry absolute rounding */
    assert_true(fabs(res->explained_variance[b * k + i] - ev) <=
                tol * smax * smax / (double)(n - 1));
    /* from eigenvalues, a singular value near 0 is known to sqrt(eps) * smax
     * only: compare squares */
    double sv = res->singular_values[b * k + i];
    assert_true(fabs(sv * sv - ref->s[i] * ref->s[i]) <= tol * smax * smax);
    assert_true(fabs(res->explained_variance_ratio[b * k + i] - ev / total) <= tol);
    /* components are defined when the value is separated from its neighbours */
    bool separated = (i == 0 || ref->s[i - 1] - ref->s[i] > 1e-3 * smax) &&
                     (i + 1 >= r || ref->s[i] - ref->s[i + 1] > 1e-3 * smax) &&
                     ref->s[i] > 1e-6 * smax;
    if (!separated) continue;
    for (int64_t j = 0; j < p; j++)
      assert_true(fabs(res->components[(b * k + i) * p + j] - ref->vt[i * p + j]) <= tol * 100);
    if (res->scores && x)
      for (int64_t row = 0; row < n; row++) {
        double s = 0;
        for (int64_t j = 0; j < p; j++) s += (x[row + j * n] - ref->mean[j]) * ref->vt[i * p + j];
        assert_true(fabs(res->scores[(b * n + row) * k + i] - s) <= tol * 100 * smax);
      }
  }
  double noise = 0;
  for (int64_t i = k; i < r; i++) noise += ref->s[i] * ref->s[i] / (double)(n - 1);
  noise = k < r ? noise / (double)(r - k) : 0;
  assert_true(fabs(res->noise_variance[b] - noise) <= tol * smax * smax / (double)(n - 1));
}

static gstat_pca_options options(gstat_pca_method method, int64_t k) {
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.method = method;
  o.n_components = k;
  return o;
}

static void test_methods_against_svd(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t shapes[][2] = {{40, 7}, {7, 40}, {200, 30}, {30, 30},
                               {5, 1},  {1, 5},  {2, 2},    {64, 3}};
  tu_rng rng = tu_rng_new();
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t n = shapes[s][0], p = shapes[s][1], r = n < p ? n : p;
    double *x = malloc(sizeof(double) * (size_t)(n * p));
    assert_non_null(x);
    make_data(&rng, n, p, x);
    svd_ref ref;
    if (n > 1) reference(x, n, p, &ref);
    for (int layout = 0; layout < TU_LAYOUT_COUNT; layout++) {
      tu_buf X = tu_buf_new(GSTAT_F64, 1, n, p, (tu_layout)layout);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < p; j++) tu_set(&X.m, 0, i, j, x[i + j * n]);
      for (int m = GSTAT_PCA_COVARIANCE_EIGH; m <= GSTAT_PCA_RANDOMIZED; m++) {
        int64_t k = m == GSTAT_PCA_RANDOMIZED ? (r > 2 ? 2 : r) : r;
        gstat_pca_options o = options((gstat_pca_method)m, k);
        o.oversamples = r; /* l = r: the randomized sketch is then exact */
        gstat_pca_result *res = NULL;
        assert_int_equal(gstat_pca(ctx, &X.m, &o, &res), GSTAT_OK);
        assert_int_equal(res->n_components, k);
        assert_int_equal((int)res->method, m);
        if (n > 1) check_against(res, 0, &ref, k, 1e-10, x);
        /* components orthonormal */
        for (int64_t a = 0; a < k; a++)
          for (int64_t c = 0; c < k; c++) {
            double d = 0;
            for (int64_t j = 0; j < p; j++)
              d += res->components[a * p + j] * res->components[c * p + j];
            assert_true(fabs(d - (a == c)) < 1e-10);
          }
        gstat_pca_result_free(res);
      }
      tu_buf_free(&X);
    }
    free(x);
  }
  gstat_ctx_destroy(ctx);
}

/* float32 and bfloat16 input: compute in float, compare with the reference
 * of exactly the values the library saw. */
static void test_low_precision(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 300, p = 12;
  double x[300 * 12];
  for (int d = 0; d < 2; d++) {
    gstat_dtype dt = d == 0 ? GSTAT_F32 : GSTAT_BF16;
    make_data(&rng, n, p, x);
    tu_buf X = tu_buf_new(dt, 1, n, p, TU_ROW_MAJOR);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < p; j++) {
        x[i + j * n] = tu_round(dt, x[i + j * n]);
        tu_set(&X.m, 0, i, j, x[i + j * n]);
      }
    svd_ref ref;
    reference(x, n, p, &ref);
    for (int m = GSTAT_PCA_COVARIANCE_EIGH; m <= GSTAT_PCA_GRAM_EIGH; m++) {
      gstat_pca_options o = options((gstat_pca_method)m, 4);
      gstat_pca_result *res = NULL;
      assert_int_equal(gstat_pca(ctx, &X.m, &o, &res), GSTAT_OK);
      check_against(res, 0, &ref, 4, 1e-4, x);
      gstat_pca_result_free(res);
    }
    tu_buf_free(&X);
  }
  gstat_ctx_destroy(ctx);
}

/* A batch equals separate calls; scale = PCA of standardized columns. */
static void test_batch_and_scale(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 3, n = 50, p = 6;
  double x[3 * 50 * 6];
  for (int64_t b = 0; b < nb; b++) make_data(&rng, n, p, x + b * n * p);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, nb, n, p);
  for (int sc = 0; sc < 2; sc++)
    for (int m = GSTAT_PCA_COVARIANCE_EIGH; m <= GSTAT_PCA_GRAM_EIGH; m++) {
      gstat_pca_options o = options((gstat_pca_method)m, 3);
      o.scale = sc;
      gstat_pca_result *all = NULL;
      assert_int_equal(gstat_pca(ctx, &X, &o, &all), GSTAT_OK);
      for (int64_t b = 0; b < nb; b++) {
        double xs[50 * 6];
        memcpy(xs, x + b * n * p, sizeof xs);
        if (sc) /* standardize in the test: the unscaled PCA of xs must agree */
          for (int64_t j = 0; j < p; j++) {
            long double m1 = 0, m2 = 0;
            for (int64_t i = 0; i < n; i++) m1 += xs[i + j * n];
            m1 /= n;
            for (int64_t i = 0; i < n; i++) m2 += (xs[i + j * n] - m1) * (xs[i + j * n] - m1);
            double sd = (double)sqrtl(m2 / (n - 1));
            assert_true(fabs(all->scale[b * p + j] - sd) <= 1e-12 * sd);
            for (int64_t i = 0; i < n; i++) xs[i + j * n] = (xs[i + j * n] - (double)m1) / sd;
          }
        svd_ref ref;
        reference(xs, n, p, &ref);
        for (int64_t j = 0; j < p; j++) ref.mean[j] = all->mean[b * p + j]; /* of the raw data */
        check_against(all, b, &ref, 3, 1e-10, NULL);
      }
      gstat_pca_result_free(all);
    }
  gstat_ctx_destroy(ctx);
}

/* transform reproduces the scores; inverse_transform(transform(X)) = X with all
 * components; whitened scores have unit variance. */
static void test_transform_whiten(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 80, p = 5;
  double x[80 * 5], z[80 * 5], back[80 * 5];
  make_data(&rng, n, p, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  for (int wh = 0; wh < 2; wh++) {
    gstat_pca_options o = options(GSTAT_PCA_COVARIANCE_EIGH, 0);
    o.whiten = wh;
    o.scale = 1;
    gstat_pca_result *res = NULL;
    assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
    assert_int_equal(res->n_components, p);
    gstat_matrix Z = gstat_matrix_row_major(z, GSTAT_F64, 1, n, p);
    assert_int_equal(gstat_pca_transform(ctx, res, &X, &Z), GSTAT_OK);
    for (int64_t i = 0; i < n * p; i++) assert_true(fabs(z[i] - res->scores[i]) < 1e-10);
    if (wh)
      for (int64_t c = 0; c < p; c++) {
        double v = 0;
        for (int64_t i = 0; i < n; i++) v += z[i * p + c] * z[i * p + c];
        assert_true(fabs(v / (double)(n - 1) - 1) < 1e-10);
      }
    gstat_matrix B = gstat_matrix_col_major(back, GSTAT_F64, 1, n, p);
    assert_int_equal(gstat_pca_inverse_transform(ctx, res, &Z, &B), GSTAT_OK);
    for (int64_t i = 0; i < n * p; i++)
      assert_true(fabs(back[i] - x[i]) < 1e-10 * (1 + fabs(x[i])));
    gstat_pca_result_free(res);
  }
  gstat_ctx_destroy(ctx);
}

/* A variance fraction picks the smallest k whose cumulative ratio exceeds it. */
static void test_variance_fraction(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 100, p = 8;
  double x[100 * 8];
  make_data(&rng, n, p, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  gstat_pca_result *full = NULL, *res = NULL;
  gstat_pca_options o = options(GSTAT_PCA_AUTO, 0);
  assert_int_equal(gstat_pca(ctx, &X, &o, &full), GSTAT_OK);
  const double fractions[] = {0.3, 0.8, 0.95, 0.999};
  for (size_t t = 0; t < 4; t++) {
    int64_t expect = 0;
    double cum = 0;
    while (cum <= fractions[t]) cum += full->explained_variance_ratio[expect++];
    o.variance_fraction = fractions[t];
    assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
    assert_int_equal(res->n_components, expect);
  }
  gstat_pca_result_free(full);
  gstat_pca_result_free(res);
  gstat_ctx_destroy(ctx);
}

/* n < p with duplicated columns: k beyond the rank still gets orthonormal
 * components (zero variance); n = 1 gives zero variances, no NaN. */
static void test_rank_deficient_and_tiny(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 6, p = 10;
  double x[6 * 10];
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) x[i + j * n] = j < 2 ? tu_normal(&rng) : x[i + (j % 2) * n];
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  for (int m = GSTAT_PCA_COVARIANCE_EIGH; m <= GSTAT_PCA_GRAM_EIGH; m++) {
    gstat_pca_options o = options((gstat_pca_method)m, 6);
    gstat_pca_result *res = NULL;
    assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
    for (int64_t a = 0; a < 6; a++) {
      if (a >= 2) assert_true(res->explained_variance[a] < 1e-12 * res->explained_variance[0]);
      for (int64_t c = 0; c < 6; c++) {
        double d = 0;
        for (int64_t j = 0; j < p; j++)
          d += res->components[a * p + j] * res->components[c * p + j];
        assert_true(fabs(d - (a == c)) < 1e-8);
      }
    }
    gstat_pca_result_free(res);
  }
  double one[3] = {1, 2, 3};
  gstat_matrix X1 = gstat_matrix_row_major(one, GSTAT_F64, 1, 1, 3);
  gstat_pca_result *res = NULL;
  assert_int_equal(gstat_pca(ctx, &X1, NULL, &res), GSTAT_OK);
  assert_int_equal(res->n_components, 1);
  /* one row: no variance; its share is 0 / 0 = NaN, as scikit-learn's */
  assert_true(res->explained_variance[0] == 0 && isnan(res->explained_variance_ratio[0]));
  assert_true(res->scores[0] == 0 && !isnan(res->components[0]));
  double same[4 * 2] = {5, 5, 5, 5, -1, -1, -1, -1}; /* constant columns: likewise */
  gstat_matrix Xc = gstat_matrix_col_major(same, GSTAT_F64, 1, 4, 2);
  assert_int_equal(gstat_pca(ctx, &Xc, NULL, &res), GSTAT_OK);
  for (int64_t i = 0; i < res->n_components; i++)
    assert_true(res->explained_variance[i] == 0 && isnan(res->explained_variance_ratio[i]));
  gstat_pca_result_free(res);
  gstat_ctx_destroy(ctx);
}

/* The accumulator path equals the in-memory covariance method. */
static void test_from_accumulator(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 120, p = 7;
  double x[120 * 7];
  make_data(&rng, n, p, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  gstat_cov_accum *acc = NULL;
  assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  for (int64_t r0 = 0; r0 < n; r0 += 13) {
    int64_t rows = n - r0 < 13 ? n - r0 : 13;
    gstat_matrix chunk = X;
    chunk.data = x + r0;
    chunk.rows = rows;
    assert_int_equal(gstat_cov_accum_add(ctx, acc, &chunk, NULL), GSTAT_OK);
  }
  for (int sc = 0; sc < 2; sc++) {
    gstat_pca_options o = options(GSTAT_PCA_COVARIANCE_EIGH, 4);
    o.scale = sc;
    gstat_pca_result *a = NULL, *b = NULL;
    assert_int_equal(gstat_pca(ctx, &X, &o, &a), GSTAT_OK);
    assert_int_equal(gstat_pca_from_accum(ctx, acc, &o, &b), GSTAT_OK);
    assert_null(b->scores);
    assert_int_equal(b->n_samples, n);
    for (int64_t i = 0; i < 4; i++) {
      assert_true(rel(b->explained_variance[i], a->explained_variance[i]) < 1e-12);
      assert_true(rel(b->noise_variance[0], a->noise_variance[0]) < 1e-12);
      for (int64_t j = 0; j < p; j++)
        assert_true(fabs(b->components[i * p + j] - a->components[i * p + j]) < 1e-10);
    }
    for (int64_t j = 0; j < p; j++) assert_true(rel(b->mean[j], a->mean[j]) < 1e-13);
    gstat_pca_result_free(a);
    gstat_pca_result_free(b);
  }
  gstat_pca_options o = options(GSTAT_PCA_GRAM_EIGH, 2);
  gstat_pca_result *res = NULL;
  assert_int_equal(gstat_pca_from_accum(ctx, acc, &o, &res), GSTAT_EINVAL);
  assert_null(res);
  gstat_cov_accum_destroy(acc);
  gstat_ctx_destroy(ctx);
}

/* A caller's eigensolver for gstat_pca_from_accum_eigh: gstat_eigh on its own
 * context, with every eigenvector negated (signs must not matter), or a
 * failure when asked. */
typedef struct {
  gstat_ctx *ctx;
  int calls;
  gstat_status fail;
} eigh_cb_state;

static gstat_status eigh_cb(gstat_ctx *ctx, int64_t p, double *S, double *w, void *user) {
  (void)ctx;
  eigh_cb_state *s = user;
  s->calls++;
  if (s->fail != GSTAT_OK) return s->fail;
  gstat_matrix A = gstat_matrix_col_major(S, GSTAT_F64, 1, p, p);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, p);
  gstat_status st = gstat_eigh(s->ctx, &A, GSTAT_LOWER, &W, &A, NULL);
  for (int64_t i = 0; i < p * p; i++) S[i] = -S[i];
  return st;
}

/* gstat_pca_from_accum_eigh with a caller's solver gives gstat_pca_from_accum's
 * result; the callback's failure is the call's status; argument errors come
 * before the callback. */
static void test_from_accumulator_callback(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  eigh_cb_state cb = {.ctx = tu_ctx(GSTAT_BACKEND_CPU)};
  tu_rng rng = tu_rng_new();
  const int64_t n = 90, p = 9;
  double x[90 * 9];
  make_data(&rng, n, p, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  gstat_cov_accum *acc = NULL;
  assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  for (int variant = 0; variant < 3; variant++) {
    gstat_pca_options o = options(GSTAT_PCA_AUTO, variant == 0 ? 3 : 0);
    o.scale = variant == 1;
    if (variant == 2) o.variance_fraction = 0.8, o.center = 0;
    gstat_pca_result *a = NULL, *b = NULL;
    assert_int_equal(gstat_pca_from_accum(ctx, acc, &o, &a), GSTAT_OK);
    assert_int_equal(gstat_pca_from_accum_eigh(ctx, acc, &o, eigh_cb, &cb, &b), GSTAT_OK);
    assert_int_equal(a->n_components, b->n_components);
    int64_t k = a->n_components;
    for (int64_t i = 0; i < k; i++) {
      assert_true(rel(b->explained_variance[i], a->explained_variance[i]) < 1e-12);
      assert_true(rel(b->explained_variance_ratio[i], a->explained_variance_ratio[i]) < 1e-12);
      assert_true(rel(b->singular_values[i], a->singular_values[i]) < 1e-12);
      for (int64_t j = 0; j < p; j++)
        assert_true(fabs(b->components[i * p + j] - a->components[i * p + j]) < 1e-10);
    }
    assert_true(rel(b->noise_variance[0], a->noise_variance[0]) < 1e-12);
    gstat_pca_result_free(a);
    gstat_pca_result_free(b);
  }
  assert_int_equal(cb.calls, 3);
  gstat_pca_options o = options(GSTAT_PCA_AUTO, 2);
  gstat_pca_result *res = NULL;
  cb.fail = GSTAT_ENOCONV;
  assert_int_equal(gstat_pca_from_accum_eigh(ctx, acc, &o, eigh_cb, &cb, &res), GSTAT_ENOCONV);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "callback"));
  assert_int_equal(cb.calls, 4);
  o.method = GSTAT_PCA_GRAM_EIGH;
  assert_int_equal(gstat_pca_from_accum_eigh(ctx, acc, &o, eigh_cb, &cb, &res), GSTAT_EINVAL);
  assert_int_equal(cb.calls, 4);
  gstat_pca_result_free(res);
  gstat_cov_accum_destroy(acc);
  gstat_ctx_destroy(cb.ctx);
  gstat_ctx_destroy(ctx);
}

/* The randomized method: the same seed gives the same answer, and with power
 * iterations it finds the top components of a low-rank-plus-noise matrix. */
static void test_randomized(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 400, p = 60, rank = 5;
  double *x = malloc(sizeof(double) * (size_t)(n * p));
  assert_non_null(x);
  double u[400 * 5], v[5 * 60];
  for (int64_t i = 0; i < n * rank; i++) u[i] = tu_normal(&rng);
  for (int64_t i = 0; i < rank * p; i++) v[i] = tu_normal(&rng);
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = 0; i < n; i++) {
      double s = 0.01 * tu_normal(&rng);
      for (int64_t c = 0; c < rank; c++) s += u[i + c * n] * v[c + j * rank] * (double)(rank - c);
      x[i + j * n] = s;
    }
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  gstat_pca_options o = options(GSTAT_PCA_RANDOMIZED, rank);
  o.seed = 42;
  gstat_pca_result *a = NULL, *b = NULL, *exact = NULL;
  assert_int_equal(gstat_pca(ctx, &X, &o, &a), GSTAT_OK);
  assert_int_equal(gstat_pca(ctx, &X, &o, &b), GSTAT_OK);
  assert_memory_equal(a->components, b->components, sizeof(double) * (size_t)(rank * p));
  o.method = GSTAT_PCA_COVARIANCE_EIGH;
  assert_int_equal(gstat_pca(ctx, &X, &o, &exact), GSTAT_OK);
  for (int64_t i = 0; i < rank; i++) {
    assert_true(rel(a->explained_variance[i], exact->explained_variance[i]) < 1e-8);
    for (int64_t j = 0; j < p; j++)
      assert_true(fabs(a->components[i * p + j] - exact->components[i * p + j]) < 1e-6);
  }
  assert_true(rel(a->noise_variance[0], exact->noise_variance[0]) < 1e-6);
  gstat_pca_result_free(a);
  gstat_pca_result_free(b);
  gstat_pca_result_free(exact);
  free(x);
  gstat_ctx_destroy(ctx);
}

/* A loop of same-shape fits reusing the result allocates nothing. */
static void test_reuse_allocates_nothing(void **state) {
  (void)state;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = GSTAT_BACKEND_CPU;
  tu_alloc_counter cnt = {0};
  co.allocator = tu_counting_allocator(&cnt);
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  const int64_t n = 60, p = 9;
  double x[60 * 9], z[60 * 3];
  make_data(&rng, n, p, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, n, p);
  gstat_matrix Z = gstat_matrix_col_major(z, GSTAT_F64, 1, n, 3);
  for (int m = GSTAT_PCA_COVARIANCE_EIGH; m <= GSTAT_PCA_RANDOMIZED; m++) {
    gstat_pca_options o = options((gstat_pca_method)m, 3);
    gstat_pca_result *res = NULL;
    assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
    gstat_pca_result *first = res;
    double *block = res->components;
    assert_int_equal(gstat_pca_transform(ctx, res, &X, &Z), GSTAT_OK);
    int64_t before = cnt.allocs;
    for (int rep = 0; rep < 3; rep++) {
      assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
      assert_int_equal(gstat_pca_transform(ctx, res, &X, &Z), GSTAT_OK);
    }
    assert_int_equal(cnt.allocs, before);
    assert_ptr_equal(res, first);
    assert_ptr_equal(res->components, block);
    gstat_pca_result_free(res);
  }
  gstat_ctx_destroy(ctx);
}

/* A CPU context whose progress reports go to `progress`. */
static gstat_ctx *cpu_ctx_reporting_to(gstat_progress_fn progress) {
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, progress, NULL);
  assert_non_null(ctx);
  return ctx;
}

static int progress_calls;
static int cancel_after_two(int64_t done, int64_t total, const char *what, void *user) {
  (void)user;
  assert_string_equal(what, "pca");
  assert_int_equal(total, 4);
  progress_calls++;
  return done >= 2; /* stop after the second dataset */
}

/* The context's progress callback sees every dataset of a batch and can cancel. */
static void test_progress_and_cancel(void **state) {
  (void)state;
  gstat_ctx *ctx = cpu_ctx_reporting_to(cancel_after_two);
  tu_rng rng = tu_rng_new();
  double x[4 * 30 * 3];
  for (int64_t b = 0; b < 4; b++) make_data(&rng, 30, 3, x + b * 90);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 4, 30, 3);
  gstat_pca_result *res = NULL;
  progress_calls = 0;
  assert_int_equal(gstat_pca(ctx, &X, NULL, &res), GSTAT_ECANCELED);
  assert_int_equal(progress_calls, 2);
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "pca: cancelled by the progress callback at 2 of 4");
  gstat_pca_result_free(res);
  gstat_ctx_destroy(ctx);
}

static int power_reports;
static int cancel_third_power_iteration(int64_t done, int64_t total, const char *what, void *user) {
  (void)user;
  if (strcmp(what, "pca: power iterations") != 0 || total != GSTAT_PCA_MAX_POWER_ITERATIONS)
    return 0;
  power_reports++;
  return done >= 3;
}

/* Randomized PCA: every power iteration reports progress and can be
 * cancelled; the count has a documented cap; an oversampling count near
 * INT64_MAX is the exact sketch (l = min(n, p)), not an overflow. */
static void test_randomized_limits(void **state) {
  (void)state;
  gstat_ctx *ctx = cpu_ctx_reporting_to(cancel_third_power_iteration);
  tu_rng rng = tu_rng_new();
  double x[50 * 6];
  make_data(&rng, 50, 6, x);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, 50, 6);
  gstat_pca_result *res = NULL, *exact = NULL;
  gstat_pca_options o = options(GSTAT_PCA_RANDOMIZED, 2);
  o.power_iterations = GSTAT_PCA_MAX_POWER_ITERATIONS;
  power_reports = 0;
  assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_ECANCELED);
  assert_int_equal(power_reports, 4); /* at 0, 1, 2 and 3 of 1000 */
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "pca: power iterations: cancelled by the progress callback at 3 of 1000");
  o.power_iterations = GSTAT_PCA_MAX_POWER_ITERATIONS + 1;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.power_iterations=1001 must be -1 (automatic) or in [0, 1000]");
  o.power_iterations = INT64_MAX;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.power_iterations=9223372036854775807 must be -1 (automatic) or in [0, "
                 "1000]");
  o.power_iterations = 2;
  o.oversamples = INT64_MAX;
  assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
  o.method = GSTAT_PCA_COVARIANCE_EIGH;
  assert_int_equal(gstat_pca(ctx, &X, &o, &exact), GSTAT_OK);
  for (int64_t i = 0; i < 2; i++) {
    assert_true(rel(res->explained_variance[i], exact->explained_variance[i]) < 1e-12);
    for (int64_t j = 0; j < 6; j++)
      assert_true(fabs(res->components[i * 6 + j] - exact->components[i * 6 + j]) < 1e-9);
  }
  gstat_pca_result_free(res);
  gstat_pca_result_free(exact);
  gstat_ctx_destroy(ctx);
}

static void test_bad_input(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double x[20 * 4] = {0};
  for (int i = 0; i < 80; i++) x[i] = (double)((i * 7919) % 31);
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F64, 1, 20, 4);
  gstat_pca_result *res = NULL;
  gstat_pca_options o = options(GSTAT_PCA_AUTO, 5);
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.n_components=5 exceeds min(n, p) = 4");
  o = options(GSTAT_PCA_AUTO, 2);
  o.variance_fraction = 0.5;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: set either opt.n_components or opt.variance_fraction, not both");
  o = options(GSTAT_PCA_RANDOMIZED, 0);
  o.variance_fraction = 0.5;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.variance_fraction needs an exact method, not RANDOMIZED");
  o = options((gstat_pca_method)9, 0);
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.method=9 is not a gstat_pca_method");
  o = options(GSTAT_PCA_AUTO, 0);
  o.variance_fraction = 1.0;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: opt.variance_fraction=1 must be in [0, 1)");
  tu_expect_fail(ctx, gstat_pca(ctx, NULL, NULL, &res), GSTAT_EINVAL, "pca: X is NULL");
  tu_expect_fail(ctx, gstat_pca(ctx, &X, NULL, NULL), GSTAT_EINVAL, "pca: res is NULL");
  x[2 + 3 * 20] = NAN;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, NULL, &res), GSTAT_ENOTFINITE,
                 "pca: X[0] row 2 column 3 is NaN or Inf (PCA takes no missing values)");
  x[2 + 3 * 20] = 1;
  for (int i = 0; i < 20; i++) x[i + 1 * 20] = 5; /* column 1 constant */
  o = options(GSTAT_PCA_AUTO, 0);
  o.scale = 1;
  tu_expect_fail(ctx, gstat_pca(ctx, &X, &o, &res), GSTAT_EINVAL,
                 "pca: column 1 of dataset 0 is constant: it cannot be scaled to unit variance");
  assert_null(res);
  gstat_matrix D = X;
  D.location = GSTAT_CUDA;
  if (!gstat_ctx_cuda_available(ctx))
    assert_int_not_equal(gstat_pca(ctx, &D, NULL, &res), GSTAT_OK);
  /* transform with a mismatched shape */
  o = options(GSTAT_PCA_AUTO, 2);
  assert_int_equal(gstat_pca(ctx, &X, &o, &res), GSTAT_OK);
  double z[20 * 3];
  gstat_matrix Z = gstat_matrix_col_major(z, GSTAT_F64, 1, 20, 3);
  tu_expect_fail(ctx, gstat_pca_transform(ctx, res, &X, &Z), GSTAT_EINVAL,
                 "pca_transform: scores is 1 x 20 x 3, expected 1 x 20 x 2");
  gstat_pca_result_free(res);
  gstat_ctx_destroy(ctx);
}

/* A fit without scores takes the one-pass path (means and co-moment over row
 * blocks, threaded, no centred copy); it equals the fit with scores (the
 * copying path) for every layout and dtype, with and without centring and
 * scaling, over several blocks and threads; a NaN there is named as before. */
static void test_one_pass_fit(void **state) {
  (void)state;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = 3; /* more threads than cores here: thread ranges merge in order */
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  const int64_t n = 9000, p = 30, k = 4; /* 2184-row blocks: 5 blocks over 3 threads */
  const gstat_dtype dts[] = {GSTAT_F64, GSTAT_F32, GSTAT_BF16};
  for (int d = 0; d < 3; d++)
    for (int layout = 0; layout < TU_LAYOUT_COUNT; layout++) {
      tu_buf X = tu_buf_new(dts[d], 2, n, p, (tu_layout)layout);
      for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < p; j++)
            tu_set(&X.m, b, i, j,
                   j == 7 ? 2.5 /* constant */
                          : 1e3 * (double)(b + 1) + tu_normal(&rng) * (1 + 0.3 * (double)j) +
                                (j > 0 ? 0.5 * tu_get(&X.m, b, i, j - 1) : 0));
      for (int variant = 0; variant < 3; variant++) {
        gstat_pca_options o = options(GSTAT_PCA_COVARIANCE_EIGH, k);
        o.center = variant != 1;
        o.whiten = variant == 2;
        o.compute_scores = 1;
        gstat_pca_result *fast = NULL, *ref = NULL;
        assert_int_equal(gstat_pca(ctx, &X.m, &o, &fast), GSTAT_OK);
        double tol = dts[d] == GSTAT_F64 ? 1e-10 : 2e-4;
        /* uncentred float data: the mean direction holds ~1e6 times the rest's
         * variance, and float eigh error of that size (~6) swamps the gaps of
         * the others: only the first component is compared there */
        bool lossy = dts[d] != GSTAT_F64 && !o.center;
        for (int64_t b = 0; b < 2; b++) {
          /* reference: the accumulator (float64, its own blocked code) */
          gstat_matrix Xb = X.m;
          Xb.batch = 1;
          Xb.data = (char *)X.m.data + (size_t)(b * X.m.batch_stride) * gstat_dtype_size(dts[d]);
          gstat_cov_accum *acc = NULL;
          assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc),
                           GSTAT_OK);
          assert_int_equal(gstat_cov_accum_add(ctx, acc, &Xb, NULL), GSTAT_OK);
          assert_int_equal(gstat_pca_from_accum(ctx, acc, &o, &ref), GSTAT_OK);
          gstat_cov_accum_destroy(acc);
          for (int64_t i = 0; i < k; i++) {
            assert_true(fabs(fast->explained_variance[b * k + i] - ref->explained_variance[i]) <=
                        tol * ref->explained_variance[0]);
            for (int64_t j = 0; j < p; j++)
              assert_true((lossy && i > 0) || fabs(fast->components[(b * k + i) * p + j] -
                                                   ref->components[i * p + j]) <= tol * 10);
          }
          for (int64_t j = 0; j < p; j++)
            assert_true(fabs(fast->mean[b * p + j] - ref->mean[j]) <= 1e-12 * 3e3);
          /* uncentred, the small eigenvalues are accurate to eps * lambda_1 only */
          assert_true(lossy || fabs(fast->noise_variance[b] - ref->noise_variance[0]) <=
                                   (o.center ? tol : 1e-7) * (1 + ref->noise_variance[0]));
          gstat_pca_result_free(ref);
          ref = NULL;
        }
        /* scores (blocked centre + GEMM) and gstat_pca_transform (the same code)
         * against a plain sum in double, every 97th row */
        double *z = malloc(sizeof(double) * (size_t)(2 * n * k));
        gstat_matrix Z = gstat_matrix_row_major(z, GSTAT_F64, 2, n, k);
        assert_int_equal(gstat_pca_transform(ctx, fast, &X.m, &Z), GSTAT_OK);
        for (int64_t b = 0; b < 2; b++)
          for (int64_t r = 0; r < n; r += 97)
            for (int64_t i = 0; i < k; i++) {
              /* the rounding of a dot product is relative to the sum of its terms'
               * magnitudes (large for uncentred data: terms ~2000, scores ~0.1) */
              double want = 0, mag = 0;
              for (int64_t j = 0; j < p; j++) {
                double term = (tu_get(&X.m, b, r, j) - fast->mean[b * p + j]) /
                              fast->scale[b * p + j] * fast->components[(b * k + i) * p + j];
                want += term;
                mag += fabs(term);
              }
              double ev = fast->explained_variance[b * k + i];
              if (o.whiten) {
                want /= sqrt(ev);
                mag /= sqrt(ev);
              }
              double t = (dts[d] == GSTAT_F64 ? 1e-12 : 1e-5) * (1 + mag);
              assert_true(fabs(fast->scores[(b * n + r) * k + i] - want) <= t);
              assert_true(fabs(z[(b * n + r) * k + i] - want) <= t);
            }
        free(z);
        gstat_pca_result_free(fast);
        if (variant == 2) { /* scaling: the constant column 7 is named */
          o.scale = 1;
          o.compute_scores = 0;
          gstat_pca_result *r = NULL;
          tu_expect_fail(ctx, gstat_pca(ctx, &X.m, &o, &r), GSTAT_EINVAL,
                         "pca: column 7 of dataset 0 is constant: it cannot be scaled to unit "
                         "variance");
        }
      }
      if (d == 0) { /* a NaN in the second dataset's last block */
        tu_set(&X.m, 1, n - 3, 11, NAN);
        gstat_pca_options o = options(GSTAT_PCA_COVARIANCE_EIGH, k);
        o.compute_scores = 0;
        gstat_pca_result *r = NULL;
        tu_expect_fail(ctx, gstat_pca(ctx, &X.m, &o, &r), GSTAT_ENOTFINITE,
                       "pca: X[1] row 8997 column 11 is NaN or Inf (PCA takes no missing values)");
      }
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(ctx);
}

/* k components of a large co-moment or Gram matrix (m >= 256, 8 k <= m) take
 * the top-k eigensolver (all eigenvalues, k vectors): the same variances,
 * ratios, components and noise variance as the full eigh that k = m / 4 runs. */
static void test_top_k_eigensolver(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t shapes[][2] = {{700, 300}, {270, 600}};
  for (int dt = 0; dt < 2; dt++)
    for (int s = 0; s < 2; s++) {
      int64_t n = shapes[s][0], p = shapes[s][1], k = 5, m = n < p ? n : p;
      gstat_dtype t = dt ? GSTAT_F32 : GSTAT_F64;
      tu_buf X = tu_buf_new(t, 1, n, p, TU_ROW_MAJOR);
      for (int64_t i = 0; i < n; i++) { /* a decaying spectrum: clear gaps at the top */
        double f[8];
        for (int c = 0; c < 8; c++) f[c] = tu_normal(&rng) * pow(0.6, c) * 10;
        for (int64_t j = 0; j < p; j++)
          tu_set(&X.m, 0, i, j,
                 f[j % 8] * (1 + 0.01 * (double)(j / 8)) + 0.05 * tu_normal(&rng) + 3);
      }
      gstat_pca_method meth = n > p ? GSTAT_PCA_COVARIANCE_EIGH : GSTAT_PCA_GRAM_EIGH;
      gstat_pca_options o = options(meth, k), of = options(meth, m / 4);
      o.compute_scores = of.compute_scores = 0;
      gstat_pca_result *top = NULL, *full = NULL;
      assert_int_equal(gstat_pca(ctx, &X.m, &o, &top), GSTAT_OK);
      assert_int_equal(gstat_pca(ctx, &X.m, &of, &full), GSTAT_OK);
      double tol = dt ? 2e-4 : 1e-10, ev0 = full->explained_variance[0], sum = 0;
      for (int64_t i = 0; i < k; i++) {
        assert_true(fabs(top->explained_variance[i] - full->explained_variance[i]) <= tol * ev0);
        assert_true(fabs(top->explained_variance_ratio[i] - full->explained_variance_ratio[i]) <=
                    tol);
        for (int64_t j = 0; j < p; j++)
          assert_true(fabs(top->components[i * p + j] - full->components[i * p + j]) <=
                      (dt ? 1e-3 : 1e-8));
        sum += top->explained_variance[i];
      }
      assert_true(fabs(top->total_variance[0] - full->total_variance[0]) <=
                  tol * full->total_variance[0]);
      /* the noise variance: the rest of the total over the discarded directions */
      double rest = full->total_variance[0] - sum;
      assert_true(top->noise_variance[0] > 0);
      assert_true(fabs(top->noise_variance[0] * (double)(m - k) - rest) <=
                  (dt ? 1e-3 : 1e-9) * full->total_variance[0] + 2 * top->noise_variance[0]);
      gstat_pca_result_free(top);
      gstat_pca_result_free(full);
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_methods_against_svd), cmocka_unit_test(test_low_precision),
      cmocka_unit_test(test_batch_and_scale),     cmocka_unit_test(test_transform_whiten),
      cmocka_unit_test(test_variance_fraction),   cmocka_unit_test(test_rank_deficient_and_tiny),
      cmocka_unit_test(test_from_accumulator),    cmocka_unit_test(test_from_accumulator_callback),
      cmocka_unit_test(test_randomized),          cmocka_unit_test(test_reuse_allocates_nothing),
      cmocka_unit_test(test_progress_and_cancel), cmocka_unit_test(test_randomized_limits),
      cmocka_unit_test(test_bad_input),           cmocka_unit_test(test_one_pass_fit),
      cmocka_unit_test(test_top_k_eigensolver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
