/*
 * Residual fuzzing of the solvers: not only "no crash" but every answer
 * checked. The fuzzer picks a matrix family (zero, identity, even/geometric/
 * clustered spectra, random, near overflow/underflow, planted spectra with
 * repeated, zero or negative eigenvalues, SPD of a given condition; the
 * planted ones rotated or left diagonal), a graded
 * D A D scaling, a scale near sqrt(overflow) or sqrt(underflow), the size,
 * batch, triangle, layouts (row/column major, strided) and dtype (f32, f64,
 * bf16), and calls gstat_eigh, or gstat_cholesky followed by
 * gstat_cholesky_solve and gstat_triangular_solve. Checks (LAPACK's ratios,
 * threshold 60, in the ulp of the input dtype: bf16 2^-7, computed in
 * float32 as linalg.h says):
 * - eigh: ||A - V W V^T|| / (||A|| n ulp), ||I - V^T V|| / (n ulp),
 *   eigenvalues ascending, the sign rule, bf16 outputs equal to the float32
 *   ones rounded (CPU);
 * - Cholesky: ||A - L L^T|| / (||A|| n ulp) when it succeeds; it must
 *   succeed on a well-conditioned SPD matrix and fail with GSTAT_ENOTPD,
 *   info in 1..n and NaN outputs when an eigenvalue is clearly negative;
 * - solves: ||B - op(M) X|| / (||M|| ||X|| n ulp), GSTAT_ESINGULAR and info
 *   for a zero on the diagonal;
 * - outputs fully written, nothing outside them (guard bytes, gaps).
 * GSTAT_FUZZ_BACKEND=cuda runs the calls on the CUDA backend (exit 77 when
 * there is none); scripts/gpu-check does so through the standalone driver.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fuzz_input.h"
#include "families.h"
#include "testutil.h"

static const double max_ratio = 60;

typedef struct {
  int op; /* 0: eigh, 1: Cholesky and solves */
  gstat_dtype dt;
  int64_t n, nb, nrhs;
  gstat_uplo uplo;
  tu_layout lin, lout;
  int family;   /* tu_family, or F_PLANTED / F_SPD */
  double d[80]; /* the planted spectrum (F_PLANTED, F_SPD) */
  double grade, scale;
  int vectors, in_place, zero_at; /* zero_at: diagonal entry zeroed in T (-1: none) */
  int diagonal;                   /* planted spectra on the diagonal, not rotated */
  gstat_trans trans;
  gstat_diag diag;
  uint64_t seed;
} fcase;

enum { F_PLANTED = TU_FAMILY_COUNT, F_SPD, F_COUNT };

static int cuda_backend;

static gstat_ctx *context(void) {
  static gstat_ctx *ctx;
  if (ctx) return ctx;
  const char *b = getenv("GSTAT_FUZZ_BACKEND");
  cuda_backend = b && strcmp(b, "cuda") == 0;
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = cuda_backend ? GSTAT_BACKEND_CUDA : GSTAT_BACKEND_CPU;
  if (!cuda_backend) opt.num_threads = 1;
  gstat_status st = gstat_ctx_create(&ctx, &opt);
  if (st == GSTAT_EUNSUPPORTED && cuda_backend) {
    fprintf(stderr, "fuzz_solvers: no usable CUDA backend: skipped\n");
    exit(77);
  }
  if (st != GSTAT_OK) abort();
  return ctx;
}

/* The case from the fuzzer's bytes. */
static void read_case(fz_input *in, fcase *c) {
  static const int64_t sizes[] = {0,  1,  2,  3,  4,  5,  7,  8,  9, 12,
                                  16, 17, 20, 31, 32, 33, 40, 64, 65};
  static const double grades[] = {1, 1, 1, 1e3, 1e6, 0x1p20};
  static const double table[] = {1, -1, 0.5, -0.5, 1e-3, 0, 2, 1, 1, 0.25, -1e-3, 3};
  memset(c, 0, sizeof *c);
  uint8_t a = fz_u8(in), b = fz_u8(in);
  c->op = a & 1;
  c->dt = (gstat_dtype)(1 + (a >> 1) % 3);
  c->n = sizes[fz_u8(in) % (sizeof sizes / sizeof sizes[0])];
  c->nb = 1 + (b & 3) % 3;
  c->nrhs = (b >> 2) % 4;
  c->uplo = (gstat_uplo)((b >> 4) & 1);
  c->lin = (tu_layout)(fz_u8(in) % 3);
  c->lout = (tu_layout)(fz_u8(in) % 3);
  c->family = fz_u8(in) % F_COUNT;
  c->grade = grades[fz_u8(in) % 6];
  uint8_t s = fz_u8(in);
  double big = c->dt == GSTAT_F64 ? DBL_MAX : FLT_MAX,
         tiny = c->dt == GSTAT_F64 ? DBL_MIN : FLT_MIN;
  c->scale = s < 200 ? 1 : s < 228 ? 0.125 * sqrt(big) : 2 * sqrt(tiny);
  c->vectors = (a >> 3) & 1 || c->op == 1;
  c->in_place = (a >> 4) & 1 && c->lin == c->lout;
  c->trans = (gstat_trans)((a >> 5) & 1);
  c->diag = (gstat_diag)((a >> 6) & 1 && c->scale == 1 && c->grade == 1);
  c->zero_at = (b >> 6) == 3 && c->n > 0 ? (int)(fz_u8(in) % c->n) : -1;
  double cond = pow(10, fz_u8(in) % 16);
  for (int64_t i = 0; i < c->n; i++)
    c->d[i] = c->family == F_SPD ? pow(cond, -(c->n > 1 ? (double)i / (double)(c->n - 1) : 0))
                                 : table[fz_u8(in) % 12];
  c->seed = fz_u64(in, 8);
  c->diagonal = fz_u8(in) & 1; /* read last: older corpus inputs keep their meaning */
}

/* Element b's matrix (column-major double): the family, graded, scaled. */
static void make_matrix(tu_rng *r, const fcase *c, double *a) {
  if (c->family >= TU_FAMILY_COUNT && c->diagonal) {
    memset(a, 0, sizeof(double) * (size_t)(c->n * c->n));
    for (int64_t i = 0; i < c->n; i++) a[i + i * c->n] = c->d[i];
  } else if (c->family >= TU_FAMILY_COUNT) {
    tu_planted(r, c->n, c->d, a);
  } else {
    tu_symmetric(r, (tu_family)c->family, c->n, tf_ulp(c->dt), c->dt != GSTAT_F64, a);
  }
  if (c->grade != 1) tu_grade(c->n, c->grade, a);
  if (c->scale != 1)
    for (int64_t k = 0; k < c->n * c->n; k++) a[k] *= c->scale;
}

/* Largest-magnitude entry of each column not negative (rounding may tie it). */
static void check_signs(int64_t n, const double *v) {
  for (int64_t j = 0; j < n; j++) {
    double big = 0, top = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      big = fmax(big, fabs(v[i + j * n]));
      top = fmax(top, v[i + j * n]);
    }
    FZ_CHECK(top == big, "column %lld: largest magnitude %g is negative", (long long)j, big);
  }
}

static void report(const fcase *c, const char *what, double ratio) {
  fprintf(stderr, "%s ratio %.3g: op %d dtype %d n %lld batch %lld family %d grade %g scale %g\n",
          what, ratio, c->op, (int)c->dt, (long long)c->n, (long long)c->nb, c->family, c->grade,
          c->scale);
}

#define RATIO_OK(c, what, ratio)                          \
  do {                                                    \
    double r_ = (ratio);                                  \
    if (!(r_ <= max_ratio)) report(c, what, r_);          \
    FZ_CHECK(r_ <= max_ratio, "%s ratio %.3g", what, r_); \
  } while (0)

/* Outputs fully written and nothing outside them. */
static void check_buffers(const tu_buf *out, const char *name) {
  /* the poison pattern is a plausible bf16 rounding residue (-2.9e-16): an
   * element left at it proves nothing there */
  FZ_CHECK(out->m.dtype == GSTAT_BF16 || tu_all_written(out), "%s not fully written", name);
  FZ_CHECK(tu_outside_untouched(out), "%s: bytes outside the elements changed", name);
}

/* On the CPU, bf16 outputs are the float32 results rounded: same call with
 * float32 outputs on the same bf16 input. */
static void check_bf16(gstat_ctx *ctx, const fcase *c, const tu_buf *A, const tu_buf *W,
                       const tu_buf *V) {
  tu_buf W32 = tu_buf_new(GSTAT_F32, c->nb, c->n, 1, TU_COL_MAJOR);
  tu_buf V32 = tu_buf_new(GSTAT_F32, c->nb, c->n, c->n, TU_COL_MAJOR);
  FZ_CHECK(gstat_eigh(ctx, &A->m, c->uplo, &W32.m, &V32.m, NULL) == GSTAT_OK, "float32 outputs");
  for (int64_t b = 0; b < c->nb; b++)
    for (int64_t i = 0; i < c->n; i++) {
      double w32 = tu_get(&W32.m, b, i, 0);
      FZ_CHECK(tu_get(&W->m, b, i, 0) == tu_round(GSTAT_BF16, w32), "bf16 w[%lld]", (long long)i);
      for (int64_t j = 0; j < c->n; j++)
        FZ_CHECK(tu_get(&V->m, b, i, j) == tu_round(GSTAT_BF16, tu_get(&V32.m, b, i, j)),
                 "bf16 V[%lld,%lld]", (long long)i, (long long)j);
    }
  tu_buf_free(&W32);
  tu_buf_free(&V32);
}

static void fuzz_eigh(gstat_ctx *ctx, const fcase *c) {
  int64_t n = c->n, nb = c->nb;
  double ulp = tf_ulp(c->dt);
  tu_rng r = {c->seed};
  tu_buf A = tu_buf_new(c->dt, nb, n, n, c->lin);
  tu_buf W = tu_buf_new(c->dt, nb, n, 1, c->lout);
  tu_buf V = tu_buf_new(c->dt, nb, n, n, c->lout);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n + 1));
  double *w = malloc(sizeof(double) * (size_t)(n + 1)),
         *v = malloc(sizeof(double) * (size_t)(n * n + 1));
  for (int64_t b = 0; b < nb; b++) {
    make_matrix(&r, c, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n); /* a: what the library sees */
  }
  tu_buf *out = c->in_place ? &A : &V;
  int64_t info[3] = {-1, -1, -1};
  gstat_status st = gstat_eigh(ctx, &A.m, c->uplo, &W.m, c->vectors ? &out->m : NULL, info);
  FZ_CHECK(st == GSTAT_OK, "eigh: %s", gstat_ctx_last_error(context()));
  check_buffers(&W, "w");
  if (c->vectors) check_buffers(out, "V");
  for (int64_t b = 0; b < nb; b++) {
    FZ_CHECK(info[b] == 0, "info[%lld] = %lld", (long long)b, (long long)info[b]);
    tu_read(&W.m, b, w);
    for (int64_t i = 1; i < n; i++) {
      if (!(w[i - 1] <= w[i])) report(c, "ascending (w[i-1] - w[i])", w[i - 1] - w[i]);
      FZ_CHECK(w[i - 1] <= w[i], "w not ascending at %lld: %.17g > %.17g", (long long)i, w[i - 1],
               w[i]);
    }
    if (!c->vectors) continue;
    tu_read(&out->m, b, v);
    RATIO_OK(c, "eigh residual", tu_eig_residual(n, a + b * n * n, w, v, ulp));
    RATIO_OK(c, "eigh orthogonality", tu_orthogonality(n, v, ulp));
    check_signs(n, v);
  }
  if (c->dt == GSTAT_BF16 && c->vectors && !c->in_place && !cuda_backend)
    check_bf16(ctx, c, &A, &W, &V);
  free(a);
  free(w);
  free(v);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&V);
}

/* What the planted spectrum promises: 1 surely positive definite (in the
 * input dtype, after rounding), -1 surely not, 0 either way. */
static int definiteness(const fcase *c) {
  if (c->n == 0 || c->family == TU_IDENTITY) return 1;
  if (c->family == TU_ZERO) return -1;
  if (c->family < TU_FAMILY_COUNT) return 0;
  return tf_definiteness(c->n, c->d, c->dt);
}

static int semidefinite(const fcase *c) {
  if (c->family == TU_ZERO || c->family == TU_IDENTITY) return 1;
  if (c->family < TU_FAMILY_COUNT) return 0;
  for (int64_t i = 0; i < c->n; i++)
    if (c->d[i] < 0) return 0;
  return 1;
}

/* M: element e of T as the solve sees it (its triangle, unit diagonal). */
static void triangle_of(const fcase *c, const gstat_matrix *T, int64_t e, double *m) {
  int64_t n = c->n;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      int in = c->uplo == GSTAT_LOWER ? i >= j : i <= j;
      m[i + j * n] = !in ? 0 : i == j && c->diag == GSTAT_UNIT ? 1 : tu_get(T, e, i, j);
    }
}

/* cholesky_solve with F, then triangular_solve with F (a diagonal entry of
 * element 0 zeroed when the case says so). a: the matrices the library saw. */
static void fuzz_solves(gstat_ctx *ctx, const fcase *c, tu_rng *r, const tu_buf *F,
                        const double *a) {
  int64_t n = c->n, k = c->nrhs, nb = c->nb;
  double ulp = tf_ulp(c->dt);
  tu_buf B = tu_buf_new(c->dt, nb, n, k, c->lout), X = tu_buf_new(c->dt, nb, n, k, c->lin);
  double *b = malloc(sizeof(double) * (size_t)(nb * n * k + 1)),
         *x = malloc(sizeof(double) * (size_t)(n * k + 1));
  double *m = malloc(sizeof(double) * (size_t)(n * n + 1));
  tu_buf *out = c->in_place ? &B : &X;
  int64_t info[3] = {-1, -1, -1};
  tu_fill_normal(r, &B, b);
  FZ_CHECK(gstat_cholesky_solve(ctx, &F->m, c->uplo, &B.m, &out->m, info) == GSTAT_OK,
           "cholesky_solve: %s", gstat_ctx_last_error(ctx));
  check_buffers(out, "X");
  for (int64_t e = 0; e < nb; e++) {
    FZ_CHECK(info[e] == 0, "cholesky_solve info[%lld] = %lld", (long long)e, (long long)info[e]);
    tu_read(&out->m, e, x);
    RATIO_OK(c, "cholesky_solve",
             tu_solve_residual(n, k, a + e * n * n, false, x, b + e * n * k, ulp));
  }
  /* triangular_solve on a copy of F, in T's own layout */
  tu_buf T = tu_buf_new(c->dt, nb, n, n, c->lin);
  for (int64_t e = 0; e < nb; e++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++) tu_set(&T.m, e, i, j, tu_get(&F->m, e, i, j));
  if (c->zero_at >= 0) tu_set(&T.m, 0, c->zero_at, c->zero_at, 0);
  int singular = c->zero_at >= 0 && c->diag == GSTAT_NON_UNIT && k > 0;
  tu_fill_normal(r, &B, b);
  tu_poison(&X);
  gstat_status st =
      gstat_triangular_solve(ctx, &T.m, c->uplo, c->trans, c->diag, &B.m, &out->m, info);
  FZ_CHECK(st == (singular ? GSTAT_ESINGULAR : GSTAT_OK), "triangular_solve status %d: %s", (int)st,
           gstat_ctx_last_error(ctx));
  check_buffers(out, "X");
  for (int64_t e = 0; e < nb; e++) {
    tu_read(&out->m, e, x);
    if (singular && e == 0) {
      FZ_CHECK(info[0] == c->zero_at + 1, "info[0] = %lld, zero at %d", (long long)info[0],
               c->zero_at + 1);
      for (int64_t i = 0; i < n * k; i++) FZ_CHECK(isnan(x[i]), "singular element's X not NaN");
      continue;
    }
    FZ_CHECK(info[e] == 0, "triangular_solve info[%lld] = %lld", (long long)e, (long long)info[e]);
    triangle_of(c, &T.m, e, m);
    RATIO_OK(c, "triangular_solve",
             tu_solve_residual(n, k, m, c->trans == GSTAT_TRANS, x, b + e * n * k, ulp));
  }
  free(b);
  free(x);
  free(m);
  tu_buf_free(&B);
  tu_buf_free(&X);
  tu_buf_free(&T);
}

static void fuzz_cholesky(gstat_ctx *ctx, const fcase *c) {
  int64_t n = c->n, nb = c->nb;
  double ulp = tf_ulp(c->dt);
  tu_rng r = {c->seed};
  tu_buf A = tu_buf_new(c->dt, nb, n, n, c->lin), F = tu_buf_new(c->dt, nb, n, n, c->lout);
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n + 1)),
         *l = malloc(sizeof(double) * (size_t)(n * n + 1));
  for (int64_t b = 0; b < nb; b++) {
    make_matrix(&r, c, a + b * n * n);
    tu_store_matrix(&A, b, a + b * n * n);
  }
  tu_buf *out = c->in_place ? &A : &F;
  int64_t info[3] = {-1, -1, -1};
  int pd = definiteness(c);
  gstat_status st = gstat_cholesky(ctx, &A.m, c->uplo, &out->m, info);
  FZ_CHECK(st == GSTAT_OK || (st == GSTAT_ENOTPD && pd <= 0),
           "cholesky status %d (definiteness %d): %s", (int)st, pd, gstat_ctx_last_error(ctx));
  FZ_CHECK(pd >= 0 || st == GSTAT_ENOTPD, "an indefinite matrix was factored");
  check_buffers(out, "F");
  for (int64_t b = 0; b < nb; b++) {
    tu_read(&out->m, b, l);
    if (info[b] > 0) {
      FZ_CHECK(info[b] <= n, "info[%lld] = %lld > n", (long long)b, (long long)info[b]);
      for (int64_t i = 0; i < n * n; i++) FZ_CHECK(isnan(l[i]), "failed element's F not NaN");
      continue;
    }
    FZ_CHECK(info[b] == 0, "info[%lld] = %lld", (long long)b, (long long)info[b]);
    FZ_CHECK(tu_lower_factor(&out->m, b, c->uplo, l), "F[%lld]: opposite triangle not zero",
             (long long)b);
    /* a semidefinite matrix's factor is bounded (l_ij^2 <= a_ii): the residual
     * is small whenever the factorization went through */
    if (pd > 0 || semidefinite(c))
      RATIO_OK(c, "cholesky residual", tu_chol_residual(n, a + b * n * n, l, ulp));
  }
  if (st == GSTAT_OK && pd > 0) fuzz_solves(ctx, c, &r, out, a);
  free(a);
  free(l);
  tu_buf_free(&A);
  tu_buf_free(&F);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gstat_ctx *ctx = context();
  fz_input in = {data, size};
  fcase c;
  read_case(&in, &c);
  if (c.op == 0)
    fuzz_eigh(ctx, &c);
  else
    fuzz_cholesky(ctx, &c);
  return 0;
}
