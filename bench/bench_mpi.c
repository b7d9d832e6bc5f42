/*
 * Scaling of gstat_mpi under mpirun (driven by bench/mpi_scaling.sh):
 *
 *   bench_mpi pca N P [--weak] [--gpu] [--f32] [--threads T] [--reps R]
 *   bench_mpi spectral G NODES K [--weak] [--threads T] [--reps R]
 *
 * pca: distributed PCA (gstat_mpi_pca, results on every rank) of N x P data
 *   (strong: N rows in total, split evenly; --weak: N rows per rank). Row i
 *   is the same numbers whatever the number of ranks. --gpu: each rank puts
 *   its rows in the memory of GPU (node-local rank mod GPU count) and runs
 *   the CUDA backend there (one rank per GPU).
 * spectral: distributed batch spectral clustering of G dense graphs of NODES
 *   nodes with K planted clusters (strong: G in total; --weak: G per rank).
 *
 * Each rank uses T threads (default 1). One untimed call, then R timed
 * calls (default 3); a call's time is the slowest rank's (barrier before).
 * Rank 0 prints one line:
 *   op=<op> mode=<strong|weak> ranks=<n> size=<...> location=<host|gpu> threads=<T>
 *   best_ms=<best> first_ms=<untimed call> [ev_vs_cpu=<d>]
 * where d (--gpu) is the largest relative difference of the explained
 * variances from the same distributed PCA run on the CPU backend.
 */
#define _POSIX_C_SOURCE 199309L
#include <gstat/gstat.h>
#include <gstat/mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef GSTAT_BENCH_CUDA
#include <cuda_runtime.h>
#endif

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A uniform number in [0, 1) from a counter (splitmix64 finalizer). */
static double uniform(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

static void die(const char *what, gstat_mpi *m, gstat_status st) {
  fprintf(stderr, "bench_mpi: %s failed: %s (%s)\n", what, gstat_status_string(st),
          m ? gstat_mpi_last_error(m) : "");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

typedef struct {
  int weak, gpu, f32, threads, reps;
} opts;

/* Time R calls of fn(arg) (the slowest rank's time each); best into *best. */
typedef void (*call_fn)(void *arg);
static void timed(call_fn fn, void *arg, int reps, double *first, double *best) {
  *best = INFINITY;
  for (int r = -1; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ms();
    fn(arg);
    double dt = now_ms() - t0, slowest;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (r < 0)
      *first = slowest;
    else if (slowest < *best)
      *best = slowest;
  }
}

typedef struct {
  gstat_mpi *m;
  gstat_ctx *ctx;
  gstat_matrix X;
  gstat_pca_options opt;
} pca_call;

static void run_pca(void *arg) {
  pca_call *c = arg;
  gstat_pca_result *res = NULL;
  gstat_status st = gstat_mpi_pca(c->m, c->ctx, &c->X, &c->opt, GSTAT_MPI_ALL_RANKS, &res);
  if (st != GSTAT_OK) die("gstat_mpi_pca", c->m, st);
  gstat_pca_result_free(res);
}

static int local_rank(void) {
  MPI_Comm node;
  int r;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

static void bench_pca(int rank, int size, int64_t N, int64_t P, const opts *o) {
  int64_t total = o->weak ? N * size : N;
  int64_t lo = total * rank / size, hi = total * (rank + 1) / size, n = hi - lo;
  size_t es = o->f32 ? sizeof(float) : sizeof(double);
  char *x = malloc((size_t)(n * P) * es + 1);
  if (!x) die("malloc", NULL, GSTAT_ENOMEM);
  for (int64_t i = 0; i < n; i++) /* column j leans on column 0: a real leading component */
    for (int64_t j = 0; j < P; j++) {
      uint64_t id = (uint64_t)(lo + i);
      double v = uniform(id * (uint64_t)P + (uint64_t)j) + 0.5 * uniform(id * (uint64_t)P);
      if (o->f32)
        ((float *)x)[i * P + j] = (float)v;
      else
        ((double *)x)[i * P + j] = v;
    }
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = o->threads;
  co.backend = o->gpu ? GSTAT_BACKEND_CUDA : GSTAT_BACKEND_CPU;
  pca_call c;
  c.X = gstat_matrix_row_major(x, o->f32 ? GSTAT_F32 : GSTAT_F64, 1, n, P);
  void *dx = NULL;
  if (o->gpu) {
#ifdef GSTAT_BENCH_CUDA
    int count = 0;
    cudaGetDeviceCount(&count);
    co.cuda_device = count > 0 ? local_rank() % count : 0;
    cudaSetDevice(co.cuda_device);
    if (cudaMalloc(&dx, (size_t)(n * P) * es + 1) != cudaSuccess ||
        cudaMemcpy(dx, x, (size_t)(n * P) * es, cudaMemcpyHostToDevice) != cudaSuccess)
      die("cudaMalloc/cudaMemcpy", NULL, GSTAT_ENOMEM);
    c.X.data = dx;
    c.X.location = GSTAT_CUDA;
    c.X.device = co.cuda_device;
#else
    (void)local_rank;
    (void)dx;
    if (rank == 0) fprintf(stderr, "bench_mpi: built without CUDA (--gpu unavailable)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
#endif
  }
  gstat_status st = gstat_ctx_create(&c.ctx, &co);
  if (st != GSTAT_OK) die("gstat_ctx_create", NULL, st);
  if ((st = gstat_mpi_create(MPI_COMM_WORLD, &c.m)) != GSTAT_OK) die("gstat_mpi_create", NULL, st);
  gstat_pca_options_init(&c.opt);
  c.opt.n_components = 10;
  double first, best;
  timed(run_pca, &c, o->reps, &first, &best);
  /* --gpu: the same rows through the CPU backend from host memory; the
   * largest relative difference of the 10 explained variances */
  double diff = 0;
  if (o->gpu) {
    gstat_pca_result *rg = NULL, *rc = NULL;
    gstat_ctx *cpu;
    gstat_ctx_options cc;
    gstat_ctx_options_init(&cc);
    cc.backend = GSTAT_BACKEND_CPU;
    gstat_matrix Xh = gstat_matrix_row_major(x, c.X.dtype, 1, n, P);
    if ((st = gstat_ctx_create(&cpu, &cc)) != GSTAT_OK) die("gstat_ctx_create", NULL, st);
    if ((st = gstat_mpi_pca(c.m, c.ctx, &c.X, &c.opt, GSTAT_MPI_ALL_RANKS, &rg)) != GSTAT_OK)
      die("gstat_mpi_pca (gpu)", c.m, st);
    if ((st = gstat_mpi_pca(c.m, cpu, &Xh, &c.opt, GSTAT_MPI_ALL_RANKS, &rc)) != GSTAT_OK)
      die("gstat_mpi_pca (cpu)", c.m, st);
    for (int64_t i = 0; i < rc->n_components; i++) {
      double d =
          fabs(rg->explained_variance[i] - rc->explained_variance[i]) / rc->explained_variance[i];
      if (d > diff) diff = d;
    }
    gstat_pca_result_free(rg);
    gstat_pca_result_free(rc);
    gstat_ctx_destroy(cpu);
  }
  if (rank == 0)
    printf(
        "op=pca mode=%s ranks=%d size=%lldx%lld dtype=%s location=%s threads=%d best_ms=%.1f "
        "first_ms=%.1f%s%.1e\n",
        o->weak ? "weak" : "strong", size, (long long)total, (long long)P, o->f32 ? "f32" : "f64",
        o->gpu ? "gpu" : "host", o->threads, best, first, o->gpu ? " ev_vs_cpu=" : "",
        o->gpu ? diff : 0.0);
  gstat_mpi_destroy(c.m);
  gstat_ctx_destroy(c.ctx);
#ifdef GSTAT_BENCH_CUDA
  if (dx) cudaFree(dx);
#endif
  free(x);
}

typedef struct {
  gstat_mpi *m;
  gstat_ctx *ctx;
  gstat_graph_batch gb;
  int64_t *k, *labels;
  gstat_spectral_options opt;
} spectral_call;

static void run_spectral(void *arg) {
  spectral_call *c = arg;
  gstat_status st = gstat_mpi_spectral_clustering_batch(c->m, c->ctx, &c->gb, c->k, &c->opt,
                                                        GSTAT_MPI_ALL_RANKS, c->labels, NULL, NULL);
  if (st != GSTAT_OK) die("gstat_mpi_spectral_clustering_batch", c->m, st);
}

static void bench_spectral(int rank, int size, int64_t G, int64_t nodes, int64_t K, const opts *o) {
  int64_t count = o->weak ? G * size : G;
  double *a = malloc(sizeof(double) * (size_t)(count * nodes * nodes));
  spectral_call c;
  c.k = malloc(sizeof(int64_t) * (size_t)count);
  c.labels = malloc(sizeof(int64_t) * (size_t)(count * nodes));
  if (!a || !c.k || !c.labels) die("malloc", NULL, GSTAT_ENOMEM);
  for (int64_t g = 0; g < count; g++) { /* K planted blocks: dense inside, sparse across */
    c.k[g] = K;
    double *ag = a + g * nodes * nodes;
    for (int64_t i = 0; i < nodes; i++)
      for (int64_t j = 0; j <= i; j++) {
        double u =
            uniform(((uint64_t)g * (uint64_t)nodes + (uint64_t)i) * (uint64_t)nodes + (uint64_t)j);
        double w = (i * K / nodes == j * K / nodes) ? 0.5 + u : 0.05 * u;
        ag[i * nodes + j] = ag[j * nodes + i] = i == j ? 0.0 : w;
      }
  }
  memset(&c.gb, 0, sizeof c.gb);
  c.gb.format = GSTAT_GRAPH_DENSE;
  c.gb.count = count;
  c.gb.adjacency = gstat_matrix_row_major(a, GSTAT_F64, count, nodes, nodes);
  gstat_spectral_options_init(&c.opt);
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = o->threads;
  co.backend = GSTAT_BACKEND_CPU;
  gstat_status st = gstat_ctx_create(&c.ctx, &co);
  if (st != GSTAT_OK) die("gstat_ctx_create", NULL, st);
  if ((st = gstat_mpi_create(MPI_COMM_WORLD, &c.m)) != GSTAT_OK) die("gstat_mpi_create", NULL, st);
  double first, best;
  timed(run_spectral, &c, o->reps, &first, &best);
  if (rank == 0)
    printf(
        "op=spectral mode=%s ranks=%d size=%lldx%lld location=host threads=%d best_ms=%.1f "
        "first_ms=%.1f\n",
        o->weak ? "weak" : "strong", size, (long long)count, (long long)nodes, o->threads, best,
        first);
  gstat_mpi_destroy(c.m);
  gstat_ctx_destroy(c.ctx);
  free(a);
  free(c.k);
  free(c.labels);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  opts o = {0, 0, 0, 1, 3};
  int64_t num[3] = {0, 0, 0};
  int nnum = 0;
  const char *op = argc > 1 ? argv[1] : "";
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--weak"))
      o.weak = 1;
    else if (!strcmp(argv[i], "--gpu"))
      o.gpu = 1;
    else if (!strcmp(argv[i], "--f32"))
      o.f32 = 1;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      o.threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      o.reps = atoi(argv[++i]);
    else if (nnum < 3)
      num[nnum++] = atoll(argv[i]);
  }
  if (!strcmp(op, "pca") && nnum == 2 && num[0] > 0 && num[1] > 0) {
    bench_pca(rank, size, num[0], num[1], &o);
  } else if (!strcmp(op, "spectral") && nnum == 3 && num[0] > 0 && num[1] > 1 && num[2] > 0) {
    bench_spectral(rank, size, num[0], num[1], num[2], &o);
  } else {
    if (rank == 0)
      fprintf(stderr,
              "usage: bench_mpi pca N P [--weak] [--gpu] [--f32] [--threads T] [--reps R]\n"
              "       bench_mpi spectral G NODES K [--weak] [--threads T] [--reps R]\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Finalize();
  return 0;
}
