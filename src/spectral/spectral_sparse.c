/* One large CSR graph: the smallest eigenpairs of its Laplacian operator by
 * the iterative solver of graph/sparse_eigs.h (no dense matrix), then the
 * same embedding and assignment as the dense engine. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/laplacian_op.h"
#include "graph/sparse_eigs.h"
#include "spectral/spectral_sparse.h"
#include "backend/dense.h"
#include "backend/sched.h"

/* The smallest eigenpairs of the operator's Laplacian: on the device where
 * the scheduler plans it there (the basis in device memory, only the small
 * projected problems on the host), else on the host; a device failure that
 * the host can take (out of memory, a backend error) reruns on the host. */
static gstat_status solve_pairs(gstat_ctx *ctx, const char *fn, gstat_laplacian_op *op,
                                gstat_i_eigs_options *eo, double *w, double *V,
                                gstat_i_eigs_report *rep) {
  int64_t n = gstat_laplacian_op_size(op);
  double *p = malloc(sizeof(double) * (size_t)(n + 1));
  gstat_i_csr_lap A;
  gstat_i_sched_lap plan;
  gstat_status st = GSTAT_EUNSUPPORTED;
  bool search = eo->n_known < eo->k; /* else the known pairs are all: no plan */
  if (search && p && gstat_i_laplacian_op_csr(op, p, &A) &&
      gstat_i_sched_csr_lap_plan(ctx, fn, &A, &plan) == GSTAT_OK) {
    eo->where = &plan.where;
    st = gstat_i_sparse_eigs(ctx, n, gstat_i_sched_csr_lap_apply, &plan, eo, w, V, NULL, rep);
    gstat_i_sched_csr_lap_release(&plan);
    eo->where = NULL;
    if (st == GSTAT_ENOMEM || st == GSTAT_EBACKEND || st == GSTAT_EUNSUPPORTED)
      ctx->last_error[0] = '\0';
  }
  free(p);
  if (st != GSTAT_ENOMEM && st != GSTAT_EBACKEND && st != GSTAT_EUNSUPPORTED) return st;
  return gstat_i_sparse_eigs(ctx, n, gstat_i_laplacian_apply, op, eo, w, V, NULL, rep);
}

/* Graphs from this many nodes are solved renumbered breadth-first: the
 * products then gather with locality (bench/README.md, "Breadth-first
 * numbering"); below, the block stays in cache anyway. */
enum { RENUMBER_FROM_N = 4096 };

/* Rows of the n x cols block M moved from position i to order[i]
 * (to_caller) or from order[i] to i; tmp: n doubles. The moves on nt
 * threads (a permutation: no two write one entry). */
static void reorder_rows(int64_t n, int64_t cols, const int64_t *order, bool to_caller, double *M,
                         double *tmp, int nt) {
  for (int64_t c = 0; c < cols; c++) {
    double *col = M + c * n;
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; i++) {
        if (to_caller)
          tmp[order[i]] = col[i];
        else
          tmp[i] = col[order[i]];
      }
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; i++) col[i] = tmp[i];
    }
    /* ties in magnitude: the caller's first entry decides, as documented */
    if (to_caller) gstat_i_fix_sign(col, n);
  }
}

/* solve_pairs on the operator renumbered for locality when the solver
 * searches a large CSR graph (the known vectors taken into its numbering,
 * the found ones brought back); as it is otherwise, or when renumbering
 * has no memory. */
static gstat_status lowest_pairs(gstat_ctx *ctx, const char *fn, gstat_laplacian_op *op,
                                 gstat_i_eigs_options *eo, double *w, double *V,
                                 gstat_i_eigs_report *rep) {
  const int64_t n = gstat_laplacian_op_size(op);
  gstat_laplacian_op *local = NULL;
  int64_t *order = NULL;
  double *known = NULL, *tmp = NULL;
  if (eo->n_known < eo->k && n >= RENUMBER_FROM_N &&
      gstat_i_laplacian_op_renumbered(ctx, fn, op, &local, &order) == GSTAT_OK) {
    tmp = malloc(sizeof(double) * (size_t)(n * (eo->n_known + 1)));
    known = tmp ? tmp + n : NULL;
  }
  ctx->last_error[0] = '\0';
  if (!tmp) {
    gstat_laplacian_op_destroy(local);
    free(order);
    return solve_pairs(ctx, fn, op, eo, w, V, rep);
  }
  const double *caller_known = eo->known;
  int nt = gstat_i_loop_threads(ctx, n, 0.0, 24.0 * (double)n * (double)eo->k);
  if (eo->n_known > 0) {
    memcpy(known, caller_known, sizeof(double) * (size_t)(n * eo->n_known));
    reorder_rows(n, eo->n_known, order, false, known, tmp, nt);
    eo->known = known;
  }
  gstat_status st = solve_pairs(ctx, fn, local, eo, w, V, rep);
  eo->known = caller_known;
  reorder_rows(n, eo->k, order, true, V, tmp, nt);
  gstat_laplacian_op_destroy(local);
  free(order);
  free(tmp);
  return st;
}

static int by_size_desc(const void *a, const void *b) {
  const int64_t *x = a, *y = b; /* (size, label) */
  if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The null vectors of the components col_of maps to a column (-1: none):
 * sqrt(d_i) on a component's nodes for the normalized kinds (L D^1/2 1_c =
 * 0), 1 for D - A; a component of degree 0 gets its indicator. Each column
 * normalized; U (n x cols) zero elsewhere. Two passes over the nodes. */
static void null_vectors(int64_t n, int64_t cols, const double *d, bool normalized,
                         const int64_t *lab, const int64_t *col_of, double *U, double *sum) {
  memset(U, 0, sizeof(double) * (size_t)(n * cols));
  for (int64_t c = 0; c < 2 * cols; c++) sum[c] = 0; /* squares, then node counts */
  for (int64_t i = 0; i < n; i++) {
    int64_t c = col_of[lab[i]];
    if (c < 0) continue;
    double u = normalized ? sqrt(d[i]) : 1;
    U[i + c * n] = u;
    sum[c] += u * u;
    sum[cols + c] += 1;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t c = col_of[lab[i]];
    if (c < 0) continue;
    double *u = U + i + c * n;
    *u = sum[c] > 0 ? *u / sqrt(sum[c]) : 1 / sqrt(sum[cols + c]);
  }
}

/* The Laplacian's null space, known exactly (eigenvalue 0 once per
 * connected component): the null vectors of the `cols` largest components
 * (ties: the first found) into U (n x cols), checked against rounding (1e-10
 * of the spectral scale `upper` a column) by one product with a combination
 * of them (y: n): the columns have disjoint supports, so a bad one shows
 * unless others cancel it exactly. Returns the columns given the solver (0
 * when the check or an allocation fails: it then finds them itself). */
static int64_t known_null_space(gstat_ctx *ctx, gstat_laplacian_op *op, bool normalized,
                                const int64_t *lab, int64_t comps, int64_t cols, double upper,
                                double *U, double *y) {
  int64_t n = gstat_laplacian_op_size(op);
  const double *d = gstat_laplacian_op_degrees(op);
  int64_t *size = calloc((size_t)(3 * comps), sizeof(int64_t));
  double *sum = malloc(sizeof(double) * (size_t)(2 * cols + 1));
  if (!size || !sum) {
    free(size);
    free(sum);
    return 0;
  }
  int64_t *col_of = size + 2 * comps;
  for (int64_t c = 0; c < comps; c++) size[2 * c + 1] = c, col_of[c] = -1;
  for (int64_t i = 0; i < n; i++) size[2 * lab[i]]++;
  qsort(size, (size_t)comps, 2 * sizeof(int64_t), by_size_desc);
  for (int64_t c = 0; c < cols; c++) col_of[size[2 * c + 1]] = c;
  null_vectors(n, cols, d, normalized, lab, col_of, U, sum);
  /* v = sum_c g_c u_c, weights distinct and irrational: ||L v|| <= sum g_c ||L u_c|| */
  double *v = U + n * cols, gsum = 0; /* the caller's room after U */
  for (int64_t c = 0; c < cols; c++) gsum += sqrt((double)c + 2);
  for (int64_t i = 0; i < n; i++) {
    int64_t c = col_of[lab[i]];
    v[i] = c < 0 ? 0 : sqrt((double)c + 2) * U[i + c * n];
  }
  free(size);
  free(sum);
  if (gstat_i_laplacian_apply(ctx, op, n, 1, v, y) != GSTAT_OK) {
    ctx->last_error[0] = '\0';
    return 0;
  }
  double t = 0;
  for (int64_t i = 0; i < n; i++) t += y[i] * y[i];
  return sqrt(t) <= 1e-10 * upper * gsum ? cols : 0;
}

gstat_status gstat_i_sc_sparse(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                               const gstat_spectral_options *o, int64_t k, int64_t *labels,
                               double *eig_out, double *emb_out, bool embed_only, gstat_i_sc_rec *r,
                               gstat_i_eigs_report *rep) {
  gstat_laplacian_op *op = NULL;
  int64_t *lab = NULL;
  double *V = NULL, *scratch = NULL, *known = NULL;
  gstat_status st = gstat_i_laplacian_op_new(ctx, fn, G,
                                             o->laplacian == GSTAT_LAPLACIAN_UNNORMALIZED
                                                 ? GSTAT_LAPLACIAN_UNNORMALIZED
                                                 : GSTAT_LAPLACIAN_SYMMETRIC,
                                             &op);
  if (st != GSTAT_OK) return st;
  const double *d = gstat_laplacian_op_degrees(op);
  int64_t n = gstat_laplacian_op_size(op), m = gstat_i_sc_eig_count(o, n, k);
  int64_t kmax = k > 0 ? k : (o->max_clusters < n ? o->max_clusters : n);
  int64_t dmax = o->n_components > 0 ? o->n_components : kmax;
  size_t ts = gstat_i_sc_thread_scratch(n, kmax, dmax);
  lab = malloc(sizeof(int64_t) * (size_t)(2 * n + 1));
  V = malloc(sizeof(double) * (size_t)(n * m + m + 1));
  scratch = malloc(sizeof(double) * ts);
  if (!lab || !V || !scratch) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for %lld eigenvectors of %lld nodes",
                      fn, (long long)m, (long long)n);
    goto done;
  }
  double *w = V + n * m;
  r->comps = gstat_i_laplacian_op_components(ctx, op, lab, lab + n);
  if (o->disconnected == GSTAT_DISCONNECTED_REJECT && r->comps > 1)
    r->why = WHY_REJECT;
  else if (k > 0 && r->comps > k && o->disconnected != GSTAT_DISCONNECTED_PROCEED)
    r->why = WHY_SPLIT;
  if (r->why != WHY_OK) goto fail;

  double maxdeg = 0;
  for (int64_t i = 0; i < n; i++) maxdeg = fmax(maxdeg, d[i]);
  bool normalized = o->laplacian != GSTAT_LAPLACIAN_UNNORMALIZED;
  gstat_i_eigs_options eo = {0};
  eo.k = m;
  eo.tol = o->eig_tol;
  eo.max_iter = o->eig_max_iter;
  eo.seed = o->seed;
  eo.upper = normalized ? 2.0 : 2 * maxdeg;
  /* the components' null vectors are known: the solver searches the rest */
  int64_t cols = r->comps < m ? r->comps : m;
  known = malloc(sizeof(double) * (size_t)(n * (cols + 2) + 1));
  if (known && eo.upper > 0)
    eo.n_known = known_null_space(ctx, op, normalized, lab, r->comps, cols, eo.upper, known,
                                  known + n * (cols + 1));
  eo.known = known;
  int64_t rest = m - eo.n_known;
  eo.block = rest < 16 ? rest : 16;
  if (o->solver == GSTAT_EIGEN_LANCZOS) { /* the caller expects simple eigenvalues */
    eo.block = 1;
    eo.method = GSTAT_I_EIGS_BLOCK_LANCZOS;
  }
  /* the pairs after the null space come in a cluster, one per component
   * (each one's smallest nonzero eigenvalue): the basis spans it
   * (bench/README.md, "A cluster above the null space") */
  if (eo.n_known > 0 && r->comps > rest) eo.cluster = r->comps;
  /* without them, a block smaller than the multiplicity of 0 misses copies */
  if (eo.n_known == 0 && r->comps > eo.block) eo.block = cols;
  /* A dense operator costs one pass over n^2 entries per product of up to 8
   * vectors: count block products. Lanczos needs far fewer than Davidson's
   * degree-16 filters (bench/README.md, "Measurements moved from code
   * comments"). */
  if (G->format == GSTAT_GRAPH_DENSE) eo.method = GSTAT_I_EIGS_BLOCK_LANCZOS;
  gstat_status es = lowest_pairs(ctx, fn, op, &eo, w, V, rep);
  if (es != GSTAT_OK && es != GSTAT_ENOCONV) {
    st = es;
    goto done;
  }
  r->tick = gstat_i_sc_km_tick;
  r->tick_arg = ctx;
  r->runs = gstat_i_kmeans_runs;
  gstat_i_sc_assign(o, n, k, V, w, d, r, labels, eig_out, emb_out, embed_only, scratch);
  if (r->why != WHY_OK) goto fail;
  if (es == GSTAT_ENOCONV)
    st = gstat_i_fail(ctx, GSTAT_ENOCONV,
                      "%s: the sparse eigensolver did not converge in %lld iterations (largest "
                      "residual %g; results hold its best estimates)",
                      fn, (long long)rep->iterations, rep->max_residual);
  goto done;
fail:
  for (int64_t i = 0; labels && i < n; i++) labels[i] = -1;
  st = gstat_i_sc_failure(ctx, fn, -1, r, k, o->max_clusters);
done:
  gstat_laplacian_op_destroy(op);
  free(known);
  free(lab);
  free(V);
  free(scratch);
  return st;
}
