/*
 * Spectral clustering timings through the public API, on data written by
 * bench/spectral_vs_sklearn.py (raw little-endian arrays):
 *
 *   bench_spectral batch FILE COUNT N K REPS [f32|f64]
 *       FILE: COUNT x N x N adjacency matrices (float64, row-major);
 *       gstat_spectral_clustering_batch on the dense batch (in f32 when asked:
 *       the input is converted once, outside the timing).
 *   bench_spectral rbf FILE N P K GAMMA REPS
 *       FILE: N x P points (float64, row-major); RBF affinity (dense) +
 *       gstat_spectral_clustering, both timed.
 *
 * Prints "ms=<best of REPS> first_ms=<first call>" and writes the labels of
 * the last run to FILE.labels (int64). Threads: OMP_NUM_THREADS.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gstat/gstat.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static double *read_doubles(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  double *x = xmalloc(sizeof(double) * n);
  if (fread(x, sizeof(double), n, f) != n) {
    fprintf(stderr, "%s: short file\n", path);
    exit(1);
  }
  fclose(f);
  return x;
}

static void write_labels(const char *path, const int64_t *lab, size_t n) {
  char out[4096];
  snprintf(out, sizeof out, "%s.labels", path);
  FILE *f = fopen(out, "wb");
  if (!f || fwrite(lab, sizeof(int64_t), n, f) != n) {
    perror(out);
    exit(1);
  }
  fclose(f);
}

static void check(gstat_ctx *ctx, gstat_status st) {
  if (st != GSTAT_OK) {
    fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(ctx));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: bench_spectral batch FILE COUNT N K REPS [f32|f64]\n"
            "       bench_spectral rbf FILE N P K GAMMA REPS\n");
    return 2;
  }
  gstat_ctx *ctx = NULL;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = GSTAT_BACKEND_CPU;
  if (gstat_ctx_create(&ctx, &co) != GSTAT_OK) return 1;
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  double best = INFINITY, first = 0;
  if (!strcmp(argv[1], "batch") && argc >= 7) {
    const char *path = argv[2];
    int64_t count = atoll(argv[3]), n = atoll(argv[4]), reps = atoll(argv[6]);
    int f32 = argc > 7 && !strcmp(argv[7], "f32");
    o.n_clusters = atoll(argv[5]);
    size_t cells = (size_t)(count * n * n);
    double *A = read_doubles(path, cells);
    void *data = A;
    if (f32) {
      float *Af = xmalloc(sizeof(float) * cells);
      for (size_t i = 0; i < cells; i++) Af[i] = (float)A[i];
      data = Af;
    }
    gstat_graph_batch B;
    memset(&B, 0, sizeof B);
    B.format = GSTAT_GRAPH_DENSE;
    B.count = count;
    B.adjacency = gstat_matrix_row_major(data, f32 ? GSTAT_F32 : GSTAT_F64, count, n, n);
    int64_t *lab = xmalloc(sizeof(int64_t) * (size_t)(count * n));
    for (int64_t r = 0; r < reps; r++) {
      double t = now_ms();
      check(ctx, gstat_spectral_clustering_batch(ctx, &B, NULL, &o, lab, NULL));
      t = now_ms() - t;
      if (r == 0) first = t;
      if (t < best) best = t;
    }
    write_labels(path, lab, (size_t)(count * n));
    if (data != A) free(data);
    free(A);
    free(lab);
  } else if (!strcmp(argv[1], "rbf") && argc >= 8) {
    const char *path = argv[2];
    int64_t n = atoll(argv[3]), p = atoll(argv[4]), reps = atoll(argv[7]);
    o.n_clusters = atoll(argv[5]);
    double *X = read_doubles(path, (size_t)(n * p));
    double *A = xmalloc(sizeof(double) * (size_t)(n * n));
    int64_t *lab = xmalloc(sizeof(int64_t) * (size_t)n);
    gstat_affinity_options ao;
    gstat_affinity_options_init(&ao);
    ao.kind = GSTAT_AFFINITY_RBF;
    ao.gamma = atof(argv[6]);
    gstat_matrix Xm = gstat_matrix_row_major(X, GSTAT_F64, 1, n, p);
    gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, n, n);
    gstat_graph G = gstat_graph_dense(&Am);
    for (int64_t r = 0; r < reps; r++) {
      double t = now_ms();
      check(ctx, gstat_affinity_dense(ctx, &Xm, &ao, &Am));
      check(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL));
      t = now_ms() - t;
      if (r == 0) first = t;
      if (t < best) best = t;
    }
    write_labels(path, lab, (size_t)n);
    free(X);
    free(A);
    free(lab);
  } else {
    fprintf(stderr, "bench_spectral: bad arguments\n");
    return 2;
  }
  printf("ms=%.3f first_ms=%.3f\n", best, first);
  gstat_ctx_destroy(ctx);
  return 0;
}
