/* CPU per-element routines for float and double (see cpu_ops_tmpl.h).
 *
 * Kernel crossovers, measured single-threaded on the project's 2-core Xeon
 * (AVX-512), see bench/README.md: below them our own small-matrix kernels
 * beat OpenBLAS/LAPACK, whose per-call overhead dominates there. */
#include <lapacke.h>

#include "linalg/backend.h"
#include "linalg/cpu/chol_small.h"
#include "linalg/cpu/cpu_job.h"
#include "linalg/cpu/eigh_lapack.h"
#include "linalg/cpu/eigh_small.h"
#include "linalg/cpu/pack.h"

static const int64_t eigh_small_max_f32 = 512; /* 64x512: 1490 ms vs 1867 ms with LAPACK above 256 (paired runs) */
static const int64_t eigh_small_max_f64 = 256;
static const int64_t chol_small_max_f32 = 96;
static const int64_t chol_small_max_f64 = 96;

#define T float
#define SFX f32
#define LP(x) LAPACKE_s##x
#include "linalg/cpu/cpu_ops_tmpl.h"
#undef T
#undef SFX
#undef LP

#define T double
#define SFX f64
#define LP(x) LAPACKE_d##x
#include "linalg/cpu/cpu_ops_tmpl.h"
#undef T
#undef SFX
#undef LP
