/* Left-looking Cholesky over interleaved lanes (see chol_lanes.h). The inner
 * loops run over the lanes with a compile-time trip count, so they compile to
 * whole vector operations. */
#include <math.h>

#include "core/clones.h"
#include "backend/cpu/chol_lanes.h"

/* Static clones behind an exported wrapper, as in chol_small.c (clang 14). */
#define DEFINE_CHOL_LANES(T, SFX, G, SQRT)                                      \
  GSTAT_I_CLONES static void chol_lanes_##SFX(int64_t n, T *a, int64_t *info) { \
    for (int l = 0; l < G; l++) info[l] = 0;                                    \
    for (int64_t j = 0; j < n; j++) {                                           \
      T *cj = a + j * n * G; /* column j: cj[i * G + l] */                      \
      for (int64_t k = 0; k < j; k++) {                                         \
        const T *ck = a + k * n * G;                                            \
        T s[G];                                                                 \
        for (int l = 0; l < G; l++) s[l] = ck[j * G + l];                       \
        for (int64_t i = j; i < n; i++)                                         \
          for (int l = 0; l < G; l++) cj[i * G + l] -= ck[i * G + l] * s[l];    \
      }                                                                         \
      T r[G];                                                                   \
      for (int l = 0; l < G; l++) {                                             \
        T d = cj[j * G + l];                                                    \
        if (!(d > 0)) { /* also NaN: poison this lane from here on */           \
          if (info[l] == 0) info[l] = j + 1;                                    \
          d = (T)NAN;                                                           \
        } else {                                                                \
          d = SQRT(d);                                                          \
        }                                                                       \
        cj[j * G + l] = d;                                                      \
        r[l] = 1 / d;                                                           \
      }                                                                         \
      for (int64_t i = j + 1; i < n; i++)                                       \
        for (int l = 0; l < G; l++) cj[i * G + l] *= r[l];                      \
    }                                                                           \
  }                                                                             \
  void gstat_i_chol_lanes_##SFX(int64_t n, T *a, int64_t *info) {               \
    chol_lanes_##SFX(n, a, info);                                               \
  }

DEFINE_CHOL_LANES(float, f32, GSTAT_I_LANES_F32, sqrtf)
DEFINE_CHOL_LANES(double, f64, GSTAT_I_LANES_F64, sqrt)
