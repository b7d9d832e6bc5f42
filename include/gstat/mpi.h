/*
 * gstat over MPI (library gstat_mpi, built when CMake finds MPI; link
 * gstat::gstat_mpi or -lgstat_mpi -lgstat plus your MPI). libgstat itself
 * never depends on MPI: this layer uses only gstat's public API.
 *
 * Conventions common to every function here:
 * - Every function is collective over the handle's communicator: all ranks
 *   must call it with the same `root`, in the same order. A rank whose input
 *   is bad does not leave the others waiting: ranks agree on one status
 *   before any data moves (the status of the lowest failing rank), every rank
 *   returns it, and gstat_mpi_last_error() gives that rank's message
 *   ("rank 2: covariance: ...") on every rank.
 * - root: GSTAT_MPI_ALL_RANKS (results on every rank, identical bits) or a
 *   rank number (results only there; other ranks may pass NULL outputs).
 * - Each rank passes its own gstat_ctx (one per rank; its backend, threads
 *   and finiteness option apply to that rank's share of the work).
 * - Results equal the single-process ones to rounding (the reduction merges
 *   per-rank accumulators in rank order with the library's own merge), and are
 *   the same on every run with the same number of ranks.
 * - Statuses: those of the single-process functions, plus GSTAT_EBACKEND
 *   for an MPI error (the handle's communicator returns MPI errors instead
 *   of aborting) and GSTAT_EINVAL when ranks disagree on a shape.
 * - Thread safety: one handle is used by one thread at a time (MPI must be
 *   initialized at least MPI_THREAD_SERIALIZED when several threads call).
 */
#ifndef GSTAT_MPI_H
#define GSTAT_MPI_H

#include <mpi.h>

#include "gstat/core.h"
#include "gstat/covariance.h"
#include "gstat/linalg.h"
#include "gstat/pca.h"
#include "gstat/spectral.h"

#ifdef __cplusplus
extern "C" {
#endif

/* root value: every rank receives the results. */
#define GSTAT_MPI_ALL_RANKS (-1)

/* A communicator prepared for gstat (a private duplicate, so gstat's messages
 * never match the caller's) plus the last agreed error message. */
typedef struct gstat_mpi gstat_mpi;

/*
 * Collective over comm (MPI must be initialized). *out receives a new handle
 * that the caller releases with gstat_mpi_destroy; on failure *out is NULL.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (out NULL, MPI not initialized, comm
 * MPI_COMM_NULL); GSTAT_ENOMEM; GSTAT_EBACKEND (MPI_Comm_dup failed).
 */
GSTAT_API gstat_status gstat_mpi_create(MPI_Comm comm, gstat_mpi **out);

/* Collective: frees the duplicate communicator. NULL is a no-op (on every rank). */
GSTAT_API void gstat_mpi_destroy(gstat_mpi *m);

/* Rank and size in the handle's communicator (-1 / 0 for NULL). */
GSTAT_API int gstat_mpi_rank(const gstat_mpi *m);
GSTAT_API int gstat_mpi_size(const gstat_mpi *m);

/* Message of the last failed collective call ("" after a success); the same
 * text on every rank. Owned by the handle, valid until its next call. */
GSTAT_API const char *gstat_mpi_last_error(const gstat_mpi *m);

/*
 * Merge every rank's accumulator: afterwards acc on the receiving rank(s)
 * holds the data of all ranks, merged pairwise in rank order along a binary
 * tree (exported states, gstat_cov_accum_export / merge_state), so any
 * split of the rows gives the single-process accumulator to rounding. On
 * ranks that do not receive (root >= 0), acc keeps its own data. Every rank
 * needs an accumulator of the same p and missing mode; an empty one (a rank
 * without rows) is fine.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (NULLs, bad root, p differs between
 * ranks, a state another mode refuses); GSTAT_ENOMEM; GSTAT_EBACKEND.
 */
GSTAT_API gstat_status gstat_mpi_cov_accum_reduce(gstat_mpi *m, gstat_ctx *ctx,
                                                  gstat_cov_accum *acc, int root);

/*
 * Covariance (or correlation) of row-partitioned data: rank r holds X_r,
 * 1 x n_r x p (n_r may be 0; any dtype and strides; host memory, or CUDA
 * memory of the rank's context device: then the rank's mean and co-moment
 * are computed on its GPU, see gstat_cov_accum_add); the result is that of
 * the rows of all ranks stacked in rank order.
 *
 * opt   NULL for defaults. Supported: ddof, fweights (n_r entries, this
 *       rank's rows), missing EVERYTHING or COMPLETE, correlation. aweights
 *       and PAIRWISE are GSTAT_EUNSUPPORTED (the accumulator cannot merge them).
 * C     1 x p x p output on the receiving rank(s) (NULL elsewhere).
 * mean  optional 1 x p x 1 output there.
 * Same NaN rules as gstat_covariance (divisor <= 0 gives NaN, GSTAT_OK).
 * Statuses: GSTAT_OK; GSTAT_EINVAL (shapes, p differs between ranks, bad
 * weights or options); GSTAT_ENOTFINITE; GSTAT_ENOMEM; GSTAT_EUNSUPPORTED;
 * GSTAT_EBACKEND.
 */
GSTAT_API gstat_status gstat_mpi_covariance(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                                            const gstat_cov_options *opt, int root, gstat_matrix *C,
                                            gstat_matrix *mean);

/*
 * PCA of row-partitioned data (rank r holds X_r, 1 x n_r x p, n_r >= 0, in
 * host memory or in CUDA memory of its context's device, as
 * gstat_mpi_covariance: one rank per GPU): local accumulation, one merge,
 * then the eigen decomposition of the merged p x p co-moment
 * (covariance-eigh, so opt->method must be AUTO or COVARIANCE_EIGH) by the
 * handle's eigensolver (gstat_mpi_set_eigensolver): LOCAL, each receiving
 * rank runs gstat_pca_from_accum; SCALAPACK, all ranks run pdsyevd on the
 * block-cyclic matrix and the receiving rank(s) build the result from its
 * eigenpairs with the same code (gstat_pca_from_accum_eigh), so both give
 * the same result to rounding (components, variances, ratios, singular
 * values, mean, scale, noise variance, k by count or by variance fraction).
 * opt must then be the same on every rank. NaN/Inf in any X_r is
 * GSTAT_ENOTFINITE, as gstat_pca. Scores are not computed: each rank
 * projects its own rows with gstat_pca_transform(ctx, res, X_r, ...) on the
 * broadcast result.
 *
 * res   in/out on the receiving rank(s) as gstat_pca (*res NULL allocates);
 *       ignored elsewhere (may be NULL). Free with gstat_pca_result_free.
 * Statuses: those of gstat_pca_from_accum, GSTAT_EINVAL when p differs
 * between ranks or there are no rows at all or the ranks' eigensolver
 * settings differ, GSTAT_EUNSUPPORTED (SCALAPACK asked for and not built;
 * p too large for ScaLAPACK's 32-bit counts on this many ranks),
 * GSTAT_ENOCONV (pdsyevd did not converge), GSTAT_EBACKEND.
 */
GSTAT_API gstat_status gstat_mpi_pca(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                                     const gstat_pca_options *opt, int root,
                                     gstat_pca_result **res);

/*
 * ---- the distributed eigensolver ----
 *
 * For covariance matrices too large for one rank's eigensolver, the eigen
 * step can run on all ranks with ScaLAPACK's pdsyevd (divide and conquer on a
 * block-cyclic matrix, blocks of 64, over a near-square grid of all ranks of
 * the handle's private communicator). Built when CMake finds ScaLAPACK
 * (-DGSTAT_WITH_SCALAPACK, ON by default; Debian: libscalapack-openmpi-dev).
 * It computes in float64 and returns the library's conventions: eigenvalues
 * ascending, each eigenvector's entry of largest magnitude positive (the
 * first one on ties). Threads: pdsyevd's BLAS runs with the process's
 * OpenMP / OpenBLAS setting, not the context's num_threads; run one rank per
 * core with OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1 (threaded BLAS made
 * pdsyevd several times slower in our measurements, bench/README.md,
 * "Measurements moved from code comments"; and OPENBLAS_NUM_THREADS alone
 * did not keep Debian's OpenMP OpenBLAS from spinning up teams). BLACS keeps
 * process-wide state: handles of one process must not run the ScaLAPACK
 * path from several threads at once.
 */
typedef enum gstat_mpi_eigensolver {
  GSTAT_MPI_EIGEN_AUTO = 0,     /* SCALAPACK when built, size > 1 and p >= auto_min_p; else LOCAL */
  GSTAT_MPI_EIGEN_LOCAL = 1,    /* gstat_eigh on one rank (the receiving one, or rank 0) */
  GSTAT_MPI_EIGEN_SCALAPACK = 2 /* pdsyevd over all ranks */
} gstat_mpi_eigensolver;

/* AUTO's default crossover order. On one 32-core node gstat_eigh with 16
 * threads beat pdsyevd on 16 ranks at every order measured (ARCHITECTURE.md,
 * "The ScaLAPACK eigensolver"; bench/README.md, "Measurements moved from code
 * comments"), so AUTO keeps the local solver below p = 20000, where one
 * node's memory and time run out; clusters move this: measure with
 * bench/bench_mpi_eigh and pass auto_min_p. */
#define GSTAT_MPI_SCALAPACK_MIN_P 20000

/* Whether this gstat_mpi was built with ScaLAPACK (1) or not (0). */
GSTAT_API int gstat_mpi_has_scalapack(void);

/*
 * Choose the eigensolver of gstat_mpi_eigh and gstat_mpi_pca. Not
 * collective, but every rank must make the same choice (the collective calls
 * check it: GSTAT_EINVAL on every rank when the ranks would pick different
 * solvers).
 * e           AUTO (the default), LOCAL or SCALAPACK.
 * auto_min_p  AUTO picks SCALAPACK for p >= auto_min_p (with more than one
 *             rank, when built); <= 0 means GSTAT_MPI_SCALAPACK_MIN_P.
 * Statuses: GSTAT_OK; GSTAT_EINVAL (m NULL, e not a gstat_mpi_eigensolver:
 * nothing changed); GSTAT_EUNSUPPORTED (SCALAPACK without ScaLAPACK in this
 * build: the choice is kept anyway, so the later collective calls fail the
 * same way instead of quietly running the local solver). The message is in
 * gstat_mpi_last_error on this rank.
 */
GSTAT_API gstat_status gstat_mpi_set_eigensolver(gstat_mpi *m, gstat_mpi_eigensolver e,
                                                 int64_t auto_min_p);

/*
 * Eigenvalues and eigenvectors of one symmetric p x p matrix, by the
 * handle's eigensolver: LOCAL runs gstat_eigh on the receiving rank (rank 0
 * for GSTAT_MPI_ALL_RANKS, then broadcast: every rank holds the same bits);
 * SCALAPACK distributes A block-cyclically from the rank(s) holding it, runs
 * pdsyevd on all ranks and gathers the results. Both compute in float64 and
 * agree to rounding.
 *
 * ctx   this rank's context (LOCAL runs gstat_eigh with it); the agreed
 *       message of a failure is in gstat_mpi_last_error.
 * A     1 x p x p, GSTAT_F64, host memory, any strides; only the `uplo`
 *       triangle is read. Given on root (root >= 0; other ranks may pass
 *       NULL and p comes from root), or on every rank for
 *       GSTAT_MPI_ALL_RANKS (the same matrix: each rank sends nothing and
 *       takes its share from its own copy). NaN/Inf in the read triangle is
 *       GSTAT_ENOTFINITE.
 * w     1 x p x 1 GSTAT_F64 eigenvalues, ascending, on the receiving
 *       rank(s) (NULL elsewhere).
 * V     NULL for eigenvalues only, or 1 x p x p GSTAT_F64 on the receiving
 *       rank(s): column j is the unit eigenvector of w[j], its entry of
 *       largest magnitude positive. V may be A itself (the same view); other
 *       overlaps of the arguments are not detected. With
 *       GSTAT_MPI_ALL_RANKS, V is given on every rank or on none.
 * The caller owns A, w and V. p = 0 succeeds without touching memory.
 * Statuses (the same on every rank): GSTAT_OK; GSTAT_EINVAL (NULLs, bad
 * root or uplo, shapes, strides, the order of A or the eigensolver choice
 * differs between ranks); GSTAT_ENOTFINITE; GSTAT_EUNSUPPORTED (not
 * GSTAT_F64 or not host memory, SCALAPACK not built, p too large for
 * ScaLAPACK's 32-bit counts on this many ranks); GSTAT_ENOMEM;
 * GSTAT_ENOCONV (no convergence); GSTAT_EBACKEND (MPI or ScaLAPACK error).
 */
GSTAT_API gstat_status gstat_mpi_eigh(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *A,
                                      gstat_uplo uplo, int root, gstat_matrix *w, gstat_matrix *V);

/*
 * Batch spectral clustering with the graphs spread over the ranks.
 *
 * Gs, n_clusters and opt describe the whole batch and must be the same on
 * every rank (count and total nodes are checked). The batch is cut into
 * contiguous ranges of graphs of about equal cost (n^3 + 1 per graph of n
 * nodes, the dense eigensolver's), one range per rank (a rank may get none);
 * each rank clusters its range with gstat_spectral_clustering_batch, and the
 * labels are gathered in the original order: exactly (bitwise) the labels of
 * a single-process gstat_spectral_clustering_batch call.
 *
 * labels        total-nodes entries on the receiving rank(s) (may be NULL
 *               elsewhere).
 * graph_status  optional there, count entries: each graph's own status.
 * k_used        optional there, count entries: the k each graph used.
 * A graph failing on its own (labels -1) makes the call return the status
 * of the first such graph, the others' labels still written; an argument
 * error on any rank's range returns that error on every rank and writes
 * nothing. Statuses: as gstat_spectral_clustering_batch, plus GSTAT_EINVAL
 * (batch differs between ranks), GSTAT_EUNSUPPORTED (a rank's share above
 * INT_MAX nodes), GSTAT_EBACKEND.
 */
GSTAT_API gstat_status gstat_mpi_spectral_clustering_batch(
    gstat_mpi *m, gstat_ctx *ctx, const gstat_graph_batch *Gs, const int64_t *n_clusters,
    const gstat_spectral_options *opt, int root, int64_t *labels, gstat_status *graph_status,
    int64_t *k_used);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_MPI_H */
