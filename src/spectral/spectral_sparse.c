/* One large CSR graph: the smallest eigenpairs of its Laplacian operator by
 * the iterative solver of graph/sparse_eigs.h (no dense matrix), then the
 * same embedding and assignment as the dense engine. */
#include <math.h>
#include <stdlib.h>

#include "graph/graph_internal.h"
#include "graph/laplacian_op.h"
#include "graph/sparse_eigs.h"
#include "spectral/spectral_sparse.h"
#include "backend/sched.h"

/* The smallest eigenpairs of the operator's Laplacian: on the device where
 * the scheduler plans it there (the basis in device memory, only the small
 * projected problems on the host), else on the host; a device failure that
 * the host can take (out of memory, a backend error) reruns on the host. */
static gstat_status lowest_pairs(gstat_ctx *ctx, const char *fn, gstat_laplacian_op *op,
                                 gstat_i_eigs_options *eo, double *w, double *V,
                                 gstat_i_eigs_report *rep) {
  int64_t n = gstat_laplacian_op_size(op);
  double *p = malloc(sizeof(double) * (size_t)(n + 1));
  gstat_i_csr_lap A;
  gstat_i_sched_lap plan;
  gstat_status st = GSTAT_EUNSUPPORTED;
  if (p && gstat_i_laplacian_op_csr(op, p, &A) &&
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

gstat_status gstat_i_sc_sparse(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                               const gstat_spectral_options *o, int64_t k, int64_t *labels,
                               double *eig_out, double *emb_out, bool embed_only, gstat_i_sc_rec *r,
                               gstat_i_eigs_report *rep) {
  gstat_laplacian_op *op = NULL;
  int64_t *lab = NULL;
  double *V = NULL, *scratch = NULL;
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
  r->comps = gstat_i_laplacian_op_components(op, lab, lab + n);
  if (o->disconnected == GSTAT_DISCONNECTED_REJECT && r->comps > 1)
    r->why = WHY_REJECT;
  else if (k > 0 && r->comps > k && o->disconnected != GSTAT_DISCONNECTED_PROCEED)
    r->why = WHY_SPLIT;
  if (r->why != WHY_OK) goto fail;

  double maxdeg = 0;
  for (int64_t i = 0; i < n; i++) maxdeg = fmax(maxdeg, d[i]);
  gstat_i_eigs_options eo = {0};
  eo.k = m;
  eo.tol = o->eig_tol;
  eo.max_iter = o->eig_max_iter;
  eo.seed = o->seed;
  eo.upper = o->laplacian == GSTAT_LAPLACIAN_UNNORMALIZED ? 2 * maxdeg : 2.0;
  /* a block smaller than the multiplicity of 0 (the components) misses copies */
  eo.block = m < 16 ? m : 16;
  if (r->comps > eo.block) eo.block = r->comps < m ? r->comps : m;
  /* A dense operator costs one pass over n^2 entries per product of up to 8
   * vectors: count block products. Lanczos needs far fewer than Davidson's
   * degree-16 filters (rbf n = 3000, k = 4: 12 against 53 products, 226 against
   * 376 ms end to end; bench/README.md). */
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
  free(lab);
  free(V);
  free(scratch);
  return st;
}
