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
 *   bench_eigh_families [f32|f64|both] [reps] [steps]
 *   bench_eigh_families repeat [f64]
 *
 * Prints a markdown table: ms, the ratio to the random row of the shape
 * (issue 30's target: <= 1.25) and the path (own: the lockstep solver;
 * clustered: its cluster step served some matrices; handed-back: some
 * matrices went to cuSOLVER; cusolver: not the lockstep solver at all).
 * steps: a comma list of GSTAT_CUDA_CLUSTER_STEP values (0 off, 1 the
 * rule's bound, k the bound 2^k; default 0,1; a trailing w also sets
 * GSTAT_CUDA_CLUSTER_WIDE=1), a column each, timed on the
 * same device batch; with 0 first, a row whose path has no clusters is
 * timed once.
 * repeat: whether eigh gives the same bytes twice (issue 30's Wilkinson
 * batch, float64 dense-clustered), step off and on, into the same vectors
 * and into others prefilled differently (f64: that batch only, small enough
 * for compute-sanitizer's racecheck). scripts/gpu-stages-eigh bench and
 * scripts/gpu-owed-check run it.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <cuda_runtime.h>
#include <math.h>
#include <stdbool.h>
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

typedef struct {
  gstat_matrix A, V, W;
  size_t bytes;
} device_case;

static device_case device_case_new(gstat_dtype dt, void *h, int64_t n, int64_t nb) {
  const size_t es = dt == GSTAT_F64 ? 8 : 4, bytes = es * (size_t)(n * n * nb);
  void *da, *dv, *dw;
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&dv, bytes));
  CK(cudaMalloc(&dw, es * (size_t)(n * nb)));
  CK(cudaMemcpy(da, h, bytes, cudaMemcpyHostToDevice));
  device_case c = {device_matrix(dt, nb, n, n, da), device_matrix(dt, nb, n, n, dv),
                   device_matrix(dt, nb, n, 1, dw), bytes};
  return c;
}

static void device_case_free(device_case *c) {
  CK(cudaFree(c->A.data));
  CK(cudaFree(c->V.data));
  CK(cudaFree(c->W.data));
}

static void eigh_or_exit(gstat_ctx *ctx, device_case *c) {
  if (gstat_eigh(ctx, &c->A, GSTAT_LOWER, &c->W, &c->V, NULL) != GSTAT_OK) {
    fprintf(stderr, "eigh failed: %s\n", gstat_ctx_last_error(ctx));
    exit(1);
  }
}

/* Median ms of reps eigh calls (after one warm-up) with the cluster step
 * setting `step`; *path what the last took. */
static double time_case(gstat_ctx *ctx, device_case *c, const char *step, int reps,
                        const char **path) {
  char value[32];
  const size_t len = strlen(step);
  const int wide = len > 0 && step[len - 1] == 'w'; /* "1w": GSTAT_CUDA_CLUSTER_WIDE=1 */
  snprintf(value, sizeof value, "%.*s", (int)(len - (size_t)wide), step);
  setenv("GSTAT_CUDA_CLUSTER_STEP", value, 1);
  setenv("GSTAT_CUDA_CLUSTER_WIDE", wide ? "1" : "0", 1);
  double *ms = malloc(sizeof(double) * (size_t)(reps + 1));
  gstat_device_stats before, after;
  for (int k = -1; k < reps; k++) {
    gstat_ctx_device_stats(ctx, &before, sizeof before);
    CK(cudaDeviceSynchronize());
    double t0 = now_ms();
    eigh_or_exit(ctx, c);
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
  return med;
}

enum { MAX_STEPS = 8 };

/* One table row: family k of timed[] (NTIMED: mixed) at every step setting. */
static double time_row(gstat_ctx *ctx, gstat_dtype dt, int k, int64_t n, int64_t nb, int reps,
                       char *const *steps, int nsteps, double random_ms) {
  void *h = host_batch(dt, k < NTIMED ? family_index(timed[k]) : -1, n, nb);
  device_case c = device_case_new(dt, h, n, nb);
  free(h);
  double first = 0;
  printf("| %s | %lldx%lld | %s |", dt == GSTAT_F64 ? "f64" : "f32", (long long)nb, (long long)n,
         k < NTIMED ? timed[k] : "mixed");
  char paths[256] = "";
  for (int j = 0; j < nsteps; j++) {
    const char *path = "";
    double ms = time_case(ctx, &c, steps[j], reps, &path);
    if (j == 0) first = ms;
    printf(" %.1f |", ms);
    snprintf(paths + strlen(paths), sizeof paths - strlen(paths), "%s%s", j ? ", " : "", path);
    const int no_clusters = strcmp(path, "own") == 0 || strcmp(path, "cusolver") == 0;
    if (j == 0 && strcmp(steps[0], "0") == 0 && no_clusters) {
      for (int r = 1; r < nsteps; r++) printf(" = |");
      break;
    }
  }
  printf(" %.2f | %s |\n", first / (random_ms > 0 ? random_ms : first), paths);
  fflush(stdout);
  device_case_free(&c);
  return first;
}

/* Issue 30's Wilkinson W+ (n = 1024: pairs closer than any rounding). */
static void *wilkinson_batch(int64_t n, int64_t nb) {
  float *h = calloc((size_t)(n * n * nb), sizeof(float));
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < n; i++) {
      float *m = h + (size_t)(b * n * n);
      m[i + i * n] = (float)fabs((double)i - 0.5 * (double)(n - 1));
      if (i + 1 < n) m[i + 1 + i * n] = m[i + (i + 1) * n] = 1.0f;
    }
  return h;
}

/* Matrices whose bytes differ between x and y (nb blocks of `each` bytes). */
static int64_t differing(const unsigned char *x, const unsigned char *y, int64_t nb, size_t each) {
  int64_t d = 0;
  for (int64_t b = 0; b < nb; b++) d += memcmp(x + b * each, y + b * each, each) != 0;
  return d;
}

/* eigh of one device batch three times at each step setting: into V
 * prefilled with zeros, into V again, into another V prefilled with all
 * bits set; prints how many matrices' vectors (and values) differ. */
static void repeat_case(gstat_ctx *ctx, const char *name, gstat_dtype dt, void *h, int64_t n,
                        int64_t nb) {
  device_case c = device_case_new(dt, h, n, nb);
  const size_t es = dt == GSTAT_F64 ? 8 : 4, wbytes = es * (size_t)(n * nb);
  unsigned char *v[3], *w[3];
  device_case other = c;
  void *dv2;
  CK(cudaMalloc(&dv2, c.bytes));
  other.V.data = dv2;
  for (int on = 0; on < 2; on++) {
    setenv("GSTAT_CUDA_CLUSTER_STEP", on ? "1" : "0", 1);
    for (int r = 0; r < 3; r++) {
      device_case *into = r < 2 ? &c : &other;
      if (r != 1) CK(cudaMemset(into->V.data, r == 0 ? 0 : 0xff, c.bytes));
      eigh_or_exit(ctx, into);
      v[r] = malloc(c.bytes);
      w[r] = malloc(wbytes);
      CK(cudaMemcpy(v[r], into->V.data, c.bytes, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(w[r], into->W.data, wbytes, cudaMemcpyDeviceToHost));
    }
    const size_t vm = c.bytes / (size_t)nb, wm = wbytes / (size_t)nb;
    printf("| %s | step %d | %lld / %lld | %lld / %lld |\n", name, on,
           (long long)differing(v[0], v[1], nb, vm), (long long)differing(w[0], w[1], nb, wm),
           (long long)differing(v[0], v[2], nb, vm), (long long)differing(w[0], w[2], nb, wm));
    for (int r = 0; r < 3; r++) {
      free(v[r]);
      free(w[r]);
    }
  }
  CK(cudaFree(dv2));
  device_case_free(&c);
}

static void repeat_table(gstat_ctx *ctx, bool f64_only) {
  printf(
      "| batch | cluster step | same V: vectors / values differ | other V: vectors / values "
      "differ |\n|---|---|---|---|\n");
  void *h;
  if (!f64_only) {
    h = wilkinson_batch(1024, 64);
    repeat_case(ctx, "f32 64x1024 Wilkinson", GSTAT_F32, h, 1024, 64);
    free(h);
  }
  h = host_batch(GSTAT_F64, family_index("dense-clustered"), 1024, 4);
  repeat_case(ctx, "f64 4x1024 dense-clustered", GSTAT_F64, h, 1024, 4);
  free(h);
}

/* steps: the comma list (or the environment's setting) into out[]. */
static int parse_steps(const char *arg, char **out) {
  const char *env = getenv("GSTAT_CUDA_CLUSTER_STEP");
  static char buf[128];
  snprintf(buf, sizeof buf, "%s", arg ? arg : env ? env : "0,1");
  int k = 0;
  for (char *tok = strtok(buf, ","); tok && k < MAX_STEPS; tok = strtok(NULL, ",")) out[k++] = tok;
  if (k == 0) out[k++] = "1";
  return k;
}

int main(int argc, char **argv) {
  const char *which = argc > 1 ? argv[1] : "both";
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (reps < 1) reps = 1;
  char *steps[MAX_STEPS];
  const int nsteps = parse_steps(argc > 3 ? argv[3] : NULL, steps);
  static const int64_t shapes[][2] = {{4, 1024}, {640, 512}, {60, 1024}, {64, 512}};
  gstat_ctx *ctx = bench_gpu_ctx();
  if (strcmp(which, "repeat") == 0) {
    repeat_table(ctx, argc > 2 && strcmp(argv[2], "f64") == 0);
    gstat_ctx_destroy(ctx);
    return 0;
  }
  printf("| dtype | batch x n | family |");
  for (int j = 0; j < nsteps; j++) printf(" ms step=%s |", steps[j]);
  printf(" / random | path |\n|---|---|---|");
  for (int j = 0; j < nsteps; j++) printf("---:|");
  printf("---:|---|\n");
  for (int t = 0; t < 2; t++) {
    gstat_dtype dt = t ? GSTAT_F64 : GSTAT_F32;
    if (strcmp(which, "both") != 0 && strcmp(which, t ? "f64" : "f32") != 0) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      double random_ms = 0;
      for (int k = 0; k <= NTIMED; k++) {
        double ms =
            time_row(ctx, dt, k, shapes[s][1], shapes[s][0], reps, steps, nsteps, random_ms);
        if (k == 0) random_ms = ms;
      }
    }
  }
  gstat_ctx_destroy(ctx);
  return 0;
}
