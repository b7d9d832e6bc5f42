/* The CBLAS/LAPACKE shims of rg_lapack.c for one precision: T the type, RG(x)
 * our name, BL(x) the Fortran BLAS routine, LA(x) the Fortran LAPACK routine,
 * HAVE(x) whether that LAPACK routine is present. Character arguments are
 * passed with their hidden lengths (FCONE), as Writing R Extensions requires. */

/* ---- BLAS: row-major calls are the column-major call on the transposes ---- */

static char RG(trans_char)(enum CBLAS_TRANSPOSE t) {
  return t == CblasNoTrans ? 'N' : 'T';
}
static char RG(flip_char)(enum CBLAS_TRANSPOSE t) {
  return t == CblasNoTrans ? 'T' : 'N';
}

void RG(cblas_gemm)(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                    int n, int k, T alpha, const T *a, int lda, const T *b, int ldb, T beta, T *c,
                    int ldc) {
  char ca = RG(trans_char)(ta), cb = RG(trans_char)(tb);
  if (o == CblasColMajor)
    BL(gemm)(&ca, &cb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc FCONE FCONE);
  else /* C^T = op(B)^T op(A)^T */
    BL(gemm)(&cb, &ca, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc FCONE FCONE);
}

void RG(cblas_gemv)(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE t, int m, int n, T alpha, const T *a,
                    int lda, const T *x, int incx, T beta, T *y, int incy) {
  char ct = o == CblasColMajor ? RG(trans_char)(t) : RG(flip_char)(t);
  int rows = o == CblasColMajor ? m : n, cols = o == CblasColMajor ? n : m;
  BL(gemv)(&ct, &rows, &cols, &alpha, a, &lda, x, &incx, &beta, y, &incy FCONE);
}

void RG(cblas_syrk)(enum CBLAS_ORDER o, enum CBLAS_UPLO u, enum CBLAS_TRANSPOSE t, int n, int k,
                    T alpha, const T *a, int lda, T beta, T *c, int ldc) {
  int col = o == CblasColMajor;
  char cu = (u == CblasUpper) == col ? 'U' : 'L';
  char ct = col ? RG(trans_char)(t) : RG(flip_char)(t);
  BL(syrk)(&cu, &ct, &n, &k, &alpha, a, &lda, &beta, c, &ldc FCONE FCONE);
}

/* trsm and trmm: a row-major B is B^T column-major, so the side and the
 * triangle flip and m, n swap; op(A) is unchanged. */
#define RG_TRI3(fn)                                                                             \
  void RG(cblas_##fn)(enum CBLAS_ORDER o, enum CBLAS_SIDE s, enum CBLAS_UPLO u,                 \
                      enum CBLAS_TRANSPOSE t, enum CBLAS_DIAG d, int m, int n, T alpha,         \
                      const T *a, int lda, T *b, int ldb) {                                     \
    int col = o == CblasColMajor;                                                               \
    char cs = (s == CblasLeft) == col ? 'L' : 'R', cu = (u == CblasUpper) == col ? 'U' : 'L';   \
    char ct = RG(trans_char)(t), cd = d == CblasUnit ? 'U' : 'N';                               \
    int rows = col ? m : n, cols = col ? n : m;                                                 \
    BL(fn)(&cs, &cu, &ct, &cd, &rows, &cols, &alpha, a, &lda, b, &ldb FCONE FCONE FCONE FCONE); \
  }
RG_TRI3(trsm)
RG_TRI3(trmm)
#undef RG_TRI3

void RG(cblas_scal)(int n, T alpha, T *x, int incx) {
  BL(scal)(&n, &alpha, x, &incx);
}

/* ---- LAPACK: LAPACKE's conventions (info returned; -1 for a layout other
 * than column-major, the library's only one; workspace queries pass through;
 * the routines without _work allocate their workspace after a query) ---- */

#define RG_COLMAJOR(layout) \
  if ((layout) != LAPACK_COL_MAJOR) return -1

#define RG_PRESENT(x) \
  if (!HAVE(x)) return RG_LAPACK_MISSING

lapack_int RG(lascl_work)(int layout, char type, lapack_int kl, lapack_int ku, T cfrom, T cto,
                          lapack_int m, lapack_int n, T *a, lapack_int lda) {
  RG_COLMAJOR(layout);
  RG_PRESENT(lascl);
  int info = 0;
  LA(lascl)(&type, &kl, &ku, &cfrom, &cto, &m, &n, a, &lda, &info FCONE);
  return info;
}

lapack_int RG(potrf_work)(int layout, char uplo, lapack_int n, T *a, lapack_int lda) {
  RG_COLMAJOR(layout);
  RG_PRESENT(potrf);
  int info = 0;
  LA(potrf)(&uplo, &n, a, &lda, &info FCONE);
  return info;
}

lapack_int RG(potrs_work)(int layout, char uplo, lapack_int n, lapack_int nrhs, const T *a,
                          lapack_int lda, T *b, lapack_int ldb) {
  RG_COLMAJOR(layout);
  RG_PRESENT(potrs);
  int info = 0;
  LA(potrs)(&uplo, &n, &nrhs, a, &lda, b, &ldb, &info FCONE);
  return info;
}

lapack_int RG(trtrs_work)(int layout, char uplo, char trans, char diag, lapack_int n,
                          lapack_int nrhs, const T *a, lapack_int lda, T *b, lapack_int ldb) {
  RG_COLMAJOR(layout);
  RG_PRESENT(trtrs);
  int info = 0;
  LA(trtrs)(&uplo, &trans, &diag, &n, &nrhs, a, &lda, b, &ldb, &info FCONE FCONE FCONE);
  return info;
}

lapack_int RG(stebz_work)(char range, char order, lapack_int n, T vl, T vu, lapack_int il,
                          lapack_int iu, T abstol, const T *d, const T *e, lapack_int *m,
                          lapack_int *nsplit, T *w, lapack_int *iblock, lapack_int *isplit, T *work,
                          lapack_int *iwork) {
  RG_PRESENT(stebz);
  int info = 0;
  LA(stebz)
  (&range, &order, &n, &vl, &vu, &il, &iu, &abstol, d, e, m, nsplit, w, iblock, isplit, work, iwork,
   &info FCONE FCONE);
  return info;
}

lapack_int RG(stedc_work)(int layout, char compz, lapack_int n, T *d, T *e, T *z, lapack_int ldz,
                          T *work, lapack_int lwork, lapack_int *iwork, lapack_int liwork) {
  RG_COLMAJOR(layout);
  RG_PRESENT(stedc);
  int info = 0;
  LA(stedc)(&compz, &n, d, e, z, &ldz, work, &lwork, iwork, &liwork, &info FCONE);
  return info;
}

lapack_int RG(stein_work)(int layout, lapack_int n, const T *d, const T *e, lapack_int m,
                          const T *w, const lapack_int *iblock, const lapack_int *isplit, T *z,
                          lapack_int ldz, T *work, lapack_int *iwork, lapack_int *ifail) {
  RG_COLMAJOR(layout);
  RG_PRESENT(stein);
  int info = 0;
  LA(stein)(&n, d, e, &m, w, iblock, isplit, z, &ldz, work, iwork, ifail, &info);
  return info;
}

lapack_int RG(sterf_work)(lapack_int n, T *d, T *e) {
  RG_PRESENT(sterf);
  int info = 0;
  LA(sterf)(&n, d, e, &info);
  return info;
}

lapack_int RG(syevd_values_work)(int layout, char jobz, char uplo, lapack_int n, T *a,
                                 lapack_int lda, T *w, T *work, lapack_int lwork, lapack_int *iwork,
                                 lapack_int liwork) {
  RG_COLMAJOR(layout);
  RG_PRESENT(syevd);
  int info = 0;
  LA(syevd)(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, &info FCONE FCONE);
  return info;
}

lapack_int RG(sytrd_work)(int layout, char uplo, lapack_int n, T *a, lapack_int lda, T *d, T *e,
                          T *tau, T *work, lapack_int lwork) {
  RG_COLMAJOR(layout);
  RG_PRESENT(sytrd);
  int info = 0;
  LA(sytrd)(&uplo, &n, a, &lda, d, e, tau, work, &lwork, &info FCONE);
  return info;
}

lapack_int RG(geqrf_work)(int layout, lapack_int m, lapack_int n, T *a, lapack_int lda, T *tau,
                          T *work, lapack_int lwork) {
  RG_COLMAJOR(layout);
  RG_PRESENT(geqrf);
  int info = 0;
  LA(geqrf)(&m, &n, a, &lda, tau, work, &lwork, &info);
  return info;
}

lapack_int RG(orgqr_work)(int layout, lapack_int m, lapack_int n, lapack_int k, T *a,
                          lapack_int lda, const T *tau, T *work, lapack_int lwork) {
  RG_COLMAJOR(layout);
  RG_PRESENT(orgqr);
  int info = 0;
  LA(orgqr)(&m, &n, &k, a, &lda, tau, work, &lwork, &info);
  return info;
}

/* The optimal workspace a query reported in q (at least 1 element). */
static T *RG(work_alloc)(T q, int *lwork) {
  *lwork = q >= 1 ? (int)q : 1;
  return malloc(sizeof(T) * (size_t)*lwork);
}

lapack_int RG(sytrd)(int layout, char uplo, lapack_int n, T *a, lapack_int lda, T *d, T *e,
                     T *tau) {
  T q = 0;
  lapack_int info = RG(sytrd_work)(layout, uplo, n, a, lda, d, e, tau, &q, -1);
  if (info != 0) return info;
  int lwork;
  T *work = RG(work_alloc)(q, &lwork);
  if (!work) return LAPACK_WORK_MEMORY_ERROR;
  info = RG(sytrd_work)(layout, uplo, n, a, lda, d, e, tau, work, lwork);
  free(work);
  return info;
}

lapack_int RG(ormtr)(int layout, char side, char uplo, char trans, lapack_int m, lapack_int n,
                     const T *a, lapack_int lda, const T *tau, T *c, lapack_int ldc) {
  RG_COLMAJOR(layout);
  RG_PRESENT(ormtr);
  int info = 0, lwork = -1;
  T q = 0;
  LA(ormtr)
  (&side, &uplo, &trans, &m, &n, a, &lda, tau, c, &ldc, &q, &lwork, &info FCONE FCONE FCONE);
  if (info != 0) return info;
  T *work = RG(work_alloc)(q, &lwork);
  if (!work) return LAPACK_WORK_MEMORY_ERROR;
  LA(ormtr)
  (&side, &uplo, &trans, &m, &n, a, &lda, tau, c, &ldc, work, &lwork, &info FCONE FCONE FCONE);
  free(work);
  return info;
}

lapack_int RG(geqp3)(int layout, lapack_int m, lapack_int n, T *a, lapack_int lda, lapack_int *jpvt,
                     T *tau) {
  RG_COLMAJOR(layout);
  RG_PRESENT(geqp3);
  int info = 0, lwork = -1;
  T q = 0;
  LA(geqp3)(&m, &n, a, &lda, jpvt, tau, &q, &lwork, &info);
  if (info != 0) return info;
  T *work = RG(work_alloc)(q, &lwork);
  if (!work) return LAPACK_WORK_MEMORY_ERROR;
  LA(geqp3)(&m, &n, a, &lda, jpvt, tau, work, &lwork, &info);
  free(work);
  return info;
}

/* superb receives the unconverged superdiagonal (work[1..]), as LAPACKE's. */
lapack_int RG(gesvd)(int layout, char jobu, char jobvt, lapack_int m, lapack_int n, T *a,
                     lapack_int lda, T *s, T *u, lapack_int ldu, T *vt, lapack_int ldvt,
                     T *superb) {
  RG_COLMAJOR(layout);
  RG_PRESENT(gesvd);
  int info = 0, lwork = -1;
  T q = 0;
  LA(gesvd)(&jobu, &jobvt, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &q, &lwork, &info FCONE FCONE);
  if (info != 0) return info;
  T *work = RG(work_alloc)(q, &lwork);
  if (!work) return LAPACK_WORK_MEMORY_ERROR;
  LA(gesvd)(&jobu, &jobvt, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, &info FCONE FCONE);
  int r = m < n ? m : n;
  for (int i = 0; i + 1 < r; i++) superb[i] = work[i + 1];
  free(work);
  return info;
}

#undef RG_COLMAJOR
#undef RG_PRESENT
