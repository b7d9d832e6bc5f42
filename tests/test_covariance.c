/* gstat_covariance, gstat_cov_shrink and gstat_mahalanobis against naive
 * long-double computations done here: divisors and weights as numpy/torch,
 * missing values as R's cov(use = ...), layouts and dtypes, batches, tiny
 * shapes, constant columns, a large offset (two-pass accuracy), shrinkage
 * by scikit-learn's formulas (and a few values from scikit-learn and R
 * themselves), Mahalanobis against an explicit long-double inverse, bad
 * input (status, message, nothing written) and workspace reuse. */
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

typedef long double ld;

/* ---- data and the long-double reference ---- */

/* n x p row-major data: correlated neighbouring columns, column j centred
 * at offset * (j + 1) * (+-1). */
static void gen_data(tu_rng *r, int64_t n, int64_t p, double offset, double *v) {
  for (int64_t i = 0; i < n; i++) {
    double prev = 0;
    for (int64_t j = 0; j < p; j++) {
      double z = tu_normal(r);
      v[i * p + j] = offset * (double)(j + 1) * (j % 2 ? -1 : 1) + z + 0.6 * prev;
      prev = z;
    }
  }
}

/* Element b of buf from v (row-major n x p); v then holds what was stored. */
static void put_data(tu_buf *buf, int64_t b, double *v) {
  for (int64_t i = 0; i < buf->m.rows; i++)
    for (int64_t j = 0; j < buf->m.cols; j++) {
      tu_set(&buf->m, b, i, j, v[i * buf->m.cols + j]);
      v[i * buf->m.cols + j] = tu_get(&buf->m, b, i, j);
    }
}

typedef struct {
  int64_t n, p, ddof;
  const double *f, *a;
  gstat_missing missing;
  int corr;
} spec;

static void spec_from(spec *s, int64_t n, int64_t p, const gstat_cov_options *o) {
  s->n = n;
  s->p = p;
  s->ddof = o->ddof;
  s->f = o->fweights;
  s->a = o->aweights;
  s->missing = o->missing;
  s->corr = o->correlation;
}

static ld weight_of(const spec *s, int64_t r) {
  return (s->f ? (ld)s->f[r] : 1.0L) * (s->a ? (ld)s->a[r] : 1.0L);
}

static bool row_complete(const spec *s, const double *v, int64_t r) {
  for (int64_t j = 0; j < s->p; j++)
    if (isnan(v[r * s->p + j])) return false;
  return true;
}

/* Whether row r enters entry (j, k) (k = -1: the mean of column j). */
static bool row_used(const spec *s, const double *v, int64_t r, int64_t j, int64_t k) {
  switch (s->missing) {
    case GSTAT_MISSING_COMPLETE: return row_complete(s, v, r);
    case GSTAT_MISSING_PAIRWISE:
      return !isnan(v[r * s->p + j]) && (k < 0 || !isnan(v[r * s->p + k]));
    default: return true;
  }
}

/* sum / W, or the common value when every value column j contributes to
 * entry (j, k) is the same (a constant has variance exactly 0). */
static ld ref_mean(const spec *s, const double *v, int64_t j, int64_t k, ld sum, ld W) {
  double first = 0;
  bool have = false;
  for (int64_t r = 0; r < s->n; r++) {
    if (!row_used(s, v, r, j, k)) continue;
    if (!have) first = v[r * s->p + j];
    have = true;
    if (!(v[r * s->p + j] == first)) return sum / W; /* NaN too */
  }
  return have ? (ld)first : sum / W;
}

/* C (p x p, column-major) and mean (p) by the textbook two-pass formulas. */
static void ref_cov(const spec *s, const double *v, double *C, double *mean) {
  int64_t n = s->n, p = s->p;
  for (int64_t j = 0; j < p; j++) {
    ld W = 0, S = 0;
    for (int64_t r = 0; r < n; r++)
      if (row_used(s, v, r, j, -1)) {
        W += weight_of(s, r);
        S += weight_of(s, r) * (ld)v[r * p + j];
      }
    mean[j] = W > 0 ? (double)ref_mean(s, v, j, -1, S, W) : NAN; /* NaN (EVERYTHING): NaN */
  }
  for (int64_t j = 0; j < p; j++)
    for (int64_t k = 0; k < p; k++) {
      ld W = 0, WA = 0, sj = 0, sk = 0;
      int64_t cnt = 0;
      for (int64_t r = 0; r < n; r++)
        if (row_used(s, v, r, j, k)) {
          ld w = weight_of(s, r);
          cnt++;
          W += w;
          WA += w * (s->a ? (ld)s->a[r] : 1.0L);
          sj += w * (ld)v[r * p + j];
          sk += w * (ld)v[r * p + k];
        }
      double out = NAN;
      if (cnt > 0 && W > 0) {
        ld mj = ref_mean(s, v, j, k, sj, W), mk = ref_mean(s, v, k, j, sk, W), cjk = 0, vj = 0,
           vk = 0;
        for (int64_t r = 0; r < n; r++)
          if (row_used(s, v, r, j, k)) {
            ld w = weight_of(s, r), dj = (ld)v[r * p + j] - mj, dk = (ld)v[r * p + k] - mk;
            cjk += w * dj * dk;
            vj += w * dj * dj;
            vk += w * dk * dk;
          }
        ld fact = s->ddof == 0 ? W : !s->a ? W - (ld)s->ddof : W - (ld)s->ddof * WA / W;
        if (isnan((double)cjk) || isnan((double)fact) || (!(fact > 0) && (s->corr || cjk == 0)))
          out = NAN;
        else if (!(fact > 0)) /* numpy: co-moment / max(fact, 0) */
          out = cjk > 0 ? INFINITY : -INFINITY;
        else if (!s->corr)
          out = (double)(cjk / fact);
        else if (vj > 0 && vk > 0)
          out = j == k ? 1.0 : (double)(cjk / sqrtl(vj * vk));
      }
      C[j + k * p] = out;
    }
}

/* got vs ref, both p x p column-major: NaN where ref has NaN; elsewhere the
 * error relative to max(sqrt(ref_jj ref_kk), floor) (covariance) or absolute
 * (correlation). */
static void expect_matrix_floor(const char *what, int64_t p, const double *got, const double *ref,
                                double tol, bool corr, double floor) {
  for (int64_t k = 0; k < p; k++)
    for (int64_t j = 0; j < p; j++) {
      double g = got[j + k * p], r = ref[j + k * p];
      double scale = 1;
      if (!corr) {
        double d = fmax(sqrt(fabs(ref[j + j * p] * ref[k + k * p])), floor);
        scale = isfinite(d) && d > 0 ? d : fmax(fabs(r), 1e-300);
      }
      bool ok = isnan(r) ? isnan(g) : isinf(r) ? g == r : fabs(g - r) <= tol * scale;
      if (!ok) {
        fprintf(stderr, "%s: entry (%lld, %lld) = %.17g, expected %.17g (tol %g x %g)\n", what,
                (long long)j, (long long)k, g, r, tol, scale);
        fail();
      }
    }
}

static void expect_matrix(const char *what, int64_t p, const double *got, const double *ref,
                          double tol, bool corr) {
  expect_matrix_floor(what, p, got, ref, tol, corr, 0);
}

static void expect_vector(const char *what, int64_t p, const double *got, const double *ref,
                          double tol) {
  for (int64_t j = 0; j < p; j++) {
    bool ok = isnan(ref[j]) ? isnan(got[j]) : fabs(got[j] - ref[j]) <= tol * (fabs(ref[j]) + 1);
    if (!ok) {
      fprintf(stderr, "%s: entry %lld = %.17g, expected %.17g\n", what, (long long)j, got[j],
              ref[j]);
      fail();
    }
  }
}

static double tol_of(gstat_dtype dt) {
  return dt == GSTAT_F64 ? 1e-12 : 2e-5;
}

/* One gstat_covariance call on nb datasets v (row-major n x p each) in the
 * given dtype and layouts, checked against ref_cov. */
static void cov_case(gstat_ctx *ctx, gstat_dtype dt, tu_layout lx, gstat_dtype cdt, tu_layout lc,
                     int64_t nb, int64_t n, int64_t p, double *v, const gstat_cov_options *o,
                     double tol) {
  tu_buf X = tu_buf_new(dt, nb, n, p, lx);
  tu_buf C = tu_buf_new(cdt, nb, p, p, lc);
  tu_buf M = tu_buf_new(cdt, nb, p, 1, lc);
  for (int64_t b = 0; b < nb; b++) put_data(&X, b, v + b * n * p);
  gstat_status st = gstat_covariance(ctx, &X.m, o, &C.m, &M.m);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_true(tu_outside_untouched(&C) && tu_outside_untouched(&M));
  if (nb > 0 && p > 0) assert_true(tu_all_written(&C) && tu_all_written(&M));
  double *got = malloc(sizeof(double) * (size_t)(p * p + 1)),
         *ref = malloc(sizeof(double) * (size_t)(p * p + 1));
  double *gm = malloc(sizeof(double) * (size_t)(p + 1)),
         *rm = malloc(sizeof(double) * (size_t)(p + 1));
  spec s;
  spec_from(&s, n, p, o);
  for (int64_t b = 0; b < nb; b++) {
    ref_cov(&s, v + b * n * p, ref, rm);
    for (int64_t k = 0; k < p * p; k++) ref[k] = tu_round(cdt, ref[k]);
    for (int64_t k = 0; k < p; k++) rm[k] = tu_round(cdt, rm[k]);
    tu_read(&C.m, b, got);
    tu_read(&M.m, b, gm);
    char what[160];
    snprintf(what, sizeof what,
             "dtype %d layout %s ddof %lld missing %d corr %d weights %d%d b %lld", (int)dt,
             tu_layout_name(lx), (long long)o->ddof, (int)o->missing, o->correlation,
             o->fweights != NULL, o->aweights != NULL, (long long)b);
    expect_matrix(what, p, got, ref, tol, o->correlation);
    expect_vector(what, p, gm, rm, tol);
  }
  free(got);
  free(ref);
  free(gm);
  free(rm);
  tu_buf_free(&X);
  tu_buf_free(&C);
  tu_buf_free(&M);
}

/* ---- covariance ---- */

static void test_layouts_dtypes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const gstat_dtype dts[] = {GSTAT_F64, GSTAT_F32, GSTAT_BF16};
  const int64_t nb = 3, n = 9, p = 4;
  double *v = malloc(sizeof(double) * (size_t)(nb * n * p));
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < TU_LAYOUT_COUNT; l++)
      for (int corr = 0; corr < 2; corr++) {
        gen_data(&rng, nb * n, p, 2.0, v);
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.correlation = corr;
        cov_case(ctx, dts[d], (tu_layout)l, GSTAT_F64, (tu_layout)((l + 1) % TU_LAYOUT_COUNT), nb,
                 n, p, v, &o, tol_of(dts[d]));
      }
  /* outputs in float32 and bfloat16 */
  gen_data(&rng, nb * n, p, 1.0, v);
  gstat_cov_options dflt;
  gstat_cov_options_init(&dflt);
  cov_case(ctx, GSTAT_F64, TU_ROW_MAJOR, GSTAT_F32, TU_STRIDED, nb, n, p, v, &dflt, 1e-6);
  cov_case(ctx, GSTAT_F64, TU_COL_MAJOR, GSTAT_BF16, TU_ROW_MAJOR, nb, n, p, v, &dflt, 1e-2);
  /* a larger batch through every path of the loop */
  double *w = malloc(sizeof(double) * 40 * 30 * 6);
  gen_data(&rng, 40 * 30, 6, 0.5, w);
  cov_case(ctx, GSTAT_F64, TU_STRIDED, GSTAT_F64, TU_COL_MAJOR, 40, 30, 6, w, &dflt, 1e-12);
  /* opt NULL means the defaults */
  tu_buf X = tu_buf_new(GSTAT_F64, 1, 5, 2, TU_ROW_MAJOR),
         C1 = tu_buf_new(GSTAT_F64, 1, 2, 2, TU_ROW_MAJOR),
         C2 = tu_buf_new(GSTAT_F64, 1, 2, 2, TU_ROW_MAJOR);
  put_data(&X, 0, w);
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  assert_int_equal(gstat_covariance(ctx, &X.m, NULL, &C1.m, NULL), GSTAT_OK);
  assert_int_equal(gstat_covariance(ctx, &X.m, &o, &C2.m, NULL), GSTAT_OK);
  assert_memory_equal(C1.raw, C2.raw, C1.raw_bytes);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cpu");
  tu_buf_free(&X);
  tu_buf_free(&C1);
  tu_buf_free(&C2);
  free(w);
  free(v);
  gstat_ctx_destroy(ctx);
}

static void test_ddof_and_weights(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = 12, p = 3;
  double v[2 * 12 * 3], fw[12], aw[12];
  for (int64_t r = 0; r < n; r++) {
    fw[r] = (double)(r % 4); /* includes zero counts */
    aw[r] = r == 5 ? 0.0 : 2 * tu_uniform(&rng);
  }
  const int64_t ddofs[] = {0, 1, 2, 5};
  for (int d = 0; d < 4; d++)
    for (int wmode = 0; wmode < 4; wmode++)
      for (int corr = 0; corr < 2; corr++)
        for (int dt = 0; dt < 2; dt++) {
          gen_data(&rng, nb * n, p, 1.5, v);
          gstat_cov_options o;
          gstat_cov_options_init(&o);
          o.ddof = ddofs[d];
          o.fweights = wmode & 1 ? fw : NULL;
          o.aweights = wmode & 2 ? aw : NULL;
          o.correlation = corr;
          gstat_dtype t = dt ? GSTAT_F32 : GSTAT_F64;
          cov_case(ctx, t, TU_ROW_MAJOR, GSTAT_F64, TU_COL_MAJOR, nb, n, p, v, &o, tol_of(t));
        }
  /* a divisor <= 0 divides by 0 as numpy does: +-Inf, NaN for correlations
   * (n = 12 rows, ddof 12 and 13) */
  for (int64_t dd = 12; dd <= 13; dd++)
    for (int corr = 0; corr <= 1; corr++) {
      gen_data(&rng, nb * n, p, 0, v);
      gstat_cov_options o;
      gstat_cov_options_init(&o);
      o.ddof = dd;
      o.correlation = corr;
      cov_case(ctx, GSTAT_F64, TU_ROW_MAJOR, GSTAT_F64, TU_ROW_MAJOR, nb, n, p, v, &o, 1e-12);
    }
  gstat_ctx_destroy(ctx);
}

/* Values from numpy 2.4 and R 4 on a fixed dataset (dyadic, so exact in
 * both): an independent check of the weight rule and of R's modes. */
static void test_numpy_and_r_values(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double x[30] = {-1.5,  0.5, 0.75,  0.0,  -0.25, -0.5, -1.25, -1.375, -0.25, 1.25,
                  0.375, 1.5, 1.0,   1.75, 1.5,   1.25, 1.125, -0.25,  -1.25, 0.125,
                  -0.5,  0.0, -1.25, 0.75, -1.5,  0.25, 0.25,  0.75,   1.375, 1.25};
  double f[10] = {1, 2, 0, 3, 1, 1, 2, 1, 4, 1}, a[10];
  for (int k = 0; k < 10; k++) a[k] = (double)(k % 5 + 1) / 4;
  const double np_fa[9] = {1.5230617744610282,  0.335794983416252,   0.7077114427860696,
                           0.33579498341625197, 0.5265987769485903,  0.26337064676616906,
                           0.7077114427860696,  0.26337064676616906, 0.5928171641791042};
  const double np_a2[9] = {1.5280330882352942, 0.8513327205882352, 0.7973345588235294,
                           0.8513327205882352, 1.4605009191176468, 0.6448069852941176,
                           0.7973345588235294, 0.6448069852941176, 0.7703125};
  const double np_mean_fa[3] = {-0.10784313725490197, 0.4215686274509804, 0.6764705882352942};
  const double r_pair_cov[9] = {1.4363839285714286,  0.8883928571428571,  0.44345238095238093,
                                0.8883928571428571,  0.87152777777777779, 0.3208705357142857,
                                0.44345238095238093, 0.3208705357142857,  0.578125};
  const double r_pair_cor[9] = {1, 0.66605201598254604, 0.45521071289885773, 0.66605201598254604,
                                1, 0.47661025311810573, 0.45521071289885773, 0.47661025311810573,
                                1};
  const double r_complete[9] = {1.79375,
                                0.796875,
                                0.525,
                                0.796875,
                                0.94010416666666663,
                                0.35416666666666669,
                                0.525,
                                0.35416666666666669,
                                0.7416666666666667};
  double c[9], m[3];
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, 10, 3);
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, 1, 3, 3);
  gstat_matrix M = gstat_vector_batch(m, GSTAT_F64, 1, 3);
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  o.fweights = f;
  o.aweights = a;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_OK);
  expect_matrix("numpy fweights+aweights", 3, c, np_fa, 1e-14, false);
  expect_vector("numpy average", 3, m, np_mean_fa, 1e-14);
  o.fweights = NULL;
  o.ddof = 2;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, NULL), GSTAT_OK);
  expect_matrix("numpy aweights ddof 2", 3, c, np_a2, 1e-14, false);
  /* R: NaN at (1,0), (4,2), (7,1), (8,0) */
  x[1 * 3 + 0] = x[4 * 3 + 2] = x[7 * 3 + 1] = x[8 * 3 + 0] = NAN;
  gstat_cov_options_init(&o);
  o.missing = GSTAT_MISSING_PAIRWISE;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, NULL), GSTAT_OK);
  expect_matrix("R pairwise cov", 3, c, r_pair_cov, 1e-14, false);
  o.correlation = 1;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, NULL), GSTAT_OK);
  expect_matrix("R pairwise cor", 3, c, r_pair_cor, 1e-14, true);
  o.correlation = 0;
  o.missing = GSTAT_MISSING_COMPLETE;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, NULL), GSTAT_OK);
  expect_matrix("R complete cov", 3, c, r_complete, 1e-14, false);
  o.missing = GSTAT_MISSING_EVERYTHING;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, NULL), GSTAT_OK);
  for (int k = 0; k < 9; k++) assert_true(isnan(c[k])); /* every column has an NA */
  gstat_ctx_destroy(ctx);
}

static void test_missing_modes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = 15, p = 5;
  double v[2 * 15 * 5], fw[15], aw[15];
  for (int64_t r = 0; r < n; r++) {
    fw[r] = (double)(1 + r % 3);
    aw[r] = 0.5 + tu_uniform(&rng);
  }
  for (int pattern = 0; pattern < 4; pattern++)
    for (int mode = 0; mode < 3; mode++)
      for (int corr = 0; corr < 2; corr++)
        for (int wt = 0; wt < 2; wt++)
          for (int dt = 0; dt < 2; dt++) {
            gen_data(&rng, nb * n, p, 3.0, v);
            for (int64_t b = 0; b < nb; b++) {
              double *e = v + b * n * p;
              if (pattern == 0) /* scattered NaN, about 10% */
                for (int64_t k = 0; k < n * p; k++)
                  if (tu_uniform(&rng) < 0.1) e[k] = NAN;
              if (pattern == 1) /* one column entirely missing, a few more NaN */
                for (int64_t r = 0; r < n; r++) {
                  e[r * p + 3] = NAN;
                  if (r % 5 == 1) e[r * p + (r % 3)] = NAN;
                }
              if (pattern == 2) /* no complete row at all */
                for (int64_t r = 0; r < n; r++) e[r * p + r % p] = NAN;
              /* pattern 3: no NaN (the fast path in every mode) */
            }
            gstat_cov_options o;
            gstat_cov_options_init(&o);
            o.missing = (gstat_missing)mode;
            o.correlation = corr;
            o.fweights = wt ? fw : NULL;
            o.aweights = wt ? aw : NULL;
            gstat_dtype t = dt ? GSTAT_F32 : GSTAT_F64;
            cov_case(ctx, t, (tu_layout)(pattern % TU_LAYOUT_COUNT), GSTAT_F64, TU_ROW_MAJOR, nb, n,
                     p, v, &o, tol_of(t));
          }
  gstat_ctx_destroy(ctx);
}

static void test_small_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  double v[64];
  for (int64_t ddof = 0; ddof <= 1; ddof++)
    for (int corr = 0; corr < 2; corr++)
      for (int mode = 0; mode < 3; mode++) {
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.ddof = ddof;
        o.correlation = corr;
        o.missing = (gstat_missing)mode;
        gen_data(&rng, 2, 4, 1.0, v); /* n = 1: NaN (ddof 1) or zeros (ddof 0; correlation NaN) */
        cov_case(ctx, GSTAT_F64, TU_ROW_MAJOR, GSTAT_F64, TU_COL_MAJOR, 2, 1, 4, v, &o, 1e-12);
        gen_data(&rng, 3 * 7, 1, 1.0, v); /* p = 1 */
        cov_case(ctx, GSTAT_F64, TU_STRIDED, GSTAT_F64, TU_STRIDED, 3, 7, 1, v, &o, 1e-12);
        cov_case(ctx, GSTAT_F64, TU_ROW_MAJOR, GSTAT_F64, TU_ROW_MAJOR, 2, 0, 3, v, &o,
                 1e-12); /* n = 0 */
      }
  /* batch 0 and p 0: nothing to write */
  tu_buf X = tu_buf_new(GSTAT_F64, 2, 3, 0, TU_ROW_MAJOR),
         C = tu_buf_new(GSTAT_F64, 2, 0, 0, TU_ROW_MAJOR);
  assert_int_equal(gstat_covariance(ctx, &X.m, NULL, &C.m, NULL), GSTAT_OK);
  assert_true(tu_untouched(&C));
  X.m.batch = C.m.batch = 0;
  assert_int_equal(gstat_covariance(ctx, &X.m, NULL, &C.m, NULL), GSTAT_OK);
  assert_true(tu_untouched(&C));
  tu_buf_free(&X);
  tu_buf_free(&C);
  gstat_ctx_destroy(ctx);
}

static void test_constant_columns(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 11, p = 4;
  double v[11 * 4];
  const double consts[] = {0.1, 1.0 / 3.0, 1e8 + 0.1, -7.3e-5};
  for (int c = 0; c < 4; c++)
    for (int mode = 0; mode < 3; mode++)
      for (int dt = 0; dt < 2; dt++) {
        gen_data(&rng, n, p, 0.0, v);
        for (int64_t r = 0; r < n; r++) v[r * p + 2] = consts[c];
        if (mode == GSTAT_MISSING_PAIRWISE) v[3 * p + 1] = NAN; /* through the pairwise loop */
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.missing = (gstat_missing)mode;
        o.correlation = 1;
        gstat_dtype t = dt ? GSTAT_F32 : GSTAT_F64;
        cov_case(ctx, t, TU_COL_MAJOR, GSTAT_F64, TU_ROW_MAJOR, 1, n, p, v, &o, tol_of(t));
        /* the covariance row and column of the constant are exact zeros */
        tu_buf X = tu_buf_new(t, 1, n, p, TU_ROW_MAJOR);
        put_data(&X, 0, v);
        double c16[16];
        gstat_matrix C = gstat_matrix_col_major(c16, GSTAT_F64, 1, p, p);
        o.correlation = 0;
        assert_int_equal(gstat_covariance(ctx, &X.m, &o, &C, NULL), GSTAT_OK);
        for (int64_t k = 0; k < p; k++) assert_true(c16[2 + k * p] == 0 && c16[k + 2 * p] == 0);
        tu_buf_free(&X);
      }
  gstat_ctx_destroy(ctx);
}

/* |mean| = 1e8 x spread: the centered computation keeps about 12 digits;
 * E[XY] - E[X]E[Y] would keep none. */
static void test_large_offset(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = 200, p = 3;
  double *v = malloc(sizeof(double) * (size_t)(nb * n * p)), fw[200], aw[200];
  for (int64_t r = 0; r < n; r++) {
    fw[r] = (double)(r % 3);
    aw[r] = 0.25 + tu_uniform(&rng);
  }
  for (int mode = 0; mode < 3; mode++)
    for (int corr = 0; corr < 2; corr++)
      for (int wt = 0; wt < 2; wt++) {
        gen_data(&rng, nb * n, p, 1e8, v);
        if (mode != GSTAT_MISSING_EVERYTHING) v[7 * p + 1] = v[40 * p + 2] = NAN;
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.missing = (gstat_missing)mode;
        o.correlation = corr;
        o.fweights = wt ? fw : NULL;
        o.aweights = wt ? aw : NULL;
        cov_case(ctx, GSTAT_F64, TU_ROW_MAJOR, GSTAT_F64, TU_ROW_MAJOR, nb, n, p, v, &o, 1e-12);
      }
  free(v);
  gstat_ctx_destroy(ctx);
}

/* Inf is GSTAT_ENOTFINITE when checked; unchecked, it only spoils its own
 * row and column. */
static void test_inf(void **state) {
  (void)state;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.check_finite = 0;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  double v[8 * 3], c[9];
  gen_data(&rng, 8, 3, 0, v);
  v[2 * 3 + 1] = INFINITY;
  gstat_matrix X = gstat_matrix_row_major(v, GSTAT_F64, 1, 8, 3);
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, 1, 3, 3);
  assert_int_equal(gstat_covariance(ctx, &X, NULL, &C, NULL), GSTAT_OK);
  for (int j = 0; j < 3; j++)
    for (int k = 0; k < 3; k++) assert_true(isfinite(c[j + 3 * k]) == (j != 1 && k != 1));
  gstat_ctx_destroy(ctx);
}

/* ---- shrinkage ---- */

/* scikit-learn's formulas, literally, in long double. Returns s; C p x p. */
static double ref_shrink(gstat_shrinkage method, int64_t n, int64_t p, const double *v,
                         int assume_centered, double *C) {
  ld *x = malloc(sizeof(ld) * (size_t)(n * p)), *S = malloc(sizeof(ld) * (size_t)(p * p));
  for (int64_t j = 0; j < p; j++) {
    ld m = 0;
    for (int64_t i = 0; i < n; i++) m += v[i * p + j];
    m /= n;
    for (int64_t i = 0; i < n; i++) x[i * p + j] = v[i * p + j] - (assume_centered ? 0 : m);
  }
  ld tr = 0;
  for (int64_t j = 0; j < p; j++)
    for (int64_t k = 0; k < p; k++) {
      ld s = 0;
      for (int64_t i = 0; i < n; i++) s += x[i * p + j] * x[i * p + k];
      S[j + k * p] = s / n;
    }
  for (int64_t j = 0; j < p; j++) tr += S[j + j * p];
  ld mu = tr / p, sh = 0;
  if (p > 1 && method == GSTAT_SHRINK_LEDOIT_WOLF) {
    ld beta_ = 0, delta_ = 0;
    for (int64_t i = 0; i < n; i++) {
      ld r2 = 0;
      for (int64_t j = 0; j < p; j++) r2 += x[i * p + j] * x[i * p + j];
      beta_ += r2 * r2;
    }
    for (int64_t k = 0; k < p * p; k++) delta_ += S[k] * S[k];
    ld beta = (beta_ / n - delta_) / ((ld)p * n);
    ld delta = (delta_ - 2 * mu * tr + p * mu * mu) / p;
    if (beta > delta) beta = delta;
    sh = beta == 0 ? 0 : beta / delta;
  } else if (p > 1) {
    ld alpha = 0;
    for (int64_t k = 0; k < p * p; k++) alpha += S[k] * S[k];
    alpha /= (ld)p * p;
    ld num = alpha + mu * mu, den = (n + 1) * (alpha - mu * mu / p);
    sh = den == 0 ? 1 : (num / den < 1 ? num / den : 1);
  }
  for (int64_t j = 0; j < p; j++)
    for (int64_t k = 0; k < p; k++)
      C[j + k * p] = (double)((1 - sh) * S[j + k * p] + (j == k ? sh * mu : 0));
  free(x);
  free(S);
  return (double)sh;
}

static void shrink_case(gstat_ctx *ctx, gstat_shrinkage method, gstat_dtype dt, tu_layout l,
                        int64_t nb, int64_t n, int64_t p, double *v, int centered, double tol) {
  tu_buf X = tu_buf_new(dt, nb, n, p, l);
  tu_buf C = tu_buf_new(GSTAT_F64, nb, p, p, (tu_layout)((l + 2) % TU_LAYOUT_COUNT));
  double sh[8];
  for (int64_t b = 0; b < nb; b++) put_data(&X, b, v + b * n * p);
  gstat_status st = gstat_cov_shrink(ctx, &X.m, method, centered, &C.m, NULL, sh);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_true(tu_all_written(&C) && tu_outside_untouched(&C));
  double *got = malloc(sizeof(double) * (size_t)(p * p)),
         *ref = malloc(sizeof(double) * (size_t)(p * p));
  for (int64_t b = 0; b < nb; b++) {
    double rs = ref_shrink(method, n, p, v + b * n * p, centered, ref);
    tu_read(&C.m, b, got);
    if (!(fabs(sh[b] - rs) <= tol * fmax(rs, 1e-2))) {
      fprintf(stderr, "shrinkage %d dtype %d n %lld p %lld: %.17g, expected %.17g\n", (int)method,
              (int)dt, (long long)n, (long long)p, sh[b], rs);
      fail();
    }
    /* Shrinkage mixes mu = trace/p into every diagonal entry, so an entry's
     * rounding is relative to mu as well (n = 1: the Ledoit-Wolf beta is a
     * difference of equal numbers, zero give or take mu's last bits). */
    double mu = 0;
    for (int64_t j = 0; j < p; j++) mu += ref[j + j * p] / (double)p;
    expect_matrix_floor("shrunk covariance", p, got, ref, tol, false, fabs(mu));
  }
  free(got);
  free(ref);
  tu_buf_free(&X);
  tu_buf_free(&C);
}

static void test_shrinkage(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  double *v = malloc(sizeof(double) * 3 * 60 * 6);
  for (int method = 0; method < 2; method++)
    for (int centered = 0; centered < 2; centered++) {
      for (int l = 0; l < TU_LAYOUT_COUNT; l++) {
        gen_data(&rng, 3 * 60, 6, 0.5, v);
        shrink_case(ctx, (gstat_shrinkage)method, GSTAT_F64, (tu_layout)l, 3, 60, 6, v, centered,
                    1e-11);
        gen_data(&rng, 3 * 8, 6, 0.5, v); /* n close to p: strong shrinkage */
        shrink_case(ctx, (gstat_shrinkage)method, GSTAT_F32, (tu_layout)l, 3, 8, 6, v, centered,
                    1e-4);
      }
      gen_data(&rng, 2 * 9, 1, 2.0, v); /* p = 1: shrinkage 0, the variance */
      shrink_case(ctx, (gstat_shrinkage)method, GSTAT_F64, TU_COL_MAJOR, 2, 9, 1, v, centered,
                  1e-12);
      gen_data(&rng, 2 * 1, 4, 2.0, v); /* n = 1 */
      shrink_case(ctx, (gstat_shrinkage)method, GSTAT_F64, TU_ROW_MAJOR, 2, 1, 4, v, centered,
                  1e-12);
    }
  free(v);
  gstat_ctx_destroy(ctx);
}

/* scikit-learn 1.9.1, LedoitWolf().fit(X) and OAS().fit(X), on a dataset of
 * dyadic values (exact in C and numpy). */
static void test_shrinkage_sklearn_values(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t n = 40, p = 4;
  double x[40 * 4], a[40 * 4];
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++)
      a[i * p + j] = (double)((i * 7 + j * 13 + i * i * j) % 17 - 8) / 4;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++) {
      x[i * p + j] = a[i * p + j] + (j > 0 ? 0.5 * a[i * p + j - 1] : 0);
      if (j == 2) x[i * p + j] *= 3;
    }
  static const double lw_s[2] = {0.0648323437316377, 0.05333081305325553};
  static const double oas_s[2] = {0.09861307428786587, 0.09678921206947569};
  static const double lw_c[2][16] = {
      {1.7829761582368293, 0.4770268296632971, -0.78077366801765, 0.4671089383087324,
       0.4770268296632971, 1.4972660007528866, 2.0299622213640167, 0.33682474119618866,
       -0.78077366801765, 2.0299622213640167, 15.633640204765811, 1.1300368696419392,
       0.4671089383087324, 0.33682474119618866, 1.1300368696419392, 2.023051229994473},
      {1.7572505486872292, 0.497740908449343, -0.7299706933722163, 0.47407417877567437,
       0.497740908449343, 1.5128176062763707, 2.2553653793703887, 0.3450165435239502,
       -0.7299706933722163, 2.2553653793703887, 16.58926399370558, 1.1604093393120642,
       0.47407417877567437, 0.3450165435239502, 1.1604093393120642, 1.996136601330822}};
  static const double oas_c[2][16] = {
      {1.9076447031014672, 0.4597953581801524, -0.7525700569026679, 0.4502357273078539,
       0.4597953581801524, 1.6322551526043565, 1.9566346138707758, 0.32465774017690346,
       -0.7525700569026679, 1.9566346138707758, 15.257986110107545, 1.0892169474000784,
       0.4502357273078539, 0.32465774017690346, 1.0892169474000784, 2.1390476279366286},
      {1.9274088543665584, 0.474891297091596, -0.6964601935058028, 0.45231102739333284,
       0.474891297091596, 1.694197006389185, 2.1518291389016673, 0.3291779941949919,
       -0.6964601935058028, 2.1518291389016673, 16.078534437610855, 1.107138848642963,
       0.45231102739333284, 0.3291779941949919, 1.107138848642963, 2.1553284516334017}};
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  double c[16], s;
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, p, p);
  for (int centered = 0; centered < 2; centered++) {
    /* the location subtracted, as a 1 x p row: the column means, or 0 */
    double loc[4], want[4] = {0, 0, 0, 0};
    gstat_matrix L = gstat_matrix_row_major(loc, GSTAT_F64, 1, 1, p);
    for (int64_t j = 0; !centered && j < p; j++) {
      for (int64_t i = 0; i < n; i++) want[j] += x[i * p + j];
      want[j] /= (double)n;
    }
    assert_int_equal(gstat_cov_shrink(ctx, &X, GSTAT_SHRINK_LEDOIT_WOLF, centered, &C, &L, &s),
                     GSTAT_OK);
    for (int64_t j = 0; j < p; j++)
      assert_true(fabs(loc[j] - want[j]) <= 1e-13 * (1 + fabs(want[j])));
    gstat_matrix bad = gstat_matrix_row_major(loc, GSTAT_F64, 1, 2, 2);
    assert_int_equal(gstat_cov_shrink(ctx, &X, GSTAT_SHRINK_OAS, centered, &C, &bad, &s),
                     GSTAT_EINVAL);
    assert_int_equal(gstat_cov_shrink(ctx, &X, GSTAT_SHRINK_LEDOIT_WOLF, centered, &C, NULL, &s),
                     GSTAT_OK);
    assert_true(fabs(s - lw_s[centered]) <= 1e-13);
    expect_matrix("sklearn LedoitWolf", p, c, lw_c[centered], 1e-13, false);
    assert_int_equal(gstat_cov_shrink(ctx, &X, GSTAT_SHRINK_OAS, centered, &C, NULL, &s), GSTAT_OK);
    assert_true(fabs(s - oas_s[centered]) <= 1e-13);
    expect_matrix("sklearn OAS", p, c, oas_c[centered], 1e-13, false);
  }
  gstat_ctx_destroy(ctx);
}

/* assume_centered: moments about 0 (X^T X / (n - ddof)), means reported as 0,
 * NaN columns still NaN; not with PAIRWISE. */
static void test_assume_centered(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  enum { N = 50, P = 3 };
  double x[N * P], c[P * P], m[P];
  tu_rng rng = tu_rng_new();
  for (int i = 0; i < N * P; i++) x[i] = 2.0 + tu_normal(&rng);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, N, P);
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, P, P);
  gstat_matrix M = gstat_matrix_row_major(m, GSTAT_F64, 1, P, 1);
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  o.assume_centered = 1;
  for (int ddof = 0; ddof < 2; ddof++) {
    o.ddof = ddof;
    assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_OK);
    for (int a = 0; a < P; a++) {
      assert_true(m[a] == 0.0);
      for (int b = 0; b < P; b++) {
        long double want = 0;
        for (int i = 0; i < N; i++) want += (long double)x[i * P + a] * x[i * P + b];
        want /= (long double)(N - ddof);
        assert_true(fabsl(c[a * P + b] - want) <= 1e-13L * fabsl(want));
      }
    }
  }
  x[7 * P + 1] = NAN; /* EVERYTHING: column 1's row and column are NaN */
  o.ddof = 1;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_OK);
  assert_true(isnan(c[1 * P + 0]) && isnan(c[2 * P + 1]) && !isnan(c[0]) && !isnan(c[2 * P + 2]));
  o.missing = GSTAT_MISSING_PAIRWISE;
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_EUNSUPPORTED);
  gstat_ctx_destroy(ctx);
}

/* ---- Mahalanobis ---- */

/* Inverse of the SPD n x n a (column-major) by Gauss-Jordan in long double. */
static void ld_inverse(int64_t n, const double *a, ld *inv) {
  ld *m = malloc(sizeof(ld) * (size_t)(n * 2 * n));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < 2 * n; j++) m[i * 2 * n + j] = j < n ? a[i + j * n] : (j - n == i);
  for (int64_t c = 0; c < n; c++) {
    int64_t piv = c;
    for (int64_t r = c + 1; r < n; r++)
      if (fabsl(m[r * 2 * n + c]) > fabsl(m[piv * 2 * n + c])) piv = r;
    for (int64_t j = 0; j < 2 * n; j++) {
      ld t = m[c * 2 * n + j];
      m[c * 2 * n + j] = m[piv * 2 * n + j];
      m[piv * 2 * n + j] = t;
    }
    ld d = m[c * 2 * n + c];
    for (int64_t j = 0; j < 2 * n; j++) m[c * 2 * n + j] /= d;
    for (int64_t r = 0; r < n; r++) {
      if (r == c) continue;
      ld f = m[r * 2 * n + c];
      for (int64_t j = 0; j < 2 * n; j++) m[r * 2 * n + j] -= f * m[c * 2 * n + j];
    }
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) inv[i + j * n] = m[i * 2 * n + n + j];
  free(m);
}

/* d2 of x (row-major n x p) with center c (or none) and precision P. */
static void ref_d2(int64_t n, int64_t p, const double *x, const double *c, const ld *P,
                   double *d2) {
  for (int64_t r = 0; r < n; r++) {
    ld s = 0;
    for (int64_t j = 0; j < p; j++)
      for (int64_t k = 0; k < p; k++)
        s += ((ld)x[r * p + j] - (c ? c[j] : 0)) * P[j + k * p] *
             ((ld)x[r * p + k] - (c ? c[k] : 0));
    d2[r] = (double)s;
  }
}

static void maha_case(gstat_ctx *ctx, gstat_dtype dt, tu_layout l, int64_t nb, int64_t n, int64_t p,
                      int center_kind, int inverted, double tol) {
  tu_rng rng = tu_rng_new();
  tu_buf X = tu_buf_new(dt, nb, n, p, l);
  tu_buf S = tu_buf_new(dt, nb, p, p, (tu_layout)((l + 1) % TU_LAYOUT_COUNT));
  tu_buf Cn = tu_buf_new(dt, nb, center_kind == 2 ? 1 : p, center_kind == 2 ? p : 1, l);
  tu_buf D = tu_buf_new(GSTAT_F64, nb, n, 1, TU_STRIDED);
  double *x = malloc(sizeof(double) * (size_t)(nb * n * p + 1)),
         *s = malloc(sizeof(double) * (size_t)(p * p + 1));
  double *c = malloc(sizeof(double) * (size_t)(nb * p + 1)),
         *ref = malloc(sizeof(double) * (size_t)(n + 1));
  ld *P = malloc(sizeof(ld) * (size_t)(nb * p * p + 1));
  gen_data(&rng, nb * n, p, 3.0, x);
  for (int64_t b = 0; b < nb; b++) {
    put_data(&X, b, x + b * n * p);
    tu_spd(&rng, p, dt == GSTAT_BF16 ? 4 : 100, s); /* bf16 rounding must keep it SPD */
    for (int64_t k = 0; k < p * p; k++) s[k] *= 2.5;
    if (!inverted) {
      tu_store_matrix(&S, b, s); /* s now holds the stored values */
      ld_inverse(p, s, P + b * p * p);
    } else { /* S is the precision: stored as is, used as is */
      tu_store_matrix(&S, b, s);
      for (int64_t k = 0; k < p * p; k++) P[b * p * p + k] = s[k];
    }
    for (int64_t j = 0; j < p; j++) {
      c[b * p + j] = tu_round(dt, 3.0 * (double)(j + 1) * (j % 2 ? -1 : 1) + 0.1 * tu_normal(&rng));
      tu_set(&Cn.m, b, center_kind == 2 ? 0 : j, center_kind == 2 ? j : 0, c[b * p + j]);
    }
  }
  gstat_status st = gstat_mahalanobis(ctx, &X.m, center_kind ? &Cn.m : NULL, &S.m, inverted, &D.m);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_true(tu_all_written(&D) && tu_outside_untouched(&D));
  for (int64_t b = 0; b < nb; b++) {
    ref_d2(n, p, x + b * n * p, center_kind ? c + b * p : NULL, P + b * p * p, ref);
    for (int64_t r = 0; r < n; r++) {
      double g = tu_get(&D.m, b, r, 0);
      if (!(fabs(g - ref[r]) <= tol * fmax(ref[r], 1.0))) {
        fprintf(stderr,
                "mahalanobis dtype %d layout %s center %d inverted %d: b %lld row %lld %.17g, "
                "expected %.17g\n",
                (int)dt, tu_layout_name(l), center_kind, inverted, (long long)b, (long long)r, g,
                ref[r]);
        fail();
      }
    }
  }
  free(x);
  free(s);
  free(c);
  free(ref);
  free(P);
  tu_buf_free(&X);
  tu_buf_free(&S);
  tu_buf_free(&Cn);
  tu_buf_free(&D);
}

static void test_mahalanobis(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  for (int l = 0; l < TU_LAYOUT_COUNT; l++)
    for (int ck = 0; ck < 3; ck++)
      for (int inv = 0; inv < 2; inv++) {
        maha_case(ctx, GSTAT_F64, (tu_layout)l, 3, 17, 5, ck, inv, 1e-11);
        maha_case(ctx, GSTAT_F32, (tu_layout)l, 2, 9, 4, ck, inv, 5e-4);
      }
  maha_case(ctx, GSTAT_F64, TU_ROW_MAJOR, 2, 5, 1, 1, 0, 1e-12); /* p = 1 */
  maha_case(ctx, GSTAT_F64, TU_COL_MAJOR, 1, 1, 3, 2, 0, 1e-12); /* n = 1 */
  maha_case(ctx, GSTAT_F64, TU_ROW_MAJOR, 2, 300, 40, 1, 0, 1e-10);
  maha_case(ctx, GSTAT_BF16, TU_ROW_MAJOR, 2, 6, 3, 1, 0, 5e-4);
  /* p = 0: empty sums, zeros; n = 0: nothing written */
  double d0[3] = {-1, -1, -1}, none[1] = {0};
  gstat_matrix X0 = gstat_matrix_row_major(none, GSTAT_F64, 1, 3, 0);
  gstat_matrix S0 = gstat_matrix_row_major(none, GSTAT_F64, 1, 0, 0);
  gstat_matrix D0 = gstat_vector_batch(d0, GSTAT_F64, 1, 3);
  assert_int_equal(gstat_mahalanobis(ctx, &X0, NULL, &S0, 0, &D0), GSTAT_OK);
  assert_true(d0[0] == 0 && d0[1] == 0 && d0[2] == 0);
  d0[0] = -1;
  X0 = gstat_matrix_row_major(none, GSTAT_F64, 1, 0, 1);
  S0 = gstat_matrix_row_major(none, GSTAT_F64, 1, 1, 1);
  D0 = gstat_vector_batch(d0, GSTAT_F64, 1, 0);
  assert_int_equal(gstat_mahalanobis(ctx, &X0, NULL, &S0, 0, &D0), GSTAT_OK);
  assert_true(d0[0] == -1);
  gstat_ctx_destroy(ctx);
}

/* A failed element gets NaN distances and the message names it and its
 * minor; the other elements are still computed. */
static void test_mahalanobis_not_pd(void **state) {
  (void)state;
  const int64_t nb = 3, n = 4, p = 4;
  double x[3 * 4 * 4], s[3 * 16], d[3 * 4];
  tu_rng rng = tu_rng_new();
  gen_data(&rng, nb * n, p, 0, x);
  for (int round = 0; round < 2; round++) {
    memset(s, 0, sizeof s);
    for (int64_t b = 0; b < nb; b++)
      for (int64_t i = 0; i < p; i++) s[b * 16 + i * 5] = 2.0;
    if (round == 0) {
      s[1 * 16 + 2 * 5] = -1.0; /* element 1: minor of order 3 */
    } else {
      s[0 * 16 + 0] = 0.0;     /* element 0: order 1 */
      s[2 * 16 + 3 * 5] = NAN; /* element 2: NaN on the diagonal, unchecked below */
    }
    gstat_ctx_options co;
    gstat_ctx_options_init(&co);
    co.check_finite = round == 0;
    gstat_ctx *c2;
    assert_int_equal(gstat_ctx_create(&c2, &co), GSTAT_OK);
    gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, nb, n, p);
    gstat_matrix S = gstat_matrix_col_major(s, GSTAT_F64, nb, p, p);
    gstat_matrix D = gstat_vector_batch(d, GSTAT_F64, nb, n);
    assert_int_equal(gstat_mahalanobis(c2, &X, NULL, &S, 0, &D), GSTAT_ENOTPD);
    const char *msg = gstat_ctx_last_error(c2);
    if (round == 0) {
      assert_string_equal(
          msg,
          "mahalanobis: batch element 1 of S is not positive definite (leading minor of order 3)");
    } else {
      assert_string_equal(msg,
                          "mahalanobis: batch element 0 of S is not positive definite (leading "
                          "minor of order 1); 2 of 3 elements failed");
    }
    for (int64_t b = 0; b < nb; b++) {
      bool bad = round == 0 ? b == 1 : b != 1;
      for (int64_t r = 0; r < n; r++) {
        double want = 0;
        for (int64_t j = 0; j < p; j++)
          want += x[(b * n + r) * p + j] * x[(b * n + r) * p + j] / 2.0;
        if (bad)
          assert_true(isnan(d[b * n + r]));
        else
          assert_true(fabs(d[b * n + r] - want) <= 1e-14 * want);
      }
    }
    gstat_ctx_destroy(c2);
  }
}

/* ---- bad input: one row per case ---- */

typedef struct {
  gstat_ctx *ctx;
  tu_buf X, C, M, S, Cn, D;
  gstat_matrix x, c, m, s, cn, d;
  double fw[5], aw[5], sh[2];
  gstat_cov_options o;
} fixture;

static void fixture_init(fixture *fx) {
  memset(fx, 0, sizeof *fx);
  assert_int_equal(gstat_ctx_create(&fx->ctx, NULL), GSTAT_OK);
  fx->X = tu_buf_new(GSTAT_F64, 2, 5, 3, TU_ROW_MAJOR);
  fx->C = tu_buf_new(GSTAT_F64, 2, 3, 3, TU_ROW_MAJOR);
  fx->M = tu_buf_new(GSTAT_F64, 2, 3, 1, TU_COL_MAJOR);
  fx->S = tu_buf_new(GSTAT_F64, 2, 3, 3, TU_COL_MAJOR);
  fx->Cn = tu_buf_new(GSTAT_F64, 2, 3, 1, TU_COL_MAJOR);
  fx->D = tu_buf_new(GSTAT_F64, 2, 5, 1, TU_COL_MAJOR);
  for (int64_t b = 0; b < 2; b++) {
    for (int64_t i = 0; i < 5; i++)
      for (int64_t j = 0; j < 3; j++) tu_set(&fx->X.m, b, i, j, (double)((i * 3 + j * 7 + b) % 5));
    for (int64_t i = 0; i < 3; i++) {
      tu_set(&fx->Cn.m, b, i, 0, 1.0);
      for (int64_t j = 0; j < 3; j++) tu_set(&fx->S.m, b, i, j, i == j ? 4.0 : 1.0);
    }
  }
  fx->x = fx->X.m;
  fx->c = fx->C.m;
  fx->m = fx->M.m;
  fx->s = fx->S.m;
  fx->cn = fx->Cn.m;
  fx->d = fx->D.m;
  for (int k = 0; k < 5; k++) fx->fw[k] = fx->aw[k] = 1.0;
  fx->sh[0] = fx->sh[1] = -77;
  gstat_cov_options_init(&fx->o);
}

static void fixture_free(fixture *fx) {
  gstat_ctx_destroy(fx->ctx);
  tu_buf_free(&fx->X);
  tu_buf_free(&fx->C);
  tu_buf_free(&fx->M);
  tu_buf_free(&fx->S);
  tu_buf_free(&fx->Cn);
  tu_buf_free(&fx->D);
}

static gstat_status cov(fixture *fx) {
  return gstat_covariance(fx->ctx, &fx->x, &fx->o, &fx->c, &fx->m);
}
static gstat_status shr(fixture *fx) {
  return gstat_cov_shrink(fx->ctx, &fx->x, GSTAT_SHRINK_OAS, 0, &fx->c, NULL, fx->sh);
}
static gstat_status mah(fixture *fx) {
  return gstat_mahalanobis(fx->ctx, &fx->x, &fx->cn, &fx->s, 0, &fx->d);
}

#define CASE(name, ...)                   \
  static gstat_status name(fixture *fx) { \
    __VA_ARGS__;                          \
  }

CASE(cov_null_ctx, return gstat_covariance(NULL, &fx->x, &fx->o, &fx->c, &fx->m))
CASE(cov_null_x, return gstat_covariance(fx->ctx, NULL, &fx->o, &fx->c, &fx->m))
CASE(cov_null_c, return gstat_covariance(fx->ctx, &fx->x, &fx->o, NULL, &fx->m))
CASE(cov_c_shape, fx->c.cols = 2; return cov(fx))
CASE(cov_c_batch, fx->c.batch = 1; return cov(fx))
CASE(cov_mean_shape, fx->m.cols = 2; fx->m.col_stride = 7; return cov(fx))
CASE(cov_bad_dtype, fx->x.dtype = (gstat_dtype)99; return cov(fx))
CASE(cov_zero_stride, fx->x.col_stride = 0; return cov(fx))
CASE(cov_negative_ddof, fx->o.ddof = -1; return cov(fx))
CASE(cov_bad_missing, fx->o.missing = (gstat_missing)9; return cov(fx))
CASE(cov_negative_fweight, fx->fw[2] = -1; fx->o.fweights = fx->fw; return cov(fx))
CASE(cov_fractional_fweight, fx->fw[1] = 1.5; fx->o.fweights = fx->fw; return cov(fx))
CASE(cov_nan_aweight, fx->aw[3] = NAN; fx->o.aweights = fx->aw; return cov(fx))
CASE(cov_inf_aweight, fx->aw[0] = INFINITY; fx->o.aweights = fx->aw; return cov(fx))
CASE(cov_negative_aweight, fx->aw[4] = -0.5; fx->o.aweights = fx->aw; return cov(fx))
CASE(cov_inf_x, tu_set(&fx->x, 1, 2, 1, INFINITY); return cov(fx))
CASE(cov_minus_inf_x, tu_set(&fx->x, 0, 4, 0, -INFINITY); fx->o.missing = GSTAT_MISSING_PAIRWISE;
     return cov(fx))
CASE(cov_c_overlaps_x, fx->c.data = fx->x.data; return cov(fx))
CASE(cov_mean_overlaps_c, fx->m.data = fx->c.data; return cov(fx))
CASE(cov_device, fx->x.location = GSTAT_CUDA; return cov(fx))
CASE(shr_null_c,
     return gstat_cov_shrink(fx->ctx, &fx->x, GSTAT_SHRINK_LEDOIT_WOLF, 0, NULL, NULL, fx->sh))
CASE(shr_c_shape, fx->c.rows = 2; return shr(fx))
CASE(shr_bad_method,
     return gstat_cov_shrink(fx->ctx, &fx->x, (gstat_shrinkage)5, 0, &fx->c, NULL, fx->sh))
CASE(shr_nan, tu_set(&fx->x, 0, 1, 2, NAN); return shr(fx))
CASE(shr_no_rows, fx->x.rows = 0; return shr(fx))
CASE(shr_c_overlaps_x, fx->c.data = (double *)fx->x.data + 3; return shr(fx))
CASE(mah_null_s, return gstat_mahalanobis(fx->ctx, &fx->x, &fx->cn, NULL, 0, &fx->d))
CASE(mah_null_d, return gstat_mahalanobis(fx->ctx, &fx->x, &fx->cn, &fx->s, 0, NULL))
CASE(mah_s_shape, fx->s.batch = 1; return mah(fx))
CASE(mah_d_shape, fx->d.rows = 4; return mah(fx))
CASE(mah_center_shape, fx->cn.rows = 2; return mah(fx))
CASE(mah_nan_x, tu_set(&fx->x, 1, 3, 0, NAN); return mah(fx))
/* the NaN lies in an element whose factor fails: its rows are never reduced */
CASE(mah_nan_x_not_pd, tu_set(&fx->x, 1, 3, 0, NAN); tu_set(&fx->s, 1, 0, 0, -1.0); return mah(fx))
CASE(mah_inf_s, tu_set(&fx->s, 0, 2, 1, INFINITY); return mah(fx))
CASE(mah_nan_center, tu_set(&fx->cn, 1, 1, 0, NAN); return mah(fx))
CASE(mah_d_overlaps_x, fx->d.data = fx->x.data; return mah(fx))
CASE(mah_device, fx->s.location = GSTAT_CUDA; return mah(fx))

typedef struct {
  const char *name;
  gstat_status (*call)(fixture *);
  gstat_status status;
  const char *message;
} bad_case;

static const bad_case cases[] = {
    {"NULL context", cov_null_ctx, GSTAT_EINVAL, ""},
    {"NULL X", cov_null_x, GSTAT_EINVAL, "covariance: X is NULL"},
    {"NULL C", cov_null_c, GSTAT_EINVAL, "covariance: C is NULL"},
    {"C shape", cov_c_shape, GSTAT_EINVAL, "covariance: C is 2 x 3 x 2, expected 2 x 3 x 3"},
    {"C batch", cov_c_batch, GSTAT_EINVAL, "covariance: C is 1 x 3 x 3, expected 2 x 3 x 3"},
    {"mean shape", cov_mean_shape, GSTAT_EINVAL,
     "covariance: mean is 2 x 3 x 2, expected 2 x 3 x 1"},
    {"X dtype", cov_bad_dtype, GSTAT_EINVAL, "covariance: X.dtype=99 is not a gstat_dtype"},
    {"X stride", cov_zero_stride, GSTAT_EINVAL, "covariance: X.col_stride=0 must be >= 1"},
    {"ddof", cov_negative_ddof, GSTAT_EINVAL, "covariance: opt.ddof=-1 must be >= 0"},
    {"missing", cov_bad_missing, GSTAT_EINVAL, "covariance: opt.missing=9 is not a gstat_missing"},
    {"negative fweight", cov_negative_fweight, GSTAT_EINVAL,
     "covariance: fweights[2]=-1 must be >= 0"},
    {"fractional fweight", cov_fractional_fweight, GSTAT_EINVAL,
     "covariance: fweights[1]=1.5 is not an integer"},
    {"NaN aweight", cov_nan_aweight, GSTAT_EINVAL, "covariance: aweights[3]=nan is not finite"},
    {"Inf aweight", cov_inf_aweight, GSTAT_EINVAL, "covariance: aweights[0]=inf is not finite"},
    {"negative aweight", cov_negative_aweight, GSTAT_EINVAL,
     "covariance: aweights[4]=-0.5 must be >= 0"},
    {"Inf in X", cov_inf_x, GSTAT_ENOTFINITE,
     "covariance: batch element 1 of X has an infinite value at (2, 1)"},
    {"-Inf in X", cov_minus_inf_x, GSTAT_ENOTFINITE,
     "covariance: batch element 0 of X has an infinite value at (4, 0)"},
    {"C overlaps X", cov_c_overlaps_x, GSTAT_EINVAL, "covariance: C overlaps X"},
    {"mean overlaps C", cov_mean_overlaps_c, GSTAT_EINVAL, "covariance: mean overlaps C"},
    {"device memory", cov_device, GSTAT_EUNSUPPORTED,
     "covariance: X is in CUDA device memory, but no CUDA backend"},
    {"shrink NULL C", shr_null_c, GSTAT_EINVAL, "cov_shrink: C is NULL"},
    {"shrink C shape", shr_c_shape, GSTAT_EINVAL, "cov_shrink: C is 2 x 2 x 3, expected 2 x 3 x 3"},
    {"shrink method", shr_bad_method, GSTAT_EINVAL,
     "cov_shrink: method=5 is not a gstat_shrinkage"},
    {"shrink NaN", shr_nan, GSTAT_ENOTFINITE,
     "cov_shrink: batch element 0 of X has a non-finite value at (1, 2)"},
    {"shrink n = 0", shr_no_rows, GSTAT_EINVAL, "cov_shrink: X has no rows"},
    {"shrink C overlaps X", shr_c_overlaps_x, GSTAT_EINVAL, "cov_shrink: C overlaps X"},
    {"mahalanobis NULL S", mah_null_s, GSTAT_EINVAL, "mahalanobis: S is NULL"},
    {"mahalanobis NULL d2", mah_null_d, GSTAT_EINVAL, "mahalanobis: d2 is NULL"},
    {"mahalanobis S shape", mah_s_shape, GSTAT_EINVAL,
     "mahalanobis: S is 1 x 3 x 3, expected 2 x 3 x 3"},
    {"mahalanobis d2 shape", mah_d_shape, GSTAT_EINVAL,
     "mahalanobis: d2 is 2 x 4 x 1, expected 2 x 5 x 1"},
    {"mahalanobis center shape", mah_center_shape, GSTAT_EINVAL,
     "mahalanobis: center is 2 x 2 x 1, expected 2 x 3 x 1 or 2 x 1 x 3"},
    {"mahalanobis NaN X", mah_nan_x, GSTAT_ENOTFINITE,
     "mahalanobis: batch element 1 of X has a non-finite value at (3, 0)"},
    {"mahalanobis NaN X, S not positive definite", mah_nan_x_not_pd, GSTAT_ENOTFINITE,
     "mahalanobis: batch element 1 of X has a non-finite value at (3, 0)"},
    {"mahalanobis Inf S", mah_inf_s, GSTAT_ENOTFINITE,
     "mahalanobis: batch element 0 of S has a non-finite value at (2, 1)"},
    {"mahalanobis NaN center", mah_nan_center, GSTAT_ENOTFINITE,
     "mahalanobis: batch element 1 of center has a non-finite value at (1, 0)"},
    {"mahalanobis d2 overlaps X", mah_d_overlaps_x, GSTAT_EINVAL, "mahalanobis: d2 overlaps X"},
    {"mahalanobis device", mah_device, GSTAT_EUNSUPPORTED,
     "mahalanobis: S is in CUDA device memory, but no CUDA backend"},
};

static void test_bad_input(void **state) {
  (void)state;
  gstat_ctx *probe = tu_ctx(GSTAT_BACKEND_AUTO);
  bool gpu = gstat_ctx_cuda_available(probe);
  gstat_ctx_destroy(probe);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    /* host memory marked as device memory: refused only where no CUDA
     * backend exists (a GPU would read it: test_cuda covers device data) */
    if (gpu && strstr(cases[k].name, "device")) continue;
    fixture fx;
    fixture_init(&fx);
    gstat_status st = cases[k].call(&fx);
    const char *msg = gstat_ctx_last_error(fx.ctx);
    if (st != cases[k].status || !strstr(msg, cases[k].message))
      fprintf(stderr, "case '%s': got %d '%s'\n", cases[k].name, (int)st, msg);
    assert_int_equal(st, cases[k].status);
    assert_non_null(strstr(msg, cases[k].message));
    assert_true(strlen(msg) > 0 || cases[k].message[0] == '\0');
    assert_true(tu_untouched(&fx.C) && tu_untouched(&fx.M) && tu_untouched(&fx.D));
    assert_true(fx.sh[0] == -77 && fx.sh[1] == -77);
    /* an Inf shows in the co-moment pass's means: that pass ran */
    if (st != GSTAT_ENOTFINITE) assert_int_equal(gstat_ctx_last_backends(fx.ctx), 0);
    fixture_free(&fx);
  }
}

/* ---- workspace reuse: a loop of same-shape calls allocates nothing ---- */

static void test_workspace_reuse(void **state) {
  (void)state;
  tu_alloc_counter cnt = {0};
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.allocator = tu_counting_allocator(&cnt);
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 3, n = 50, p = 6;
  double *x = malloc(sizeof(double) * (size_t)(nb * n * p)), c[3 * 36], m[3 * 6], d[3 * 50], sh[3];
  double s[3 * 36], fw[50];
  gen_data(&rng, nb * n, p, 1.0, x);
  x[7 * p + 2] = NAN;
  for (int64_t r = 0; r < n; r++) fw[r] = (double)(r % 3);
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, p, 10, s + b * 36);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, nb, n, p);
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, nb, p, p);
  gstat_matrix M = gstat_vector_batch(m, GSTAT_F64, nb, p);
  gstat_matrix S = gstat_matrix_col_major(s, GSTAT_F64, nb, p, p);
  gstat_matrix X0 = X;
  X0.batch = 1;
  X0.rows = 7; /* rows without the NaN, for the shrinkage and the distances */
  gstat_matrix C0 = C, D0 = gstat_vector_batch(d, GSTAT_F64, 1, 7), S0 = S;
  C0.batch = S0.batch = 1;
  int64_t before = 0;
  for (int rep = 0; rep < 4; rep++) {
    for (int mode = 0; mode < 3; mode++) {
      gstat_cov_options o;
      gstat_cov_options_init(&o);
      o.missing = (gstat_missing)mode;
      o.fweights = fw;
      assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_OK);
    }
    assert_int_equal(gstat_cov_shrink(ctx, &X0, GSTAT_SHRINK_LEDOIT_WOLF, 0, &C0, NULL, sh),
                     GSTAT_OK);
    assert_int_equal(gstat_mahalanobis(ctx, &X0, NULL, &S0, 0, &D0), GSTAT_OK);
    assert_int_equal(gstat_mahalanobis(ctx, &X0, NULL, &S0, 1, &D0), GSTAT_OK);
    if (rep == 0) before = cnt.allocs;
  }
  assert_true(before > 1);
  assert_int_equal(cnt.allocs, before);
  gstat_ctx_destroy(ctx);
  assert_int_equal(cnt.allocs, cnt.frees);
  assert_int_equal(cnt.live, 0);
  free(x);
}

static int64_t cov_reports;
static int count_or_stop(int64_t done, int64_t total, const char *what, void *user) {
  assert_string_equal(what, "covariance: rows");
  assert_true(done > 0 && done <= total);
  cov_reports++;
  return user != NULL; /* non-NULL: cancel at the first report */
}

/* A long co-moment reports progress between row blocks and stops when the
 * callback cancels; with reports the result is the one without (the same
 * blocks in the same order). */
static void test_progress_and_cancel(void **state) {
  (void)state;
  enum { N = 60000, P = 200 }; /* ~2.4e9 multiply-adds: several slices by the CPU rules */
  double *x = malloc(sizeof(double) * N * P), *c = malloc(sizeof(double) * P * P);
  double *c2 = malloc(sizeof(double) * P * P);
  assert_true(x && c && c2);
  tu_rng rng = tu_rng_new();
  for (size_t e = 0; e < (size_t)N * P; e++) x[e] = tu_normal(&rng);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, N, P);
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, P, P),
               C2 = gstat_matrix_row_major(c2, GSTAT_F64, 1, P, P);
  int stop = 1;
  gstat_ctx *counting = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, count_or_stop, NULL);
  gstat_ctx *stopping = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, count_or_stop, &stop);
  gstat_ctx *quiet = tu_ctx(GSTAT_BACKEND_CPU);
  cov_reports = 0;
  assert_int_equal(gstat_covariance(counting, &X, NULL, &C, NULL), GSTAT_OK);
  assert_true(cov_reports > 0);
  assert_int_equal(gstat_covariance(quiet, &X, NULL, &C2, NULL), GSTAT_OK);
  assert_memory_equal(c, c2, sizeof(double) * P * P);
  cov_reports = 0;
  assert_int_equal(gstat_covariance(stopping, &X, NULL, &C, NULL), GSTAT_ECANCELED);
  assert_int_equal(cov_reports, 1);
  assert_true(strncmp(gstat_ctx_last_error(stopping), "covariance: rows: cancelled", 27) == 0);
  gstat_ctx_destroy(counting);
  gstat_ctx_destroy(stopping);
  gstat_ctx_destroy(quiet);
  free(x);
  free(c);
  free(c2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layouts_dtypes),     cmocka_unit_test(test_ddof_and_weights),
      cmocka_unit_test(test_numpy_and_r_values), cmocka_unit_test(test_missing_modes),
      cmocka_unit_test(test_small_shapes),       cmocka_unit_test(test_constant_columns),
      cmocka_unit_test(test_large_offset),       cmocka_unit_test(test_inf),
      cmocka_unit_test(test_shrinkage),          cmocka_unit_test(test_shrinkage_sklearn_values),
      cmocka_unit_test(test_mahalanobis),        cmocka_unit_test(test_mahalanobis_not_pd),
      cmocka_unit_test(test_bad_input),          cmocka_unit_test(test_workspace_reuse),
      cmocka_unit_test(test_assume_centered),    cmocka_unit_test(test_progress_and_cancel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
