/* The CPU implementation of backend/dense.h: thin wrappers over CBLAS and
 * LAPACKE that run with the context's thread count. */
#include <limits.h>

#include "backend/cpu/blas_threads.h"
#include "backend/cpu/lapack_api.h"
#include "backend/cpu/pack.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

static bool fits_int(int64_t a, int64_t b, int64_t c) {
  return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX;
}

static enum CBLAS_TRANSPOSE cblas_trans(gstat_trans t) {
  return t == GSTAT_TRANS ? CblasTrans : CblasNoTrans;
}

/* BLAS threads for a call of `flops` whose smallest parallel step has
 * `step_flops`: the context's, fewer for small work (the CPU rules; they keep
 * such chains on one thread with passive waits); the caller's restored by
 * threads_leave. A NULL context leaves the setting as it is. */
typedef struct threads_guard {
  bool set;
  gstat_i_blas_threads_saved saved;
} threads_guard;

static threads_guard threads_enter_steps(gstat_ctx *ctx, double flops, double step_flops) {
  threads_guard g = {false, {0, 0}};
  if (!ctx) return g;
  double s = gstat_i_cpu_blas_step_seconds(gstat_i_cpu_seconds(GSTAT_F64, flops, true),
                                           gstat_i_cpu_seconds(GSTAT_F64, step_flops, false));
  g.saved = gstat_i_blas_threads_enter(gstat_i_cpu_blas_threads(ctx, s));
  g.set = true;
  return g;
}

static threads_guard threads_enter(gstat_ctx *ctx, double flops) {
  return threads_enter_steps(ctx, flops, flops);
}

static void threads_leave(threads_guard g) {
  if (g.set) gstat_i_blas_threads_leave(g.saved);
}

/* A product with one column (or one row) of C, as a matrix-vector product:
 * the BLAS's GEMM packs all of A first, which for a tall n x j block times
 * one column (the sparse eigensolver's Lanczos steps) costs more than the
 * multiply (bench/README.md, "One-column products"). C's row is
 * C^T = op(B)^T op(A)^T. */
static void gemv_shaped(gstat_dtype dt, gstat_trans ta, gstat_trans tb, int64_t m, int64_t n,
                        int64_t k, double alpha, const void *A, int64_t lda, const void *B,
                        int64_t ldb, double beta, void *C, int64_t ldc) {
  const void *M, *x;
  int64_t ldm, incx, incy, rows, cols;
  enum CBLAS_TRANSPOSE t;
  if (n == 1) { /* C(:, 0) = op(A) op(B)(:, 0) */
    M = A, ldm = lda, t = cblas_trans(ta);
    rows = ta == GSTAT_NO_TRANS ? m : k, cols = ta == GSTAT_NO_TRANS ? k : m;
    x = B, incx = tb == GSTAT_NO_TRANS ? 1 : ldb, incy = 1;
  } else { /* C(0, :)^T = op(B)^T op(A)(0, :)^T */
    M = B, ldm = ldb, t = tb == GSTAT_NO_TRANS ? CblasTrans : CblasNoTrans;
    rows = tb == GSTAT_NO_TRANS ? k : n, cols = tb == GSTAT_NO_TRANS ? n : k;
    x = A, incx = ta == GSTAT_NO_TRANS ? lda : 1, incy = ldc;
  }
  if (dt == GSTAT_F64)
    cblas_dgemv(CblasColMajor, t, (int)rows, (int)cols, alpha, M, (int)ldm, x, (int)incx, beta, C,
                (int)incy);
  else
    cblas_sgemv(CblasColMajor, t, (int)rows, (int)cols, (float)alpha, M, (int)ldm, x, (int)incx,
                (float)beta, C, (int)incy);
}

gstat_status gstat_i_gemm(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, gstat_trans tb, int64_t m,
                          int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                          const void *B, int64_t ldb, double beta, void *C, int64_t ldc) {
  if (!fits_int(m, n, k) || !fits_int(lda, ldb, ldc))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "gemm: dimensions exceed the BLAS integer range");
  if (m == 0 || n == 0) return GSTAT_OK;
  threads_guard g = threads_enter(ctx, 2.0 * (double)m * (double)n * (double)k);
  if ((n == 1 || m == 1) && k > 0)
    gemv_shaped(dt, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  else if (dt == GSTAT_F64)
    cblas_dgemm(CblasColMajor, cblas_trans(ta), cblas_trans(tb), (int)m, (int)n, (int)k, alpha, A,
                (int)lda, B, (int)ldb, beta, C, (int)ldc);
  else
    cblas_sgemm(CblasColMajor, cblas_trans(ta), cblas_trans(tb), (int)m, (int)n, (int)k,
                (float)alpha, A, (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
  threads_leave(g);
  return GSTAT_OK;
}

gstat_status gstat_i_syrk_lower(gstat_ctx *ctx, gstat_dtype dt, gstat_trans trans, int64_t n,
                                int64_t k, double alpha, const void *A, int64_t lda, double beta,
                                void *C, int64_t ldc) {
  if (!fits_int(n, k, lda) || ldc > INT_MAX)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "syrk: dimensions exceed the BLAS integer range");
  if (n == 0) return GSTAT_OK;
  threads_guard g = threads_enter(ctx, (double)n * (double)n * (double)k);
  if (dt == GSTAT_F64)
    cblas_dsyrk(CblasColMajor, CblasLower, cblas_trans(trans), (int)n, (int)k, alpha, A, (int)lda,
                beta, C, (int)ldc);
  else
    cblas_ssyrk(CblasColMajor, CblasLower, cblas_trans(trans), (int)n, (int)k, (float)alpha, A,
                (int)lda, (float)beta, C, (int)ldc);
  threads_leave(g);
  return GSTAT_OK;
}

gstat_status gstat_i_syrk(gstat_ctx *ctx, gstat_dtype dt, gstat_trans trans, int64_t n, int64_t k,
                          double alpha, const void *A, int64_t lda, double beta, void *C,
                          int64_t ldc) {
  gstat_status st = gstat_i_syrk_lower(ctx, dt, trans, n, k, alpha, A, lda, beta, C, ldc);
  if (st != GSTAT_OK || n == 0) return st;
  if (dt == GSTAT_F64) {
    double *c = C;
    for (int64_t j = 1; j < n; j++)
      for (int64_t i = 0; i < j; i++) c[i + j * ldc] = c[j + i * ldc];
  } else {
    float *c = C;
    for (int64_t j = 1; j < n; j++)
      for (int64_t i = 0; i < j; i++) c[i + j * ldc] = c[j + i * ldc];
  }
  return GSTAT_OK;
}

/* LAPACK's optimal workspace for geqrf + orgqr (a query call), plus tau. */
int64_t gstat_i_orthonormalize_work(gstat_dtype dt, int64_t m, int64_t n) {
  if (!fits_int(m, n, 1)) return 0;
  lapack_int M = (lapack_int)m, N = (lapack_int)n, ld = M > 1 ? M : 1;
  double q1 = 0, q2 = 0;
  if (dt == GSTAT_F64) {
    LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, M, N, NULL, ld, NULL, &q1, -1);
    LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, M, N, N, NULL, ld, NULL, &q2, -1);
  } else {
    float f1 = 0, f2 = 0;
    LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, M, N, NULL, ld, NULL, &f1, -1);
    LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, M, N, N, NULL, ld, NULL, &f2, -1);
    q1 = f1;
    q2 = f2;
  }
  int64_t lwork = (int64_t)(q1 > q2 ? q1 : q2);
  if (lwork < n) lwork = n;
  return lwork + n; /* + tau */
}

gstat_status gstat_i_orthonormalize(gstat_ctx *ctx, gstat_dtype dt, int64_t m, int64_t n, void *A,
                                    int64_t lda, void *work) {
  if (!fits_int(m, n, lda))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "qr: dimensions exceed the LAPACK integer range");
  if (m == 0 || n == 0) return GSTAT_OK;
  int64_t total = gstat_i_orthonormalize_work(dt, m, n);
  lapack_int lwork = (lapack_int)(total - n), M = (lapack_int)m, N = (lapack_int)n;
  threads_guard g = threads_enter(ctx, 4.0 * (double)m * (double)n * (double)n);
  lapack_int rc;
  if (dt == GSTAT_F64) {
    double *tau = work, *w = tau + n;
    rc = LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, M, N, A, (lapack_int)lda, tau, w, lwork);
    if (rc == 0)
      rc = LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, M, N, N, A, (lapack_int)lda, tau, w, lwork);
  } else {
    float *tau = work, *w = tau + n;
    rc = LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, M, N, A, (lapack_int)lda, tau, w, lwork);
    if (rc == 0)
      rc = LAPACKE_sorgqr_work(LAPACK_COL_MAJOR, M, N, N, A, (lapack_int)lda, tau, w, lwork);
  }
  threads_leave(g);
  if (rc != 0) return gstat_i_fail(ctx, GSTAT_EBACKEND, "qr: LAPACK returned %d", (int)rc);
  return GSTAT_OK;
}

void gstat_i_dense_load(const gstat_matrix *M, int64_t b, gstat_dtype dt, void *dst, int64_t ld) {
  if (dt == GSTAT_F64)
    gstat_i_pack_full_f64(M, b, dst, ld);
  else
    gstat_i_pack_full_f32(M, b, dst, ld);
}

void gstat_i_dense_store(gstat_dtype dt, const void *src, int64_t ld, const gstat_matrix *M,
                         int64_t b) {
  if (dt == GSTAT_F64)
    gstat_i_unpack_full_f64(src, ld, M, b);
  else
    gstat_i_unpack_full_f32(src, ld, M, b);
}

gstat_status gstat_i_potrf(gstat_ctx *ctx, gstat_dtype dt, int64_t n, void *A, int64_t lda,
                           int64_t *info) {
  *info = 0;
  if (!fits_int(n, lda, 1))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                        "potrf: dimensions exceed the LAPACK integer range");
  if (n == 0) return GSTAT_OK;
  threads_guard g = threads_enter(ctx, (double)n * (double)n * (double)n / 3.0);
  /* the _work variants: no NaN pre-scan, a NaN pivot is reported as info */
  lapack_int rc;
  if (dt == GSTAT_F64)
    rc = LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', (int)n, A, (int)lda);
  else
    rc = LAPACKE_spotrf_work(LAPACK_COL_MAJOR, 'L', (int)n, A, (int)lda);
  threads_leave(g);
  if (rc < 0) return gstat_i_fail(ctx, GSTAT_EBACKEND, "potrf: LAPACK returned %d", (int)rc);
  /* OpenBLAS's potrf lets a NaN pivot through (NaN <= 0 is false); a NaN
   * anywhere in row k reaches L(k, k), so the diagonal tells */
  for (int64_t k = 0; rc == 0 && k < n; k++) {
    double d = dt == GSTAT_F64 ? ((const double *)A)[k + k * lda] : ((const float *)A)[k + k * lda];
    if (d != d) rc = (lapack_int)(k + 1); /* NaN */
  }
  *info = rc;
  return GSTAT_OK;
}

gstat_status gstat_i_trsm(gstat_ctx *ctx, gstat_dtype dt, bool right, gstat_uplo uplo,
                          gstat_trans trans, gstat_diag diag, int64_t m, int64_t n, double alpha,
                          const void *T, int64_t ldt, void *B, int64_t ldb) {
  if (!fits_int(m, n, 1) || !fits_int(ldt, ldb, 1))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "trsm: dimensions exceed the BLAS integer range");
  if (m == 0 || n == 0) return GSTAT_OK;
  enum CBLAS_SIDE side = right ? CblasRight : CblasLeft;
  enum CBLAS_UPLO ul = uplo == GSTAT_UPPER ? CblasUpper : CblasLower;
  enum CBLAS_DIAG dg = diag == GSTAT_UNIT ? CblasUnit : CblasNonUnit;
  threads_guard g = threads_enter(ctx, (double)m * (double)n * (double)(right ? n : m));
  if (dt == GSTAT_F64)
    cblas_dtrsm(CblasColMajor, side, ul, cblas_trans(trans), dg, (int)m, (int)n, alpha, T, (int)ldt,
                B, (int)ldb);
  else
    cblas_strsm(CblasColMajor, side, ul, cblas_trans(trans), dg, (int)m, (int)n, (float)alpha, T,
                (int)ldt, B, (int)ldb);
  threads_leave(g);
  return GSTAT_OK;
}

/* ---- column-pivoted QR, SVD, loop threads (for src/spectral's cluster-QR) ---- */

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/eigh_lowest.h" /* tridiagonal selection, the sign rule */

static gstat_status lapack_fail(gstat_ctx *ctx, gstat_status st, const char *what, int rc) {
  if (ctx) gstat_i_fail(ctx, st, "%s: LAPACK returned %d", what, rc);
  return st;
}

/* ---- the k largest eigenpairs with every eigenvalue (for src/pca) ---- */

/* LAPACK: Householder reduction (sytrd, blocked), all eigenvalues of the
 * tridiagonal (sterf), the k largest pairs of it (gstat_i_tridiag_select:
 * bisection + inverse iteration), their back transform (ormtr); then the sign
 * rule. mem: 10 n + n k entries of T, then 5 n + k ints. */
#define DEFINE_EIGH_TOP(T, P, SFX)                                                        \
  static lapack_int eigh_top_##P(lapack_int n, T *A, lapack_int lda, lapack_int k, T *w,  \
                                 char *mem) {                                             \
    T *d = (T *)mem, *e = d + n, *tau = e + n, *de = tau + n, *wk = de + n, *lw = wk + n; \
    T *Z = lw + 5 * n;                                                                    \
    lapack_int rc = LAPACKE_##P##sytrd(LAPACK_COL_MAJOR, 'L', n, A, lda, d, e, tau);      \
    if (rc != 0) return rc;                                                               \
    memcpy(w, d, sizeof(T) * (size_t)n);                                                  \
    memcpy(de, e, sizeof(T) * (size_t)(n - 1));                                           \
    if ((rc = LAPACKE_##P##sterf(n, w, de)) != 0) return rc;                              \
    rc = gstat_i_tridiag_select_##SFX(n, d, e, n - k + 1, n, wk, Z, lw,                   \
                                      (int *)(void *)(Z + (size_t)n * (size_t)k));        \
    if (rc == 0)                                                                          \
      rc = LAPACKE_##P##ormtr(LAPACK_COL_MAJOR, 'L', 'L', 'N', n, k, A, lda, tau, Z, n);  \
    if (rc != 0) return rc;                                                               \
    for (lapack_int c = 0; c < k; c++) /* ascending into A's last k columns */            \
      memcpy(A + (size_t)(n - k + c) * (size_t)lda, Z + (size_t)c * (size_t)n,            \
             sizeof(T) * (size_t)n);                                                      \
    gstat_i_eig_signs_##SFX(A + (size_t)(n - k) * (size_t)lda, n, k, lda);                \
    return 0;                                                                             \
  }

DEFINE_EIGH_TOP(double, d, f64)
DEFINE_EIGH_TOP(float, s, f32)

gstat_status gstat_i_eigh_top(gstat_ctx *ctx, gstat_dtype dt, int64_t n, void *A, int64_t lda,
                              int64_t k, void *w) {
  if (!fits_int(n, k, lda) || n < 2 || k < 1 || k > n)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "eigh_top: order %lld, %lld pairs: unsupported",
                        (long long)n, (long long)k);
  size_t es = dt == GSTAT_F64 ? sizeof(double) : sizeof(float);
  size_t bytes = es * (size_t)(10 * n + n * k) + sizeof(int) * (size_t)(5 * n + k) + 64;
  char *mem = malloc(bytes);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "eigh_top: cannot allocate %zu bytes", bytes);
  /* the reduction: a chain of matrix-vector products of ~4 n^2 flops */
  threads_guard g = threads_enter_steps(ctx, 4.0 / 3.0 * (double)n * (double)n * (double)n,
                                        4.0 * (double)n * (double)n);
  lapack_int rc = dt == GSTAT_F64
                      ? eigh_top_d((lapack_int)n, A, (lapack_int)lda, (lapack_int)k, w, mem)
                      : eigh_top_s((lapack_int)n, A, (lapack_int)lda, (lapack_int)k, w, mem);
  threads_leave(g);
  free(mem);
  return rc == 0 ? GSTAT_OK
                 : lapack_fail(ctx, rc > 0 ? GSTAT_ENOCONV : GSTAT_EBACKEND, "eigh_top", (int)rc);
}

/* Must not exceed eigh_small_max_f64 in cpu_ops.c (above it, a batch of one
 * runs LAPACK with threaded BLAS and a larger batch does not);
 * tests/test_spectral.c checks batch == single across this size. */
int64_t gstat_i_eigh_batch_invariant_max(void) {
  return 128;
}

gstat_status gstat_i_gemv(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, int64_t m, int64_t n,
                          double alpha, const void *A, int64_t lda, const void *x, double beta,
                          void *y) {
  if (!fits_int(m, n, lda))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "gemv: dimensions exceed the BLAS integer range");
  if (m == 0 || n == 0) return GSTAT_OK;
  threads_guard g = threads_enter(ctx, 2.0 * (double)m * (double)n);
  if (dt == GSTAT_F64)
    cblas_dgemv(CblasColMajor, cblas_trans(ta), (int)m, (int)n, alpha, A, (int)lda, x, 1, beta, y,
                1);
  else
    cblas_sgemv(CblasColMajor, cblas_trans(ta), (int)m, (int)n, (float)alpha, A, (int)lda, x, 1,
                (float)beta, y, 1);
  threads_leave(g);
  return GSTAT_OK;
}
