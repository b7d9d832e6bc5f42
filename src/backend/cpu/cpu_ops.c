/* CPU per-element routines for float and double (see cpu_ops_tmpl.h).
 *
 * Kernel crossovers, measured single-threaded on the project's 2-core Xeon
 * (AVX-512), see bench/README.md: below them our own small-matrix kernels
 * beat OpenBLAS/LAPACK, whose per-call overhead dominates there. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/chol_lanes.h"
#include "backend/cpu/chol_small.h"
#include "backend/cpu/cpu_job.h"
#include "backend/cpu/eigh_lapack.h"
#include "backend/cpu/eigh_lowest.h"
#include "backend/cpu/eigh_small.h"
#include "backend/cpu/lapack_api.h"
#include "backend/cpu/pack.h"
#include "core/sign_rule.h"

/* Our small eigh kernel up to this order; at larger orders the LAPACK recipe
 * wins (bench/README.md, "Measurements moved from code comments"). */
static const int64_t eigh_small_max_f32 = 128;
static const int64_t eigh_small_max_f64 = 128;
static const int64_t chol_small_max_f32 = 96;
static const int64_t chol_small_max_f64 = 96;
/* Matrices interleaved over SIMD lanes (chol_lanes.c) up to this order, when
 * input and output have the compute type: faster than one by one there; f64
 * ties at n = 64, where 8 lanes of 64x64 doubles no longer stay in L2
 * (bench/README.md, "Measurements moved from code comments"). */
static const int64_t chol_lanes_max_f32 = 64;
static const int64_t chol_lanes_max_f64 = 48;

#define T float
#define SFX f32
#define LP(x) LAPACKE_s##x
#define BLAS(x) cblas_s##x
#define EPSILON FLT_EPSILON
#define NATIVE GSTAT_F32
#define LANES GSTAT_I_LANES_F32
#include "backend/cpu/cpu_ops_tmpl.h"
#undef T
#undef SFX
#undef LP
#undef BLAS
#undef EPSILON
#undef NATIVE
#undef LANES

#define T double
#define SFX f64
#define LP(x) LAPACKE_d##x
#define BLAS(x) cblas_d##x
#define EPSILON DBL_EPSILON
#define NATIVE GSTAT_F64
#define LANES GSTAT_I_LANES_F64
#include "backend/cpu/cpu_ops_tmpl.h"
#undef T
#undef SFX
#undef LP
#undef BLAS
#undef EPSILON
#undef NATIVE
#undef LANES

int64_t gstat_i_eigh_lowest_max_n(void) {
  return eigh_small_max_f64 < eigh_small_max_f32 ? eigh_small_max_f64 : eigh_small_max_f32;
}

size_t gstat_i_eigh_lowest_workspace(int64_t n, int64_t m, size_t elem_size) {
  size_t o[6];
  return elem_size == sizeof(float) ? lowest_offsets_f32(n, m, o) : lowest_offsets_f64(n, m, o);
}

void gstat_i_eig_signs_f32(float *v, int64_t n, int64_t cols, int64_t ld) {
  normalize_signs_f32(v, n, cols, ld);
}

void gstat_i_eig_signs_f64(double *v, int64_t n, int64_t cols, int64_t ld) {
  normalize_signs_f64(v, n, cols, ld);
}
