/*
 * kNN (gstat_knn, k = 10) of float32 blobs (10 clusters, unit spread,
 * centres uniform in [-10, 10]^p) on the GPU, from device memory and from
 * host memory, against the CPU's search (k-d tree up to 16 dimensions,
 * GEMM above, all cores) in the same run; the rows whose lists differ from
 * the CPU's are counted (the searches are exact: expect 0).
 *
 *   bench_knn_gpu [--cpu-all] [N P ...]
 *       default rows: 100000 x 10, 100000 x 100, 1000000 x 10, 1000000 x 100;
 *       the CPU is skipped for 1000000 x 100 (minutes) unless --cpu-all.
 *
 * Prints one table row per size: milliseconds of one call each (after a
 * small warm-up call that starts the backend).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <gstat/gstat.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_ctx.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* xorshift normals (Box-Muller): reproducible blobs without a library. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return ((double)(rng_state >> 11) + 0.5) * 0x1p-53;
}
static double normal(void) {
  return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static float *blobs(int64_t n, int64_t p) {
  double centres[10][100];
  float *x = malloc(sizeof(float) * (size_t)(n * p));
  if (!x || p > 100) {
    fprintf(stderr, "cannot make %lld x %lld points\n", (long long)n, (long long)p);
    exit(1);
  }
  for (int c = 0; c < 10; c++)
    for (int64_t a = 0; a < p; a++) centres[c][a] = 20 * uniform() - 10;
  for (int64_t i = 0; i < n; i++) {
    int c = (int)(uniform() * 10);
    for (int64_t a = 0; a < p; a++) x[i * p + a] = (float)(centres[c][a] + normal());
  }
  return x;
}

/* One gstat_knn call; its milliseconds, or -1 after printing the error. */
static double timed_knn(gstat_ctx *ctx, const gstat_matrix *X, int64_t k, int64_t *idx,
                        double *dist) {
  double t0 = now_ms();
  gstat_status st = gstat_knn(ctx, X, k, 0, idx, dist);
  double t = now_ms() - t0;
  if (st != GSTAT_OK) {
    fprintf(stderr, "knn: %s\n", gstat_ctx_last_error(ctx));
    return -1;
  }
  return t;
}

static void row(gstat_ctx *gpu, gstat_ctx *cpu, int64_t n, int64_t p, bool run_cpu) {
  const int64_t k = 10;
  float *x = blobs(n, p);
  size_t bytes = sizeof(float) * (size_t)(n * p), cells = (size_t)(n * k);
  int64_t *ig = malloc(sizeof(int64_t) * cells), *ic = malloc(sizeof(int64_t) * cells);
  double *dg = malloc(sizeof(double) * cells), *dc = malloc(sizeof(double) * cells);
  void *dx = NULL;
  if (!ig || !ic || !dg || !dc || cudaMalloc(&dx, bytes) != cudaSuccess ||
      cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "out of memory at %lld x %lld\n", (long long)n, (long long)p);
    exit(1);
  }
  gstat_matrix H = gstat_matrix_row_major(x, GSTAT_F32, 1, n, p), D = H;
  D.data = dx;
  D.location = GSTAT_CUDA;
  double t_host = timed_knn(gpu, &H, k, ig, dg);
  double t_dev = timed_knn(gpu, &D, k, ig, dg);
  double t_cpu = run_cpu ? timed_knn(cpu, &H, k, ic, dc) : -1;
  int64_t differ = 0;
  for (int64_t i = 0; run_cpu && i < n; i++)
    differ += memcmp(ig + i * k, ic + i * k, sizeof(int64_t) * (size_t)k) != 0;
  if (run_cpu)
    printf("| %lld | %lld | %.1f | %.1f | %.1f | %.1f | %lld |\n", (long long)n, (long long)p,
           t_dev, t_host, t_cpu, t_cpu / t_dev, (long long)differ);
  else
    printf("| %lld | %lld | %.1f | %.1f | (skipped) | | |\n", (long long)n, (long long)p, t_dev,
           t_host);
  fflush(stdout);
  cudaFree(dx);
  free(x);
  free(ig);
  free(ic);
  free(dg);
  free(dc);
}

int main(int argc, char **argv) {
  bool cpu_all = argc > 1 && !strcmp(argv[1], "--cpu-all");
  int first = cpu_all ? 2 : 1;
  gstat_ctx *gpu = bench_gpu_ctx(), *cpu = NULL;
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  o.backend = GSTAT_BACKEND_CPU;
  if (gstat_ctx_create(&cpu, &o) != GSTAT_OK) return 1;
  { /* warm-up: the CUDA state, cuBLAS, the kernels' first launches */
    float *x = blobs(2000, 10);
    int64_t idx[2000 * 10];
    double dist[2000 * 10];
    gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F32, 1, 2000, 10);
    if (timed_knn(gpu, &X, 10, idx, dist) < 0) return 1;
    free(x);
  }
  printf(
      "| n | p | GPU, device data ms | GPU, host data ms | CPU ms | CPU / GPU device | rows "
      "differing |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  if (argc - first >= 2) {
    for (int a = first; a + 1 < argc; a += 2)
      row(gpu, cpu, atoll(argv[a]), atoll(argv[a + 1]), true);
  } else {
    const int64_t sizes[4][2] = {{100000, 10}, {100000, 100}, {1000000, 10}, {1000000, 100}};
    for (int s = 0; s < 4; s++) row(gpu, cpu, sizes[s][0], sizes[s][1], cpu_all || s < 3);
  }
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
  return 0;
}
