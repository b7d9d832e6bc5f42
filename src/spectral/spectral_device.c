/*
 * Batch spectral clustering of dense graphs that lie in CUDA device memory,
 * over the scheduler: per chunk of graphs, their padded Laplacians
 * (sc_laplacians) into device workspace, one batched eigh there, and the
 * assignment (sc_assign) where the eigenpairs lie; only labels, eigenvalues
 * and per-graph numbers reach the host. What no backend step takes
 * (bfloat16, graphs over a backend's size limit, an invalid
 * weight to name or skip, too little device memory) runs the host engine on
 * a host copy of the adjacencies: nothing is lost, and the messages are the
 * host engine's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/dense.h"
#include "backend/sched.h"
#include "spectral/spectral_internal.h"

/* Laplacian bytes a chunk may take (the eigh's own workspace comes beside it). */
#define SC_DEVICE_CHUNK_BYTES ((size_t)1 << 31)

/* The host engine, on the CPU, on a host copy of the adjacencies. */
static gstat_status on_host_copy(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                                 const int64_t *ks, const gstat_spectral_options *o,
                                 gstat_i_sc_out *out) {
  ctx->last_error[0] = '\0'; /* a declined step is not the call's failure */
  gstat_i_staged copy;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "G.adjacency", &B->G->adjacency, true, &copy);
  if (st != GSTAT_OK) return st;
  gstat_graph_batch G = *B->G;
  G.adjacency = copy.m;
  gstat_i_sc_batch HB = {&G, B->node0, B->single};
  /* the CPU throughout (its eigh too): the device could not */
  gstat_backend was = ctx->opt.backend;
  ctx->opt.backend = GSTAT_BACKEND_CPU;
  st = gstat_i_sc_dense(ctx, fn, &HB, ks, o, out);
  ctx->opt.backend = was;
  gstat_i_sched_release(ctx, &copy);
  return st;
}

/* Per-graph numbers of the batch (host): the requests' arrays. */
typedef struct sc_book {
  int64_t *sizes, *k, *eig0, *info, *comps, *k_used, *iters, *why;
  double *inertia;
} sc_book;

static void *book_alloc(const gstat_i_sc_batch *B, const int64_t *ks,
                        const gstat_spectral_options *o, sc_book *b) {
  int64_t count = B->G->count;
  int64_t *mem = malloc(sizeof(int64_t) * (size_t)(9 * count + 2));
  if (!mem) return NULL;
  b->sizes = mem, b->k = mem + count, b->eig0 = b->k + count, b->info = b->eig0 + count + 1;
  b->comps = b->info + count, b->k_used = b->comps + count, b->iters = b->k_used + count;
  b->why = b->iters + count, b->inertia = (double *)(b->why + count);
  b->eig0[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    b->sizes[g] = B->node0[g + 1] - B->node0[g];
    b->k[g] = ks ? ks[g] : o->n_clusters;
    b->eig0[g + 1] = b->eig0[g] + gstat_i_sc_eig_count(o, b->sizes[g], b->k[g]);
  }
  return mem;
}

/* Graphs [b0, b0 + nb) through the three steps in device memory `mem`. */
static gstat_status run_chunk(gstat_ctx *ctx, const gstat_i_sc_batch *B,
                              const gstat_spectral_options *o, gstat_dtype cdt, int64_t b0,
                              int64_t nb, char *mem, const sc_book *b, gstat_i_sc_out *out) {
  const gstat_matrix *A = &B->G->adjacency;
  int64_t N = A->rows;
  size_t es = gstat_dtype_size(cdt), cells = (size_t)(nb * N * N);
  gstat_matrix Ab = gstat_i_batch_part(A, b0, nb);
  gstat_matrix L = {mem, cdt, GSTAT_CUDA, A->device, nb, N, N, N * N, 1, N};
  gstat_matrix V = L, W = {mem + 2 * cells * es, cdt, GSTAT_CUDA, A->device, nb, N, 1, N, 1, N};
  V.data = mem + cells * es; /* not in place: an element the eigh flags is redone from L */
  gstat_matrix D = W;
  D.data = mem + (2 * cells + (size_t)(nb * N)) * es;
  D.data = (char *)D.data + (8 - (uintptr_t)D.data % 8) % 8;
  D.dtype = GSTAT_F64;
  int kind = o->laplacian == GSTAT_LAPLACIAN_UNNORMALIZED ? GSTAT_LAPLACIAN_UNNORMALIZED
                                                          : GSTAT_LAPLACIAN_SYMMETRIC;
  gstat_i_sc_lap_req lr = {.A = &Ab,
                           .sizes = b->sizes + b0,
                           .sym = (int)B->G->symmetrize,
                           .drop_loops = B->G->self_loops == GSTAT_LOOPS_DROP,
                           .kind = kind,
                           .L = &L,
                           .deg = &D,
                           .comps = b->comps + b0};
  gstat_status st = gstat_i_sched_sc_laplacians(ctx, &lr);
  if (st == GSTAT_OK) st = gstat_i_eigh(ctx, &L, GSTAT_LOWER, &W, &V, b->info + b0);
  if (st == GSTAT_ENOCONV) st = GSTAT_OK; /* those graphs fail on their own */
  if (st != GSTAT_OK) return st;
  gstat_i_sc_assign_req ar = {.V = &V,
                              .W = &W,
                              .deg = &D,
                              .sizes = b->sizes + b0,
                              .k = b->k + b0,
                              .info = b->info + b0,
                              .comps = b->comps + b0,
                              .opt = *o,
                              .node0 = B->node0 + b0,
                              .eig0 = b->eig0 + b0,
                              .labels = out->labels,
                              .eigenvalues = out->eigenvalues,
                              .k_used = b->k_used + b0,
                              .iters = b->iters + b0,
                              .why = b->why + b0,
                              .inertia = b->inertia + b0};
  return gstat_i_sched_sc_assign(ctx, &ar);
}

/* The per-graph outputs, and the first graph's own failure. */
static gstat_status report(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                           const gstat_spectral_options *o, const sc_book *b, gstat_i_sc_out *out) {
  gstat_status first = GSTAT_OK;
  for (int64_t g = 0; g < B->G->count; g++) {
    gstat_i_sc_rec rec = {b->k_used[g],  b->comps[g], b->iters[g], b->why[g], 0, 1,
                          b->inertia[g], NULL,        NULL,        NULL};
    if (out->k) out->k[g] = rec.k;
    if (out->components) out->components[g] = rec.comps;
    if (out->inertia) out->inertia[g] = rec.why == WHY_OK ? rec.inertia : NAN;
    if (out->iterations) out->iterations[g] = rec.iters;
    if (out->status) out->status[g] = gstat_i_sc_status(rec.why);
    if (first == GSTAT_OK && rec.why != WHY_OK)
      first = gstat_i_sc_failure(ctx, fn, B->single ? -1 : g, &rec, b->k[g], o->max_clusters);
  }
  return first;
}

gstat_status gstat_i_sc_device(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                               const int64_t *ks, const gstat_spectral_options *o,
                               gstat_i_sc_out *out) {
  const gstat_matrix *A = &B->G->adjacency;
  int64_t count = B->G->count, N = A->rows;
  gstat_status st = gstat_i_sc_check_ks(ctx, fn, B, ks, o);
  if (st != GSTAT_OK) return st;
  /* no backend's step runs bfloat16 */
  if (A->dtype == GSTAT_BF16 || N == 0 || count == 0) return on_host_copy(ctx, fn, B, ks, o, out);
  gstat_dtype cdt = A->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  size_t es = gstat_dtype_size(cdt), per = es * (size_t)(2 * N * N + N) + 8 * (size_t)N;
  int64_t chunk = (int64_t)(SC_DEVICE_CHUNK_BYTES / per);
  chunk = chunk < 1 ? 1 : chunk > count ? count : chunk;
  sc_book b;
  void *book = book_alloc(B, ks, o, &b);
  if (!book)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for %lld graphs", fn,
                        (long long)count);
  char what[64];
  snprintf(what, sizeof what, "%s: graphs", fn);
  st = gstat_i_progress(ctx, what, 0, count);
  for (int64_t b0 = 0; st == GSTAT_OK && b0 < count;) {
    int64_t nb = count - b0 < chunk ? count - b0 : chunk;
    void *mem = NULL;
    st = gstat_i_sched_device_memory(ctx, fn, A, per * (size_t)nb + 8, &mem);
    if (st == GSTAT_OK) st = run_chunk(ctx, B, o, cdt, b0, nb, mem, &b, out);
    if (st == GSTAT_ENOMEM && chunk > 1) { /* smaller chunks, then the host */
      ctx->last_error[0] = '\0';
      chunk = (chunk + 1) / 2;
      st = GSTAT_OK;
      continue;
    }
    if (st == GSTAT_ECANCELED) break;
    if (st != GSTAT_OK) { /* a step declined or failed: the host engine redoes the batch */
      free(book);
      return on_host_copy(ctx, fn, B, ks, o, out);
    }
    b0 += nb;
    st = gstat_i_progress(ctx, what, b0, count);
  }
  if (st == GSTAT_OK) {
    out->ran = true;
    st = report(ctx, fn, B, o, &b, out);
  }
  free(book);
  return st;
}
