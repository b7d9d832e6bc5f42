/*
 * The CUDA backend on a real GPU: LAPACK's ratios over families, sizes and
 * layouts with data on the host and on the device; agreement with the CPU
 * backend (eigenvalues, identical signs); the 100000 x 16 batch; zero device
 * allocations after the first call of a shape; and the fallback paths driven
 * by GSTAT_CUDA_FAULT; batch spectral clustering of graphs in device memory
 * against the host engine; kNN of device and host data equal to the CPU's
 * (random, lattice, duplicated and offset points). Without a usable GPU the program reports itself
 * skipped (exit 77, ctest's SKIP_RETURN_CODE) and tests nothing.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stats_matrix.h"
#include "graph_device.h"
#include "testutil.h"

static const double max_ratio = 60;

/* Bytes a host buffer's elements span (its guards excluded: tu_buf_new). */
static size_t span_of(const tu_buf *h) {
  return h->raw_bytes - 128;
}

/* A host buffer's elements copied into device memory with the same strides. */
static gstat_matrix to_device(const tu_buf *h, void **dptr) {
  gstat_matrix d = h->m;
  size_t span = span_of(h);
  assert_int_equal(cudaMalloc(dptr, span), cudaSuccess);
  assert_int_equal(cudaMemcpy(*dptr, h->m.data, span, cudaMemcpyHostToDevice), cudaSuccess);
  d.data = *dptr;
  d.location = GSTAT_CUDA;
  return d;
}

static void from_device(tu_buf *h, void *dptr) {
  assert_int_equal(cudaMemcpy(h->m.data, dptr, span_of(h), cudaMemcpyDeviceToHost), cudaSuccess);
}

/* A (float32, nb x n x n) filled with random symmetric matrices; their
 * values as doubles (nb * n * n, column-major each), which the caller frees. */
static double *random_batch(tu_buf *A) {
  const int64_t n = A->m.rows, nb = A->m.batch;
  tu_rng rng = tu_rng_new();
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
  for (int64_t b = 0; b < nb; b++) {
    tu_symmetric(&rng, TU_RANDOM, n, FLT_EPSILON, true, a + b * n * n);
    tu_store_matrix(A, b, a + b * n * n);
  }
  return a;
}

static gstat_device_stats stats_of(const gstat_ctx *ctx) {
  gstat_device_stats ds;
  assert_int_equal(gstat_ctx_device_stats(ctx, &ds, sizeof ds), GSTAT_OK);
  assert_int_equal(ds.allocations, gstat_ctx_device_allocations(ctx));
  return ds;
}

/* eigh on the GPU (host or device data) against ratios and the CPU. */
/* Largest and second largest magnitude in column j: a near tie makes the
 * sign rule ambiguous within rounding, so signs may differ there. */
static bool sign_is_clear(const gstat_matrix *V, int64_t b, int64_t j) {
  double m1 = 0, m2 = 0;
  for (int64_t k = 0; k < V->rows; k++) {
    double m = fabs(tu_get(V, b, k, j));
    if (m > m1)
      m2 = m1, m1 = m;
    else if (m > m2)
      m2 = m;
  }
  return m1 - m2 > 1e-3 * m1;
}

/* Element b of a GPU result (w, v: n values, n x n column-major) against
 * the CPU's (Wc, Vc): values within wtol; the vector of every eigenvalue
 * farther than gap * max|w| from its neighbours points the same way (dot >
 * min_dot; the same sign where the CPU's sign rule is clear). */
static void expect_like_cpu(const tu_buf *Wc, const tu_buf *Vc, int64_t b, int64_t n,
                            const double *w, const double *v, double wtol, double gap,
                            double min_dot) {
  double scale = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(w[i]));
  for (int64_t i = 0; i < n; i++) {
    assert_true(fabs(w[i] - tu_get(&Wc->m, b, i, 0)) <= wtol * fmax(scale, DBL_MIN));
    double g = INFINITY;
    if (i > 0) g = fmin(g, w[i] - w[i - 1]);
    if (i + 1 < n) g = fmin(g, w[i + 1] - w[i]);
    if (g > gap * scale) {
      double dot = 0;
      for (int64_t k = 0; k < n; k++) dot += v[k + i * n] * tu_get(&Vc->m, b, k, i);
      assert_true(sign_is_clear(&Vc->m, b, i) ? dot > min_dot : fabs(dot) > min_dot);
    }
  }
}

/* eigh of nb matrices of family fam on the GPU (host or device arrays;
 * NaN in the triangle not read) against the CPU: LAPACK's ratios, and
 * eigenvalues and vectors like the CPU's. bf16 (float32 computation rounded to bf16): ratios in
 * units of the bf16 rounding, agreement to a bf16 rounding. */
static void eigh_case(gstat_ctx *gpu, gstat_ctx *cpu, gstat_dtype dt, tu_family fam, int64_t n,
                      int64_t nb, tu_layout layout, gstat_uplo uplo, bool device) {
  const bool bf16 = dt == GSTAT_BF16;
  const double bf16_ulp = 1.0 / 128; /* bf16 epsilon, 2^-7 */
  double gen_ulp = dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON, ulp = bf16 ? bf16_ulp : gen_ulp;
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(dt, nb, n, n, layout), W = tu_buf_new(dt, nb, n, 1, TU_COL_MAJOR);
  tu_buf V = tu_buf_new(dt, nb, n, n, layout), Wc = tu_buf_new(dt, nb, n, 1, TU_COL_MAJOR);
  tu_buf Vc = tu_buf_new(dt, nb, n, n, layout);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n + 1));
  for (int64_t b = 0; b < nb; b++) {
    tu_symmetric(&rng, fam, n, gen_ulp, dt != GSTAT_F64, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n);
    /* NaN in the triangle uplo does not name: reading it would show */
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        if (uplo == GSTAT_LOWER ? i < j : i > j) tu_set(&A.m, b, i, j, NAN);
  }
  gstat_status st;
  if (device) {
    void *da, *dw, *dv;
    gstat_matrix dA = to_device(&A, &da), dW = to_device(&W, &dw), dV = to_device(&V, &dv);
    st = gstat_eigh(gpu, &dA, uplo, &dW, &dV, NULL);
    from_device(&W, dw);
    from_device(&V, dv);
    cudaFree(da);
    cudaFree(dw);
    cudaFree(dv);
  } else {
    st = gstat_eigh(gpu, &A.m, uplo, &W.m, &V.m, NULL);
  }
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(gpu));
  assert_int_equal(st, GSTAT_OK);
  if (bf16)
    assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
  else if (!getenv("GSTAT_CUDA_FAULT"))
    assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
  assert_int_equal(gstat_eigh(cpu, &A.m, uplo, &Wc.m, &Vc.m, NULL), GSTAT_OK);
  assert_true(tu_all_written(&W) && tu_all_written(&V));
  assert_true(tu_outside_untouched(&W) && tu_outside_untouched(&V));
  double *w = malloc(sizeof(double) * (size_t)(n + 1)),
         *v = malloc(sizeof(double) * (size_t)(n * n + 1));
  for (int64_t b = 0; b < nb; b++) {
    tu_read(&W.m, b, w);
    tu_read(&V.m, b, v);
    double res = tu_eig_residual(n, a + b * n * n, w, v, ulp), orth = tu_orthogonality(n, v, ulp);
    if (!(res <= max_ratio && orth <= max_ratio))
      fprintf(stderr, "cuda %s n=%lld b=%lld residual %.3g orthogonality %.3g\n",
              tu_family_name(fam), (long long)n, (long long)b, res, orth);
    assert_true(res <= max_ratio && orth <= max_ratio);
    /* well separated eigenvalues (random family): the same vector and sign */
    if (bf16)
      expect_like_cpu(&Wc, &Vc, b, n, w, v, 2 * bf16_ulp, 0.05, 0.98);
    else
      expect_like_cpu(&Wc, &Vc, b, n, w, v, max_ratio * (double)n * ulp,
                      fam == TU_RANDOM ? 1e-2 : INFINITY, 0.99);
  }
  free(w);
  free(v);
  free(a);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&V);
  tu_buf_free(&Wc);
  tu_buf_free(&Vc);
}

/* Every family at every order, both dtypes; at n = 500 a batch of four runs
 * the lockstep solver (LAPACK's scaling for the near-overflow and
 * near-underflow families, the cluster step or the hand-back to cuSOLVER
 * for the clustered, identity and zero ones). */
static void test_eigh_families(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t sizes[] = {1, 2, 3, 5, 12, 16, 20, 32, 33, 64, 128, 500, 2048};
  int k = 0;
  for (int f = 0; f < TU_FAMILY_COUNT; f++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++, k++)
      for (int dt = 0; dt < 2; dt++) {
        if (sizes[s] == 2048 && f != TU_RANDOM) continue;
        eigh_case(gpu, cpu, dt ? GSTAT_F64 : GSTAT_F32, (tu_family)f, sizes[s],
                  sizes[s] <= 64    ? 7
                  : sizes[s] == 500 ? 4
                                    : 2,
                  (tu_layout)(k % 3), (gstat_uplo)(k % 2), k % 2 == 0);
      }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* eigh of nb matrices on the GPU, with the lockstep solver's counters
 * moving by `chunks` and `degenerate` (which path ran; chunks some of whose
 * matrices cuSOLVER solved). degenerate -1: not checked, for the clustered
 * family, whose tridiagonal matrices split (or not) by their rounding. */
static void eigh_path_case(gstat_ctx *gpu, gstat_ctx *cpu, gstat_dtype dt, tu_family fam, int64_t n,
                           int64_t nb, tu_layout layout, gstat_uplo uplo, bool device,
                           int64_t chunks, int64_t degenerate) {
  gstat_device_stats before = stats_of(gpu);
  eigh_case(gpu, cpu, dt, fam, n, nb, layout, uplo, device);
  gstat_device_stats after = stats_of(gpu);
  assert_int_equal(after.own_tridiag_chunks - before.own_tridiag_chunks, chunks);
  if (degenerate >= 0)
    assert_int_equal(after.own_tridiag_degenerate - before.own_tridiag_degenerate, degenerate);
}

/* The mid and large-n paths. Batches of four or more from n = 160 (float32:
 * 257; two or more below 384) to 2048 (float64 at 2048: eight) run the
 * lockstep solver (lockstep_rules): float32
 * and float64, host and device data, every layout, both triangles. The
 * matrices whose eigenvalue gaps are too small get the cluster step or go
 * back to cuSOLVER in one batched call (the rest keep the lockstep result;
 * the whole chunk only without room for that call). Float32 from n = 4096 runs cuSOLVER's
 * reduction around our tridiagonal step (sytrd_split.c; LAPACK's scaling
 * for the near-underflow one); degenerate, it runs Xsyevd in a float64
 * working copy (f32_in_f64_min_n). Float64 with vectors from n = 4096 runs
 * the two-stage reduction (two_stage.c; LAPACK's scaling for the
 * near-underflow one); degenerate, Xsyevd. Smaller batches and single
 * matrices below run Xsyevd. */
static void test_eigh_large_n(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 2048, 5, TU_COL_MAJOR, GSTAT_LOWER, true, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 2048, 8, TU_ROW_MAJOR, GSTAT_UPPER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_CLUSTERED, 2048, 5, TU_COL_MAJOR, GSTAT_LOWER, true, 1,
                 -1);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 4096, 1, TU_ROW_MAJOR, GSTAT_UPPER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_CLUSTERED, 4096, 1, TU_COL_MAJOR, GSTAT_LOWER, true, 1,
                 -1);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_NEAR_UNDERFLOW, 4096, 1, TU_STRIDED, GSTAT_UPPER, true, 1,
                 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 4096, 1, TU_ROW_MAJOR, GSTAT_UPPER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_CLUSTERED, 4096, 1, TU_COL_MAJOR, GSTAT_LOWER, true, 1,
                 -1);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_NEAR_UNDERFLOW, 5000, 1, TU_STRIDED, GSTAT_UPPER, true, 1,
                 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 2048, 1, TU_COL_MAJOR, GSTAT_LOWER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 1024, 1, TU_STRIDED, GSTAT_UPPER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 2048, 1, TU_COL_MAJOR, GSTAT_LOWER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 1024, 4, TU_STRIDED, GSTAT_LOWER, true, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 1024, 3, TU_COL_MAJOR, GSTAT_UPPER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 600, 6, TU_COL_MAJOR, GSTAT_UPPER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_EVEN, 384, 4, TU_ROW_MAJOR, GSTAT_LOWER, true, 1, 0);
  /* the lower borders: float from 257, double from 160; batches of 2 and 3 below 384 */
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 257, 4, TU_STRIDED, GSTAT_UPPER, true, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 256, 16, TU_COL_MAJOR, GSTAT_LOWER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 256, 4, TU_ROW_MAJOR, GSTAT_LOWER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 160, 5, TU_COL_MAJOR, GSTAT_UPPER, true, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 128, 4, TU_COL_MAJOR, GSTAT_LOWER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 288, 2, TU_ROW_MAJOR, GSTAT_UPPER, false, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 383, 3, TU_STRIDED, GSTAT_LOWER, true, 1, 0);
  eigh_path_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 384, 3, TU_COL_MAJOR, GSTAT_LOWER, true, 0, 0);
  eigh_path_case(gpu, cpu, GSTAT_F64, TU_CLUSTERED, 300, 6, TU_COL_MAJOR, GSTAT_UPPER, true, 1, -1);
  /* eigenvalues geometric down to ulp: the smallest hundreds are closer
   * than the gap tolerance and do not split. Bounded at 2^31 (m c^2 per
   * cluster), the cluster step serves every matrix and none goes back;
   * bounded at 4 (GSTAT_CUDA_CLUSTER_STEP=2), every one goes back, unless
   * the wide path (GSTAT_CUDA_CLUSTER_WIDE=1) takes the clusters above the
   * bound: all of them at 4, the large ones under the rule. */
  static const struct {
    const char *step, *wide;
    int64_t clustered, degenerate;
  } ways[] = {{"31", "0", 6, 0}, {"2", "0", 0, 1}, {"2", "1", 6, 0}, {"1", "1", 6, 0}};
  for (int k = 0; k < 4; k++) {
    setenv("GSTAT_CUDA_CLUSTER_STEP", ways[k].step, 1);
    setenv("GSTAT_CUDA_CLUSTER_WIDE", ways[k].wide, 1);
    gstat_device_stats before = stats_of(gpu);
    eigh_path_case(gpu, cpu, GSTAT_F64, TU_GEOMETRIC, 300, 6, TU_ROW_MAJOR, GSTAT_LOWER, true, 1,
                   ways[k].degenerate);
    assert_int_equal(stats_of(gpu).own_tridiag_clustered - before.own_tridiag_clustered,
                     ways[k].clustered);
  }
  unsetenv("GSTAT_CUDA_CLUSTER_WIDE");
  unsetenv("GSTAT_CUDA_CLUSTER_STEP");
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Eigenvalues only on the lockstep path (no vectors, no degenerate check):
 * like the CPU's, including a family LAPACK's scaling must rescue (near
 * overflow) and one with every eigenvalue but one equal. */
static void test_eigh_values_lockstep(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const struct {
    gstat_dtype dt;
    tu_family fam;
    int64_t n, nb;
    bool device;
  } cases[] = {{GSTAT_F32, TU_RANDOM, 1024, 4, true},
               {GSTAT_F64, TU_NEAR_OVERFLOW, 500, 4, false},
               {GSTAT_F32, TU_CLUSTERED, 400, 5, true}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int64_t n = cases[c].n, nb = cases[c].nb;
    const double ulp = cases[c].dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
    tu_rng rng = tu_rng_new();
    tu_buf A = tu_buf_new(cases[c].dt, nb, n, n, TU_COL_MAJOR),
           W = tu_buf_new(cases[c].dt, nb, n, 1, TU_COL_MAJOR),
           Wc = tu_buf_new(cases[c].dt, nb, n, 1, TU_COL_MAJOR);
    double *a = malloc(sizeof(double) * (size_t)(n * n)), *w = malloc(sizeof(double) * (size_t)n);
    for (int64_t b = 0; b < nb; b++) {
      tu_symmetric(&rng, cases[c].fam, n, ulp, cases[c].dt != GSTAT_F64, a);
      tu_store_matrix(&A, b, a);
    }
    gstat_device_stats before = stats_of(gpu);
    if (cases[c].device) {
      void *da, *dw;
      gstat_matrix dA = to_device(&A, &da), dW = to_device(&W, &dw);
      assert_int_equal(gstat_eigh(gpu, &dA, GSTAT_LOWER, &dW, NULL, NULL), GSTAT_OK);
      from_device(&W, dw);
      cudaFree(da);
      cudaFree(dw);
    } else {
      assert_int_equal(gstat_eigh(gpu, &A.m, GSTAT_LOWER, &W.m, NULL, NULL), GSTAT_OK);
    }
    assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
    gstat_device_stats after = stats_of(gpu);
    assert_int_equal(after.own_tridiag_chunks - before.own_tridiag_chunks, 1);
    assert_int_equal(after.own_tridiag_degenerate - before.own_tridiag_degenerate, 0);
    assert_int_equal(gstat_eigh(cpu, &A.m, GSTAT_LOWER, &Wc.m, NULL, NULL), GSTAT_OK);
    for (int64_t b = 0; b < nb; b++) {
      tu_read(&W.m, b, w);
      double scale = 0;
      for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(tu_get(&Wc.m, b, i, 0)));
      for (int64_t i = 0; i < n; i++) {
        assert_true(i == 0 || w[i] >= w[i - 1]);
        assert_true(fabs(w[i] - tu_get(&Wc.m, b, i, 0)) <= max_ratio * (double)n * ulp * scale);
      }
    }
    free(a);
    free(w);
    tu_buf_free(&A);
    tu_buf_free(&W);
    tu_buf_free(&Wc);
  }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* 32 < n <= 64: the block Jacobi kernel runs for batches of at least 256
 * (double; float from 1 to 128 by n) and for a single matrix; smaller
 * batches run XsyevBatched (test_eigh_families). Every family, padded
 * orders 40, 64 and 64 (n = 57), all layouts, host and device data. */
static void test_eigh_block_jacobi(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t sizes[] = {40, 57, 64};
  for (int f = 0; f < TU_FAMILY_COUNT; f++)
    for (int dt = 0; dt < 2; dt++) {
      int k = 2 * f + dt;
      eigh_case(gpu, cpu, dt ? GSTAT_F64 : GSTAT_F32, (tu_family)f, sizes[k % 3], 260,
                (tu_layout)(k % 3), (gstat_uplo)(f % 2), (f + dt) % 2 == 0);
      eigh_case(gpu, cpu, dt ? GSTAT_F64 : GSTAT_F32, (tu_family)f, 64, 1, (tu_layout)(k % 3),
                (gstat_uplo)(k % 2), f % 2 == 0);
    }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* 64 float32 matrices of 1024 in device memory, each Wilkinson's
 * tridiagonal W+ (diagonal |i - 511.5|, off-diagonal 1: its largest
 * eigenvalues come in pairs closer than any rounding, and no off-diagonal
 * is negligible). With the cluster step (on unless GSTAT_CUDA_CLUSTER_STEP=0) the
 * lockstep solver gives the pairs their vectors: no matrix goes back.
 * Without it, or with every cluster failing (GSTAT_CUDA_FAULT=clusters),
 * it hands every matrix back and XsyevBatched solves the 64, two graph
 * branches by the rule, but cuSOLVER 12.0 refuses to capture n = 1024, so
 * the whole batch runs as one direct call with a workspace of its own
 * size (the context remembers the shape: the third way neither captures
 * nor is refused again). Every way every eigenvalue like the CPU's; LAPACK's ratios for
 * the first and last matrix (one in each branch's half; the ratios cost
 * n^3 each). */
typedef enum { CLUSTERS_OFF, CLUSTERS_ON, CLUSTERS_FAILING } clusters_mode;

static void eigh_wilkinson_case(gstat_ctx *gpu, gstat_ctx *cpu, clusters_mode mode,
                                bool *refused_when_off) {
  const bool clusters_fail = mode != CLUSTERS_ON;
  const int64_t n = 1024, nb = 64;
  tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
         W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
         Wc = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
         V = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
  double *a = random_batch(&A), *w = malloc(sizeof(double) * (size_t)n),
         *v = malloc(sizeof(double) * (size_t)(n * n));
  for (int64_t b = 0; b < nb; b++) {
    double *m = a + b * n * n;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        m[i + j * n] = i == j                     ? fabs((double)i - 0.5 * (double)(n - 1))
                       : i == j + 1 || j == i + 1 ? 1.0
                                                  : 0.0;
    tu_store_matrix(&A, b, m);
  }
  void *da, *dw, *dv;
  gstat_matrix dA = to_device(&A, &da), dW = to_device(&W, &dw), dV = to_device(&V, &dv);
  setenv("GSTAT_CUDA_CLUSTER_STEP", mode == CLUSTERS_OFF ? "0" : "1", 1);
  if (mode == CLUSTERS_FAILING) setenv("GSTAT_CUDA_FAULT", "clusters", 1);
  gstat_device_stats before = stats_of(gpu);
  gstat_status st = gstat_eigh(gpu, &dA, GSTAT_LOWER, &dW, &dV, NULL);
  gstat_device_stats after = stats_of(gpu);
  unsetenv("GSTAT_CUDA_FAULT");
  unsetenv("GSTAT_CUDA_CLUSTER_STEP");
  assert_int_equal(st, GSTAT_OK);
  assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
  assert_int_equal(after.own_tridiag_chunks - before.own_tridiag_chunks, 1);
  assert_int_equal(after.own_tridiag_degenerate - before.own_tridiag_degenerate,
                   clusters_fail ? 1 : 0);
  assert_int_equal(after.own_tridiag_clustered - before.own_tridiag_clustered,
                   clusters_fail ? 0 : nb);
  /* handed back: refused today (a later cuSOLVER may capture it: then one
   * launch); the context remembers the shape from the first time */
  bool refused = after.graph_refusals > before.graph_refusals;
  bool captured = after.graph_captures > before.graph_captures;
  int64_t launches = after.graph_launches - before.graph_launches;
  if (mode == CLUSTERS_OFF) {
    assert_true(refused || captured);
    assert_int_equal(launches, refused ? 0 : 1);
    *refused_when_off = refused;
  } else {
    assert_false(refused || captured);
    assert_int_equal(launches, mode == CLUSTERS_ON || *refused_when_off ? 0 : 1);
  }
  from_device(&W, dw);
  from_device(&V, dv);
  assert_int_equal(gstat_eigh(cpu, &A.m, GSTAT_LOWER, &Wc.m, NULL, NULL), GSTAT_OK);
  for (int64_t b = 0; b < nb; b++) {
    tu_read(&W.m, b, w);
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(tu_get(&Wc.m, b, i, 0)));
    for (int64_t i = 0; i < n; i++)
      assert_true(fabs(w[i] - tu_get(&Wc.m, b, i, 0)) <=
                  max_ratio * (double)n * FLT_EPSILON * scale);
    if (b == 0 || b == nb - 1) {
      tu_read(&V.m, b, v);
      assert_true(tu_eig_residual(n, a + b * n * n, w, v, FLT_EPSILON) <= max_ratio);
      assert_true(tu_orthogonality(n, v, FLT_EPSILON) <= max_ratio);
    }
  }
  cudaFree(da);
  cudaFree(dw);
  cudaFree(dv);
  free(a);
  free(w);
  free(v);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&Wc);
  tu_buf_free(&V);
}

/* n > 64 runs XsyevBatched from a graph whose branches solve parts of the
 * batch in parallel (float32 80 x 80 x 205: two parts of 103 and 102;
 * float64 72 x 72 x 257: four parts, the last 62), with device data (the
 * graph solves in the caller's arrays) and host data (in the context's),
 * both triangles and every layout (an upper input is solved as the lower
 * triangle of its transpose); and the Wilkinson case above (its hand-back
 * runs uncaptured). The same
 * results as the CPU. */
static void test_eigh_graph_branches(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  eigh_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 80, 205, TU_COL_MAJOR, GSTAT_LOWER, true);
  eigh_case(gpu, cpu, GSTAT_F32, TU_EVEN, 80, 205, TU_ROW_MAJOR, GSTAT_UPPER, false);
  eigh_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 72, 257, TU_COL_MAJOR, GSTAT_UPPER, true);
  eigh_case(gpu, cpu, GSTAT_F64, TU_CLUSTERED, 72, 257, TU_STRIDED, GSTAT_LOWER, false);
  /* four shapes (dtype, order, triangle, buffers), each captured and run */
  gstat_device_stats ds = stats_of(gpu);
  assert_int_equal(ds.graph_captures, 4);
  assert_int_equal(ds.graph_refusals, 0);
  assert_int_equal(ds.graph_launches, 4);
  bool refused = false;
  eigh_wilkinson_case(gpu, cpu, CLUSTERS_OFF, &refused);
  eigh_wilkinson_case(gpu, cpu, CLUSTERS_ON, &refused);
  eigh_wilkinson_case(gpu, cpu, CLUSTERS_FAILING, &refused);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* The batched solver's graph solves in the caller's dense device V and w.
 * A caller whose arrays change from call to call is moved to the context's
 * arrays (one working copy) instead of paying a capture per call: the
 * second set of arrays allocates that copy, later sets and the first set
 * again allocate nothing, and six calls capture two graphs and replay them
 * six times. Every call's results are right. */
static void test_eigh_caller_buffers(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t n = 96, nb = 200;
  tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
         Wc = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
         W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
         V = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
  double *a = random_batch(&A), *w = malloc(sizeof(double) * (size_t)n),
         *v = malloc(sizeof(double) * (size_t)(n * n));
  assert_int_equal(gstat_eigh(cpu, &A.m, GSTAT_LOWER, &Wc.m, NULL, NULL), GSTAT_OK);
  void *da, *dw[3], *dv[3];
  gstat_matrix dA = to_device(&A, &da), dW[3], dV[3];
  for (int k = 0; k < 3; k++) {
    dW[k] = to_device(&W, &dw[k]);
    dV[k] = to_device(&V, &dv[k]);
  }
  const int order[] = {0, 1, 2, 0, 1, 2};
  int64_t allocs[6];
  for (int c = 0; c < 6; c++) {
    int k = order[c];
    /* NaN (all bits set) first: a replay into other arrays would show */
    assert_int_equal(cudaMemset(dw[k], 0xff, span_of(&W)), cudaSuccess);
    assert_int_equal(cudaMemset(dv[k], 0xff, span_of(&V)), cudaSuccess);
    assert_int_equal(gstat_eigh(gpu, &dA, GSTAT_LOWER, &dW[k], &dV[k], NULL), GSTAT_OK);
    assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
    allocs[c] = gstat_ctx_device_allocations(gpu);
    from_device(&W, dw[k]);
    from_device(&V, dv[k]);
    for (int64_t b = 0; b < nb; b++) {
      tu_read(&W.m, b, w);
      tu_read(&V.m, b, v);
      for (int64_t i = 0; i < n; i++)
        assert_true(fabs(w[i] - tu_get(&Wc.m, b, i, 0)) <= 64 * n * FLT_EPSILON);
      assert_true(tu_eig_residual(n, a + b * n * n, w, v, FLT_EPSILON) <= max_ratio);
      assert_true(tu_orthogonality(n, v, FLT_EPSILON) <= max_ratio);
    }
  }
  assert_true(allocs[1] > allocs[0]);
  assert_int_equal(allocs[5], allocs[1]);
  /* two graphs (the first arrays', the context's), replayed by every call */
  gstat_device_stats ds = stats_of(gpu);
  assert_int_equal(ds.graph_captures, 2);
  assert_int_equal(ds.graph_refusals, 0);
  assert_int_equal(ds.graph_launches, 6);
  for (int k = 0; k < 3; k++) {
    cudaFree(dw[k]);
    cudaFree(dv[k]);
  }
  cudaFree(da);
  free(a);
  free(w);
  free(v);
  tu_buf_free(&A);
  tu_buf_free(&Wc);
  tu_buf_free(&W);
  tu_buf_free(&V);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* bf16 data in device memory: n <= 32 (and n = 40 at this batch) runs the
 * Jacobi kernels on bf16 directly (n = 12: the pair-per-lane kernel), n = 64
 * at this batch a float32 copy (XsyevBatched) half the batch at a time. */
static void test_eigh_bf16_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t ns[] = {5, 12, 32, 40, 64};
  for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++)
    for (int u = 0; u < 2; u++)
      eigh_case(gpu, cpu, GSTAT_BF16, TU_RANDOM, ns[s], 9, TU_COL_MAJOR, (gstat_uplo)u, true);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* 100000 x 16 fp32, data on the device: works (torch 2.11 fails here). */
static void test_large_batch_small_n(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  eigh_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 16, 100000, TU_COL_MAJOR, GSTAT_LOWER, true);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Host data of several staging pieces (19 MB: the pinned halves hold
 * 8 MiB each, the last piece is partial), in each layout: TU_STRIDED has gaps,
 * so its results also travel in first. The same results as the CPU. */
static void test_host_staging_pieces(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  for (int l = 0; l < TU_LAYOUT_COUNT; l++)
    eigh_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 200, 60, (tu_layout)l, GSTAT_LOWER, false);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Host data on the Jacobi path large enough to run as a pipeline (pieces
 * of 16 MiB of A: 16384 matrices of 16 x 16 float; four pieces, the last
 * partial), in each layout, and values only; the block kernel's pipeline
 * (48 x 48 double: pieces of 910, four); bf16 host arrays (computed in
 * float32, the same pieces as the first): the same results as the CPU, and
 * four pieces through the pipeline each (gstat_ctx_device_stats). */
static void test_host_pipeline(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t n = 16, nb = 3 * 16384 + 1000;
  int64_t pieces = stats_of(gpu).pipeline_pieces;
  for (int l = 0; l < TU_LAYOUT_COUNT; l++) {
    eigh_case(gpu, cpu, GSTAT_F32, TU_RANDOM, n, nb, (tu_layout)l, (gstat_uplo)(l % 2), false);
    assert_int_equal(stats_of(gpu).pipeline_pieces, pieces += 4);
  }
  eigh_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 48, 3 * 910 + 100, TU_COL_MAJOR, GSTAT_UPPER, false);
  assert_int_equal(stats_of(gpu).pipeline_pieces, pieces += 4);
  /* bf16 host arrays, float32 pieces */
  eigh_case(gpu, cpu, GSTAT_BF16, TU_RANDOM, n, nb, TU_COL_MAJOR, GSTAT_LOWER, false);
  assert_int_equal(stats_of(gpu).pipeline_pieces, pieces += 4);
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
         W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
         Wc = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR);
  double *a = malloc(sizeof(double) * (size_t)(n * n)), *w = malloc(sizeof(double) * (size_t)n),
         *wc = malloc(sizeof(double) * (size_t)n);
  for (int64_t b = 0; b < nb; b++) {
    tu_symmetric(&rng, TU_RANDOM, n, FLT_EPSILON, true, a);
    tu_store_matrix(&A, b, a);
  }
  assert_int_equal(gstat_eigh(gpu, &A.m, GSTAT_LOWER, &W.m, NULL, NULL), GSTAT_OK);
  assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
  assert_int_equal(stats_of(gpu).pipeline_pieces, pieces + 4);
  assert_int_equal(gstat_eigh(cpu, &A.m, GSTAT_LOWER, &Wc.m, NULL, NULL), GSTAT_OK);
  for (int64_t b = 0; b < nb; b++) {
    tu_read(&W.m, b, w);
    tu_read(&Wc.m, b, wc);
    for (int64_t i = 0; i < n; i++) assert_true(fabs(w[i] - wc[i]) <= 64 * n * FLT_EPSILON);
  }
  free(a);
  free(w);
  free(wc);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&Wc);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Float32 random matrices of 65 graded by 1e6 (D A D) on cuSOLVER's batched
 * path (the fuzz finding gpu-eigh-f32-n65-graded-orthogonality: its float32
 * vectors were orthogonal to a ratio of 244): such a chunk is solved in a
 * float64 copy, LAPACK's ratios within 60; an ungraded batch of the same
 * shape stays within them too (and in float32). Host and device data. */
static void test_eigh_graded_f32(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t n = 65, nb = 3;
  for (int graded = 0; graded < 2; graded++)
    for (int device = 0; device < 2; device++) {
      tu_rng rng = tu_rng_new();
      tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
             W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
             V = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
      double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
             *w = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)(n * n));
      for (int64_t b = 0; b < nb; b++) {
        tu_symmetric(&rng, TU_RANDOM, n, FLT_EPSILON, true, a + b * n * n);
        if (graded) tu_grade(n, 1e6, a + b * n * n);
        tu_store_matrix(&A, b, a + b * n * n);
      }
      if (device) {
        void *da, *dw, *dv;
        gstat_matrix dA = to_device(&A, &da), dW = to_device(&W, &dw), dV = to_device(&V, &dv);
        assert_int_equal(gstat_eigh(gpu, &dA, GSTAT_LOWER, &dW, &dV, NULL), GSTAT_OK);
        from_device(&W, dw);
        from_device(&V, dv);
        cudaFree(da);
        cudaFree(dw);
        cudaFree(dv);
      } else {
        assert_int_equal(gstat_eigh(gpu, &A.m, GSTAT_LOWER, &W.m, &V.m, NULL), GSTAT_OK);
      }
      assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
      for (int64_t b = 0; b < nb; b++) {
        tu_read(&W.m, b, w);
        tu_read(&V.m, b, v);
        assert_true(tu_eig_residual(n, a + b * n * n, w, v, FLT_EPSILON) <= max_ratio);
        assert_true(tu_orthogonality(n, v, FLT_EPSILON) <= max_ratio);
      }
      free(a);
      free(w);
      free(v);
      tu_buf_free(&A);
      tu_buf_free(&W);
      tu_buf_free(&V);
    }
  gstat_ctx_destroy(gpu);
}
/* A loop of same-shape calls does no cudaMalloc after the first. */
static void test_no_device_allocations_after_first(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  /* warp Jacobi, block Jacobi, XsyevBatched, the lockstep solver */
  const int64_t ns[] = {32, 64, 128, 512};
  for (int s = 0; s < 4; s++) {
    int64_t n = ns[s], nb = n == 64 ? 300 : n == 512 ? 4 : 50;
    int64_t lockstep_before = stats_of(gpu).own_tridiag_chunks;
    tu_rng rng = tu_rng_new();
    tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
           W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR);
    tu_buf V = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
    double *a = malloc(sizeof(double) * (size_t)(n * n));
    for (int64_t b = 0; b < nb; b++) {
      tu_spd(&rng, n, 10, a);
      tu_store_matrix(&A, b, a);
    }
    int64_t after_first = 0;
    for (int rep = 0; rep < 5; rep++) {
      assert_int_equal(gstat_eigh(gpu, &A.m, GSTAT_LOWER, &W.m, &V.m, NULL), GSTAT_OK);
      assert_int_equal(gstat_cholesky(gpu, &A.m, GSTAT_LOWER, &V.m, NULL), GSTAT_OK);
      if (rep == 0) after_first = gstat_ctx_device_allocations(gpu);
    }
    assert_true(after_first > 0);
    assert_int_equal(gstat_ctx_device_allocations(gpu), after_first);
    if (n == 128) { /* XsyevBatched: captured once, replayed by all five */
      gstat_device_stats ds = stats_of(gpu);
      assert_int_equal(ds.graph_captures, 1);
      assert_int_equal(ds.graph_launches, 5);
    }
    assert_int_equal(stats_of(gpu).own_tridiag_chunks - lockstep_before, n == 512 ? 5 : 0);
    free(a);
    tu_buf_free(&A);
    tu_buf_free(&W);
    tu_buf_free(&V);
  }
  gstat_ctx_destroy(gpu);
}

/* Cholesky and solves on the GPU, both triangles, small and large n. */
static void test_cholesky_and_solves(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t ns[] = {1, 5, 32, 64, 65, 300, 513}; /* 513: blocked, last block 1 wide */
  for (size_t s = 0; s < 7; s++)
    for (int u = 0; u < 2; u++) {
      int64_t n = ns[s], nb = 9, nrhs = 3;
      gstat_dtype dt = u ? GSTAT_F64 : GSTAT_F32;
      double ulp = u ? DBL_EPSILON : FLT_EPSILON;
      tu_rng rng = tu_rng_new();
      tu_buf A = tu_buf_new(dt, nb, n, n, (tu_layout)(s % 3)),
             F = tu_buf_new(dt, nb, n, n, TU_ROW_MAJOR);
      tu_buf B = tu_buf_new(dt, nb, n, nrhs, TU_COL_MAJOR),
             X = tu_buf_new(dt, nb, n, nrhs, TU_STRIDED);
      double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
             *bb = malloc(sizeof(double) * (size_t)(nb * n * nrhs));
      for (int64_t b = 0; b < nb; b++) {
        tu_spd(&rng, n, 100, a + b * n * n);
        tu_store_matrix(&A, b, a + b * n * n);
        for (int64_t q = 0; q < n * nrhs; q++) bb[b * n * nrhs + q] = tu_round(dt, tu_normal(&rng));
        for (int64_t j = 0; j < nrhs; j++)
          for (int64_t i = 0; i < n; i++) tu_set(&B.m, b, i, j, bb[b * n * nrhs + i + j * n]);
      }
      assert_int_equal(gstat_cholesky(gpu, &A.m, (gstat_uplo)u, &F.m, NULL), GSTAT_OK);
      assert_int_equal(gstat_cholesky_solve(gpu, &F.m, (gstat_uplo)u, &B.m, &X.m, NULL), GSTAT_OK);
      assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
      assert_true(tu_outside_untouched(&X) && tu_all_written(&X));
      double *l = malloc(sizeof(double) * (size_t)(n * n)),
             *x = malloc(sizeof(double) * (size_t)(n * nrhs));
      for (int64_t b = 0; b < nb; b++) {
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) {
            double f = u ? tu_get(&F.m, b, j, i) : tu_get(&F.m, b, i, j);
            if (i < j) assert_true(f == 0);
            l[i + j * n] = f;
          }
        assert_true(tu_chol_residual(n, a + b * n * n, l, ulp) <= max_ratio);
        tu_read(&X.m, b, x);
        assert_true(tu_solve_residual(n, nrhs, a + b * n * n, false, x, bb + b * n * nrhs, ulp) <=
                    max_ratio);
      }
      free(l);
      free(x);
      free(a);
      free(bb);
      tu_buf_free(&A);
      tu_buf_free(&F);
      tu_buf_free(&B);
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(gpu);
}

/* A batch with elements that are not positive definite, data in device
 * memory, at n = 64 (our register kernel), 65 (potrfBatched), 520 and 1030
 * (the blocked factorization; the failing columns lie in different blocks):
 * the status
 * and info name them, their factors are NaN, the others are right. */
static void test_cholesky_not_pd_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t ns[] = {64, 65, 520, 1030};
  for (int s = 0; s < 4; s++)
    for (int u = 0; u < 2; u++) {
      const int64_t n = ns[s], nb = 6;
      gstat_dtype dt = u ? GSTAT_F64 : GSTAT_F32;
      tu_rng rng = tu_rng_new();
      tu_buf A = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR), F = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR);
      double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
             *l = malloc(sizeof(double) * (size_t)(n * n));
      int64_t want[6] = {0}, info[6];
      for (int64_t b = 0; b < nb; b++) {
        double *ab = a + b * n * n;
        tu_spd(&rng, n, 100, ab);
        if (b % 3 == 1) { /* leading minor of order k not positive definite */
          want[b] = 1 + (b * 17) % n;
          ab[(want[b] - 1) * (n + 1)] = -1;
        }
        tu_store_matrix(&A, b, ab);
      }
      void *da, *df;
      gstat_matrix dA = to_device(&A, &da), dF = to_device(&F, &df);
      assert_int_equal(gstat_cholesky(gpu, &dA, GSTAT_LOWER, &dF, info), GSTAT_ENOTPD);
      from_device(&F, df);
      cudaFree(da);
      cudaFree(df);
      for (int64_t b = 0; b < nb; b++) {
        assert_int_equal(info[b], want[b]);
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) l[i + j * n] = tu_get(&F.m, b, i, j);
        if (want[b]) {
          for (int64_t e = 0; e < n * n; e++) assert_true(isnan(l[e]));
        } else {
          assert_true(tu_chol_residual(n, a + b * n * n, l, u ? DBL_EPSILON : FLT_EPSILON) <=
                      max_ratio);
        }
      }
      free(a);
      free(l);
      tu_buf_free(&A);
      tu_buf_free(&F);
    }
  gstat_ctx_destroy(gpu);
}

/* The backend may vouch that a call left every info 0 (the dispatcher then
 * skips its scans): a clean call must not make the next one, with the same
 * info array or the context's own, look clean when an element fails, and a
 * clean call after a failing one must zero the old info. 100000 elements
 * of n = 4 (the warp kernel; scans of a large batch are what it saves). */
static void test_info_clean_never_hides_a_failure(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t n = 4, nb = 100000, bad = nb - 1;
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(GSTAT_F64, nb, n, n, TU_COL_MAJOR),
         F = tu_buf_new(GSTAT_F64, nb, n, n, TU_COL_MAJOR);
  double a[16];
  for (int64_t b = 0; b < nb; b++) {
    tu_spd(&rng, n, 10, a);
    tu_store_matrix(&A, b, a);
  }
  int64_t *info = malloc(sizeof(int64_t) * (size_t)nb);
  for (int round = 0; round < 2; round++) {
    int64_t *inf = round ? NULL : info; /* the caller's array, then the context's */
    assert_int_equal(gstat_cholesky(gpu, &A.m, GSTAT_LOWER, &F.m, inf), GSTAT_OK);
    tu_set(&A.m, bad, 2, 2, -1.0); /* leading minor of order 3 */
    assert_int_equal(gstat_cholesky(gpu, &A.m, GSTAT_LOWER, &F.m, inf), GSTAT_ENOTPD);
    assert_non_null(strstr(gstat_ctx_last_error(gpu), "batch element 99999"));
    if (inf) assert_int_equal(info[bad], 3);
    tu_set(&A.m, bad, 2, 2, 10.0);
    assert_int_equal(gstat_cholesky(gpu, &A.m, GSTAT_LOWER, &F.m, inf), GSTAT_OK);
    if (inf) assert_int_equal(info[bad], 0);
    assert_string_equal(gstat_ctx_last_backend_name(gpu), "cuda");
  }
  free(info);
  tu_buf_free(&A);
  tu_buf_free(&F);
  gstat_ctx_destroy(gpu);
}

/* nb elements of order n on the GPU, data dense in device memory (the
 * caller's buffers used as they lie): Cholesky of both triangles, then
 * cholesky_solve and triangular_solve (both ops, X in place on B's copy)
 * against the factor. Single matrices: f32 n = 1100 is Xpotrf in our buffer
 * with the finiteness scan deferred (the guarded finish pass writes F), f64
 * n = 2100 Xpotrf in F after a waited-for scan; their solves take Xpotrs
 * and plain trsm (solve_rules). Batches take trsmBatched on the caller's
 * factor (an upper one with the ops flipped). */
static void solve_device_case(gstat_ctx *gpu, gstat_dtype dt, int64_t nb, int64_t n, int u) {
  const int64_t nrhs = 3;
  double ulp = dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
  tu_rng rng = tu_rng_new();
  tu_buf A = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR), F = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR),
         B = tu_buf_new(dt, nb, n, nrhs, TU_COL_MAJOR),
         X = tu_buf_new(dt, nb, n, nrhs, TU_COL_MAJOR);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
         *l = malloc(sizeof(double) * (size_t)(nb * n * n));
  double *bb = malloc(sizeof(double) * (size_t)(nb * n * nrhs)),
         *x = malloc(sizeof(double) * (size_t)(n * nrhs));
  for (int64_t b = 0; b < nb; b++) {
    tu_spd(&rng, n, 100, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n);
  }
  tu_fill_normal(&rng, &B, bb);
  void *da, *df, *db, *dx;
  gstat_matrix dA = to_device(&A, &da), dF = to_device(&F, &df), dB = to_device(&B, &db),
               dX = to_device(&X, &dx);
  int64_t info[9] = {-7, -7, -7, -7, -7, -7, -7, -7, -7};
  assert_true(nb <= 9);
  assert_int_equal(gstat_cholesky(gpu, &dA, (gstat_uplo)u, &dF, info), GSTAT_OK);
  from_device(&F, df);
  for (int64_t b = 0; b < nb; b++) {
    assert_int_equal(info[b], 0);
    assert_true(tu_lower_factor(&F.m, b, (gstat_uplo)u, l + b * n * n));
    assert_true(tu_chol_residual(n, a + b * n * n, l + b * n * n, ulp) <= max_ratio);
  }
  assert_int_equal(gstat_cholesky_solve(gpu, &dF, (gstat_uplo)u, &dB, &dX, NULL), GSTAT_OK);
  from_device(&X, dx);
  for (int64_t b = 0; b < nb; b++) {
    tu_read(&X.m, b, x);
    assert_true(tu_solve_residual(n, nrhs, a + b * n * n, false, x, bb + b * n * nrhs, ulp) <=
                max_ratio);
  }
  for (int t = 0; t < 2; t++) { /* op(T) with T = F's triangle, in place on a copy of B */
    assert_int_equal(cudaMemcpy(dx, db, span_of(&B), cudaMemcpyDeviceToDevice), cudaSuccess);
    assert_int_equal(gstat_triangular_solve(gpu, &dF, (gstat_uplo)u, (gstat_trans)t, GSTAT_NON_UNIT,
                                            &dX, &dX, NULL),
                     GSTAT_OK);
    from_device(&X, dx);
    /* the stored triangle T is L (lower) or L^T (upper): op(T) = L or L^T */
    bool trans_l = (t == GSTAT_TRANS) != (u == GSTAT_UPPER);
    for (int64_t b = 0; b < nb; b++) {
      tu_read(&X.m, b, x);
      assert_true(tu_solve_residual(n, nrhs, l + b * n * n, trans_l, x, bb + b * n * nrhs, ulp) <=
                  max_ratio);
    }
  }
  assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
  cudaFree(da);
  cudaFree(df);
  cudaFree(db);
  cudaFree(dx);
  free(a);
  free(l);
  free(bb);
  free(x);
  tu_buf_free(&A);
  tu_buf_free(&F);
  tu_buf_free(&B);
  tu_buf_free(&X);
}

static void test_cholesky_single_large(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  for (int u = 0; u < 2; u++) {
    solve_device_case(gpu, GSTAT_F32, 1, 1100, u);
    solve_device_case(gpu, GSTAT_F64, 1, 2100, u);
    solve_device_case(gpu, u ? GSTAT_F64 : GSTAT_F32, 9, 40, u); /* trsmBatched, caller's factor */
  }
  gstat_ctx_destroy(gpu);
}

/* Small batches with a failing element on each factor path, dense device
 * data, F apart from A and F = A in place: n = 24 (register kernel, scan
 * deferred), 200 (potrfBatched in our buffer, guarded finish pass), 700 x 1
 * (Xpotrf, the same), 520 x 3 (blocked, the scan waited for), 2100 x 1
 * (Xpotrf in F after a waited-for scan: the input's lower triangle copied
 * in with zeros above, the finishing pass writing failed elements only).
 * info names the failing element's minor, its factor is NaN, the others
 * are right. */
static void test_cholesky_not_pd_small_batch(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t ns[] = {24, 200, 700, 520, 2100}, nbs[] = {3, 3, 1, 3, 1};
  for (int c = 0; c < 5; c++)
    for (int inplace = 0; inplace < 2; inplace++) {
      const int64_t n = ns[c], nb = nbs[c], bad = nb - 1, minor = n / 2 + 1;
      gstat_dtype dt = (c + inplace) % 2 ? GSTAT_F64 : GSTAT_F32;
      double ulp = dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
      tu_rng rng = tu_rng_new();
      tu_buf A = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR), F = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR);
      double *a = malloc(sizeof(double) * (size_t)(nb * n * n)),
             *l = malloc(sizeof(double) * (size_t)(n * n));
      for (int64_t b = 0; b < nb; b++) {
        tu_spd(&rng, n, 100, a + b * n * n);
        if (b == bad) a[b * n * n + (minor - 1) * (n + 1)] = -1;
        tu_store_matrix(&A, b, a + b * n * n);
      }
      void *da, *df = NULL;
      gstat_matrix dA = to_device(&A, &da), dF = inplace ? dA : to_device(&F, &df);
      int64_t info[3] = {-7, -7, -7};
      assert_int_equal(gstat_cholesky(gpu, &dA, GSTAT_LOWER, &dF, info), GSTAT_ENOTPD);
      assert_non_null(strstr(gstat_ctx_last_error(gpu), "not positive definite"));
      from_device(&F, inplace ? da : df);
      for (int64_t b = 0; b < nb; b++) {
        assert_int_equal(info[b], b == bad ? minor : 0);
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++) l[i + j * n] = tu_get(&F.m, b, i, j);
        if (b == bad) {
          for (int64_t e = 0; e < n * n; e++) assert_true(isnan(l[e]));
        } else {
          for (int64_t j = 1; j < n; j++) assert_true(l[j * n] == 0); /* row 0, upper part */
          assert_true(tu_chol_residual(n, a + b * n * n, l, ulp) <= max_ratio);
        }
      }
      cudaFree(da);
      if (df) cudaFree(df);
      free(a);
      free(l);
      tu_buf_free(&A);
      tu_buf_free(&F);
    }
  gstat_ctx_destroy(gpu);
}

/* A NaN or Inf in the read triangle of device data is GSTAT_ENOTFINITE
 * naming it, and F and info keep every byte, on each path (the deferred
 * scans' guards included: nothing may have written F before the verdict
 * came back); in the triangle that is not read it changes nothing. */
static void test_cholesky_nonfinite_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t ns[] = {16, 64, 100, 700, 520, 1100}, nbs[] = {5, 3, 4, 1, 2, 1};
  for (int c = 0; c < 6; c++) {
    const int64_t n = ns[c], nb = nbs[c], bad = nb / 2;
    gstat_dtype dt = c % 2 ? GSTAT_F64 : GSTAT_F32;
    tu_rng rng = tu_rng_new();
    tu_buf A = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR), F = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR);
    double *a = malloc(sizeof(double) * (size_t)(n * n));
    for (int64_t b = 0; b < nb; b++) {
      tu_spd(&rng, n, 100, a);
      tu_store_matrix(&A, b, a);
    }
    tu_set(&A.m, bad, n - 1, n / 3, c % 3 ? NAN : INFINITY); /* lower triangle */
    void *da, *df;
    gstat_matrix dA = to_device(&A, &da), dF = to_device(&F, &df);
    size_t fb = span_of(&F);
    assert_int_equal(cudaMemset(df, 0x42, fb), cudaSuccess);
    int64_t info[5] = {-7, -7, -7, -7, -7};
    assert_int_equal(gstat_cholesky(gpu, &dA, GSTAT_LOWER, &dF, info), GSTAT_ENOTFINITE);
    char want[64];
    snprintf(want, sizeof want, "batch element %lld of A", (long long)bad);
    assert_non_null(strstr(gstat_ctx_last_error(gpu), want));
    unsigned char *hf = malloc(fb);
    assert_int_equal(cudaMemcpy(hf, df, fb, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < fb; i++) assert_int_equal(hf[i], 0x42);
    for (int64_t b = 0; b < nb; b++) assert_int_equal(info[b], -7);
    /* the same value in the upper triangle, which LOWER does not read */
    tu_set(&A.m, bad, n - 1, n / 3, tu_get(&A.m, bad, n / 3, n - 1));
    tu_set(&A.m, bad, n / 3, n - 1, NAN);
    assert_int_equal(cudaMemcpy(da, A.m.data, span_of(&A), cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(gstat_cholesky(gpu, &dA, GSTAT_LOWER, &dF, info), GSTAT_OK);
    for (int64_t b = 0; b < nb; b++) assert_int_equal(info[b], 0);
    free(hf);
    cudaFree(da);
    cudaFree(df);
    free(a);
    tu_buf_free(&A);
    tu_buf_free(&F);
  }
  gstat_ctx_destroy(gpu);
}

/* The solves of device data with dense X do not wait for the finiteness
 * scans of T and B: a NaN in B or in T's read triangle is still
 * GSTAT_ENOTFINITE naming it, with X and info untouched, on the batched
 * (5 x 20) and single (1 x 600) paths; one in T's unread triangle changes
 * nothing. T: a well-conditioned lower triangle (diagonal 4). */
static void test_solves_nonfinite_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t ns[] = {20, 600}, nbs[] = {5, 1}, nrhs = 2;
  for (int c = 0; c < 2; c++)
    for (int op = 0; op < 2; op++) {
      const int64_t n = ns[c], nb = nbs[c], bad = nb / 2;
      gstat_dtype dt = op ? GSTAT_F64 : GSTAT_F32;
      const char *fn = op ? "triangular_solve" : "cholesky_solve", *tname = op ? "T" : "F";
      tu_rng rng = tu_rng_new();
      tu_buf T = tu_buf_new(dt, nb, n, n, TU_COL_MAJOR),
             B = tu_buf_new(dt, nb, n, nrhs, TU_COL_MAJOR),
             X = tu_buf_new(dt, nb, n, nrhs, TU_COL_MAJOR);
      double *bb = malloc(sizeof(double) * (size_t)(nb * n * nrhs));
      for (int64_t b = 0; b < nb; b++)
        for (int64_t j = 0; j < n; j++)
          for (int64_t i = 0; i < n; i++)
            tu_set(&T.m, b, i, j, i < j ? 0.0 : i == j ? 4.0 : 0.5 * tu_normal(&rng) / (double)n);
      tu_fill_normal(&rng, &B, bb);
      void *dt_, *db, *dx;
      gstat_matrix dT = to_device(&T, &dt_), dB = to_device(&B, &db), dX = to_device(&X, &dx);
      size_t xb = span_of(&X);
      unsigned char *hx = malloc(xb);
      for (int where = 0; where < 3; where++) { /* B, T's lower triangle, T's upper */
        tu_buf *in = where ? &T : &B;
        int64_t i = where ? n - 1 : n / 2, j = where == 1 ? 0 : where == 2 ? n - 1 : 1;
        if (where == 2) i = 0;
        double keep = tu_get(&in->m, bad, i, j);
        tu_set(&in->m, bad, i, j, NAN);
        void *dev = where ? dt_ : db;
        assert_int_equal(cudaMemcpy(dev, in->m.data, span_of(in), cudaMemcpyHostToDevice),
                         cudaSuccess);
        assert_int_equal(cudaMemset(dx, 0x42, xb), cudaSuccess);
        int64_t info[5] = {-7, -7, -7, -7, -7};
        gstat_status st = op ? gstat_triangular_solve(gpu, &dT, GSTAT_LOWER, GSTAT_NO_TRANS,
                                                      GSTAT_NON_UNIT, &dB, &dX, info)
                             : gstat_cholesky_solve(gpu, &dT, GSTAT_LOWER, &dB, &dX, info);
        if (where == 2) {
          assert_int_equal(st, GSTAT_OK);
          for (int64_t b = 0; b < nb; b++) assert_int_equal(info[b], 0);
        } else {
          assert_int_equal(st, GSTAT_ENOTFINITE);
          char want[96];
          snprintf(want, sizeof want, "%s: batch element %lld of %s", fn, (long long)bad,
                   where ? tname : "B");
          assert_non_null(strstr(gstat_ctx_last_error(gpu), want));
          assert_int_equal(cudaMemcpy(hx, dx, xb, cudaMemcpyDeviceToHost), cudaSuccess);
          for (size_t k = 0; k < xb; k++) assert_int_equal(hx[k], 0x42);
          for (int64_t b = 0; b < nb; b++) assert_int_equal(info[b], -7);
        }
        tu_set(&in->m, bad, i, j, keep);
        assert_int_equal(cudaMemcpy(dev, in->m.data, span_of(in), cudaMemcpyHostToDevice),
                         cudaSuccess);
      }
      free(hx);
      free(bb);
      cudaFree(dt_);
      cudaFree(db);
      cudaFree(dx);
      tu_buf_free(&T);
      tu_buf_free(&B);
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(gpu);
}

/* GSTAT_CUDA_FAULT: out of memory reruns on the CPU; a failing solver or
 * NaN output has the flagged elements recomputed on the CPU. Results stay
 * right and the context says what ran. */
static void test_fallback_paths(void **state) {
  (void)state;
  const char *faults[] = {"oom", "solver", "nonfinite"};
  const char *ran[] = {"cpu", "cuda+cpu", "cuda+cpu"};
  for (int f = 0; f < 3; f++) {
    setenv("GSTAT_CUDA_FAULT", faults[f], 1);
    gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
    eigh_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 40, 9, TU_ROW_MAJOR, GSTAT_LOWER, false);
    assert_string_equal(gstat_ctx_last_backend_name(gpu), ran[f]);
    if (f > 0) { /* device data: flagged elements go through host copies to the CPU */
      eigh_case(gpu, cpu, GSTAT_F32, TU_RANDOM, 40, 9, TU_STRIDED, GSTAT_UPPER, true);
      assert_string_equal(gstat_ctx_last_backend_name(gpu), "cuda+cpu");
      eigh_case(gpu, cpu, GSTAT_F64, TU_RANDOM, 12, 7, TU_ROW_MAJOR, GSTAT_LOWER, true);
      assert_string_equal(gstat_ctx_last_backend_name(gpu), "cuda+cpu");
    }
    gstat_ctx_destroy(gpu);
    gstat_ctx_destroy(cpu);
    unsetenv("GSTAT_CUDA_FAULT");
  }
}

/* A device out of memory (GSTAT_CUDA_FAULT=oom) with data in device memory
 * has no CPU run to fall back on: GSTAT_ENOMEM, and the caller's w and V
 * keep their bytes, on each path: the warp and block Jacobi kernels,
 * XsyevBatched (which copies A into the caller's V) and Xsyevd. The
 * finiteness check is off, so the solver path itself meets the failure. */
static void test_device_oom_leaves_outputs(void **state) {
  (void)state;
  setenv("GSTAT_CUDA_FAULT", "oom", 1);
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = GSTAT_BACKEND_CUDA;
  opt.check_finite = 0;
  gstat_ctx *gpu = NULL;
  assert_int_equal(gstat_ctx_create(&gpu, &opt), GSTAT_OK);
  const int64_t ns[] = {16, 48, 96, 2048}, nbs[] = {40, 300, 70, 1};
  for (int c = 0; c < 4; c++) {
    int64_t n = ns[c], nb = nbs[c];
    tu_buf A = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR),
           W = tu_buf_new(GSTAT_F32, nb, n, 1, TU_COL_MAJOR),
           V = tu_buf_new(GSTAT_F32, nb, n, n, TU_COL_MAJOR);
    double *a = random_batch(&A);
    void *da, *dw, *dv;
    gstat_matrix dA = to_device(&A, &da), dW = to_device(&W, &dw), dV = to_device(&V, &dv);
    size_t wb = span_of(&W), vb = span_of(&V);
    assert_int_equal(cudaMemset(dw, 0x42, wb), cudaSuccess);
    assert_int_equal(cudaMemset(dv, 0x42, vb), cudaSuccess);
    assert_int_equal(gstat_eigh(gpu, &dA, GSTAT_LOWER, &dW, &dV, NULL), GSTAT_ENOMEM);
    unsigned char *hw = malloc(wb), *hv = malloc(vb);
    assert_int_equal(cudaMemcpy(hw, dw, wb, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(cudaMemcpy(hv, dv, vb, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < wb; i++) assert_int_equal(hw[i], 0x42);
    for (size_t i = 0; i < vb; i++) assert_int_equal(hv[i], 0x42);
    free(hw);
    free(hv);
    cudaFree(da);
    cudaFree(dw);
    cudaFree(dv);
    free(a);
    tu_buf_free(&A);
    tu_buf_free(&W);
    tu_buf_free(&V);
  }
  gstat_ctx_destroy(gpu);
  unsetenv("GSTAT_CUDA_FAULT");
}

/* PCA of data in device memory (every layout and dtype, batches, scaling,
 * whitening, scores) against the CPU path on the same values. */
static void test_pca_device_data(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = 700, p = 24;
  const gstat_dtype dts[] = {GSTAT_F64, GSTAT_F32, GSTAT_BF16};
  for (int d = 0; d < 3; d++)
    for (int layout = 0; layout < TU_LAYOUT_COUNT; layout++) {
      tu_buf X = tu_buf_new(dts[d], nb, n, p, (tu_layout)layout);
      for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < p; j++)
            tu_set(&X.m, b, i, j,
                   100.0 + tu_normal(&rng) * (1.0 + (double)j) +
                       (j > 0 ? 0.5 * tu_get(&X.m, b, i, j - 1) : 0));
      void *dptr;
      gstat_matrix D = to_device(&X, &dptr);
      for (int variant = 0; variant < 3; variant++) {
        gstat_pca_options o;
        gstat_pca_options_init(&o);
        o.n_components = 5;
        o.scale = variant == 1;
        o.whiten = variant == 2;
        gstat_pca_result *rg = NULL, *rc = NULL;
        assert_int_equal(gstat_pca(gpu, &D, &o, &rg), GSTAT_OK);
        assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
        assert_int_equal(gstat_pca(cpu, &X.m, &o, &rc), GSTAT_OK);
        double tol = dts[d] == GSTAT_F64 ? 1e-10 : 1e-4;
        for (int64_t b = 0; b < nb; b++) {
          for (int64_t j = 0; j < p; j++)
            assert_true(fabs(rg->mean[b * p + j] - rc->mean[b * p + j]) <= tol * 100);
          for (int64_t i = 0; i < 5; i++) {
            double ev = rc->explained_variance[b * 5 + i];
            assert_true(fabs(rg->explained_variance[b * 5 + i] - ev) <=
                        tol * rc->explained_variance[b * 5]);
            for (int64_t j = 0; j < p; j++)
              assert_true(fabs(rg->components[(b * 5 + i) * p + j] -
                               rc->components[(b * 5 + i) * p + j]) <= tol * 100);
            for (int64_t r = 0; r < n; r += 37) {
              double sc = rc->scores[(b * n + r) * 5 + i];
              assert_true(fabs(rg->scores[(b * n + r) * 5 + i] - sc) <=
                          tol * 100 * (1 + sqrt(rc->explained_variance[b * 5])));
            }
          }
        }
        /* the transform of device data on the GPU (host and device outputs)
         * against the CPU's transform of the same data */
        size_t nz = (size_t)(nb * n * 5);
        double *zg = malloc(sizeof(double) * nz), *zc = malloc(sizeof(double) * nz);
        gstat_matrix Zg = gstat_matrix_row_major(zg, GSTAT_F64, nb, n, 5);
        gstat_matrix Zc = gstat_matrix_row_major(zc, GSTAT_F64, nb, n, 5);
        assert_int_equal(gstat_pca_transform(gpu, rg, &D, &Zg), GSTAT_OK);
        assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
        assert_int_equal(gstat_pca_transform(cpu, rc, &X.m, &Zc), GSTAT_OK);
        double zt = tol * 100 * (1 + sqrt(rc->explained_variance[0]));
        for (size_t e = 0; e < nz; e++) assert_true(fabs(zg[e] - zc[e]) <= zt);
        double *dz;
        assert_int_equal(cudaMalloc((void **)&dz, sizeof(double) * nz), cudaSuccess);
        gstat_matrix Zd = Zg;
        Zd.data = dz;
        Zd.location = GSTAT_CUDA;
        memset(zg, 0, sizeof(double) * nz);
        assert_int_equal(gstat_pca_transform(gpu, rg, &D, &Zd), GSTAT_OK);
        assert_int_equal(cudaMemcpy(zg, dz, sizeof(double) * nz, cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (size_t e = 0; e < nz; e++) assert_true(fabs(zg[e] - zc[e]) <= zt);
        cudaFree(dz);
        free(zg);
        free(zc);
        gstat_pca_result_free(rg);
        gstat_pca_result_free(rc);
      }
      if (d == 1 && layout == TU_ROW_MAJOR) { /* a NaN is found, with and without centering */
        float nan = NAN;
        size_t at = (size_t)(1 * X.m.batch_stride + 5 * X.m.row_stride + 3 * X.m.col_stride);
        assert_int_equal(cudaMemcpy((float *)dptr + at, &nan, sizeof nan, cudaMemcpyHostToDevice),
                         cudaSuccess);
        for (int c = 0; c < 2; c++) {
          gstat_pca_options o;
          gstat_pca_options_init(&o);
          o.center = c;
          gstat_pca_result *r = NULL;
          assert_int_equal(gstat_pca(gpu, &D, &o, &r), GSTAT_ENOTFINITE);
          assert_string_equal(
              gstat_ctx_last_error(gpu),
              "pca: X[1] row 5 column 3 is NaN or Inf (PCA takes no missing values)");
          gstat_pca_result_free(r);
        }
      }
      cudaFree(dptr);
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Gram and randomized PCA of device data (GEMMs, QR and the Gram matrices'
 * eigh on the GPU) and the inverse transform of device scores agree with the
 * CPU's on the same data in host memory, for float32 and float64, with and
 * without scaling; gstat_ctx_last_backends says only CUDA ran. */
static void dense_pca_case(gstat_ctx *gpu, gstat_ctx *cpu, gstat_dtype dt, gstat_pca_method method,
                           int64_t n, int64_t p, bool scale) {
  enum { K = 5 };
  tu_rng rng = tu_rng_new();
  tu_buf X = tu_buf_new(dt, 1, n, p, TU_ROW_MAJOR);
  for (int64_t i = 0; i < n; i++) /* a decaying spectrum: the top K well apart */
    for (int64_t j = 0; j < p; j++) {
      double v = 20.0 + 0.1 * tu_normal(&rng);
      for (int64_t t = 0; t < K + 1; t++)
        v += (8.0 / (double)(1 << t)) * tu_normal(&rng) * cos(0.37 * (double)((t + 1) * (j + 1)));
      tu_set(&X.m, 0, i, j, v);
    }
  void *dptr;
  gstat_matrix D = to_device(&X, &dptr);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.method = method;
  o.n_components = K;
  o.scale = scale;
  o.whiten = !scale;
  gstat_pca_result *rg = NULL, *rc = NULL;
  assert_int_equal(gstat_pca(gpu, &D, &o, &rg), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
  assert_int_equal(gstat_pca(cpu, &X.m, &o, &rc), GSTAT_OK);
  double tol = dt == GSTAT_F64 ? 1e-9 : 2e-3;
  for (int64_t i = 0; i < K; i++) {
    double ev = rc->explained_variance[i];
    assert_true(fabs(rg->explained_variance[i] - ev) <= tol * rc->explained_variance[0]);
    for (int64_t j = 0; j < p; j++)
      assert_true(fabs(rg->components[i * p + j] - rc->components[i * p + j]) <= tol);
    for (int64_t r = 0; r < n; r += 17)
      assert_true(fabs(rg->scores[r * K + i] - rc->scores[r * K + i]) <=
                  tol * (1 + sqrt(rc->explained_variance[0])));
  }
  /* the CPU's scores mapped back from device memory into device memory */
  double *z = malloc(sizeof(double) * (size_t)(n * K)),
         *xg = malloc(sizeof(double) * (size_t)(n * p)),
         *xc = malloc(sizeof(double) * (size_t)(n * p));
  memcpy(z, rc->scores, sizeof(double) * (size_t)(n * K));
  gstat_matrix Zh = gstat_matrix_row_major(z, GSTAT_F64, 1, n, K);
  gstat_matrix Xh = gstat_matrix_row_major(xc, GSTAT_F64, 1, n, p);
  assert_int_equal(gstat_pca_inverse_transform(cpu, rc, &Zh, &Xh), GSTAT_OK);
  void *dz, *dx;
  assert_int_equal(cudaMalloc(&dz, sizeof(double) * (size_t)(n * K)), cudaSuccess);
  assert_int_equal(cudaMalloc(&dx, sizeof(double) * (size_t)(n * p)), cudaSuccess);
  assert_int_equal(cudaMemcpy(dz, z, sizeof(double) * (size_t)(n * K), cudaMemcpyHostToDevice),
                   cudaSuccess);
  gstat_matrix Zd = Zh, Xd = Xh;
  Zd.data = dz;
  Xd.data = dx;
  Zd.location = Xd.location = GSTAT_CUDA;
  assert_int_equal(gstat_pca_inverse_transform(gpu, rc, &Zd, &Xd), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
  assert_int_equal(cudaMemcpy(xg, dx, sizeof(double) * (size_t)(n * p), cudaMemcpyDeviceToHost),
                   cudaSuccess);
  for (int64_t e = 0; e < n * p; e++) assert_true(fabs(xg[e] - xc[e]) <= 1e-9 * (1 + fabs(xc[e])));
  cudaFree(dz);
  cudaFree(dx);
  free(z);
  free(xg);
  free(xc);
  gstat_pca_result_free(rg);
  gstat_pca_result_free(rc);
  cudaFree(dptr);
  tu_buf_free(&X);
}

static void test_pca_dense_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  for (int d = 0; d < 2; d++)
    for (int scale = 0; scale < 2; scale++) {
      dense_pca_case(gpu, cpu, dts[d], GSTAT_PCA_GRAM_EIGH, 300, 700, scale);
      dense_pca_case(gpu, cpu, dts[d], GSTAT_PCA_RANDOMIZED, 3000, 400, scale);
    }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* PCA of float32 device data whose p x p (or n x n Gram) matrix is large
 * enough for the device's top-k eigenpairs (its tridiagonal step, the top
 * k vectors back-transformed): the CPU's results, and one matrix through
 * our tridiagonal step with no hand-back (a rank-deficient covariance's
 * cluster of zero eigenvalues, which no component needs, included). The
 * stats count the full eigh's split path alike: that the top-k path ran is
 * test_fallback's check, through the fake module. */
static void test_pca_top_device(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  const struct {
    gstat_pca_method method;
    int64_t n, p;
  } cases[] = {{GSTAT_PCA_COVARIANCE_EIGH, 3000, 4200}, {GSTAT_PCA_GRAM_EIGH, 4200, 4400}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    gstat_device_stats before = stats_of(gpu);
    dense_pca_case(gpu, cpu, GSTAT_F32, cases[c].method, cases[c].n, cases[c].p, false);
    gstat_device_stats after = stats_of(gpu);
    assert_int_equal(after.own_tridiag_chunks - before.own_tridiag_chunks, 1);
    assert_int_equal(after.own_tridiag_degenerate - before.own_tridiag_degenerate, 0);
  }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Rows in CUDA memory added to an accumulator (mean and co-moment on the
 * GPU, merged on the host) give the host accumulator's covariance; chunks
 * from the host and the device mix; weights, COMPLETE and NaN are refused. */

/* Device rows Xd and the same host rows Xh (weights w or NULL) into fresh
 * accumulators of `missing` on gpu and cpu: the same rows, weight and
 * covariance. */
static void accum_agree(gstat_ctx *gpu, gstat_ctx *cpu, int64_t p, gstat_missing missing,
                        const gstat_matrix *Xd, const gstat_matrix *Xh, const double *w,
                        double tol) {
  gstat_cov_accum *ag = NULL, *ac = NULL;
  assert_int_equal(gstat_cov_accum_create(gpu, p, missing, &ag), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_create(cpu, p, missing, &ac), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_add(gpu, ag, Xd, w), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_add(cpu, ac, Xh, w), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_rows(ag), gstat_cov_accum_rows(ac));
  double *cg = malloc(sizeof(double) * (size_t)(2 * p * p));
  gstat_matrix Cg = gstat_matrix_row_major(cg, GSTAT_F64, 1, p, p),
               Cc = gstat_matrix_row_major(cg + p * p, GSTAT_F64, 1, p, p);
  assert_int_equal(gstat_cov_accum_covariance(gpu, ag, 1, 0, &Cg, NULL), GSTAT_OK);
  assert_int_equal(gstat_cov_accum_covariance(cpu, ac, 1, 0, &Cc, NULL), GSTAT_OK);
  for (int64_t i = 0; i < p * p; i++)
    assert_true(fabs(cg[i] - cg[p * p + i]) <= tol * (1 + fabs(cg[p * p + i])));
  free(cg);
  gstat_cov_accum_destroy(ag);
  gstat_cov_accum_destroy(ac);
}

static void test_accum_device_rows(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  const int64_t n = 3000, p = 40;
  const gstat_dtype dts[] = {GSTAT_F64, GSTAT_F32};
  for (int d = 0; d < 2; d++)
    for (int layout = 0; layout < TU_LAYOUT_COUNT; layout++) {
      tu_buf X = tu_buf_new(dts[d], 1, n, p, (tu_layout)layout);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < p; j++)
          tu_set(&X.m, 0, i, j, 1e3 + tu_normal(&rng) * (1.0 + 0.1 * (double)j));
      void *dptr;
      gstat_matrix D = to_device(&X, &dptr);
      gstat_cov_accum *ag = NULL, *ac = NULL;
      assert_int_equal(gstat_cov_accum_create(gpu, p, GSTAT_MISSING_EVERYTHING, &ag), GSTAT_OK);
      assert_int_equal(gstat_cov_accum_create(cpu, p, GSTAT_MISSING_EVERYTHING, &ac), GSTAT_OK);
      gstat_matrix first = D, rest = X.m; /* 1000 device rows, then 2000 host rows */
      first.rows = 1000;
      rest.rows = n - 1000;
      rest.data = (char *)X.m.data + (size_t)(1000 * X.m.row_stride) * gstat_dtype_size(dts[d]);
      assert_int_equal(gstat_cov_accum_add(gpu, ag, &first, NULL), GSTAT_OK);
      assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA); /* reduced there, merged here */
      assert_int_equal(gstat_cov_accum_add(gpu, ag, &rest, NULL), GSTAT_OK);
      assert_int_equal(gstat_cov_accum_add(cpu, ac, &X.m, NULL), GSTAT_OK);
      assert_int_equal(gstat_cov_accum_rows(ag), n);
      double *cg = malloc(sizeof(double) * (size_t)(p * p + p)),
             *cc = malloc(sizeof(double) * (size_t)(p * p + p));
      gstat_matrix Cg = gstat_matrix_row_major(cg, GSTAT_F64, 1, p, p),
                   Mg = gstat_matrix_row_major(cg + p * p, GSTAT_F64, 1, p, 1);
      gstat_matrix Cc = gstat_matrix_row_major(cc, GSTAT_F64, 1, p, p),
                   Mc = gstat_matrix_row_major(cc + p * p, GSTAT_F64, 1, p, 1);
      assert_int_equal(gstat_cov_accum_covariance(gpu, ag, 1, 0, &Cg, &Mg), GSTAT_OK);
      assert_int_equal(gstat_cov_accum_covariance(cpu, ac, 1, 0, &Cc, &Mc), GSTAT_OK);
      double tol = dts[d] == GSTAT_F64 ? 1e-11 : 2e-4; /* f32: the device sums in float */
      for (int64_t i = 0; i < p * p; i++)
        assert_true(fabs(cg[i] - cc[i]) <= tol * (1 + fabs(cc[i])));
      for (int64_t j = 0; j < p; j++)
        assert_true(fabs(cg[p * p + j] - cc[p * p + j]) <= 1e-12 * 1e3 + tol);
      double w[3] = {1, 2.5, 0.5};
      gstat_matrix three = D, three_h = X.m;
      three.rows = three_h.rows = 3;
      accum_agree(gpu, cpu, p, GSTAT_MISSING_EVERYTHING, &three, &three_h, w, tol);
      if (d == 0 && layout == TU_ROW_MAJOR) {
        double nan = NAN;
        assert_int_equal(cudaMemcpy((double *)dptr + 2 * X.m.row_stride + 7, &nan, sizeof nan,
                                    cudaMemcpyHostToDevice),
                         cudaSuccess);
        tu_set(&X.m, 0, 2, 7, NAN); /* missing = COMPLETE drops row 2 on both */
        accum_agree(gpu, cpu, p, GSTAT_MISSING_COMPLETE, &three, &three_h, w, tol);
        accum_agree(gpu, cpu, p, GSTAT_MISSING_COMPLETE, &three, &three_h, NULL, tol);
        assert_int_equal(gstat_cov_accum_add(gpu, ag, &three, NULL), GSTAT_ENOTFINITE);
        assert_string_equal(gstat_ctx_last_error(gpu),
                            "cov_accum_add: X (CUDA memory) has a NaN or Inf in column 7");
        assert_int_equal(gstat_cov_accum_rows(ag), n); /* unchanged */
      }
      free(cg);
      free(cc);
      gstat_cov_accum_destroy(ag);
      gstat_cov_accum_destroy(ac);
      cudaFree(dptr);
      tu_buf_free(&X);
    }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* ---- statistics through the scheduler, on the real device ---- */

static void *device_alloc(size_t bytes) {
  void *p = NULL;
  assert_int_equal(cudaMalloc(&p, bytes), cudaSuccess);
  return p;
}
static void device_put(void *dev, const void *host, size_t bytes) {
  assert_int_equal(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}
static void device_get(void *host, const void *dev, size_t bytes) {
  assert_int_equal(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}
static void device_release(void *dev) {
  cudaFree(dev);
}
static const sm_memory cuda_memory = {device_alloc, device_put, device_get, device_release};

/* Batch spectral clustering of cudaMalloc'd graphs against the host engine
 * (graph_device.h); the module's solver fault flags elements. Its simulated
 * out-of-memory also fails every copy to the host (test_graph_device covers
 * the engine's out-of-memory path on the fake module). */
static void test_spectral_device_batch(void **state) {
  (void)state;
  gd_spectral_batch(&cuda_memory, "GSTAT_CUDA_FAULT", "solver", NULL);
}

/* Every statistic x {host, device} data x {CPU, CUDA, AUTO} x {f32, f64,
 * bf16} against the CPU on host data (stats_matrix.h). */
static void test_statistics_matrix(void **state) {
  (void)state;
  const double tol[3] = {1e-3, 1e-9, 1e-3};
  sm_run_matrix(&cuda_memory, tol);
}

/* Every graph routine on cudaMalloc'd data against the host call
 * (graph_device.h): the device Laplacian rounds as the CPU's (no FMA), the
 * eigensolvers differ in the last bits. */
static void test_graph_device_data(void **state) {
  (void)state;
  gd_laplacian(&cuda_memory, 0);
  gd_csr_op_components(&cuda_memory);
  gd_affinity(&cuda_memory, 1e-12);
  gd_spectral(&cuda_memory, 1e-9, GSTAT_BACKEND_AUTO);
  gd_spectral(&cuda_memory, 1e-9, GSTAT_BACKEND_CUDA);
  gd_spectral_sparse("GSTAT_CUDA_FAULT", "solver"); /* cuSPARSE, the basis on the device */
  gd_kmeans_large();                                /* the module's k-means */
}

/* Host data streamed to the GPU in several row chunks (the co-moment about
 * the first chunk's mean, summed in double on the device): the CPU's
 * covariance, PCA and scores; under AUTO the cost model takes it there too. */
static void test_host_data_offload(void **state) {
  (void)state;
  const int64_t n = 600000, p = 256; /* 614 MB of float32: 3 chunks of 256 MiB */
  float *x = malloc(sizeof(float) * (size_t)(n * p));
  tu_rng rng = tu_rng_new();
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++)
      x[i * p + j] = (float)(1e3 + (double)j + tu_normal(&rng) * (1.0 + 0.01 * (double)j));
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F32, 1, n, p);
  double *cg = malloc(sizeof(double) * (size_t)(p * p)),
         *cc = malloc(sizeof(double) * (size_t)(p * p));
  double mg[256], mc[256];
  gstat_matrix Cg = gstat_matrix_row_major(cg, GSTAT_F64, 1, p, p),
               Mg = gstat_vector_batch(mg, GSTAT_F64, 1, p);
  gstat_matrix Cc = gstat_matrix_row_major(cc, GSTAT_F64, 1, p, p),
               Mc = gstat_vector_batch(mc, GSTAT_F64, 1, p);
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  assert_int_equal(gstat_covariance(cpu, &X, NULL, &Cc, &Mc), GSTAT_OK);
  const gstat_backend backends[2] = {GSTAT_BACKEND_CUDA, GSTAT_BACKEND_AUTO};
  for (int k = 0; k < 2; k++) {
    gstat_ctx *ctx = tu_ctx(backends[k]);
    assert_int_equal(gstat_covariance(ctx, &X, NULL, &Cg, &Mg), GSTAT_OK);
    assert_int_equal(gstat_ctx_last_backends(ctx), GSTAT_RAN_CUDA);
    for (int64_t j = 0; j < p; j++) assert_true(fabs(mg[j] - mc[j]) <= 1e-9 * fabs(mc[j]));
    for (int64_t e = 0; e < p * p; e++)
      assert_true(fabs(cg[e] - cc[e]) <= 1e-4 * (0.1 + fabs(cc[e])));
    gstat_pca_options o;
    gstat_pca_options_init(&o);
    o.n_components = 4;
    gstat_pca_result *rg = NULL, *rc = NULL;
    assert_int_equal(gstat_pca(ctx, &X, &o, &rg), GSTAT_OK);
    assert_true(gstat_ctx_last_backends(ctx) & GSTAT_RAN_CUDA);
    assert_int_equal(gstat_pca(cpu, &X, &o, &rc), GSTAT_OK);
    for (int64_t i = 0; i < 4; i++)
      assert_true(fabs(rg->explained_variance[i] - rc->explained_variance[i]) <=
                  1e-3 * rc->explained_variance[i]);
    for (int64_t r = 0; r < n; r += 9973)
      for (int64_t i = 0; i < 4; i++)
        assert_true(fabs(rg->scores[r * 4 + i] - rc->scores[r * 4 + i]) <=
                    1e-2 * (1 + fabs(rc->scores[r * 4 + i])));
    gstat_pca_result_free(rg);
    gstat_pca_result_free(rc);
    gstat_ctx_destroy(ctx);
  }
  gstat_ctx_destroy(cpu);
  free(x);
  free(cg);
  free(cc);
}

/* ---- kNN on the GPU: the CPU's exact answer (src/backend/cuda/knn_cuda.c) ---- */

/* gstat_knn of X on the GPU, from device memory and from host memory, equals
 * the CPU's: the same indices, distances within a few ulps (both are the
 * float64 distances from the coordinates). */
static void knn_case(gstat_ctx *gpu, gstat_ctx *cpu, const tu_buf *X, int64_t k, bool self,
                     const char *what) {
  int64_t n = X->m.rows, cells = n * k;
  int64_t *ic = malloc(sizeof(int64_t) * (size_t)cells),
          *ig = malloc(sizeof(int64_t) * (size_t)cells);
  double *dc = malloc(sizeof(double) * (size_t)cells), *dg = malloc(sizeof(double) * (size_t)cells);
  assert_int_equal(gstat_knn(cpu, &X->m, k, self, ic, dc), GSTAT_OK);
  for (int dev = 0; dev <= 1; dev++) {
    void *dptr = NULL;
    gstat_matrix m = dev ? to_device(X, &dptr) : X->m;
    memset(ig, 0xff, sizeof(int64_t) * (size_t)cells);
    assert_int_equal(gstat_knn(gpu, &m, k, self, ig, dg), GSTAT_OK);
    unsigned ran = gstat_ctx_last_backends(gpu);
    if (!(ran & GSTAT_RAN_CUDA) || (ran & GSTAT_RAN_CPU)) {
      print_error("knn %s: n=%lld p=%lld k=%lld self=%d %s data: ran %#x, not the GPU alone\n",
                  what, (long long)n, (long long)X->m.cols, (long long)k, self,
                  dev ? "device" : "host", ran);
      fail();
    }
    for (int64_t e = 0; e < cells; e++) {
      if (ig[e] == ic[e] && fabs(dg[e] - dc[e]) <= 4 * DBL_EPSILON * dc[e]) continue;
      print_error(
          "knn %s: n=%lld p=%lld dtype=%d k=%lld self=%d %s data: row %lld slot %lld: "
          "%lld (%.17g), the CPU %lld (%.17g)\n",
          what, (long long)n, (long long)X->m.cols, (int)X->m.dtype, (long long)k, self,
          dev ? "device" : "host", (long long)(e / k), (long long)(e % k), (long long)ig[e], dg[e],
          (long long)ic[e], dc[e]);
      fail();
    }
    if (dptr) cudaFree(dptr);
  }
  free(ic);
  free(ig);
  free(dc);
  free(dg);
}

/* n points: normal (grid 0), integers in [0, grid) (ties everywhere), or
 * `distinct` points repeated (grid < 0: duplicates); plus an offset. */
static tu_buf knn_points(tu_rng *r, gstat_dtype dt, tu_layout layout, int64_t n, int64_t p,
                         double grid, int64_t distinct, double offset) {
  tu_buf X = tu_buf_new(dt, 1, n, p, layout);
  for (int64_t i = 0; i < n; i++)
    for (int64_t a = 0; a < p; a++) {
      double v = grid > 0   ? floor(tu_uniform(r) * grid)
                 : grid < 0 ? (double)((i % distinct) * (a + 1))
                            : tu_normal(r);
      tu_set(&X.m, 0, i, a, tu_round(dt, v + offset));
    }
  return X;
}

static void knn_sweep(gstat_ctx *gpu, gstat_ctx *cpu, const tu_buf *X, const char *what) {
  int64_t n = X->m.rows;
  const int64_t ks[] = {1, 10, 50};
  for (int self = 0; self <= 1; self++)
    for (int ki = 0; ki < 3; ki++) {
      int64_t most = self ? n : n - 1, k = ks[ki] < most ? ks[ki] : most;
      if (k >= 1 && (n < 20000 || ki > 0)) knn_case(gpu, cpu, X, k, self, what);
    }
}

/* Random data of 2-100 dimensions, float32/float64 (and bf16 once), every
 * layout, n from 1 to 20000, k 1, 10, 50, with and without the point. */
static void test_knn_random(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng r = tu_rng_new();
  /* 2, 10, 32: the fused candidates; 40, 100: the GEMM blocks */
  const int64_t dims[] = {2, 10, 32, 40, 100}, sizes[] = {1, 2, 37, 1000, 20000};
  for (int di = 0; di < 5; di++)
    for (int si = 0; si < 5; si++)
      for (int d = 0; d < 2; d++) {
        gstat_dtype dt = d ? GSTAT_F32 : GSTAT_F64;
        tu_buf X = knn_points(&r, dt, (tu_layout)((di + si + d) % TU_LAYOUT_COUNT), sizes[si],
                              dims[di], 0, 0, 0.0);
        knn_sweep(gpu, cpu, &X, "random");
        tu_buf_free(&X);
      }
  tu_buf b16 = knn_points(&r, GSTAT_BF16, TU_ROW_MAJOR, 3000, 10, 0, 0, 0.0);
  knn_sweep(gpu, cpu, &b16, "bf16");
  tu_buf_free(&b16);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* Integer lattices full of exact ties, duplicated points (every candidate
 * list overflows: the exhaustive path), points far from the origin (the
 * GEMM's rounding exceeds the neighbours' gaps), and k near n (the
 * exhaustive path for every row). */
static void test_knn_ties(void **state) {
  (void)state;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng r = tu_rng_new();
  const int64_t dims[] = {2, 10, 40};
  for (int di = 0; di < 3; di++)
    for (int d = 0; d < 2; d++) {
      gstat_dtype dt = d ? GSTAT_F32 : GSTAT_F64;
      tu_buf L = knn_points(&r, dt, TU_COL_MAJOR, 4000, dims[di], 4.0, 0, 0.0);
      knn_sweep(gpu, cpu, &L, "lattice");
      tu_buf_free(&L);
      tu_buf D = knn_points(&r, dt, TU_ROW_MAJOR, 3000, dims[di], -1.0, 7, 0.0);
      knn_sweep(gpu, cpu, &D, "duplicates");
      tu_buf_free(&D);
      tu_buf F = knn_points(&r, dt, TU_ROW_MAJOR, 2000, dims[di], 0, 0, 300.0);
      knn_sweep(gpu, cpu, &F, "offset");
      for (int self = 0; self <= 1; self++) knn_case(gpu, cpu, &F, 1999, self, "k near n");
      tu_buf_free(&F);
    }
  /* float64 points that all round to 1e306: the column sums overflow and
   * the centred copy is not finite, so every row takes the exact distances
   * (all 0, neighbours by index, as the CPU orders them) */
  tu_buf H = knn_points(&r, GSTAT_F64, TU_COL_MAJOR, 600, 3, 0, 0, 1e306);
  knn_sweep(gpu, cpu, &H, "near overflow");
  tu_buf_free(&H);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* The eigh backward of one n x n element on the host (column-major V, gV,
 * gA; gw may be NULL): V (diag(gw) + F o (V^T gV - gV^T V)) V^T. */
static void eigh_backward_host(int64_t n, const double *w, const double *v, const double *gw,
                               const double *gv, double *ga) {
  double amax = 0, *m = malloc(sizeof(double) * (size_t)(n * n));
  double *t = malloc(sizeof(double) * (size_t)(n * n));
  for (int64_t k = 0; k < n; k++) amax = fmax(amax, fabs(w[k]));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t k = 0; k < n; k++) acc += v[i * n + k] * gv[j * n + k];
      m[j * n + i] = acc; /* (V^T gV)_ij */
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      const double gap = w[j] - w[i];
      const double f = fabs(gap) > amax * (double)n * DBL_EPSILON ? 0.5 / gap : 0.0;
      t[j * n + i] = i == j ? (gw ? gw[i] : 0.0) : (m[j * n + i] - m[i * n + j]) * f;
    }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t k = 0; k < n; k++)
        for (int64_t l = 0; l < n; l++) acc += v[k * n + i] * t[l * n + k] * v[l * n + j];
      ga[j * n + i] = acc;
    }
  free(m);
  free(t);
}

/* A copy on the test's stream, waited for: the legacy default stream of
 * cudaMemcpy does not order with a non-blocking stream. */
static cudaError_t copy_on(cudaStream_t stream, void *dst, const void *src, size_t bytes) {
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  return err != cudaSuccess ? err : cudaStreamSynchronize(stream);
}

/* gstat_eigh_async captured in a CUDA graph (global mode) on the caller's
 * stream (gstat_eigh refused there) and replayed on new input: values and
 * vectors as the CPU's, no device allocation by the capture or the replay,
 * an element with a NaN flagged and NaN while the others are right; then
 * gstat_eigh_backward on the results against eigh_backward_host. */
static void test_eigh_async_capture(void **state) {
  (void)state;
  enum { NB = 40, N = 24, BAD = 7 };
  const size_t mats = sizeof(double) * NB * N * N, vecs = sizeof(double) * NB * N;
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  cudaStream_t stream;
  assert_int_equal(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  assert_int_equal(gstat_ctx_set_cuda_stream(gpu, stream), GSTAT_OK);
  double *a = malloc(mats), *v = malloc(mats), *vr = malloc(mats), *w = malloc(vecs),
         *wr = malloc(vecs), *gv = malloc(mats), *gw = malloc(vecs), *ga = malloc(mats),
         *gr = malloc(sizeof(double) * N * N);
  int32_t info[2 * NB];
  void *dA, *dW, *dV, *dI, *dGV, *dGW, *dGA;
  void **dev[] = {&dA, &dV, &dGV, &dGA};
  for (int k = 0; k < 4; k++) assert_int_equal(cudaMalloc(dev[k], mats), cudaSuccess);
  assert_int_equal(cudaMalloc(&dW, vecs), cudaSuccess);
  assert_int_equal(cudaMalloc(&dGW, vecs), cudaSuccess);
  assert_int_equal(cudaMalloc(&dI, sizeof info), cudaSuccess);
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N);
  gstat_matrix A = gstat_matrix_col_major(dA, GSTAT_F64, NB, N, N),
               W = gstat_vector_batch(dW, GSTAT_F64, NB, N),
               V = gstat_matrix_col_major(dV, GSTAT_F64, NB, N, N);
  A.location = W.location = V.location = GSTAT_CUDA;
  assert_int_equal(copy_on(stream, dA, a, mats), cudaSuccess);
  /* the first call makes the module's state: never inside a capture */
  assert_int_equal(gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, &V, dI), GSTAT_OK);
  assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
  const int64_t allocations = gstat_ctx_device_allocations(gpu);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  assert_int_equal(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  /* gstat_eigh reads info on the host: refused, the capture left intact */
  gstat_status refused = gstat_eigh(gpu, &A, GSTAT_LOWER, &W, &V, NULL);
  char why[512]; /* the next call clears the context's message */
  snprintf(why, sizeof why, "%s", gstat_ctx_last_error(gpu));
  gstat_status st = gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, &V, dI);
  assert_int_equal(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  assert_int_equal(refused, GSTAT_EUNSUPPORTED);
  if (!strstr(why, "capturing")) fail_msg("refused with: %s", why);
  assert_int_equal(st, GSTAT_OK);
  assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N); /* new input */
  a[BAD * N * N + 3] = NAN;                                            /* (3, 0): read */
  assert_int_equal(copy_on(stream, dA, a, mats), cudaSuccess);
  assert_int_equal(cudaGraphLaunch(exec, stream), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
  assert_int_equal(copy_on(stream, w, dW, vecs), cudaSuccess);
  assert_int_equal(copy_on(stream, v, dV, mats), cudaSuccess);
  assert_int_equal(copy_on(stream, info, dI, sizeof info), cudaSuccess);
  assert_int_equal(gstat_ctx_device_allocations(gpu), allocations);
  a[BAD * N * N + 3] = 0; /* the CPU's reference of the others */
  gstat_matrix Ah = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N),
               Wh = gstat_vector_batch(wr, GSTAT_F64, NB, N),
               Vh = gstat_matrix_col_major(vr, GSTAT_F64, NB, N, N);
  assert_int_equal(gstat_eigh(cpu, &Ah, GSTAT_LOWER, &Wh, &Vh, NULL), GSTAT_OK);
  for (int64_t b = 0; b < NB; b++) {
    if (b != BAD) assert_int_equal(info[b], 0); /* a NaN may also stop the sweeps: 1 */
    assert_int_equal(info[NB + b], b == BAD ? 2 : 0);
    for (int64_t i = 0; i < N; i++) {
      if (b == BAD) {
        assert_true(isnan(w[b * N + i]));
        continue;
      }
      assert_true(fabs(w[b * N + i] - wr[b * N + i]) <= 1e-12 * fabs(wr[b * N + N - 1]));
      for (int64_t k = 0; k < N; k++) /* both with gstat's sign rule */
        assert_true(fabs(v[(b * N + i) * N + k] - vr[(b * N + i) * N + k]) <= 1e-9);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  /* the backward of the good elements (from BAD + 1 on), gw on and off */
  for (size_t k = 0; k < NB * N * N; k++) gv[k] = sin(0.37 * (double)k);
  for (size_t k = 0; k < NB * N; k++) gw[k] = cos(0.11 * (double)k);
  assert_int_equal(copy_on(stream, dGV, gv, mats), cudaSuccess);
  assert_int_equal(copy_on(stream, dGW, gw, vecs), cudaSuccess);
  const int64_t b0 = BAD + 1, nb = NB - BAD - 1;
  gstat_matrix w1 = gstat_vector_batch((double *)dW + b0 * N, GSTAT_F64, nb, N),
               v1 = gstat_matrix_col_major((double *)dV + b0 * N * N, GSTAT_F64, nb, N, N),
               gw1 = gstat_vector_batch((double *)dGW + b0 * N, GSTAT_F64, nb, N),
               gv1 = gstat_matrix_col_major((double *)dGV + b0 * N * N, GSTAT_F64, nb, N, N),
               ga1 = gstat_matrix_col_major((double *)dGA + b0 * N * N, GSTAT_F64, nb, N, N);
  gstat_matrix *args[] = {&w1, &v1, &gw1, &gv1, &ga1};
  for (int k = 0; k < 5; k++) args[k]->location = GSTAT_CUDA;
  for (int with_gw = 0; with_gw < 2; with_gw++) {
    assert_int_equal(gstat_eigh_backward(gpu, &w1, &v1, with_gw ? &gw1 : NULL, &gv1, 0.0, &ga1),
                     GSTAT_OK);
    assert_int_equal(copy_on(stream, ga, dGA, mats), cudaSuccess);
    for (int64_t b = b0; b < NB; b++) {
      eigh_backward_host(N, w + b * N, v + b * N * N, with_gw ? gw + b * N : NULL, gv + b * N * N,
                         gr);
      double scale = 0;
      for (int64_t k = 0; k < N * N; k++) scale = fmax(scale, fabs(gr[k]));
      for (int64_t k = 0; k < N * N; k++)
        assert_true(fabs(ga[b * N * N + k] - gr[k]) <= 1e-11 * (1 + scale));
    }
  }
  for (int k = 0; k < 4; k++) cudaFree(*dev[k]);
  cudaFree(dW);
  cudaFree(dGW);
  cudaFree(dI);
  cudaStreamDestroy(stream);
  void *bufs[] = {a, v, vr, w, wr, gv, gw, ga, gr};
  for (int k = 0; k < 9; k++) free(bufs[k]);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

int main(void) {
  gstat_ctx *probe;
  if (gstat_ctx_create(&probe, NULL) != GSTAT_OK) return 1;
  int available = gstat_ctx_cuda_available(probe);
  gstat_ctx_destroy(probe);
  if (!available) {
    printf("test_cuda: no usable CUDA device or module: SKIPPED\n");
    return 77;
  }
  const char *only = getenv("GSTAT_TEST_FILTER"); /* e.g. one test rerun on a GPU machine */
  if (only) cmocka_set_test_filter(only);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eigh_families),
      cmocka_unit_test(test_eigh_large_n),
      cmocka_unit_test(test_eigh_values_lockstep),
      cmocka_unit_test(test_eigh_block_jacobi),
      cmocka_unit_test(test_eigh_graph_branches),
      cmocka_unit_test(test_eigh_caller_buffers),
      cmocka_unit_test(test_eigh_bf16_device),
      cmocka_unit_test(test_eigh_graded_f32),
      cmocka_unit_test(test_large_batch_small_n),
      cmocka_unit_test(test_host_staging_pieces),
      cmocka_unit_test(test_host_pipeline),
      cmocka_unit_test(test_no_device_allocations_after_first),
      cmocka_unit_test(test_cholesky_and_solves),
      cmocka_unit_test(test_cholesky_not_pd_device),
      cmocka_unit_test(test_info_clean_never_hides_a_failure),
      cmocka_unit_test(test_cholesky_single_large),
      cmocka_unit_test(test_cholesky_not_pd_small_batch),
      cmocka_unit_test(test_cholesky_nonfinite_device),
      cmocka_unit_test(test_solves_nonfinite_device),
      cmocka_unit_test(test_fallback_paths),
      cmocka_unit_test(test_device_oom_leaves_outputs),
      cmocka_unit_test(test_pca_device_data),
      cmocka_unit_test(test_pca_dense_device),
      cmocka_unit_test(test_pca_top_device),
      cmocka_unit_test(test_accum_device_rows),
      cmocka_unit_test(test_spectral_device_batch),
      cmocka_unit_test(test_statistics_matrix),
      cmocka_unit_test(test_graph_device_data),
      cmocka_unit_test(test_host_data_offload),
      cmocka_unit_test(test_knn_random),
      cmocka_unit_test(test_knn_ties),
      cmocka_unit_test(test_eigh_async_capture),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
