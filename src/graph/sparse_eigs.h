/*
 * The k smallest eigenpairs of a large sparse symmetric operator (graph
 * Laplacians of 10^5 - 10^6 nodes), for src/graph and src/spectral.
 * Internal interface (not installed).
 *
 * The operator is given as a function applying it to a block of vectors, so
 * a Laplacian is never formed when it need not be (gstat_laplacian's
 * operator form) and the same solver serves the CPU (threaded CSR SpMV) and
 * the GPU (a backend's Laplacian plan, cuSPARSE; the basis in device memory:
 * the options' `where`).
 *
 * Methods: block Chebyshev-filtered Davidson (default) and thick-restart
 * block Lanczos (Krylov-Schur, default for a block of 1); the reasons are at
 * the top of sparse_eigs.c, the measurements in bench/README.md
 * ("Measurements moved from code comments").
 */
#ifndef GSTAT_GRAPH_SPARSE_EIGS_H
#define GSTAT_GRAPH_SPARSE_EIGS_H

#include <stdint.h>

#include "core/internal.h"

/* Y (n x m, column-major, ld n) = Op X (n x m, ld n), both in the memory
 * the options' `where` names. Returns GSTAT_OK or a failure status (with
 * the context message set). The operator must be symmetric; X and Y never
 * overlap. */
typedef gstat_status (*gstat_i_apply_fn)(gstat_ctx *ctx, void *op, int64_t n, int64_t m,
                                         const double *X, double *Y);

typedef enum gstat_i_eigs_method {
  GSTAT_I_EIGS_AUTO = 0,               /* Chebyshev-Davidson, or Lanczos for a block of 1 */
  GSTAT_I_EIGS_CHEBYSHEV_DAVIDSON = 1, /* block Chebyshev-filtered Davidson */
  GSTAT_I_EIGS_BLOCK_LANCZOS = 2       /* thick-restart block Lanczos (Krylov-Schur) */
} gstat_i_eigs_method;

/* Zero-initialize, then set k (and usually tol, seed, upper): every other
 * zero means the default. */
typedef struct gstat_i_eigs_options {
  int64_t k;        /* wanted eigenpairs (smallest algebraic), 1 <= k <= n */
  double tol;       /* pair i converged when ||Op v - lambda v|| <= tol * max(|lambda|, scale),
                       scale = `upper` when given, else an estimate of ||Op|| (a few
                       Lanczos steps; Lanczos method: the largest |Ritz value| seen).
                       0: the default 1e-8. The eigenvector error is about
                       tol * scale / (gap to the next eigenvalue). Below ~1e-14
                       roundoff may not allow it: ENOCONV after max_iter */
  int64_t max_iter; /* limit on iterations (see the report); 0: 10000 */
  uint64_t seed;    /* random start block: the same seed gives bitwise the same result
                       (for the same thread count and BLAS) */
  double upper;     /* an upper bound of the spectrum (2 for a normalized Laplacian,
                       2 max degree for D - A), or 0 if unknown. Davidson damps
                       [cut, upper] with a polynomial, so it must truly bound the
                       spectrum; it also sets the tolerance's scale (Lanczos uses it
                       for nothing else) */
  int64_t block;    /* block size; 0: min(k, 16). A start block of b vectors finds at most
                       b copies of a repeated eigenvalue: with a smaller block the others
                       are silently missed (returned pairs are true eigenpairs, but not
                       the smallest). Graph callers: eigenvalue 0 repeats once per
                       connected component, rings and square grids have pairs. A block
                       of 1 (Lanczos) is faster on 3-D kNN graphs (slower on 2-D ones)
                       where the graph is known to be connected and without symmetry
                       (bench/README.md, "Measurements moved from code comments") */
  int64_t basis;    /* largest basis before a restart; 0: Davidson max(6 block, k + 3
                       block), Lanczos max(4k, k + 12 block) (a block of 1: max(4k, k +
                       24)) but at most max(k + 4 block, 128). At least k + 2 block
                       (Davidson) or k + block (Lanczos) */
  int64_t cluster;  /* eigenvalues the caller expects close above the wanted ones (a
                       Laplacian's components beside its null space: one smallest nonzero
                       eigenvalue each); 0: none. The default basis is then at least
                       k + 3 cluster: a narrow one converges slowly inside a cluster */
  int64_t degree;   /* Chebyshev filter degree (Davidson); 0: 16 */
  gstat_i_eigs_method method; /* 0: auto */
  /* The memory the operator takes its blocks in (location and device of a
   * descriptor; its data unused), or NULL: the host. The basis lives there
   * and every step on it runs where it lies (backend/sched.h); only the
   * small projected problems come to the host. */
  const gstat_matrix *where;
  /* Eigenvectors known beforehand (a Laplacian's null space: one per
   * connected component): n_known orthonormal columns (n x n_known, host,
   * column-major) of eigenvalue known_value, the operator's smallest. They
   * are returned as the first min(n_known, k) pairs, and the search runs on
   * their complement: the operator shifted by upper - known_value on them
   * (upper required), so no iteration is spent on an eigenvalue repeated
   * once per component. */
  const double *known;
  int64_t n_known;
  double known_value;
  /* Lanczos with a block of 1: keep the basis only semi-orthogonal (Simon's
   * partial reorthogonalization: a step projects against the whole basis
   * when estimates of the loss of orthogonality reach sqrt(eps), instead of
   * every step; a restart makes the kept vectors orthonormal again).
   * 0: on from n = 4096, 1: on, -1: off */
  int partial_reorth;
} gstat_i_eigs_options;

typedef struct gstat_i_eigs_report {
  int64_t iterations;       /* Lanczos: block steps (`block` operator columns each);
                               Davidson: filter steps (degree + 1 block products each) */
  int64_t converged;        /* pairs meeting the tolerance (true residuals) */
  double max_residual;      /* largest residual norm among the k returned */
  int64_t operator_applies; /* columns the operator was applied to, all included */
  int64_t restarts;         /* thick restarts */
  int64_t deflated;         /* basis columns lost to rank deficiency (an exhausted Krylov
                               space) and replaced by random ones */
  double scale;             /* the spectral scale the tolerance was relative to */
  int64_t whole_steps;      /* Lanczos, block 1: steps that projected against the whole basis
                               (all of them without partial reorthogonalization) */
  int dense;                /* 1 when n was too small for the iteration and the operator
                               was formed densely and solved by gstat_eigh */
} gstat_i_eigs_report;

/*
 * The k smallest eigenvalues (ascending, into w) and orthonormal eigenvectors
 * (n x k column-major into V; each column's largest-magnitude entry positive,
 * the library's sign rule) of the symmetric operator, plus the true residual
 * norms ||Op v - lambda v|| (k entries into resid, may be NULL) and a report
 * (may be NULL).
 *
 * Small problems: when the Krylov basis would not fit comfortably (n <
 * 2 (basis + block), which covers k close to n and n < 2k + 1), the operator
 * is applied to the identity and the dense matrix solved with gstat_eigh
 * (report->dense = 1). That is exact but costs n operator columns and O(n^3);
 * callers holding an explicit Laplacian of a few thousand nodes should call
 * gstat_eigh on it directly, which is faster than this iteration there.
 *
 * Memory: n (basis + 4 block) doubles (Davidson with k = 8: 80 n) in the
 * operator's memory (the context's allocator on the host, freed before
 * returning; the device backend's kept workspace), small matrices on the
 * host; the CSR product adds n min(block, 8) for a packed panel per call. Threads: the context's,
 * but one below 4096 nodes (the operator is called with that context too).
 *
 * Statuses: GSTAT_OK when all k converged; GSTAT_ENOCONV when not within
 * max_iter (w, V, resid and the report still hold the best estimates; at
 * least ceil(k / block) iterations run so that there are k of them);
 * GSTAT_EINVAL (NULL pointers, k out of range, negative or NaN tol/upper,
 * bad block/basis); GSTAT_ENOTFINITE (the operator returned NaN or Inf);
 * GSTAT_ENOMEM; GSTAT_ECANCELED (the context's progress callback, called
 * as "sparse_eigs" with iterations of max_iter at each restart, asked to
 * stop; outputs not written); or the operator's own failure status.
 */
gstat_status gstat_i_sparse_eigs(gstat_ctx *ctx, int64_t n, gstat_i_apply_fn apply, void *op,
                                 const gstat_i_eigs_options *opt, double *w, double *V,
                                 double *resid, gstat_i_eigs_report *report);

/* A CSR matrix (int64 offsets) as an operator: Y = A X, rows in parallel
 * (OpenMP, the context's threads), each row summed in index order by one
 * thread (results independent of the thread count). `values` NULL means all
 * ones. Trusted: offsets ascend from 0 and indices are in [0, n) (the graph
 * layer validates); empty rows give zeros. */
typedef struct gstat_i_csr {
  int64_t n;
  const int64_t *offsets; /* n + 1 */
  const int64_t *indices; /* offsets[n] column indices */
  const double *values;   /* offsets[n] values or NULL */
} gstat_i_csr;

/* gstat_i_apply_fn for a gstat_i_csr (op points to it); GSTAT_EINVAL when n
 * differs from csr->n. */
gstat_status gstat_i_csr_apply(gstat_ctx *ctx, void *csr, int64_t n, int64_t m, const double *X,
                               double *Y);

/* The library's sign rule on a vector of n: its largest-magnitude entry
 * positive (the first such entry on ties). */
void gstat_i_fix_sign(double *v, int64_t n);

#endif /* GSTAT_GRAPH_SPARSE_EIGS_H */
