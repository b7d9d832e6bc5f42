/*
 * k-means of one large embedding (the spectral clustering's last step):
 * the serial runs (assign_impl.h) against the kmeans primitive on the CPU
 * (runs spread over the threads) and, with --device 1, on the GPU (a CUDA
 * context), the same seeds:
 *
 *   bench_kmeans [--n N] [--dim D] [--k K] [--n-init R] [--threads T] [--device 1]
 *
 *   N points (default 100000) in D dimensions (default 10) around K centres
 *   (default 10; unit-variance Gaussian blobs, centres uniform in a cube of
 *   side 10), R runs (default 10). One line per path: wall ms, inertia,
 *   Lloyd iterations of the best run, labels equal to the serial ones.
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/sched.h"
#include "spectral/spectral_internal.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static double uniform(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) * 0x1.0p-53;
}

static double normal(uint64_t *s) {
  double u = uniform(s), v = uniform(s);
  return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * v);
}

static void row(const char *what, double ms, double inertia, int64_t iters, const int64_t *lab,
                const int64_t *ref, int64_t n) {
  printf("%-28s %10.1f %16.6f %6lld %s\n", what, ms, inertia, (long long)iters,
         memcmp(lab, ref, sizeof(int64_t) * (size_t)n) ? "differ" : "equal");
}

/* The kmeans primitive on a context of `backend` with `threads`. */
static void run_primitive(const char *what, gstat_backend backend, int threads, const double *X,
                          int64_t n, int64_t dim, const gstat_i_kmeans_opt *o, int64_t *lab,
                          const int64_t *ref) {
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = backend;
  co.num_threads = threads;
  gstat_ctx *ctx = NULL;
  if (gstat_ctx_create(&ctx, &co) != GSTAT_OK) return;
  gstat_matrix E = gstat_matrix_row_major((void *)X, GSTAT_F64, 1, n, dim);
  double inertia = NAN, t = now_ms();
  int64_t iters = -1;
  gstat_status st = gstat_i_sched_kmeans(ctx, "bench", &E, o, lab, &inertia, &iters);
  t = now_ms() - t;
  if (st != GSTAT_OK)
    printf("%-28s failed: %s\n", what, gstat_ctx_last_error(ctx));
  else
    row(what, t, inertia, iters, lab, ref, n);
  printf("%-28s ran on %s\n", "", gstat_ctx_last_backend_name(ctx));
  gstat_ctx_destroy(ctx);
}

int main(int argc, char **argv) {
  int64_t n = 100000, dim = 10, k = 10, runs = 10;
  int threads = 0, device = 0;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!strcmp(argv[a], "--n")) n = atoll(argv[a + 1]);
    if (!strcmp(argv[a], "--dim")) dim = atoll(argv[a + 1]);
    if (!strcmp(argv[a], "--k")) k = atoll(argv[a + 1]);
    if (!strcmp(argv[a], "--n-init")) runs = atoll(argv[a + 1]);
    if (!strcmp(argv[a], "--threads")) threads = atoi(argv[a + 1]);
    if (!strcmp(argv[a], "--device")) device = atoi(argv[a + 1]);
  }
  if (n < 2 || dim < 1 || k < 1 || k > n || runs < 1) {
    fprintf(stderr, "need n >= 2, dim >= 1, 1 <= k <= n, n-init >= 1\n");
    return 2;
  }
  double *X = malloc(sizeof(double) * (size_t)(n * dim)),
         *C = malloc(sizeof(double) * (size_t)(k * dim));
  int64_t *ref = malloc(sizeof(int64_t) * (size_t)(2 * n)), *lab = ref + n;
  uint64_t rs = 12345;
  for (int64_t i = 0; i < k * dim; i++) C[i] = 10 * uniform(&rs);
  for (int64_t i = 0; i < n; i++)
    for (int64_t a = 0; a < dim; a++) X[i * dim + a] = C[(i % k) * dim + a] + normal(&rs);
  gstat_i_kmeans_opt o = {k, runs, 300, 1e-4, 0, NULL, NULL};
  double *scratch = malloc(sizeof(double) * gstat_i_kmeans_scratch(n, dim, k)), inertia;
  int64_t iters;
  printf("# n=%lld dim=%lld k=%lld n_init=%lld\n", (long long)n, (long long)dim, (long long)k,
         (long long)runs);
  printf("%-28s %10s %16s %6s %s\n", "path", "ms", "inertia", "iters", "labels");
  double t = now_ms();
  gstat_i_kmeans(X, n, dim, &o, ref, &inertia, &iters, scratch);
  row("serial (assign_impl.h)", now_ms() - t, inertia, iters, ref, ref, n);
  run_primitive("kmeans primitive, CPU", GSTAT_BACKEND_CPU, threads, X, n, dim, &o, lab, ref);
  if (device)
    run_primitive("kmeans primitive, CUDA", GSTAT_BACKEND_CUDA, threads, X, n, dim, &o, lab, ref);
  free(X);
  free(C);
  free(ref);
  free(scratch);
  return 0;
}
