/* Left-looking unblocked Cholesky: column j is updated by contiguous axpys
 * with the columns before it, which the compiler vectorizes. */
#include <math.h>

#include "core/clones.h"
#include "backend/cpu/chol_small.h"

/* The clones are static behind an exported wrapper: clang 14 names an
 * exported target_clones function's ifunc "<name>.ifunc", which other files
 * cannot link to. */
#define DEFINE_CHOL(T, SFX, SQRT)                                            \
  GSTAT_I_CLONES static int chol_small_##SFX(int64_t n, T *a, int64_t lda) { \
    for (int64_t j = 0; j < n; j++) {                                        \
      T *cj = a + j * lda;                                                   \
      for (int64_t k = 0; k < j; k++) {                                      \
        const T *ck = a + k * lda;                                           \
        T s = ck[j];                                                         \
        for (int64_t i = j; i < n; i++) cj[i] -= ck[i] * s;                  \
      }                                                                      \
      T d = cj[j];                                                           \
      if (!(d > 0)) return (int)(j + 1); /* also catches NaN */              \
      d = SQRT(d);                                                           \
      cj[j] = d;                                                             \
      T r = 1 / d;                                                           \
      for (int64_t i = j + 1; i < n; i++) cj[i] *= r;                        \
    }                                                                        \
    return 0;                                                                \
  }                                                                          \
  int gstat_i_chol_small_##SFX(int64_t n, T *a, int64_t lda) {               \
    return chol_small_##SFX(n, a, lda);                                      \
  }

DEFINE_CHOL(float, f32, sqrtf)
DEFINE_CHOL(double, f64, sqrt)
