/*
 * The dispatcher's GPU selection and fallback, run on any machine against
 * tests/fake_module.c (loaded through GSTAT_CUDA_MODULE as the CUDA module
 * would be): AUTO picks the "GPU" for large work only; a whole-call failure
 * reruns on the CPU; flagged elements are recomputed on the CPU; a missing
 * device leaves AUTO on the CPU and refuses an explicit CUDA context.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
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
#include "stats_matrix.h"

/* eigh + Cholesky of a batch on ctx; results equal the CPU's bit for bit
 * (the fake computes on the CPU too), so every recomputation is checked. */
static void run_and_compare(gstat_ctx *ctx, int64_t nb, int64_t n, const char *expect_ran) {
  gstat_ctx *cpu;
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = GSTAT_BACKEND_CPU;
  assert_int_equal(gstat_ctx_create(&cpu, &opt), GSTAT_OK);
  tu_rng rng = tu_rng_new();
  size_t nn = (size_t)(nb * n * n);
  double *a = malloc(sizeof(double) * nn), *w = malloc(sizeof(double) * (size_t)(nb * n));
  double *v = malloc(sizeof(double) * nn), *w2 = malloc(sizeof(double) * (size_t)(nb * n));
  double *v2 = malloc(sizeof(double) * nn);
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, nb, n, n);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, nb, n),
               V = gstat_matrix_col_major(v, GSTAT_F64, nb, n, n);
  gstat_matrix W2 = gstat_vector_batch(w2, GSTAT_F64, nb, n),
               V2 = gstat_matrix_col_major(v2, GSTAT_F64, nb, n, n);
  int64_t *info = malloc(sizeof(int64_t) * (size_t)nb);
  gstat_status st = gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, info);
  if (st) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), expect_ran);
  for (int64_t b = 0; b < nb; b++) assert_int_equal(info[b], 0);
  assert_int_equal(gstat_eigh(cpu, &A, GSTAT_LOWER, &W2, &V2, NULL), GSTAT_OK);
  assert_memory_equal(w, w2, sizeof(double) * (size_t)(nb * n));
  assert_memory_equal(v, v2, sizeof(double) * nn);
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_UPPER, &V, info), GSTAT_OK);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), expect_ran);
  assert_int_equal(gstat_cholesky(cpu, &A, GSTAT_UPPER, &V2, NULL), GSTAT_OK);
  assert_memory_equal(v, v2, sizeof(double) * nn);
  free(a);
  free(w);
  free(v);
  free(w2);
  free(v2);
  free(info);
  gstat_ctx_destroy(cpu);
}

/* ctx's device counters: `allocations`, and zero for every other. */
static void expect_only_allocations(const gstat_ctx *ctx, int64_t allocations) {
  gstat_device_stats ds;
  memset(&ds, 0xff, sizeof ds);
  assert_int_equal(gstat_ctx_device_stats(ctx, &ds, sizeof ds), GSTAT_OK);
  assert_int_equal(ds.allocations, allocations);
  assert_int_equal(ds.graph_captures, 0);
  assert_int_equal(ds.graph_refusals, 0);
  assert_int_equal(ds.graph_launches, 0);
  assert_int_equal(ds.pipeline_pieces, 0);
}

static void test_auto_picks_gpu_for_large_work(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_AUTO);
  assert_true(gstat_ctx_cuda_available(ctx));
  run_and_compare(ctx, 300, 30, "cuda"); /* 300 * 30^3 = 8.1e6 >= threshold */
  run_and_compare(ctx, 3, 10, "cpu");    /* tiny: not worth a transfer */
  /* a module without the counters op: its allocations, zero for the rest */
  expect_only_allocations(ctx, gstat_ctx_device_allocations(ctx));
  gstat_ctx_destroy(ctx);
}

static void test_out_of_memory_reruns_on_cpu(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "oom", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  run_and_compare(ctx, 20, 12, "cpu");
  gstat_ctx_destroy(ctx);
}

static void test_flagged_elements_recomputed(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "retry", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  run_and_compare(ctx, 20, 12, "cuda+cpu");
  gstat_ctx_destroy(ctx);
}

/* In place (V = A, F = A) on the GPU: the fake writes over the elements it
 * flags, in the caller's A; the CPU must recompute them from the input as
 * it was (the dispatcher keeps a copy), not from what the GPU left there. */
static void test_flagged_in_place_recomputed_from_input(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "retry", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  enum { NB = 5, N = 4 };
  tu_rng rng = tu_rng_new();
  double a[NB * N * N], v[NB * N * N], l[NB * N * N], w[NB * N];
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N);
  memcpy(v, a, sizeof a);
  memcpy(l, a, sizeof a);
  gstat_matrix V = gstat_matrix_col_major(v, GSTAT_F64, NB, N, N);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, N);
  assert_int_equal(gstat_eigh(ctx, &V, GSTAT_LOWER, &W, &V, NULL), GSTAT_OK);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cuda+cpu");
  gstat_matrix L = gstat_matrix_col_major(l, GSTAT_F64, NB, N, N);
  assert_int_equal(gstat_cholesky(ctx, &L, GSTAT_LOWER, &L, NULL), GSTAT_OK);
  for (int64_t b = 0; b < NB; b++) { /* element 1 (and 4) was flagged */
    assert_true(tu_eig_residual(N, a + b * N * N, w + b * N, v + b * N * N, DBL_EPSILON) <= 60);
    assert_true(tu_chol_residual(N, a + b * N * N, l + b * N * N, DBL_EPSILON) <= 60);
  }
  gstat_ctx_destroy(ctx);
}

/* A backend that vouches that every info is 0 (info_clean) is believed:
 * the dispatcher neither scans info nor recomputes anything. The fake lies
 * here (it spoiled and flagged elements 1, 4, ...), which shows the scans
 * really are skipped; the CUDA module's own test checks that it never
 * vouches for a failure. Without the lie the same batch is recomputed
 * (test_flagged_elements_recomputed). */
static void test_vouched_info_is_trusted(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "retry-vouched", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  const int64_t nb = 5, n = 4;
  tu_rng rng = tu_rng_new();
  double a[5 * 16], w[5 * 4];
  for (int64_t b = 0; b < nb; b++) tu_spd(&rng, n, 10, a + b * n * n);
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, nb, n, n);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, nb, n);
  assert_int_equal(gstat_eigh(ctx, &A, GSTAT_LOWER, &W, NULL, NULL), GSTAT_OK);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cuda");
  assert_true(w[1 * n] == 12345.0); /* element 1 as the fake left it */
  assert_true(w[0] != 12345.0);
  gstat_ctx_destroy(ctx);
}

static void test_no_device(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "nodevice", 1);
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = GSTAT_BACKEND_CUDA;
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_EUNSUPPORTED);
  assert_null(ctx);
  ctx = tu_ctx(GSTAT_BACKEND_AUTO);
  assert_false(gstat_ctx_cuda_available(ctx));
  run_and_compare(ctx, 300, 30, "cpu");
  assert_int_equal(gstat_ctx_set_cuda_stream(ctx, NULL), GSTAT_EUNSUPPORTED);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "no CUDA backend: fake: no CUDA device"));
  expect_only_allocations(ctx, 0);
  gstat_device_stats ds;
  assert_int_equal(gstat_ctx_device_stats(ctx, NULL, sizeof ds), GSTAT_EINVAL);
  assert_int_equal(gstat_ctx_device_stats(NULL, &ds, sizeof ds), GSTAT_EINVAL);
  gstat_ctx_destroy(ctx);
}

/* gstat_device_stats can grow: a caller's struct of another size gets the
 * fields that fit, zeros past the library's, and nothing written past its
 * own size. (The bytes start as 0xab; every counter here is small.) */
static void test_device_stats_sizes(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "", 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_AUTO);
  run_and_compare(ctx, 300, 30, "cuda");
  gstat_device_stats ref;
  assert_int_equal(gstat_ctx_device_stats(ctx, &ref, sizeof ref), GSTAT_OK);
  _Alignas(gstat_device_stats) unsigned char buf[sizeof(gstat_device_stats) + 64];
  gstat_device_stats *as_stats = (gstat_device_stats *)(void *)buf;

  /* A newer caller: a larger struct, the bytes past ours zeroed. */
  memset(buf, 0xab, sizeof buf);
  assert_int_equal(gstat_ctx_device_stats(ctx, as_stats, sizeof buf - 8), GSTAT_OK);
  assert_memory_equal(buf, &ref, sizeof ref);
  for (size_t i = sizeof ref; i < sizeof buf - 8; i++) assert_int_equal(buf[i], 0);
  for (size_t i = sizeof buf - 8; i < sizeof buf; i++) assert_int_equal(buf[i], 0xab);

  /* The first published size: exactly its bytes written. */
  memset(buf, 0xab, sizeof buf);
  assert_int_equal(gstat_ctx_device_stats(ctx, as_stats, GSTAT_DEVICE_STATS_SIZE_V1), GSTAT_OK);
  assert_memory_equal(buf, &ref, GSTAT_DEVICE_STATS_SIZE_V1);
  for (size_t i = GSTAT_DEVICE_STATS_SIZE_V1; i < sizeof buf; i++) assert_int_equal(buf[i], 0xab);

  /* Too small for the first version: refused, nothing written. */
  memset(buf, 0xab, sizeof buf);
  assert_int_equal(gstat_ctx_device_stats(ctx, as_stats, GSTAT_DEVICE_STATS_SIZE_V1 - 1),
                   GSTAT_EINVAL);
  for (size_t i = 0; i < sizeof buf; i++) assert_int_equal(buf[i], 0xab);
  gstat_ctx_destroy(ctx);
}

/* ---- statistics through the scheduler ---- */

/* Every statistic on host and "device" data under every context: the fake
 * computes with the CPU's code, so the results are the CPU's. */
static void test_statistics_matrix(void **state) {
  (void)state;
  /* the accumulator merges in its own order: float rounding apart */
  const double tol[3] = {1e-5, 1e-12, 1e-5};
  sm_run_matrix(sm_fake_memory(), tol);
}

/* Covariance and PCA of data on ctx: the values, and what ran. */
static double fault_data[SM_NB * SM_N * SM_P];

static void cov_and_pca(gstat_ctx *ctx, bool device, double *cov, double *comp, unsigned *ran) {
  const double *x = fault_data;
  sm_arg X = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, SM_NB, SM_N, SM_P, x);
  gstat_matrix C = gstat_matrix_row_major(cov, GSTAT_F64, SM_NB, SM_P, SM_P);
  assert_int_equal(gstat_covariance(ctx, &X.m, NULL, &C, NULL), GSTAT_OK);
  ran[0] = gstat_ctx_last_backends(ctx);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.n_components = SM_K;
  gstat_pca_result *r = NULL;
  assert_int_equal(gstat_pca(ctx, &X.m, &o, &r), GSTAT_OK);
  ran[1] = gstat_ctx_last_backends(ctx);
  memcpy(comp, r->components, sizeof(double) * SM_NB * SM_K * SM_P);
  gstat_pca_result_free(r);
  sm_arg_free(sm_fake_memory(), &X);
}

/* Faults on the "GPU" inside a covariance and a PCA: a device out of memory
 * reruns the primitive on the CPU (through host copies for device data); a
 * co-moment that is not finite although the data are is recomputed on the
 * CPU; a failed top-k eigh gives way to the full one; the results are the
 * CPU's and last_backends says what ran. */
static void test_statistics_faults(void **state) {
  (void)state;
  double cov0[SM_NB * SM_P * SM_P], comp0[SM_NB * SM_K * SM_P];
  double cov1[SM_NB * SM_P * SM_P], comp1[SM_NB * SM_K * SM_P];
  unsigned ran[2];
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  sm_data(fault_data);
  cov_and_pca(cpu, false, cov0, comp0, ran);
  assert_int_equal(ran[0], GSTAT_RAN_CPU);
  for (int device = 0; device < 2; device++) {
    cov_and_pca(gpu, device, cov1, comp1, ran); /* no fault: all on the "GPU" */
    assert_int_equal(ran[0], GSTAT_RAN_CUDA);
    assert_int_equal(ran[1], GSTAT_RAN_CUDA);
    /* the fault, and what the covariance call must say ran */
    const struct {
      const char *fault;
      unsigned cov_ran;
    } faults[] = {{"oom", GSTAT_RAN_CPU}, {"nonfinite", GSTAT_RAN_CUDA | GSTAT_RAN_CPU}};
    for (int k = 0; k < 2; k++) {
      setenv("GSTAT_FAKE_FAULT", faults[k].fault, 1);
      memset(cov1, 0, sizeof cov1);
      cov_and_pca(gpu, device, cov1, comp1, ran);
      assert_memory_equal(cov0, cov1, sizeof cov0);
      assert_memory_equal(comp0, comp1, sizeof comp0);
      assert_int_equal(ran[0], faults[k].cov_ran);
      if (k == 0) assert_int_equal(ran[1], GSTAT_RAN_CPU);
    }
    unsetenv("GSTAT_FAKE_FAULT");
  }
  /* device data with k < p: the device's top k pairs, whose failure leaves
   * the full eigh to answer and whose wrong answer shows (the path taken) */
  setenv("GSTAT_FAKE_FAULT", "topfail", 1);
  cov_and_pca(gpu, true, cov1, comp1, ran);
  assert_memory_equal(comp0, comp1, sizeof comp0);
  assert_int_equal(ran[1], GSTAT_RAN_CUDA);
  setenv("GSTAT_FAKE_FAULT", "topspoil", 1);
  cov_and_pca(gpu, true, cov1, comp1, ran);
  double off = 0;
  for (int i = 0; i < SM_NB * SM_K * SM_P; i++) off = fmax(off, fabs(comp1[i] - comp0[i]));
  assert_true(off > 0.1);
  unsetenv("GSTAT_FAKE_FAULT");
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
}

/* AUTO takes host data to the GPU when its estimate is lower (the fake's is
 * 0), but not work the CPU does in well under a millisecond (no GPU start-up
 * for it), and never when the context says CPU; a CPU context still runs
 * device data on the device. */
static void test_statistics_auto(void **state) {
  (void)state;
  double cov[SM_NB * SM_P * SM_P], comp[SM_NB * SM_K * SM_P];
  unsigned ran[2];
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  o.num_threads = 1; /* the CPU estimate must not depend on the machine's cores */
  gstat_ctx *automatic, *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  assert_int_equal(gstat_ctx_create(&automatic, &o), GSTAT_OK);
  sm_data(fault_data);
  cov_and_pca(automatic, false, cov, comp, ran); /* 240 x 9: microseconds */
  assert_int_equal(ran[0], GSTAT_RAN_CPU);
  const int64_t n = 40000, p = 64; /* ~2 ms for one CPU thread by its rules */
  float *x = malloc(sizeof(float) * (size_t)(n * p));
  double *c = malloc(sizeof(double) * (size_t)(p * p));
  tu_rng rng = tu_rng_new();
  for (int64_t e = 0; e < n * p; e++) x[e] = (float)tu_normal(&rng);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F32, 1, n, p);
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, p, p);
  assert_int_equal(gstat_covariance(automatic, &X, NULL, &C, NULL), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_backends(automatic), GSTAT_RAN_CUDA);
  free(x);
  free(c);
  cov_and_pca(cpu, false, cov, comp, ran);
  assert_int_equal(ran[0], GSTAT_RAN_CPU);
  assert_int_equal(ran[1], GSTAT_RAN_CPU);
  cov_and_pca(cpu, true, cov, comp, ran);
  assert_int_equal(ran[0], GSTAT_RAN_CUDA);
  gstat_ctx_destroy(automatic);
  gstat_ctx_destroy(cpu);
}

/* Progress of a host batch on the "GPU": the dispatcher's reports name the
 * whole batch (total); the CPU inside the fake reports its own chunk. */
typedef struct {
  int64_t batch, calls, first_done, stop_at;
} chunk_watch;

static int watch_chunks(int64_t done, int64_t total, const char *what, void *user) {
  chunk_watch *c = user;
  assert_string_equal(what, "cholesky");
  if (total != c->batch) return 0;
  if (c->calls++ == 0) c->first_done = done;
  return c->calls == c->stop_at;
}

/* Host data on the GPU with a progress callback runs in chunks (1024
 * elements of order 64): reported between chunks, cancellable there, and
 * every message and recomputed element indexes the whole batch (a chunk's
 * element 452 is the batch's 2500). */
static void test_host_batch_chunked_for_progress(void **state) {
  (void)state;
  enum { NB = 3000, N = 64, BAD = 2500 };
  chunk_watch watch = {NB, 0, 0, 0};
  gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CUDA, 0, watch_chunks, &watch);
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  assert_non_null(ctx);
  double *a = calloc((size_t)NB * N * N, sizeof(double)), *f = malloc(sizeof(double) * NB * N * N);
  double *f2 = malloc(sizeof(double) * NB * N * N);
  assert_true(a && f && f2);
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N);
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N),
               F = gstat_matrix_col_major(f, GSTAT_F64, NB, N, N),
               F2 = gstat_matrix_col_major(f2, GSTAT_F64, NB, N, N);
  setenv("GSTAT_FAKE_FAULT", "retry", 1); /* every third element of each chunk flagged */
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &F, NULL), GSTAT_OK);
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cuda+cpu");
  assert_int_equal(watch.calls, 2);
  assert_int_equal(watch.first_done, 1024);
  assert_int_equal(gstat_cholesky(cpu, &A, GSTAT_LOWER, &F2, NULL), GSTAT_OK);
  assert_memory_equal(f, f2, sizeof(double) * NB * N * N);
  setenv("GSTAT_FAKE_FAULT", "", 1);
  a[(int64_t)BAD * N * N + 5 * N + 5] = -1e6; /* not positive definite, in the third chunk */
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &F, NULL), GSTAT_ENOTPD);
  assert_true(strncmp(gstat_ctx_last_error(ctx), "cholesky: batch element 2500 ", 29) == 0);
  watch.calls = 0;
  watch.stop_at = 1;
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &F, NULL), GSTAT_ECANCELED);
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "cholesky: cancelled by the progress callback at 1024 of 3000");
  free(a);
  free(f);
  free(f2);
  gstat_ctx_destroy(ctx);
  gstat_ctx_destroy(cpu);
}

/* In place on device data (F = A) the GPU's factor overwrites the input,
 * and device inputs are not kept: an element that is not positive definite
 * keeps the GPU's verdict (its minor) and NaN factor; recomputing it on the
 * CPU from the NaN left there reported minor 1. */
static void test_not_pd_in_place_device_keeps_verdict(void **state) {
  (void)state;
  unsetenv("GSTAT_FAKE_FAULT");
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  enum { NB = 3, N = 6 };
  tu_rng rng = tu_rng_new();
  double a[NB * N * N];
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N);
  a[1 * N * N + 3 * (N + 1)] = -1; /* element 1: leading minor of order 4 */
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N);
  A.location = GSTAT_CUDA;
  int64_t info[NB] = {-7, -7, -7};
  assert_int_equal(gstat_cholesky(ctx, &A, GSTAT_LOWER, &A, info), GSTAT_ENOTPD);
  assert_non_null(strstr(gstat_ctx_last_error(ctx),
                         "batch element 1 is not positive definite "
                         "(leading minor of order 4)"));
  assert_string_equal(gstat_ctx_last_backend_name(ctx), "cuda");
  assert_int_equal(info[0], 0);
  assert_int_equal(info[1], 4);
  assert_int_equal(info[2], 0);
  for (int e = 0; e < N * N; e++) assert_true(isnan(a[1 * N * N + e]));
  gstat_ctx_destroy(ctx);
}

/* Gram and randomized PCA and the inverse transform of "device" data run
 * their GEMMs and QR on the device (a CPU context too: device data stay
 * there; only its small eigh runs on the CPU), with the CPU's results; a
 * device out of memory reruns them on host copies with the same results. */
static void dense_case(gstat_ctx *ctx, bool device, gstat_dtype dt, gstat_pca_method method,
                       double *out, unsigned *ran) {
  sm_arg X = sm_arg_new(sm_fake_memory(), device, dt, SM_NB, SM_N, SM_P, fault_data);
  sm_arg Z = sm_arg_new(sm_fake_memory(), device, dt, SM_NB, SM_N, SM_K, NULL);
  sm_arg R = sm_arg_new(sm_fake_memory(), device, dt, SM_NB, SM_N, SM_P, NULL);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.method = method;
  o.n_components = SM_K;
  o.scale = method == GSTAT_PCA_RANDOMIZED;
  o.whiten = method == GSTAT_PCA_GRAM_EIGH;
  gstat_pca_result *r = NULL;
  sm_check(ctx, gstat_pca(ctx, &X.m, &o, &r));
  ran[0] = gstat_ctx_last_backends(ctx);
  sm_check(ctx, gstat_pca_transform(ctx, r, &X.m, &Z.m));
  sm_check(ctx, gstat_pca_inverse_transform(ctx, r, &Z.m, &R.m));
  ran[1] = gstat_ctx_last_backends(ctx);
  double *rx = sm_values(sm_fake_memory(), &R);
  memcpy(out, r->components, sizeof(double) * SM_NB * SM_K * SM_P);
  memcpy(out + SM_NB * SM_K * SM_P, r->explained_variance, sizeof(double) * SM_NB * SM_K);
  memcpy(out + SM_NB * SM_K * (SM_P + 1), r->scores, sizeof(double) * SM_NB * SM_N * SM_K);
  memcpy(out + SM_NB * SM_K * (SM_P + 1 + SM_N), rx, sizeof(double) * SM_NB * SM_N * SM_P);
  free(rx);
  gstat_pca_result_free(r);
  sm_arg_free(sm_fake_memory(), &X);
  sm_arg_free(sm_fake_memory(), &Z);
  sm_arg_free(sm_fake_memory(), &R);
}

static void test_dense_steps_on_device(void **state) {
  (void)state;
  enum { COUNT = SM_NB * SM_K * (SM_P + 1 + SM_N) + SM_NB * SM_N * SM_P };
  static double want[COUNT], got[COUNT];
  const gstat_pca_method methods[2] = {GSTAT_PCA_GRAM_EIGH, GSTAT_PCA_RANDOMIZED};
  const gstat_dtype dts[2] = {GSTAT_F32, GSTAT_F64};
  unsigned ran[2];
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  sm_data(fault_data);
  for (int m = 0; m < 2; m++)
    for (int d = 0; d < 2; d++) {
      double tol = dts[d] == GSTAT_F64 ? 1e-10 : 1e-4;
      dense_case(cpu, false, dts[d], methods[m], want, ran);
      assert_int_equal(ran[0], GSTAT_RAN_CPU);
      dense_case(gpu, true, dts[d], methods[m], got, ran);
      sm_close("device data, CUDA context", got, want, COUNT, tol);
      assert_int_equal(ran[0], GSTAT_RAN_CUDA);
      assert_int_equal(ran[1], GSTAT_RAN_CUDA);
      dense_case(cpu, true, dts[d], methods[m], got, ran);
      sm_close("device data, CPU context", got, want, COUNT, tol);
      assert_true(ran[0] & GSTAT_RAN_CUDA);
      assert_int_equal(ran[1], GSTAT_RAN_CUDA);
      setenv("GSTAT_FAKE_FAULT", "oom", 1);
      dense_case(gpu, true, dts[d], methods[m], got, ran);
      unsetenv("GSTAT_FAKE_FAULT");
      sm_close("device data, device out of memory", got, want, COUNT, tol);
      assert_int_equal(ran[0], GSTAT_RAN_CPU);
      assert_int_equal(ran[1], GSTAT_RAN_CPU);
      setenv("GSTAT_FAKE_FAULT", "nodense", 1); /* each GEMM and QR on host copies */
      dense_case(gpu, true, dts[d], methods[m], got, ran);
      unsetenv("GSTAT_FAKE_FAULT");
      sm_close("device data, no device GEMM", got, want, COUNT, tol);
      assert_int_equal(ran[0], GSTAT_RAN_CPU | GSTAT_RAN_CUDA);
      assert_int_equal(ran[1], GSTAT_RAN_CPU);
    }
  /* AUTO on wide device data takes GRAM, as on the host (not a p x p eigh) */
  sm_arg W = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, 1, 12, 40, fault_data);
  sm_arg H = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, 1, 12, 40, fault_data);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.n_components = 3;
  gstat_pca_result *rd = NULL, *rh = NULL;
  sm_check(gpu, gstat_pca(gpu, &W.m, &o, &rd));
  sm_check(cpu, gstat_pca(cpu, &H.m, &o, &rh));
  assert_int_equal(rd->method, GSTAT_PCA_GRAM_EIGH);
  assert_int_equal(rh->method, GSTAT_PCA_GRAM_EIGH);
  sm_close("wide device data, AUTO", rd->components, rh->components, 3 * 40, 1e-10);
  gstat_pca_result_free(rd);
  gstat_pca_result_free(rh);
  sm_arg_free(sm_fake_memory(), &W);
  sm_arg_free(sm_fake_memory(), &H);
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
}

/* ---- Mahalanobis and shrinkage: the rows primitive and the factor ---- */

enum { RW_NB = 3 };
static double rows_data[RW_NB * SM_N * SM_P];

/* Squared distances (covariance and precision forms), then the Ledoit-Wolf
 * and OAS matrices and shrinkages, of fault_data on ctx, into out (the
 * count rw_count gives); ran: last_backends of each call; st: each status. */
static int64_t rw_count(void) {
  return 2 * RW_NB * SM_N + 2 * (RW_NB * SM_P * SM_P + RW_NB);
}

static void rows_stats(gstat_ctx *ctx, bool device, const double *s, double *out, unsigned ran[4],
                       gstat_status st[4]) {
  double c[RW_NB * SM_P];
  for (int64_t e = 0; e < RW_NB * SM_P; e++) c[e] = 50.0 + (double)(e % SM_P);
  sm_arg X = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, RW_NB, SM_N, SM_P, rows_data);
  sm_arg S = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, RW_NB, SM_P, SM_P, s);
  sm_arg Z = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, RW_NB, 1, SM_P, c); /* a row centre */
  sm_arg D = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, RW_NB, SM_N, 1, NULL);
  sm_arg C = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, RW_NB, SM_P, SM_P, NULL);
  for (int inv = 0; inv < 2; inv++) {
    st[inv] = gstat_mahalanobis(ctx, &X.m, &Z.m, &S.m, inv, &D.m);
    ran[inv] = gstat_ctx_last_backends(ctx);
    double *d = sm_values(sm_fake_memory(), &D);
    memcpy(out + inv * RW_NB * SM_N, d, sizeof(double) * RW_NB * SM_N);
    free(d);
  }
  double *o = out + 2 * RW_NB * SM_N;
  const gstat_shrinkage methods[2] = {GSTAT_SHRINK_LEDOIT_WOLF, GSTAT_SHRINK_OAS};
  for (int k = 0; k < 2; k++) {
    st[2 + k] = gstat_cov_shrink(ctx, &X.m, methods[k], k, &C.m, NULL, o + RW_NB * SM_P * SM_P);
    ran[2 + k] = gstat_ctx_last_backends(ctx);
    double *cv = sm_values(sm_fake_memory(), &C);
    memcpy(o, cv, sizeof(double) * RW_NB * SM_P * SM_P);
    free(cv);
    o += RW_NB * SM_P * SM_P + RW_NB;
  }
  sm_arg_free(sm_fake_memory(), &X);
  sm_arg_free(sm_fake_memory(), &S);
  sm_arg_free(sm_fake_memory(), &Z);
  sm_arg_free(sm_fake_memory(), &D);
  sm_arg_free(sm_fake_memory(), &C);
}

/* RW_NB covariance matrices, the second one not positive definite when
 * `bad` (its distances NaN, the others computed). */
static void rows_matrices(double *s, bool bad) {
  for (int64_t b = 0; b < RW_NB; b++)
    for (int64_t i = 0; i < SM_P; i++)
      for (int64_t j = 0; j < SM_P; j++)
        s[(b * SM_P + i) * SM_P + j] = (i == j ? 3.0 + (double)(i + b) : 0.0) +
                                       0.4 / (1.0 + (double)(i + j)) - (bad && b == 1 ? 9.0 : 0.0);
}

/* Mahalanobis, Ledoit-Wolf and OAS on "device" data run on the device
 * (rows primitive, factor, co-moment) and give the CPU's values;
 * out of memory reruns the steps on the CPU through host copies, flagged
 * factor elements are recomputed on the CPU; last_backends says so; a
 * factor that fails leaves its element NaN with the CPU's message. */
static void test_rows_statistics(void **state) {
  (void)state;
  enum { K = 2 * RW_NB * SM_N + 2 * (RW_NB * SM_P * SM_P + RW_NB) };
  double s[RW_NB * SM_P * SM_P], want[K], got[K];
  assert_int_equal(rw_count(), K);
  unsigned ran[4];
  gstat_status st[4];
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  tu_rng rng = tu_rng_new();
  for (int64_t e = 0; e < RW_NB * SM_N * SM_P; e++)
    rows_data[e] = 50.0 + (double)(e % SM_P) + tu_normal(&rng) * (1.0 + 0.1 * (double)(e % 7));
  rows_matrices(s, false);
  rows_stats(cpu, false, s, want, ran, st);
  for (int k = 0; k < 4; k++) assert_int_equal(ran[k], GSTAT_RAN_CPU);
  const struct {
    const char *fault;
    unsigned ran; /* of the Mahalanobis calls */
  } cases[] = {
      {"", GSTAT_RAN_CUDA}, {"oom", GSTAT_RAN_CPU}, {"retry", GSTAT_RAN_CUDA | GSTAT_RAN_CPU}};
  for (int f = 0; f < 3; f++) {
    setenv("GSTAT_FAKE_FAULT", cases[f].fault, 1);
    rows_stats(gpu, true, s, got, ran, st);
    for (int k = 0; k < 4; k++) assert_int_equal(st[k], GSTAT_OK);
    sm_close(cases[f].fault, got, want, K, 1e-12); /* the host factors by its own potrf */
    assert_int_equal(ran[0], cases[f].ran);
    assert_int_equal(ran[1], f == 1 ? GSTAT_RAN_CPU : GSTAT_RAN_CUDA); /* no factor */
    assert_int_equal(ran[2], f == 1 ? GSTAT_RAN_CPU : GSTAT_RAN_CUDA);
  }
  unsetenv("GSTAT_FAKE_FAULT");
  /* arguments in different memories: S and d2 copied to and from X's */
  for (int mix = 1; mix < 8; mix++)
    for (int inv = 0; inv < 2; inv++) {
      sm_arg X = sm_arg_new(sm_fake_memory(), mix & 1, GSTAT_F64, RW_NB, SM_N, SM_P, rows_data);
      sm_arg S = sm_arg_new(sm_fake_memory(), mix & 2, GSTAT_F64, RW_NB, SM_P, SM_P, s);
      sm_arg D = sm_arg_new(sm_fake_memory(), mix & 4, GSTAT_F64, RW_NB, SM_N, 1, NULL);
      assert_int_equal(gstat_mahalanobis(gpu, &X.m, NULL, &S.m, inv, &D.m), GSTAT_OK);
      double *d = sm_values(sm_fake_memory(), &D);
      sm_arg_free(sm_fake_memory(), &D);
      D = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_N, 1, NULL);
      sm_arg H = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_N, SM_P, rows_data);
      sm_arg HS = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_P, SM_P, s);
      assert_int_equal(gstat_mahalanobis(cpu, &H.m, NULL, &HS.m, inv, &D.m), GSTAT_OK);
      sm_close("mixed memories", d, D.host, RW_NB * SM_N, 1e-12);
      free(d);
      sm_arg_free(sm_fake_memory(), &X);
      sm_arg_free(sm_fake_memory(), &S);
      sm_arg_free(sm_fake_memory(), &D);
      sm_arg_free(sm_fake_memory(), &H);
      sm_arg_free(sm_fake_memory(), &HS);
    }
  /* element 1 not positive definite: the same NaN, values and message */
  rows_matrices(s, true);
  rows_stats(cpu, false, s, want, ran, st);
  assert_int_equal(st[0], GSTAT_ENOTPD);
  assert_true(isnan(want[SM_N]) && !isnan(want[0]) && !isnan(want[2 * SM_N]));
  sm_arg X = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, RW_NB, SM_N, SM_P, rows_data);
  sm_arg S = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, RW_NB, SM_P, SM_P, s);
  sm_arg D = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, RW_NB, SM_N, 1, NULL);
  assert_int_equal(gstat_mahalanobis(gpu, &X.m, NULL, &S.m, 0, &D.m), GSTAT_ENOTPD);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", gstat_ctx_last_error(gpu));
  assert_non_null(strstr(msg, "batch element 1 of S is not positive definite"));
  sm_arg H = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_N, SM_P, rows_data),
         HS = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_P, SM_P, s),
         HD = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, RW_NB, SM_N, 1, NULL);
  assert_int_equal(gstat_mahalanobis(cpu, &H.m, NULL, &HS.m, 0, &HD.m), GSTAT_ENOTPD);
  assert_string_equal(msg, gstat_ctx_last_error(cpu));
  sm_arg_free(sm_fake_memory(), &H);
  sm_arg_free(sm_fake_memory(), &HS);
  sm_arg_free(sm_fake_memory(), &HD);
  /* a NaN in S's lower triangle, in each form: named in S's terms */
  ((double *)S.dev)[2 * SM_P * SM_P + 4 * SM_P + 1] = NAN; /* element 2, (4, 1) */
  for (int inv = 0; inv < 2; inv++) {
    assert_int_equal(gstat_mahalanobis(gpu, &X.m, NULL, &S.m, inv, &D.m), GSTAT_ENOTFINITE);
    assert_string_equal(gstat_ctx_last_error(gpu),
                        "mahalanobis: batch element 2 of S has a non-finite value at (4, 1)");
  }
  sm_arg_free(sm_fake_memory(), &S); /* a NaN in the upper triangle: never read */
  rows_matrices(s, false);
  s[(2 * SM_P + 1) * SM_P + 4] = NAN;
  S = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, RW_NB, SM_P, SM_P, s);
  assert_int_equal(gstat_mahalanobis(gpu, &X.m, NULL, &S.m, 0, &D.m), GSTAT_OK);
  assert_int_equal(gstat_mahalanobis(gpu, &X.m, NULL, &S.m, 1, &D.m), GSTAT_OK);
  /* a NaN in a centre is named, read where X lies or copied from the host */
  double c[RW_NB * SM_P];
  for (int64_t e = 0; e < RW_NB * SM_P; e++) c[e] = 50.0;
  c[SM_P + 2] = NAN; /* element 1, (2, 0) of a column centre */
  for (int dev = 0; dev < 2; dev++) {
    sm_arg Z = sm_arg_new(sm_fake_memory(), dev, GSTAT_F64, RW_NB, SM_P, 1, c);
    for (int inv = 0; inv < 2; inv++) {
      assert_int_equal(gstat_mahalanobis(gpu, &X.m, &Z.m, &S.m, inv, &D.m), GSTAT_ENOTFINITE);
      assert_string_equal(
          gstat_ctx_last_error(gpu),
          "mahalanobis: batch element 1 of center has a non-finite value at (2, 0)");
    }
    sm_arg_free(sm_fake_memory(), &Z);
  }
  sm_arg_free(sm_fake_memory(), &X);
  sm_arg_free(sm_fake_memory(), &S);
  sm_arg_free(sm_fake_memory(), &D);
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
}

/* gstat_knn_with_options under a CUDA context: BRUTE runs where AUTO would
 * (the module), TREE and NNDESCENT on the CPU; the exact ones all give
 * AUTO's lists. */
static void test_knn_algorithms(void **state) {
  (void)state;
  const int64_t n = 600, p = 6, k = 5;
  double *x = malloc(sizeof(double) * (size_t)(n * p));
  tu_rng rng = tu_rng_new();
  for (int64_t e = 0; e < n * p; e++) x[e] = tu_normal(&rng);
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, n, p);
  int64_t *want = malloc(sizeof(int64_t) * (size_t)(n * k)),
          *got = malloc(sizeof(int64_t) * (size_t)(n * k));
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CUDA);
  assert_non_null(ctx);
  gstat_knn_options o;
  gstat_knn_options_init(&o);
  assert_int_equal(gstat_knn_with_options(ctx, &X, k, 1, &o, want, NULL), GSTAT_OK);
  assert_int_equal(gstat_ctx_last_backends(ctx), GSTAT_RAN_CUDA);
  const struct {
    gstat_knn_algorithm alg;
    unsigned ran;
  } cases[] = {{GSTAT_KNN_BRUTE, GSTAT_RAN_CUDA},
               {GSTAT_KNN_TREE, GSTAT_RAN_CPU},
               {GSTAT_KNN_NNDESCENT, GSTAT_RAN_CPU}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    o.algorithm = cases[c].alg;
    assert_int_equal(gstat_knn_with_options(ctx, &X, k, 1, &o, got, NULL), GSTAT_OK);
    assert_int_equal(gstat_ctx_last_backends(ctx), cases[c].ran);
    if (cases[c].alg != GSTAT_KNN_NNDESCENT)
      assert_memory_equal(got, want, sizeof(int64_t) * (size_t)(n * k));
  }
  gstat_ctx_destroy(ctx);
  free(want);
  free(got);
  free(x);
}

/* Variant v of the missing-value covariances (stats_matrix.h) of element
 * data x (with its NaN, and an Inf when asked) on ctx: C and the mean into
 * out (SM_NB x (p^2 + p)), the status and what ran. */
static gstat_status miss_case(gstat_ctx *ctx, bool device, int v, const double *xm, double *fw,
                              double *aw, double *out, unsigned *ran) {
  sm_arg X = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, SM_NB, SM_N, SM_P, xm);
  sm_arg C = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, SM_NB, SM_P, SM_P, NULL);
  sm_arg M = sm_arg_new(sm_fake_memory(), device, GSTAT_F64, SM_NB, SM_P, 1, NULL);
  gstat_cov_options o;
  sm_miss_options(v, &o, fw, aw);
  gstat_status st = gstat_covariance(ctx, &X.m, &o, &C.m, &M.m);
  *ran = gstat_ctx_last_backends(ctx);
  double *c = sm_values(sm_fake_memory(), &C), *m = sm_values(sm_fake_memory(), &M);
  memcpy(out, c, sizeof(double) * SM_NB * SM_P * SM_P);
  memcpy(out + SM_NB * SM_P * SM_P, m, sizeof(double) * SM_NB * SM_P);
  free(c);
  free(m);
  sm_arg_free(sm_fake_memory(), &X);
  sm_arg_free(sm_fake_memory(), &C);
  sm_arg_free(sm_fake_memory(), &M);
  return st;
}

/* The accumulator's "device" rows with weights and missing = COMPLETE: the
 * scheduler's NaN-row scan and weighted co-moment, the host's numbers. */
static void test_accum_weighted_on_device(void **state) {
  (void)state;
  double *x = malloc(sizeof(double) * SM_NB * SM_N * SM_P);
  double *xm = malloc(sizeof(double) * SM_NB * SM_N * SM_P), fw[SM_N], aw[SM_N];
  double ch[SM_P * SM_P], cd[SM_P * SM_P];
  sm_data(x);
  sm_miss_data(x, xm, fw, aw);
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  for (int c = 0; c < 3; c++) { /* weights; COMPLETE with weights; COMPLETE */
    gstat_missing miss = c == 0 ? GSTAT_MISSING_EVERYTHING : GSTAT_MISSING_COMPLETE;
    const double *w = c == 2 ? NULL : fw;
    sm_arg H = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, 1, SM_N, SM_P, c ? xm : x),
           D = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, 1, SM_N, SM_P, c ? xm : x);
    gstat_cov_accum *ah = NULL, *ad = NULL;
    assert_int_equal(gstat_cov_accum_create(cpu, SM_P, miss, &ah), GSTAT_OK);
    assert_int_equal(gstat_cov_accum_create(gpu, SM_P, miss, &ad), GSTAT_OK);
    sm_check(cpu, gstat_cov_accum_add(cpu, ah, &H.m, w));
    sm_check(gpu, gstat_cov_accum_add(gpu, ad, &D.m, w));
    assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
    assert_int_equal(gstat_cov_accum_rows(ad), gstat_cov_accum_rows(ah));
    gstat_matrix Ch = gstat_matrix_row_major(ch, GSTAT_F64, 1, SM_P, SM_P),
                 Cd = gstat_matrix_row_major(cd, GSTAT_F64, 1, SM_P, SM_P);
    sm_check(cpu, gstat_cov_accum_covariance(cpu, ah, 1, 0, &Ch, NULL));
    sm_check(gpu, gstat_cov_accum_covariance(gpu, ad, 1, 0, &Cd, NULL));
    sm_close("accumulator on device rows", cd, ch, SM_P * SM_P, 1e-12);
    gstat_cov_accum_destroy(ah);
    gstat_cov_accum_destroy(ad);
    sm_arg_free(sm_fake_memory(), &H);
    sm_arg_free(sm_fake_memory(), &D);
  }
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
  free(x);
  free(xm);
}

/* Weighted covariance and every missing-value mode of "device" data run on
 * the device's primitives (nan_rows, wcomoment, pairwise: last_backends is
 * CUDA alone, under a CPU context too) and give the CPU's values on host
 * data; a device out of memory reruns them on the CPU through host copies;
 * an Inf (not refused without finiteness checks) sends the pairwise step to
 * the CPU; with the checks it is refused by position, nothing written. */
static void test_cov_missing_on_device(void **state) {
  (void)state;
  enum { K = SM_NB * (SM_P * SM_P + SM_P) };
  double *x = malloc(sizeof(double) * SM_NB * SM_N * SM_P);
  double *xm = malloc(sizeof(double) * SM_NB * SM_N * SM_P), fw[SM_N], aw[SM_N];
  double want[K], got[K];
  unsigned ran;
  sm_data(x);
  sm_miss_data(x, xm, fw, aw);
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.check_finite = 0;
  gstat_ctx *loose;
  assert_int_equal(gstat_ctx_create(&loose, &co), GSTAT_OK);
  for (int v = 0; v < SM_MISS_VARIANTS; v++) {
    assert_int_equal(miss_case(cpu, false, v, xm, fw, aw, want, &ran), GSTAT_OK);
    assert_int_equal(ran, GSTAT_RAN_CPU);
    char what[64];
    for (int f = 0; f < 3; f++) { /* CUDA context, CPU context, out of memory */
      setenv("GSTAT_FAKE_FAULT", f == 2 ? "oom" : "", 1);
      memset(got, 0, sizeof got);
      assert_int_equal(miss_case(f == 1 ? cpu : gpu, true, v, xm, fw, aw, got, &ran), GSTAT_OK);
      snprintf(what, sizeof what, "variant %d, case %d", v, f);
      sm_close(what, got, want, K, 1e-12);
      if (ran != (f == 2 ? GSTAT_RAN_CPU : GSTAT_RAN_CUDA))
        fail_msg("%s: last_backends %u", what, ran);
    }
    unsetenv("GSTAT_FAKE_FAULT");
  }
  /* a column constant on the rows where another is present (not on its
   * own): the pair's variance is exactly 0 on the CPU, so its correlation
   * NaN and covariance 0; the GEMM formulation must find the same */
  double *xc = malloc(sizeof(double) * SM_NB * SM_N * SM_P);
  memcpy(xc, xm, sizeof(double) * SM_NB * SM_N * SM_P);
  for (int64_t i = 0; i < SM_NB * SM_N; i++) {
    double *row = xc + i * SM_P;
    row[3] = i % 3 == 0 ? NAN : row[3];
    row[2] = i % 3 == 0 ? 100.0 + (double)i : 1e3 / 7; /* constant where column 3 is present */
  }
  for (int v = 4; v <= 5; v++) {
    assert_int_equal(miss_case(cpu, false, v, xc, fw, aw, want, &ran), GSTAT_OK);
    assert_int_equal(miss_case(gpu, true, v, xc, fw, aw, got, &ran), GSTAT_OK);
    assert_int_equal(ran, GSTAT_RAN_CUDA);
    sm_close("a column constant on a pair's rows", got, want, K, 1e-12);
    double c23 = got[2 * SM_P + 3]; /* element 0, entry (2, 3) */
    assert_true(v == 5 ? isnan(c23) : c23 == 0.0);
  }
  free(xc);
  /* an Inf in element 1: pairwise leaves it to the CPU (no check) ... */
  xm[(SM_N + 20) * SM_P + 4] = INFINITY;
  assert_int_equal(miss_case(loose, false, 4, xm, fw, aw, want, &ran), GSTAT_OK);
  assert_int_equal(miss_case(loose, true, 4, xm, fw, aw, got, &ran), GSTAT_OK);
  sm_close("pairwise with an Inf", got, want, K, 1e-12);
  assert_int_equal(ran, GSTAT_RAN_CUDA | GSTAT_RAN_CPU); /* nan_rows on the device */
  /* ... and with the checks every mode refuses it, naming it, C untouched */
  for (int v = 0; v < SM_MISS_VARIANTS; v++) {
    memset(got, 0, sizeof got);
    assert_int_equal(miss_case(gpu, true, v, xm, fw, aw, got, &ran), GSTAT_ENOTFINITE);
    assert_non_null(
        strstr(gstat_ctx_last_error(gpu), "batch element 1 of X has an infinite value at (20, 4)"));
    for (int k = 0; k < K; k++) assert_true(got[k] == 0.0);
  }
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(loose);
  free(x);
  free(xm);
}

/* gstat_eigh_async: device data through the module's eigh_async (values
 * and info as gstat_eigh's on the CPU), and its refusals: host data, no
 * info, an order the module does not take. */
static void test_eigh_async(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "", 1);
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  enum { NB = 5, N = 65 };
  tu_rng rng = tu_rng_new();
  double *a = malloc(sizeof(double) * NB * N * N), *v = malloc(sizeof(double) * NB * N * N);
  double *v2 = malloc(sizeof(double) * NB * N * N), w[NB * N], w2[NB * N];
  int32_t info[2 * NB];
  for (int64_t b = 0; b < NB; b++) tu_spd(&rng, N, 10, a + b * N * N);
  for (int64_t n = 0; n <= 64; n += 16) {
    gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, n, n);
    A.batch_stride = N * N; /* n x n corners of the N x N matrices */
    gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, n),
                 V = gstat_matrix_col_major(v, GSTAT_F64, NB, n, n);
    gstat_matrix W2 = gstat_vector_batch(w2, GSTAT_F64, NB, n),
                 V2 = gstat_matrix_col_major(v2, GSTAT_F64, NB, n, n);
    assert_int_equal(gstat_eigh(cpu, &A, GSTAT_LOWER, &W2, &V2, NULL), GSTAT_OK);
    /* host data: refused, naming why */
    assert_int_equal(gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, &V, info), GSTAT_EUNSUPPORTED);
    assert_non_null(strstr(gstat_ctx_last_error(gpu), "host memory"));
    A.location = W.location = V.location = GSTAT_CUDA;
    assert_int_equal(gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, &V, NULL), GSTAT_EINVAL);
    memset(info, 0x55, sizeof info);
    assert_int_equal(gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, &V, info), GSTAT_OK);
    assert_string_equal(gstat_ctx_last_backend_name(gpu), "cuda");
    for (int b = 0; b < 2 * NB; b++) assert_int_equal(info[b], 0);
    assert_memory_equal(w, w2, sizeof(double) * (size_t)(NB * n));
    assert_memory_equal(v, v2, sizeof(double) * (size_t)(NB * n * n));
  }
  gstat_matrix A = gstat_matrix_col_major(a, GSTAT_F64, NB, N, N);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, N);
  A.location = W.location = GSTAT_CUDA;
  assert_int_equal(gstat_eigh_async(gpu, &A, GSTAT_LOWER, &W, NULL, info), GSTAT_EUNSUPPORTED);
  assert_non_null(strstr(gstat_ctx_last_error(gpu), "order 65 > 64"));
  free(a);
  free(v);
  free(v2);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
}

/* gstat_eigh_backward on host data (the CPU's op) and through the module's
 * op: with gV = 0 the gradient is V diag(gw) V^T; with a skew V^T gV and
 * gw = 0 it is V (F o skew) V^T, F_ij = 1 / (2 (w_j - w_i)); with a
 * broadening b, F_ij = g / (2 (g^2 + b)), g = w_j - w_i (host); refusals: a
 * negative broadening, mixed dtypes. */
enum { BWD_NB = 3, BWD_N = 5 };

static void check_backward_terms(gstat_ctx *ctx, gstat_matrix *all[5], const double *w,
                                 const double *gw, const double *v, double *gv, const double *ga,
                                 double broadening) {
  enum { NB = BWD_NB, N = BWD_N };
  gstat_matrix *W = all[0], *GW = all[1], *V = all[2], *GV = all[3], *GA = all[4];
  memset(gv, 0, sizeof(double) * NB * N * N);
  assert_int_equal(gstat_eigh_backward(ctx, W, V, GW, GV, broadening, GA), GSTAT_OK);
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double want = 0;
        for (int k = 0; k < N; k++)
          want += v[b * N * N + k * N + i] * gw[b * N + k] * v[b * N * N + k * N + j];
        assert_true(fabs(ga[b * N * N + i * N + j] - want) <= 1e-12 * 10);
      }
  /* gV = V S with S = e_0 e_1^T: V^T gV - gV^T V = e_0 e_1^T - e_1 e_0^T */
  for (int b = 0; b < NB; b++)
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) gv[b * N * N + j * N + i] = j == 1 ? v[b * N * N + i] : 0.0;
  assert_int_equal(gstat_eigh_backward(ctx, W, V, NULL, GV, broadening, GA), GSTAT_OK);
  for (int b = 0; b < NB; b++) {
    const double g = w[b * N + 1] - w[b * N]; /* middle (0, 1) = f, (1, 0) = f too */
    const double f = broadening > 0 ? g / (2 * (g * g + broadening)) : 0.5 / g;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        const double *vb = v + b * N * N; /* column k at vb + k * N */
        double want = f * (vb[i] * vb[N + j] + vb[N + i] * vb[j]);
        assert_true(fabs(ga[b * N * N + i * N + j] - want) <= 1e-12 * (1 + fabs(f)));
      }
  }
}

static void test_eigh_backward(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "", 1);
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  enum { NB = BWD_NB, N = BWD_N };
  double w[NB * N], gw[NB * N], v[NB * N * N], gv[NB * N * N], ga[NB * N * N];
  tu_rng rng = tu_rng_new();
  double a[N * N];
  for (int b = 0; b < NB; b++) { /* V orthogonal: eigenvectors of an SPD matrix */
    tu_spd(&rng, N, 10, a);
    gstat_matrix A1 = gstat_matrix_col_major(a, GSTAT_F64, 1, N, N);
    gstat_matrix W1 = gstat_vector_batch(w + b * N, GSTAT_F64, 1, N),
                 V1 = gstat_matrix_col_major(v + b * N * N, GSTAT_F64, 1, N, N);
    gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU);
    assert_int_equal(gstat_eigh(cpu, &A1, GSTAT_LOWER, &W1, &V1, NULL), GSTAT_OK);
    gstat_ctx_destroy(cpu);
    for (int i = 0; i < N; i++) gw[b * N + i] = i + 1.0;
  }
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, NB, N),
               GW = gstat_vector_batch(gw, GSTAT_F64, NB, N),
               V = gstat_matrix_col_major(v, GSTAT_F64, NB, N, N),
               GV = gstat_matrix_col_major(gv, GSTAT_F64, NB, N, N),
               GA = gstat_matrix_row_major(ga, GSTAT_F64, NB, N, N);
  gstat_matrix *all[] = {&W, &GW, &V, &GV, &GA};
  /* host data, on a CUDA context as on a CPU one: the CPU computes it */
  check_backward_terms(gpu, all, w, gw, v, gv, ga, 0.0);
  assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CPU);
  check_backward_terms(gpu, all, w, gw, v, gv, ga, 0.25);
  gstat_matrix GV32 = gstat_matrix_col_major(gv, GSTAT_F32, NB, N, N);
  assert_int_equal(gstat_eigh_backward(gpu, &W, &V, &GW, &GV32, 0.0, &GA), GSTAT_EINVAL);
  for (int k = 0; k < 5; k++) all[k]->location = GSTAT_CUDA;
  assert_int_equal(gstat_eigh_backward(gpu, &W, &V, &GW, &GV, -1.0, &GA), GSTAT_EINVAL);
  check_backward_terms(gpu, all, w, gw, v, gv, ga, 0.0);
  assert_int_equal(gstat_ctx_last_backends(gpu), GSTAT_RAN_CUDA);
  gstat_ctx_destroy(gpu);
}

int main(void) {
  setenv("GSTAT_CUDA_MODULE", GSTAT_FAKE_MODULE_PATH, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_auto_picks_gpu_for_large_work),
      cmocka_unit_test(test_out_of_memory_reruns_on_cpu),
      cmocka_unit_test(test_flagged_elements_recomputed),
      cmocka_unit_test(test_flagged_in_place_recomputed_from_input),
      cmocka_unit_test(test_vouched_info_is_trusted),
      cmocka_unit_test(test_no_device),
      cmocka_unit_test(test_device_stats_sizes),
      cmocka_unit_test(test_statistics_matrix),
      cmocka_unit_test(test_statistics_faults),
      cmocka_unit_test(test_statistics_auto),
      cmocka_unit_test(test_host_batch_chunked_for_progress),
      cmocka_unit_test(test_not_pd_in_place_device_keeps_verdict),
      cmocka_unit_test(test_dense_steps_on_device),
      cmocka_unit_test(test_rows_statistics),
      cmocka_unit_test(test_knn_algorithms),
      cmocka_unit_test(test_cov_missing_on_device),
      cmocka_unit_test(test_eigh_async),
      cmocka_unit_test(test_eigh_backward),
      cmocka_unit_test(test_accum_weighted_on_device),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
