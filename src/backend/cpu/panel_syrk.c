/*
 * M += P^T P over 8-column panels with AVX-512 (see panel_syrk.h).
 *
 * Why not BLAS syrk: the co-moment of tall data is a long sum of small
 * rank-`rows` updates (p x p output, p ~ 100..1000), a shape where OpenBLAS's
 * dsyrk is slow: gstat_covariance of 100000 x 100 on one core is faster
 * through this kernel than through dsyrk per block (bench/README.md,
 * "Measurements moved from code comments"). The caller packs each
 * centred row block into panels as it centres it, so this kernel needs no
 * packing of its own.
 *
 * A tile is 8 NI rows x 8 columns of M (NI = 1..3 panels against one panel):
 * NI x 8 vector accumulators stay in registers for all the rows; per row it
 * loads NI vectors and broadcasts 8 scalars, for 8 NI fused multiply-adds.
 * NI = 3 (24 accumulators) keeps the two FMA units busy; 1 and 2 finish the
 * column of tiles. The column panel b (8 rows x rows doubles) stays in L1
 * while the row panels stream from L2.
 */
#include "backend/cpu/panel_syrk.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* acc[m][c] += a_m * b_c over the rows, for NI panels at A (ps apart) and the
 * panel B, into M's 8 NI x 8 tile at Mt (ld ldm). */
#define DEFINE_TILE(NI)                                                                   \
  AVX512 static void tile##NI(int64_t rows, const double *A, int64_t ps, const double *B, \
                              double *Mt, int64_t ldm, const char *pf, int64_t lines) {   \
    __m512d acc[NI][8];                                                                   \
    _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)                                   \
        _Pragma("GCC unroll 3") for (int m = 0; m < NI; m++) acc[m][c] =                  \
            _mm512_loadu_pd(Mt + 8 * m + c * ldm);                                        \
    for (int64_t r = 0; r < rows; r++) {                                                  \
      if (r < lines) _mm_prefetch(pf + 64 * r, _MM_HINT_T1);                              \
      __m512d a[NI];                                                                      \
      _Pragma("GCC unroll 3") for (int m = 0; m < NI; m++) a[m] =                         \
          _mm512_loadu_pd(A + m * ps + 8 * r);                                            \
      _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {                               \
        __m512d bc = _mm512_set1_pd(B[8 * r + c]);                                        \
        _Pragma("GCC unroll 3") for (int m = 0; m < NI; m++) acc[m][c] =                  \
            _mm512_fmadd_pd(a[m], bc, acc[m][c]);                                         \
      }                                                                                   \
    }                                                                                     \
    _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++)                                   \
        _Pragma("GCC unroll 3") for (int m = 0; m < NI; m++)                              \
            _mm512_storeu_pd(Mt + 8 * m + c * ldm, acc[m][c]);                            \
  }

DEFINE_TILE(1)
DEFINE_TILE(2)
DEFINE_TILE(3)

static int available = -1; /* -1: not yet known */

bool gstat_i_panel_syrk_available(void) {
  if (available < 0) { /* a benign race: every thread computes the same value */
    const char *k = getenv("GSTAT_CPU_KERNELS");
    __builtin_cpu_init();
    available = __builtin_cpu_supports("avx512f") && !(k && strcmp(k, "generic") == 0);
  }
  return available == 1;
}

void gstat_i_panel_syrk(int64_t rows, int64_t panels, const double *P, int64_t ps, double *M,
                        int64_t ldm, const void *next, size_t next_bytes) {
  /* the lines of `next` are shared out over the tiles, one per row at most */
  int64_t tiles = 0;
  for (int64_t b = 0; b < panels; b++) tiles += (panels - b + 2) / 3;
  int64_t lines = (int64_t)((next_bytes + 63) / 64), per = (lines + tiles - 1) / tiles;
  if (per > rows) per = rows;
  const char *pf = next;
  for (int64_t b = 0; b < panels; b++) {
    const double *B = P + b * ps;
    double *Mc = M + 8 * b * ldm;
    for (int64_t a = b; a < panels; a += 3) {
      int64_t n = lines < per ? lines : per;
      if (panels - a >= 3)
        tile3(rows, P + a * ps, ps, B, Mc + 8 * a, ldm, pf, n);
      else if (panels - a == 2)
        tile2(rows, P + a * ps, ps, B, Mc + 8 * a, ldm, pf, n);
      else
        tile1(rows, P + a * ps, ps, B, Mc + 8 * a, ldm, pf, n);
      pf += 64 * n;
      lines -= n;
    }
  }
}

#else /* no AVX-512 kernel on this architecture or compiler */

bool gstat_i_panel_syrk_available(void) {
  return false;
}

void gstat_i_panel_syrk(int64_t rows, int64_t panels, const double *P, int64_t ps, double *M,
                        int64_t ldm, const void *next, size_t next_bytes) {
  /* never called: callers check gstat_i_panel_syrk_available() */
  (void)rows, (void)panels, (void)P, (void)ps, (void)M, (void)ldm, (void)next, (void)next_bytes;
}

#endif
