/* One dense graph in CUDA device memory whose embedding is wanted (the
 * batch engine on the device returns labels only): its Laplacian by the
 * scheduler's primitive into device memory, the eigh there, and only the
 * first eigenpairs back for the embedding and k-means on the host. The
 * validation (with its messages) and the components read a host copy of the
 * adjacency: no device primitive for them yet, and O(n^2) beside the eigh's
 * O(n^3). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "backend/dense.h"
#include "spectral/spectral_internal.h"

/* Host scratch: the symmetrized adjacency (n x n), labels and stack (2 n),
 * eigenvectors (n x m), eigenvalues and degrees (2 n), the assignment's. */
typedef struct chain_host {
  double *A, *V, *w, *d, *scratch;
  int64_t *lab;
  size_t bytes;
  void *mem;
} chain_host;

static bool host_alloc(gstat_ctx *ctx, int64_t n, int64_t m, size_t ts, chain_host *h) {
  size_t doubles = (size_t)(n * n + n * m + 4 * n) + ts + 8;
  h->bytes = doubles * sizeof(double);
  h->mem = gstat_i_alloc(ctx, h->bytes);
  if (!h->mem) return false;
  h->A = h->mem;
  h->lab = (int64_t *)(h->A + n * n);
  h->V = (double *)(h->lab + 2 * n);
  h->w = h->V + n * m;
  h->d = h->w + n;
  h->scratch = h->d + n;
  return true;
}

/* Validation and components on a host copy; r->why for a disconnected graph. */
static gstat_status check_on_host(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                  const gstat_spectral_options *o, int64_t k, chain_host *h,
                                  gstat_i_sc_rec *r) {
  int64_t n = G->adjacency.rows;
  gstat_i_staged copy;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "G.adjacency", &G->adjacency, true, &copy);
  if (st != GSTAT_OK) return st;
  gstat_i_err err = {0};
  st = gstat_i_dense_adjacency(&err, fn, "G", &copy.m, 0, n, G->symmetrize, G->self_loops, h->A);
  gstat_i_sched_release(ctx, &copy);
  if (st != GSTAT_OK) return gstat_i_err_raise(ctx, &err);
  r->comps = gstat_i_dense_components(n, h->A, h->lab, h->lab + n);
  r->why = gstat_i_sc_components_rule(o, k, r->comps);
  return GSTAT_OK;
}

/* The Laplacian and the eigh in device memory `mem`; the first m pairs and
 * the degrees back into h. */
static gstat_status on_device(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                              const gstat_spectral_options *o, gstat_dtype cdt, int64_t m,
                              char *mem, chain_host *h, gstat_i_sc_rec *r) {
  const gstat_matrix *A = &G->adjacency;
  int64_t n = A->rows;
  size_t es = gstat_dtype_size(cdt), lw = es * (size_t)(n * n + n);
  gstat_matrix L = {mem, cdt, GSTAT_CUDA, A->device, 1, n, n, n * n, 1, n};
  gstat_matrix W = {mem + es * (size_t)(n * n), cdt, GSTAT_CUDA, A->device, 1, n, 1, n, 1, n};
  gstat_matrix D = {mem + (lw + 7) / 8 * 8, GSTAT_F64, GSTAT_CUDA, A->device, 1, n, 1, n, 1, n};
  int kind = o->laplacian == GSTAT_LAPLACIAN_UNNORMALIZED ? GSTAT_LAPLACIAN_UNNORMALIZED
                                                          : GSTAT_LAPLACIAN_SYMMETRIC;
  gstat_status st = gstat_i_sched_laplacian(ctx, fn, A, G->symmetrize,
                                            G->self_loops == GSTAT_LOOPS_DROP, kind, &L, &D);
  int64_t info = 0;
  if (st == GSTAT_OK) st = gstat_i_eigh(ctx, &L, GSTAT_LOWER, &W, &L, &info);
  if (st == GSTAT_ENOCONV) {
    r->why = WHY_EIGH;
    return GSTAT_OK;
  }
  L.cols = m; /* the eigenvectors of the m smallest, ascending */
  W.rows = m;
  gstat_matrix V = gstat_matrix_col_major(h->V, GSTAT_F64, 1, n, m);
  gstat_matrix w = gstat_vector_batch(h->w, GSTAT_F64, 1, m);
  gstat_matrix d = gstat_vector_batch(h->d, GSTAT_F64, 1, n);
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "L", &L, &V);
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "w", &W, &w);
  if (st == GSTAT_OK) st = gstat_i_sched_copy(ctx, fn, "degrees", &D, &d);
  return st;
}

gstat_status gstat_i_sc_device_one(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                   const gstat_spectral_options *o, int64_t *labels, double *eig,
                                   double *emb, bool embed_only, gstat_i_sc_rec *r, bool *handled) {
  const gstat_matrix *A = &G->adjacency;
  int64_t n = A->rows, k = o->n_clusters;
  /* float32 and bfloat16 graphs in float32, as the host engine */
  gstat_dtype cdt = A->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  *handled = false;
  memset(r, 0, sizeof *r);
  if (!gstat_i_sched_eigh_stays_on_device(ctx, cdt, 1, n)) return GSTAT_OK;
  size_t es = gstat_dtype_size(cdt), bytes = (es * (size_t)(n * n + n) + 7) / 8 * 8 + 8 * (size_t)n;
  void *mem = NULL;
  if (gstat_i_sched_device_memory(ctx, fn, A, bytes, &mem) != GSTAT_OK) {
    ctx->last_error[0] = '\0'; /* the host engine on a copy instead */
    return GSTAT_OK;
  }
  *handled = true;
  int64_t m = gstat_i_sc_eig_count(o, n, k);
  int64_t kmax = k > 0 ? k : (o->max_clusters < n ? o->max_clusters : n);
  int64_t dmax = o->n_components > 0 ? o->n_components : kmax;
  chain_host h;
  if (!host_alloc(ctx, n, m, gstat_i_sc_thread_scratch(n, kmax, dmax), &h))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for a graph of %lld nodes", fn,
                        (long long)n);
  gstat_status st = check_on_host(ctx, fn, G, o, k, &h, r);
  if (st == GSTAT_OK && r->why == WHY_OK) st = on_device(ctx, fn, G, o, cdt, m, mem, &h, r);
  if (st == GSTAT_OK && r->why == WHY_OK) {
    r->tick = gstat_i_sc_km_tick; /* one graph: k-means reports progress */
    r->tick_arg = ctx;
    r->runs = gstat_i_kmeans_runs; /* and spreads its runs over the threads */
    gstat_i_sc_assign(o, n, k, h.V, h.w, h.d, r, labels, eig, emb, embed_only, h.scratch);
  }
  if (st == GSTAT_OK && r->why != WHY_OK) {
    for (int64_t i = 0; labels && i < n; i++) labels[i] = -1;
    st = gstat_i_sc_failure(ctx, fn, -1, r, k, o->max_clusters);
  }
  gstat_i_free(ctx, h.mem, h.bytes);
  return st;
}
