/*
 * The sparse eigensolver (src/graph/sparse_eigs.c) on the symmetric
 * normalized Laplacian of a kNN graph:
 *
 *   bench_sparse_eigs [--n N] [--dim D] [--clusters C] [--spread S] [--knn K]
 *                     [--nev E] [--tol T] [--block B] [--basis M] [--degree P]
 *                     [--method 0|1|2] [--seed X] [--reps R]
 *                     [--graph FILE] [--vectors FILE] [--device 1] [--cpu 0]
 *                     [--local 0|1|2] [--graph-in FILE] [--reorth -1|0|1]
 *
 *   N points (default 100000) in D dimensions (default 3): uniform in the unit
 *   cube, or C Gaussian blobs (C > 0, unit variance, centers uniform in a
 *   cube of side S, default 10). The K nearest neighbours (default 10, exact,
 *   by a cell grid) give a connectivity matrix A, symmetrized as
 *   scikit-learn's SpectralClustering does, (A + A^T) / 2; then
 *   L = I - D^-1/2 A D^-1/2 in CSR. The E (default 8) smallest eigenpairs of
 *   L are timed, best of R (default 1) runs, with the tolerance T (default
 *   1e-8, relative to the spectral scale 2). B, M, P, method: the solver's
 *   options (0 = its defaults; method 1 Chebyshev-Davidson, 2 block Lanczos;
 *   reorth: Lanczos's partial reorthogonalization, -1 off, 1 on, 0 auto).
 *   --graph FILE    write the symmetric adjacency for bench/sparse_eigs_vs_sklearn.py:
 *                   int64 n, int64 nnz, int64 offsets[n+1], int64 indices[nnz],
 *                   float64 values[nnz]
 *   --graph-in FILE read the symmetric adjacency from FILE (the format --graph
 *                   writes, each row's indices ascending) instead of building
 *                   one: a graph from elsewhere (bench/gpu_sparse_profile.py)
 *   --vectors FILE  write float64 eigenvalues[E] then the n x E eigenvectors
 *                   (column-major)
 *
 *   --device 1      also solve on the GPU (a CUDA context: the Laplacian
 *                   planned through cuSPARSE, the basis in device memory) in
 *                   the same run: device_solve_ms (best of R, the wall
 *                   clock), device_applies, and eig_diff, the largest
 *                   difference from the CPU's eigenvalues; then the
 *                   planned product alone (device_spmm_block_ms: E columns at
 *                   once, device_spmv_xE_ms: one at a time), the solve's
 *                   share of products against its basis steps
 *   --local 1|2     number the points with locality before the graph is built:
 *                   1 along a Z-order curve, 2 breadth-first over the graph
 *                   (what the library's spectral path does; 0: data order)
 *   --cpu 0         skip the CPU solve (with --device 1: the device's alone;
 *                   eig_diff is then nan)
 *
 * Output: one line of key=value (times in ms; cpu_ms is the process CPU time,
 * steadier than the wall clock on a shared machine; spmm_block_ms is one
 * product with E columns, spmv_xE_ms E products with one column).
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph/graph_internal.h"
#include "graph/sparse_eigs.h"
#include "backend/sched.h"

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* CPU time of the process (all threads), less sensitive to a busy machine
 * than the wall clock */
static double cpu_ms(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *s) {
  return (double)(splitmix(s) >> 11) * 0x1.0p-53;
}

static double normal(uint64_t *s) {
  double u = uniform(s), v = uniform(s);
  return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

enum { MAXD = 4 };

static void *xmalloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", size);
    exit(1);
  }
  return p;
}

/* The smallest and largest coordinate of the n points x (n x d) per dimension. */
static void bounding_box(const double *x, int64_t n, int d, double *lo, double *hi) {
  for (int t = 0; t < d; t++) lo[t] = INFINITY, hi[t] = -INFINITY;
  for (int64_t i = 0; i < n; i++)
    for (int t = 0; t < d; t++) {
      lo[t] = fmin(lo[t], x[i * d + t]);
      hi[t] = fmax(hi[t], x[i * d + t]);
    }
}

/* Exact k nearest neighbours (excluding the point itself) by a cell grid:
 * search the cells within `ring` of the point's cell; the answer is final
 * once the k-th distance is at most ring * cell (nothing outside can be
 * nearer), else widen the ring. nbr: n x k. */
static void knn_grid(const double *x, int64_t n, int d, int k, int64_t *nbr) {
  double lo[MAXD], hi[MAXD];
  bounding_box(x, n, d, lo, hi);
  /* cells of about one point each on average */
  double vol = 1;
  for (int t = 0; t < d; t++) vol *= hi[t] - lo[t] + 1e-12;
  double cell = pow(vol / (double)n, 1.0 / d);
  int64_t dims[MAXD], ncell = 1;
  for (int t = 0; t < d; t++) {
    dims[t] = (int64_t)((hi[t] - lo[t]) / cell) + 1;
    ncell *= dims[t];
  }
  int64_t *cell_of = xmalloc(sizeof(int64_t) * (size_t)n);
  int64_t *start = calloc((size_t)ncell + 1, sizeof(int64_t));
  int64_t *order = xmalloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = 0;
    for (int t = 0; t < d; t++) {
      int64_t q = (int64_t)((x[i * d + t] - lo[t]) / cell);
      c = c * dims[t] + (q < dims[t] ? q : dims[t] - 1);
    }
    cell_of[i] = c;
    start[c + 1]++;
  }
  for (int64_t c = 0; c < ncell; c++) start[c + 1] += start[c];
  int64_t *fill = xmalloc(sizeof(int64_t) * (size_t)ncell);
  memcpy(fill, start, sizeof(int64_t) * (size_t)ncell);
  for (int64_t i = 0; i < n; i++) order[fill[cell_of[i]]++] = i;
  free(fill);

#pragma omp parallel
  {
    double *bd = xmalloc(sizeof(double) * (size_t)k);
    int64_t *bi = xmalloc(sizeof(int64_t) * (size_t)k);
#pragma omp for schedule(dynamic, 256)
    for (int64_t i = 0; i < n; i++) {
      int64_t home[MAXD], rest = cell_of[i];
      for (int t = d - 1; t >= 0; t--) {
        home[t] = rest % dims[t];
        rest /= dims[t];
      }
      for (int ring = 1;; ring++) {
        int cnt = 0;
        int64_t off[MAXD];
        for (int t = 0; t < d; t++) off[t] = -ring;
        for (;;) {
          int64_t c = 0;
          int inside = 1;
          for (int t = 0; t < d; t++) {
            int64_t q = home[t] + off[t];
            if (q < 0 || q >= dims[t]) inside = 0;
            c = c * dims[t] + q;
          }
          if (inside)
            for (int64_t p = start[c]; p < start[c + 1]; p++) {
              int64_t jj = order[p];
              if (jj == i) continue;
              double dist = 0;
              for (int t = 0; t < d; t++) {
                double df = x[i * d + t] - x[jj * d + t];
                dist += df * df;
              }
              if (cnt == k && dist >= bd[k - 1]) continue;
              int pos = cnt < k ? cnt++ : k - 1; /* insertion into the sorted best list */
              while (pos > 0 && (bd[pos - 1] > dist || (bd[pos - 1] == dist && bi[pos - 1] > jj))) {
                bd[pos] = bd[pos - 1];
                bi[pos] = bi[pos - 1];
                pos--;
              }
              bd[pos] = dist;
              bi[pos] = jj;
            }
          int t = d - 1;
          while (t >= 0 && off[t] == ring) off[t--] = -ring;
          if (t < 0) break;
          off[t]++;
        }
        double reach = ring * cell;
        if (cnt == k && bd[k - 1] <= reach * reach) break;
        if (ring > 64) break; /* fewer than k other points in reach: keep what we have */
      }
      for (int t = 0; t < k; t++) nbr[i * k + t] = bi[t];
    }
    free(bd);
    free(bi);
  }
  free(cell_of);
  free(start);
  free(order);
}

/* Row i of x (n x d) := old row order[i]. */
static void permute_rows(double *x, int64_t n, int d, const int64_t *order) {
  double *y = xmalloc(sizeof(double) * (size_t)(n * d));
  for (int64_t i = 0; i < n; i++) memcpy(y + i * d, x + order[i] * d, sizeof(double) * (size_t)d);
  memcpy(x, y, sizeof(double) * (size_t)(n * d));
  free(y);
}

/* Rows of x (n x d) reordered along a Z-order curve over a 2^10 grid per
 * dimension: neighbours then get nearby numbers (--local 1). */
typedef struct {
  uint64_t key;
  int64_t row;
} keyed_row;
static int cmp_keyed(const void *a, const void *b) {
  const keyed_row *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key ? 1 : (x->row > y->row) - (x->row < y->row);
}
static void zorder_rows(double *x, int64_t n, int d) {
  double lo[MAXD], hi[MAXD];
  bounding_box(x, n, d, lo, hi);
  keyed_row *kr = xmalloc(sizeof(keyed_row) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    uint64_t key = 0;
    for (int t = 0; t < d; t++) {
      uint64_t q = (uint64_t)((x[i * d + t] - lo[t]) / (hi[t] - lo[t] + 1e-300) * 1023.0);
      for (int bit = 0; bit < 10; bit++) key |= ((q >> bit) & 1u) << (bit * d + t);
    }
    kr[i].key = key;
    kr[i].row = i;
  }
  qsort(kr, (size_t)n, sizeof(keyed_row), cmp_keyed);
  int64_t *order = xmalloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) order[i] = kr[i].row;
  permute_rows(x, n, d, order);
  free(order);
  free(kr);
}

typedef struct {
  int64_t n, nnz;
  int64_t *off, *idx;
  double *val;
} csr;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* (A + A^T) / 2 of the kNN connectivity, rows sorted. */
static csr symmetrize(const int64_t *nbr, int64_t n, int k) {
  int64_t *cnt = calloc((size_t)n + 1, sizeof(int64_t));
  for (int64_t i = 0; i < n; i++)
    for (int t = 0; t < k; t++) {
      cnt[i + 1]++;
      cnt[nbr[i * k + t] + 1]++;
    }
  for (int64_t i = 0; i < n; i++) cnt[i + 1] += cnt[i];
  int64_t *tmp = xmalloc(sizeof(int64_t) * (size_t)cnt[n]);
  int64_t *fill = xmalloc(sizeof(int64_t) * (size_t)n);
  memcpy(fill, cnt, sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++)
    for (int t = 0; t < k; t++) {
      int64_t j = nbr[i * k + t];
      tmp[fill[i]++] = j;
      tmp[fill[j]++] = i;
    }
  csr a = {n, 0, xmalloc(sizeof(int64_t) * (size_t)(n + 1)), NULL, NULL};
  a.idx = xmalloc(sizeof(int64_t) * (size_t)cnt[n]);
  a.val = xmalloc(sizeof(double) * (size_t)cnt[n]);
  a.off[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t *row = tmp + cnt[i], len = cnt[i + 1] - cnt[i];
    qsort(row, (size_t)len, sizeof(int64_t), cmp_i64);
    for (int64_t p = 0; p < len;) {
      int64_t q = p;
      while (q < len && row[q] == row[p]) q++;
      a.idx[a.nnz] = row[p];
      a.val[a.nnz++] = 0.5 * (double)(q - p); /* once: one direction, twice: both */
      p = q;
    }
    a.off[i + 1] = a.nnz;
  }
  free(cnt);
  free(tmp);
  free(fill);
  return a;
}

/* I - D^-1/2 A D^-1/2 (A without self loops, every degree > 0). */
static csr normalized_laplacian(const csr *a) {
  int64_t n = a->n;
  double *dis = xmalloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    double deg = 0;
    for (int64_t p = a->off[i]; p < a->off[i + 1]; p++) deg += a->val[p];
    dis[i] = deg > 0 ? 1 / sqrt(deg) : 0;
  }
  csr l = {n, 0, xmalloc(sizeof(int64_t) * (size_t)(n + 1)), NULL, NULL};
  l.idx = xmalloc(sizeof(int64_t) * (size_t)(a->nnz + n));
  l.val = xmalloc(sizeof(double) * (size_t)(a->nnz + n));
  l.off[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    int diag = 0;
    for (int64_t p = a->off[i]; p <= a->off[i + 1]; p++) {
      int64_t j = p < a->off[i + 1] ? a->idx[p] : n;
      if (!diag && j > i) {
        l.idx[l.nnz] = i;
        l.val[l.nnz++] = dis[i] > 0 ? 1 : 0;
        diag = 1;
      }
      if (p < a->off[i + 1]) {
        l.idx[l.nnz] = j;
        l.val[l.nnz++] = -a->val[p] * dis[i] * dis[j];
      }
    }
    l.off[i + 1] = l.nnz;
  }
  free(dis);
  return l;
}

/* Breadth-first order of a's nodes, from node 0 of each component (--local 2). */
static void bfs_rows(double *x, int d, const csr *a) {
  int64_t *order = xmalloc(sizeof(int64_t) * (size_t)a->n);
  unsigned char *seen = xmalloc((size_t)a->n);
  gstat_i_graph g = {a->n, a->nnz, a->off, a->idx, a->val, 0, NULL, 0};
  gstat_i_graph_bfs_order(&g, order, seen);
  permute_rows(x, a->n, d, order);
  free(order);
  free(seen);
}

/* Connected components (for the report: the multiplicity of eigenvalue 0). */
static int64_t components(const csr *a) {
  int64_t n = a->n, count = 0;
  int64_t *label = xmalloc(sizeof(int64_t) * (size_t)n),
          *stack = xmalloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) label[i] = -1;
  for (int64_t i = 0; i < n; i++) {
    if (label[i] >= 0) continue;
    int64_t top = 0;
    stack[top++] = i;
    label[i] = count;
    while (top > 0) {
      int64_t u = stack[--top];
      for (int64_t p = a->off[u]; p < a->off[u + 1]; p++)
        if (label[a->idx[p]] < 0) {
          label[a->idx[p]] = count;
          stack[top++] = a->idx[p];
        }
    }
    count++;
  }
  free(label);
  free(stack);
  return count;
}

static csr read_graph(const char *path) {
  FILE *f = fopen(path, "rb");
  csr a = {0, 0, NULL, NULL, NULL};
  if (!f || fread(&a.n, sizeof(int64_t), 1, f) != 1 || fread(&a.nnz, sizeof(int64_t), 1, f) != 1 ||
      a.n < 1 || a.nnz < 0) {
    fprintf(stderr, "cannot read a graph from %s\n", path);
    exit(1);
  }
  a.off = xmalloc(sizeof(int64_t) * (size_t)(a.n + 1));
  a.idx = xmalloc(sizeof(int64_t) * (size_t)(a.nnz + 1));
  a.val = xmalloc(sizeof(double) * (size_t)(a.nnz + 1));
  if (fread(a.off, sizeof(int64_t), (size_t)a.n + 1, f) != (size_t)a.n + 1 ||
      fread(a.idx, sizeof(int64_t), (size_t)a.nnz, f) != (size_t)a.nnz ||
      fread(a.val, sizeof(double), (size_t)a.nnz, f) != (size_t)a.nnz) {
    fprintf(stderr, "%s is shorter than its header says\n", path);
    exit(1);
  }
  fclose(f);
  return a;
}

static void write_graph(const char *path, const csr *a) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fwrite(&a->n, sizeof(int64_t), 1, f);
  fwrite(&a->nnz, sizeof(int64_t), 1, f);
  fwrite(a->off, sizeof(int64_t), (size_t)a->n + 1, f);
  fwrite(a->idx, sizeof(int64_t), (size_t)a->nnz, f);
  fwrite(a->val, sizeof(double), (size_t)a->nnz, f);
  fclose(f);
}

/* The planned product alone on the device, for the solver's cost split:
 * one block of nev columns and nev single columns, ten times each, timed
 * to a one-entry copy back (the stream drained). */
static void device_products(gstat_ctx *ctx, gstat_i_sched_lap *plan, int64_t n, int64_t nev,
                            const double *V) {
  void *mem = NULL;
  if (gstat_i_sched_device_memory(ctx, "bench", &plan->where,
                                  sizeof(double) * (size_t)(2 * n * nev), &mem) != GSTAT_OK)
    return;
  double *x = mem, *y = x + n * nev;
  gstat_matrix Xd = gstat_matrix_col_major(x, GSTAT_F64, 1, n, nev),
               Yd = gstat_matrix_col_major(y, GSTAT_F64, 1, n, nev);
  Xd.location = Yd.location = plan->where.location;
  Xd.device = Yd.device = plan->where.device;
  gstat_matrix Vh = gstat_matrix_col_major((void *)V, GSTAT_F64, 1, n, nev), one, oneh;
  double back = 0;
  oneh = gstat_matrix_col_major(&back, GSTAT_F64, 1, 1, 1);
  one = Yd;
  one.rows = one.cols = 1;
  if (gstat_i_sched_copy(ctx, "bench", "X", &Vh, &Xd) != GSTAT_OK) return;
  double ms[2];
  for (int single = 0; single < 2; single++) {
    gstat_i_sched_copy(ctx, "bench", "sync", &one, &oneh);
    double t = now_ms();
    for (int r = 0; r < 10; r++)
      for (int64_t c = 0; c < (single ? nev : 1); c++)
        gstat_i_sched_csr_lap_apply(ctx, plan, n, single ? 1 : nev, x + c * n, y + c * n);
    gstat_i_sched_copy(ctx, "bench", "sync", &one, &oneh);
    ms[single] = (now_ms() - t) / 10;
  }
  printf(" device_spmm_block_ms=%.3f device_spmv_x%lld_ms=%.3f", ms[0], (long long)nev, ms[1]);
}

/* The same solve on a CUDA context: the normalized Laplacian of a planned
 * on the device (p = 1, s = D^-1/2), the basis there. Prints its keys. */
static void solve_on_device(const csr *a, const gstat_i_eigs_options *cpu_opt, int64_t reps,
                            const double *w_cpu) {
  int64_t n = a->n, nev = cpu_opt->k;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = GSTAT_BACKEND_CUDA;
  gstat_ctx *ctx = NULL;
  double *p = xmalloc(sizeof(double) * (size_t)(2 * n)), *s = p + n;
  for (int64_t i = 0; i < n; i++) {
    double deg = 0;
    for (int64_t e = a->off[i]; e < a->off[i + 1]; e++) deg += a->val[e];
    p[i] = deg > 0;
    s[i] = deg > 0 ? 1 / sqrt(deg) : 1;
  }
  gstat_i_csr_lap A = {n, a->off, a->idx, 0, a->val, p, s};
  gstat_i_sched_lap plan;
  if (gstat_ctx_create(&ctx, &co) != GSTAT_OK ||
      gstat_i_sched_csr_lap_plan(ctx, "bench", &A, &plan) != GSTAT_OK) {
    printf(" device=none(%s)", ctx ? gstat_ctx_last_error(ctx) : "no context");
    gstat_ctx_destroy(ctx);
    free(p);
    return;
  }
  gstat_i_eigs_options opt = *cpu_opt;
  opt.where = &plan.where;
  double *w = xmalloc(sizeof(double) * (size_t)nev),
         *V = xmalloc(sizeof(double) * (size_t)(n * nev));
  gstat_i_eigs_report rep;
  gstat_status st = GSTAT_OK;
  double best = INFINITY, diff = 0;
  for (int64_t r = 0; r < reps; r++) {
    double t1 = now_ms();
    st = gstat_i_sparse_eigs(ctx, n, gstat_i_sched_csr_lap_apply, &plan, &opt, w, V, NULL, &rep);
    best = fmin(best, now_ms() - t1);
  }
  for (int64_t i = 0; i < nev; i++) diff = fmax(diff, fabs(w[i] - w_cpu[i]));
  printf(
      " device_status=%s device_solve_ms=%.1f device_applies=%lld device_whole_steps=%lld "
      "eig_diff=%.3g ran=%s",
      st == GSTAT_OK ? "OK" : gstat_ctx_last_error(ctx), best, (long long)rep.operator_applies,
      (long long)rep.whole_steps, diff, gstat_ctx_last_backend_name(ctx));
  printf(" device_eigenvalues=");
  for (int64_t i = 0; i < nev; i++) printf("%s%.9g", i ? "," : "", w[i]);
  device_products(ctx, &plan, n, nev, V);
  gstat_i_sched_csr_lap_release(&plan);
  gstat_ctx_destroy(ctx);
  free(p);
  free(w);
  free(V);
}

int main(int argc, char **argv) {
  int64_t n = 100000, nev = 8, block = 0, basis = 0, reps = 1, degree = 0;
  int method = 0, reorth = 0;
  int d = 3, clusters = 0, knn = 10;
  double tol = 1e-8, spread = 10;
  uint64_t seed = 1;
  const char *graph_out = NULL, *vec_out = NULL, *graph_in = NULL;
  int device = 0, on_cpu = 1, local = 0;
  for (int a = 1; a < argc; a++) {
    const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
    if (!v) {
      fprintf(stderr, "missing value after %s\n", o);
      return 2;
    }
    if (!strcmp(o, "--n"))
      n = atoll(v);
    else if (!strcmp(o, "--dim"))
      d = atoi(v);
    else if (!strcmp(o, "--clusters"))
      clusters = atoi(v);
    else if (!strcmp(o, "--knn"))
      knn = atoi(v);
    else if (!strcmp(o, "--nev"))
      nev = atoll(v);
    else if (!strcmp(o, "--tol"))
      tol = atof(v);
    else if (!strcmp(o, "--block"))
      block = atoll(v);
    else if (!strcmp(o, "--basis"))
      basis = atoll(v);
    else if (!strcmp(o, "--spread"))
      spread = atof(v);
    else if (!strcmp(o, "--degree"))
      degree = atoll(v);
    else if (!strcmp(o, "--method"))
      method = atoi(v);
    else if (!strcmp(o, "--reorth"))
      reorth = atoi(v);
    else if (!strcmp(o, "--seed"))
      seed = (uint64_t)atoll(v);
    else if (!strcmp(o, "--reps"))
      reps = atoll(v);
    else if (!strcmp(o, "--graph"))
      graph_out = v;
    else if (!strcmp(o, "--graph-in"))
      graph_in = v;
    else if (!strcmp(o, "--vectors"))
      vec_out = v;
    else if (!strcmp(o, "--device"))
      device = atoi(v);
    else if (!strcmp(o, "--cpu"))
      on_cpu = atoi(v);
    else if (!strcmp(o, "--local"))
      local = atoi(v);
    else {
      fprintf(stderr, "unknown option %s\n", o);
      return 2;
    }
    a++;
  }
  if (d < 1 || d > MAXD || n <= knn || knn < 1 || nev < 1) {
    fprintf(stderr, "need 1 <= dim <= %d, 1 <= knn < n, nev >= 1\n", MAXD);
    return 2;
  }

  double t0 = now_ms(), t_knn = 0;
  double *x = NULL;
  int64_t *nbr = NULL;
  csr a;
  if (graph_in) {
    a = read_graph(graph_in);
    n = a.n;
  } else {
    x = xmalloc(sizeof(double) * (size_t)(n * d));
    uint64_t rs = 12345;
    double centers[64][MAXD];
    for (int c = 0; c < clusters && c < 64; c++)
      for (int t = 0; t < d; t++) centers[c][t] = spread * uniform(&rs);
    for (int64_t i = 0; i < n; i++)
      for (int t = 0; t < d; t++)
        x[i * d + t] = clusters > 0 ? centers[i % (clusters < 64 ? clusters : 64)][t] + normal(&rs)
                                    : uniform(&rs);
    if (local == 1) zorder_rows(x, n, d);
    nbr = xmalloc(sizeof(int64_t) * (size_t)(n * knn));
    knn_grid(x, n, d, knn, nbr);
    t_knn = now_ms() - t0;
    a = symmetrize(nbr, n, knn);
    if (local == 2) {
      bfs_rows(x, d, &a);
      knn_grid(x, n, d, knn, nbr);
      a = symmetrize(nbr, n, knn);
    }
  }
  csr l = normalized_laplacian(&a);
  int64_t ncomp = components(&a);
  double t_graph = now_ms() - t0;
  if (graph_out) write_graph(graph_out, &a);

  gstat_ctx *ctx = NULL;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return 1;
  gstat_i_csr op = {l.n, l.off, l.idx, l.val};
  gstat_i_eigs_options opt = {.k = nev,
                              .tol = tol,
                              .seed = seed,
                              .upper = 2,
                              .block = block,
                              .basis = basis,
                              .degree = degree,
                              .method = (gstat_i_eigs_method)method,
                              .partial_reorth = reorth};
  double *w = xmalloc(sizeof(double) * (size_t)nev);
  double *V = xmalloc(sizeof(double) * (size_t)(n * nev));
  double *res = xmalloc(sizeof(double) * (size_t)nev);
  gstat_i_eigs_report rep = {0};
  memset(V, 0, sizeof(double) * (size_t)(n * nev));
  gstat_status st = GSTAT_OK;
  double best = INFINITY, best_cpu = INFINITY;
  for (int64_t i = 0; i < nev; i++) w[i] = NAN; /* unless the CPU solves */
  for (int64_t r = 0; r < (on_cpu ? reps : 0); r++) {
    double t1 = now_ms(), c1 = cpu_ms();
    st = gstat_i_sparse_eigs(ctx, n, gstat_i_csr_apply, &op, &opt, w, V, res, &rep);
    best = fmin(best, now_ms() - t1);
    best_cpu = fmin(best_cpu, cpu_ms() - c1);
  }
  if (st != GSTAT_OK) fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
  /* the product alone, for the cost model: one block of nev columns, and
   * one column nev times */
  double *Y = xmalloc(sizeof(double) * (size_t)(n * nev));
  double t2 = now_ms();
  for (int r = 0; r < 10; r++) gstat_i_csr_apply(ctx, &op, n, nev, V, Y);
  double spmm = (now_ms() - t2) / 10;
  t2 = now_ms();
  for (int r = 0; r < 10; r++)
    for (int64_t c = 0; c < nev; c++) gstat_i_csr_apply(ctx, &op, n, 1, V + c * n, Y + c * n);
  double spmv = (now_ms() - t2) / 10;
  free(Y);
  printf(
      "n=%lld dim=%d clusters=%d components=%lld knn=%d nnz_L=%lld nev=%lld tol=%g threads=%d "
      "knn_ms=%.0f "
      "graph_ms=%.0f status=%s solve_ms=%.1f cpu_ms=%.0f iterations=%lld applies=%lld "
      "restarts=%lld whole_steps=%lld "
      "converged=%lld max_residual=%.3g dense=%d spmm_block_ms=%.2f spmv_x%lld_ms=%.2f",
      (long long)n, d, clusters, (long long)ncomp, knn, (long long)l.nnz, (long long)nev, tol,
      ctx->num_threads, t_knn, t_graph,
      st == GSTAT_OK        ? "OK"
      : st == GSTAT_ENOCONV ? "ENOCONV"
                            : "ERROR",
      best, best_cpu, (long long)rep.iterations, (long long)rep.operator_applies,
      (long long)rep.restarts, (long long)rep.whole_steps, (long long)rep.converged,
      rep.max_residual, rep.dense, spmm, (long long)nev, spmv);
  printf(" eigenvalues=");
  for (int64_t i = 0; i < nev; i++) printf("%s%.9g", i ? "," : "", w[i]);
  if (device) solve_on_device(&a, &opt, reps, w);
  printf("\n");
  if (vec_out) {
    FILE *f = fopen(vec_out, "wb");
    if (!f) return 1;
    fwrite(w, sizeof(double), (size_t)nev, f);
    fwrite(V, sizeof(double), (size_t)(n * nev), f);
    fclose(f);
  }
  gstat_ctx_destroy(ctx);
  free(x);
  free(nbr);
  free(w);
  free(V);
  free(res);
  free(a.off), free(a.idx), free(a.val);
  free(l.off), free(l.idx), free(l.val);
  return st == GSTAT_OK || st == GSTAT_ENOCONV ? 0 : 1;
}
