/* Affinity graphs from data: RBF, kNN (connectivity or distance), mutual kNN
 * and epsilon neighbourhoods, as CSR or dense batches. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "graph/graph_internal.h"
#include "graph/pairwise.h"
#include "backend/dense.h"
#include "backend/sched.h"

void gstat_affinity_options_init(gstat_affinity_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->kind = GSTAT_AFFINITY_RBF;
  opt->n_neighbors = 10;
  opt->include_self = 1;
  opt->weights = GSTAT_KNN_CONNECTIVITY;
  opt->symmetrize = GSTAT_SYM_MEAN;
  gstat_knn_options_init(&opt->knn);
}

static gstat_status check_args(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                               const gstat_affinity_options *o) {
  if (!X) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X is NULL", fn);
  if (!o) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt is NULL", fn);
  gstat_status st = gstat_i_check_matrix(ctx, fn, "X", X);
  if (st != GSTAT_OK) return st;
  if (o->kind < GSTAT_AFFINITY_RBF || o->kind > GSTAT_AFFINITY_EPSILON)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.kind=%d is not a gstat_affinity_kind", fn,
                        (int)o->kind);
  if (o->weights != GSTAT_KNN_CONNECTIVITY && o->weights != GSTAT_KNN_DISTANCE)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.weights=%d is not a gstat_knn_weights", fn,
                        (int)o->weights);
  if (o->knn.algorithm < GSTAT_KNN_AUTO || o->knn.algorithm > GSTAT_KNN_NNDESCENT)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.knn.algorithm=%d is not a gstat_knn_algorithm",
                        fn, (int)o->knn.algorithm);
  if (!isfinite(o->gamma))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.gamma is not finite", fn);
  int64_t n = X->rows;
  if (o->kind == GSTAT_AFFINITY_KNN || o->kind == GSTAT_AFFINITY_MUTUAL_KNN) {
    int64_t most = o->include_self ? n : n - 1;
    if (o->n_neighbors < 1 || o->n_neighbors > most)
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: opt.n_neighbors=%lld must be in [1, %lld] for %lld points%s", fn,
                          (long long)o->n_neighbors, (long long)most, (long long)n,
                          o->include_self ? " (the point itself included)" : "");
  }
  if (o->kind == GSTAT_AFFINITY_KNN &&
      (o->symmetrize < GSTAT_SYM_MAX || o->symmetrize > GSTAT_SYM_MIN))
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: opt.symmetrize=%d must be MAX, MEAN, SUM or MIN (a kNN graph is "
                        "directed)",
                        fn, (int)o->symmetrize);
  if (o->kind == GSTAT_AFFINITY_EPSILON && !(o->epsilon > 0 && isfinite(o->epsilon)))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.epsilon=%g must be > 0 and finite", fn,
                        o->epsilon);
  int64_t b, i, j;
  gstat_status st2 = GSTAT_OK;
  if (n > 0 && X->cols > 0 && gstat_i_sched_find_nonfinite(ctx, fn, "X", X, &b, &i, &j, &st2))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE, "%s: X[%lld] row %lld column %lld is NaN or Inf", fn,
                        (long long)b, (long long)i, (long long)j);
  return st2;
}

typedef struct build {
  const gstat_affinity_options *o;
  int64_t n;
  double gamma, eps2;
  int64_t *count;   /* epsilon: per-row counts (pass 0) */
  int64_t *offsets; /* directed CSR being filled */
  int64_t *indices;
  double *weights;
  double *dense; /* RBF dense: n x n, column stride ld */
  int64_t ld;
} build;

static double weight_of(const build *bd, double d2) {
  return bd->o->weights == GSTAT_KNN_DISTANCE ? sqrt(d2) : 1.0;
}

static void eps_row(void *user, int64_t i, const double *d2) {
  build *bd = user;
  int64_t c = 0;
  for (int64_t j = 0; j < bd->n; j++) {
    if (j == i || !(d2[j] <= bd->eps2)) continue;
    if (bd->indices) {
      bd->indices[bd->offsets[i] + c] = j;
      bd->weights[bd->offsets[i] + c] = weight_of(bd, d2[j]);
    }
    c++;
  }
  if (!bd->indices) bd->count[i] = c;
}

/* RBF weights of row i. Dense: only entries j <= i (column i's upper part,
 * half the exps); mirror_upper copies them down, so the matrix is exactly
 * symmetric whatever the GEMM's rounding of the distances. */
static void rbf_row(void *user, int64_t i, const double *d2) {
  build *bd = user;
  if (bd->dense) {
    double *out = bd->dense + i * bd->ld;
    for (int64_t j = 0; j <= i; j++) out[j] = exp(-bd->gamma * d2[j]);
    return;
  }
  double *out = bd->weights + i * bd->n;
  for (int64_t j = 0; j < bd->n; j++) out[j] = exp(-bd->gamma * d2[j]);
  for (int64_t j = 0; j < bd->n; j++) bd->indices[i * bd->n + j] = j;
}

/* D (n x n, column-major, ld) <- its upper triangle mirrored into the lower,
 * in 64 x 64 tiles (no strided sweep), column tiles over nt threads. */
static void mirror_upper(double *D, int64_t n, int64_t ld, int nt) {
  const int64_t T = 64, tiles = (n + T - 1) / T;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
  for (int64_t t = 0; t < tiles; t++) {
    int64_t j0 = t * T, j1 = j0 + T < n ? j0 + T : n;
    for (int64_t i0 = j0; i0 < n; i0 += T) {
      int64_t i1 = i0 + T < n ? i0 + T : n;
      for (int64_t j = j0; j < j1; j++)
        for (int64_t i = i0 > j + 1 ? i0 : j + 1; i < i1; i++) D[i + j * ld] = D[j + i * ld];
    }
  }
}

static bool is_knn(const gstat_affinity_options *o) {
  return o->kind == GSTAT_AFFINITY_KNN || o->kind == GSTAT_AFFINITY_MUTUAL_KNN;
}

/* The directed graph of element b of X (n x p), symmetrized into a new CSR.
 * kNN kinds search X itself (the scheduler's knn); the others read x (X_b in
 * double, n x p column-major) with `scratch` of gstat_i_pairwise_scratch(n)
 * doubles. */
static gstat_status build_csr(gstat_ctx *ctx, const char *fn, const gstat_affinity_options *o,
                              const gstat_matrix *Xm, int64_t b, const double *X, double *scratch,
                              gstat_csr **out) {
  int64_t n = Xm->rows, p = Xm->cols;
  gstat_status st = GSTAT_OK;
  build bd = {.o = o,
              .n = n,
              .gamma = o->gamma > 0 ? o->gamma : 1.0 / (double)(p > 0 ? p : 1),
              .eps2 = o->epsilon * o->epsilon};
  int64_t per = o->kind == GSTAT_AFFINITY_RBF       ? n
                : o->kind == GSTAT_AFFINITY_EPSILON ? 0
                                                    : o->n_neighbors;
  size_t cells;
  if (!gstat_i_mul_size((size_t)n, (size_t)per, &cells) || cells > SIZE_MAX / 16)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the graph's size overflows", fn);
  bd.offsets = malloc(sizeof(int64_t) * (size_t)(2 * n + 2));
  if (!bd.offsets) goto nomem;
  bd.count = bd.offsets + n + 1;
  gstat_symmetrize sym = GSTAT_SYM_MEAN; /* RBF: removes GEMM rounding asymmetry */
  if (o->kind == GSTAT_AFFINITY_EPSILON) {
    sym = GSTAT_SYM_MAX; /* a pair at the threshold may round differently each way */
    st = gstat_i_pairwise_rows(ctx, n, p, X, scratch, eps_row, &bd);
    if (st != GSTAT_OK) goto done;
    bd.offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) bd.offsets[i + 1] = bd.offsets[i] + bd.count[i];
    cells = (size_t)bd.offsets[n];
  } else {
    for (int64_t i = 0; i <= n; i++) bd.offsets[i] = i * per;
  }
  bd.indices = malloc(sizeof(int64_t) * (cells + 1));
  bd.weights = malloc(sizeof(double) * (cells + 1));
  if (!bd.indices || !bd.weights) goto nomem;
  if (o->kind == GSTAT_AFFINITY_EPSILON) {
    st = gstat_i_pairwise_rows(ctx, n, p, X, scratch, eps_row, &bd);
  } else if (o->kind == GSTAT_AFFINITY_RBF) {
    st = gstat_i_pairwise_rows(ctx, n, p, X, scratch, rbf_row, &bd);
  } else {
    st = gstat_i_sched_knn_with(ctx, fn, Xm, b, per, o->include_self != 0, (int)o->knn.algorithm,
                                o->knn.seed, bd.indices, bd.weights);
    for (size_t c = 0; c < cells; c++)
      bd.weights[c] = o->weights == GSTAT_KNN_DISTANCE ? sqrt(bd.weights[c]) : 1.0;
    sym = o->kind == GSTAT_AFFINITY_MUTUAL_KNN ? GSTAT_SYM_MIN : o->symmetrize;
  }
  if (st != GSTAT_OK) goto done;
  gstat_i_csr_in in = {n, 0, bd.offsets, bd.indices, bd.weights};
  *out = gstat_i_csr_symmetrized(&in, sym, GSTAT_LOOPS_KEEP, false);
  if (!*out) goto nomem;
  goto done;
nomem:
  st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the affinity graph of %lld points", fn,
                    (long long)n);
done:
  free(bd.offsets);
  free(bd.indices);
  free(bd.weights);
  return st;
}

/* Workspace: X in double (n x p), then the distance scratch, then (dense) n x n. */
static double *carve(gstat_ctx *ctx, const char *fn, int64_t n, int64_t p, bool dense,
                     double **scratch, double **square) {
  size_t a, b = (size_t)gstat_i_pairwise_scratch(n), c = 0, total;
  if (!gstat_i_mul_size((size_t)n, (size_t)p, &a) ||
      (dense && !gstat_i_mul_size((size_t)n, (size_t)n, &c)) || !gstat_i_add_size(a, b, &total) ||
      !gstat_i_add_size(total, c + 1, &total) || total > SIZE_MAX / 8) {
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
    return NULL;
  }
  double *ws = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, total * 8);
  if (!ws) {
    gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn, total * 8);
    return NULL;
  }
  *scratch = ws + a;
  *square = dense ? ws + a + b : NULL;
  return ws;
}

gstat_status gstat_affinity_csr(gstat_ctx *ctx, const gstat_matrix *X,
                                const gstat_affinity_options *opt, gstat_csr **out) {
  static const char fn[] = "affinity_csr";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!out) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: out is NULL", fn);
  *out = NULL;
  gstat_status st = check_args(ctx, fn, X, opt);
  if (st != GSTAT_OK) return st;
  if (X->batch != 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X holds %lld datasets; this function takes one", fn,
                        (long long)X->batch);
  if (is_knn(opt)) return build_csr(ctx, fn, opt, X, 0, NULL, NULL, out);
  int64_t n = X->rows, p = X->cols;
  double *scratch, *square;
  double *x = carve(ctx, fn, n, p, false, &scratch, &square);
  if (!x) return GSTAT_ENOMEM;
  gstat_i_staged hx; /* distances by the host's GEMM: device data through a host copy */
  st = gstat_i_sched_stage(ctx, fn, "X", X, true, &hx);
  if (st != GSTAT_OK) return st;
  gstat_i_dense_load(&hx.m, 0, GSTAT_F64, x, n > 0 ? n : 1);
  gstat_i_sched_release(ctx, &hx);
  return build_csr(ctx, fn, opt, X, 0, x, scratch, out);
}

static gstat_status dense_host(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                               const gstat_affinity_options *opt, const gstat_matrix *A);

gstat_status gstat_affinity_dense(gstat_ctx *ctx, const gstat_matrix *X,
                                  const gstat_affinity_options *opt, gstat_matrix *A) {
  static const char fn[] = "affinity_dense";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_status st = check_args(ctx, fn, X, opt);
  if (st != GSTAT_OK) return st;
  if (!A) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: A is NULL", fn);
  st = gstat_i_check_matrix(ctx, fn, "A", A);
  if (st != GSTAT_OK) return st;
  int64_t batch = X->batch, n = X->rows;
  if (A->batch != batch || A->rows != n || A->cols != n)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: A is %lld x %lld x %lld, expected %lld x %lld x %lld", fn,
                        (long long)A->batch, (long long)A->rows, (long long)A->cols,
                        (long long)batch, (long long)n, (long long)n);
  st = gstat_i_check_alias(ctx, fn, "A", A, "X", X, false);
  if (st != GSTAT_OK || batch == 0 || n == 0) return st;
  /* no device primitive for these yet: host copies of device X and A (kNN
   * searches X where it lies) */
  gstat_i_staged hx = {0}, ha = {0};
  if (!is_knn(opt)) st = gstat_i_sched_stage(ctx, fn, "X", X, true, &hx);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "A", A, false, &ha);
  if (st == GSTAT_OK) st = dense_host(ctx, fn, is_knn(opt) ? X : &hx.m, opt, &ha.m);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "A", &ha, A);
  gstat_i_sched_release(ctx, &ha);
  gstat_i_sched_release(ctx, &hx);
  return st;
}

/* gstat_affinity_dense with A in host memory (X too, except for kNN). */
static gstat_status dense_host(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                               const gstat_affinity_options *opt, const gstat_matrix *A) {
  int64_t batch = X->batch, n = X->rows, p = X->cols;
  gstat_status st = GSTAT_OK;
  /* double A with unit stride one way (either way: A is symmetric) takes the
   * RBF weights directly, with no n x n workspace and no copy */
  bool direct = A->dtype == GSTAT_F64 && (A->row_stride == 1 || A->col_stride == 1);
  int64_t ald = A->row_stride == 1 ? A->col_stride : A->row_stride;
  double *scratch, *D;
  double *x = carve(ctx, fn, n, p, !(direct && opt->kind == GSTAT_AFFINITY_RBF), &scratch, &D);
  if (!x) return GSTAT_ENOMEM;
  for (int64_t b = 0; b < batch; b++) {
    if (!is_knn(opt)) gstat_i_dense_load(X, b, GSTAT_F64, x, n);
    if (opt->kind == GSTAT_AFFINITY_RBF) {
      double *out = direct ? (double *)gstat_i_elem(A, b, 0, 0) : D;
      int64_t ld = direct ? ald : n;
      build bd = {.o = opt,
                  .n = n,
                  .gamma = opt->gamma > 0 ? opt->gamma : 1.0 / (double)(p > 0 ? p : 1),
                  .dense = out,
                  .ld = ld};
      st = gstat_i_pairwise_rows(ctx, n, p, x, scratch, rbf_row, &bd);
      if (st != GSTAT_OK) return st;
      mirror_upper(out, n, ld,
                   gstat_i_loop_threads(ctx, n / 64 + 1, 0, 8.0 * (double)n * (double)n));
      if (direct) continue;
    } else {
      gstat_csr *c = NULL;
      st = build_csr(ctx, fn, opt, X, b, x, scratch, &c);
      if (st != GSTAT_OK) return st;
      gstat_i_csr_in in = {n, 0, c->offsets, c->indices, c->weights};
      gstat_i_csr_to_dense(&in, GSTAT_SYM_CHECK, GSTAT_LOOPS_KEEP, D);
      gstat_csr_free(c);
    }
    gstat_i_dense_store(GSTAT_F64, D, n, A, b);
  }
  return GSTAT_OK;
}
