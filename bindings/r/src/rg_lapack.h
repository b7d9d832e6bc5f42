/* The CBLAS and LAPACKE names the gstat C library calls (src/backend/cpu), mapped
 * onto R's own Fortran BLAS/LAPACK (rg_lapack.c). Included through
 * src/backend/cpu/lapack_api.h when GSTAT_R_LAPACK is defined, i.e. only in this
 * package: CRAN links packages with R's BLAS/LAPACK, which has no LAPACKE.
 * Only the routines the library uses are here; all of them column-major (the
 * library's only layout). */
#ifndef RGSTAT_LAPACK_H
#define RGSTAT_LAPACK_H

typedef int lapack_int;

#define LAPACK_ROW_MAJOR 101
#define LAPACK_COL_MAJOR 102
#define LAPACK_WORK_MEMORY_ERROR (-1010)

/* CBLAS's enumeration values, so that code written for <cblas.h> reads the same. */
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };
enum CBLAS_UPLO { CblasUpper = 121, CblasLower = 122 };
enum CBLAS_DIAG { CblasNonUnit = 131, CblasUnit = 132 };
enum CBLAS_SIDE { CblasLeft = 141, CblasRight = 142 };

/* One declaration per precision: T the type, P the LAPACK prefix letter. */
#define RG_LAPACK_DECLARE(T, P)                                                                   \
  void rg_##P##cblas_gemm(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,   \
                          int m, int n, int k, T alpha, const T *a, int lda, const T *b, int ldb, \
                          T beta, T *c, int ldc);                                                 \
  void rg_##P##cblas_gemv(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int m, int n, T alpha,      \
                          const T *a, int lda, const T *x, int incx, T beta, T *y, int incy);     \
  void rg_##P##cblas_syrk(enum CBLAS_ORDER o, enum CBLAS_UPLO u, enum CBLAS_TRANSPOSE t, int n,   \
                          int k, T alpha, const T *a, int lda, T beta, T *c, int ldc);            \
  void rg_##P##cblas_trsm(enum CBLAS_ORDER o, enum CBLAS_SIDE s, enum CBLAS_UPLO u,               \
                          enum CBLAS_TRANSPOSE t, enum CBLAS_DIAG d, int m, int n, T alpha,       \
                          const T *a, int lda, T *b, int ldb);                                    \
  void rg_##P##cblas_trmm(enum CBLAS_ORDER o, enum CBLAS_SIDE s, enum CBLAS_UPLO u,               \
                          enum CBLAS_TRANSPOSE t, enum CBLAS_DIAG d, int m, int n, T alpha,       \
                          const T *a, int lda, T *b, int ldb);                                    \
  void rg_##P##cblas_scal(int n, T alpha, T *x, int incx);                                        \
  T rg_##P##lamch_work(char cmach);                                                               \
  lapack_int rg_##P##lascl_work(int layout, char type, lapack_int kl, lapack_int ku, T cfrom,     \
                                T cto, lapack_int m, lapack_int n, T *a, lapack_int lda);         \
  lapack_int rg_##P##potrf_work(int layout, char uplo, lapack_int n, T *a, lapack_int lda);       \
  lapack_int rg_##P##potrs_work(int layout, char uplo, lapack_int n, lapack_int nrhs, const T *a, \
                                lapack_int lda, T *b, lapack_int ldb);                            \
  lapack_int rg_##P##trtrs_work(int layout, char uplo, char trans, char diag, lapack_int n,       \
                                lapack_int nrhs, const T *a, lapack_int lda, T *b,                \
                                lapack_int ldb);                                                  \
  lapack_int rg_##P##stebz_work(char range, char order, lapack_int n, T vl, T vu, lapack_int il,  \
                                lapack_int iu, T abstol, const T *d, const T *e, lapack_int *m,   \
                                lapack_int *nsplit, T *w, lapack_int *iblock, lapack_int *isplit, \
                                T *work, lapack_int *iwork);                                      \
  lapack_int rg_##P##stedc_work(int layout, char compz, lapack_int n, T *d, T *e, T *z,           \
                                lapack_int ldz, T *work, lapack_int lwork, lapack_int *iwork,     \
                                lapack_int liwork);                                               \
  lapack_int rg_##P##stein_work(int layout, lapack_int n, const T *d, const T *e, lapack_int m,   \
                                const T *w, const lapack_int *iblock, const lapack_int *isplit,   \
                                T *z, lapack_int ldz, T *work, lapack_int *iwork,                 \
                                lapack_int *ifail);                                               \
  lapack_int rg_##P##sterf_work(lapack_int n, T *d, T *e);                                        \
  lapack_int rg_##P##syevd_values_work(int layout, char jobz, char uplo, lapack_int n, T *a,      \
                                       lapack_int lda, T *w, T *work, lapack_int lwork,           \
                                       lapack_int *iwork, lapack_int liwork);                     \
  lapack_int rg_##P##sytrd_work(int layout, char uplo, lapack_int n, T *a, lapack_int lda, T *d,  \
                                T *e, T *tau, T *work, lapack_int lwork);                         \
  lapack_int rg_##P##sytrd(int layout, char uplo, lapack_int n, T *a, lapack_int lda, T *d, T *e, \
                           T *tau);                                                               \
  lapack_int rg_##P##ormtr(int layout, char side, char uplo, char trans, lapack_int m,            \
                           lapack_int n, const T *a, lapack_int lda, const T *tau, T *c,          \
                           lapack_int ldc);                                                       \
  lapack_int rg_##P##geqrf_work(int layout, lapack_int m, lapack_int n, T *a, lapack_int lda,     \
                                T *tau, T *work, lapack_int lwork);                               \
  lapack_int rg_##P##orgqr_work(int layout, lapack_int m, lapack_int n, lapack_int k, T *a,       \
                                lapack_int lda, const T *tau, T *work, lapack_int lwork);         \
  lapack_int rg_##P##geqp3(int layout, lapack_int m, lapack_int n, T *a, lapack_int lda,          \
                           lapack_int *jpvt, T *tau);                                             \
  lapack_int rg_##P##gesvd(int layout, char jobu, char jobvt, lapack_int m, lapack_int n, T *a,   \
                           lapack_int lda, T *s, T *u, lapack_int ldu, T *vt, lapack_int ldvt,    \
                           T *superb);                                                            \
  void rg_##P##laed2(int *k, const int *n, const int *n1, T *d, T *q, const int *ldq, int *indxq, \
                     T *rho, T *z, T *dlamda, T *w, T *q2, int *indx, int *indxc, int *indxp,     \
                     int *coltyp, int *info);

RG_LAPACK_DECLARE(double, d)
RG_LAPACK_DECLARE(float, s)

/* A LAPACK routine R's LAPACK lacks (single precision, with R's reference
 * LAPACK) returns this info; the library reports it as a backend error. */
#define RG_LAPACK_MISSING (-1001)

/* rg_lapack.c calls the Fortran names itself and takes only the declarations. */
#ifndef RG_LAPACK_IMPL

#define cblas_dgemm rg_dcblas_gemm
#define cblas_sgemm rg_scblas_gemm
#define cblas_dgemv rg_dcblas_gemv
#define cblas_sgemv rg_scblas_gemv
#define cblas_dsyrk rg_dcblas_syrk
#define cblas_ssyrk rg_scblas_syrk
#define cblas_dtrsm rg_dcblas_trsm
#define cblas_strsm rg_scblas_trsm
#define cblas_dtrmm rg_dcblas_trmm
#define cblas_strmm rg_scblas_trmm
#define cblas_dscal rg_dcblas_scal
#define cblas_sscal rg_scblas_scal
#define LAPACKE_dlamch_work rg_dlamch_work
#define LAPACKE_slamch_work rg_slamch_work
#define LAPACKE_dlascl_work rg_dlascl_work
#define LAPACKE_slascl_work rg_slascl_work
#define LAPACKE_dpotrf_work rg_dpotrf_work
#define LAPACKE_spotrf_work rg_spotrf_work
#define LAPACKE_dpotrs_work rg_dpotrs_work
#define LAPACKE_spotrs_work rg_spotrs_work
#define LAPACKE_dtrtrs_work rg_dtrtrs_work
#define LAPACKE_strtrs_work rg_strtrs_work
#define LAPACKE_dstebz_work rg_dstebz_work
#define LAPACKE_sstebz_work rg_sstebz_work
#define LAPACKE_dstedc_work rg_dstedc_work
#define LAPACKE_sstedc_work rg_sstedc_work
#define LAPACKE_dstein_work rg_dstein_work
#define LAPACKE_sstein_work rg_sstein_work
#define LAPACKE_dsterf_work rg_dsterf_work
#define LAPACKE_ssterf_work rg_ssterf_work
#define LAPACKE_dsterf rg_dsterf_work
#define LAPACKE_ssterf rg_ssterf_work
/* R's headers declare no two-stage solver; eigenvalues only (the library's
 * one use of it), the classic syevd gives the same values. */
#define LAPACKE_dsyevd_2stage_work rg_dsyevd_values_work
#define LAPACKE_ssyevd_2stage_work rg_ssyevd_values_work
#define LAPACKE_dsytrd_work rg_dsytrd_work
#define LAPACKE_ssytrd_work rg_ssytrd_work
#define LAPACKE_dsytrd rg_dsytrd
#define LAPACKE_ssytrd rg_ssytrd
#define LAPACKE_dormtr rg_dormtr
#define LAPACKE_sormtr rg_sormtr
#define LAPACKE_dgeqrf_work rg_dgeqrf_work
#define LAPACKE_sgeqrf_work rg_sgeqrf_work
#define LAPACKE_dorgqr_work rg_dorgqr_work
#define LAPACKE_sorgqr_work rg_sorgqr_work
#define LAPACKE_dgeqp3 rg_dgeqp3
#define LAPACKE_sgeqp3 rg_sgeqp3
#define LAPACKE_dgesvd rg_dgesvd
#define LAPACKE_sgesvd rg_sgesvd
#define dlaed2_ rg_dlaed2
#define slaed2_ rg_slaed2

#endif /* RG_LAPACK_IMPL */

#endif /* RGSTAT_LAPACK_H */
