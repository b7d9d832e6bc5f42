/* The gstat library's CBLAS/LAPACKE calls (rg_lapack.h) on R's own BLAS and
 * LAPACK, with the hidden string-length arguments of Writing R Extensions.
 *
 * Double precision is what R's BLAS/LAPACK always has, declared by R's
 * headers. R's reference BLAS/LAPACK has no single precision, so the float
 * routines are weak references: present when R uses an external BLAS/LAPACK
 * (OpenBLAS, MKL, Accelerate), absent otherwise. R never hands the library
 * float data; for other callers a missing float BLAS routine runs in double
 * on a widened copy, a missing LAPACK one returns RG_LAPACK_MISSING. */
#define USE_FC_LEN_T
#include <Rconfig.h>
#include <R_ext/BLAS.h>
#include <R_ext/Lapack.h>

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define RG_LAPACK_IMPL
#include "rg_lapack.h"

#define RG_WEAK __attribute__((weak))

/* ---- single precision: declared here (R declares only double) ---- */

extern void F77_NAME(sgemm)(const char *ta, const char *tb, const int *m, const int *n,
                            const int *k, const float *alpha, const float *a, const int *lda,
                            const float *b, const int *ldb, const float *beta, float *c,
                            const int *ldc FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(sgemv)(const char *t, const int *m, const int *n, const float *alpha,
                            const float *a, const int *lda, const float *x, const int *incx,
                            const float *beta, float *y, const int *incy FCLEN) RG_WEAK;
extern void F77_NAME(ssyrk)(const char *uplo, const char *t, const int *n, const int *k,
                            const float *alpha, const float *a, const int *lda, const float *beta,
                            float *c, const int *ldc FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(strsm)(const char *side, const char *uplo, const char *t, const char *diag,
                            const int *m, const int *n, const float *alpha, const float *a,
                            const int *lda, float *b,
                            const int *ldb FCLEN FCLEN FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(strmm)(const char *side, const char *uplo, const char *t, const char *diag,
                            const int *m, const int *n, const float *alpha, const float *a,
                            const int *lda, float *b,
                            const int *ldb FCLEN FCLEN FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(sscal)(const int *n, const float *alpha, float *x, const int *incx) RG_WEAK;
extern void F77_NAME(slascl)(const char *type, const int *kl, const int *ku, float *cfrom,
                             float *cto, const int *m, const int *n, float *a, const int *lda,
                             int *info FCLEN) RG_WEAK;
extern void F77_NAME(spotrf)(const char *uplo, const int *n, float *a, const int *lda,
                             int *info FCLEN) RG_WEAK;
extern void F77_NAME(spotrs)(const char *uplo, const int *n, const int *nrhs, const float *a,
                             const int *lda, float *b, const int *ldb, int *info FCLEN) RG_WEAK;
extern void F77_NAME(strtrs)(const char *uplo, const char *trans, const char *diag, const int *n,
                             const int *nrhs, const float *a, const int *lda, float *b,
                             const int *ldb, int *info FCLEN FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(sstebz)(const char *range, const char *order, const int *n, const float *vl,
                             const float *vu, const int *il, const int *iu, const float *abstol,
                             const float *d, const float *e, int *m, int *nsplit, float *w,
                             int *iblock, int *isplit, float *work, int *iwork,
                             int *info FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(sstedc)(const char *compz, const int *n, float *d, float *e, float *z,
                             const int *ldz, float *work, const int *lwork, int *iwork,
                             const int *liwork, int *info FCLEN) RG_WEAK;
extern void F77_NAME(sstein)(const int *n, const float *d, const float *e, const int *m,
                             const float *w, const int *iblock, const int *isplit, float *z,
                             const int *ldz, float *work, int *iwork, int *ifail,
                             int *info) RG_WEAK;
extern void F77_NAME(ssterf)(const int *n, float *d, float *e, int *info) RG_WEAK;
extern void F77_NAME(ssyevd)(const char *jobz, const char *uplo, const int *n, float *a,
                             const int *lda, float *w, float *work, const int *lwork, int *iwork,
                             const int *liwork, int *info FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(ssytrd)(const char *uplo, const int *n, float *a, const int *lda, float *d,
                             float *e, float *tau, float *work, const int *lwork,
                             int *info FCLEN) RG_WEAK;
extern void F77_NAME(sormtr)(const char *side, const char *uplo, const char *trans, const int *m,
                             const int *n, const float *a, const int *lda, const float *tau,
                             float *c, const int *ldc, float *work, const int *lwork,
                             int *info FCLEN FCLEN FCLEN) RG_WEAK;
extern void F77_NAME(sgeqrf)(const int *m, const int *n, float *a, const int *lda, float *tau,
                             float *work, const int *lwork, int *info) RG_WEAK;
extern void F77_NAME(sorgqr)(const int *m, const int *n, const int *k, float *a, const int *lda,
                             const float *tau, float *work, const int *lwork, int *info) RG_WEAK;
extern void F77_NAME(sgeqp3)(const int *m, const int *n, float *a, const int *lda, int *jpvt,
                             float *tau, float *work, const int *lwork, int *info) RG_WEAK;
extern void F77_NAME(sgesvd)(const char *jobu, const char *jobvt, const int *m, const int *n,
                             float *a, const int *lda, float *s, float *u, const int *ldu,
                             float *vt, const int *ldvt, float *work, const int *lwork,
                             int *info FCLEN FCLEN) RG_WEAK;
/* ---- float BLAS without a float BLAS: widen, call the double routine, narrow ---- */

/* A double copy of the rows x cols column-major block at a (leading dimension ld). */
static double *widen(const float *a, int rows, int cols, int ld) {
  size_t n = (size_t)ld * (size_t)(cols > 0 ? cols : 0);
  double *w = malloc(sizeof(double) * (n > 0 ? n : 1));
  if (!w) return NULL;
  for (int j = 0; j < cols; j++)
    for (int i = 0; i < rows; i++)
      w[(size_t)j * (size_t)ld + (size_t)i] = a[(size_t)j * (size_t)ld + (size_t)i];
  return w;
}

static void narrow(const double *w, float *a, int rows, int cols, int ld) {
  for (int j = 0; j < cols; j++)
    for (int i = 0; i < rows; i++)
      a[(size_t)j * (size_t)ld + (size_t)i] = (float)w[(size_t)j * (size_t)ld + (size_t)i];
}

/* An output the widening could not compute (no memory) is NaN, never stale. */
static void fill_nan(float *a, int rows, int cols, int ld) {
  for (int j = 0; j < cols; j++)
    for (int i = 0; i < rows; i++) a[(size_t)j * (size_t)ld + (size_t)i] = (float)NAN;
}

static void sgemm_blas(const char *ta, const char *tb, const int *m, const int *n, const int *k,
                       const float *alpha, const float *a, const int *lda, const float *b,
                       const int *ldb, const float *beta, float *c, const int *ldc, FC_LEN_T l1,
                       FC_LEN_T l2) {
  if (F77_CALL(sgemm)) {
    F77_CALL(sgemm)(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, l1, l2);
    return;
  }
  int ar = *ta == 'N' ? *m : *k, ac = *ta == 'N' ? *k : *m;
  int br = *tb == 'N' ? *k : *n, bc = *tb == 'N' ? *n : *k;
  double *wa = widen(a, ar, ac, *lda), *wb = widen(b, br, bc, *ldb), *wc = widen(c, *m, *n, *ldc);
  double al = *alpha, be = *beta;
  if (wa && wb && wc) {
    F77_CALL(dgemm)(ta, tb, m, n, k, &al, wa, lda, wb, ldb, &be, wc, ldc FCONE FCONE);
    narrow(wc, c, *m, *n, *ldc);
  } else {
    fill_nan(c, *m, *n, *ldc);
  }
  free(wa);
  free(wb);
  free(wc);
}

static void sgemv_blas(const char *t, const int *m, const int *n, const float *alpha,
                       const float *a, const int *lda, const float *x, const int *incx,
                       const float *beta, float *y, const int *incy, FC_LEN_T l1) {
  if (F77_CALL(sgemv)) {
    F77_CALL(sgemv)(t, m, n, alpha, a, lda, x, incx, beta, y, incy, l1);
    return;
  }
  int lx = *t == 'N' ? *n : *m, ly = *t == 'N' ? *m : *n;
  int ix = *incx < 0 ? -*incx : *incx, iy = *incy < 0 ? -*incy : *incy;
  int sx = lx > 0 ? 1 + (lx - 1) * ix : 0, sy = ly > 0 ? 1 + (ly - 1) * iy : 0;
  double *wa = widen(a, *m, *n, *lda), *wx = widen(x, sx, 1, sx), *wy = widen(y, sy, 1, sy);
  double al = *alpha, be = *beta;
  if (wa && wx && wy) {
    F77_CALL(dgemv)(t, m, n, &al, wa, lda, wx, incx, &be, wy, incy FCONE);
    narrow(wy, y, sy, 1, sy);
  } else {
    fill_nan(y, sy, 1, sy);
  }
  free(wa);
  free(wx);
  free(wy);
}

static void ssyrk_blas(const char *uplo, const char *t, const int *n, const int *k,
                       const float *alpha, const float *a, const int *lda, const float *beta,
                       float *c, const int *ldc, FC_LEN_T l1, FC_LEN_T l2) {
  if (F77_CALL(ssyrk)) {
    F77_CALL(ssyrk)(uplo, t, n, k, alpha, a, lda, beta, c, ldc, l1, l2);
    return;
  }
  int ar = *t == 'N' ? *n : *k, ac = *t == 'N' ? *k : *n;
  double *wa = widen(a, ar, ac, *lda), *wc = widen(c, *n, *n, *ldc);
  double al = *alpha, be = *beta;
  if (wa && wc) {
    F77_CALL(dsyrk)(uplo, t, n, k, &al, wa, lda, &be, wc, ldc FCONE FCONE);
    narrow(wc, c, *n, *n, *ldc);
  } else {
    fill_nan(c, *n, *n, *ldc);
  }
  free(wa);
  free(wc);
}

/* trsm and trmm share their argument list and the widening. */
typedef void (*rg_tri3_f)(const char *, const char *, const char *, const char *, const int *,
                          const int *, const float *, const float *, const int *, float *,
                          const int *, FC_LEN_T, FC_LEN_T, FC_LEN_T, FC_LEN_T);

static void tri3_blas(rg_tri3_f single, int solve, const char *side, const char *uplo,
                      const char *t, const char *diag, const int *m, const int *n,
                      const float *alpha, const float *a, const int *lda, float *b,
                      const int *ldb) {
  if (single) {
    single(side, uplo, t, diag, m, n, alpha, a, lda, b, ldb, 1, 1, 1, 1);
    return;
  }
  int na = *side == 'L' ? *m : *n;
  double *wa = widen(a, na, na, *lda), *wb = widen(b, *m, *n, *ldb);
  double al = *alpha;
  if (wa && wb) {
    if (solve)
      F77_CALL(dtrsm)(side, uplo, t, diag, m, n, &al, wa, lda, wb, ldb FCONE FCONE FCONE FCONE);
    else
      F77_CALL(dtrmm)(side, uplo, t, diag, m, n, &al, wa, lda, wb, ldb FCONE FCONE FCONE FCONE);
    narrow(wb, b, *m, *n, *ldb);
  } else {
    fill_nan(b, *m, *n, *ldb);
  }
  free(wa);
  free(wb);
}

static void strsm_blas(const char *side, const char *uplo, const char *t, const char *diag,
                       const int *m, const int *n, const float *alpha, const float *a,
                       const int *lda, float *b, const int *ldb, FC_LEN_T l1, FC_LEN_T l2,
                       FC_LEN_T l3, FC_LEN_T l4) {
  (void)l1, (void)l2, (void)l3, (void)l4;
  tri3_blas(F77_CALL(strsm), 1, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb);
}

static void strmm_blas(const char *side, const char *uplo, const char *t, const char *diag,
                       const int *m, const int *n, const float *alpha, const float *a,
                       const int *lda, float *b, const int *ldb, FC_LEN_T l1, FC_LEN_T l2,
                       FC_LEN_T l3, FC_LEN_T l4) {
  (void)l1, (void)l2, (void)l3, (void)l4;
  tri3_blas(F77_CALL(strmm), 0, side, uplo, t, diag, m, n, alpha, a, lda, b, ldb);
}

static void sscal_blas(const int *n, const float *alpha, float *x, const int *incx) {
  if (F77_CALL(sscal)) {
    F77_CALL(sscal)(n, alpha, x, incx);
    return;
  }
  for (int i = 0; i < *n; i++) x[(size_t)i * (size_t)*incx] *= *alpha;
}

/* ---- machine constants: R's dlamch; float's from <float.h> (IEEE, rounding) ---- */

double rg_dlamch_work(char cmach) {
  return F77_CALL(dlamch)(&cmach FCONE);
}

float rg_slamch_work(char cmach) {
  switch (cmach | 0x20) { /* LAPACK accepts either case */
    case 'e': return FLT_EPSILON * 0.5f;
    case 's': return FLT_MIN;
    case 'b': return (float)FLT_RADIX;
    case 'p': return FLT_EPSILON;
    case 'n': return (float)FLT_MANT_DIG;
    case 'r': return 1.0f;
    case 'm': return (float)FLT_MIN_EXP;
    case 'u': return FLT_MIN;
    case 'l': return (float)FLT_MAX_EXP;
    case 'o': return FLT_MAX;
    default: return 0.0f;
  }
}

/* ---- the shims, once per precision ---- */

#define T double
#define RG(x) rg_d##x
#define BL(x) F77_CALL(d##x)
#define LA(x) F77_CALL(d##x)
#define HAVE(x) 1
#include "rg_lapack_tmpl.h"
#undef T
#undef RG
#undef BL
#undef LA
#undef HAVE

#define T float
#define RG(x) rg_s##x
#define BL(x) s##x##_blas
#define LA(x) F77_CALL(s##x)
#define HAVE(x) (F77_CALL(s##x) != NULL)
#include "rg_lapack_tmpl.h"
#undef T
#undef RG
#undef BL
#undef LA
#undef HAVE
