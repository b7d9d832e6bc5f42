/* The dense spectral engine: graphs grouped by size, each group in chunks:
 * Laplacians built in parallel, one batched gstat_eigh per chunk, then
 * embeddings and label assignment in parallel over graphs. One graph alone
 * (gstat_spectral_clustering) runs the very same code, so a batch labels
 * every graph exactly as one-at-a-time calls do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/matrix.h"
#include "graph/graph_internal.h"
#include "gstat/linalg.h"
#include "backend/dense.h"
#include "backend/sched.h"
#include "spectral/spectral_internal.h"

typedef struct sizeidx {
  int64_t n, g;
} sizeidx;

static int by_size(const void *a, const void *b) {
  const sizeidx *x = a, *y = b;
  if (x->n != y->n) return (x->n > y->n) - (x->n < y->n);
  return (x->g > y->g) - (x->g < y->g);
}

static int64_t dim_of(const gstat_spectral_options *o, int64_t k) {
  return gstat_i_sc_dim(o, k);
}

int64_t gstat_i_sc_eig_count(const gstat_spectral_options *o, int64_t n, int64_t k) {
  return gstat_i_sc_eig_count_impl(o, n, k);
}

/* A graph's view for the per-graph steps. */
typedef struct sc {
  const gstat_graph_batch *G;
  const gstat_spectral_options *o;
  const int64_t *node0, *ks;
  bool single; /* messages name "G" */
} sc;

static int64_t size_of(const sc *s, int64_t g) {
  return s->node0[g + 1] - s->node0[g];
}
static int64_t k_of(const sc *s, int64_t g) {
  return s->ks ? s->ks[g] : s->o->n_clusters;
}

static gstat_i_csr_in slice(const sc *s, int64_t g) {
  const gstat_graph_batch *G = s->G;
  int64_t base = G->node_offsets[g];
  gstat_i_csr_in in = {size_of(s, g), base, G->offsets + base, G->indices, G->weights};
  return in;
}

/* Validate graph g's contents; the message only when err is not NULL. */
static gstat_status check_graph(const sc *s, const char *fn, int64_t g, gstat_i_err *err) {
  gstat_i_err local = {0};
  if (!err) err = &local;
  char name[40];
  if (s->single)
    snprintf(name, sizeof name, "G");
  else
    snprintf(name, sizeof name, "Gs graph %lld", (long long)g);
  if (s->G->format == GSTAT_GRAPH_CSR) {
    gstat_i_csr_in in = slice(s, g);
    if (gstat_i_csr_validate(err, fn, name, &in, NULL) != GSTAT_OK) return err->status;
    if (s->G->symmetrize == GSTAT_SYM_CHECK)
      return gstat_i_csr_check_symmetric(err, fn, name, &in, NULL, NULL);
    return GSTAT_OK;
  }
  return gstat_i_dense_adjacency(err, fn, name, &s->G->adjacency, g, size_of(s, g),
                                 s->G->symmetrize, s->G->self_loops, NULL);
}

/* Bytes the checks of every graph read: the thread count follows them. */
static double graph_bytes(const sc *s, int64_t count) {
  double bytes = 0;
  for (int64_t g = 0; g < count; g++) {
    double n = (double)size_of(s, g);
    if (s->G->format == GSTAT_GRAPH_CSR) {
      gstat_i_csr_in in = slice(s, g);
      bytes += 12.0 * (double)(in.offsets[in.n] - in.offsets[0]) + 8.0 * n;
    } else {
      bytes += 8.0 * n * n;
    }
  }
  return bytes;
}

/* Per-graph argument checks that need no reading of the graph. */
static gstat_status check_k(gstat_ctx *ctx, const char *fn, const sc *s, int64_t g) {
  int64_t n = size_of(s, g), k = k_of(s, g), drop = s->o->drop_first != 0;
  char who[40];
  if (s->single)
    snprintf(who, sizeof who, "G");
  else
    snprintf(who, sizeof who, "graph %lld", (long long)g);
  if (k < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s: n_clusters=%lld must be >= 1 (or 0: by the eigengap)", fn, who,
                        (long long)k);
  if (n == 0) return GSTAT_OK;
  if (k > n)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s: n_clusters=%lld exceeds its %lld nodes", fn,
                        who, (long long)k, (long long)n);
  int64_t dim = k > 0 ? dim_of(s->o, k) : s->o->n_components;
  if (dim + drop > n)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s: %lld embedding columns%s need more than its %lld nodes", fn, who,
                        (long long)dim, drop ? " + the dropped first" : "", (long long)n);
  return GSTAT_OK;
}

typedef gstat_i_sc_rec rec;

/* Scratch one thread needs for a graph of n nodes with at most kmax clusters
 * and dmax embedding columns (doubles). */
size_t gstat_i_sc_thread_scratch(int64_t n, int64_t kmax, int64_t dmax) {
  return (size_t)(2 * n + n * dmax) + gstat_i_sc_assign_work_impl(n, dmax, kmax) + 8;
}

/* Step 1 for graph g (slot A, n x n): adjacency, components, Laplacian. */
static void build_one(const sc *s, const char *fn, int64_t g, double *A, double *d, rec *r,
                      int64_t *lab) {
  int64_t n = size_of(s, g), k = k_of(s, g);
  gstat_i_err ignore = {0};
  if (s->G->format == GSTAT_GRAPH_CSR) {
    gstat_i_csr_in in = slice(s, g);
    gstat_i_csr_to_dense(&in, s->G->symmetrize, s->G->self_loops, A);
  } else {
    gstat_i_dense_adjacency(&ignore, fn, "", &s->G->adjacency, g, n, s->G->symmetrize,
                            s->G->self_loops, A);
  }
  r->comps = gstat_i_dense_components(n, A, lab, lab + n);
  r->why = gstat_i_sc_components_rule(s->o, k, r->comps);
  gstat_i_dense_laplacian(n, A,
                          s->o->laplacian == GSTAT_LAPLACIAN_UNNORMALIZED
                              ? GSTAT_LAPLACIAN_UNNORMALIZED
                              : GSTAT_LAPLACIAN_SYMMETRIC,
                          d);
}

void gstat_i_sc_assign(const gstat_spectral_options *o, int64_t n, int64_t k, const double *V,
                       const double *w, const double *d, gstat_i_sc_rec *r, int64_t *labels,
                       double *eig_out, double *emb_out, bool embed_only, double *scratch) {
  /* scratch (gstat_i_sc_thread_scratch): 2 n, the embedding at its widest
   * (unless emb_out), then work */
  int64_t kb = k > 0 ? k : (o->max_clusters < n ? o->max_clusters : n);
  double *E = emb_out ? emb_out : scratch + 2 * n, *work = scratch + 2 * n + n * dim_of(o, kb);
  gstat_i_sc_assign_impl(o, n, k, V, w, d, r, labels, eig_out, E, embed_only, work);
}

gstat_status gstat_i_sc_failure(gstat_ctx *ctx, const char *fn, int64_t g, const gstat_i_sc_rec *r,
                                int64_t k, int64_t max_clusters) {
  char who[40];
  if (g < 0)
    snprintf(who, sizeof who, "G");
  else
    snprintf(who, sizeof who, "graph %lld", (long long)g);
  switch (r->why) {
    case WHY_SPLIT:
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %s has %lld connected components, more than n_clusters=%lld: no "
                          "well-defined clustering (ask for at least %lld clusters)",
                          fn, who, (long long)r->comps, (long long)k, (long long)r->comps);
    case WHY_REJECT:
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %s has %lld connected components (opt.disconnected rejects "
                          "disconnected graphs)",
                          fn, who, (long long)r->comps);
    case WHY_TOO_MANY:
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %s has %lld connected components, more than the eigengap's "
                          "max_clusters=%lld",
                          fn, who, (long long)r->comps, (long long)max_clusters);
    case WHY_EIGH:
      return gstat_i_fail(ctx, GSTAT_ENOCONV, "%s: %s: the eigensolver did not converge", fn, who);
    case WHY_CANCELED: /* the progress report said so already */ return GSTAT_ECANCELED;
    default:
      return gstat_i_fail(ctx, GSTAT_EBACKEND, "%s: %s: cluster-QR's LAPACK call failed", fn, who);
  }
}

gstat_status gstat_i_sc_status(int64_t why) {
  return why == WHY_OK          ? GSTAT_OK
         : why == WHY_EIGH      ? GSTAT_ENOCONV
         : why == WHY_QR        ? GSTAT_EBACKEND
         : why == WHY_NONFINITE ? GSTAT_ENOTFINITE
         : why == WHY_CANCELED  ? GSTAT_ECANCELED
                                : GSTAT_EINVAL;
}

gstat_status gstat_i_sc_check_ks(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                                 const int64_t *ks, const gstat_spectral_options *o) {
  sc s = {B->G, o, B->node0, ks, B->single};
  gstat_status st = GSTAT_OK;
  for (int64_t g = 0; st == GSTAT_OK && g < B->G->count; g++) st = check_k(ctx, fn, &s, g);
  return st;
}

/* One dense engine call: the graphs' view, the batch, what it writes, and
 * the bookkeeping (per-graph records, the size order, per-graph validity). */
typedef struct engine {
  gstat_ctx *ctx;
  const char *fn;
  sc s;
  const gstat_i_sc_batch *B;
  gstat_i_sc_out *out;
  bool f32; /* Laplacians decomposed in float32 */
  rec *recs;
  sizeidx *order;
  int64_t *bad;
} engine;

/* Every graph's contents checked before anything is written; in a batch,
 * NaN or Inf weights are the graph's own failure (labels -1), not the
 * call's. */
static gstat_status check_graphs(engine *e) {
  int64_t count = e->B->G->count;
  int nt = gstat_i_loop_threads(e->ctx, count, 0, graph_bytes(&e->s, count));
#pragma omp parallel for num_threads(nt) schedule(dynamic, 16) if (nt > 1)
  for (int64_t g = 0; g < count; g++) e->bad[g] = check_graph(&e->s, e->fn, g, NULL);
  for (int64_t g = 0; g < count; g++)
    if (e->bad[g] != GSTAT_OK && (e->bad[g] != GSTAT_ENOTFINITE || e->B->single)) {
      gstat_i_err err = {0};
      check_graph(&e->s, e->fn, g, &err);
      return gstat_i_err_raise(e->ctx, &err);
    }
  return GSTAT_OK;
}

/* Labels -1 until assigned, the records cleared, graphs ordered by size (a
 * graph that failed its check as an empty one). */
static void start_records(engine *e) {
  int64_t count = e->B->G->count;
  for (int64_t i = 0; e->out->labels && i < e->B->node0[count]; i++) e->out->labels[i] = -1;
  for (int64_t g = 0; g < count; g++) {
    rec *r = &e->recs[g];
    memset(r, 0, sizeof *r);
    if (e->bad[g] != GSTAT_OK) r->why = WHY_NONFINITE;
    if (e->B->single) { /* one graph: k-means reports progress and can be cancelled */
      r->tick = gstat_i_sc_km_tick;
      r->tick_arg = e->ctx;
      r->runs = gstat_i_kmeans_runs;
    }
    e->order[g].n = e->bad[g] != GSTAT_OK ? 0 : size_of(&e->s, g);
    e->order[g].g = g;
  }
  qsort(e->order, (size_t)count, sizeof(sizeidx), by_size);
}

/* Graphs of n nodes per chunk: 64 MiB of Laplacians, at most 4096; one
 * above the size where a batched eigh is no longer bitwise the one-graph
 * call's. */
static int64_t chunk_of(int64_t n) {
  const int64_t budget = (int64_t)1 << 26;
  int64_t chunk = budget / (n * n * (int64_t)sizeof(double));
  chunk = chunk < 1 ? 1 : chunk > 4096 ? 4096 : chunk;
  return n > gstat_i_eigh_batch_invariant_max() ? 1 : chunk;
}

/* A chunk's workspace: cn Laplacians (n x n, double, then float32 copies),
 * eigenvalues, degrees, info and wanted pairs, per-thread scratch. */
typedef struct chunk_ws {
  int64_t n, c0, cn, kmax, dmax;
  int tn;
  size_t ts; /* doubles of scratch a thread */
  double *L, *w, *deg, *scr;
  int64_t *info, *pairs;
  float *Lf, *wf;
} chunk_ws;

static gstat_status chunk_workspace(engine *e, int64_t n, int64_t c0, int64_t cn, chunk_ws *c) {
  const gstat_spectral_options *o = e->s.o;
  memset(c, 0, sizeof *c);
  c->n = n, c->c0 = c0, c->cn = cn, c->kmax = 1, c->dmax = 1;
  for (int64_t i = 0; i < cn; i++) {
    int64_t k = k_of(&e->s, e->order[c0 + i].g);
    int64_t kc = k > 0 ? k : (o->max_clusters < n ? o->max_clusters : n);
    if (kc > c->kmax) c->kmax = kc;
    if (dim_of(o, kc) > c->dmax) c->dmax = dim_of(o, kc);
  }
  /* per graph: its Laplacian and the k-means runs on its embedding */
  double per_graph = 30.0 * (double)(n * n) + 3000.0 * (double)(n * c->kmax * c->dmax);
  c->tn = gstat_i_loop_threads(e->ctx, cn, per_graph * (double)cn, 8.0 * (double)(cn * n * n));
  size_t cells = (size_t)(cn * n * n);
  c->ts = gstat_i_sc_thread_scratch(n, c->kmax, c->dmax);
  /* f32: the Laplacians and eigenvalues also in float (half a double each) */
  size_t lf = e->f32 ? (cells + (size_t)(cn * n)) / 2 + 1 : 0;
  /* beside info, the pairs each graph's embedding can use: the
   * scheduler's eigh_lowest computes only those where that pays */
  size_t total = cells + 2 * (size_t)(cn * n) + 3 * (size_t)cn + c->ts * (size_t)c->tn + lf;
  if (total > SIZE_MAX / 8)
    return gstat_i_fail(e->ctx, GSTAT_ENOMEM, "%s: workspace size overflows", e->fn);
  double *ws = gstat_i_workspace(e->ctx, GSTAT_WS_SPECTRAL, total * 8);
  if (!ws)
    return gstat_i_fail(e->ctx, GSTAT_ENOMEM,
                        "%s: cannot allocate %zu bytes for %lld graphs of %lld nodes", e->fn,
                        total * 8, (long long)cn, (long long)n);
  c->L = ws, c->w = c->L + cells, c->deg = c->w + cn * n, c->scr = c->deg + cn * n + 3 * cn;
  c->info = (int64_t *)(c->deg + cn * n), c->pairs = c->info + 2 * cn;
  c->Lf = (float *)(c->scr + c->ts * (size_t)c->tn), c->wf = c->Lf + cells;
  for (int64_t i = 0; i < cn; i++)
    c->pairs[i] = gstat_i_sc_eig_count(o, n, k_of(&e->s, e->order[c0 + i].g));
  return GSTAT_OK;
}

static int thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* The chunk's Laplacians and degrees, in parallel over graphs (float32:
 * the lower triangle, all eigh reads, copied to float). */
static void build_chunk(engine *e, const chunk_ws *c) {
  const int64_t n = c->n;
#pragma omp parallel for num_threads(c->tn) schedule(dynamic, 1) if (c->tn > 1)
  for (int64_t i = 0; i < c->cn; i++) {
    int64_t g = e->order[c->c0 + i].g;
    const double *Lc = c->L + (size_t)(i * n * n);
    build_one(&e->s, e->fn, g, c->L + (size_t)(i * n * n), c->deg + i * n, &e->recs[g],
              (int64_t *)(c->scr + c->ts * (size_t)thread_num()));
    if (!e->f32) continue;
    float *Fc = c->Lf + (size_t)(i * n * n);
    for (int64_t j = 0; j < n; j++)
      for (int64_t r = j; r < n; r++) Fc[r + j * n] = (float)Lc[r + j * n];
  }
}

/* One batched eigh of the chunk (the pairs each graph can use); a graph
 * whose eigh did not converge is its own failure. */
static gstat_status solve_chunk(engine *e, const chunk_ws *c) {
  const int64_t n = c->n, cn = c->cn;
  gstat_matrix Lm = e->f32 ? gstat_matrix_col_major(c->Lf, GSTAT_F32, cn, n, n)
                           : gstat_matrix_col_major(c->L, GSTAT_F64, cn, n, n);
  gstat_matrix wm = e->f32 ? gstat_vector_batch(c->wf, GSTAT_F32, cn, n)
                           : gstat_vector_batch(c->w, GSTAT_F64, cn, n);
  gstat_status st = gstat_i_sched_eigh_lowest(e->ctx, &Lm, c->pairs, &wm, c->info);
  if (st != GSTAT_ENOCONV) return st;
  for (int64_t i = 0; i < cn; i++) {
    rec *r = &e->recs[e->order[c->c0 + i].g];
    if (c->info[i] != 0 && r->why == WHY_OK) r->why = WHY_EIGH;
  }
  return GSTAT_OK;
}

/* Embeddings and labels, in parallel over the chunk's graphs (float32: the
 * eigenvalues and the columns the embedding can use back to double). */
static void assign_chunk(engine *e, const chunk_ws *c) {
  const int64_t n = c->n;
  const gstat_i_sc_out *out = e->out;
#pragma omp parallel for num_threads(c->tn) schedule(dynamic, 1) if (c->tn > 1)
  for (int64_t i = 0; i < c->cn; i++) {
    int64_t g = e->order[c->c0 + i].g;
    double *V = c->L + (size_t)(i * n * n), *w = c->w + i * n;
    if (e->f32) {
      int64_t neig = gstat_i_sc_eig_count(e->s.o, n, k_of(&e->s, g));
      const float *Vf = c->Lf + (size_t)(i * n * n), *wc = c->wf + i * n;
      for (int64_t j = 0; j < neig; j++) w[j] = (double)wc[j];
      for (int64_t j = 0; j < neig * n; j++) V[j] = (double)Vf[j];
    }
    double *eo = out->eigenvalues ? out->eigenvalues + out->eig_offsets[g] : NULL;
    int64_t *lab = out->labels + e->B->node0[g];
    gstat_i_sc_assign(e->s.o, n, k_of(&e->s, g), V, w, c->deg + i * n, &e->recs[g], lab, eo,
                      out->embedding, out->embed_only, c->scr + c->ts * (size_t)thread_num());
    if (e->recs[g].why != WHY_OK)
      for (int64_t j = 0; j < n; j++) lab[j] = -1;
  }
}

/* Every group of equal-size graphs in chunks, progress after each chunk
 * (which may cancel the call). */
static gstat_status run_groups(engine *e) {
  const int64_t count = e->B->G->count;
  int64_t done = 0;
  char what[64];
  snprintf(what, sizeof what, "%s: graphs", e->fn);
  gstat_status st = gstat_i_progress(e->ctx, what, 0, count);
  for (int64_t start = 0; st == GSTAT_OK && start < count;) {
    int64_t n = e->order[start].n, end = start;
    while (end < count && e->order[end].n == n) end++;
    if (n == 0) { /* empty graphs: nothing to do, k reported 0 */
      for (int64_t c = start; c < end; c++) e->recs[e->order[c].g].done = 1;
      done += end - start;
      start = end;
      continue;
    }
    int64_t chunk = chunk_of(n);
    for (int64_t c0 = start; st == GSTAT_OK && c0 < end; c0 += chunk) {
      chunk_ws c;
      int64_t cn = end - c0 < chunk ? end - c0 : chunk;
      if ((st = chunk_workspace(e, n, c0, cn, &c)) == GSTAT_OK) {
        build_chunk(e, &c);
        st = solve_chunk(e, &c);
      }
      if (st != GSTAT_OK) return st;
      assign_chunk(e, &c);
      done += cn;
      st = gstat_i_progress(e->ctx, what, done, count);
    }
    start = end;
  }
  return st;
}

/* Per-graph outputs (a graph the call did not reach, cancelled or failed
 * as a whole, gets the call's status); the call's status (st), else the
 * first graph's own failure. */
static gstat_status report_graphs(engine *e, gstat_status st) {
  const gstat_i_sc_out *out = e->out;
  gstat_status first = GSTAT_OK;
  for (int64_t g = 0; g < e->B->G->count; g++) {
    const rec *r = &e->recs[g];
    if (out->k) out->k[g] = r->k;
    if (out->components) out->components[g] = r->comps;
    bool ran = r->done || st == GSTAT_OK;
    if (out->inertia) out->inertia[g] = r->why == WHY_OK && ran ? r->inertia : NAN;
    if (out->iterations) out->iterations[g] = r->iters;
    if (out->status) out->status[g] = ran ? gstat_i_sc_status(r->why) : st;
    if (out->dim && g == 0) *out->dim = r->dim;
    if (st != GSTAT_OK || first != GSTAT_OK || r->why == WHY_OK) continue;
    if (r->why == WHY_NONFINITE) {
      gstat_i_err err = {0};
      check_graph(&e->s, e->fn, g, &err); /* the message names the entry */
      first = gstat_i_err_raise(e->ctx, &err);
    } else {
      first = gstat_i_sc_failure(e->ctx, e->fn, e->B->single ? -1 : g, r, k_of(&e->s, g),
                                 e->s.o->max_clusters);
    }
  }
  return st != GSTAT_OK ? st : first;
}

gstat_status gstat_i_sc_dense(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                              const int64_t *ks, const gstat_spectral_options *o,
                              gstat_i_sc_out *out) {
  int64_t count = B->G->count;
  /* float32 (and bfloat16) dense input: Laplacians decomposed in float32, faster for small
   * graphs (bench/README.md, "Measurements moved from code comments"); the input holds no
   * more precision than that anyway */
  engine e = {.ctx = ctx,
              .fn = fn,
              .s = {B->G, o, B->node0, ks, B->single},
              .B = B,
              .out = out,
              .f32 = B->G->format == GSTAT_GRAPH_DENSE &&
                     (B->G->adjacency.dtype == GSTAT_F32 || B->G->adjacency.dtype == GSTAT_BF16)};
  gstat_status st = gstat_i_sc_check_ks(ctx, fn, B, ks, o);
  if (st != GSTAT_OK) return st;
  size_t book;
  if (!gstat_i_mul_size((size_t)count + 1, sizeof(rec) + sizeof(sizeidx) + sizeof(int64_t), &book))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: batch of %lld graphs overflows", fn,
                        (long long)count);
  char *bk = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, book);
  if (!bk) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate bookkeeping", fn);
  e.recs = (rec *)bk;
  e.order = (sizeidx *)(e.recs + count + 1);
  e.bad = (int64_t *)(e.order + count + 1);
  if ((st = check_graphs(&e)) != GSTAT_OK) return st;
  out->ran = true;
  start_records(&e);
  return report_graphs(&e, run_groups(&e));
}
