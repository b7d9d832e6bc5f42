/*
 * gstat spectral embedding and spectral clustering, of one graph or of a
 * batch of many graphs of different sizes in one call.
 *
 * The pipeline (scikit-learn's SpectralClustering by default):
 * 1. the graph is validated and symmetrized (graph.h conventions), its
 *    connected components counted;
 * 2. the smallest eigenpairs of its Laplacian: the symmetric normalized one
 *    for GSTAT_LAPLACIAN_SYMMETRIC and RANDOM_WALK (whose eigenvectors are
 *    D^-1/2 times those of the symmetric one, as scikit-learn's embedding),
 *    D - A for UNNORMALIZED; graphs of at most dense_limit nodes by the
 *    core's batched gstat_eigh, larger ones by an iterative solver
 *    (thick-restart block Lanczos) on the Laplacian operator (a large dense
 *    graph is first copied to CSR); a dense float32 or bfloat16 adjacency is
 *    decomposed in float32 (faster; eigenvalues and embedding then carry
 *    float32 precision, e.g. the first eigenvalue is 0 to about 1e-7);
 * 3. the embedding: eigenvectors drop_first .. drop_first + n_components - 1
 *    as columns, each with the sign rule of gstat_eigh (its entry of largest
 *    magnitude positive), rows optionally scaled to unit length
 *    (Ng-Jordan-Weiss);
 * 4. labels by k-means++ (best inertia of n_init runs) or by cluster-QR
 *    (Damle, Minden and Ying), renumbered 0, 1, ... in the order of each
 *    cluster's first node.
 * Results depend only on the graph, the options and the seed: the same on
 * every thread count, one graph at a time or in a batch (bitwise on the CPU
 * backend; a GPU may run a large batch's eigh and differ in the last bits).
 *
 * Disconnected graphs: when a graph has c components and c <= k, it is
 * clustered as usual (the eigenvalue 0 has multiplicity c, and its
 * eigenvectors keep the components apart); c > k has no well-defined
 * answer and gives GSTAT_EINVAL for that graph (a message names c and k),
 * as does any c > 1 under GSTAT_DISCONNECTED_REJECT. Results always report c.
 *
 * Small graphs: n = 0 gives an empty result (k reported 0); 1 <= n: k must
 * be in [1, n] (k = n: every node its own cluster; k > n: GSTAT_EINVAL).
 */
#ifndef GSTAT_SPECTRAL_H
#define GSTAT_SPECTRAL_H

#include "gstat/core.h"
#include "gstat/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gstat_assign_labels {
  GSTAT_ASSIGN_KMEANS = 0,    /* k-means++ initialisation, Lloyd iterations */
  GSTAT_ASSIGN_CLUSTER_QR = 1 /* column-pivoted QR of the embedding (no randomness) */
} gstat_assign_labels;

typedef enum gstat_disconnected {
  GSTAT_DISCONNECTED_AUTO = 0,   /* cluster when components <= k, else GSTAT_EINVAL */
  GSTAT_DISCONNECTED_REJECT = 1, /* any graph with more than one component: GSTAT_EINVAL */
  /* more components than k: cluster anyway from the k smallest eigenvectors
   * (some basis of the null space), as scikit-learn does after its warning */
  GSTAT_DISCONNECTED_PROCEED = 2
} gstat_disconnected;

typedef enum gstat_eigen_solver {
  GSTAT_EIGEN_AUTO = 0,   /* dense up to dense_limit nodes, iterative above, and for a
                             CSR graph whose entries are few for its n (nnz 6000 < n^3:
                             kNN graphs from ~300 nodes; bench/README.md) */
  GSTAT_EIGEN_DENSE = 1,  /* the core's batched eigh of the whole Laplacian */
  GSTAT_EIGEN_SPARSE = 2, /* iterative solver on the Laplacian operator (single graphs): a
                             block of vectors, which finds repeated eigenvalues */
  GSTAT_EIGEN_LANCZOS = 3 /* the same operator, single-vector thick-restart Lanczos: the
                             fastest for graphs of data (kNN, RBF), whose eigenvalues above
                             the components' zeros are simple; like ARPACK it returns a
                             later eigenvalue in place of a second copy of a repeated one
                             (rings, grids) */
} gstat_eigen_solver;

/* Caps on the iterative steps' counts (bounded work whatever the arguments;
 * larger values are GSTAT_EINVAL naming the option). Single graphs report
 * k-means ("kmeans: iterations") and the sparse solver ("sparse_eigs")
 * through the progress callback at every iteration, and stop with
 * GSTAT_ECANCELED when it says so; batches report between chunks of graphs. */
#define GSTAT_SPECTRAL_MAX_N_INIT 1000
#define GSTAT_SPECTRAL_MAX_ITER 100000
#define GSTAT_SPECTRAL_MAX_EIG_ITER 1000000

typedef struct gstat_spectral_options {
  int64_t n_clusters;             /* k >= 1; 0 (default): choose k by the eigengap, the largest
                                     lambda_{k+1} - lambda_k, never below the number of components */
  int64_t max_clusters;           /* eigengap: k is searched in [1, max_clusters] (default 10) */
  int64_t n_components;           /* embedding columns; 0 (default): k */
  gstat_laplacian_kind laplacian; /* default GSTAT_LAPLACIAN_RANDOM_WALK (scikit-learn) */
  int drop_first;                 /* default 0: keep the first eigenvector */
  int normalize_rows;             /* default 0; 1: Ng-Jordan-Weiss row normalization */
  gstat_assign_labels assign;     /* default KMEANS */
  int64_t n_init;                 /* k-means restarts, default 10 (at most 1000) */
  int64_t max_iter;               /* k-means iterations per run, default 300 (at most 100000) */
  double tol;    /* k-means: stop when the centres move by at most tol times the mean
                    variance of the embedding's columns (scikit-learn's rule), default 1e-4 */
  uint64_t seed; /* k-means++ and the sparse solver's start (default 0) */
  gstat_disconnected disconnected; /* default AUTO */
  gstat_eigen_solver solver;       /* default AUTO */
  int64_t dense_limit;             /* AUTO: largest n solved densely (default 2048) */
  double eig_tol;                  /* sparse solver tolerance, relative (default 1e-8) */
  int64_t eig_max_iter;            /* sparse solver iteration limit (0, default: its own, 10000;
                                      at most GSTAT_SPECTRAL_MAX_EIG_ITER) */
} gstat_spectral_options;

/* Defaults as documented in gstat_spectral_options (n_clusters = 0: eigengap). */
GSTAT_API void gstat_spectral_options_init(gstat_spectral_options *opt);

/*
 * Results of one graph. Arrays are malloc'd by the C library and owned by the
 * result (free with gstat_spectral_result_free; a result may outlive its
 * context).
 */
typedef struct gstat_spectral_result {
  int64_t n;                /* nodes */
  int64_t n_clusters;       /* k used (given, or chosen by the eigengap) */
  int64_t n_components;     /* embedding columns */
  int64_t graph_components; /* connected components of the graph */
  int64_t n_eigenvalues;
  double *eigenvalues;       /* the smallest n_eigenvalues of the Laplacian, ascending */
  double *embedding;         /* n x n_components, row-major: row i is node i's point */
  double inertia;            /* sum of squared distances of the points to their cluster mean */
  int64_t kmeans_iterations; /* Lloyd iterations of the retained k-means run (0 for QR) */
  int used_sparse;           /* 1 when the sparse solver ran */
  int64_t eig_iterations;    /* sparse solver: iterations */
  double eig_max_residual;   /* sparse solver: largest ||L v - lambda v|| */
} gstat_spectral_result;

GSTAT_API void gstat_spectral_result_free(gstat_spectral_result *res);

/*
 * Spectral embedding of one graph: the n_components eigenvectors of step 3
 * (n_components, or n_clusters when it is 0, must be >= 1, and
 * n_components + drop_first <= n). A graph with more components than
 * n_components has no determined embedding: GSTAT_EINVAL (AUTO policy).
 *
 * G            one graph: CSR, or DENSE with batch 1.
 * embedding    n x n_components output (any dtype and strides; host or CUDA
 *              device memory, as G's adjacency may be).
 * eigenvalues  optional, n_components + drop_first entries: the smallest
 *              eigenvalues, ascending (the dropped one first).
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL; GSTAT_ENOTFINITE; GSTAT_ENOCONV (sparse
 * solver: outputs hold its best estimates); GSTAT_ENOMEM; GSTAT_EUNSUPPORTED.
 */
GSTAT_API gstat_status gstat_spectral_embedding(gstat_ctx *ctx, const gstat_graph *G,
                                                const gstat_spectral_options *opt,
                                                gstat_matrix *embedding, double *eigenvalues);

/*
 * Spectral clustering of one graph.
 *
 * G       one graph: CSR, or DENSE with batch 1 (host or CUDA device memory:
 *         without res, a device graph the GPU engine takes whole runs as a
 *         batch of one of gstat_spectral_clustering_batch; otherwise its
 *         Laplacian and eigh stay on the device where gstat_eigh would run
 *         such a matrix on the GPU, and the rest runs on the host).
 * opt     NULL for the defaults (k by the eigengap).
 * labels  n entries: cluster of each node in [0, k).
 * res     optional (NULL to skip): *res receives a new result.
 *
 * The result holds n_eigenvalues = min(n, n_components + drop_first) for a
 * given k, min(n, max(max_clusters + 1, n_components + drop_first)) for the
 * eigengap. k-means stopping at max_iter is not an error.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (bad graph or options, k > n,
 * disconnected as described above: labels are then -1 and *res NULL);
 * GSTAT_ENOTFINITE; GSTAT_ENOCONV (an eigensolver did not converge; with the
 * sparse solver the labels and *res still hold the best estimates);
 * GSTAT_ENOMEM; GSTAT_EUNSUPPORTED; GSTAT_ECANCELED (progress callback).
 */
GSTAT_API gstat_status gstat_spectral_clustering(gstat_ctx *ctx, const gstat_graph *G,
                                                 const gstat_spectral_options *opt, int64_t *labels,
                                                 gstat_spectral_result **res);

/* ---- batches of graphs ----------------------------------------------------------- */

/*
 * Many graphs of any sizes.
 * CSR (ragged): one concatenated CSR over total = node_offsets[count] nodes,
 *   block diagonal: graph g owns nodes node_offsets[g] .. node_offsets[g+1]-1,
 *   its rows hold global column indices inside that range. offsets has
 *   total + 1 entries (offsets[0] = 0), weights may be NULL.
 * DENSE (padded): adjacency batch = count matrices of nmax x nmax; graph g is
 *   the leading sizes[g] x sizes[g] block of element g (sizes NULL: all nmax);
 *   the padding is never read. Its node range in the outputs is
 *   node_offsets-like: the prefix sums of the sizes.
 */
typedef struct gstat_graph_batch {
  gstat_graph_format format;
  int64_t count;
  const int64_t *node_offsets; /* CSR: count + 1 */
  const int64_t *offsets;      /* CSR: node_offsets[count] + 1 */
  const int64_t *indices;
  const double *weights;
  gstat_matrix adjacency; /* DENSE */
  const int64_t *sizes;   /* DENSE: count entries, or NULL */
  gstat_symmetrize symmetrize;
  gstat_self_loops self_loops;
} gstat_graph_batch;

/*
 * Per-graph results of a batch (malloc'd, owned by the result; free with
 * gstat_spectral_batch_result_free). Graph g's eigenvalues are
 * eigenvalues[eig_offsets[g] .. eig_offsets[g+1]-1].
 */
typedef struct gstat_spectral_batch_result {
  int64_t count;
  int64_t *n_clusters;       /* count: k used */
  int64_t *graph_components; /* count */
  double *inertia;           /* count */
  gstat_status *status;      /* count: GSTAT_OK or the graph's own failure */
  int64_t *eig_offsets;      /* count + 1 */
  double *eigenvalues;
} gstat_spectral_batch_result;

GSTAT_API void gstat_spectral_batch_result_free(gstat_spectral_batch_result *res);

/*
 * Spectral clustering of every graph of a batch, exactly as a loop of
 * gstat_spectral_clustering calls with the same options would label them
 * (dense solver; opt->solver SPARSE is GSTAT_EINVAL here). Graphs of equal
 * size share one batched gstat_eigh call (in chunks of at most 64 MiB);
 * graphs above the size where the CPU eigh switches to LAPACK with threaded
 * BLAS (128 nodes) get one call each, which keeps them bitwise equal to
 * one-at-a-time calls. The per-graph work (Laplacians, embeddings, k-means)
 * runs in parallel over graphs. Progress is reported
 * through the context's callback ("spectral_batch: graphs", done/total
 * graphs) between chunks of graphs, and cancelling it stops the call with
 * GSTAT_ECANCELED (labels of unfinished graphs are -1). A chunk that fails
 * as a whole (GSTAT_ENOMEM, a solver's failure) stops the call the same
 * way: the graphs done keep their labels and results, the others get labels
 * -1 and the call's status in res.
 *
 * A DENSE batch in CUDA device memory (Gs->adjacency.location ==
 * GSTAT_CUDA, float32 or float64, at most 1024 nodes) is clustered on the GPU
 * (the CUDA module; the per-graph steps are the CPU engine's own code, so
 * labels agree with a host run up to the rounding of the eigenvectors);
 * labels and res are host memory as always. Cluster-QR, larger graphs,
 * invalid weights (for their message) and GPU failures run the host engine
 * on the CPU on a copy. Without a usable CUDA module it is GSTAT_EUNSUPPORTED.
 *
 * n_clusters  optional, count entries: k of each graph (0: its eigengap);
 *             NULL: opt->n_clusters for all.
 * labels      node_offsets[count] (CSR) or sum of sizes (DENSE) entries:
 *             graph g's labels at its node range.
 * res         optional: *res receives a new batch result.
 *
 * A graph that fails on its own (disconnected with c > k, k-means not
 * converged, NaN or Inf weights: GSTAT_ENOTFINITE) gets labels -1 and its
 * status in res; the others are computed, and the call returns the first
 * such status with a message naming the graph. Argument errors (descriptor,
 * options, any graph's CSR structure, negative or asymmetric weights, k
 * outside [1, n]) fail the whole call before anything is written.
 */
GSTAT_API gstat_status gstat_spectral_clustering_batch(gstat_ctx *ctx, const gstat_graph_batch *Gs,
                                                       const int64_t *n_clusters,
                                                       const gstat_spectral_options *opt,
                                                       int64_t *labels,
                                                       gstat_spectral_batch_result **res);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_SPECTRAL_H */
