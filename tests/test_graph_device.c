/*
 * Graphs and spectral clustering on device data through the scheduler, run
 * on any machine against tests/fake_module.c (its "device memory" is host
 * memory marked GSTAT_CUDA and its primitives run the CPU's code): every
 * result equals the same call's on host data (graph_device.h).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
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
#include "graph_device.h"

static void test_laplacian(void **state) {
  (void)state;
  gd_laplacian(sm_fake_memory(), 0);
}

/* The device's Laplacian out of memory: the CPU reruns it on host copies. */
static void test_laplacian_oom(void **state) {
  (void)state;
  setenv("GSTAT_FAKE_FAULT", "oom", 1);
  gstat_ctx *ctx = gd_ctx();
  tu_rng rng = tu_rng_new();
  const int64_t n = GD_N;
  double a[GD_N * GD_N];
  gd_graph(&rng, n, GD_BLOCKS, a);
  sm_arg Ah = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, 1, n, n, a),
         Ad = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, 1, n, n, a);
  sm_arg Lh = sm_arg_new(sm_fake_memory(), false, GSTAT_F64, 1, n, n, NULL),
         Ld = sm_arg_new(sm_fake_memory(), true, GSTAT_F64, 1, n, n, NULL);
  gstat_graph Gh = gstat_graph_dense(&Ah.m), Gd = gstat_graph_dense(&Ad.m);
  sm_check(ctx, gstat_laplacian(ctx, &Gh, GSTAT_LAPLACIAN_SYMMETRIC, &Lh.m, NULL));
  sm_check(ctx, gstat_laplacian(ctx, &Gd, GSTAT_LAPLACIAN_SYMMETRIC, &Ld.m, NULL));
  assert_int_equal(gstat_ctx_last_backends(ctx), GSTAT_RAN_CPU);
  gd_same(sm_fake_memory(), "laplacian after oom", &Ld, &Lh, 0);
  unsetenv("GSTAT_FAKE_FAULT");
  sm_arg_free(sm_fake_memory(), &Ah);
  sm_arg_free(sm_fake_memory(), &Ad);
  sm_arg_free(sm_fake_memory(), &Lh);
  sm_arg_free(sm_fake_memory(), &Ld);
  gstat_ctx_destroy(ctx);
}

static void test_csr_op_components(void **state) {
  (void)state;
  gd_csr_op_components(sm_fake_memory());
}

/* Batch spectral clustering of "device" graphs: the engine's steps on the
 * fake module, its faults (flagged eigh elements, out of memory). */
static void test_spectral_batch(void **state) {
  (void)state;
  gd_spectral_batch(sm_fake_memory(), "GSTAT_FAKE_FAULT", "retry", "oom");
}

/* One large CSR graph on a CUDA context: the Laplacian planned on the fake
 * module, the solver's steps there; a failing product reruns on the host. */
static void test_spectral_sparse(void **state) {
  (void)state;
  gd_spectral_sparse("GSTAT_FAKE_FAULT", "sparse");
}

/* One large graph's k-means on a CUDA context: the fake module's (the CPU's code). */
static void test_kmeans_large(void **state) {
  (void)state;
  gd_kmeans_large();
}

static void test_affinity(void **state) {
  (void)state;
  gd_affinity(sm_fake_memory(), 0);
}

static void test_spectral(void **state) {
  (void)state;
  gd_spectral(sm_fake_memory(), 0, GSTAT_BACKEND_AUTO); /* small: the eigh on a host copy */
  gd_spectral(sm_fake_memory(), 0, GSTAT_BACKEND_CUDA); /* Laplacian and eigh "on the device" */
}

int main(void) {
  setenv("GSTAT_CUDA_MODULE", GSTAT_FAKE_MODULE_PATH, 1);
  (void)sm_run_matrix; /* stats_matrix.h's runner: test_fallback.c runs it */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_laplacian),         cmocka_unit_test(test_laplacian_oom),
      cmocka_unit_test(test_csr_op_components), cmocka_unit_test(test_affinity),
      cmocka_unit_test(test_spectral),          cmocka_unit_test(test_spectral_batch),
      cmocka_unit_test(test_spectral_sparse),   cmocka_unit_test(test_kmeans_large),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
