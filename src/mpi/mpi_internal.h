/* Shared pieces of gstat_mpi: the handle and the status agreement. */
#ifndef GSTAT_MPI_INTERNAL_H
#define GSTAT_MPI_INTERNAL_H

#include <stddef.h>

#include "gstat/mpi.h"

#define GSTAT_MPI_MSG 512

struct gstat_mpi {
  MPI_Comm comm; /* private duplicate: our point-to-point tags cannot meet the caller's */
  int rank, size;
  char msg[GSTAT_MPI_MSG];
  gstat_mpi_eigensolver eigensolver; /* gstat_mpi_set_eigensolver; AUTO by default */
  int64_t auto_min_p;                /* AUTO's crossover */
  int blacs_sys, blacs_ctxt;         /* ScaLAPACK grid, made at first use (-1: none) */
  int nprow, npcol;
};

/* Record a local failure message in m->msg (printf-style); returns st. */
gstat_status gstat_mpi_i_fail(gstat_mpi *m, gstat_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Collective: every rank passes its local status (its message in m->msg when
 * not OK). Returns on every rank the status of the lowest failing rank, with
 * that rank's message, prefixed "rank r: ", in m->msg; GSTAT_OK (and an empty
 * message) when no rank failed. Call it before every data collective so a
 * failed rank never leaves the others waiting. */
gstat_status gstat_mpi_i_agree(gstat_mpi *m, gstat_status st);

/* Collective: the smallest and largest value of v over the ranks. */
int gstat_mpi_i_minmax(gstat_mpi *m, int64_t v, int64_t *lo, int64_t *hi);

/* Point-to-point and broadcast of long double arrays, cut in pieces whose
 * counts fit an int. Return an MPI error code. */
int gstat_mpi_i_send(gstat_mpi *m, const double *buf, size_t n, int dest);
int gstat_mpi_i_recv(gstat_mpi *m, double *buf, size_t n, int src);
int gstat_mpi_i_bcast(gstat_mpi *m, double *buf, size_t n, int root);

/* A root argument is valid: GSTAT_MPI_ALL_RANKS or a rank of the communicator. */
int gstat_mpi_i_root_ok(const gstat_mpi *m, int root);

/* Whether this rank receives results. */
int gstat_mpi_i_receives(const gstat_mpi *m, int root);

/* Copy the context's last error (or the status name) into m->msg, for `what`. */
gstat_status gstat_mpi_i_lib_fail(gstat_mpi *m, gstat_ctx *ctx, gstat_status st, const char *what);

/* Collective: GSTAT_EINVAL on every rank (same message) when p differs
 * between ranks, else GSTAT_OK. Call only after an agreed success. */
gstat_status gstat_mpi_i_same_p(gstat_mpi *m, int64_t p, const char *fn);

/* Collective merge of the ranks' accumulators (arguments already agreed valid,
 * same p everywhere): see gstat_mpi_cov_accum_reduce. */
gstat_status gstat_mpi_i_reduce(gstat_mpi *m, gstat_ctx *ctx, gstat_cov_accum *acc, int root);

/* Collective: the eigensolver the handle's setting picks for order p
 * (GSTAT_MPI_EIGEN_LOCAL or GSTAT_MPI_EIGEN_SCALAPACK), agreed between the
 * ranks: GSTAT_EINVAL when their settings pick differently, GSTAT_EUNSUPPORTED
 * when SCALAPACK is asked for and not built. */
gstat_status gstat_mpi_i_pick_eigensolver(gstat_mpi *m, int64_t p, const char *fn,
                                          gstat_mpi_eigensolver *out);

/* Collective ScaLAPACK eigen decomposition of a p x p symmetric float64
 * matrix (arguments already agreed valid, p >= 1, A finite): A is read on
 * root (every rank for GSTAT_MPI_ALL_RANKS; its `uplo` triangle), w and, when
 * `vectors` (the same on every rank), V are written on the receiving
 * rank(s), with the library's eigenvector signs. V may be A itself. Returns
 * the agreed status. */
gstat_status gstat_mpi_i_scalapack_eigh(gstat_mpi *m, int64_t p, const gstat_matrix *A,
                                        gstat_uplo uplo, int root, gstat_matrix *w, gstat_matrix *V,
                                        int vectors, const char *fn);

/* Collective (in gstat_mpi_destroy): free the cached ScaLAPACK grid. */
void gstat_mpi_i_eigh_release(gstat_mpi *m);

#endif /* GSTAT_MPI_INTERNAL_H */
