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

gstat_status gstat_i_sc_dense(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                              const int64_t *ks, const gstat_spectral_options *o,
                              gstat_i_sc_out *out) {
  sc s = {B->G, o, B->node0, ks, B->single};
  int64_t count = B->G->count;
  /* float32 (and bfloat16) dense input: Laplacians decomposed in float32, faster for small
   * graphs (bench/README.md, "Measurements moved from code comments"); the input holds no
   * more precision than that anyway */
  const bool f32 = B->G->format == GSTAT_GRAPH_DENSE &&
                   (B->G->adjacency.dtype == GSTAT_F32 || B->G->adjacency.dtype == GSTAT_BF16);
  gstat_status st = gstat_i_sc_check_ks(ctx, fn, B, ks, o);
  if (st != GSTAT_OK) return st;

  /* bookkeeping: records, size order, per-graph validity */
  size_t book;
  if (!gstat_i_mul_size((size_t)count + 1, sizeof(rec) + sizeof(sizeidx) + sizeof(int64_t), &book))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: batch of %lld graphs overflows", fn,
                        (long long)count);
  char *bk = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, book);
  if (!bk) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate bookkeeping", fn);
  rec *recs = (rec *)bk;
  sizeidx *order = (sizeidx *)(recs + count + 1);
  int64_t *bad = (int64_t *)(order + count + 1);

  /* validate every graph's contents before writing anything; in a batch, NaN or
   * Inf weights are the graph's own failure (labels -1), not the call's */
  int check_nt = gstat_i_loop_threads(ctx, count, 0, graph_bytes(&s, count));
#pragma omp parallel for num_threads(check_nt) schedule(dynamic, 16) if (check_nt > 1)
  for (int64_t g = 0; g < count; g++) bad[g] = check_graph(&s, fn, g, NULL);
  for (int64_t g = 0; g < count; g++)
    if (bad[g] != GSTAT_OK && (bad[g] != GSTAT_ENOTFINITE || B->single)) {
      gstat_i_err err = {0};
      check_graph(&s, fn, g, &err);
      return gstat_i_err_raise(ctx, &err);
    }

  int64_t total_nodes = B->node0[count];
  out->ran = true;
  for (int64_t i = 0; out->labels && i < total_nodes; i++) out->labels[i] = -1;
  for (int64_t g = 0; g < count; g++) {
    memset(&recs[g], 0, sizeof(rec));
    if (bad[g] != GSTAT_OK) recs[g].why = WHY_NONFINITE;
    if (B->single) { /* one graph: k-means reports progress and can be cancelled */
      recs[g].tick = gstat_i_sc_km_tick;
      recs[g].tick_arg = ctx;
      recs[g].runs = gstat_i_kmeans_runs;
    }
    order[g].n = bad[g] != GSTAT_OK ? 0 : size_of(&s, g); /* skipped as an empty graph */
    order[g].g = g;
  }
  qsort(order, (size_t)count, sizeof(sizeidx), by_size);

  const int64_t budget = (int64_t)1 << 26; /* bytes of Laplacians per chunk */
  int64_t done = 0;
  char what[64];
  snprintf(what, sizeof what, "%s: graphs", fn);
  st = gstat_i_progress(ctx, what, 0, count);
  for (int64_t start = 0; st == GSTAT_OK && start < count;) {
    int64_t n = order[start].n, end = start;
    while (end < count && order[end].n == n) end++;
    if (n == 0) { /* empty graphs: nothing to do, k reported 0 */
      for (int64_t c = start; c < end; c++) recs[order[c].g].done = 1;
      done += end - start;
      start = end;
      continue;
    }
    int64_t per = n * n * (int64_t)sizeof(double);
    int64_t chunk = budget / per;
    if (chunk < 1) chunk = 1;
    if (chunk > 4096) chunk = 4096;
    /* above this size a batched eigh is not bitwise the one-graph call's */
    if (n > gstat_i_eigh_batch_invariant_max()) chunk = 1;
    for (int64_t c0 = start; st == GSTAT_OK && c0 < end; c0 += chunk) {
      int64_t cn = end - c0 < chunk ? end - c0 : chunk;
      int64_t kmax = 1, dmax = 1;
      for (int64_t c = 0; c < cn; c++) {
        int64_t k = k_of(&s, order[c0 + c].g);
        int64_t kc = k > 0 ? k : (o->max_clusters < n ? o->max_clusters : n);
        if (kc > kmax) kmax = kc;
        if (dim_of(o, kc) > dmax) dmax = dim_of(o, kc);
      }
      /* per graph: its Laplacian and the k-means runs on its embedding */
      double per_graph = 30.0 * (double)(n * n) + 3000.0 * (double)(n * kmax * dmax);
      int tn = gstat_i_loop_threads(ctx, cn, per_graph * (double)cn, 8.0 * (double)(cn * n * n));
      size_t cells = (size_t)(cn * n * n), ts = gstat_i_sc_thread_scratch(n, kmax, dmax);
      /* f32: the Laplacians and eigenvalues also in float (half a double each) */
      size_t lf = f32 ? (cells + (size_t)(cn * n)) / 2 + 1 : 0;
      /* beside info, the pairs each graph's embedding can use: the
       * scheduler's eigh_lowest computes only those where that pays */
      size_t total = cells + 2 * (size_t)(cn * n) + 3 * (size_t)cn + ts * (size_t)tn + lf;
      if (total > SIZE_MAX / 8)
        return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
      double *ws = gstat_i_workspace(ctx, GSTAT_WS_SPECTRAL, total * 8);
      if (!ws)
        return gstat_i_fail(ctx, GSTAT_ENOMEM,
                            "%s: cannot allocate %zu bytes for %lld graphs of %lld nodes", fn,
                            total * 8, (long long)cn, (long long)n);
      double *L = ws, *w = L + cells, *deg = w + cn * n, *scr = deg + cn * n + 3 * cn;
      int64_t *info = (int64_t *)(deg + cn * n), *pairs = info + 2 * cn;
      float *Lf = (float *)(scr + ts * (size_t)tn), *wf = Lf + cells;
      for (int64_t c = 0; c < cn; c++)
        pairs[c] = gstat_i_sc_eig_count(o, n, k_of(&s, order[c0 + c].g));

#pragma omp parallel for num_threads(tn) schedule(dynamic, 1) if (tn > 1)
      for (int64_t c = 0; c < cn; c++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int64_t g = order[c0 + c].g;
        build_one(&s, fn, g, L + (size_t)(c * n * n), deg + c * n, &recs[g],
                  (int64_t *)(scr + ts * (size_t)t));
        if (f32) { /* the lower triangle is all eigh reads */
          const double *Lc = L + (size_t)(c * n * n);
          float *Fc = Lf + (size_t)(c * n * n);
          for (int64_t j = 0; j < n; j++)
            for (int64_t i = j; i < n; i++) Fc[i + j * n] = (float)Lc[i + j * n];
        }
      }
      gstat_matrix Lm = f32 ? gstat_matrix_col_major(Lf, GSTAT_F32, cn, n, n)
                            : gstat_matrix_col_major(L, GSTAT_F64, cn, n, n);
      gstat_matrix wm =
          f32 ? gstat_vector_batch(wf, GSTAT_F32, cn, n) : gstat_vector_batch(w, GSTAT_F64, cn, n);
      st = gstat_i_sched_eigh_lowest(ctx, &Lm, pairs, &wm, info);
      if (st == GSTAT_ENOCONV) {
        for (int64_t c = 0; c < cn; c++)
          if (info[c] != 0 && recs[order[c0 + c].g].why == WHY_OK)
            recs[order[c0 + c].g].why = WHY_EIGH;
        st = GSTAT_OK;
      }
      if (st != GSTAT_OK) return st;

#pragma omp parallel for num_threads(tn) schedule(dynamic, 1) if (tn > 1)
      for (int64_t c = 0; c < cn; c++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int64_t g = order[c0 + c].g;
        if (f32) { /* back to double: the eigenvalues and the columns the embedding can use */
          int64_t neig = gstat_i_sc_eig_count(o, n, k_of(&s, g));
          const float *Vf = Lf + (size_t)(c * n * n), *wc = wf + c * n;
          double *Vd = L + (size_t)(c * n * n);
          for (int64_t i = 0; i < neig; i++) w[c * n + i] = (double)wc[i];
          for (int64_t i = 0; i < neig * n; i++) Vd[i] = (double)Vf[i];
        }
        double *eo = out->eigenvalues ? out->eigenvalues + out->eig_offsets[g] : NULL;
        int64_t *lab = out->labels + B->node0[g];
        gstat_i_sc_assign(o, n, k_of(&s, g), L + (size_t)(c * n * n), w + c * n, deg + c * n,
                          &recs[g], lab, eo, out->embedding, out->embed_only, scr + ts * (size_t)t);
        if (recs[g].why != WHY_OK)
          for (int64_t i = 0; i < n; i++) lab[i] = -1;
      }
      done += cn;
      st = gstat_i_progress(ctx, what, done, count);
    }
    start = end;
  }
  /* per-graph outputs, and the first graph's own failure */
  gstat_status first = GSTAT_OK;
  for (int64_t g = 0; g < count; g++) {
    const rec *r = &recs[g];
    if (out->k) out->k[g] = r->k;
    if (out->components) out->components[g] = r->comps;
    if (out->inertia) out->inertia[g] = r->why == WHY_OK ? r->inertia : NAN;
    if (out->iterations) out->iterations[g] = r->iters;
    if (out->status)
      out->status[g] = r->done || st == GSTAT_OK ? gstat_i_sc_status(r->why) : GSTAT_ECANCELED;
    if (out->dim && g == 0) *out->dim = r->dim;
    if (st == GSTAT_OK && first == GSTAT_OK && r->why == WHY_NONFINITE) {
      gstat_i_err err = {0};
      check_graph(&s, fn, g, &err); /* the message names the entry */
      first = gstat_i_err_raise(ctx, &err);
    } else if (st == GSTAT_OK && first == GSTAT_OK && r->why != WHY_OK) {
      first = gstat_i_sc_failure(ctx, fn, B->single ? -1 : g, r, k_of(&s, g), o->max_clusters);
    }
  }
  return st != GSTAT_OK ? st : first;
}
