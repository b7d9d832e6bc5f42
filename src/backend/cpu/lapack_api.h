/* The BLAS/LAPACK interface of the CPU backend. The CMake build uses CBLAS and
 * LAPACKE (OpenBLAS); the R package defines GSTAT_R_LAPACK and maps the same
 * names onto R's own Fortran BLAS/LAPACK (bindings/r/src/rg_lapack.h), since
 * CRAN builds against R's BLAS/LAPACK, which has no LAPACKE. */
#ifndef GSTAT_BACKEND_CPU_LAPACK_API_H
#define GSTAT_BACKEND_CPU_LAPACK_API_H

#ifdef GSTAT_R_LAPACK
#include "rg_lapack.h"
#else
#include <cblas.h>
#include <lapacke.h>

/* LAPACK auxiliary (deflation step of divide & conquer); no LAPACKE wrapper exists.
 * No CHARACTER arguments, so no hidden string lengths. */
extern void slaed2_(int *k, const int *n, const int *n1, float *d, float *q, const int *ldq,
                    int *indxq, float *rho, float *z, float *dlamda, float *w, float *q2, int *indx,
                    int *indxc, int *indxp, int *coltyp, int *info);
extern void dlaed2_(int *k, const int *n, const int *n1, double *d, double *q, const int *ldq,
                    int *indxq, double *rho, double *z, double *dlamda, double *w, double *q2,
                    int *indx, int *indxc, int *indxp, int *coltyp, int *info);
#endif

#endif /* GSTAT_BACKEND_CPU_LAPACK_API_H */
