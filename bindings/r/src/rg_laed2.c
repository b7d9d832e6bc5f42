/* xLAED2 (the deflation step of divide & conquer) for the gstat library's
 * eigensolver, on R's LAPACK. Apart from rg_lapack.c because R's
 * R_ext/Lapack.h (up to at least R 4.2) declares dlaed2 without its N1
 * argument; LAPACK 3's routine has one. No CHARACTER arguments, so no hidden
 * lengths. The float routine is a weak reference (see rg_lapack.c). */
#include <R_ext/RS.h>
#include <stddef.h>

#define RG_LAPACK_IMPL
#include "rg_lapack.h"

extern void F77_NAME(dlaed2)(int *k, const int *n, const int *n1, double *d, double *q,
                             const int *ldq, int *indxq, double *rho, double *z, double *dlamda,
                             double *w, double *q2, int *indx, int *indxc, int *indxp, int *coltyp,
                             int *info);
extern void F77_NAME(slaed2)(int *k, const int *n, const int *n1, float *d, float *q,
                             const int *ldq, int *indxq, float *rho, float *z, float *dlamda,
                             float *w, float *q2, int *indx, int *indxc, int *indxp, int *coltyp,
                             int *info) __attribute__((weak));

void rg_dlaed2(int *k, const int *n, const int *n1, double *d, double *q, const int *ldq,
               int *indxq, double *rho, double *z, double *dlamda, double *w, double *q2, int *indx,
               int *indxc, int *indxp, int *coltyp, int *info) {
  F77_CALL(dlaed2)
  (k, n, n1, d, q, ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, info);
}

void rg_slaed2(int *k, const int *n, const int *n1, float *d, float *q, const int *ldq, int *indxq,
               float *rho, float *z, float *dlamda, float *w, float *q2, int *indx, int *indxc,
               int *indxp, int *coltyp, int *info) {
  if (!F77_CALL(slaed2)) {
    *info = RG_LAPACK_MISSING;
    return;
  }
  F77_CALL(slaed2)
  (k, n, n1, d, q, ldq, indxq, rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, info);
}
