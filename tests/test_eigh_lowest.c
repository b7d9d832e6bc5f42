/* The m smallest eigenpairs of small matrices (src/backend/cpu/eigh_lowest.h,
 * internal API), float and double: for every matrix family of the eigh tests,
 * Laplacians of connected and disconnected graphs (a multiple eigenvalue 0),
 * exactly repeated eigenvalues, diagonal matrices (no reflectors), orders 1..128
 * and m from 1 to n: eigenvalues equal the full small eigh's, residuals
 * ||A v - lambda v|| and orthonormality within LAPACK's ratios, the sign
 * convention of the full eigh, and NaN input reported with NaN outputs. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/eigh_lowest.h"
#include "backend/cpu/eigh_small.h"
#include "testutil.h"

/* Laplacian of a random graph of `parts` equal blocks (no edges between
 * blocks: `parts` components when each block is connected; a ring inside
 * each block makes sure it is). */
static void laplacian(tu_rng *r, int64_t n, int64_t parts, double *a) {
  memset(a, 0, sizeof(double) * (size_t)(n * n));
  int64_t size = (n + parts - 1) / parts;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++) {
      bool same = i / size == j / size;
      bool ring = same && (i == j + 1 || (i % size == size - 1 && j % size == 0));
      double v = same && (ring || tu_uniform(r) < 0.3) ? 0.5 + tu_uniform(r) : 0.0;
      a[i + j * n] = a[j + i * n] = -v;
      a[i + i * n] += v;
      a[j + j * n] += v;
    }
}

/* Q diag(1, 1, 1, 2, 3, ...) Q^T: the smallest eigenvalue three times. */
static void repeated(tu_rng *r, int64_t n, double *a) {
  double *q = malloc(sizeof(double) * (size_t)(n * n));
  tu_orthogonal(r, n, q);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t k = 0; k < n; k++)
        s += q[i + k * n] * (k < 3 ? 1.0 : (double)(k - 1)) * q[j + k * n];
      a[i + j * n] = s;
    }
  free(q);
}

static void *alloc64(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 64) / 64 * 64);
  assert_non_null(p);
  return p;
}

/* Solve the m smallest pairs of a (double, n x n) in the precision asked, and
 * check them against the full small eigh of the same matrix. */
static void check(const double *a, int64_t n, int64_t m, bool f32, const char *what) {
  double ulp = f32 ? FLT_EPSILON : DBL_EPSILON;
  size_t es = f32 ? sizeof(float) : sizeof(double);
  void *work = alloc64(gstat_i_eigh_lowest_workspace(n, m, es));
  void *fwork = alloc64(gstat_i_eigh_small_workspace(n, 1, es));
  double *v = malloc(sizeof(double) * (size_t)(n * n)), *w = malloc(sizeof(double) * (size_t)n);
  double *full = malloc(sizeof(double) * (size_t)(n * n)), *wf = malloc(sizeof(double) * (size_t)n);
  double *as = malloc(sizeof(double) * (size_t)(n * n)); /* a as the solver saw it */
  if (f32) {
    float *x = malloc(sizeof(float) * (size_t)(n * n)),
          *y = malloc(sizeof(float) * (size_t)(n * n));
    float *xw = malloc(sizeof(float) * (size_t)n), *yw = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n * n; i++) x[i] = y[i] = (float)a[i];
    for (int64_t i = 0; i < n * n; i++) as[i] = (double)x[i];
    assert_int_equal(gstat_i_eigh_lowest_f32(n, x, n, m, xw, work), 0);
    assert_int_equal(gstat_i_eigh_small_f32(n, y, n, yw, 1, fwork), 0);
    for (int64_t i = 0; i < n * n; i++) {
      v[i] = (double)x[i];
      full[i] = (double)y[i];
    }
    for (int64_t i = 0; i < n; i++) {
      w[i] = i < m ? (double)xw[i] : 0;
      wf[i] = (double)yw[i];
    }
    free(x), free(y), free(xw), free(yw);
  } else {
    memcpy(v, a, sizeof(double) * (size_t)(n * n));
    memcpy(full, a, sizeof(double) * (size_t)(n * n));
    memcpy(as, a, sizeof(double) * (size_t)(n * n));
    assert_int_equal(gstat_i_eigh_lowest_f64(n, v, n, m, w, work), 0);
    assert_int_equal(gstat_i_eigh_small_f64(n, full, n, wf, 1, fwork), 0);
  }
  double an = tu_norm1(n, n, as), scale = an > 0 ? an : 1;
  for (int64_t j = 0; j < m; j++) {
    /* eigenvalues: the full solver's, ascending */
    if (fabs(w[j] - wf[j]) > 4 * (double)n * ulp * scale)
      fail_msg("%s n=%lld m=%lld f32=%d: w[%lld] = %.17g, full eigh %.17g", what, (long long)n,
               (long long)m, f32, (long long)j, w[j], wf[j]);
    if (j > 0) assert_true(w[j] >= w[j - 1]);
    /* residual and orthonormality, LAPACK's ratios */
    const double *vj = v + j * n;
    double res = 0, big = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
      double s = -w[j] * vj[i];
      for (int64_t k = 0; k < n; k++) s += as[i + k * n] * vj[k];
      res += fabs(s);
      if (fabs(vj[i]) > big) {
        big = fabs(vj[i]);
        at = i;
      }
    }
    if (res / (scale * (double)n * ulp) > 30)
      fail_msg("%s n=%lld m=%lld f32=%d: pair %lld residual ratio %.1f", what, (long long)n,
               (long long)m, f32, (long long)j, res / (scale * (double)n * ulp));
    for (int64_t k = 0; k <= j; k++) {
      double dot = 0;
      for (int64_t i = 0; i < n; i++) dot += vj[i] * v[i + k * n];
      if (fabs(dot - (k == j)) / ((double)n * ulp) > 30)
        fail_msg("%s n=%lld m=%lld f32=%d: columns %lld, %lld: dot %.3g", what, (long long)n,
                 (long long)m, f32, (long long)j, (long long)k, dot);
    }
    /* the sign convention: the (first) largest-magnitude entry is positive */
    assert_true(vj[at] > 0);
  }
  free(work), free(fwork), free(v), free(w), free(full), free(wf), free(as);
}

static void test_families(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  const int64_t sizes[] = {1, 2, 3, 5, 17, 48, 64, 100, 128};
  size_t count = tu_quick() ? 7 : sizeof sizes / sizeof *sizes; /* valgrind: up to 64 */
  for (int f32 = 0; f32 < 2; f32++)
    for (size_t s = 0; s < count; s++) {
      int64_t n = sizes[s];
      double *a = malloc(sizeof(double) * (size_t)(n * n));
      const int64_t ms[] = {1, 2, 3, n};
      for (int fam = 0; fam < TU_FAMILY_COUNT; fam++) {
        /* near over/underflow: float data cannot hold the double family */
        if (f32 && (fam == TU_NEAR_OVERFLOW || fam == TU_NEAR_UNDERFLOW)) continue;
        tu_symmetric(&rng, (tu_family)fam, n, f32 ? FLT_EPSILON : DBL_EPSILON, f32, a);
        for (int k = 0; k < 4; k++)
          if (ms[k] <= n) check(a, n, ms[k], f32, tu_family_name((tu_family)fam));
      }
      for (int64_t parts = 1; parts <= 3 && parts <= n; parts++) {
        laplacian(&rng, n, parts, a);
        for (int k = 0; k < 4; k++)
          if (ms[k] <= n) check(a, n, ms[k], f32, parts == 1 ? "laplacian" : "disconnected");
      }
      if (n >= 4) {
        repeated(&rng, n, a);
        for (int k = 0; k < 4; k++) check(a, n, ms[k], f32, "repeated");
      }
      for (int64_t i = 0; i < n * n; i++) a[i] = 0;
      for (int64_t i = 0; i < n; i++) a[i + i * n] = (double)((i * 7) % n) - 3.0; /* diagonal */
      for (int k = 0; k < 4; k++)
        if (ms[k] <= n) check(a, n, ms[k], f32, "diagonal");
      free(a);
    }
}

static void test_nan(void **state) {
  (void)state;
  const int64_t n = 20, m = 3;
  double a[20 * 20], w[20];
  for (int64_t i = 0; i < n * n; i++) a[i] = (double)(i % 7);
  a[5 + 2 * n] = NAN;
  void *work = alloc64(gstat_i_eigh_lowest_workspace(n, m, 8));
  assert_true(gstat_i_eigh_lowest_f64(n, a, n, m, w, work) > 0);
  for (int64_t j = 0; j < m; j++) {
    assert_true(isnan(w[j]));
    for (int64_t i = 0; i < n; i++) assert_true(isnan(a[i + j * n]));
  }
  free(work);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_families), cmocka_unit_test(test_nan)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
