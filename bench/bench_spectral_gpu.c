/*
 * Batch spectral clustering of graphs already in GPU memory, end to end
 * (gstat_spectral_clustering_batch on a dense batch in device memory: the
 * call returns labels and eigenvalues on the host, so it is synchronous),
 * against the host engine on the same graphs in the same run.
 *
 *   bench_spectral_gpu FILE COUNT N K REPS [f32|f64] [qr]
 *       FILE: COUNT x N x N symmetric adjacencies (float64, raw) and
 *       FILE.truth: COUNT x N int64 block labels (bench/gpu_spectral_vs_torch.py
 *       writes both).
 *   bench_spectral_gpu --ragged COUNT NMIN NMAX K REPS [f32|f64] [qr]
 *       COUNT seeded SBM graphs (K equal blocks, edge probability 0.5 within
 *       a block, 0.05 across) of NMIN..NMAX nodes, padded to NMAX (the
 *       batch's per-graph sizes).
 *   qr: assign labels by cluster-QR instead of k-means.
 *
 * Prints "gpu_ms=<best of REPS after a warm-up> gpu_first_ms=... cpu_ms=<one
 * host-engine call> same=<graphs labelled identically> ari_gpu=... ari_cpu=..."
 * (mean adjusted Rand index against the truth).
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

/* The graphs: COUNT x N x N adjacencies (float64, column-major), their
 * sizes (NULL: all N) and truth (COUNT x N). */
typedef struct batch {
  int64_t count, n;
  double *A;
  int64_t *sizes, *truth;
} batch;

static batch from_file(const char *path, int64_t count, int64_t n) {
  batch b = {count, n, NULL, NULL, NULL};
  b.A = read_all(path, sizeof(double) * (size_t)(count * n * n));
  char tpath[4096];
  snprintf(tpath, sizeof tpath, "%s.truth", path);
  b.truth = read_all(tpath, sizeof(int64_t) * (size_t)(count * n));
  return b;
}

static batch ragged_sbm(int64_t count, int64_t nmin, int64_t nmax, int64_t k) {
  batch b = {count, nmax, calloc((size_t)(count * nmax * nmax), sizeof(double)),
             malloc(sizeof(int64_t) * (size_t)count),
             calloc((size_t)(count * nmax), sizeof(int64_t))};
  if (!b.A || !b.sizes || !b.truth) {
    fprintf(stderr, "cannot allocate the graphs\n");
    exit(1);
  }
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int64_t g = 0; g < count; g++) {
    x = x * 6364136223846793005u + 1442695040888963407u;
    int64_t n = nmin + (int64_t)((x >> 33) % (uint64_t)(nmax - nmin + 1));
    double *a = b.A + g * nmax * nmax;
    b.sizes[g] = n;
    for (int64_t i = 0; i < n; i++) b.truth[g * nmax + i] = i * k / n;
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j + 1; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        double u = (double)(x >> 11) * 0x1p-53;
        /* a path through the nodes keeps every graph connected: a component
         * more than k makes the batch call refuse the graph */
        if (i == j + 1 || u < (i * k / n == j * k / n ? 0.5 : 0.05))
          a[i + j * nmax] = a[j + i * nmax] = 1;
      }
  }
  return b;
}

int main(int argc, char **argv) {
  bool ragged = argc > 1 && !strcmp(argv[1], "--ragged");
  int a0 = ragged ? 2 : 1;
  if (argc < a0 + 5) {
    fprintf(stderr,
            "usage: %s FILE COUNT N K REPS [f32|f64] [qr]\n"
            "       %s --ragged COUNT NMIN NMAX K REPS [f32|f64] [qr]\n",
            argv[0], argv[0]);
    return 2;
  }
  int64_t count = atoll(argv[a0 + 1 - ragged]);
  batch bt = ragged
                 ? ragged_sbm(count, atoll(argv[a0 + 1]), atoll(argv[a0 + 2]), atoll(argv[a0 + 3]))
                 : from_file(argv[1], count, atoll(argv[3]));
  int at = a0 + 3; /* K */
  int64_t n = bt.n, k = atoll(argv[at]), reps = atoll(argv[at + 1]);
  int f32 = 0, qr = 0;
  for (int a = at + 2; a < argc; a++) f32 |= !strcmp(argv[a], "f32"), qr |= !strcmp(argv[a], "qr");
  size_t cells = (size_t)(count * n * n);
  double *A = bt.A;
  int64_t *truth = bt.truth;
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
  if (qr) o.assign = GSTAT_ASSIGN_CLUSTER_QR;
  gstat_graph_batch B;
  memset(&B, 0, sizeof B);
  B.format = GSTAT_GRAPH_DENSE;
  B.count = count;
  B.adjacency = gstat_matrix_col_major(dev, f32 ? GSTAT_F32 : GSTAT_F64, count, n, n);
  B.adjacency.location = GSTAT_CUDA;
  B.sizes = bt.sizes;
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
  for (int64_t g = 0, node = 0; g < count; g++) { /* labels: each graph's sizes[g] in turn */
    int64_t m = bt.sizes ? bt.sizes[g] : n;
    const int64_t *t = truth + g * n;
    same += memcmp(lg + node, lc + node, sizeof(int64_t) * (size_t)m) == 0;
    ag += ari(lg + node, t, m);
    ac += ari(lc + node, t, m);
    node += m;
  }
  printf("gpu_ms=%.3f gpu_first_ms=%.3f cpu_ms=%.3f same=%lld ari_gpu=%.4f ari_cpu=%.4f ran=%s\n",
         best, first, tc, (long long)same, ag / (double)count, ac / (double)count, ran);
  cudaFree(dev);
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
  if (host != A) free(host);
  free(A);
  free(truth);
  free(bt.sizes);
  free(lg);
  free(lc);
  return 0;
}
