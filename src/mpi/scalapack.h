/*
 * The BLACS and ScaLAPACK entry points mpi_eigh.c calls. Debian's
 * libscalapack-openmpi-dev ships no C header, so they are declared here:
 * 32-bit integers (Debian's LP64 build); the C BLACS interface takes values,
 * the Fortran routines (trailing underscore) take every argument by pointer
 * plus, last, the hidden lengths of their CHARACTER arguments (size_t since
 * gfortran 8).
 */
#ifndef GSTAT_MPI_SCALAPACK_H
#define GSTAT_MPI_SCALAPACK_H

#include <stddef.h>

#include <mpi.h>

/* A BLACS system handle for an MPI communicator (BLACS keeps the communicator,
 * it does not duplicate or free it); released by Cfree_blacs_system_handle. */
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);

/* Collective over the handle's communicator: *ctxt (a system handle on entry)
 * becomes a nprow x npcol grid context, processes numbered row-major ("R"). */
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
/* Collective: frees the grid's communicators. */
void Cblacs_gridexit(int ctxt);

/* Fill a block-cyclic array descriptor (9 ints); info < 0 names a bad argument. */
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);

/* All eigenvalues (ascending, on every process) and eigenvectors of a
 * distributed symmetric matrix by divide and conquer; lwork = liwork = -1 is
 * a workspace query. info < 0: bad argument; info > 0: no convergence. */
void pdsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, double *w, double *z, const int *iz, const int *jz,
              const int *descz, double *work, const int *lwork, int *iwork, const int *liwork,
              int *info, size_t jobz_len, size_t uplo_len);

#endif /* GSTAT_MPI_SCALAPACK_H */
