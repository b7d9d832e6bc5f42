/* Spectral internals (never installed): embedding, eigengap, k-means,
 * cluster-QR, and the dense batch engine behind both public entry points.
 * Everything per graph is serial and allocation-free (scratch from the
 * caller), so graphs can run in parallel and give the same bits on any
 * thread count. */
#ifndef GSTAT_SPECTRAL_INTERNAL_H
#define GSTAT_SPECTRAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"
#include "gstat/spectral.h"
#include "spectral/assign_impl.h" /* gstat_i_kmeans_opt */

/* Embedding E (n x dim, row-major) from eigenvectors V (n x ?, column-major,
 * ld ldv): columns first .. first+dim-1; rows scaled by 1/sqrt(d_i) when
 * d is not NULL (random-walk eigenvectors; d_i = 0 counts as 1); each column
 * signed so that its entry of largest magnitude is positive (first on ties);
 * rows scaled to unit length when normalize_rows (zero rows stay zero). */
void gstat_i_embedding(int64_t n, const double *V, int64_t ldv, int64_t first, int64_t dim,
                       const double *d, bool normalize_rows, double *E);

/* k in [1, kmax] maximizing w[k] - w[k-1] (first on ties); w ascending with
 * at least kmax + 1 entries; kmax < 1 gives 1. */
int64_t gstat_i_eigengap(const double *w, int64_t kmax);

/* gstat_i_kmeans with the n_init runs spread over the context's threads
 * (ctx: a gstat_ctx *), bitwise the same result; serial below a size where
 * threads do not pay. A gstat_i_km_runs for one graph's record. */
bool gstat_i_kmeans_runs(void *ctx, const double *X, int64_t n, int64_t dim,
                         const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                         int64_t *iterations, double *scratch);

/* Doubles of scratch gstat_i_kmeans needs. */
size_t gstat_i_kmeans_scratch(int64_t n, int64_t dim, int64_t k);
/* Best of n_init k-means++ / Lloyd runs on the rows of X (n x dim,
 * row-major): labels (n), inertia, Lloyd iterations of the best run. */
bool gstat_i_kmeans(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                    int64_t *labels, double *inertia, int64_t *iterations, double *scratch);
/* The k-means tick of a single graph: progress "kmeans: iterations" through
 * the context (ctx), false when the caller cancelled. */
bool gstat_i_sc_km_tick(void *ctx, int64_t done, int64_t total);

/* ---- the dense engine ------------------------------------------------------------ */

/* A batch in the engine's terms: graph g has n(g) nodes whose labels go to
 * labels[node0(g) ...]. */
typedef struct gstat_i_sc_batch {
  const gstat_graph_batch *G;
  int64_t *node0; /* count + 1: first output node of each graph */
  bool single;    /* one graph of a single-graph call: messages say "G" */
} gstat_i_sc_batch;

/* Per-graph outputs the engine fills (arrays of count, any may be NULL). */
typedef struct gstat_i_sc_out {
  int64_t *labels;     /* node0[count] */
  int64_t *k;          /* k used */
  int64_t *components; /* connected components */
  double *inertia;
  int64_t *iterations; /* k-means iterations */
  gstat_status *status;
  const int64_t *eig_offsets; /* with eigenvalues: count + 1 */
  double *eigenvalues;
  double *embedding; /* count must be 1: n x dim row-major, dim reported in *dim */
  int64_t *dim;
  bool embed_only; /* stop after the embedding (gstat_spectral_embedding) */
  bool ran;        /* set by the engine once it started writing outputs */
} gstat_i_sc_out;

/* Doubles of per-thread scratch for a graph of n nodes, at most kmax
 * clusters and dmax embedding columns. */
size_t gstat_i_sc_thread_scratch(int64_t n, int64_t kmax, int64_t dmax);

/* From the smallest eigenpairs (V: n x ?, column-major, ld n; w ascending,
 * gstat_i_sc_eig_count of them) and degrees d to labels: eigengap k when
 * k = 0, embedding (into emb_out, or scratch), k-means or cluster-QR,
 * renumbering, inertia. r->comps and r->why come from the caller. */
void gstat_i_sc_assign(const gstat_spectral_options *o, int64_t n, int64_t k, const double *V,
                       const double *w, const double *d, gstat_i_sc_rec *r, int64_t *labels,
                       double *eig_out, double *emb_out, bool embed_only, double *scratch);

/* Status of a failure reason, and its message for graph g (into ctx; g < 0: "G"). */
gstat_status gstat_i_sc_status(int64_t why);
gstat_status gstat_i_sc_failure(gstat_ctx *ctx, const char *fn, int64_t g, const gstat_i_sc_rec *r,
                                int64_t k, int64_t max_clusters);

/* Eigenvalues the engine reports for a graph of n nodes asking for k (0: eigengap). */
int64_t gstat_i_sc_eig_count(const gstat_spectral_options *o, int64_t n, int64_t k);

/* Validate options (after defaults) that do not depend on a graph. */
gstat_status gstat_i_sc_check_options(gstat_ctx *ctx, const char *fn,
                                      const gstat_spectral_options *o);

/* Run the dense engine over the batch (arguments validated by the caller,
 * except the graphs' contents, which it validates before writing). k per
 * graph from ks (NULL: o->n_clusters). Returns GSTAT_OK, an argument error
 * (nothing written), GSTAT_ECANCELED, or the first graph's own failure. */
gstat_status gstat_i_sc_dense(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                              const int64_t *ks, const gstat_spectral_options *o,
                              gstat_i_sc_out *out);

/* The per-graph k (and embedding width) checks of the engine: an argument
 * error for the first graph that fails them. */
gstat_status gstat_i_sc_check_ks(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                                 const int64_t *ks, const gstat_spectral_options *o);
/* The engine for a dense batch in CUDA device memory (spectral_device.c):
 * the backend's sc_laplacians, eigh and sc_assign where the graphs lie, or
 * the host engine on a copy where a step declines (same contract as
 * gstat_i_sc_dense). */
gstat_status gstat_i_sc_device(gstat_ctx *ctx, const char *fn, const gstat_i_sc_batch *B,
                               const int64_t *ks, const gstat_spectral_options *o,
                               gstat_i_sc_out *out);

/* One dense graph in CUDA device memory with its embedding wanted
 * (spectral_chain.c): Laplacian and eigh in device memory, the assignment on
 * the host. *handled false (nothing done) when the eigh would not stay on
 * the device or there is no device memory for it: the caller then runs the
 * host engine on a copy. A graph's own failure gives labels -1 and its
 * status, as the engine's. */
gstat_status gstat_i_sc_device_one(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                   const gstat_spectral_options *o, int64_t *labels, double *eig,
                                   double *emb, bool embed_only, gstat_i_sc_rec *r, bool *handled);

#endif /* GSTAT_SPECTRAL_INTERNAL_H */
