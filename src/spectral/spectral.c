/* Public spectral entry points: options, one graph (dense engine or the
 * sparse path), embeddings, batches, and the result objects. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "graph/graph_internal.h"
#include "backend/dense.h"
#include "spectral/spectral_internal.h"
#include "spectral/spectral_sparse.h"

void gstat_spectral_options_init(gstat_spectral_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->max_clusters = 10;
  opt->laplacian = GSTAT_LAPLACIAN_RANDOM_WALK;
  opt->assign = GSTAT_ASSIGN_KMEANS;
  opt->n_init = 10;
  opt->max_iter = 300;
  opt->tol = 1e-4;
  opt->disconnected = GSTAT_DISCONNECTED_AUTO;
  opt->solver = GSTAT_EIGEN_AUTO;
  opt->dense_limit = 2048;
  opt->eig_tol = 1e-8;
}

gstat_status gstat_i_sc_check_options(gstat_ctx *ctx, const char *fn,
                                      const gstat_spectral_options *o) {
#define BAD(cond, ...) \
  if (cond) return gstat_i_fail(ctx, GSTAT_EINVAL, __VA_ARGS__)
  BAD(o->n_clusters < 0, "%s: opt.n_clusters=%lld must be >= 1 (or 0: choose k by the eigengap)",
      fn, (long long)o->n_clusters);
  BAD(o->max_clusters < 1, "%s: opt.max_clusters=%lld must be >= 1", fn,
      (long long)o->max_clusters);
  BAD(o->n_components < 0, "%s: opt.n_components=%lld must be >= 0", fn,
      (long long)o->n_components);
  BAD(o->laplacian < GSTAT_LAPLACIAN_UNNORMALIZED || o->laplacian > GSTAT_LAPLACIAN_RANDOM_WALK,
      "%s: opt.laplacian=%d is not a gstat_laplacian_kind", fn, (int)o->laplacian);
  BAD(o->assign != GSTAT_ASSIGN_KMEANS && o->assign != GSTAT_ASSIGN_CLUSTER_QR,
      "%s: opt.assign=%d is not a gstat_assign_labels", fn, (int)o->assign);
  BAD(o->assign == GSTAT_ASSIGN_CLUSTER_QR && o->n_components > 0,
      "%s: cluster-QR uses k embedding columns: leave opt.n_components at 0", fn);
  BAD(o->n_init < 1 || o->n_init > GSTAT_SPECTRAL_MAX_N_INIT,
      "%s: opt.n_init=%lld must be in [1, %d]", fn, (long long)o->n_init,
      GSTAT_SPECTRAL_MAX_N_INIT);
  BAD(o->max_iter < 1 || o->max_iter > GSTAT_SPECTRAL_MAX_ITER,
      "%s: opt.max_iter=%lld must be in [1, %d]", fn, (long long)o->max_iter,
      GSTAT_SPECTRAL_MAX_ITER);
  BAD(!(o->tol >= 0 && isfinite(o->tol)), "%s: opt.tol=%g must be >= 0 and finite", fn, o->tol);
  BAD(o->disconnected < GSTAT_DISCONNECTED_AUTO || o->disconnected > GSTAT_DISCONNECTED_PROCEED,
      "%s: opt.disconnected=%d is not a gstat_disconnected", fn, (int)o->disconnected);
  BAD(o->solver < GSTAT_EIGEN_AUTO || o->solver > GSTAT_EIGEN_LANCZOS,
      "%s: opt.solver=%d is not a gstat_eigen_solver", fn, (int)o->solver);
  BAD(o->dense_limit < 0, "%s: opt.dense_limit=%lld must be >= 0", fn, (long long)o->dense_limit);
  BAD(!(o->eig_tol >= 0 && isfinite(o->eig_tol)), "%s: opt.eig_tol=%g must be >= 0 and finite", fn,
      o->eig_tol);
  BAD(o->eig_max_iter < 0 || o->eig_max_iter > GSTAT_SPECTRAL_MAX_EIG_ITER,
      "%s: opt.eig_max_iter=%lld must be in [0, %d]", fn, (long long)o->eig_max_iter,
      GSTAT_SPECTRAL_MAX_EIG_ITER);
#undef BAD
  return GSTAT_OK;
}

/* ---- results -------------------------------------------------------------------- */

static gstat_spectral_result *result_new(int64_t n, int64_t neig, int64_t dmax) {
  size_t doubles = (size_t)(neig + n * dmax + 1);
  gstat_spectral_result *r = calloc(1, sizeof *r + 64 + doubles * sizeof(double));
  if (!r) return NULL;
  double *q = (double *)((char *)r + ((sizeof *r + 63) / 64) * 64);
  r->n = n;
  r->n_eigenvalues = neig;
  r->eigenvalues = q;
  r->embedding = q + neig;
  return r;
}

void gstat_spectral_result_free(gstat_spectral_result *res) {
  free(res);
}

void gstat_spectral_batch_result_free(gstat_spectral_batch_result *res) {
  free(res);
}

/* ---- one graph -------------------------------------------------------------------- */

static gstat_status check_single(gstat_ctx *ctx, const char *fn, const gstat_graph *G) {
  gstat_status st = gstat_i_check_graph(ctx, fn, G);
  if (st != GSTAT_OK) return st;
  if (G->format == GSTAT_GRAPH_DENSE && G->adjacency.batch != 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: G.adjacency holds %lld graphs; this function takes one (see "
                        "gstat_spectral_clustering_batch)",
                        fn, (long long)G->adjacency.batch);
  return GSTAT_OK;
}

static int64_t nodes(const gstat_graph *G) {
  return G->format == GSTAT_GRAPH_DENSE ? G->adjacency.rows : G->csr.n;
}

/* AUTO's crossover for a CSR graph below dense_limit: the iterative solver
 * when nnz * SPARSE_PER_NNZ < n^3. Its cost grows with the stored entries,
 * the dense solve's with n^3 whatever the density: kNN graphs (~14 entries a
 * node) go sparse from about 300 nodes, graphs with a third of the pairs
 * stay dense. Measured on the 2-core Xeon; bench/README.md, "Dense or
 * iterative eigensolver" and "Measurements moved from code comments". */
#define SPARSE_PER_NNZ 6000.0

static bool use_sparse(const gstat_graph *G, const gstat_spectral_options *o) {
  if (o->solver == GSTAT_EIGEN_SPARSE || o->solver == GSTAT_EIGEN_LANCZOS) return true;
  if (o->solver != GSTAT_EIGEN_AUTO) return false;
  /* a full eigh costs O(n^3) for the few vectors we need: large graphs,
   * dense ones included (as a CSR copy), go to the iterative solver */
  int64_t n = nodes(G);
  if (n > o->dense_limit) return true;
  if (G->format != GSTAT_GRAPH_CSR) return false; /* n^2 entries: dense below dense_limit */
  double cube = (double)n * (double)n * (double)n;
  return (double)G->csr.nnz * SPARSE_PER_NNZ < cube;
}

/* One graph through the dense engine (a batch of one) or the sparse path. */
static gstat_status run_single(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                               const gstat_spectral_options *o, int64_t *labels, double *eig,
                               double *emb, bool embed_only, gstat_i_sc_rec *r,
                               gstat_i_eigs_report *rep, bool *sparse) {
  int64_t n = nodes(G), k = o->n_clusters;
  memset(r, 0, sizeof *r);
  *sparse = use_sparse(G, o);
  if (*sparse) {
    if (k > n)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: n_clusters=%lld exceeds the graph's %lld nodes",
                          fn, (long long)k, (long long)n);
    int64_t dim = k > 0 ? (o->n_components > 0 ? o->n_components : k) : o->n_components;
    if (dim + (o->drop_first != 0) > n)
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %lld embedding columns need more than the graph's %lld nodes", fn,
                          (long long)dim, (long long)n);
    gstat_graph H; /* the operator is formed on the host */
    gstat_i_staged copy;
    gstat_status st = gstat_i_graph_on_host(ctx, fn, G, &H, &copy);
    if (st == GSTAT_OK)
      st = gstat_i_sc_sparse(ctx, fn, &H, o, k, labels, eig, emb, embed_only, r, rep);
    gstat_i_sched_release(ctx, &copy);
    return st;
  }
  /* one device graph: as a batch of one on the device engine where that takes it
   * whole (labels only; at most 1024 nodes, k-means, float32/64: spectral.h),
   * else the Laplacian and the eigh in device memory, the rest on the host */
  bool device = G->format == GSTAT_GRAPH_DENSE && G->adjacency.location == GSTAT_CUDA;
  bool whole =
      !emb && n <= 1024 && o->assign == GSTAT_ASSIGN_KMEANS && G->adjacency.dtype != GSTAT_BF16;
  if (device && !whole) {
    bool handled;
    gstat_status st =
        gstat_i_sc_device_one(ctx, fn, G, o, labels, eig, emb, embed_only, r, &handled);
    if (handled) return st;
  }
  int64_t node0[2] = {0, n}, eoff[2] = {0, gstat_i_sc_eig_count(o, n, k)};
  gstat_graph_batch b;
  memset(&b, 0, sizeof b);
  b.format = G->format;
  b.count = 1;
  b.symmetrize = G->symmetrize;
  b.self_loops = G->self_loops;
  if (G->format == GSTAT_GRAPH_CSR) {
    b.node_offsets = node0;
    b.offsets = G->csr.offsets;
    b.indices = G->csr.indices;
    b.weights = G->csr.weights;
  } else {
    b.adjacency = G->adjacency;
  }
  gstat_i_sc_batch B = {&b, node0, true};
  gstat_status gst[1];
  int64_t kk[1], comps[1], iters[1], dim = 0;
  double inertia[1];
  gstat_i_sc_out out = {labels, kk,  comps, inertia, iters,      gst,
                        eoff,   eig, emb,   &dim,    embed_only, false};
  gstat_status st;
  gstat_i_staged copy = {0};
  if (device && whole) {
    st = gstat_i_sc_device(ctx, fn, &B, NULL, o, &out);
  } else {
    st = gstat_i_sched_stage(ctx, fn, "G.adjacency", &G->adjacency, true, &copy);
    if (st == GSTAT_OK && G->format == GSTAT_GRAPH_DENSE) b.adjacency = copy.m;
    if (st == GSTAT_OK) st = gstat_i_sc_dense(ctx, fn, &B, NULL, o, &out);
    gstat_i_sched_release(ctx, &copy);
  }
  r->k = kk[0];
  r->comps = comps[0];
  r->inertia = inertia[0];
  r->iters = iters[0];
  r->dim = dim;
  return st;
}

gstat_status gstat_spectral_clustering(gstat_ctx *ctx, const gstat_graph *G,
                                       const gstat_spectral_options *opt, int64_t *labels,
                                       gstat_spectral_result **res) {
  static const char fn[] = "spectral_clustering";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (res) *res = NULL;
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  if (opt) o = *opt;
  gstat_status st = check_single(ctx, fn, G);
  if (st == GSTAT_OK) st = gstat_i_sc_check_options(ctx, fn, &o);
  if (st != GSTAT_OK) return st;
  int64_t n = nodes(G);
  if (!labels && n > 0) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: labels is NULL", fn);
  int64_t kmax = o.n_clusters > 0 ? o.n_clusters : (o.max_clusters < n ? o.max_clusters : n);
  int64_t dmax = o.n_components > 0 ? o.n_components : kmax;
  gstat_spectral_result *r = NULL;
  if (res) {
    r = result_new(n, gstat_i_sc_eig_count(&o, n, o.n_clusters), n > 0 ? dmax : 0);
    if (!r) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the result", fn);
  }
  gstat_i_sc_rec rec;
  gstat_i_eigs_report rep;
  memset(&rep, 0, sizeof rep);
  bool sparse = false;
  st = run_single(ctx, fn, G, &o, labels, r ? r->eigenvalues : NULL, r ? r->embedding : NULL, false,
                  &rec, &rep, &sparse);
  if (r && (st == GSTAT_OK || st == GSTAT_ENOCONV)) {
    r->n_clusters = rec.k;
    r->n_components = rec.dim;
    r->graph_components = rec.comps;
    r->inertia = rec.inertia;
    r->kmeans_iterations = rec.iters;
    r->used_sparse = sparse;
    r->eig_iterations = rep.iterations;
    r->eig_max_residual = rep.max_residual;
    *res = r;
    r = NULL;
  }
  free(r);
  return st;
}

gstat_status gstat_spectral_embedding(gstat_ctx *ctx, const gstat_graph *G,
                                      const gstat_spectral_options *opt, gstat_matrix *embedding,
                                      double *eigenvalues) {
  static const char fn[] = "spectral_embedding";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  if (opt) o = *opt;
  gstat_status st = check_single(ctx, fn, G);
  if (st == GSTAT_OK) st = gstat_i_sc_check_options(ctx, fn, &o);
  if (st != GSTAT_OK) return st;
  int64_t dim = o.n_components > 0 ? o.n_components : o.n_clusters;
  if (dim < 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: set opt.n_components (or opt.n_clusters) to the "
                        "number of embedding columns",
                        fn);
  o.n_components = dim;
  o.n_clusters = dim; /* components beyond the columns: no defined embedding */
  o.assign = GSTAT_ASSIGN_KMEANS;
  int64_t n = nodes(G);
  if (!embedding) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: embedding is NULL", fn);
  st = gstat_i_check_matrix(ctx, fn, "embedding", embedding);
  if (st != GSTAT_OK) return st;
  if (embedding->batch != 1 || embedding->rows != n || embedding->cols != dim)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: embedding is %lld x %lld x %lld, expected 1 x %lld x %lld", fn,
                        (long long)embedding->batch, (long long)embedding->rows,
                        (long long)embedding->cols, (long long)n, (long long)dim);
  if (n == 0) return GSTAT_OK;
  if (dim + (o.drop_first != 0) > n)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %lld embedding columns%s need more than the graph's %lld nodes", fn,
                        (long long)dim, o.drop_first ? " + the dropped first" : "", (long long)n);
  int64_t neig = gstat_i_sc_eig_count(&o, n, dim);
  double *E = malloc(sizeof(double) * (size_t)(n * dim + neig + 1));
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)n);
  if (!E || !lab) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate a %lld x %lld embedding", fn,
                      (long long)n, (long long)dim);
    goto done;
  }
  gstat_i_sc_rec rec;
  gstat_i_eigs_report rep;
  bool sparse;
  st = run_single(ctx, fn, G, &o, lab, E + n * dim, E, true, &rec, &rep, &sparse);
  if (st != GSTAT_OK && st != GSTAT_ENOCONV) goto done;
  /* E is n x dim row-major = dim x n column-major: store through a transposed view */
  gstat_matrix T = *embedding;
  T.rows = dim;
  T.cols = n;
  T.row_stride = embedding->col_stride;
  T.col_stride = embedding->row_stride;
  gstat_status stored = gstat_i_sched_store(ctx, fn, "embedding", GSTAT_F64, E, dim, &T, 0);
  if (stored != GSTAT_OK) {
    st = stored;
    goto done;
  }
  if (eigenvalues) memcpy(eigenvalues, E + n * dim, sizeof(double) * (size_t)neig);
done:
  free(E);
  free(lab);
  return st;
}

/* ---- batches ---------------------------------------------------------------------- */

static gstat_status check_batch(gstat_ctx *ctx, const char *fn, const gstat_graph_batch *Gs,
                                int64_t *node0) {
  if (Gs->format == GSTAT_GRAPH_CSR) {
    if (!Gs->node_offsets)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.node_offsets is NULL", fn);
    if (Gs->node_offsets[0] != 0)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.node_offsets[0]=%lld must be 0", fn,
                          (long long)Gs->node_offsets[0]);
    for (int64_t g = 0; g < Gs->count; g++)
      if (Gs->node_offsets[g + 1] < Gs->node_offsets[g])
        return gstat_i_fail(ctx, GSTAT_EINVAL,
                            "%s: Gs.node_offsets[%lld]=%lld is below node_offsets[%lld]=%lld", fn,
                            (long long)(g + 1), (long long)Gs->node_offsets[g + 1], (long long)g,
                            (long long)Gs->node_offsets[g]);
    int64_t total = Gs->node_offsets[Gs->count];
    if (!Gs->offsets) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.offsets is NULL", fn);
    if (Gs->offsets[0] != 0)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.offsets[0]=%lld must be 0", fn,
                          (long long)Gs->offsets[0]);
    if (Gs->offsets[total] > 0 && !Gs->indices)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.indices is NULL", fn);
    memcpy(node0, Gs->node_offsets, sizeof(int64_t) * (size_t)(Gs->count + 1));
    return GSTAT_OK;
  }
  if (Gs->format != GSTAT_GRAPH_DENSE)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.format=%d is not a gstat_graph_format", fn,
                        (int)Gs->format);
  const gstat_matrix *M = &Gs->adjacency;
  gstat_status st = gstat_i_check_matrix(ctx, fn, "Gs.adjacency", M);
  if (st != GSTAT_OK) return st;
  if (M->rows != M->cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.adjacency is %lld x %lld, not square", fn,
                        (long long)M->rows, (long long)M->cols);
  if (M->batch != Gs->count)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: Gs.adjacency holds %lld matrices for Gs.count=%lld graphs", fn,
                        (long long)M->batch, (long long)Gs->count);
  node0[0] = 0;
  for (int64_t g = 0; g < Gs->count; g++) {
    int64_t n = Gs->sizes ? Gs->sizes[g] : M->rows;
    if (n < 0 || n > M->rows)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.sizes[%lld]=%lld is outside [0, %lld]", fn,
                          (long long)g, (long long)n, (long long)M->rows);
    node0[g + 1] = node0[g] + n;
  }
  return GSTAT_OK;
}

gstat_status gstat_spectral_clustering_batch(gstat_ctx *ctx, const gstat_graph_batch *Gs,
                                             const int64_t *n_clusters,
                                             const gstat_spectral_options *opt, int64_t *labels,
                                             gstat_spectral_batch_result **res) {
  static const char fn[] = "spectral_batch";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (res) *res = NULL;
  if (!Gs) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs is NULL", fn);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  if (opt) o = *opt;
  gstat_status st = gstat_i_sc_check_options(ctx, fn, &o);
  if (st != GSTAT_OK) return st;
  if (o.solver == GSTAT_EIGEN_SPARSE || o.solver == GSTAT_EIGEN_LANCZOS)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: opt.solver=SPARSE and LANCZOS are for one large graph; batches "
                        "use the dense solver",
                        fn);
  if (Gs->count < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.count=%lld must be >= 0", fn,
                        (long long)Gs->count);
  if (Gs->symmetrize < GSTAT_SYM_CHECK || Gs->symmetrize > GSTAT_SYM_MIN)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.symmetrize=%d is not a gstat_symmetrize", fn,
                        (int)Gs->symmetrize);
  if (Gs->self_loops != GSTAT_LOOPS_DROP && Gs->self_loops != GSTAT_LOOPS_KEEP)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: Gs.self_loops=%d is not a gstat_self_loops", fn,
                        (int)Gs->self_loops);
  int64_t count = Gs->count;
  gstat_spectral_batch_result *r = NULL;
  int64_t *node0 = malloc(sizeof(int64_t) * (size_t)(count + 1));
  if (!node0)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for %lld graphs", fn,
                        (long long)count);
  st = check_batch(ctx, fn, Gs, node0);
  if (st != GSTAT_OK) goto done;
  if (!labels && node0[count] > 0) {
    st = gstat_i_fail(ctx, GSTAT_EINVAL, "%s: labels is NULL", fn);
    goto done;
  }
  if (res) {
    int64_t neig = 0;
    for (int64_t g = 0; g < count; g++)
      neig += gstat_i_sc_eig_count(&o, node0[g + 1] - node0[g],
                                   n_clusters ? n_clusters[g] : o.n_clusters);
    size_t words = (size_t)(5 * count + 1) + (size_t)(count + 1) + (size_t)neig;
    r = calloc(1, sizeof *r + 64 + words * 8);
    if (!r) {
      st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the result", fn);
      goto done;
    }
    char *q = (char *)r + ((sizeof *r + 63) / 64) * 64;
    r->count = count;
    r->n_clusters = (int64_t *)q, q += 8 * (size_t)count;
    r->graph_components = (int64_t *)q, q += 8 * (size_t)count;
    r->inertia = (double *)q, q += 8 * (size_t)count;
    r->status = (gstat_status *)q, q += 8 * (size_t)count;
    r->eig_offsets = (int64_t *)q, q += 8 * (size_t)(count + 1);
    r->eigenvalues = (double *)q;
    r->eig_offsets[0] = 0;
    for (int64_t g = 0; g < count; g++)
      r->eig_offsets[g + 1] =
          r->eig_offsets[g] + gstat_i_sc_eig_count(&o, node0[g + 1] - node0[g],
                                                   n_clusters ? n_clusters[g] : o.n_clusters);
  }
  gstat_i_sc_batch B = {Gs, node0, false};
  gstat_i_sc_out out = {labels,
                        r ? r->n_clusters : NULL,
                        r ? r->graph_components : NULL,
                        r ? r->inertia : NULL,
                        NULL,
                        r ? r->status : NULL,
                        r ? r->eig_offsets : NULL,
                        r ? r->eigenvalues : NULL,
                        NULL,
                        NULL,
                        false,
                        false};
  /* dense graphs in CUDA device memory: the GPU engine (or the host one on a copy) */
  if (Gs->format == GSTAT_GRAPH_DENSE && Gs->adjacency.location == GSTAT_CUDA)
    st = gstat_i_sc_device(ctx, fn, &B, n_clusters, &o, &out);
  else
    st = gstat_i_sc_dense(ctx, fn, &B, n_clusters, &o, &out);
  /* handed over once the graphs ran, whatever their own statuses */
  if (!out.ran) {
    free(r);
    r = NULL;
  }
done:
  if (res)
    *res = r;
  else
    free(r);
  free(node0);
  return st;
}
