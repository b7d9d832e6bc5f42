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
 * gstat_mpi_covariance: one rank per GPU):
 * local accumulation, one merge, one eigen decomposition per receiving rank
 * (gstat_pca_from_accum: covariance-eigh, so opt->method must be AUTO or
 * COVARIANCE_EIGH). NaN/Inf in any X_r is GSTAT_ENOTFINITE, as gstat_pca.
 * Scores are not computed: each rank projects its own rows with
 * gstat_pca_transform(ctx, res, X_r, ...) on the broadcast result.
 *
 * res   in/out on the receiving rank(s) as gstat_pca (*res NULL allocates);
 *       ignored elsewhere (may be NULL). Free with gstat_pca_result_free.
 * Statuses: those of gstat_pca_from_accum, GSTAT_EINVAL when p differs
 * between ranks or there are no rows at all, GSTAT_EBACKEND.
 */
GSTAT_API gstat_status gstat_mpi_pca(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *X,
                                     const gstat_pca_options *opt, int root,
                                     gstat_pca_result **res);

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
