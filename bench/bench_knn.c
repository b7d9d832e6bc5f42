/*
 * kNN graphs through the public API (gstat_affinity_csr, kind KNN):
 *
 *   bench_knn [--n N] [--dim D] [--clusters C] [--knn K] [--f32] [--reps R]
 *             [--threads T] [--seed S] [--nndescent]
 *
 * N points (default 100000) in D dimensions (default 10): C Gaussian blobs
 * (default 10, unit variance, centers uniform in [-10, 10]^D, as
 * scikit-learn's make_blobs), or uniform in the unit cube with C = 0. The K
 * (default 10) nearest neighbours, the point itself included, symmetrized
 * (A + A^T) / 2; --nndescent searches approximately (GSTAT_KNN_NNDESCENT).
 * Prints one line of key=value, the best of R runs (ms).
 * bench/knn_vs_sklearn.py times scikit-learn on the same shapes.
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gstat/gstat.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t state = 88172645463325252ull;
static double uniform(void) { /* xorshift64* */
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return (double)((state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}
static double normal(void) {
  double u = uniform(), v = uniform();
  return sqrt(-2 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

int main(int argc, char **argv) {
  int64_t n = 100000, dim = 10, clusters = 10, k = 10, reps = 1, threads = 0;
  int f32 = 0, nndescent = 0;
  for (int a = 1; a < argc; a++) {
    const char *o = argv[a];
    if (!strcmp(o, "--f32") || !strcmp(o, "--nndescent")) {
      *(o[2] == 'f' ? &f32 : &nndescent) = 1;
      continue;
    }
    if (a + 1 >= argc) return fprintf(stderr, "%s needs a value\n", o), 2;
    long long v = atoll(argv[++a]);
    if (!strcmp(o, "--n"))
      n = v;
    else if (!strcmp(o, "--dim"))
      dim = v;
    else if (!strcmp(o, "--clusters"))
      clusters = v;
    else if (!strcmp(o, "--knn"))
      k = v;
    else if (!strcmp(o, "--reps"))
      reps = v;
    else if (!strcmp(o, "--threads"))
      threads = v;
    else if (!strcmp(o, "--seed"))
      state = (uint64_t)v * 2654435761u + 1;
    else
      return fprintf(stderr, "unknown option %s\n", o), 2;
  }
  double *x = malloc(sizeof(double) * (size_t)(n * dim));
  double *centers = malloc(sizeof(double) * (size_t)((clusters > 0 ? clusters : 1) * dim));
  for (int64_t e = 0; e < (clusters > 0 ? clusters : 1) * dim; e++)
    centers[e] = -10 + 20 * uniform();
  for (int64_t i = 0; i < n; i++) {
    int64_t c = clusters > 0 ? (int64_t)(uniform() * (double)clusters) : 0;
    for (int64_t d = 0; d < dim; d++)
      x[i * dim + d] = clusters > 0 ? centers[c * dim + d] + normal() : uniform();
  }
  float *xf = NULL;
  if (f32) {
    xf = malloc(sizeof(float) * (size_t)(n * dim));
    for (int64_t e = 0; e < n * dim; e++) xf[e] = (float)x[e];
  }
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = (int)threads;
  co.backend = GSTAT_BACKEND_CPU;
  gstat_ctx *ctx = NULL;
  if (gstat_ctx_create(&ctx, &co) != GSTAT_OK) return fprintf(stderr, "no context\n"), 1;
  gstat_matrix X = f32 ? gstat_matrix_row_major(xf, GSTAT_F32, 1, n, dim)
                       : gstat_matrix_row_major(x, GSTAT_F64, 1, n, dim);
  gstat_affinity_options o;
  gstat_affinity_options_init(&o);
  o.kind = GSTAT_AFFINITY_KNN;
  o.n_neighbors = k;
  if (nndescent) o.knn.algorithm = GSTAT_KNN_NNDESCENT;
  double best = INFINITY;
  int64_t nnz = 0;
  for (int64_t r = 0; r < reps; r++) {
    gstat_csr *g = NULL;
    double t0 = now_ms();
    gstat_status st = gstat_affinity_csr(ctx, &X, &o, &g);
    double t = now_ms() - t0;
    if (st != GSTAT_OK) return fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx)), 1;
    best = t < best ? t : best;
    nnz = g->nnz;
    gstat_csr_free(g);
  }
  printf(
      "n=%lld dim=%lld clusters=%lld knn=%lld dtype=%s threads=%d search=%s knn_graph_ms=%.1f "
      "nnz=%lld\n",
      (long long)n, (long long)dim, (long long)clusters, (long long)k, f32 ? "float32" : "float64",
      (int)threads, nndescent ? "nndescent" : "exact", best, (long long)nnz);
  gstat_ctx_destroy(ctx);
  free(x);
  free(xf);
  free(centers);
  return 0;
}
