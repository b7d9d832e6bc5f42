/*
 * Batch spectral clustering of graphs already in GPU memory, end to end
 * (gstat_spectral_clustering_batch on a dense batch in device memory: the
 * call returns labels and eigenvalues on the host, so it is synchronous),
 * against the host engine on the same graphs in the same run.
 *
 *   bench_spectral_gpu FILE COUNT N K REPS [f32|f64]
 *       FILE: COUNT x N x N symmetric adjacencies (float64, raw) and
 *       FILE.truth: COUNT x N int64 block labels (bench/gpu_spectral_vs_torch.py
 *       writes both).
 *
 * Prints "gpu_ms=<best of REPS after a warm-up> gpu_first_ms=... cpu_ms=<one
 * host-engine call> same=<graphs labelled identically> ari_gpu=... ari_cpu=..."
 * (mean adjusted Rand index against the truth).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <gstat/gstat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static void *read_all(const char *path, size_t bytes) {
  FILE *f = fopen(path, "rb");
  void *p = malloc(bytes ? bytes : 1);
  if (!f || !p || fread(p, 1, bytes, f) != bytes) {
    fprintf(stderr, "%s: cannot read %zu bytes\n", path, bytes);
    exit(1);
  }
  fclose(f);
  return p;
}

static void check(gstat_ctx *ctx, gstat_status st) {
  if (st != GSTAT_OK) {
    fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(ctx));
    exit(1);
  }
}

/* Adjusted Rand index of two labelings of n nodes with labels in [0, 16). */
static double ari(const int64_t *a, const int64_t *b, int64_t n) {
  enum { K = 16 };
  double t[K][K] = {{0}}, ra[K] = {0}, rb[K] = {0};
  for (int64_t i = 0; i < n; i++) {
    if (a[i] < 0 || a[i] >= K || b[i] < 0 || b[i] >= K) return 0;
    t[a[i]][b[i]] += 1, ra[a[i]] += 1, rb[b[i]] += 1;
  }
  double sij = 0, sa = 0, sb = 0, pairs = (double)n * (double)(n - 1) / 2;
  for (int i = 0; i < K; i++) {
    sa += ra[i] * (ra[i] - 1) / 2;
    sb += rb[i] * (rb[i] - 1) / 2;
    for (int j = 0; j < K; j++) sij += t[i][j] * (t[i][j] - 1) / 2;
  }
  double expect = sa * sb / pairs, top = 0.5 * (sa + sb);
  return top == expect ? 1.0 : (sij - expect) / (top - expect);
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s FILE COUNT N K REPS [f32|f64]\n", argv[0]);
    return 2;
  }
  const char *path = argv[1];
  int64_t count = atoll(argv[2]), n = atoll(argv[3]), k = atoll(argv[4]), reps = atoll(argv[5]);
  int f32 = argc > 6 && !strcmp(argv[6], "f32");
  size_t cells = (size_t)(count * n * n);
  double *A = read_all(path, cells * sizeof(double));
  char tpath[4096];
  snprintf(tpath, sizeof tpath, "%s.truth", path);
  int64_t *truth = read_all(tpath, sizeof(int64_t) * (size_t)(count * n));
  size_t es = f32 ? sizeof(float) : sizeof(double);
  void *host = A;
  if (f32) {
    float *Af = malloc(cells * sizeof(float));
    for (size_t c = 0; c < cells; c++) Af[c] = (float)A[c];
    host = Af;
  }
  void *dev = NULL;
  if (cudaMalloc(&dev, cells * es) != cudaSuccess ||
      cudaMemcpy(dev, host, cells * es, cudaMemcpyHostToDevice) != cudaSuccess) {
    fprintf(stderr, "cannot copy the graphs to the GPU\n");
    return 1;
  }
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = GSTAT_BACKEND_CUDA;
  gstat_ctx *gpu, *cpu;
  if (gstat_ctx_create(&gpu, &co) != GSTAT_OK) return 1;
  co.backend = GSTAT_BACKEND_CPU;
  if (gstat_ctx_create(&cpu, &co) != GSTAT_OK) return 1;
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = k;
  gstat_graph_batch B;
  memset(&B, 0, sizeof B);
  B.format = GSTAT_GRAPH_DENSE;
  B.count = count;
  B.adjacency = gstat_matrix_col_major(dev, f32 ? GSTAT_F32 : GSTAT_F64, count, n, n);
  B.adjacency.location = GSTAT_CUDA;
  int64_t *lg = malloc(sizeof(int64_t) * (size_t)(count * n));
  int64_t *lc = malloc(sizeof(int64_t) * (size_t)(count * n));
  double first = 0, best = INFINITY;
  for (int64_t r = 0; r <= reps; r++) { /* r = 0: the warm-up */
    double t = now_ms();
    check(gpu, gstat_spectral_clustering_batch(gpu, &B, NULL, &o, lg, NULL));
    t = now_ms() - t;
    if (r == 0) first = t;
    if (r > 0 && t < best) best = t;
  }
  const char *ran = gstat_ctx_last_backend_name(gpu);
  B.adjacency.data = host;
  B.adjacency.location = GSTAT_HOST;
  double tc = now_ms();
  check(cpu, gstat_spectral_clustering_batch(cpu, &B, NULL, &o, lc, NULL));
  tc = now_ms() - tc;
  int64_t same = 0;
  double ag = 0, ac = 0;
  for (int64_t g = 0; g < count; g++) {
    const int64_t *t = truth + g * n;
    same += memcmp(lg + g * n, lc + g * n, sizeof(int64_t) * (size_t)n) == 0;
    ag += ari(lg + g * n, t, n);
    ac += ari(lc + g * n, t, n);
  }
  printf("gpu_ms=%.3f gpu_first_ms=%.3f cpu_ms=%.3f same=%lld ari_gpu=%.4f ari_cpu=%.4f ran=%s\n",
         best, first, tc, (long long)same, ag / (double)count, ac / (double)count, ran);
  cudaFree(dev);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
  if (host != A) free(host);
  free(A);
  free(truth);
  free(lg);
  free(lc);
  return 0;
}
