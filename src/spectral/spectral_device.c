/*
 * Batch spectral clustering of dense graphs that lie in CUDA device memory:
 * the whole engine runs in the CUDA module (backend op spectral_dense; only
 * labels, eigenvalues and per-graph numbers come back). When the module
 * cannot (cluster-QR, an invalid weight to report, graphs over its size
 * limit, device memory exhausted), the adjacencies are copied to the host and
 * the host engine runs on the copy: nothing is lost, and the messages are the
 * host engine's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "spectral/spectral_internal.h"

/* The host engine, on the CPU, on a host copy of the adjacencies. */
static gstat_status on_host_copy(gstat_ctx *ctx, const char *fn, const gstat_i_backend *be,
                                 const gstat_i_sc_batch *B, const int64_t *ks,
                                 const gstat_spectral_options *o, gstat_i_sc_out *out) {
  const gstat_matrix *M = &B->G->adjacency;
  size_t cells = (size_t)(M->batch * M->rows * M->cols), es = gstat_dtype_size(M->dtype);
  void *host = malloc(cells * es + 1);
  if (!host)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate a host copy of the graphs", fn);
  gstat_matrix H = gstat_matrix_col_major(host, M->dtype, M->batch, M->rows, M->cols);
  gstat_status st = be->ops->copy(be->state, ctx, M, &H);
  if (st == GSTAT_OK) {
    gstat_graph_batch G = *B->G;
    G.adjacency = H;
    gstat_i_sc_batch HB = {&G, B->node0, B->single};
    /* the CPU throughout (its eigh too): the GPU could not, or failed */
    gstat_backend was = ctx->opt.backend;
    ctx->opt.backend = GSTAT_BACKEND_CPU;
    st = gstat_i_sc_dense(ctx, fn, &HB, ks, o, out);
    ctx->opt.backend = was;
  }
  free(host);
  return st;
}

gstat_status gstat_i_sc_device(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                               const int64_t *ks, const gstat_spectral_options *o,
                               gstat_i_sc_out *out) {
  const gstat_graph_batch *G = B->G;
  int64_t count = G->count;
  gstat_i_backend be;
  gstat_status st = gstat_i_cuda_backend(ctx, &be);
  if (st != GSTAT_OK) {
    char why[sizeof ctx->last_error];
    memcpy(why, ctx->last_error, sizeof why);
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: the graphs are in CUDA device memory, but %s",
                        fn, why);
  }
  if ((st = gstat_i_sc_check_ks(ctx, fn, B, ks, o)) != GSTAT_OK) return st;
  if (!be.ops->spectral_dense) return on_host_copy(ctx, fn, &be, B, ks, o, out);

  /* per graph: sizes, k, eigenvalue offsets, then the results */
  int64_t *mem = malloc(sizeof(int64_t) * (size_t)(8 * count + 2));
  if (!mem)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate for %lld graphs", fn,
                        (long long)count);
  int64_t *sizes = mem, *k = sizes + count, *eig0 = k + count, *k_used = eig0 + count + 1;
  int64_t *comps = k_used + count, *iters = comps + count, *why = iters + count;
  double *inertia = (double *)(why + count);
  eig0[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    sizes[g] = B->node0[g + 1] - B->node0[g];
    k[g] = ks ? ks[g] : o->n_clusters;
    eig0[g + 1] = eig0[g] + gstat_i_sc_eig_count(o, sizes[g], k[g]);
  }
  gstat_i_sc_device_req r = {&G->adjacency,
                             sizes,
                             k,
                             B->node0,
                             eig0,
                             *o,
                             (int)G->symmetrize,
                             (int)G->self_loops,
                             out->labels,
                             out->eigenvalues,
                             k_used,
                             comps,
                             iters,
                             why,
                             inertia};
  st = gstat_i_progress(ctx, "spectral_batch: graphs", 0, count);
  if (st == GSTAT_OK) {
    st = be.ops->spectral_dense(be.state, ctx, &r);
    if (st != GSTAT_OK) { /* the host engine, on a copy */
      ctx->last_error[0] = '\0';
      free(mem);
      return on_host_copy(ctx, fn, &be, B, ks, o, out);
    }
  }
  if (st == GSTAT_OK) {
    out->ran = true;
    ctx->last_backends |= be.ops->ran_flag;
    gstat_status first = GSTAT_OK;
    for (int64_t g = 0; g < count; g++) {
      gstat_i_sc_rec rec = {k_used[g], comps[g], iters[g], why[g], 0, 1, inertia[g], NULL, NULL};
      if (out->k) out->k[g] = rec.k;
      if (out->components) out->components[g] = rec.comps;
      if (out->inertia) out->inertia[g] = rec.why == WHY_OK ? rec.inertia : NAN;
      if (out->iterations) out->iterations[g] = rec.iters;
      if (out->status) out->status[g] = gstat_i_sc_status(rec.why);
      if (first == GSTAT_OK && rec.why != WHY_OK)
        first = gstat_i_sc_failure(ctx, fn, B->single ? -1 : g, &rec, k[g], o->max_clusters);
    }
    st = gstat_i_progress(ctx, "spectral_batch: graphs", count, count);
    if (st == GSTAT_OK) st = first;
  }
  free(mem);
  return st;
}
