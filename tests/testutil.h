/* Helpers shared by the C tests: random inputs, LAPACK's matrix families,
 * guarded buffers in any layout and dtype, and LAPACK's accuracy ratios. */
#ifndef GSTAT_TESTUTIL_H
#define GSTAT_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gstat/gstat.h"

/* ---- random numbers (splitmix64; the suite seed is printed at start) ---- */
typedef struct {
  uint64_t s;
} tu_rng;
tu_rng tu_rng_new(void);      /* fresh stream from the suite seed and a counter */
double tu_uniform(tu_rng *r); /* [0, 1) */
double tu_normal(tu_rng *r);

/* ---- matrix families (double, column-major n x n) ---- */
typedef enum {
  TU_ZERO,
  TU_IDENTITY,
  TU_EVEN,      /* eigenvalues evenly spaced in [1/cond, 1]... rotated */
  TU_GEOMETRIC, /* eigenvalues geometric from 1 to ulp */
  TU_CLUSTERED, /* all but one eigenvalue equal */
  TU_RANDOM,    /* entries uniform(-1, 1), symmetric */
  TU_NEAR_OVERFLOW,
  TU_NEAR_UNDERFLOW,
  TU_FAMILY_COUNT
} tu_family;
const char *tu_family_name(tu_family f);
/* ulp of the precision the family is built for (eps of float or double). */
void tu_symmetric(tu_rng *r, tu_family f, int64_t n, double ulp, bool f32, double *a);
/* Symmetric positive definite with condition number about `cond`. */
void tu_spd(tu_rng *r, int64_t n, double cond, double *a);
/* Q diag(d) Q^T for a random orthogonal Q: a planted spectrum (repeated,
 * zero or negative eigenvalues as d says). */
void tu_planted(tu_rng *r, int64_t n, const double *d, double *a);
/* Graded scaling a <- D a D, D = diag(range^(-i/(n-1))): rows and columns
 * from 1 down to 1/range; the inertia (definiteness) is unchanged. */
void tu_grade(int64_t n, double range, double *a);
/* Random orthogonal n x n (QR of a Gaussian). */
void tu_orthogonal(tu_rng *r, int64_t n, double *q);

/* ---- guarded buffers ---- */
typedef enum { TU_ROW_MAJOR, TU_COL_MAJOR, TU_STRIDED, TU_LAYOUT_COUNT } tu_layout;
const char *tu_layout_name(tu_layout l);
/* A descriptor over a buffer poisoned with a byte pattern, with guard bytes
 * before and after; TU_STRIDED leaves gaps between rows, columns and
 * batch elements (a padded, transposed-order view). */
typedef struct {
  gstat_matrix m;
  unsigned char *raw;
  size_t raw_bytes, offset; /* data = raw + offset */
  unsigned char *mask;      /* 1 where an element byte lives */
} tu_buf;
tu_buf tu_buf_new(gstat_dtype dtype, int64_t batch, int64_t rows, int64_t cols, tu_layout layout);
void tu_buf_free(tu_buf *b);
double tu_get(const gstat_matrix *m, int64_t b, int64_t i, int64_t j);
void tu_set(gstat_matrix *m, int64_t b, int64_t i, int64_t j, double v);
/* Value a double takes when stored in dtype (rounding). */
double tu_round(gstat_dtype dtype, double v);
/* Copy column-major n x n `a` (double) into element b, rounded to its dtype,
 * and back into `a` so `a` holds exactly what the library sees. */
void tu_store_matrix(tu_buf *buf, int64_t b, double *a);
/* Fill the element bytes with the poison pattern (outputs: see every write). */
void tu_poison(tu_buf *b);
/* True when no byte outside the elements changed (guards and gaps). */
bool tu_outside_untouched(const tu_buf *b);
/* True when every element byte changed from the poison pattern somewhere. */
bool tu_all_written(const tu_buf *b);
/* True when the whole buffer is still poison (nothing was written). */
bool tu_untouched(const tu_buf *b);

/* ---- LAPACK ratios (1-norm), inputs double column-major ---- */
/* The 1-norm (largest column sum of magnitudes) of a rows x cols matrix. */
double tu_norm1(int64_t rows, int64_t cols, const double *a);
/* ||A - V diag(w) V^T|| / (||A|| n ulp) */
double tu_eig_residual(int64_t n, const double *a, const double *w, const double *v, double ulp);
/* ||I - V^T V|| / (n ulp) */
double tu_orthogonality(int64_t n, const double *v, double ulp);
/* ||A - L L^T|| / (||A|| n ulp), L lower */
double tu_chol_residual(int64_t n, const double *a, const double *l, double ulp);
/* ||B - op(M) X|| / (||M|| ||X|| n ulp); M n x n, B/X n x nrhs */
double tu_solve_residual(int64_t n, int64_t nrhs, const double *m, bool trans, const double *x,
                         const double *b, double ulp);

/* Read element b of a descriptor into a double column-major array. */
void tu_read(const gstat_matrix *m, int64_t b, double *out);

/* Element b of a triangular factor F (its `uplo` triangle) as the dense
 * lower factor L (column-major n x n); false when the opposite strict
 * triangle is not zero. */
bool tu_lower_factor(const gstat_matrix *F, int64_t b, gstat_uplo uplo, double *l);

/* Every element of B filled with normal random numbers (rounded to its
 * dtype), copied to b (element after element, each column-major). */
void tu_fill_normal(tu_rng *r, tu_buf *B, double *b);

/* Whether a call failed as expected: status `want` and ctx's last error
 * exactly `msg` (prints both on a mismatch). tu_expect_fail asserts it
 * through cmocka, for the tests that use cmocka. */
bool tu_failed_as(gstat_ctx *ctx, gstat_status got, gstat_status want, const char *msg);
#define tu_expect_fail(ctx, got, want, msg) assert_true(tu_failed_as((ctx), (got), (want), (msg)))

/* A new context with the given backend and otherwise default options
 * (asserts success through the caller's test framework: returns NULL on failure). */
gstat_ctx *tu_ctx(gstat_backend backend);

/* The same with `threads` CPU threads (0: OpenMP's default) and progress
 * reports to fn(..., user); NULL on failure. */
gstat_ctx *tu_ctx_progress(gstat_backend backend, int threads, gstat_progress_fn fn, void *user);

/* ---- allocator hooks that count: opt.allocator = tu_counting_allocator(&c) ---- */
typedef struct {
  int64_t allocs, frees;
  size_t live;       /* bytes allocated and not yet freed */
  int bad_alignment; /* calls whose alignment was not a power of two >= 16 */
} tu_alloc_counter;
gstat_allocator tu_counting_allocator(tu_alloc_counter *c);

/* Whether the quick mode (valgrind) is on: GSTAT_TEST_QUICK=1. */
bool tu_quick(void);

#endif
