/* The streaming covariance accumulator: every chunk size (1 included),
 * uneven splits, merges in any order and through exported state arrays give
 * the one-pass gstat_covariance result to 1e-12 relative in float64;
 * weights, COMPLETE skipping (counted), EVERYTHING NaN propagation, input
 * dtypes and layouts, a large offset, tiny counts, bad input and workspace
 * reuse. */
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

/* Rows [r0, r1) of the row-major n x p array v as a 1 x (r1 - r0) x p chunk. */
static gstat_matrix rows_of(double *v, int64_t p, int64_t r0, int64_t r1) {
  return gstat_matrix_row_major(v + r0 * p, GSTAT_F64, 1, r1 - r0, p);
}

/* One-pass result of gstat_covariance on the same rows (column-major p x p). */
static void one_pass(gstat_ctx *ctx, double *v, int64_t n, int64_t p, const double *fw,
                     gstat_missing missing, int64_t ddof, int corr, double *c, double *m) {
  gstat_cov_options o;
  gstat_cov_options_init(&o);
  o.fweights = fw;
  o.missing = missing;
  o.ddof = ddof;
  o.correlation = corr;
  gstat_matrix X = gstat_matrix_row_major(v, GSTAT_F64, 1, n, p);
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, 1, p, p);
  gstat_matrix M = gstat_vector_batch(m, GSTAT_F64, 1, p);
  assert_int_equal(gstat_covariance(ctx, &X, &o, &C, &M), GSTAT_OK);
}

static void from_acc(gstat_ctx *ctx, const gstat_cov_accum *acc, int64_t ddof, int corr, double *c,
                     double *m) {
  int64_t p = gstat_cov_accum_dim(acc);
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, 1, p, p);
  gstat_matrix M = gstat_vector_batch(m, GSTAT_F64, 1, p);
  gstat_status st = gstat_cov_accum_covariance(ctx, acc, ddof, corr, &C, m ? &M : NULL);
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
}

/* Entries agree to tol relative to sqrt(ref_jj ref_kk) (absolute for a
 * correlation); NaN exactly where ref has NaN. */
static void expect_close(const char *what, int64_t p, const double *got, const double *ref,
                         double tol, bool corr) {
  for (int64_t k = 0; k < p; k++)
    for (int64_t j = 0; j < p; j++) {
      double g = got[j + k * p], r = ref[j + k * p], scale = 1;
      if (!corr) {
        double d = sqrt(fabs(ref[j + j * p] * ref[k + k * p]));
        scale = isfinite(d) && d > 0 ? d : fmax(fabs(r), 1e-300);
      }
      if (isnan(r) ? !isnan(g) : !(fabs(g - r) <= tol * scale)) {
        fprintf(stderr, "%s: (%lld, %lld) = %.17g, expected %.17g\n", what, (long long)j,
                (long long)k, g, r);
        fail();
      }
    }
}

static void expect_mean(const char *what, int64_t p, const double *got, const double *ref,
                        double tol) {
  for (int64_t j = 0; j < p; j++)
    if (isnan(ref[j]) ? !isnan(got[j]) : !(fabs(got[j] - ref[j]) <= tol * (fabs(ref[j]) + 1))) {
      fprintf(stderr, "%s: mean %lld = %.17g, expected %.17g\n", what, (long long)j, got[j],
              ref[j]);
      fail();
    }
}

/* Chunks of every size from 1 to n, on data far from zero. */
static void test_chunk_sizes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = tu_quick() ? 23 : 37, p = 5;
  double *v = malloc(sizeof(double) * (size_t)(n * p)), c1[25], m1[5], c2[25], m2[5];
  gen_data(&rng, n, p, 1e3, v);
  gstat_cov_accum *acc;
  assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  for (int corr = 0; corr < 2; corr++) {
    one_pass(ctx, v, n, p, NULL, GSTAT_MISSING_EVERYTHING, 1, corr, c1, m1);
    for (int64_t size = 1; size <= n; size++) {
      gstat_cov_accum_reset(acc);
      for (int64_t r = 0; r < n; r += size) {
        gstat_matrix X = rows_of(v, p, r, r + size < n ? r + size : n);
        assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
      }
      assert_int_equal(gstat_cov_accum_rows(acc), n);
      assert_int_equal(gstat_cov_accum_rows_skipped(acc), 0);
      assert_true(gstat_cov_accum_weight(acc) == (double)n);
      from_acc(ctx, acc, 1, corr, c2, m2);
      char what[64];
      snprintf(what, sizeof what, "chunks of %lld, corr %d", (long long)size, corr);
      expect_close(what, p, c2, c1, 1e-12, corr);
      expect_mean(what, p, m2, m1, 1e-14);
    }
  }
  /* an empty chunk changes nothing */
  gstat_matrix E = rows_of(v, p, 0, 0);
  double before[64], after[64];
  assert_true(gstat_cov_accum_state_size(p) <= 64);
  gstat_cov_accum_export(acc, before);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &E, NULL), GSTAT_OK);
  gstat_cov_accum_export(acc, after);
  assert_memory_equal(before, after, sizeof(double) * gstat_cov_accum_state_size(p));
  gstat_cov_accum_destroy(acc);
  free(v);
  gstat_ctx_destroy(ctx);
}

/* Random uneven splits over several accumulators, merged in a random order
 * (and some through exported state), with frequency weights. */
static void test_uneven_splits_and_merges(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 120, p = 6, parts = 7;
  double *v = malloc(sizeof(double) * (size_t)(n * p)), fw[120], c1[36], m1[6], c2[36], m2[6];
  for (int trial = 0; trial < (tu_quick() ? 3 : 12); trial++) {
    gen_data(&rng, n, p, 50.0, v);
    bool weighted = trial % 2;
    for (int64_t r = 0; r < n; r++) fw[r] = (double)(tu_uniform(&rng) < 0.2 ? 0 : 1 + r % 4);
    gstat_cov_accum *acc[7];
    for (int64_t k = 0; k < parts; k++)
      assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc[k]), GSTAT_OK);
    for (int64_t r = 0; r < n;) { /* chunks of 1..9 rows to random accumulators */
      int64_t len = 1 + (int64_t)(tu_uniform(&rng) * 9), end = r + len < n ? r + len : n;
      int64_t k = (int64_t)(tu_uniform(&rng) * (double)parts);
      gstat_matrix X = rows_of(v, p, r, end);
      assert_int_equal(gstat_cov_accum_add(ctx, acc[k], &X, weighted ? fw + r : NULL), GSTAT_OK);
      r = end;
    }
    /* a random merge tree: fold a random survivor into another */
    int64_t alive = parts;
    double *state_buf = malloc(sizeof(double) * gstat_cov_accum_state_size(p));
    while (alive > 1) {
      int64_t a = (int64_t)(tu_uniform(&rng) * (double)alive),
              b = (int64_t)(tu_uniform(&rng) * (double)(alive - 1));
      if (b >= a) b++;
      if (tu_uniform(&rng) < 0.5) {
        assert_int_equal(gstat_cov_accum_merge(ctx, acc[a], acc[b]), GSTAT_OK);
      } else {
        assert_int_equal(gstat_cov_accum_export(acc[b], state_buf), GSTAT_OK);
        assert_int_equal(gstat_cov_accum_merge_state(ctx, acc[a], state_buf), GSTAT_OK);
      }
      gstat_cov_accum_destroy(acc[b]);
      acc[b] = acc[alive - 1];
      alive--;
    }
    free(state_buf);
    double wsum = 0;
    for (int64_t r = 0; r < n; r++) wsum += weighted ? fw[r] : 1;
    assert_int_equal(gstat_cov_accum_rows(acc[0]), n);
    assert_true(gstat_cov_accum_weight(acc[0]) == wsum);
    for (int64_t ddof = 0; ddof <= 1; ddof++) {
      one_pass(ctx, v, n, p, weighted ? fw : NULL, GSTAT_MISSING_EVERYTHING, ddof, 0, c1, m1);
      from_acc(ctx, acc[0], ddof, 0, c2, m2);
      expect_close("merged", p, c2, c1, 1e-12, false);
      expect_mean("merged", p, m2, m1, 1e-13);
    }
    gstat_cov_accum_destroy(acc[0]);
  }
  free(v);
  gstat_ctx_destroy(ctx);
}

/* Export, then merge_state into an empty accumulator: the very same state;
 * merge_state equals merge; merging an accumulator with itself doubles it. */
static void test_export_roundtrip(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 40, p = 4;
  double v[40 * 4], w[40];
  gen_data(&rng, n, p, 5.0, v);
  for (int64_t r = 0; r < n; r++)
    w[r] = 2 * tu_uniform(&rng); /* non-integer weights are accepted */
  size_t ns = gstat_cov_accum_state_size(p);
  assert_int_equal(ns, 8 + 2 * 4 + 10);
  assert_int_equal(gstat_cov_accum_state_size(0), 0);
  assert_int_equal(gstat_cov_accum_state_size(INT64_MAX), 0);
  double *s1 = malloc(sizeof(double) * ns), *s2 = malloc(sizeof(double) * ns),
         *s3 = malloc(sizeof(double) * ns);
  for (int mode = 0; mode < 2; mode++) {
    gstat_missing miss = mode ? GSTAT_MISSING_COMPLETE : GSTAT_MISSING_EVERYTHING;
    if (mode) v[3 * p + 1] = NAN;
    gstat_cov_accum *a, *b, *c, *d;
    assert_int_equal(gstat_cov_accum_create(ctx, p, miss, &a), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_create(ctx, p, miss, &b), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_create(ctx, p, miss, &c), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_create(ctx, p, miss, &d), GSTAT_OK);
    gstat_matrix X1 = rows_of(v, p, 0, 25), X2 = rows_of(v, p, 25, n);
    assert_int_equal(gstat_cov_accum_add(ctx, a, &X1, w), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_add(ctx, b, &X2, w + 25), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_add(ctx, c, &X2, w + 25), GSTAT_OK);
    /* into an empty accumulator: bit for bit */
    assert_int_equal(gstat_cov_accum_export(a, s1), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_merge_state(ctx, d, s1), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_export(d, s2), GSTAT_OK);
    assert_memory_equal(s1, s2, sizeof(double) * ns);
    assert_int_equal(gstat_cov_accum_rows_skipped(d), mode ? 1 : 0);
    /* merge_state == merge */
    assert_int_equal(gstat_cov_accum_merge(ctx, b, a), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_merge_state(ctx, c, s1), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_export(b, s2), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_export(c, s3), GSTAT_OK);
    assert_memory_equal(s2, s3, sizeof(double) * ns);
    /* self-merge: the data twice */
    double c1[16], c2[16], m1[4], m2[4];
    from_acc(ctx, a, 0, 0, c1, m1);
    assert_int_equal(gstat_cov_accum_merge(ctx, a, a), GSTAT_OK);
    from_acc(ctx, a, 0, 0, c2, m2);
    expect_close("self-merge", p, c2, c1, 1e-15, false);
    expect_mean("self-merge", p, m2, m1, 1e-15);
    assert_int_equal(gstat_cov_accum_rows(a), mode ? 48 : 50);
    gstat_cov_accum_destroy(a);
    gstat_cov_accum_destroy(b);
    gstat_cov_accum_destroy(c);
    gstat_cov_accum_destroy(d);
  }
  free(s1);
  free(s2);
  free(s3);
  gstat_ctx_destroy(ctx);
}

/* COMPLETE: rows with a NaN are skipped and counted, the rest equals
 * gstat_covariance(COMPLETE); a chunk made only of such rows works. */
static void test_complete_skips(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 60, p = 4;
  double v[60 * 4], fw[60], c1[16], m1[4], c2[16], m2[4];
  gen_data(&rng, n, p, 2.0, v);
  int64_t bad = 0;
  for (int64_t r = 0; r < n; r++) {
    fw[r] = (double)(r % 3);
    bool b = r % 7 == 3 || (r >= 20 && r < 24); /* rows 20..23: a chunk of NaN rows only */
    if (b) v[r * p + (r % p)] = NAN;
    bad += b;
  }
  for (int wt = 0; wt < 2; wt++)
    for (int corr = 0; corr < 2; corr++) {
      gstat_cov_accum *acc;
      assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_COMPLETE, &acc), GSTAT_OK);
      for (int64_t r = 0; r < n; r += 4) {
        gstat_matrix X = rows_of(v, p, r, r + 4);
        assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, wt ? fw + r : NULL), GSTAT_OK);
      }
      assert_int_equal(gstat_cov_accum_rows_skipped(acc), bad);
      assert_int_equal(gstat_cov_accum_rows(acc), n - bad);
      one_pass(ctx, v, n, p, wt ? fw : NULL, GSTAT_MISSING_COMPLETE, 1, corr, c1, m1);
      from_acc(ctx, acc, 1, corr, c2, m2);
      expect_close("complete", p, c2, c1, 1e-12, corr);
      expect_mean("complete", p, m2, m1, 1e-13);
      gstat_cov_accum_destroy(acc);
    }
  gstat_ctx_destroy(ctx);
}

/* EVERYTHING: a NaN poisons its column's row and column for good; the
 * other entries are those of the one-pass result. */
static void test_everything_nan(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 30, p = 4;
  double v[30 * 4], fw[30], c1[16], m1[4], c2[16], m2[4];
  gen_data(&rng, n, p, 1.0, v);
  for (int64_t r = 0; r < n; r++) fw[r] = r < 5 ? 0 : 1;
  v[2 * p + 1] = NAN; /* in a zero-weight row, in the first chunk */
  v[17 * p + 3] = NAN;
  for (int wt = 0; wt < 2; wt++) {
    gstat_cov_accum *acc;
    assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
    for (int64_t r = 0; r < n; r += 5) {
      gstat_matrix X = rows_of(v, p, r, r + 5);
      assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, wt ? fw + r : NULL), GSTAT_OK);
    }
    one_pass(ctx, v, n, p, wt ? fw : NULL, GSTAT_MISSING_EVERYTHING, 1, 0, c1, m1);
    from_acc(ctx, acc, 1, 0, c2, m2);
    expect_close("everything", p, c2, c1, 1e-12, false);
    expect_mean("everything", p, m2, m1, 1e-13);
    for (int64_t k = 0; k < p; k++) assert_true(isnan(c2[1 + k * p]) && isnan(c2[3 + k * p]));
    assert_true(isfinite(c2[0]) && isfinite(c2[2 + 2 * p]));
    gstat_cov_accum_destroy(acc);
  }
  gstat_ctx_destroy(ctx);
}

/* Chunks in float32, bfloat16 and strided layouts: accumulated in float64,
 * so they match the float64 computation on the values as stored. */
static void test_dtypes_layouts(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 24, p = 3;
  const gstat_dtype dts[] = {GSTAT_F32, GSTAT_BF16, GSTAT_F64};
  double v[24 * 3], c1[9], m1[3], c2[9], m2[3];
  for (int d = 0; d < 3; d++)
    for (int l = 0; l < TU_LAYOUT_COUNT; l++) {
      gen_data(&rng, n, p, 3.0, v);
      gstat_cov_accum *acc;
      assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
      for (int64_t r = 0; r < n; r += 5) {
        int64_t len = r + 5 < n ? 5 : n - r;
        tu_buf X = tu_buf_new(dts[d], 1, len, p, (tu_layout)l);
        for (int64_t i = 0; i < len; i++)
          for (int64_t j = 0; j < p; j++) {
            tu_set(&X.m, 0, i, j, v[(r + i) * p + j]);
            v[(r + i) * p + j] = tu_get(&X.m, 0, i, j);
          }
        assert_int_equal(gstat_cov_accum_add(ctx, acc, &X.m, NULL), GSTAT_OK);
        tu_buf_free(&X);
      }
      one_pass(ctx, v, n, p, NULL, GSTAT_MISSING_EVERYTHING, 1, 0, c1, m1);
      /* outputs in other dtypes and layouts, guarded */
      tu_buf C = tu_buf_new(GSTAT_F64, 1, p, p, (tu_layout)((l + 1) % TU_LAYOUT_COUNT));
      tu_buf M = tu_buf_new(GSTAT_F64, 1, p, 1, TU_STRIDED);
      assert_int_equal(gstat_cov_accum_covariance(ctx, acc, 1, 0, &C.m, &M.m), GSTAT_OK);
      assert_true(tu_all_written(&C) && tu_outside_untouched(&C) && tu_all_written(&M) &&
                  tu_outside_untouched(&M));
      tu_read(&C.m, 0, c2);
      tu_read(&M.m, 0, m2);
      expect_close("dtypes", p, c2, c1, 1e-12, false);
      expect_mean("dtypes", p, m2, m1, 1e-14);
      tu_buf_free(&C);
      tu_buf_free(&M);
      tu_buf F = tu_buf_new(GSTAT_F32, 1, p, p, TU_ROW_MAJOR);
      assert_int_equal(gstat_cov_accum_covariance(ctx, acc, 1, 0, &F.m, NULL), GSTAT_OK);
      tu_read(&F.m, 0, c2);
      expect_close("float32 output", p, c2, c1, 1e-7, false);
      tu_buf_free(&F);
      gstat_cov_accum_destroy(acc);
    }
  gstat_ctx_destroy(ctx);
}

/* |mean| = 1e8 x spread, one row at a time: the merge formula keeps the
 * accuracy of the two-pass computation (long-double reference). */
static void test_large_offset(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 300, p = 3;
  double *v = malloc(sizeof(double) * (size_t)(n * p)), c[9], m[3], ref[9], rm[3];
  gen_data(&rng, n, p, 1e8, v);
  gstat_cov_accum *acc;
  assert_int_equal(gstat_cov_accum_create(ctx, p, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  for (int64_t r = 0; r < n; r++) {
    gstat_matrix X = rows_of(v, p, r, r + 1);
    assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  }
  /* The reference shifts by the first row before summing: the differences are
   * exact in double, so it needs no long double (valgrind computes long double
   * in double precision, which made a plain sum of 1e8s miss by 1e-7). */
  for (int64_t j = 0; j < p; j++) {
    double s = 0, c0 = v[j];
    for (int64_t r = 0; r < n; r++) s += v[r * p + j] - c0;
    rm[j] = c0 + s / (double)n;
  }
  for (int64_t j = 0; j < p; j++)
    for (int64_t k = 0; k < p; k++) {
      double s = 0;
      for (int64_t r = 0; r < n; r++) s += (v[r * p + j] - rm[j]) * (v[r * p + k] - rm[k]);
      ref[j + k * p] = s / (double)(n - 1);
    }
  from_acc(ctx, acc, 1, 0, c, m);
  expect_close("large offset", p, c, ref, 1e-12, false);
  expect_mean("large offset", p, m, rm, 1e-15);
  gstat_cov_accum_destroy(acc);
  free(v);
  gstat_ctx_destroy(ctx);
}

/* Too few rows for the divisor give NaN; an empty accumulator too; a
 * constant column has NaN correlations and an exactly zero covariance. */
static void test_small_counts(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double v[3 * 2] = {1.5, 7.0, 2.5, 7.0, -0.5, 7.0}, c[4], m[2];
  gstat_cov_accum *acc;
  assert_int_equal(gstat_cov_accum_create(ctx, 2, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  from_acc(ctx, acc, 0, 0, c, m);
  for (int k = 0; k < 4; k++) assert_true(isnan(c[k]));
  assert_true(isnan(m[0]) && isnan(m[1]));
  gstat_matrix X = rows_of(v, 2, 0, 1);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  from_acc(ctx, acc, 1, 0, c, m);
  for (int k = 0; k < 4; k++) assert_true(isnan(c[k]));
  assert_true(m[0] == 1.5 && m[1] == 7.0);
  from_acc(ctx, acc, 0, 0, c, m);
  for (int k = 0; k < 4; k++) assert_true(c[k] == 0);
  X = rows_of(v, 2, 1, 3);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  from_acc(ctx, acc, 1, 0, c, m);
  assert_true(fabs(c[0] - 7.0 / 3.0) < 1e-15); /* var(1.5, 2.5, -0.5) = 7/3 */
  assert_true(c[1] == 0 && c[2] == 0 && c[3] == 0);
  from_acc(ctx, acc, 1, 1, c, m);
  assert_true(c[0] == 1 && isnan(c[1]) && isnan(c[2]) && isnan(c[3]));
  from_acc(ctx, acc, 3, 0, c, m); /* weight 3 - ddof 3 = 0: numpy's division by 0 */
  assert_true(c[0] == INFINITY && isnan(c[1]) && isnan(c[2]) && isnan(c[3]));
  from_acc(ctx, acc, 3, 1, c, m);
  for (int k = 0; k < 4; k++) assert_true(isnan(c[k]));
  /* zero weights only: nothing is defined yet */
  double zw[2] = {0, 0};
  gstat_cov_accum_reset(acc);
  X = rows_of(v, 2, 0, 2);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, zw), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_rows(acc), 2);
  assert_true(gstat_cov_accum_weight(acc) == 0);
  from_acc(ctx, acc, 0, 0, c, m);
  assert_true(isnan(c[0]) && isnan(m[0]));
  gstat_cov_accum_destroy(acc);
  gstat_ctx_destroy(ctx);
}

/* Bad input: status and message; the accumulator is left as it was. */
#define EXPECT_FAIL(call, status, msg)                                               \
  do {                                                                               \
    gstat_status st_ = (call);                                                       \
    const char *m_ = gstat_ctx_last_error(ctx);                                      \
    if (st_ != (status) || !strstr(m_, msg)) {                                       \
      fprintf(stderr, "%s: got %d '%s', expected '%s'\n", #call, (int)st_, m_, msg); \
      fail();                                                                        \
    }                                                                                \
  } while (0)

static void test_bad_input(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_cov_accum *const sentinel = (gstat_cov_accum *)(uintptr_t)16;
  gstat_cov_accum *acc = sentinel, *other;
  EXPECT_FAIL(gstat_cov_accum_create(ctx, 0, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_EINVAL,
              "cov_accum_create: p=0 must be >= 1");
  EXPECT_FAIL(gstat_cov_accum_create(ctx, 3, GSTAT_MISSING_PAIRWISE, &acc), GSTAT_EUNSUPPORTED,
              "cov_accum_create: GSTAT_MISSING_PAIRWISE cannot be accumulated");
  EXPECT_FAIL(gstat_cov_accum_create(ctx, 3, (gstat_missing)7, &acc), GSTAT_EINVAL,
              "cov_accum_create: missing=7 is not a gstat_missing");
  EXPECT_FAIL(gstat_cov_accum_create(ctx, 3, GSTAT_MISSING_EVERYTHING, NULL), GSTAT_EINVAL,
              "cov_accum_create: acc is NULL");
  EXPECT_FAIL(gstat_cov_accum_create(ctx, INT64_MAX / 2, GSTAT_MISSING_EVERYTHING, &acc),
              GSTAT_ENOMEM, "cov_accum_create: p=4611686018427387903 is too large");
  assert_int_equal(gstat_cov_accum_create(NULL, 3, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_EINVAL);
  assert_true(acc == sentinel);
  assert_int_equal(gstat_cov_accum_create(ctx, 3, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_create(ctx, 4, GSTAT_MISSING_EVERYTHING, &other), GSTAT_OK);

  double v[4 * 3] = {1, 2, 3, 4, 5, 6.5, 7, 8, 9, 1, 0, 2}, w[4] = {1, 1, 1, 1}, c[9];
  gstat_matrix X = rows_of(v, 3, 0, 2);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  size_t ns = gstat_cov_accum_state_size(3);
  double *s0 = malloc(sizeof(double) * ns), *s1 = malloc(sizeof(double) * ns);
  double *bad = malloc(sizeof(double) * gstat_cov_accum_state_size(4));
  gstat_cov_accum_export(acc, s0);

  gstat_matrix B = gstat_matrix_row_major(v, GSTAT_F64, 2, 2, 3);
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &B, NULL), GSTAT_EINVAL,
              "cov_accum_add: X is 2 x 2 x 3, expected 1 x rows x 3");
  gstat_matrix P = gstat_matrix_row_major(v, GSTAT_F64, 1, 3, 4);
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &P, NULL), GSTAT_EINVAL,
              "cov_accum_add: X is 1 x 3 x 4, expected 1 x rows x 3");
  P.col_stride = 0;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &P, NULL), GSTAT_EINVAL,
              "cov_accum_add: X.col_stride=0 must be >= 1");
  w[1] = -1;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &X, w), GSTAT_EINVAL,
              "cov_accum_add: weights[1]=-1 must be >= 0");
  w[1] = NAN;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &X, w), GSTAT_EINVAL,
              "cov_accum_add: weights[1]=nan is not finite");
  /* a total weight no double holds: the export would be an array no import takes */
  w[0] = w[1] = 1e308;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &X, w), GSTAT_EINVAL,
              "cov_accum_add: the total weight overflows");
  w[0] = w[1] = 1;
  gstat_cov_accum *big = NULL; /* an accumulator of weight DBL_MAX takes no more */
  assert_int_equal(gstat_cov_accum_create(ctx, 3, GSTAT_MISSING_EVERYTHING, &big), GSTAT_OK);
  memcpy(bad, s0, sizeof(double) * ns);
  bad[6] = DBL_MAX;
  assert_int_equal(gstat_cov_accum_merge_state(ctx, big, bad), GSTAT_OK);
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, big, bad), GSTAT_EINVAL,
              "cov_accum_merge_state: the total weight overflows");
  EXPECT_FAIL(gstat_cov_accum_merge(ctx, big, big), GSTAT_EINVAL,
              "cov_accum_merge: the total weight overflows");
  gstat_cov_accum_destroy(big);
  bad[6] = 4, bad[4] = 9007199254740992.0; /* 2^53 rows and the 4 acc has */
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, acc, bad), GSTAT_EINVAL,
              "cov_accum_merge_state: more than 2^53 rows in one accumulator");
  v[1 * 3 + 2] = INFINITY;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_ENOTFINITE,
              "cov_accum_add: X has an infinite value at (1, 2)");
  v[1 * 3 + 2] = 6.5;
  EXPECT_FAIL(gstat_cov_accum_add(ctx, NULL, &X, NULL), GSTAT_EINVAL, "cov_accum_add: acc is NULL");
  if (!gstat_ctx_cuda_available(ctx)) { /* device rows need the CUDA backend (test_cuda) */
    X.location = GSTAT_CUDA;
    assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_EUNSUPPORTED);
    assert_non_null(strstr(gstat_ctx_last_error(ctx), "CUDA"));
    X.location = GSTAT_HOST;
  }
  EXPECT_FAIL(gstat_cov_accum_merge(ctx, acc, other), GSTAT_EINVAL,
              "cov_accum_merge: other has p=4, missing=0; acc has p=3, missing=0");
  EXPECT_FAIL(gstat_cov_accum_merge(ctx, acc, NULL), GSTAT_EINVAL,
              "cov_accum_merge: other is NULL");
  memcpy(bad, s0, sizeof(double) * ns);
  bad[0] = 12345;
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, acc, bad), GSTAT_EINVAL,
              "cov_accum_merge_state: state is not an array from gstat_cov_accum_export");
  memcpy(bad, s0, sizeof(double) * ns);
  bad[4] = -3;
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, acc, bad), GSTAT_EINVAL,
              "cov_accum_merge_state: state has invalid counts (rows=-3");
  gstat_cov_accum_export(other, bad);
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, acc, bad), GSTAT_EINVAL,
              "cov_accum_merge_state: state has p=4, missing=0; acc has p=3, missing=0");
  EXPECT_FAIL(gstat_cov_accum_merge_state(ctx, acc, NULL), GSTAT_EINVAL,
              "cov_accum_merge_state: state is NULL");
  gstat_matrix C = gstat_matrix_col_major(c, GSTAT_F64, 1, 2, 2);
  EXPECT_FAIL(gstat_cov_accum_covariance(ctx, acc, 1, 0, &C, NULL), GSTAT_EINVAL,
              "cov_accum_covariance: C is 1 x 2 x 2, expected 1 x 3 x 3");
  C = gstat_matrix_col_major(c, GSTAT_F64, 1, 3, 3);
  EXPECT_FAIL(gstat_cov_accum_covariance(ctx, acc, -1, 0, &C, NULL), GSTAT_EINVAL,
              "cov_accum_covariance: ddof=-1 must be >= 0");
  gstat_matrix M = gstat_vector_batch(c + 1, GSTAT_F64, 1, 3);
  EXPECT_FAIL(gstat_cov_accum_covariance(ctx, acc, 1, 0, &C, &M), GSTAT_EINVAL,
              "cov_accum_covariance: mean overlaps C");
  EXPECT_FAIL(gstat_cov_accum_covariance(ctx, acc, 1, 0, NULL, NULL), GSTAT_EINVAL,
              "cov_accum_covariance: C is NULL");
  /* nothing changed */
  gstat_cov_accum_export(acc, s1);
  assert_memory_equal(s0, s1, sizeof(double) * ns);
  /* NULL-tolerant helpers */
  assert_int_equal(gstat_cov_accum_export(NULL, s1), GSTAT_EINVAL);
  assert_int_equal(gstat_cov_accum_export(acc, NULL), GSTAT_EINVAL);
  assert_int_equal(gstat_cov_accum_dim(NULL), 0);
  assert_int_equal(gstat_cov_accum_rows(NULL), 0);
  gstat_cov_accum_destroy(NULL);
  gstat_cov_accum_reset(NULL);
  free(s0);
  free(s1);
  free(bad);
  gstat_cov_accum_destroy(acc);
  gstat_cov_accum_destroy(other);
  gstat_ctx_destroy(ctx);
}

/* Unchecked Inf: accepted, and only its column is spoilt. */
static void test_unchecked_inf(void **state) {
  (void)state;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.check_finite = 0;
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  double v[6] = {1, 2, INFINITY, 3, 5, 7}, c[4];
  gstat_cov_accum *acc;
  assert_int_equal(gstat_cov_accum_create(ctx, 2, GSTAT_MISSING_EVERYTHING, &acc), GSTAT_OK);
  gstat_matrix X = rows_of(v, 2, 0, 3);
  assert_int_equal(gstat_cov_accum_add(ctx, acc, &X, NULL), GSTAT_OK);
  from_acc(ctx, acc, 1, 0, c, NULL);
  assert_true(isfinite(c[3]) && !isfinite(c[0]) && !isfinite(c[1]) && !isfinite(c[2]));
  gstat_cov_accum_destroy(acc);
  gstat_ctx_destroy(ctx);
}

/* Adding chunks of one size, merging and reading out allocate nothing from
 * the context after the first round (the accumulator itself uses malloc). */
static void test_workspace_reuse(void **state) {
  (void)state;
  tu_alloc_counter cnt = {0};
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.allocator = tu_counting_allocator(&cnt);
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  double v[64 * 5], c[25], st[64];
  gen_data(&rng, 64, 5, 1.0, v);
  gstat_cov_accum *a, *b;
  assert_int_equal(gstat_cov_accum_create(ctx, 5, GSTAT_MISSING_COMPLETE, &a), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_create(ctx, 5, GSTAT_MISSING_COMPLETE, &b), GSTAT_OK);
  int64_t before = 0;
  for (int rep = 0; rep < 8; rep++) {
    gstat_matrix X = rows_of(v, 5, rep * 8, rep * 8 + 8);
    assert_int_equal(gstat_cov_accum_add(ctx, rep % 2 ? a : b, &X, NULL), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_merge(ctx, a, b), GSTAT_OK);
    gstat_cov_accum_export(b, st);
    assert_int_equal(gstat_cov_accum_merge_state(ctx, a, st), GSTAT_OK);
    from_acc(ctx, a, 1, 1, c, NULL);
    if (rep == 0) before = cnt.allocs;
  }
  assert_true(before > 1);
  assert_int_equal(cnt.allocs, before);
  gstat_cov_accum_destroy(a);
  gstat_cov_accum_destroy(b);
  gstat_ctx_destroy(ctx);
  assert_int_equal(cnt.allocs, cnt.frees);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chunk_sizes),      cmocka_unit_test(test_uneven_splits_and_merges),
      cmocka_unit_test(test_export_roundtrip), cmocka_unit_test(test_complete_skips),
      cmocka_unit_test(test_everything_nan),   cmocka_unit_test(test_dtypes_layouts),
      cmocka_unit_test(test_large_offset),     cmocka_unit_test(test_small_counts),
      cmocka_unit_test(test_bad_input),        cmocka_unit_test(test_unchecked_inf),
      cmocka_unit_test(test_workspace_reuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
