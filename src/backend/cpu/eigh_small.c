/* Symmetric eigendecomposition of one small matrix; see eigh_small.h.
 *
 * This file is a template instantiated twice (float, double): the part below the #else is
 * included back into this file with T and its constants defined.
 *
 * Layout: the matrix is copied, full and symmetric, into work with a leading dimension ld
 * rounded up to 64 bytes and zero padding rows. Vector loops then run over whole 64-byte
 * chunks of rows (inner loops of constant length VL) from a chunk-aligned start, which GCC
 * vectorizes even at -O2; rows above the true start are zero in the vectors involved, so
 * they contribute nothing. */
#ifndef EIGH_SMALL_T

#include "eigh_small.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* With GCC the driver, and all the helpers forced inline into it, is compiled:
 * - at -O2 whatever the command line: -O2's vectorizer turns the fixed-length chunk loops
 *   into plain vector code, while -O3's cost model vectorizes across columns instead and is
 *   slower here (bench/README.md, "Measurements moved from code comments");
 * - with a*b+c contracted into FMA (off under -std=c11): a third less rotation and update work;
 * - on x86-64 Linux, for x86-64-v4 (AVX-512), v3 (AVX2+FMA) and baseline, the clone being
 *   picked at load time (ifunc), so the library needs no -march. */
#if defined(__GNUC__) && !defined(__clang__)
#if __GNUC__ >= 11 && defined(__x86_64__) && defined(__linux__)
#define EIGH_DRIVER                                                            \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), \
                 optimize("O2", "fp-contract=fast")))
#else
#define EIGH_DRIVER __attribute__((optimize("O2", "fp-contract=fast")))
#endif
#else
#define EIGH_DRIVER
#endif
#if defined(__GNUC__)
#define EIGH_INLINE static inline __attribute__((always_inline))
#else
#define EIGH_INLINE static inline
#endif

#define EIGH_CHUNK 64 /* bytes per vector chunk; also the alignment of every array in work */

static int64_t eigh_ld(int64_t n, size_t elem_size) {
  const int64_t vl = EIGH_CHUNK / (int64_t)elem_size;
  return (n + vl - 1) / vl * vl;
}

size_t gstat_i_eigh_small_workspace(int64_t n, int want_vectors, size_t elem_size) {
  (void)want_vectors; /* the reduction needs the full matrix either way */
  if (n <= 1 || elem_size == 0 || elem_size > EIGH_CHUNK) return 0;
  /* matrix (n columns of ld) + d, e, tau, p (ld each) + the sort permutation */
  return (size_t)((n + 4) * eigh_ld(n, elem_size)) * elem_size + (size_t)n * sizeof(int64_t);
}

#define EIGH_SMALL_T float
#define FN(x) x##_f32
#define VL 16
#define T_EPS (FLT_EPSILON * 0.5f) /* unit roundoff, LAPACK's slamch('E') */
#define T_SAFMIN FLT_MIN
#define T_RHO2MIN 0x1p-72f /* rho >= 2^-36: rho^3 >> 2^-149 / eps */
#define T_MAX FLT_MAX
#define T_SQRT sqrtf
#define T_FABS fabsf
#define T_COPYSIGN copysignf
#define T_LDEXP ldexpf
#define T_FREXP frexpf
#include "eigh_small.c"
#undef EIGH_SMALL_T
#undef FN
#undef VL
#undef T_EPS
#undef T_SAFMIN
#undef T_RHO2MIN
#undef T_MAX
#undef T_SQRT
#undef T_FABS
#undef T_COPYSIGN
#undef T_LDEXP
#undef T_FREXP

#define EIGH_SMALL_T double
#define FN(x) x##_f64
#define VL 8
#define T_EPS (DBL_EPSILON * 0.5)
#define T_SAFMIN DBL_MIN
#define T_RHO2MIN 0x1p-600 /* rho >= 2^-300: rho^3 >> 2^-1074 / eps */
#define T_MAX DBL_MAX
#define T_SQRT sqrt
#define T_FABS fabs
#define T_COPYSIGN copysign
#define T_LDEXP ldexp
#define T_FREXP frexp
#include "eigh_small.c"

#else /* ---------------- template body ---------------- */

#define T EIGH_SMALL_T

/* Sum of VL lanes as a fixed pairwise tree: short dependency chain, same result on every ISA. */
EIGH_INLINE T FN(hsum)(T *acc) {
  for (int h = VL / 2; h > 0; h /= 2)
    for (int l = 0; l < h; l++) acc[l] += acc[l + h];
  return acc[0];
}

/* x . y over rows [r0, ld) (r0 chunk-aligned). */
EIGH_INLINE T FN(dot)(const T *restrict x, const T *restrict y, int64_t r0, int64_t ld) {
  T acc[VL] = {0};
  for (int64_t i = r0; i < ld; i += VL)
    for (int l = 0; l < VL; l++) acc[l] += x[i + l] * y[i + l];
  return FN(hsum)(acc);
}

/* y -= a x over rows [r0, ld). */
EIGH_INLINE void FN(axmy)(T *restrict y, T a, const T *restrict x, int64_t r0, int64_t ld) {
  for (int64_t i = r0; i < ld; i += VL)
    for (int l = 0; l < VL; l++) y[i + l] -= a * x[i + l];
}

/* y = sum of A[:, j] x[j] for j in [j0, j1), rows [r0, ld). Chunk by chunk with the sums in
 * registers, so successive columns chain through an FMA rather than a store and a reload; two
 * sums (even and odd columns) halve both that chain and the rounding error growth. */
EIGH_INLINE void FN(gemv)(T *restrict y, const T *restrict A, int64_t ld, const T *restrict x,
                          int64_t j0, int64_t j1, int64_t r0) {
  for (int64_t i = r0; i < ld; i += VL) {
    T acc0[VL] = {0}, acc1[VL] = {0};
    int64_t j = j0;
    for (; j + 1 < j1; j += 2)
      for (int l = 0; l < VL; l++) {
        acc0[l] += A[i + l + j * ld] * x[j];
        acc1[l] += A[i + l + (j + 1) * ld] * x[j + 1];
      }
    if (j < j1)
      for (int l = 0; l < VL; l++) acc0[l] += A[i + l + j * ld] * x[j];
    for (int l = 0; l < VL; l++) y[i + l] = acc0[l] + acc1[l];
  }
}

/* y -= a x + b z over rows [r0, ld). */
EIGH_INLINE void FN(axpby)(T *restrict y, T a, const T *restrict x, T b, const T *restrict z,
                           int64_t r0, int64_t ld) {
  for (int64_t i = r0; i < ld; i += VL)
    for (int l = 0; l < VL; l++) y[i + l] -= a * x[i + l] + b * z[i + l];
}

/* (zj, zj1) <- (st zj1 + ct zj, ct zj1 - st zj): one rotation of LAPACK's dlasr('R','V',..). */
EIGH_INLINE void FN(rot)(T *restrict zj, T *restrict zj1, int64_t ld, T ct, T st) {
  for (int64_t i = 0; i < ld; i += VL)
    for (int l = 0; l < VL; l++) {
      const T t = zj1[i + l], u = zj[i + l];
      zj1[i + l] = ct * t - st * u;
      zj[i + l] = st * t + ct * u;
    }
}

/* Plane rotation [c s; -s c] [f; g] = [r; 0], LAPACK 3.10's dlartg. */
EIGH_INLINE void FN(lartg)(T f, T g, T *c, T *s, T *r) {
  const T safmin = T_SAFMIN, safmax = 1 / T_SAFMIN;
  const T rtmin = T_SQRT(safmin), rtmax = T_SQRT(safmax / 2);
  const T f1 = T_FABS(f), g1 = T_FABS(g);
  if (g == 0) {
    *c = 1;
    *s = 0;
    *r = f;
  } else if (f == 0) {
    *c = 0;
    *s = T_COPYSIGN(1, g);
    *r = g1;
  } else if (f1 > rtmin && f1 < rtmax && g1 > rtmin && g1 < rtmax) {
    const T d = T_SQRT(f * f + g * g);
    *c = f1 / d;
    *r = T_COPYSIGN(d, f);
    *s = g / *r;
  } else {
    T u = f1 > g1 ? f1 : g1;
    u = u < safmin ? safmin : (u > safmax ? safmax : u);
    const T fs = f / u, gs = g / u, d = T_SQRT(fs * fs + gs * gs);
    *c = T_FABS(fs) / d;
    *r = T_COPYSIGN(d, f);
    *s = gs / *r;
    *r *= u;
  }
}

/* sqrt(1 + g^2) without overflow. */
EIGH_INLINE T FN(hyp1)(T g) {
  const T ag = T_FABS(g);
  return ag > 1 / T_EPS ? ag : T_SQRT(1 + g * g);
}

/* One bulge of dsteqr's implicit QL/QR chase: g, p as in dsteqr, (c, s) the last rotation
 * and s2 = s^2. */
typedef struct {
  T g, p, c, s, s2;
} FN(bulge);

/* One step of the chase at off-diagonal ei: the rotation (c, s) that makes r from (g, f),
 * f = s e, b = c e with the previous (c, s); then dk <- g' + p, g' = dk - p_old,
 * p = s (s (dj - g') + 2 c b), g <- c (s (dj - g') + 2 c b) - b.
 * Written with q = 1/(g^2 + f^2) so that the carried recurrence (g, s2, p) needs one division
 * and no square root: the chase is latency bound, and the square root and the divisions for the
 * normalized c, s (needed by the next f, b and by the vectors) run off the critical path.
 * s2 comes from this f, not from a recurrence of its own, which would drift away from s.
 * The rewrite multiplies up to three chase quantities before scaling by q, so it is used only
 * while g^2 + f^2 >= T_RHO2MIN, where such products stay far above underflow; below (graded
 * matrices, tiny trailing blocks) the step is dsteqr's own, with dlartg. Returns r. */
EIGH_INLINE T FN(chase)(FN(bulge) * bg, T ei, T *dk, T dj) {
  const T f = bg->s * ei, b = bg->c * ei, g = bg->g;
  const T gp = *dk - bg->p, rho2 = g * g + bg->s2 * (ei * ei);
  T r;
  if (rho2 >= T_RHO2MIN) {
    const T q = 1 / rho2, br = f * (dj - gp) + 2 * g * b;
    r = T_SQRT(rho2);
    bg->p = q * (f * br);
    bg->g = q * (g * br) - b;
    bg->s2 = q * (f * f);
    bg->c = g / r;
    bg->s = f / r;
  } else {
    FN(lartg)(g, f, &bg->c, &bg->s, &r);
    const T rr = (dj - gp) * bg->s + 2 * bg->c * b;
    bg->p = bg->s * rr;
    bg->g = bg->c * rr - b;
    bg->s2 = bg->s * bg->s;
  }
  *dk = gp + bg->p;
  return r;
}

/* Eigen-decomposition of [a b; b c], LAPACK's dlaev2: rt1 has the larger magnitude,
 * (cs1, sn1) is its unit eigenvector. */
EIGH_INLINE void FN(laev2)(T a, T b, T c, T *rt1, T *rt2, T *cs1, T *sn1) {
  const T sm = a + c, df = a - c, adf = T_FABS(df), tb = b + b, ab = T_FABS(tb);
  const T acmx = T_FABS(a) > T_FABS(c) ? a : c, acmn = T_FABS(a) > T_FABS(c) ? c : a;
  T rt, cs, ct, tn;
  int sgn1, sgn2;
  if (adf > ab)
    rt = adf * T_SQRT(1 + (ab / adf) * (ab / adf));
  else if (adf < ab)
    rt = ab * T_SQRT(1 + (adf / ab) * (adf / ab));
  else
    rt = ab * T_SQRT(2);
  if (sm < 0) {
    *rt1 = (T)0.5 * (sm - rt);
    sgn1 = -1;
    *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
  } else if (sm > 0) {
    *rt1 = (T)0.5 * (sm + rt);
    sgn1 = 1;
    *rt2 = (acmx / *rt1) * acmn - (b / *rt1) * b;
  } else {
    *rt1 = (T)0.5 * rt;
    *rt2 = (T)-0.5 * rt;
    sgn1 = 1;
  }
  if (df >= 0) {
    cs = df + rt;
    sgn2 = 1;
  } else {
    cs = df - rt;
    sgn2 = -1;
  }
  if (T_FABS(cs) > ab) {
    ct = -tb / cs;
    *sn1 = 1 / T_SQRT(1 + ct * ct);
    *cs1 = ct * *sn1;
  } else if (ab == 0) {
    *cs1 = 1;
    *sn1 = 0;
  } else {
    tn = -cs / tb;
    *cs1 = 1 / T_SQRT(1 + tn * tn);
    *sn1 = tn * *cs1;
  }
  if (sgn1 == sgn2) {
    tn = *cs1;
    *cs1 = -*sn1;
    *sn1 = tn;
  }
}

/* Householder reduction A = Q T Q^T (LAPACK dsytd2, lower), working on the full symmetric
 * matrix so every update is a chunked column operation. On return column k of A holds the
 * reflector v_k (zero above row k+1, v_k[k+1] = 1), H_k = I - tau_k v_k v_k^T. */
EIGH_INLINE void FN(sytrd)(int64_t n, T *restrict A, int64_t ld, T *restrict d, T *restrict e,
                           T *restrict tau, T *restrict p) {
  for (int64_t k = 0; k + 2 < n; k++) {
    T *restrict v = A + k * ld;
    const int64_t r0 = (k + 1) / VL * VL;
    const T alpha = v[k + 1];
    d[k] = v[k];
    for (int64_t i = r0; i <= k + 1; i++) v[i] = 0;
    const T xx = FN(dot)(v, v, r0, ld);
    tau[k] = 0;
    e[k] = alpha;
    /* max|A| is in [1,2): a column this small is far below eps*||A|| and is left alone */
    if (xx <= T_SAFMIN / T_EPS) continue;
    const T beta = -T_COPYSIGN(T_SQRT(alpha * alpha + xx), alpha);
    const T t = (beta - alpha) / beta;
    const T sc = 1 / (alpha - beta);
    for (int64_t i = r0; i < ld; i += VL)
      for (int l = 0; l < VL; l++) v[i + l] *= sc;
    v[k + 1] = 1;
    tau[k] = t;
    e[k] = beta;

    /* p = t A v; w = p - (t/2)(p.v) v; A -= v w^T + w v^T (trailing columns) */
    FN(gemv)(p, A, ld, v, k + 1, n, r0);
    for (int64_t i = r0; i < ld; i += VL)
      for (int l = 0; l < VL; l++) p[i + l] *= t;
    for (int64_t i = r0; i <= k; i++) p[i] = 0;
    FN(axmy)(p, (T)0.5 * t * FN(dot)(p, v, r0, ld), v, r0, ld);
    for (int64_t j = k + 1; j < n; j++) FN(axpby)(A + j * ld, p[j], v, v[j], p, r0, ld);
  }
  d[n - 2] = A[(n - 2) + (n - 2) * ld];
  e[n - 2] = A[(n - 1) + (n - 2) * ld];
  d[n - 1] = A[(n - 1) + (n - 1) * ld];
}

/* Q = H_0 H_1 ... H_{n-3} (LAPACK dorgtr, lower), applied backwards (Q <- H_k Q) so each H_k
 * only touches rows/columns > k. Built as P = Q^T, so that applying H_k is y = P v (a
 * matrix-vector product) and P -= t y v^T (column axpys), with no per-column horizontal sums;
 * built in place over the reflectors: v_k in column k makes room for column k+1 of P.
 * Transposed at the end. y: scratch of ld. */
EIGH_INLINE void FN(orgtr)(int64_t n, T *restrict A, int64_t ld, const T *restrict tau,
                           T *restrict y) {
  memset(A + (n - 1) * ld, 0, (size_t)ld * sizeof(T));
  A[(n - 1) + (n - 1) * ld] = 1;
  for (int64_t k = n - 3; k >= 0; k--) {
    const T *restrict v = A + k * ld;
    T *restrict q = A + (k + 1) * ld;
    const T t = tau[k];
    const int64_t r0 = (k + 1) / VL * VL;
    memset(q, 0, (size_t)ld * sizeof(T));
    if (t != 0) {
      /* y = P v (P is the identity at row/column k+1 and v[k+1] = 1) */
      FN(gemv)(y, A, ld, v, k + 2, n, r0);
      y[k + 1] += 1;
      for (int64_t i = k + 2; i < n; i++) FN(axmy)(A + i * ld, t * v[i], y, r0, ld);
      FN(axmy)(q, t, y, r0, ld);
    }
    q[k + 1] += 1;
  }
  memset(A, 0, (size_t)ld * sizeof(T));
  A[0] = 1;
  for (int64_t j = 1; j < n; j++)
    for (int64_t i = 0; i < j; i++) {
      const T u = A[i + j * ld];
      A[i + j * ld] = A[j + i * ld];
      A[j + i * ld] = u;
    }
}

/* Implicit QL/QR with Wilkinson shifts on the tridiagonal (d, e), LAPACK's dsteqr without its
 * block scaling: with max|A| in [1,2) the absolute safmin floor of the deflation test only drops
 * entries far below eps ||A||, and tiny blocks take dlartg's scaled path in the chase.
 * Rotations go into the columns of z (if any) as soon as they are made, so this vector work
 * overlaps the latency-bound scalar chase. Returns the number of unconverged off-diagonals. */
EIGH_INLINE int FN(steqr)(int64_t n, T *restrict d, T *restrict e, T *restrict z, int64_t ld) {
  const T eps = T_EPS, eps2 = eps * eps, safmin = T_SAFMIN;
  const int64_t nmaxit = 30 * n;
  int64_t jtot = 0, l1 = 0;

  while (l1 < n && jtot < nmaxit) {
    if (l1 > 0) e[l1 - 1] = 0;
    int64_t m = l1;
    for (; m < n - 1; m++) {
      const T tst = T_FABS(e[m]);
      if (tst == 0) break;
      if (tst <= T_SQRT(T_FABS(d[m])) * T_SQRT(T_FABS(d[m + 1])) * eps) {
        e[m] = 0;
        break;
      }
    }
    int64_t l = l1, lend = m;
    l1 = m + 1;
    if (lend == l) continue;
    /* chase toward the end with the smaller diagonal entry */
    if (T_FABS(d[lend]) < T_FABS(d[l])) {
      lend = l;
      l = m;
    }
    if (lend > l) { /* QL: deflate at the top */
      while (l <= lend) {
        for (m = l; m < lend; m++)
          if (e[m] * e[m] <= (eps2 * T_FABS(d[m])) * T_FABS(d[m + 1]) + safmin) break;
        if (m < lend) e[m] = 0;
        if (m == l) {
          l++;
          continue;
        }
        if (m == l + 1) {
          T rt1, rt2, c, s;
          FN(laev2)(d[l], e[l], d[l + 1], &rt1, &rt2, &c, &s);
          if (z) FN(rot)(z + l * ld, z + (l + 1) * ld, ld, c, s);
          d[l] = rt1;
          d[l + 1] = rt2;
          e[l] = 0;
          l += 2;
          continue;
        }
        if (jtot == nmaxit) break;
        jtot++;
        /* Wilkinson shift: the eigenvalue of the top 2x2 nearer to d[l] */
        const T g = (d[l + 1] - d[l]) / (2 * e[l]);
        const T sigma = d[l] - e[l] / (g + T_COPYSIGN(FN(hyp1)(g), g));
        FN(bulge) bg = {d[m] - sigma, 0, 1, 1, 1};
        for (int64_t i = m - 1; i >= l; i--) {
          const T r = FN(chase)(&bg, e[i], &d[i + 1], d[i]);
          if (i != m - 1) e[i + 1] = r;
          if (z) FN(rot)(z + i * ld, z + (i + 1) * ld, ld, bg.c, -bg.s);
        }
        d[l] -= bg.p;
        e[l] = bg.g;
      }
    } else { /* QR: deflate at the bottom */
      while (l >= lend) {
        for (m = l; m > lend; m--)
          if (e[m - 1] * e[m - 1] <= (eps2 * T_FABS(d[m])) * T_FABS(d[m - 1]) + safmin) break;
        if (m > lend) e[m - 1] = 0;
        if (m == l) {
          l--;
          continue;
        }
        if (m == l - 1) {
          T rt1, rt2, c, s;
          FN(laev2)(d[l - 1], e[l - 1], d[l], &rt1, &rt2, &c, &s);
          if (z) FN(rot)(z + (l - 1) * ld, z + l * ld, ld, c, s);
          d[l - 1] = rt1;
          d[l] = rt2;
          e[l - 1] = 0;
          l -= 2;
          continue;
        }
        if (jtot == nmaxit) break;
        jtot++;
        const T g = (d[l - 1] - d[l]) / (2 * e[l - 1]);
        const T sigma = d[l] - e[l - 1] / (g + T_COPYSIGN(FN(hyp1)(g), g));
        FN(bulge) bg = {d[m] - sigma, 0, 1, 1, 1};
        for (int64_t i = m; i < l; i++) {
          const T r = FN(chase)(&bg, e[i], &d[i], d[i + 1]);
          if (i != m) e[i - 1] = r;
          if (z) FN(rot)(z + i * ld, z + (i + 1) * ld, ld, bg.c, bg.s);
        }
        d[l] -= bg.p;
        e[l - 1] = bg.g;
      }
    }
  }
  int info = 0;
  for (int64_t i = 0; i + 1 < n; i++) info += e[i] != 0;
  return info;
}

/* Ascending insertion sort of d, carrying in perm the column of z that belongs to each value
 * (the columns are then moved once, during the copy-out). */
EIGH_INLINE void FN(sort)(int64_t n, T *restrict d, int64_t *restrict perm) {
  for (int64_t j = 0; j < n; j++) perm[j] = j;
  for (int64_t j = 1; j < n; j++) {
    const T x = d[j];
    int64_t i = j - 1;
    for (; i >= 0 && d[i] > x; i--) {
      d[i + 1] = d[i];
      perm[i + 1] = perm[i];
    }
    d[i + 1] = x;
    perm[i + 1] = j;
  }
}

/* Copy a's lower triangle into A (ld, mirrored: the reduction works on full columns) and scale
 * it by 2^se (exact) so that max|A| lies in [1,2): no overflow or harmful underflow anywhere
 * below, and thresholds can be absolute. Returns 0, or -1 for a NaN or Inf in the input. */
EIGH_INLINE int FN(prepare)(int64_t n, const T *restrict a, int64_t lda, T *restrict A, int64_t ld,
                            int *se_out) {
  for (int64_t j = 0; j < n; j++) {
    T *restrict col = A + j * ld;
    for (int64_t i = 0; i < j; i++) col[i] = A[j + i * ld];
    memcpy(col + j, a + j + j * lda, (size_t)(n - j) * sizeof(T));
    memset(col + n, 0, (size_t)(ld - n) * sizeof(T));
  }
  T mx[VL] = {0};
  for (int64_t i = 0; i < n * ld; i += VL)
    for (int l = 0; l < VL; l++) {
      const T x = T_FABS(A[i + l]);
      mx[l] = x > mx[l] || x != x ? x : mx[l]; /* NaN sticks */
    }
  T anrm = 0;
  for (int l = 0; l < VL; l++) anrm = mx[l] > anrm || mx[l] != mx[l] ? mx[l] : anrm;
  if (!(anrm <= T_MAX)) return -1;
  int se = 0;
  if (anrm > 0) {
    int ex;
    (void)T_FREXP(anrm, &ex);
    se = 1 - ex;
  }
  if (se != 0) { /* two factors keep each in range */
    const T s1 = T_LDEXP(1, se / 2), s2 = T_LDEXP(1, se - se / 2);
    for (int64_t i = 0; i < n * ld; i += VL)
      for (int l = 0; l < VL; l++) A[i + l] = A[i + l] * s1 * s2;
  }
  *se_out = se;
  return 0;
}

static EIGH_DRIVER int FN(eigh)(int64_t n, T *restrict a, int64_t lda, T *restrict w,
                                int want_vectors, void *work) {
  if (n <= 0) return 0;
  if (n == 1) {
    w[0] = a[0];
    if (want_vectors) a[0] = 1;
    return 0;
  }
  const int64_t ld = eigh_ld(n, sizeof(T));
  T *restrict A = work;
  T *restrict d = A + n * ld, *restrict e = d + ld, *restrict tau = e + ld;
  T *restrict p = tau + ld;
  int64_t *restrict perm = (int64_t *)(void *)(p + ld);

  int se;
  if (FN(prepare)(n, a, lda, A, ld, &se) != 0) { /* report, rather than iterate on NaN */
    for (int64_t i = 0; i < n; i++) w[i] = NAN;
    if (want_vectors)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) a[i + j * lda] = NAN;
    return (int)(n - 1);
  }

  FN(sytrd)(n, A, ld, d, e, tau, p);
  if (want_vectors) FN(orgtr)(n, A, ld, tau, p);
  const int info = FN(steqr)(n, d, e, want_vectors ? A : NULL, ld);
  FN(sort)(n, d, perm);

  for (int64_t i = 0; i < n; i++) w[i] = T_LDEXP(d[i], -se);
  if (want_vectors)
    for (int64_t j = 0; j < n; j++) memcpy(a + j * lda, A + perm[j] * ld, (size_t)n * sizeof(T));
  return info;
}

static EIGH_DRIVER int FN(tridiag)(int64_t n, const T *restrict a, int64_t lda, T *restrict d,
                                   T *restrict e, int *se, void *work) {
  const int64_t ld = eigh_ld(n, sizeof(T));
  T *restrict A = work;
  T *restrict tau = A + n * ld, *restrict p = tau + ld;
  if (FN(prepare)(n, a, lda, A, ld, se) != 0) return -1;
  FN(sytrd)(n, A, ld, d, e, tau, p);
  return 0;
}

/* Z <- Q Z with Q = H_0 ... H_{n-3}: H_k = I - tau_k v_k v_k^T applied last to first. */
static EIGH_DRIVER void FN(apply_q)(int64_t n, const void *work, int64_t m, T *restrict Z,
                                    int64_t ldz) {
  const int64_t ld = eigh_ld(n, sizeof(T));
  const T *restrict A = work;
  const T *restrict tau = A + n * ld;
  for (int64_t k = n - 3; k >= 0; k--) {
    const T t = tau[k];
    const T *restrict v = A + k * ld;
    if (t == 0) continue;
    for (int64_t c = 0; c < m; c++) {
      T *restrict z = Z + c * ldz;
      T s = 0;
      for (int64_t i = k + 1; i < n; i++) s += v[i] * z[i];
      s *= t;
      for (int64_t i = k + 1; i < n; i++) z[i] -= s * v[i];
    }
  }
}

int FN(gstat_i_tridiag_small)(int64_t n, const T *a, int64_t lda, T *d, T *e, int *se, void *work) {
  return FN(tridiag)(n, a, lda, d, e, se, work);
}

void FN(gstat_i_tridiag_small_apply_q)(int64_t n, const void *work, int64_t m, T *Z, int64_t ldz) {
  FN(apply_q)(n, work, m, Z, ldz);
}

int FN(gstat_i_eigh_small)(int64_t n, T *a, int64_t lda, T *w, int want_vectors, void *work) {
  return FN(eigh)(n, a, lda, w, want_vectors, work);
}

#undef T
#endif
