/*
 * The CPU backend's statistics primitives (backend.h): the fused co-moment
 * and centred projection (comoment.c, project.c), the top-k eigensolver,
 * copies between host descriptors, and the rules table its cost model reads.
 */
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/graph.h"
#include "backend/backend.h"
#include "backend/cpu/comoment.h"
#include "backend/cpu/knn.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

/* The CPU's rules: one place for its crossover and rate numbers, measured as
 * bench/README.md ("The cost model") tells. */
static const struct {
  double flops_per_thread[2]; /* sustained syrk/gemm rate of one thread: float32, float64 */
  double bytes_per_thread;    /* memory read rate of one thread */
  double bytes_max;           /* the memory system's */
  int64_t top_min_order;      /* eigh_top: partial solve from this order ... */
  int64_t top_max_fraction;   /* ... when k <= order / this */
  int64_t knn_tree_max_dims;  /* knn: the k-d tree up to this many dimensions (faster from
                                 64 points on), GEMM distances above */
  double knn_tree_seconds;    /* the tree's cost per point and tree level, one thread (10-d) */
  double small_flops_per_thread[2]; /* our per-matrix kernels' rate (small eigh, Cholesky,
                                       packing): float32, float64 */
  double thread_seconds;       /* a parallel step gets one thread per this much one-thread work:
                                  waking a thread, and waiting for one the scheduler gave away,
                                  costs more on smaller steps (bench/README.md, "Threads on a
                                  shared machine") */
  double slice_seconds;        /* a batch with a progress callback reports after about this much
                                  one-thread work (at most 16 slices, unless slice_max_seconds
                                  asks for more): each slice is a parallel region */
  double passive_step_seconds; /* with passive waits, threaded BLAS under LAPACK only when its
                                  smallest parallel call has this much work: each call pays a
                                  sleeping thread's wake-up (bench/README.md, "Threads on a
                                  shared machine") */
  double auto_min_seconds;     /* AUTO never starts the CUDA backend for host work the CPU does
                                  in less than this: creating its state costs more */
  double auto_eigh_min_work;   /* AUTO moves host eigh/Cholesky/solves to a usable GPU from
                                  batch * n^3 of this */
  double slice_max_seconds;    /* ... and at most this much per progress slice: the wait for
                                  Ctrl-C (the callback's cancel) on one thread */
} cpu_rules = {
    .flops_per_thread = {74e9, 46e9},
    .bytes_per_thread = 6e9,
    .bytes_max = 40e9,
    .top_min_order = 256,
    .top_max_fraction = 8,
    .knn_tree_max_dims = 16,
    .knn_tree_seconds = 1.2e-6,
    .small_flops_per_thread = {4e9, 3e9},
    .thread_seconds = 5e-4,
    .slice_seconds = 0.02,
    .passive_step_seconds = 5e-3,
    .auto_min_seconds = 1e-3,
    .auto_eigh_min_work = 4e6,
    .slice_max_seconds = 0.25,
};

static _Atomic int passive_waits;

void gstat_set_passive_waits(int passive) {
  passive_waits = passive != 0;
}

double gstat_i_cpu_blas_step_seconds(double total, double smallest_step) {
  return passive_waits && smallest_step < cpu_rules.passive_step_seconds ? 0 : total;
}

bool gstat_i_cpu_keeps_host_work(double cpu_seconds) {
  return cpu_seconds < cpu_rules.auto_min_seconds;
}

bool gstat_i_cpu_keeps_host_linalg(int64_t batch, int64_t n) {
  double order = (double)n;
  return (double)batch * order * order * order < cpu_rules.auto_eigh_min_work;
}

int gstat_i_cpu_rule_threads(int limit, int64_t items, double seconds) {
  double w = seconds / cpu_rules.thread_seconds; /* clamped: a cast of a huge double is UB */
  int64_t by_work = w >= 1e9 ? 1000000000 : w >= 1 ? (int64_t)w : 1;
  int64_t nt = limit;
  if (nt > items) nt = items;
  if (nt > by_work) nt = by_work;
  return nt < 1 ? 1 : (int)nt;
}

double gstat_i_cpu_seconds(gstat_dtype dt, double flops, bool blas3) {
  int f64 = dt == GSTAT_F64;
  return flops / (blas3 ? cpu_rules.flops_per_thread[f64] : cpu_rules.small_flops_per_thread[f64]);
}

double gstat_i_cpu_loop_seconds(double flops, double bytes) {
  double a = flops / cpu_rules.small_flops_per_thread[1], m = bytes / cpu_rules.bytes_per_thread;
  return a > m ? a : m;
}

int64_t gstat_i_cpu_slices(double seconds) {
  double s = ceil(seconds / cpu_rules.slice_seconds);
  double cap = ceil(seconds / cpu_rules.slice_max_seconds);
  if (!(cap >= 16)) cap = 16;                                 /* NaN too */
  if (cap > 1e9) cap = 1e9;                                   /* a cast of a huge double is UB */
  return !(s >= 1) ? 1 : s > cap ? (int64_t)cap : (int64_t)s; /* NaN: 1 */
}

gstat_status gstat_i_cpu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  double *mean, double *M, const gstat_matrix *S) {
  (void)state;
  if (M) return gstat_i_comoment(ctx, X, b, mean, M);
  size_t bytes = sizeof(double) * (size_t)(X->cols * X->cols); /* into S through doubles */
  double *tmp = gstat_i_alloc(ctx, bytes ? bytes : 1);
  if (!tmp) return gstat_i_fail(ctx, GSTAT_ENOMEM, "comoment: cannot allocate %zu bytes", bytes);
  gstat_status st = gstat_i_comoment(ctx, X, b, mean, tmp);
  if (st == GSTAT_OK) gstat_i_dense_store(GSTAT_F64, tmp, X->cols, S, 0);
  gstat_i_free(ctx, tmp, bytes ? bytes : 1);
  return st;
}

gstat_status gstat_i_cpu_scale_sym(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                   const double *d) {
  (void)state;
  (void)ctx;
  int64_t p = S->rows;
  for (int64_t b = 0; b < S->batch; b++)
    for (int64_t j = 0; j < p; j++)
      for (int64_t i = 0; i < p; i++) {
        void *e = gstat_i_elem(S, b, i, j);
        double f = 1.0 / (d[b * p + i] * d[b * p + j]);
        if (S->dtype == GSTAT_F64)
          *(double *)e *= f;
        else
          *(float *)e = (float)(*(float *)e * f);
      }
  return GSTAT_OK;
}

/* Element-wise through gstat_i_elem: S's strides and dtype (F32 or F64) as
 * they come; the p^2 work is small beside the co-moment that formed S. */
static double sym_get(const gstat_matrix *S, int64_t b, int64_t i, int64_t j) {
  const void *e = gstat_i_elem(S, b, i, j);
  return S->dtype == GSTAT_F64 ? *(const double *)e : (double)*(const float *)e;
}

static void sym_set(const gstat_matrix *S, int64_t b, int64_t i, int64_t j, double v) {
  void *e = gstat_i_elem(S, b, i, j);
  if (S->dtype == GSTAT_F64)
    *(double *)e = v;
  else
    *(float *)e = (float)v;
}

gstat_status gstat_i_cpu_offdiag_sumsq(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                       double *out) {
  (void)state;
  (void)ctx;
  for (int64_t b = 0; b < S->batch; b++) {
    double sum = 0;
    for (int64_t j = 0; j < S->cols; j++)
      for (int64_t i = j + 1; i < S->rows; i++) {
        double v = sym_get(S, b, i, j);
        sum += v * v;
      }
    out[b] = sum;
  }
  return GSTAT_OK;
}

gstat_status gstat_i_cpu_sym_affine(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                    const double *a, const double *c) {
  (void)state;
  (void)ctx;
  for (int64_t b = 0; b < S->batch; b++)
    for (int64_t j = 0; j < S->cols; j++)
      for (int64_t i = j; i < S->rows; i++) {
        double v = a[b] * sym_get(S, b, i, j);
        if (i == j) v += c[b]; /* off the diagonal a S exactly (a -0 stays -0) */
        sym_set(S, b, i, j, v);
        sym_set(S, b, j, i, v);
      }
  return GSTAT_OK;
}

gstat_status gstat_i_cpu_project(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                 const double *mean, const double *scale, const double *comp,
                                 const double *ev, int64_t k, gstat_matrix *Y) {
  (void)state;
  return gstat_i_project(ctx, X, b, mean, scale, comp, ev, k, Y);
}

/* k pairs of a large matrix: every eigenvalue but k vectors, a fraction of a
 * full eigh (1000 x 1000, k = 10 on the 2-core machine: bench/README.md).
 * GSTAT_EUNSUPPORTED, with no message, where the full eigh is faster. */
gstat_status gstat_i_cpu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                                  gstat_matrix *w) {
  (void)state;
  int64_t m = A->rows;
  /* below the crossover the full eigh is faster: the scheduler runs it */
  if (m < cpu_rules.top_min_order || k * cpu_rules.top_max_fraction > m) return GSTAT_EUNSUPPORTED;
  size_t es = gstat_dtype_size(A->dtype);
  for (int64_t b = 0; b < A->batch; b++) {
    gstat_status st = gstat_i_eigh_top(ctx, A->dtype, m, gstat_i_elem(A, b, 0, 0), A->col_stride, k,
                                       (char *)w->data + (size_t)(b * w->batch_stride) * es);
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}

gstat_status gstat_i_cpu_knn(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             int64_t k, bool include_self, int64_t *nbr, double *d2) {
  (void)state;
  if (X->cols <= cpu_rules.knn_tree_max_dims && X->cols <= GSTAT_I_KNN_TREE_MAX_DIMS)
    return gstat_i_knn_tree(ctx, X, b, k, include_self, nbr, d2);
  return gstat_i_knn_gemm(ctx, X, b, k, include_self, nbr, d2);
}

/* Whether m's elements are column-major with unit row stride in dtype dt,
 * so that they can serve as dense_load's or dense_store's buffer. */
static bool dense_in(const gstat_matrix *m, gstat_dtype dt) {
  return m->dtype == dt && (m->rows <= 1 || m->row_stride == 1) &&
         (m->cols <= 1 || m->col_stride >= m->rows);
}

/* Host to host, element by element through a dense buffer of the wider
 * compute type (exact for every pair of dtypes but a narrowing, which rounds
 * once); no buffer where src or dst can be that buffer itself (a statistic's
 * repeated calls then allocate nothing). */
gstat_status gstat_i_cpu_copy(void *state, gstat_ctx *ctx, const gstat_matrix *src,
                              gstat_matrix *dst) {
  (void)state;
  gstat_dtype ct = src->dtype == GSTAT_F64 || dst->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  int64_t rows = src->rows, cols = src->cols;
  size_t bytes;
  if (rows == 0 || cols == 0) return GSTAT_OK;
  if (dense_in(src, ct) || dense_in(dst, ct)) {
    bool from_src = dense_in(src, ct);
    for (int64_t b = 0; b < src->batch; b++) {
      if (from_src)
        gstat_i_dense_store(ct, gstat_i_elem(src, b, 0, 0), cols > 1 ? src->col_stride : rows, dst,
                            b);
      else
        gstat_i_dense_load(src, b, ct, gstat_i_elem(dst, b, 0, 0),
                           cols > 1 ? dst->col_stride : rows);
    }
    return GSTAT_OK;
  }
  if (!gstat_i_mul_size((size_t)(rows * cols), gstat_dtype_size(ct), &bytes))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "copy: the buffer size overflows");
  void *buf = gstat_i_alloc(ctx, bytes);
  if (!buf) return gstat_i_fail(ctx, GSTAT_ENOMEM, "copy: cannot allocate %zu bytes", bytes);
  for (int64_t b = 0; b < src->batch; b++) {
    gstat_i_dense_load(src, b, ct, buf, rows);
    gstat_i_dense_store(ct, buf, rows, dst, b);
  }
  gstat_i_free(ctx, buf, bytes);
  return GSTAT_OK;
}

double gstat_i_cpu_host_cost(void *state, const gstat_ctx *ctx, const gstat_i_work *w) {
  (void)state;
  double threads = ctx->num_threads > 0 ? (double)ctx->num_threads : 1.0;
  double n = (double)w->n, p = (double)w->p, items = (double)w->batch;
  double bytes = items * n * p * (double)gstat_dtype_size(w->dtype);
  double rate = cpu_rules.flops_per_thread[w->dtype == GSTAT_F64] * threads;
  if (w->op == GSTAT_I_PRIM_KMEANS) { /* scalar loops: seeding and ~30 Lloyd passes a run */
    double k = (double)(w->k > 1 ? w->k : 1), passes = k * (2 + log(k)) + 30;
    return items * 3 * n * p * k * passes /
           (cpu_rules.small_flops_per_thread[1] * fmin(threads, items));
  }
  if (w->op == GSTAT_I_PRIM_CSR_LAP) /* a solve's ~1000+ operator columns, each a pass over the
                                       graph and the block (bench/README.md) */
    return 1000 * 16 * (n + p) / fmin(cpu_rules.bytes_per_thread * threads, cpu_rules.bytes_max);
  if (w->op == GSTAT_I_PRIM_KNN) {
    if (p <= (double)cpu_rules.knn_tree_max_dims)
      return items * n * log2(n) * cpu_rules.knn_tree_seconds / threads;
    return items * 2 * n * n * p / rate;
  }
  double flops =
      w->op == GSTAT_I_PRIM_COMOMENT ? items * n * p * p : 2 * items * n * p * (double)w->k;
  double bw = fmin(cpu_rules.bytes_per_thread * threads, cpu_rules.bytes_max);
  return fmax(flops / rate, bytes / bw);
}

gstat_status gstat_i_cpu_knn_method(gstat_ctx *ctx, const gstat_matrix *X, int64_t k,
                                    bool include_self, int algorithm, uint64_t seed, int64_t *nbr,
                                    double *d2) {
  if (algorithm == GSTAT_KNN_NNDESCENT)
    return gstat_i_knn_nndescent(ctx, X, 0, k, include_self, seed, nbr, d2);
  if (algorithm == GSTAT_KNN_BRUTE) return gstat_i_knn_gemm(ctx, X, 0, k, include_self, nbr, d2);
  if (X->cols > GSTAT_I_KNN_TREE_MAX_DIMS)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "knn: the k-d tree takes at most %d dimensions, X has %lld (use the "
                        "automatic or the brute-force search)",
                        GSTAT_I_KNN_TREE_MAX_DIMS, (long long)X->cols);
  return gstat_i_knn_tree(ctx, X, 0, k, include_self, nbr, d2);
}
