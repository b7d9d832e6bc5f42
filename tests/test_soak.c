/* Soak: 8 threads, each with its own context, run a mix of eigh (float64 and
 * float32), PCA, covariance/correlation and batch spectral clustering for a
 * bounded time (GSTAT_SOAK_SECONDS, default 1; in the quick mode of the
 * valgrind pass one round each), and every result is bitwise equal to the
 * serial run's. Then one context repeats the same-shape mix 2000 times: its
 * allocator is not called again after the first round, and the resident set
 * stays flat (not checked under ASan, whose quarantine holds freed memory,
 * nor in the quick mode). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

/* ASan keeps freed memory in quarantine: the resident set grows there */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif

enum { THREADS = 8, JOBS = 5, OUT_MAX = 8192, EIG_NB = 50, EIG_N = 12, PCA_N = 200, PCA_P = 8 };
enum { COV_NB = 2, COV_N = 150, COV_P = 10, GRAPHS = 16, NODES = 20 };

/* Shared read-only inputs. */
static double eig_a[EIG_NB * EIG_N * EIG_N];
static float eig_a32[3 * 40 * 40];
static double pca_x[PCA_N * PCA_P], cov_x[COV_NB * COV_N * COV_P];
static double adj[GRAPHS * NODES * NODES];
static double ref[JOBS][OUT_MAX];

/* Per-context state a job reuses between calls (the PCA result). */
typedef struct {
  gstat_ctx *ctx;
  gstat_pca_result *pca;
} worker_state;

/* Runs job j into out (a fixed number of doubles); nonzero on failure. */
static int run_job(worker_state *s, int j, double *out) {
  memset(out, 0, sizeof(double) * OUT_MAX);
  switch (j) {
    case 0: {
      gstat_matrix A = gstat_matrix_row_major(eig_a, GSTAT_F64, EIG_NB, EIG_N, EIG_N);
      gstat_matrix W = gstat_vector_batch(out, GSTAT_F64, EIG_NB, EIG_N);
      gstat_matrix V =
          gstat_matrix_col_major(out + EIG_NB * EIG_N, GSTAT_F64, EIG_NB, EIG_N, EIG_N);
      return gstat_eigh(s->ctx, &A, GSTAT_LOWER, &W, &V, NULL) != GSTAT_OK;
    }
    case 1: {
      gstat_matrix A = gstat_matrix_row_major(eig_a32, GSTAT_F32, 3, 40, 40);
      gstat_matrix W = gstat_vector_batch(out, GSTAT_F32, 3, 40);
      gstat_matrix V = gstat_matrix_row_major(out + 60, GSTAT_F32, 3, 40, 40);
      return gstat_eigh(s->ctx, &A, GSTAT_UPPER, &W, &V, NULL) != GSTAT_OK;
    }
    case 2: {
      gstat_pca_options o;
      gstat_pca_options_init(&o);
      o.n_components = 3;
      gstat_matrix X = gstat_matrix_row_major(pca_x, GSTAT_F64, 1, PCA_N, PCA_P);
      if (gstat_pca(s->ctx, &X, &o, &s->pca) != GSTAT_OK) return 1;
      memcpy(out, s->pca->components, sizeof(double) * 3 * PCA_P);
      memcpy(out + 3 * PCA_P, s->pca->explained_variance, sizeof(double) * 3);
      memcpy(out + 3 * PCA_P + 3, s->pca->scores, sizeof(double) * 3 * PCA_N);
      return 0;
    }
    case 3: {
      gstat_cov_options o;
      gstat_cov_options_init(&o);
      gstat_matrix X = gstat_matrix_row_major(cov_x, GSTAT_F64, COV_NB, COV_N, COV_P);
      gstat_matrix C = gstat_matrix_row_major(out, GSTAT_F64, COV_NB, COV_P, COV_P);
      gstat_matrix R = gstat_matrix_row_major(out + 256, GSTAT_F64, COV_NB, COV_P, COV_P);
      gstat_matrix M = gstat_vector_batch(out + 512, GSTAT_F64, COV_NB, COV_P);
      if (gstat_covariance(s->ctx, &X, &o, &C, &M) != GSTAT_OK) return 1;
      o.correlation = 1;
      return gstat_covariance(s->ctx, &X, &o, &R, NULL) != GSTAT_OK;
    }
    default: {
      gstat_spectral_options o;
      gstat_spectral_options_init(&o);
      o.n_clusters = 2;
      o.seed = 5;
      gstat_graph_batch b;
      memset(&b, 0, sizeof b);
      b.format = GSTAT_GRAPH_DENSE;
      b.count = GRAPHS;
      b.adjacency = gstat_matrix_row_major(adj, GSTAT_F64, GRAPHS, NODES, NODES);
      int64_t labels[GRAPHS * NODES];
      if (gstat_spectral_clustering_batch(s->ctx, &b, NULL, &o, labels, NULL) != GSTAT_OK) return 1;
      for (int k = 0; k < GRAPHS * NODES; k++) out[k] = (double)labels[k];
      return 0;
    }
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double soak_seconds(void) {
  const char *e = getenv("GSTAT_SOAK_SECONDS");
  return tu_quick() ? 0 : e ? atof(e) : 1.0;
}

typedef struct {
  int id;
  double deadline;
  long rounds, mismatches, failures;
} thread_arg;

static void *worker(void *p) {
  thread_arg *t = p;
  worker_state s = {NULL, NULL};
  if (gstat_ctx_create(&s.ctx, NULL) != GSTAT_OK) {
    t->failures++;
    return NULL;
  }
  double *out = malloc(sizeof(double) * OUT_MAX);
  do { /* each thread its own order of the jobs */
    for (int k = 0; k < JOBS; k++) {
      int j = (k + t->id) % JOBS;
      if (run_job(&s, j, out)) {
        t->failures++;
        continue;
      }
      t->mismatches += memcmp(out, ref[j], sizeof(double) * OUT_MAX) != 0;
    }
    t->rounds++;
  } while (now() < t->deadline);
  free(out);
  gstat_pca_result_free(s.pca);
  gstat_ctx_destroy(s.ctx);
  return NULL;
}

static void make_inputs(void) {
  tu_rng r = tu_rng_new();
  for (int b = 0; b < EIG_NB; b++)
    tu_symmetric(&r, TU_RANDOM, EIG_N, 0, false, eig_a + b * EIG_N * EIG_N);
  double a40[40 * 40];
  for (int b = 0; b < 3; b++) {
    tu_symmetric(&r, TU_EVEN, 40, 1e-3, true, a40);
    for (int k = 0; k < 40 * 40; k++) eig_a32[b * 1600 + k] = (float)a40[k];
  }
  for (int k = 0; k < PCA_N * PCA_P; k++) pca_x[k] = tu_normal(&r) * (1 + k % PCA_P);
  for (int k = 0; k < COV_NB * COV_N * COV_P; k++) cov_x[k] = tu_normal(&r) + 3;
  /* two dense blocks joined by weak edges: two clusters per graph */
  for (int g = 0; g < GRAPHS; g++)
    for (int i = 0; i < NODES; i++)
      for (int j = 0; j <= i; j++) {
        double w =
            (i < NODES / 2) == (j < NODES / 2) ? 0.5 + tu_uniform(&r) : 0.01 * tu_uniform(&r);
        adj[(g * NODES + i) * NODES + j] = adj[(g * NODES + j) * NODES + i] = i == j ? 0 : w;
      }
}

static void test_threads_mixed(void **state) {
  (void)state;
  make_inputs();
  worker_state s = {tu_ctx(GSTAT_BACKEND_AUTO), NULL};
  assert_non_null(s.ctx);
  for (int j = 0; j < JOBS; j++) assert_int_equal(run_job(&s, j, ref[j]), 0); /* serial */
  gstat_pca_result_free(s.pca);
  gstat_ctx_destroy(s.ctx);

  pthread_t th[THREADS];
  thread_arg args[THREADS];
  double deadline = now() + soak_seconds();
  for (int t = 0; t < THREADS; t++) {
    args[t] = (thread_arg){t, deadline, 0, 0, 0};
    assert_int_equal(pthread_create(&th[t], NULL, worker, &args[t]), 0);
  }
  long rounds = 0;
  for (int t = 0; t < THREADS; t++) {
    assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(args[t].failures, 0);
    assert_int_equal(args[t].mismatches, 0);
    rounds += args[t].rounds;
  }
  fprintf(stderr, "# soak: %d threads, %ld rounds of %d calls, all bitwise equal\n", THREADS,
          rounds, JOBS);
}

static long resident_kib(void) {
  long pages = 0, size;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &pages) != 2) pages = -1;
  fclose(f);
  return pages < 0 ? -1 : pages * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_flat_memory(void **state) {
  (void)state;
  make_inputs();
  tu_alloc_counter count;
  memset(&count, 0, sizeof count);
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.allocator = tu_counting_allocator(&count);
  worker_state s = {NULL, NULL};
  assert_int_equal(gstat_ctx_create(&s.ctx, &opt), GSTAT_OK);
  double *out = malloc(sizeof(double) * OUT_MAX);
  int calls = tu_quick() ? 100 : 2000;
  for (int j = 0; j < JOBS; j++) assert_int_equal(run_job(&s, j, out), 0); /* warm-up round */
  int64_t allocs = count.allocs;
  long rss0 = 0;
  for (int c = 0; c < calls; c++) {
    if (c == calls / 10) rss0 = resident_kib(); /* after the allocator's own warm-up */
    assert_int_equal(run_job(&s, c % JOBS, out), 0);
    assert_int_equal(count.allocs, allocs); /* the cached workspace serves every call */
  }
  long rss1 = resident_kib();
  fprintf(stderr,
          "# soak: %d calls, %lld allocations in the first round, none after; RSS %ld -> %ld KiB\n",
          calls, (long long)allocs, rss0, rss1);
#ifndef SOAK_ASAN
  if (!tu_quick()) assert_true(rss1 - rss0 <= 4096);
#endif
  free(out);
  gstat_pca_result_free(s.pca);
  gstat_ctx_destroy(s.ctx);
  assert_int_equal(count.live, 0);
  assert_int_equal(count.bad_alignment, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_mixed),
                                     cmocka_unit_test(test_flat_memory)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
