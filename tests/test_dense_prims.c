/* The scheduler's dense primitives on host descriptors (backend/sched.h,
 * internal API), which the CPU backend runs: the batched GEMM against a
 * naive product for every pair of transposes and every layout of A, B and C
 * (row- and column-major, strided: BLAS as they lie or through a dense
 * copy), a shared A of batch 1, beta 0 and 1; the thin QR's Q orthonormal
 * with the span of the input, in every layout; the PCA components' rows
 * orthonormalized in their order (Cholesky QR once, twice, or Gram-Schmidt
 * when the rows are nearly dependent) against Gram-Schmidt done here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/dense.h"
#include "backend/gemm_view.h"
#include "backend/sched.h"
#include "pca/pca_internal.h"
#include "testutil.h"

static double op_get(const gstat_matrix *m, gstat_trans t, int64_t b, int64_t i, int64_t j) {
  int64_t e = m->batch == 1 ? 0 : b;
  return t == GSTAT_TRANS ? tu_get(m, e, j, i) : tu_get(m, e, i, j);
}

static void fill(tu_rng *rng, gstat_matrix *m) {
  for (int64_t b = 0; b < m->batch; b++)
    for (int64_t i = 0; i < m->rows; i++)
      for (int64_t j = 0; j < m->cols; j++) tu_set(m, b, i, j, tu_normal(rng));
}

static void gemm_case(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, gstat_trans tb, tu_layout la,
                      tu_layout lb, tu_layout lc, int64_t a_batch, double beta) {
  const int64_t nb = 3, m = 7, n = 5, k = 4;
  tu_rng rng = tu_rng_new();
  tu_buf A =
      ta == GSTAT_TRANS ? tu_buf_new(dt, a_batch, k, m, la) : tu_buf_new(dt, a_batch, m, k, la);
  tu_buf B = tb == GSTAT_TRANS ? tu_buf_new(dt, nb, n, k, lb) : tu_buf_new(dt, nb, k, n, lb);
  tu_buf C = tu_buf_new(dt, nb, m, n, lc);
  fill(&rng, &A.m);
  fill(&rng, &B.m);
  fill(&rng, &C.m);
  double want[3 * 7 * 5];
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t t = 0; t < k; t++) s += op_get(&A.m, ta, b, i, t) * op_get(&B.m, tb, b, t, j);
        want[(b * m + i) * n + j] = 1.5 * s + beta * tu_get(&C.m, b, i, j);
      }
  assert_int_equal(gstat_i_sched_gemm(ctx, "test", ta, tb, 1.5, &A.m, &B.m, beta, &C.m), GSTAT_OK);
  double tol = dt == GSTAT_F64 ? 1e-13 : 1e-5;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        assert_true(fabs(tu_get(&C.m, b, i, j) - want[(b * m + i) * n + j]) <= tol * 10);
  assert_true(tu_outside_untouched(&C)); /* a strided C's gaps too */
  tu_buf_free(&A);
  tu_buf_free(&B);
  tu_buf_free(&C);
}

static void test_gemm_layouts(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  for (int d = 0; d < 2; d++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int la = 0; la < TU_LAYOUT_COUNT; la++)
          for (int lb = 0; lb < TU_LAYOUT_COUNT; lb++)
            for (int lc = 0; lc < TU_LAYOUT_COUNT; lc++)
              gemm_case(ctx, dts[d], ta ? GSTAT_TRANS : GSTAT_NO_TRANS,
                        tb ? GSTAT_TRANS : GSTAT_NO_TRANS, (tu_layout)la, (tu_layout)lb,
                        (tu_layout)lc, 1 + 2 * ((la + lb + lc) % 2), (double)((la + lc) % 2));
  gstat_ctx_destroy(ctx);
}

static void test_orthonormalize_layouts(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t nb = 2, m = 9, n = 4;
  for (int d = 0; d < 2; d++)
    for (int l = 0; l < TU_LAYOUT_COUNT; l++) {
      gstat_dtype dt = d ? GSTAT_F64 : GSTAT_F32;
      double tol = d ? 1e-12 : 1e-5;
      tu_rng rng = tu_rng_new();
      tu_buf A = tu_buf_new(dt, nb, m, n, (tu_layout)l);
      fill(&rng, &A.m);
      double a0[2 * 9 * 4];
      for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < m; i++)
          for (int64_t j = 0; j < n; j++) a0[(b * m + i) * n + j] = tu_get(&A.m, b, i, j);
      assert_int_equal(gstat_i_sched_orthonormalize(ctx, "test", &A.m), GSTAT_OK);
      for (int64_t b = 0; b < nb; b++)
        for (int64_t p = 0; p < n; p++) {
          for (int64_t q = 0; q < n; q++) { /* Q^T Q = I */
            double s = 0;
            for (int64_t i = 0; i < m; i++) s += tu_get(&A.m, b, i, p) * tu_get(&A.m, b, i, q);
            assert_true(fabs(s - (p == q)) <= tol * 10);
          }
          /* column p of the input lies in the span: Q Q^T a = a */
          double c[4] = {0, 0, 0, 0};
          for (int64_t q = 0; q < n; q++)
            for (int64_t i = 0; i < m; i++) c[q] += tu_get(&A.m, b, i, q) * a0[(b * m + i) * n + p];
          for (int64_t i = 0; i < m; i++) {
            double r = a0[(b * m + i) * n + p];
            for (int64_t q = 0; q < n; q++) r -= tu_get(&A.m, b, i, q) * c[q];
            assert_true(fabs(r) <= tol * 100);
          }
        }
      tu_buf_free(&A);
    }
  gstat_ctx_destroy(ctx);
}

/* k = 0 with A and B as gstat_matrix_col_major / _row_major make them (a
 * zero stride along the empty side): every backend takes them as they lie
 * (gemm_view gives a BLAS view with ld >= 1, as cuBLAS requires; it used to
 * give none, with ld 0) and C becomes beta C. */
static void test_gemm_empty_k(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double a[1] = {0}, b[1] = {0}, c[6];
  for (int t = 0; t < 16; t++) {
    gstat_trans ta = t & 1 ? GSTAT_TRANS : GSTAT_NO_TRANS,
                tb = t & 2 ? GSTAT_TRANS : GSTAT_NO_TRANS;
    int64_t ar = ta == GSTAT_TRANS ? 0 : 3, ac = 3 - ar, br = tb == GSTAT_TRANS ? 2 : 0,
            bc = 2 - br;
    gstat_matrix A = t & 4 ? gstat_matrix_row_major(a, GSTAT_F64, 1, ar, ac)
                           : gstat_matrix_col_major(a, GSTAT_F64, 1, ar, ac);
    gstat_matrix B = t & 8 ? gstat_matrix_row_major(b, GSTAT_F64, 1, br, bc)
                           : gstat_matrix_col_major(b, GSTAT_F64, 1, br, bc);
    for (int lc = 0; lc < 2; lc++) {
      gstat_matrix C = lc ? gstat_matrix_row_major(c, GSTAT_F64, 1, 3, 2)
                          : gstat_matrix_col_major(c, GSTAT_F64, 1, 3, 2);
      gstat_i_gemm_plan p = gstat_i_gemm_plan_of(ta, tb, &A, &B, &C);
      assert_true(p.ok);
      assert_int_equal(p.k, 0);
      assert_true(p.ld1 >= (p.t1 == GSTAT_NO_TRANS && p.m > 1 ? p.m : 1));
      assert_true(p.ld2 >= (p.t2 == GSTAT_TRANS && p.n > 1 ? p.n : 1));
      for (int i = 0; i < 6; i++) c[i] = (double)(i + 1);
      assert_int_equal(gstat_i_sched_gemm(ctx, "test", ta, tb, 1.0, &A, &B, 0.5, &C), GSTAT_OK);
      for (int i = 0; i < 6; i++) assert_true(c[i] == 0.5 * (double)(i + 1));
    }
  }
  gstat_ctx_destroy(ctx);
}

/* moments_req.h's last step on sums accumulated one row after another with
 * one FMA each (a GPU GEMM's order; the CPU's BLAS sums in blocks and errs
 * far less): columns constant on the pair's rows but away from their shift
 * have an exactly zero variance and co-moment on the CPU, which the rule
 * must find at 2^20 rows too, where such sums err by hundreds of eps. */
static void test_pairwise_sums_rows_in_order(void **state) {
  (void)state;
  enum { P = 16 };
  const int64_t n = (int64_t)1 << 20, pp = P * P;
  tu_rng rng = tu_rng_new();
  double *w = malloc(sizeof(double) * (size_t)n), *g = calloc((size_t)(7 * pp + P), sizeof(double));
  assert_non_null(w);
  assert_non_null(g);
  double *W = g, *S = g + pp, *Q = g + 2 * pp, *P2 = g + 3 * pp, *C = g + 4 * pp, *V = g + 5 * pp;
  double *mean = g + 6 * pp, *shift = g + 7 * pp, x0[P];
  for (int64_t i = 0; i < n; i++) w[i] = 0.25 + 2.75 * tu_uniform(&rng);
  for (int a = 0; a < P; a++) { /* x - shift: a constant off zero, as x0 where the mean moved */
    x0[a] = -(1e3 / 7 + 37.0 * (double)a + tu_uniform(&rng));
    shift[a] = 1.0;
  }
  for (int a = 0; a < P; a++) { /* every row present: a's sums are the same with any b */
    double sw = 0, ss = 0, sq = 0, sqa = x0[a] * x0[a];
    for (int64_t i = 0; i < n; i++) {
      sw = fma(1.0, w[i], sw);
      ss = fma(x0[a], w[i], ss);
      sq = fma(sqa, w[i], sq);
    }
    for (int b = 0; b < P; b++) {
      W[a + b * P] = sw;
      S[a + b * P] = ss;
      Q[a + b * P] = sq;
      P2[a + b * P] = x0[a] * x0[b] * sw; /* unused: a zero variance makes the co-moment 0 */
    }
  }
  gstat_i_pairwise_out o = {mean, W, NULL, C, V};
  gstat_i_pairwise_from_sums(P, n, shift, S, Q, P2, &o);
  for (int k = 0; k < pp; k++)
    if (V[k] != 0.0 || C[k] != 0.0)
      fail_msg("pair %d: variance %.3g, co-moment %.3g of rows where it is constant (Q %.17g)", k,
               V[k], C[k], Q[k]);
  free(w);
  free(g);
}

/* Products with one column or one row of C (run as matrix-vector products
 * on the CPU): every transpose pair, padded leading dimensions, alpha and
 * beta, both dtypes, against the sums in double. */
static void test_gemm_vector_shapes(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t K = 37, L = 29, pad = 3;
  double a[(L + pad) * K + (K + pad) * L], b[(K + pad) * L + (L + pad) * K], c[(L + pad) * L];
  for (int dt = 0; dt < 2; dt++)
    for (int shape = 0; shape < 2; shape++) /* m = 1 or n = 1 */
      for (int t = 0; t < 4; t++) {
        gstat_trans ta = t & 1 ? GSTAT_TRANS : GSTAT_NO_TRANS,
                    tb = t & 2 ? GSTAT_TRANS : GSTAT_NO_TRANS;
        const int64_t m = shape ? 1 : L, n = shape ? L : 1, k = K;
        const int64_t ar = ta == GSTAT_NO_TRANS ? m : k, br = tb == GSTAT_NO_TRANS ? k : n;
        const int64_t lda = ar + pad, ldb = br + pad, ldc = m + pad;
        float af[sizeof a / sizeof a[0]], bf[sizeof b / sizeof b[0]], cf[sizeof c / sizeof c[0]];
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
          af[i] = (float)(a[i] = tu_uniform(&rng) - 0.5);
        for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
          bf[i] = (float)(b[i] = tu_uniform(&rng) - 0.5);
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
          cf[i] = (float)(c[i] = tu_uniform(&rng) - 0.5);
        double c0[sizeof c / sizeof c[0]];
        memcpy(c0, c, sizeof c);
        const double alpha = 1.25, beta = -0.5;
        gstat_dtype d = dt ? GSTAT_F32 : GSTAT_F64;
        assert_int_equal(
            gstat_i_gemm(ctx, d, ta, tb, m, n, k, alpha, dt ? (void *)af : (void *)a, lda,
                         dt ? (void *)bf : (void *)b, ldb, beta, dt ? (void *)cf : (void *)c, ldc),
            GSTAT_OK);
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < ldc; i++) {
            double want = c0[i + j * ldc];
            if (i < m) {
              double sum = 0;
              for (int64_t q = 0; q < k; q++) {
                double x = ta == GSTAT_NO_TRANS ? a[i + q * lda] : a[q + i * lda];
                double y = tb == GSTAT_NO_TRANS ? b[q + j * ldb] : b[j + q * ldb];
                if (dt) x = (float)x, y = (float)y;
                sum += x * y;
              }
              want = alpha * sum + beta * (dt ? (double)(float)want : want);
            } else if (dt) {
              want = (float)want;
            }
            double got = dt ? (double)cf[i + j * ldc] : c[i + j * ldc];
            if (!(fabs(got - want) <= (dt ? 1e-5 : 1e-13) * (double)k))
              fail_msg("dtype %d m %lld n %lld ta %d tb %d: C(%lld, %lld) %.17g, want %.17g", dt,
                       (long long)m, (long long)n, (int)ta, (int)tb, (long long)i, (long long)j,
                       got, want);
          }
      }
  gstat_ctx_destroy(ctx);
}

/* Modified Gram-Schmidt twice on the k rows of V (length p), in place. */
static void gram_schmidt_rows(double *V, int64_t k, int64_t p) {
  for (int64_t i = 0; i < k; i++) {
    double *r = V + i * p, n = 0;
    for (int pass = 0; pass < 2; pass++)
      for (int64_t q = 0; q < i; q++) {
        double d = 0;
        for (int64_t j = 0; j < p; j++) d += r[j] * V[q * p + j];
        for (int64_t j = 0; j < p; j++) r[j] -= d * V[q * p + j];
      }
    for (int64_t j = 0; j < p; j++) n += r[j] * r[j];
    for (int64_t j = 0; j < p; j++) r[j] /= sqrt(n);
  }
}

/* k rows of length p: orthonormal rows, then row i plus tilt i^2 times row 0,
 * each normalized (tilt 1e-7: Cholesky QR once, 1e-2: twice, 1e9: rows
 * nearly dependent, Gram-Schmidt). Compared with Gram-Schmidt here: the
 * same rows up to rounding, and orthonormal. */
static void rows_case(gstat_ctx *ctx, int64_t k, int64_t p, double tilt) {
  tu_rng rng = tu_rng_new();
  double *V = malloc(sizeof(double) * (size_t)(k * p)),
         *Q = malloc(sizeof(double) * (size_t)(k * p));
  assert_non_null(V);
  assert_non_null(Q);
  for (int64_t e = 0; e < k * p; e++) V[e] = tu_normal(&rng);
  gram_schmidt_rows(V, k, p);
  for (int64_t i = 0; i < k; i++) {
    double *r = V + i * p, n = 0;
    for (int64_t j = 0; j < p; j++) r[j] += tilt * (double)(i * i) * V[j];
    for (int64_t j = 0; j < p; j++) n += r[j] * r[j];
    for (int64_t j = 0; j < p; j++) r[j] /= sqrt(n);
  }
  memcpy(Q, V, sizeof(double) * (size_t)(k * p));
  assert_int_equal(gstat_i_pca_orthonormalize_rows(ctx, Q, k, p), GSTAT_OK);
  gram_schmidt_rows(V, k, p); /* the reference */
  double diff = 0, orth = 0;
  for (int64_t e = 0; e < k * p; e++) diff = fmax(diff, fabs(Q[e] - V[e]));
  for (int64_t a = 0; a < k; a++)
    for (int64_t b = 0; b <= a; b++) {
      double d = 0;
      for (int64_t j = 0; j < p; j++) d += Q[a * p + j] * Q[b * p + j];
      orth = fmax(orth, fabs(d - (a == b)));
    }
  /* nearly dependent rows: the later ones are rounding, only orthonormality holds */
  if (!(orth < 1e-13) || !(tilt > 1 || diff < 1e-10))
    fail_msg("k %lld p %lld tilt %g: |Q^T Q - I| %.2e, |Q - Gram-Schmidt| %.2e", (long long)k,
             (long long)p, tilt, orth, diff);
  free(V);
  free(Q);
}

static void test_pca_rows_orthonormal_in_order(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const double tilts[] = {1e-7, 1e-2, 1e9};
  for (int t = 0; t < 3; t++) {
    rows_case(ctx, 10, 3000, tilts[t]);
    rows_case(ctx, 70, 500, tilts[t]); /* more rows than one Gram-Schmidt block */
  }
  rows_case(ctx, 2, 2, 1e-7);
  rows_case(ctx, 1, 50, 1e-7);
  gstat_ctx_destroy(ctx);
}

/* The sign rule: each row's first entry of largest magnitude made positive
 * (ties: the first; NaN at the front: that entry decides, as one pass over the
 * row compares). */
static void test_pca_signs_first_largest(void **state) {
  (void)state;
  double rows[5][9] = {{0.5, -0.5, 0, 0, 0, 0, 0, 0, 0},
                       {-0.5, 0.5, 0, 0, 0, 0, 0, 0, 0},
                       {0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, -0.9},
                       {0.1, -0.9, 0.3, 0.1, 0.2, 0.3, 0.9, 0.2, -0.9},
                       {NAN, -3, 0, 0, 0, 0, 0, 0, 0}};
  const double first[5] = {0.5, 0.5, -0.1, -0.1, NAN}, largest[5] = {0.5, 0.5, 0.9, 0.9, -3};
  const int64_t at[5] = {0, 0, 8, 1, 1};
  gstat_i_pca_fix_signs(&rows[0][0], 5, 9);
  for (int i = 0; i < 5; i++) {
    if (i < 4) assert_true(rows[i][0] == first[i]);
    assert_true(rows[i][at[i]] == largest[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_empty_k),
      cmocka_unit_test(test_gemm_vector_shapes),
      cmocka_unit_test(test_gemm_layouts),
      cmocka_unit_test(test_orthonormalize_layouts),
      cmocka_unit_test(test_pairwise_sums_rows_in_order),
      cmocka_unit_test(test_pca_rows_orthonormal_in_order),
      cmocka_unit_test(test_pca_signs_first_largest),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
