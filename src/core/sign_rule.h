/* The sign rule's search (DESIGN.md: a vector's entry of largest magnitude
 * positive, the first one on ties), shared by the CPU backend's eigenvectors
 * and PCA's components: the first index of v's largest |entry| among
 * v[0..n), n when there is none (every entry NaN). The maximum first, as a
 * vectorized reduction, then its first index: one comparing pass that
 * re-reads v[arg] is a chain of dependent loads (bench/README.md, "The
 * components' Cholesky QR"). */
#ifndef GSTAT_CORE_SIGN_RULE_H
#define GSTAT_CORE_SIGN_RULE_H

#include <stdint.h>

/* clang 14 cannot vectorize the reduction and warns (-Wpass-failed) */
#if defined(__clang__)
#define GSTAT_I_SIMD_MAX_BEST
#else
#define GSTAT_I_SIMD_MAX_BEST _Pragma("omp simd reduction(max : best)")
#endif

#define GSTAT_I_FIRST_ABS_MAX(T, NAME)                           \
  static inline int64_t NAME(const T *v, int64_t n) {            \
    T best = 0;                                                  \
    GSTAT_I_SIMD_MAX_BEST                                        \
    for (int64_t i = 0; i < n; i++) {                            \
      T m = v[i] < 0 ? -v[i] : v[i];                             \
      best = m > best ? m : best;                                \
    }                                                            \
    int64_t at = 0;                                              \
    while (at < n && (v[at] < 0 ? -v[at] : v[at]) != best) at++; \
    return at;                                                   \
  }

GSTAT_I_FIRST_ABS_MAX(float, gstat_i_first_abs_max_f32)
GSTAT_I_FIRST_ABS_MAX(double, gstat_i_first_abs_max_f64)

#endif /* GSTAT_CORE_SIGN_RULE_H */
