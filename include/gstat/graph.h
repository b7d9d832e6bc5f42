/*
 * gstat graphs: descriptors of weighted undirected graphs (dense adjacency
 * batches, CSR with int64 offsets, edge lists), connected components,
 * affinity graphs built from data (RBF, k-nearest neighbours, mutual kNN,
 * epsilon neighbourhood) and graph Laplacians (dense, CSR, or an operator).
 *
 * Conventions for every function here:
 * - Graphs are undirected with non-negative weights. An input that is not
 *   symmetric is refused (GSTAT_EINVAL naming the first asymmetric pair)
 *   unless its descriptor asks for a symmetrization: MAX (w_ij = max(a_ij,
 *   a_ji)), MEAN ((a_ij + a_ji) / 2, scikit-learn's 0.5 (A + A^T)) or SUM
 *   (a_ij + a_ji). A missing entry counts as 0. An input is taken as
 *   symmetric when each a_ij and a_ji agree to 1e-10 relative (float64; 64
 *   units in the last place for float32, 4 for bfloat16), the rounding
 *   other libraries' kernels leave; then their mean is used.
 * - Self-loops (a_ii) are dropped by default, as scipy.sparse.csgraph
 *   does; GSTAT_LOOPS_KEEP counts them in the degree.
 * - Weights must be finite (NaN/Inf: GSTAT_ENOTFINITE, whatever the context's
 *   finiteness option) and >= 0 (negative: GSTAT_EINVAL). A zero weight is
 *   no edge: it connects nothing and adds nothing to a degree.
 * - CSR rows must hold strictly increasing column indices: unsorted rows and
 *   duplicate entries are REJECTED (GSTAT_EINVAL naming the row). Edge lists
 *   (gstat_csr_from_edges) may be in any order and their duplicates are
 *   SUMMED; convert a messy CSR through it.
 * - Isolated nodes (degree 0) are their own component. In normalized
 *   Laplacians their row and column are zero (scipy's convention: the
 *   degree 0 is replaced by 1 when dividing, and the diagonal is 0).
 * - Dense adjacencies, data X and the dense outputs (L, degrees, A) may lie
 *   in host or CUDA device memory (the descriptor's location), each where the
 *   caller put it; CSR arrays, labels and other plain pointers are host
 *   memory. Results are the same either way; steps without a device
 *   primitive yet run on a host copy. Device memory without a usable CUDA
 *   module is GSTAT_EUNSUPPORTED. Caller-owned outputs; the library frees
 *   only what a gstat_*_create / gstat_csr_from_* call made. n = 0 (or an empty batch)
 *   succeeds without touching memory. Messages name the argument and entry.
 */
#ifndef GSTAT_GRAPH_H
#define GSTAT_GRAPH_H

#include "gstat/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- graph descriptors ----------------------------------------------------- */

typedef enum gstat_symmetrize {
  GSTAT_SYM_CHECK = 0, /* default: the input must already be symmetric */
  GSTAT_SYM_MAX = 1,
  GSTAT_SYM_MEAN = 2,
  GSTAT_SYM_SUM = 3,
  GSTAT_SYM_MIN = 4 /* min(a_ij, a_ji): an edge only when both directions have one */
} gstat_symmetrize;

typedef enum gstat_self_loops {
  GSTAT_LOOPS_DROP = 0, /* default: the diagonal is ignored (scipy) */
  GSTAT_LOOPS_KEEP = 1  /* a_ii counts in the degree d_i = sum_j a_ij */
} gstat_self_loops;

/* A square sparse matrix in compressed sparse row form with int64 offsets:
 * row i holds entries offsets[i] .. offsets[i+1]-1, at columns indices[e]
 * with values weights[e] (weights NULL: every stored entry weighs 1).
 * As an input it is a view of caller memory; gstat_csr_from_edges and the
 * affinity functions return one the library owns (gstat_csr_free). */
typedef struct gstat_csr {
  int64_t n;   /* rows = columns = nodes */
  int64_t nnz; /* stored entries; must equal offsets[n] */
  const int64_t *offsets;
  const int64_t *indices;
  const double *weights;
} gstat_csr;

typedef enum gstat_graph_format { GSTAT_GRAPH_DENSE = 1, GSTAT_GRAPH_CSR = 2 } gstat_graph_format;

/* One graph (CSR), or a batch of equally sized dense adjacency matrices.
 * Build it with gstat_graph_dense / gstat_graph_csr, then set symmetrize or
 * self_loops when the defaults do not fit. */
typedef struct gstat_graph {
  gstat_graph_format format;
  gstat_matrix adjacency; /* DENSE: batch x n x n, any dtype, strides (host) */
  gstat_csr csr;          /* CSR: one graph */
  gstat_symmetrize symmetrize;
  gstat_self_loops self_loops;
} gstat_graph;

/* Descriptors (they only fill fields; nothing is checked or copied). */
GSTAT_API gstat_graph gstat_graph_dense(const gstat_matrix *adjacency);
GSTAT_API gstat_graph gstat_graph_csr(int64_t n, const int64_t *offsets, const int64_t *indices,
                                      const double *weights);

/*
 * A CSR graph from an edge list: edge e goes from src[e] to dst[e] with
 * weight weights[e] (weights NULL: 1). Duplicate edges are summed, then the
 * result is symmetrized by `sym` (an undirected edge list giving each edge
 * once wants GSTAT_SYM_MAX; GSTAT_SYM_CHECK refuses a result that is not
 * symmetric). Self-loops are kept as entries (the graph's self_loops policy
 * decides later whether they count). Rows come out sorted.
 *
 * out  receives a new CSR owned by the library; free it with gstat_csr_free.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (NULL argument, n < 0, n_edges < 0, an
 * index outside [0, n), a negative weight, asymmetric with CHECK);
 * GSTAT_ENOTFINITE (a NaN/Inf weight); GSTAT_ENOMEM. *out stays NULL on failure.
 */
GSTAT_API gstat_status gstat_csr_from_edges(gstat_ctx *ctx, int64_t n, int64_t n_edges,
                                            const int64_t *src, const int64_t *dst,
                                            const double *weights, gstat_symmetrize sym,
                                            gstat_csr **out);

/* Free a CSR the library made (NULL is a no-op). Never pass a caller's view. */
GSTAT_API void gstat_csr_free(gstat_csr *csr);

/*
 * Connected components (edges of positive weight, either direction; the
 * symmetrize mode is not applied, but the input is validated like every
 * other function's input).
 *
 * n_components  batch entries (1 for a CSR graph): the number of components.
 * labels        optional (NULL to skip), batch x n: component of each node,
 *               numbered 0, 1, ... in the order of each component's first node.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL; GSTAT_ENOTFINITE; GSTAT_ENOMEM.
 */
GSTAT_API gstat_status gstat_graph_components(gstat_ctx *ctx, const gstat_graph *G,
                                              int64_t *n_components, int64_t *labels);

/* ---- Laplacians -------------------------------------------------------------- */

typedef enum gstat_laplacian_kind {
  GSTAT_LAPLACIAN_UNNORMALIZED = 0, /* L = D - A */
  GSTAT_LAPLACIAN_SYMMETRIC = 1,    /* L = I - D^-1/2 A D^-1/2 (scipy normed=True) */
  GSTAT_LAPLACIAN_RANDOM_WALK = 2   /* L = I - D^-1 A (not symmetric) */
} gstat_laplacian_kind;

/*
 * The Laplacian of a graph as a dense matrix batch.
 *
 * G        DENSE (batch x n x n) or CSR (gives batch 1).
 * L        batch x n x n output, any dtype and strides; every entry written.
 * degrees  optional (NULL to skip) batch x n x 1 output: d_i after
 *          symmetrization and the self-loop policy.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (bad descriptor or kind, shapes, input
 * not symmetric under CHECK, negative weight, CSR errors); GSTAT_ENOTFINITE;
 * GSTAT_ENOMEM; GSTAT_EUNSUPPORTED (device memory without a CUDA module). Nothing is
 * written on failure.
 */
GSTAT_API gstat_status gstat_laplacian(gstat_ctx *ctx, const gstat_graph *G,
                                       gstat_laplacian_kind kind, gstat_matrix *L,
                                       gstat_matrix *degrees);

/*
 * The Laplacian as CSR into caller buffers: rows sorted, the diagonal
 * always stored (also when 0), off-diagonal entries where the symmetrized
 * graph has a positive weight.
 *
 * Call it first with offsets == NULL to learn *nnz; then with offsets
 * (n + 1), indices and values (capacity entries each). degrees: optional,
 * n entries. A capacity below the need is GSTAT_EINVAL (*nnz still set).
 * Statuses as gstat_laplacian (G must be a single graph: CSR, or DENSE with
 * batch 1).
 */
GSTAT_API gstat_status gstat_laplacian_csr(gstat_ctx *ctx, const gstat_graph *G,
                                           gstat_laplacian_kind kind, int64_t capacity,
                                           int64_t *offsets, int64_t *indices, double *values,
                                           int64_t *nnz, double *degrees);

/*
 * The Laplacian as an operator: Y = L X without forming L. The operator
 * keeps pointers to a CSR graph's arrays when the graph needs no
 * symmetrization and has no self-loop to drop (the caller must then keep
 * them alive and unchanged until gstat_laplacian_op_destroy); otherwise it
 * holds its own symmetrized CSR copy. A DENSE graph (batch 1) is kept as a
 * dense scaled adjacency and applied by GEMM. It owns the degree vector.
 * Create validates like gstat_laplacian. Use an operator from one thread at
 * a time (apply takes scratch from the context's workspace).
 */
typedef struct gstat_laplacian_op gstat_laplacian_op;

GSTAT_API gstat_status gstat_laplacian_op_create(gstat_ctx *ctx, const gstat_graph *G,
                                                 gstat_laplacian_kind kind,
                                                 gstat_laplacian_op **op);

/* Y (n x m, column-major, leading dimension n) = L X (same shape). X and Y
 * must not overlap. Rows run in parallel on the context's threads.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (NULL, m < 0). */
GSTAT_API gstat_status gstat_laplacian_op_apply(gstat_ctx *ctx, const gstat_laplacian_op *op,
                                                int64_t m, const double *X, double *Y);

/* Nodes of the operator's graph, and its degrees (n entries, owned by op). */
GSTAT_API int64_t gstat_laplacian_op_size(const gstat_laplacian_op *op);
GSTAT_API const double *gstat_laplacian_op_degrees(const gstat_laplacian_op *op);

/* Free the operator (NULL is a no-op). */
GSTAT_API void gstat_laplacian_op_destroy(gstat_laplacian_op *op);

/* ---- affinities from data ------------------------------------------------------ */

typedef enum gstat_affinity_kind {
  GSTAT_AFFINITY_RBF = 0,        /* a_ij = exp(-gamma ||x_i - x_j||^2), complete graph */
  GSTAT_AFFINITY_KNN = 1,        /* k nearest neighbours, symmetrized by opt.symmetrize */
  GSTAT_AFFINITY_MUTUAL_KNN = 2, /* edge when each point is among the other's k nearest */
  GSTAT_AFFINITY_EPSILON = 3     /* edge when ||x_i - x_j|| <= epsilon */
} gstat_affinity_kind;

typedef enum gstat_knn_weights {
  GSTAT_KNN_CONNECTIVITY = 0, /* weight 1 (scikit-learn mode="connectivity") */
  GSTAT_KNN_DISTANCE = 1      /* weight = Euclidean distance (mode="distance") */
} gstat_knn_weights;

/* How gstat_knn_with_options searches (scikit-learn's `algorithm`, plus
 * NN-descent). Every method but NNDESCENT gives the exact answer. */
typedef enum gstat_knn_algorithm {
  GSTAT_KNN_AUTO = 0,     /* default, exact: on the CPU the k-d tree up to 16 dimensions and the
                             GEMM search above; on the GPU (device data, or host data when the
                             context or the cost model says so) the GEMM search. Never
                             approximate. */
  GSTAT_KNN_TREE = 1,     /* exact: the CPU's k-d tree (at most 16 dimensions, else EINVAL; device
                             data are copied to the host) */
  GSTAT_KNN_BRUTE = 2,    /* exact: blocked GEMM distances (the CPU's, or the GPU's where AUTO
                             would run there) */
  GSTAT_KNN_NNDESCENT = 3 /* APPROXIMATE, on the CPU (device data are copied to the host):
                             NN-descent from a seeded random start; a true neighbour may be
                             missed (recall >= 0.99 on blobs of up to 128 dimensions:
                             bench/README.md, "Approximate kNN"), the distances listed are
                             exact. On the Gaussian blobs measured (up to 10^5 points, 10-128
                             dimensions) it is not faster than the exact search; it is meant
                             for data of low intrinsic dimension in many coordinates. With few
                             points (n below about max(3 k, 2 k + 16)) or k above ~170 it runs the
                             exact GEMM search. */
} gstat_knn_algorithm;

typedef struct gstat_knn_options {
  gstat_knn_algorithm algorithm; /* default AUTO */
  uint64_t seed;                 /* NNDESCENT: its random start and samples (default 0); the
                                    result depends only on the data, k and the seed */
} gstat_knn_options;

/* Defaults as documented in gstat_knn_options. */
GSTAT_API void gstat_knn_options_init(gstat_knn_options *opt);

typedef struct gstat_affinity_options {
  gstat_affinity_kind kind;    /* default RBF */
  double gamma;                /* RBF; <= 0 (default 0): 1 / n_features, scikit-learn's default */
  int64_t n_neighbors;         /* kNN: default 10 */
  int include_self;            /* kNN: the point is its own first neighbour (default 1, as
                                  scikit-learn's SpectralClustering; the self-loop it makes
                                  is dropped by the default Laplacians; with distance
                                  weights it weighs 0 and is not stored) */
  gstat_knn_weights weights;   /* kNN, mutual kNN, epsilon: default CONNECTIVITY */
  gstat_symmetrize symmetrize; /* KNN: default MEAN, i.e. scikit-learn's (A + A^T) / 2;
                                  CHECK is not allowed here */
  double epsilon;              /* EPSILON: radius, > 0 (no self-loops) */
  gstat_knn_options knn;       /* kNN kinds: how neighbours are searched (default exact) */
} gstat_affinity_options;

/* Defaults as documented in gstat_affinity_options. */
GSTAT_API void gstat_affinity_options_init(gstat_affinity_options *opt);

/*
 * An affinity graph of the points of X (rows = points, any dtype/strides,
 * host), as a library-owned CSR (free with gstat_csr_free). Rows sorted;
 * the result is symmetric. kNN kinds find their neighbours as gstat_knn;
 * RBF and epsilon distances come from blocked GEMM products
 * (||x||^2 + ||y||^2 - 2 x.y in float64, clipped at 0, exactly 0 on the
 * diagonal). X must be a single dataset (batch 1) with n >= 1 points.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shape, options: n_neighbors outside
 * [1, n] with include_self or [1, n - 1] without, epsilon <= 0 or not
 * finite, a CHECK symmetrization for kNN); GSTAT_ENOTFINITE
 * (NaN/Inf in X, named); GSTAT_ENOMEM; GSTAT_EUNSUPPORTED (device memory without a
 * CUDA module).
 */
GSTAT_API gstat_status gstat_affinity_csr(gstat_ctx *ctx, const gstat_matrix *X,
                                          const gstat_affinity_options *opt, gstat_csr **out);

/*
 * The k nearest neighbours (Euclidean) of every point (row) of X among X's
 * own points, as scikit-learn's NearestNeighbors().fit(X).kneighbors(): row
 * i of indices (n x k int64, row-major, the caller's) lists them by
 * (distance, index), so ties go to the smaller index, and distances (n x k
 * doubles, row-major, or NULL) holds their distances. With include_self the
 * point itself comes first (distance 0) and k - 1 others follow; without,
 * k others. X: any dtype and strides, host or CUDA device memory, batch 1.
 * Every path gives the same answer: the exact float64 squared distances
 * from the coordinates, ordered by (distance, index). On the CPU up to 16
 * dimensions a k-d tree searches (its cost grows like n log n on clustered
 * data); above, and on the GPU (device data; host data when the context or
 * its cost model says so), blocked GEMM distances (float32 ones for float32
 * and bfloat16 data) choose the candidates within a proven bound of their
 * rounding, whose distances are then measured exactly. Reports progress
 * ("knn", on the CPU) and honours cancellation.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL (NULL, shape, k outside [1, n] with
 * include_self or [1, n - 1] without); GSTAT_ENOTFINITE (NaN/Inf in X,
 * named); GSTAT_ENOMEM; GSTAT_ECANCELED.
 */
GSTAT_API gstat_status gstat_knn(gstat_ctx *ctx, const gstat_matrix *X, int64_t k, int include_self,
                                 int64_t *indices, double *distances);

/*
 * gstat_knn with a choice of method (opt NULL: the defaults, i.e.
 * gstat_knn). opt->algorithm GSTAT_KNN_NNDESCENT is approximate (see
 * gstat_knn_algorithm); the others give gstat_knn's exact answer. Statuses
 * as gstat_knn, and GSTAT_EINVAL for an unknown algorithm or TREE above 16
 * dimensions.
 */
GSTAT_API gstat_status gstat_knn_with_options(gstat_ctx *ctx, const gstat_matrix *X, int64_t k,
                                              int include_self, const gstat_knn_options *opt,
                                              int64_t *indices, double *distances);

/*
 * The same affinities as dense matrices, batched: X batch x n x p, A
 * batch x n x n (any dtype and strides; every entry written, 0 where no
 * edge; RBF's diagonal is 1). Statuses as gstat_affinity_csr.
 */
GSTAT_API gstat_status gstat_affinity_dense(gstat_ctx *ctx, const gstat_matrix *X,
                                            const gstat_affinity_options *opt, gstat_matrix *A);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_GRAPH_H */
