/* Symmetric eigendecomposition (one matrix) through LAPACKE + OpenBLAS.  See eigh_lapack.h.
 *
 * Vectors:  xSYTRD('L')  ->  divide & conquer on the tridiagonal  ->  back-transformation.
 *   - The divide & conquer is LAPACK's (xSTEDC/xLAED0/xLAED1) restructured: leaves are solved by
 *     xSTEDC, deflation is LAPACK's xLAED2, but the secular equations and the Gu-Eisenstat
 *     eigenvector formulas (the xLAED4/xLAED3 part, most of xSTEDC's time and scalar Fortran
 *     there; bench/README.md, "Measurements moved from code comments") are computed here with
 *     SIMD loops, and in parallel when called outside an OpenMP parallel region with several
 *     threads (then independent subtrees are solved concurrently too).
 *   - The back-transformation applies the xSYTRD reflectors in compact-WY blocks of 32..128
 *     (explicit V panel, T from SYRK, two GEMMs per block) instead of xORMTR's block of 32.
 * Values only: xSYTRD + xSTERF; single-threaded and large n: the two-stage reduction
 *   (xSYEVD_2STAGE with JOBZ='N').
 *
 * This file instantiates itself twice (float, double): the part below EIGH_LAPACK_TEMPLATE is
 * the type-generic body and is #included from the middle of this file.
 */
#ifndef EIGH_LAPACK_TEMPLATE

#include "eigh_lapack.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/lapack_api.h"

#ifdef _OPENMP
#include <omp.h>
#define EIGH_PRAGMA(x) _Pragma(#x)
#else
#define EIGH_PRAGMA(x)
#endif

_Static_assert(sizeof(lapack_int) == sizeof(int), "iwork is int*: lapack_int must be int");

/* Hot loops get AVX2 / AVX-512 clones (ifunc-dispatched) on x86-64 with GCC/Clang. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define EIGH_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define EIGH_CLONES
#endif

/* Largest n for which every LAPACK size (n*n + 4n + 1 workspace) fits a 32-bit int. */
#define EIGH_MAX_N 46000

/* Divide & conquer: subproblems of at most this order are handed to xSTEDC. */
#define EIGH_DC_LEAF 32
/* Secular-equation iteration cap (the bisection fallback needs < 200 steps even in double). */
#define EIGH_SEC_MAXIT 200

static int64_t eigh_max64(int64_t x, int64_t y) {
  return x > y ? x : y;
}

/* Threads usable by this call: 1 inside a parallel region (OpenBLAS is then serial too). */
static int eigh_threads(void) {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
  int t = omp_get_max_threads();
  return t > 1 ? t : 1;
#else
  return 1;
#endif
}

#define EIGH_BT_NB_MAX 256

/* Block size of the back-transformation Q*Z (reflectors applied per compact-WY block). */
static int eigh_bt_block(int64_t n, size_t elem_size) {
  (void)elem_size;
  if (n <= 384) return 32;
  if (n <= 768) return 48;
  if (n <= 1536) return 96;
  if (n <= 3072) return 128;
  return 192;
}

/* Eigenvalues only: the two-stage reduction (SYEVD_2STAGE, JOBZ='N') wins from this order on
 * when running single-threaded; with threaded BLAS the one-stage SYTRD is faster. */
static int64_t eigh_twostage_min_n(size_t elem_size) {
  return elem_size == 4 ? 1536 : 1024;
}

/* Merge permutation of a[0..n1) ascending and a[n1..n1+n2) descending (as left by xLAED2):
 * idx (1-based) such that a[idx[i]-1] is ascending. */
#define EIGH_MERGE_PERM(T_, n1, n2, a, idx)    \
  do {                                         \
    int i_ = 0, p_ = 0, q_ = (n1) + (n2)-1;    \
    while (p_ < (n1) && q_ >= (n1)) {          \
      if ((a)[p_] <= (a)[q_])                  \
        (idx)[i_++] = 1 + p_++;                \
      else                                     \
        (idx)[i_++] = 1 + q_--;                \
    }                                          \
    while (p_ < (n1)) (idx)[i_++] = 1 + p_++;  \
    while (q_ >= (n1)) (idx)[i_++] = 1 + q_--; \
  } while (0)

#define EIGH_LAPACK_TEMPLATE 1

#define T float
#define SFX(name) name##_f32
#define LP(name) LAPACKE_s##name
#define CB(name) cblas_s##name
#define LAED2 slaed2_
#define T_EPS FLT_EPSILON
#include "eigh_lapack.c"
#undef T
#undef SFX
#undef LP
#undef CB
#undef LAED2
#undef T_EPS

#define T double
#define SFX(name) name##_f64
#define LP(name) LAPACKE_d##name
#define CB(name) cblas_d##name
#define LAED2 dlaed2_
#define T_EPS DBL_EPSILON
#include "eigh_lapack.c"
#undef T
#undef SFX
#undef LP
#undef CB
#undef LAED2
#undef T_EPS

gstat_i_eigh_lapack_ws gstat_i_eigh_lapack_workspace(int64_t n, int want_vectors,
                                                     size_t elem_size) {
  gstat_i_eigh_lapack_ws ws = {-1, -1};
  if (n < 0) return ws;
  if (elem_size == sizeof(float)) return eigh_ws_f32(n, want_vectors);
  if (elem_size == sizeof(double)) return eigh_ws_f64(n, want_vectors);
  return ws;
}

int gstat_i_eigh_lapack_f32(int64_t n, float *a, int64_t lda, float *w, int want_vectors,
                            float *work, int *iwork) {
  return eigh_run_f32(n, a, lda, w, want_vectors, work, iwork);
}

int gstat_i_eigh_lapack_f64(int64_t n, double *a, int64_t lda, double *w, int want_vectors,
                            double *work, int *iwork) {
  return eigh_run_f64(n, a, lda, w, want_vectors, work, iwork);
}

#else /* ---------------------------------------------------------------- type-generic body */

/* ============================================================ secular equation (xLAED4 role)
 * Roots of  f(x) = 1/rho + sum_j w_j^2 / (dl_j - x),  dl strictly increasing, rho > 0, w_j != 0,
 * ||w|| = 1 (as prepared by xLAED2). Root i lies in (dl_i, dl_{i+1}), the last in
 * (dl_{K-1}, dl_{K-1} + rho). Each root is held as dl_org + tau with org the nearer pole, so that
 * dl_j - x = (dl_j - dl_org) - tau keeps full relative accuracy (needed by Gu-Eisenstat).
 * Iteration: the "middle way" rational model (poles dl_p, dl_q, each side of the sum matched in
 * value and derivative), safeguarded by a bracket and bisection. */

/* s = sum_{j0<=j<j1} w_j^2/del_j, ds = sum (w_j/del_j)^2, del_j = (dl_j - dorg) - tau. */
static EIGH_CLONES void SFX(eigh_sec_sums)(int j0, int j1, const T *dl, const T *w, T dorg, T tau,
                                           T *s_out, T *ds_out) {
  T s = 0, ds = 0;
  EIGH_PRAGMA(omp simd reduction(+ : s, ds))
  for (int j = j0; j < j1; j++) {
    T del = (dl[j] - dorg) - tau;
    T t = w[j] / del;
    s += w[j] * t;
    ds += t * t;
  }
  *s_out = s;
  *ds_out = ds;
}

static EIGH_CLONES void SFX(eigh_sec_delta)(int K, const T *dl, T dorg, T tau, T *delta) {
  EIGH_PRAGMA(omp simd)
  for (int j = 0; j < K; j++) delta[j] = (dl[j] - dorg) - tau;
}

/* Root i (0-based) for K >= 2. delta[j] = dl_j - lambda_i; returns 0, or 1 on no convergence. */
static int SFX(eigh_sec_root)(int K, int i, const T *dl, const T *w, T rho, T *delta, T *lam) {
  const T eps = T_EPS;
  const T rhoinv = (T)1 / rho;
  const int last = (i == K - 1);
  const int split = last ? K - 1 : i + 1; /* left sum: j < split, right sum: j >= split */
  const int p = split - 1, q = split;     /* model poles */
  const T errk = (T)8 + (T)K / (T)4;      /* rounding growth of the (SIMD) sums */
  int org;
  T lo, hi, tau, psi, dpsi, phi, dphi;

  if (!last) {
    T half = (dl[i + 1] - dl[i]) / 2;
    SFX(eigh_sec_sums)(0, split, dl, w, dl[i], half, &psi, &dpsi);
    SFX(eigh_sec_sums)(split, K, dl, w, dl[i], half, &phi, &dphi);
    if (rhoinv + psi + phi >= 0) {
      org = i;
      lo = 0;
      hi = half;
      tau = half;
    } else {
      org = i + 1;
      lo = -half;
      hi = 0;
      tau = -half;
    }
  } else {
    org = K - 1;
    lo = 0;
    hi = rho;
    tau = rho / 2;
    SFX(eigh_sec_sums)(0, split, dl, w, dl[org], tau, &psi, &dpsi);
    SFX(eigh_sec_sums)(split, K, dl, w, dl[org], tau, &phi, &dphi);
  }
  const T dorg = dl[org];

  for (int it = 0;; it++) {
    T f = rhoinv + psi + phi;
    T errf = eps * (errk * (fabs(psi) + fabs(phi)) + rhoinv + fabs(tau) * (dpsi + dphi));
    if (fabs(f) <= errf) break;
    if (it >= EIGH_SEC_MAXIT) return 1;
    if (f > 0)
      hi = tau;
    else
      lo = tau;

    /* middle-way model: c + s1/(dp - eta) + s2/(dq - eta) = 0 as a quadratic in eta */
    T dp = (dl[p] - dorg) - tau, dq = (dl[q] - dorg) - tau;
    T c = f - dpsi * dp - dphi * dq;
    T b = c * (dp + dq) + dpsi * dp * dp + dphi * dq * dq;
    T cc = dp * dq * f;
    T eta;
    if (!last) { /* the root between the poles */
      if (c == 0) {
        eta = cc / b;
      } else {
        T disc = b * b - 4 * c * cc;
        disc = disc > 0 ? sqrt(disc) : 0;
        eta = (b > 0) ? 2 * cc / (b + disc) : (b - disc) / (2 * c);
      }
    } else { /* the root right of dl_q: exists in the model only for c > 0 */
      if (c > 0) {
        T disc = b * b - 4 * c * cc;
        disc = disc > 0 ? sqrt(disc) : 0;
        eta = (b >= 0) ? (b + disc) / (2 * c) : 2 * cc / (b - disc);
      } else {
        eta = (T)NAN;
      }
    }
    T nt = tau + eta;
    if (!(nt > lo && nt < hi)) nt = (lo + hi) / 2; /* safeguard: bisection */
    int negligible = fabs(nt - tau) <= 2 * eps * fabs(nt);
    tau = nt;
    SFX(eigh_sec_sums)(0, split, dl, w, dorg, tau, &psi, &dpsi);
    SFX(eigh_sec_sums)(split, K, dl, w, dorg, tau, &phi, &dphi);
    if (negligible) break;
  }
  SFX(eigh_sec_delta)(K, dl, dorg, tau, delta);
  *lam = dorg + tau;
  return 0;
}

/* prod[j] *= Dl[j] / (dl_j - dl_l) for j in [j0, j1), j != l  (Gu-Eisenstat product, column l). */
static EIGH_CLONES void SFX(eigh_zprod)(int j0, int j1, int l, const T *Dl, const T *dl, T *prod) {
  const T dll = dl[l];
  int a = j0, b = j1 < l ? j1 : l;
  EIGH_PRAGMA(omp simd)
  for (int j = a; j < b; j++) prod[j] *= Dl[j] / (dl[j] - dll);
  a = j0 > l + 1 ? j0 : l + 1;
  EIGH_PRAGMA(omp simd)
  for (int j = a; j < j1; j++) prod[j] *= Dl[j] / (dl[j] - dll);
}

/* s[p] = zp[p] / Dc[perm[p]] for p < K; returns sum of squares (in double). */
static EIGH_CLONES double SFX(eigh_vec)(int K, const T *zp, const T *Dc, const int *perm, T *s) {
  double ss = 0;
  EIGH_PRAGMA(omp simd reduction(+ : ss))
  for (int p = 0; p < K; p++) {
    T v = zp[p] / Dc[perm[p]];
    s[p] = v;
    ss += (double)v * (double)v;
  }
  return ss;
}

/* ============================================================ divide & conquer (xSTEDC role)
 * Q (ldq) is n x n; the subproblem [lo, lo+len) owns Q(lo:lo+len, lo:lo+len), d[lo..], e[lo..],
 * indxq[lo..] (1-based local sort permutation), and the work regions below at offset lo, so that
 * disjoint subproblems can run concurrently. */
typedef struct {
  int n, ldq;
  T *d, *e, *Q;
  T *q2;      /* n*n + 8n: xLAED2's Q2 (merge) / xSTEDC workspace (leaf), at lo*n */
  T *s;       /* n*n: eigenvector matrix of the secular problem, at lo*n */
  T *vec4;    /* 4n: z, dlamda, w, prod, at 4*lo */
  int *indxq; /* n */
  int *iw;    /* 8n: xLAED2's 4 index arrays (merge) / xSTEDC iwork (leaf), at 8*lo */
} SFX(eigh_dc);

static int SFX(eigh_dc_leaf)(const SFX(eigh_dc) * c, int lo, int len) {
  T *Qb = c->Q + lo + (size_t)lo * c->ldq;
  lapack_int info = LP(stedc_work)(LAPACK_COL_MAJOR, 'I', len, c->d + lo, c->e + lo, Qb, c->ldq,
                                   c->q2 + (size_t)lo * c->n, 1 + 4 * len + len * len,
                                   c->iw + 8 * (size_t)lo, 3 + 5 * len);
  for (int i = 0; i < len; i++) c->indxq[lo + i] = i + 1;
  return info == 0 ? 0 : (lo + 1) * (c->n + 1) + lo + len;
}

/* Merge the solved halves [lo, lo+n1) and [lo+n1, lo+len) (xLAED1 role); nth threads. */
static int SFX(eigh_dc_merge)(const SFX(eigh_dc) * c, int lo, int len, int n1, int nth) {
  const int N = len, ldq = c->ldq;
  T *Q = c->Q + lo + (size_t)lo * ldq;
  T *d = c->d + lo;
  T rho = c->e[lo + n1 - 1];
  T *z = c->vec4 + 4 * (size_t)lo, *dlamda = z + N, *w = dlamda + N, *prod = w + N;
  T *q2 = c->q2 + (size_t)lo * c->n, *S = c->s + (size_t)lo * c->n;
  int *indxq = c->indxq + lo;
  int *indx = c->iw + 8 * (size_t)lo, *indxc = indx + N, *indxp = indxc + N, *coltyp = indxp + N;
  int K = 0, info = 0;

  /* z: last row of the first block, first row of the second */
  for (int j = 0; j < n1; j++) z[j] = Q[(n1 - 1) + (size_t)j * ldq];
  for (int j = n1; j < N; j++) z[j] = Q[n1 + (size_t)j * ldq];
  LAED2(&K, &N, &n1, d, Q, &ldq, indxq, &rho, z, dlamda, w, q2, indx, indxc, indxp, coltyp, &info);
  if (info != 0) return (lo + 1) * (c->n + 1) + lo + len;
  if (K == 0) {
    for (int i = 0; i < N; i++) indxq[i] = i + 1;
    return 0;
  }
  int bad = 0;

  /* Secular roots: d[0..K), and Delta(j, i) = dlamda_j - lambda_i in Q(0:K, i). */
  if (K == 1) {
    d[0] = dlamda[0] + rho * w[0] * w[0];
    Q[0] = -rho * w[0] * w[0];
  } else {
        EIGH_PRAGMA(omp parallel for num_threads(nth) schedule(dynamic, 8) reduction(| : bad) if (nth > 1 && K >= 128))
        for (int i = 0; i < K; i++)
          bad |= SFX(eigh_sec_root)(K, i, dlamda, w, rho, Q + (size_t)i * ldq, d + i);
  }
  if (bad) return (lo + 1) * (c->n + 1) + lo + len;

  /* Gu-Eisenstat: zhat_j^2 ~ -Delta(j,j) prod_{l!=j} Delta(j,l)/(dlamda_j - dlamda_l), sign of w_j
   * (a common positive factor does not matter: the columns are normalised below). */
  {
    int nchunk = (nth > 1 && K >= 256) ? nth : 1;
        EIGH_PRAGMA(omp parallel for num_threads(nchunk) schedule(static, 1) if (nchunk > 1))
        for (int t = 0; t < nchunk; t++) {
          int j0 = (int)((int64_t)K * t / nchunk), j1 = (int)((int64_t)K * (t + 1) / nchunk);
          for (int j = j0; j < j1; j++) prod[j] = 1;
          for (int l = 0; l < K; l++) SFX(eigh_zprod)(j0, j1, l, Q + (size_t)l * ldq, dlamda, prod);
        }
  }
  /* zhat permuted to Q2's column grouping (indxc, 1-based), kept in z */
  for (int j = 0; j < K; j++) {
    T v = -Q[j + (size_t)j * ldq] * prod[j];
    prod[j] = (T)copysign(sqrt(v > 0 ? v : 0), w[j]);
  }
  for (int p = 0; p < K; p++) z[p] = prod[indxc[p] - 1];
  for (int p = 0; p < K; p++) indxp[p] = indxc[p] - 1; /* 0-based row gather for the vectors */

  /* S(:, i) = normalised (zhat_j / Delta(j, i)) with rows in Q2's grouping */
    EIGH_PRAGMA(omp parallel for num_threads(nth) schedule(static) if (nth > 1 && K >= 256))
    for (int i = 0; i < K; i++) {
      T *si = S + (size_t)i * K;
      double ss = SFX(eigh_vec)(K, z, Q + (size_t)i * ldq, indxp, si);
      T sc;
      if (ss > 0 && isfinite(ss)) {
        sc = (T)(1.0 / sqrt(ss));
      } else { /* over/underflow in the squares: rescale by the largest entry */
        T mx = 0;
        for (int p = 0; p < K; p++) mx = fabs(si[p]) > mx ? fabs(si[p]) : mx;
        double s2 = 0;
        for (int p = 0; p < K; p++) s2 += ((double)si[p] / mx) * ((double)si[p] / mx);
        sc = (T)(1.0 / (mx * sqrt(s2)));
      }
      for (int p = 0; p < K; p++) si[p] *= sc;
    }

    /* Q(:, 0:K) = Q2 * S, using xLAED2's column types: c1 upper-only, c2 dense, c3 lower-only */
    {
      const int c1 = coltyp[0], c2 = coltyp[1], c3 = coltyp[2];
      const int n2 = N - n1, n12 = c1 + c2, n23 = c2 + c3;
      if (n12 > 0) CB(gemm)
      (CblasColMajor, CblasNoTrans, CblasNoTrans, n1, K, n12, (T)1, q2, n1, S, K, (T)0, Q, ldq);
      else for (int j = 0; j < K; j++) memset(Q + (size_t)j * ldq, 0, sizeof(T) * (size_t)n1);
      if (n23 > 0) CB(gemm)
      (CblasColMajor, CblasNoTrans, CblasNoTrans, n2, K, n23, (T)1, q2 + (size_t)n1 * n12, n2,
       S + c1, K, (T)0, Q + n1, ldq);
      else for (int j = 0; j < K; j++) memset(Q + n1 + (size_t)j * ldq, 0, sizeof(T) * (size_t)n2);
    }
    EIGH_MERGE_PERM(T, K, N - K, d, indxq);
    return 0;
}

/* Tear the subproblem tree (xLAED0's rank-one cuts): left child gets len/2 (xLAED2 wants n1 <=
 * n/2). */
static void SFX(eigh_dc_tear)(const SFX(eigh_dc) * c, int lo, int len) {
  if (len <= EIGH_DC_LEAF) return;
  int n1 = len / 2;
  T r = fabs(c->e[lo + n1 - 1]);
  c->d[lo + n1 - 1] -= r;
  c->d[lo + n1] -= r;
  SFX(eigh_dc_tear)(c, lo, n1);
  SFX(eigh_dc_tear)(c, lo + n1, len - n1);
}

static int SFX(eigh_dc_serial)(const SFX(eigh_dc) * c, int lo, int len) {
  if (len <= EIGH_DC_LEAF) return SFX(eigh_dc_leaf)(c, lo, len);
  int n1 = len / 2;
  int info = SFX(eigh_dc_serial)(c, lo, n1);
  if (info == 0) info = SFX(eigh_dc_serial)(c, lo + n1, len - n1);
  if (info == 0) info = SFX(eigh_dc_merge)(c, lo, len, n1, 1);
  return info;
}

/* Subtrees at depth `depth` (or leaves above it), listed left to right. */
static void SFX(eigh_dc_collect)(int lo, int len, int depth, int *los, int *lens, int *cnt) {
  if (depth == 0 || len <= EIGH_DC_LEAF) {
    los[*cnt] = lo;
    lens[*cnt] = len;
    (*cnt)++;
    return;
  }
  SFX(eigh_dc_collect)(lo, len / 2, depth - 1, los, lens, cnt);
  SFX(eigh_dc_collect)(lo + len / 2, len - len / 2, depth - 1, los, lens, cnt);
}

static int SFX(eigh_dc_upper)(const SFX(eigh_dc) * c, int lo, int len, int depth, int nth) {
  if (depth == 0 || len <= EIGH_DC_LEAF) return 0; /* solved in the parallel phase */
  int n1 = len / 2;
  int info = SFX(eigh_dc_upper)(c, lo, n1, depth - 1, nth);
  if (info == 0) info = SFX(eigh_dc_upper)(c, lo + n1, len - n1, depth - 1, nth);
  if (info == 0) info = SFX(eigh_dc_merge)(c, lo, len, n1, nth);
  return info;
}

/* Eigen-decomposition of the symmetric tridiagonal (d, e): d <- ascending eigenvalues,
 * Q (ldq >= n) <- eigenvectors. work: 2n^2 + 13n, iwork: 9n. */
static int SFX(eigh_tridiag)(int n, T *d, T *e, T *Q, int ldq, T *work, int *iwork) {
  if (n <= EIGH_DC_LEAF) {
    lapack_int info = LP(stedc_work)(LAPACK_COL_MAJOR, 'I', n, d, e, Q, ldq, work,
                                     1 + 4 * n + n * n, iwork, 3 + 5 * n);
    return (int)info;
  }
  /* scale to unit max-norm like xSTEDC */
  T orgnrm = 0;
  for (int i = 0; i < n; i++) orgnrm = fabs(d[i]) > orgnrm ? fabs(d[i]) : orgnrm;
  for (int i = 0; i < n - 1; i++) orgnrm = fabs(e[i]) > orgnrm ? fabs(e[i]) : orgnrm;
  for (int j = 0; j < n; j++) memset(Q + (size_t)j * ldq, 0, sizeof(T) * (size_t)n);
  if (orgnrm == 0) {
    for (int j = 0; j < n; j++) Q[j + (size_t)j * ldq] = 1;
    return 0;
  }
  LP(lascl_work)(LAPACK_COL_MAJOR, 'G', 0, 0, orgnrm, (T)1, n, 1, d, n);
  LP(lascl_work)(LAPACK_COL_MAJOR, 'G', 0, 0, orgnrm, (T)1, n - 1, 1, e, n - 1);

  SFX(eigh_dc) c;
  c.n = n;
  c.ldq = ldq;
  c.d = d;
  c.e = e;
  c.Q = Q;
  c.q2 = work;
  c.s = work + (size_t)n * n + 8 * (size_t)n;
  c.vec4 = c.s + (size_t)n * n;
  c.indxq = iwork;
  c.iw = iwork + n;

  SFX(eigh_dc_tear)(&c, 0, n);
  int nth = eigh_threads();
  int info = 0;
  if (nth <= 1 || n < 256) {
    info = SFX(eigh_dc_serial)(&c, 0, n);
  } else {
    int depth = 0;
    while ((1 << depth) < nth && depth < 20) depth++;
    if ((n >> depth) < 128) depth = depth > 1 ? depth - 1 : 1;
    /* subtree list: at most 2^depth entries; the tail of q2 is free before any merge */
    int los[1 << 10], lens[1 << 10], cnt = 0;
    if (depth > 10) depth = 10;
    SFX(eigh_dc_collect)(0, n, depth, los, lens, &cnt);
        EIGH_PRAGMA(omp parallel for num_threads(nth) schedule(dynamic, 1) reduction(| : info))
        for (int t = 0; t < cnt; t++) info |= SFX(eigh_dc_serial)(&c, los[t], lens[t]);
        if (info == 0)
          info = SFX(eigh_dc_upper)(&c, 0, n, depth, nth);
        else
          info = n + 1;
  }
  if (info != 0) return info;

  /* sort (xLAED2/xLAED1 leave d unsorted with the permutation in indxq; within clusters of
   * (nearly) equal values that permutation can be off by an ulp: finish by insertion sort) */
  int *perm = c.indxq;
  for (int i = 0; i < n; i++) perm[i] -= 1;
  for (int i = 1; i < n; i++) {
    int pi = perm[i], k = i;
    while (k > 0 && d[perm[k - 1]] > d[pi]) {
      perm[k] = perm[k - 1];
      k--;
    }
    perm[k] = pi;
  }
  T *qs = work, *ds = work + (size_t)n * n;
  for (int i = 0; i < n; i++) {
    int j = perm[i];
    ds[i] = d[j];
    memcpy(qs + (size_t)i * n, Q + (size_t)j * ldq, sizeof(T) * (size_t)n);
  }
  for (int i = 0; i < n; i++) {
    d[i] = ds[i];
    memcpy(Q + (size_t)i * ldq, qs + (size_t)i * n, sizeof(T) * (size_t)n);
  }
  LP(lascl_work)(LAPACK_COL_MAJOR, 'G', 0, 0, (T)1, orgnrm, n, 1, d, n);
  return 0;
}

/* ============================================================ driver */

/* Workspace query of xSYTRD (lower) for order n. */
static int64_t SFX(eigh_sytrd_lwork)(int64_t n) {
  T q = 0, dummy = 0;
  lapack_int info = LP(sytrd_work)(LAPACK_COL_MAJOR, 'L', (lapack_int)n, &dummy,
                                   (lapack_int)(n > 1 ? n : 1), &dummy, &dummy, &dummy, &q, -1);
  int64_t lw = (info == 0) ? (int64_t)q : 0;
  return eigh_max64(lw, eigh_max64(1, n * 32));
}

/* Workspace query of xSYEVD_2STAGE (JOBZ='N', lower). */
static void SFX(eigh_2stage_lwork)(int64_t n, int64_t *lw, int64_t *liw) {
  T q = 0, dummy = 0;
  lapack_int iq = 0;
  lapack_int info = LP(syevd_2stage_work)(LAPACK_COL_MAJOR, 'N', 'L', (lapack_int)n, &dummy,
                                          (lapack_int)(n > 1 ? n : 1), &dummy, &q, -1, &iq, -1);
  *lw = (info == 0) ? (int64_t)q : -1;
  *liw = (info == 0) ? (int64_t)iq : -1;
}

static gstat_i_eigh_lapack_ws SFX(eigh_ws)(int64_t n, int want_vectors) {
  gstat_i_eigh_lapack_ws ws = {1, 1};
  if (n <= 1) return ws;
  if (n > EIGH_MAX_N) {
    ws.work_elems = ws.iwork_elems = -1;
    return ws;
  }
  if (!want_vectors) {
    int64_t lw = 3 * n + SFX(eigh_sytrd_lwork)(n), liw = 1;
    if (n >= eigh_twostage_min_n(sizeof(T))) {
      int64_t lw2, liw2;
      SFX(eigh_2stage_lwork)(n, &lw2, &liw2);
      if (lw2 > 0) {
        lw = eigh_max64(lw, lw2);
        liw = eigh_max64(liw, liw2);
      }
    }
    ws.work_elems = lw;
    ws.iwork_elems = liw;
    return ws;
  }
  int64_t m = n - 1;
  int64_t nb = eigh_bt_block(n, sizeof(T));
  int64_t rest = SFX(eigh_sytrd_lwork)(n);
  rest = eigh_max64(rest, 2 * n * n + 13 * n); /* tridiagonal divide & conquer */
  rest = eigh_max64(rest, 1 + 4 * n + n * n);  /* xSTEDC (small n) */
  rest = eigh_max64(rest, nb * n + nb * nb);   /* back-transformation: W, T */
  ws.work_elems = 3 * n + m * m + rest;
  ws.iwork_elems = eigh_max64(9 * n, 3 + 5 * n);
  return ws;
}

/* Apply Q' = H(0) H(1) ... H(k-1) (QR-type, forward, columnwise, k = m) from the left to the
 * m x ncol matrix C. V is m x m with the unit lower triangular reflectors stored EXPLICITLY
 * (ones on the diagonal, zeros above it). work: nb*ncol + nb*nb. */
static void SFX(eigh_apply_q)(int m, int ncol, const T *V, int ldv, const T *tau, T *C, int ldc,
                              int nb, T *work) {
  T *W = work;                      /* nb x ncol */
  T *Tm = work + (size_t)nb * ncol; /* nb x nb, upper triangular */
  const int ldt = nb;
  int k = m;
  for (int i = ((k - 1) / nb) * nb; i >= 0; i -= nb) {
    int ib = (k - i < nb) ? k - i : nb;
    int mb = m - i;
    const T *Vb = V + i + (size_t)i * ldv; /* mb x ib, unit lower trapezoidal, explicit */
    /* T: S = Vb^T Vb (upper), then the xLARFT recurrence with S in place of its GEMVs:
     * T(0:j,j) = -tau_j * T(0:j,0:j) * S(0:j,j), T(j,j) = tau_j. */
    CB(syrk)(CblasColMajor, CblasUpper, CblasTrans, ib, mb, (T)1, Vb, ldv, (T)0, Tm, ldt);
    Tm[0] = tau[i];
    for (int j = 1; j < ib; j++) {
      T *col = Tm + (size_t)j * ldt;
      T mt = -tau[i + j];
      T y[EIGH_BT_NB_MAX];
      for (int r = 0; r < j; r++) y[r] = 0;
      for (int cidx = 0; cidx < j; cidx++) { /* y = T(0:j,0:j) * (mt * col) */
        const T *tc = Tm + (size_t)cidx * ldt;
        T xc = mt * col[cidx];
        EIGH_PRAGMA(omp simd)
        for (int r = 0; r <= cidx; r++) y[r] += tc[r] * xc;
      }
      for (int r = 0; r < j; r++) col[r] = y[r];
      col[j] = tau[i + j];
    }
    /* C(i:m,:) -= Vb * (T * (Vb^T * C(i:m,:))) */
    CB(gemm)
    (CblasColMajor, CblasTrans, CblasNoTrans, ib, ncol, mb, (T)1, Vb, ldv, C + i, ldc, (T)0, W, nb);
    CB(trmm)
    (CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, ib, ncol, (T)1, Tm, ldt, W,
     nb);
    CB(gemm)
    (CblasColMajor, CblasNoTrans, CblasNoTrans, mb, ncol, ib, (T)-1, Vb, ldv, W, nb, (T)1, C + i,
     ldc);
  }
}

/* max |a_ij| over the lower triangle; *finite = 0 if any entry there is Inf/NaN. */
static T SFX(eigh_lower_maxabs)(int n, const T *a, int lda, int *finite) {
  T mx = 0, chk = 0;
  for (int j = 0; j < n; j++) {
    const T *col = a + (size_t)j * lda;
    T m = 0, s = 0;
    for (int i = j; i < n; i++) {
      T x = col[i];
      T ax = fabs(x);
      m = ax > m ? ax : m;
      s += x - x; /* NaN iff x is Inf or NaN */
    }
    mx = m > mx ? m : mx;
    chk += s;
  }
  *finite = (chk == 0);
  return mx;
}

static int SFX(eigh_run)(int64_t n64, T *a, int64_t lda64, T *w, int want_vectors, T *work,
                         int *iwork) {
  if (n64 < 0) return -1;
  if (lda64 < (n64 > 1 ? n64 : 1)) return -3;
  if (n64 == 0) return 0;
  if (!a || !w || !work) return -2;
  if (n64 > EIGH_MAX_N || lda64 > INT_MAX) return -4;
  const int n = (int)n64, lda = (int)lda64;

  if (n == 1) {
    if (!isfinite(a[0])) {
      w[0] = (T)NAN;
      if (want_vectors) a[0] = (T)NAN;
      return 0;
    }
    w[0] = a[0];
    if (want_vectors) a[0] = (T)1;
    return 0;
  }
  if (!iwork) return -2;

  /* Scale to the safe range as xSYEVD does; non-finite input -> NaN output. */
  int finite = 1;
  T anrm = SFX(eigh_lower_maxabs)(n, a, lda, &finite);
  if (!finite) {
    for (int i = 0; i < n; i++) w[i] = (T)NAN;
    if (want_vectors)
      for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) a[i + (size_t)j * lda] = (T)NAN;
    return 0;
  }
  const T safmin = LP(lamch_work)('S'), eps = LP(lamch_work)('P');
  const T smlnum = safmin / eps, bignum = (T)1 / smlnum;
  const T rmin = sqrt(smlnum), rmax = sqrt(bignum);
  T sigma = 1;
  int scaled = 0;
  if (anrm > 0 && anrm < rmin) {
    scaled = 1;
    sigma = rmin / anrm;
  } else if (anrm > rmax) {
    scaled = 1;
    sigma = rmax / anrm;
  }
  if (scaled) LP(lascl_work)(LAPACK_COL_MAJOR, 'L', 0, 0, (T)1, sigma, n, n, a, lda);

  lapack_int info = 0;
  T *e = work + n, *tau = work + 2 * (size_t)n;

  if (!want_vectors) {
    if (n >= eigh_twostage_min_n(sizeof(T)) && eigh_threads() == 1) {
      int64_t lw2, liw2;
      SFX(eigh_2stage_lwork)(n, &lw2, &liw2);
      if (lw2 > 0 && liw2 > 0) {
        info = LP(syevd_2stage_work)(LAPACK_COL_MAJOR, 'N', 'L', n, a, lda, w, work,
                                     (lapack_int)lw2, iwork, (lapack_int)liw2);
        goto done;
      }
    }
    int64_t lwt = SFX(eigh_sytrd_lwork)(n);
    info = LP(sytrd_work)(LAPACK_COL_MAJOR, 'L', n, a, lda, w, e, tau, work + 3 * (size_t)n,
                          (lapack_int)lwt);
    if (info == 0) info = LP(sterf_work)(n, w, e);
    goto done;
  }

  {
    const int m = n - 1;
    const int nb = eigh_bt_block(n, sizeof(T));
    T *d = work;
    T *V = work + 3 * (size_t)n; /* m x m, ldv = m */
    T *rest = V + (size_t)m * m;
    int64_t lwt = SFX(eigh_sytrd_lwork)(n);
    info = LP(sytrd_work)(LAPACK_COL_MAJOR, 'L', n, a, lda, d, e, tau, rest, (lapack_int)lwt);
    if (info != 0) goto done;
    /* Explicit unit lower triangular V (reflector j lives in a(j+2:n, j), implicit 1 at
     * j+1). Zeros above the diagonal are only read inside the diagonal nb x nb blocks. */
    for (int j = 0; j < m; j++) {
      T *vj = V + (size_t)j * m;
      int r0 = (j / nb) * nb;
      for (int r = r0; r < j; r++) vj[r] = 0;
      vj[j] = 1;
      if (j + 1 < m)
        memcpy(vj + j + 1, a + (j + 2) + (size_t)j * lda, sizeof(T) * (size_t)(m - j - 1));
    }
    /* Tridiagonal eigenvectors straight into a. */
    info = SFX(eigh_tridiag)(n, d, e, a, lda, rest, iwork);
    if (info != 0) goto done;
    memcpy(w, d, sizeof(T) * (size_t)n);
    /* a = diag(1, Q') * Z: rows 1..n-1 only. */
    SFX(eigh_apply_q)(m, n, V, m, tau, a + 1, lda, nb, rest);
  }

done:
  if (scaled && info == 0) CB(scal)(n, (T)1 / sigma, w, 1);
  return (int)info;
}

#endif /* EIGH_LAPACK_TEMPLATE */
