/*
 * eigh with vectors on the GPU over issue 30's hard families against random
 * dense matrices of the same shape (4 x 1024, 640 x 512, 60 x 1024,
 * 64 x 512; float32 and float64), device data, median of `reps` calls after
 * a warm-up call (allocations, graph captures). Each batch cycles through a
 * few distinct elements of its family (a mixed batch: two rounds of every
 * family of tests/families.h, each its own element): the solver's work per
 * element does not depend on the copies, and generating hundreds of rotated
 * matrices on the host would take longer than the run.
 *
 *   bench_eigh_families [f32|f64|both] [reps]
 *
 * Prints a markdown table: ms, the ratio to the random row of the shape
 * (issue 30's target: <= 1.25) and the path (own: the lockstep solver;
 * clustered: its cluster step served some matrices, with
 * GSTAT_CUDA_CLUSTER_STEP=1; handed-back: some matrices went to cuSOLVER;
 * cusolver: not the lockstep solver at all). scripts/gpu-stages-eigh bench
 * runs it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "families.h"
#include "gpu_ctx.h"

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

enum { DISTINCT = 8 };

/* The families timed (names of tests/families.c), then the mixed batch. */
static const char *const timed[] = {"random",         "dense-clustered",     "repeated",
                                    "rank-deficient", "near-rank-deficient", "dense-geometric",
                                    "graded",         "diag-clustered",      "identity"};
enum { NTIMED = sizeof timed / sizeof timed[0] };

static int family_index(const char *name) {
  for (int f = 0; f < tf_nfamilies; f++)
    if (strcmp(tf_families[f].name, name) == 0) return f;
  fprintf(stderr, "no family %s\n", name);
  exit(1);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_doubles(const void *x, const void *y) {
  double p = *(const double *)x, q = *(const double *)y;
  return (p > q) - (p < q);
}

/* Host batch (dtype dt, column-major) of nb elements of family f (-1: mixed). */
static void *host_batch(gstat_dtype dt, int f, int64_t n, int64_t nb) {
  const size_t es = dt == GSTAT_F64 ? 8 : 4, nn = (size_t)(n * n);
  const int64_t distinct = f < 0 ? 2 * tf_nfamilies : DISTINCT;
  char *h = malloc(es * nn * (size_t)nb);
  double *a = malloc(sizeof(double) * nn), *d = malloc(sizeof(double) * (size_t)n);
  tu_rng r = tu_rng_new();
  for (int64_t b = 0; b < distinct && b < nb; b++) {
    int fam = f >= 0 ? f : (int)((b * 7 + b / tf_nfamilies) % tf_nfamilies);
    tf_generate(&r, &tf_families[fam], n, dt, a, d);
    for (size_t k = 0; k < nn; k++)
      if (dt == GSTAT_F64)
        ((double *)h)[(size_t)b * nn + k] = a[k];
      else
        ((float *)h)[(size_t)b * nn + k] = (float)a[k];
  }
  for (int64_t b = distinct; b < nb; b++)
    memcpy(h + (size_t)b * nn * es, h + (size_t)(b % distinct) * nn * es, nn * es);
  free(a);
  free(d);
  return h;
}

static gstat_matrix device_matrix(gstat_dtype dt, int64_t nb, int64_t rows, int64_t cols,
                                  void *data) {
  gstat_matrix m = gstat_matrix_col_major(data, dt, nb, rows, cols);
  m.location = GSTAT_CUDA;
  m.device = 0;
  return m;
}

/* Median ms of reps eigh calls (after one warm-up); *path what the last took. */
static double time_case(gstat_ctx *ctx, gstat_dtype dt, int f, int64_t n, int64_t nb, int reps,
                        const char **path) {
  const size_t es = dt == GSTAT_F64 ? 8 : 4, bytes = es * (size_t)(n * n * nb);
  void *h = host_batch(dt, f, n, nb), *da, *dv, *dw;
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&dv, bytes));
  CK(cudaMalloc(&dw, es * (size_t)(n * nb)));
  CK(cudaMemcpy(da, h, bytes, cudaMemcpyHostToDevice));
  free(h);
  gstat_matrix A = device_matrix(dt, nb, n, n, da), V = device_matrix(dt, nb, n, n, dv),
               W = device_matrix(dt, nb, n, 1, dw);
  double *ms = malloc(sizeof(double) * (size_t)(reps + 1));
  gstat_device_stats before, after;
  for (int k = -1; k < reps; k++) {
    gstat_ctx_device_stats(ctx, &before, sizeof before);
    CK(cudaDeviceSynchronize());
    double t0 = now_ms();
    if (gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, NULL) != GSTAT_OK) {
      fprintf(stderr, "eigh failed: %s\n", gstat_ctx_last_error(ctx));
      exit(1);
    }
    CK(cudaDeviceSynchronize());
    if (k >= 0) ms[k] = now_ms() - t0;
  }
  gstat_ctx_device_stats(ctx, &after, sizeof after);
  *path = after.own_tridiag_chunks == before.own_tridiag_chunks          ? "cusolver"
          : after.own_tridiag_degenerate > before.own_tridiag_degenerate ? "own/handed-back"
          : after.own_tridiag_clustered > before.own_tridiag_clustered   ? "own/clustered"
                                                                         : "own";
  qsort(ms, (size_t)reps, sizeof(double), compare_doubles);
  double med = ms[reps / 2];
  free(ms);
  CK(cudaFree(da));
  CK(cudaFree(dv));
  CK(cudaFree(dw));
  return med;
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "both";
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (reps < 1) reps = 1;
  static const int64_t shapes[][2] = {{4, 1024}, {640, 512}, {60, 1024}, {64, 512}};
  gstat_ctx *ctx = bench_gpu_ctx();
  printf("| dtype | batch x n | family | ms | / random | path |\n|---|---|---|---:|---:|---|\n");
  for (int t = 0; t < 2; t++) {
    gstat_dtype dt = t ? GSTAT_F64 : GSTAT_F32;
    const char *name = t ? "f64" : "f32";
    if (strcmp(which, "both") != 0 && strcmp(which, name) != 0) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t nb = shapes[s][0], n = shapes[s][1];
      double random_ms = 0;
      for (int k = 0; k <= NTIMED; k++) {
        const char *path = "";
        int f = k < NTIMED ? family_index(timed[k]) : -1;
        double ms = time_case(ctx, dt, f, n, nb, reps, &path);
        if (k == 0) random_ms = ms;
        printf("| %s | %lldx%lld | %s | %.1f | %.2f | %s |\n", name, (long long)nb, (long long)n,
               k < NTIMED ? timed[k] : "mixed", ms, ms / random_ms, path);
        fflush(stdout);
      }
    }
  }
  gstat_ctx_destroy(ctx);
  return 0;
}
