/* Test helpers: see testutil.h. */
#include "testutil.h"

#include "families.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#include <cblas.h>
#include <float.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { GUARD = 64, POISON = 0xA5 };

/* ---- random numbers ---- */

static uint64_t suite_seed(void) {
  static uint64_t seed;
  static bool have;
  if (!have) {
    const char *env = getenv("GSTAT_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
    fprintf(stderr, "# gstat tests: GSTAT_TEST_SEED=%llu\n", (unsigned long long)seed);
    have = true;
  }
  return seed;
}

tu_rng tu_rng_new(void) {
  static uint64_t counter;
  tu_rng r = {suite_seed() + 0x9e3779b97f4a7c15ull * ++counter};
  return r;
}

static uint64_t next(tu_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double tu_uniform(tu_rng *r) {
  return (double)(next(r) >> 11) * 0x1.0p-53;
}

double tu_normal(tu_rng *r) {
  double u = tu_uniform(r), v = tu_uniform(r);
  return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * M_PI * v);
}

/* ---- matrix families ---- */

const char *tu_family_name(tu_family f) {
  static const char *names[] = {"zero",      "identity", "even",          "geometric",
                                "clustered", "random",   "near-overflow", "near-underflow"};
  return f < TU_FAMILY_COUNT ? names[f] : "?";
}

void tu_orthogonal(tu_rng *r, int64_t n, double *q) {
  if (n == 0) return;
  double *tau = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n * n; i++) q[i] = tu_normal(r);
  LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (int)n, (int)n, q, (int)n, tau);
  LAPACKE_dorgqr(LAPACK_COL_MAJOR, (int)n, (int)n, (int)n, q, (int)n, tau);
  free(tau);
}

/* a = Q diag(d) Q^T, exactly symmetric. */
static void rotate(tu_rng *r, int64_t n, const double *d, double *a) {
  double *q = malloc(sizeof(double) * (size_t)(n * n + 1));
  double *qd = malloc(sizeof(double) * (size_t)(n * n + 1));
  tu_orthogonal(r, n, q);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) qd[i + j * n] = q[i + j * n] * d[j];
  if (n > 0)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n, 1.0, qd, (int)n, q,
                (int)n, 0.0, a, (int)n);
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = j + 1; i < n; i++) a[j + i * n] = a[i + j * n];
  free(q);
  free(qd);
}

void tu_planted(tu_rng *r, int64_t n, const double *d, double *a) {
  rotate(r, n, d, a);
}

void tu_grade(int64_t n, double range, double *a) {
  /* d_i from 1 down to 1/range, applied on both sides: D A D stays symmetric
   * and keeps A's inertia, so definiteness is still known */
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double di = pow(range, -(n > 1 ? (double)i / (double)(n - 1) : 0));
      double dj = pow(range, -(n > 1 ? (double)j / (double)(n - 1) : 0));
      a[i + j * n] = a[i + j * n] * di * dj;
    }
}

void tu_symmetric(tu_rng *r, tu_family f, int64_t n, double ulp, bool f32, double *a) {
  /* LAPACK's families are among the solver test families (families.h) */
  static const tf_kind kinds[TU_FAMILY_COUNT] = {
      TF_ZERO,   TF_IDENTITY, TF_DENSE_EVEN, TF_DENSE_GEOMETRIC, TF_DENSE_ULP_CLUSTER,
      TF_RANDOM, TF_RANDOM,   TF_RANDOM};
  static const tf_scale scales[TU_FAMILY_COUNT] = {
      [TU_NEAR_OVERFLOW] = TF_BIG, [TU_NEAR_UNDERFLOW] = TF_SMALL};
  double *d = malloc(sizeof(double) * (size_t)(n + 1));
  if (f < TU_FAMILY_COUNT)
    tf_generate_kind(r, kinds[f], scales[f], n, ulp, f32 ? GSTAT_F32 : GSTAT_F64, a, d);
  else
    memset(a, 0, sizeof(double) * (size_t)(n * n));
  free(d);
}

void tu_spd(tu_rng *r, int64_t n, double cond, double *a) {
  double *d = malloc(sizeof(double) * (size_t)(n + 1));
  for (int64_t i = 0; i < n; i++) d[i] = pow(cond, -(n > 1 ? (double)i / (double)(n - 1) : 0));
  rotate(r, n, d, a);
  free(d);
}

/* ---- guarded buffers ---- */

const char *tu_layout_name(tu_layout l) {
  static const char *names[] = {"row-major", "col-major", "strided"};
  return l < TU_LAYOUT_COUNT ? names[l] : "?";
}

tu_buf tu_buf_new(gstat_dtype dtype, int64_t batch, int64_t rows, int64_t cols, tu_layout layout) {
  tu_buf b;
  memset(&b, 0, sizeof b);
  gstat_matrix *m = &b.m;
  m->dtype = dtype;
  m->batch = batch;
  m->rows = rows;
  m->cols = cols;
  switch (layout) {
    case TU_ROW_MAJOR:
      m->row_stride = cols;
      m->col_stride = 1;
      m->batch_stride = rows * cols;
      break;
    case TU_COL_MAJOR:
      m->row_stride = 1;
      m->col_stride = rows;
      m->batch_stride = rows * cols;
      break;
    default: /* gaps everywhere, no unit stride */
      m->row_stride = 2;
      m->col_stride = 2 * rows + 1;
      m->batch_stride = m->col_stride * cols + 5;
      break;
  }
  size_t es = gstat_dtype_size(dtype);
  size_t span = (size_t)(batch * m->batch_stride + 8) * es;
  b.offset = GUARD;
  b.raw_bytes = span + 2 * GUARD;
  b.raw = aligned_alloc(64, (b.raw_bytes + 63) / 64 * 64);
  b.mask = calloc(b.raw_bytes, 1);
  memset(b.raw, POISON, b.raw_bytes);
  m->data = b.raw + b.offset;
  for (int64_t k = 0; k < batch; k++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        size_t at =
            b.offset + (size_t)(k * m->batch_stride + i * m->row_stride + j * m->col_stride) * es;
        memset(b.mask + at, 1, es);
      }
  return b;
}

void tu_buf_free(tu_buf *b) {
  free(b->raw);
  free(b->mask);
  memset(b, 0, sizeof *b);
}

static void *at(const gstat_matrix *m, int64_t b, int64_t i, int64_t j) {
  return (char *)m->data + (size_t)(b * m->batch_stride + i * m->row_stride + j * m->col_stride) *
                               gstat_dtype_size(m->dtype);
}

double tu_get(const gstat_matrix *m, int64_t b, int64_t i, int64_t j) {
  void *p = at(m, b, i, j);
  switch (m->dtype) {
    case GSTAT_F32: return *(float *)p;
    case GSTAT_F64: return *(double *)p;
    case GSTAT_BF16: return gstat_bf16_to_f32(*(uint16_t *)p);
  }
  return NAN;
}

void tu_set(gstat_matrix *m, int64_t b, int64_t i, int64_t j, double v) {
  void *p = at(m, b, i, j);
  switch (m->dtype) {
    case GSTAT_F32: *(float *)p = (float)v; break;
    case GSTAT_F64: *(double *)p = v; break;
    case GSTAT_BF16: *(uint16_t *)p = gstat_f32_to_bf16((float)v); break;
  }
}

double tu_round(gstat_dtype dtype, double v) {
  switch (dtype) {
    case GSTAT_F32: return (float)v;
    case GSTAT_BF16: return gstat_bf16_to_f32(gstat_f32_to_bf16((float)v));
    default: return v;
  }
}

void tu_store_matrix(tu_buf *buf, int64_t b, double *a) {
  int64_t n = buf->m.rows;
  for (int64_t j = 0; j < buf->m.cols; j++)
    for (int64_t i = 0; i < n; i++) {
      a[i + j * n] = tu_round(buf->m.dtype, a[i + j * n]);
      tu_set(&buf->m, b, i, j, a[i + j * n]);
    }
}

void tu_read(const gstat_matrix *m, int64_t b, double *out) {
  for (int64_t j = 0; j < m->cols; j++)
    for (int64_t i = 0; i < m->rows; i++) out[i + j * m->rows] = tu_get(m, b, i, j);
}

bool tu_lower_factor(const gstat_matrix *F, int64_t b, gstat_uplo uplo, double *l) {
  int64_t n = F->rows;
  bool clean = true;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double f = uplo == GSTAT_LOWER ? tu_get(F, b, i, j) : tu_get(F, b, j, i);
      if (i < j) clean &= f == 0;
      l[i + j * n] = i >= j ? f : 0;
    }
  return clean;
}

void tu_fill_normal(tu_rng *r, tu_buf *B, double *b) {
  int64_t size = B->m.rows * B->m.cols;
  for (int64_t e = 0; e < B->m.batch; e++) {
    for (int64_t i = 0; i < size; i++) b[e * size + i] = tu_normal(r);
    tu_store_matrix(B, e, b + e * size);
  }
}

void tu_poison(tu_buf *b) {
  for (size_t k = 0; k < b->raw_bytes; k++)
    if (b->mask[k]) b->raw[k] = POISON;
}

bool tu_outside_untouched(const tu_buf *b) {
  for (size_t k = 0; k < b->raw_bytes; k++)
    if (!b->mask[k] && b->raw[k] != POISON) return false;
  return true;
}

bool tu_untouched(const tu_buf *b) {
  for (size_t k = 0; k < b->raw_bytes; k++)
    if (b->raw[k] != POISON) return false;
  return true;
}

bool tu_all_written(const tu_buf *b) {
  const gstat_matrix *m = &b->m;
  size_t es = gstat_dtype_size(m->dtype);
  for (int64_t k = 0; k < m->batch; k++)
    for (int64_t i = 0; i < m->rows; i++)
      for (int64_t j = 0; j < m->cols; j++) {
        const unsigned char *p = at(m, k, i, j);
        bool changed = false;
        for (size_t e = 0; e < es; e++) changed |= p[e] != POISON;
        if (!changed) return false;
      }
  return true;
}

/* ---- ratios ---- */

double tu_norm1(int64_t rows, int64_t cols, const double *a) {
  double best = 0;
  for (int64_t j = 0; j < cols; j++) {
    double s = 0;
    for (int64_t i = 0; i < rows; i++) s += fabs(a[i + j * rows]);
    if (s > best) best = s;
  }
  return best;
}

static double ratio(double num, double den) {
  if (num == 0) return 0;
  if (den == 0) return INFINITY;
  return num / den;
}

double tu_eig_residual(int64_t n, const double *a, const double *w, const double *v, double ulp) {
  if (n == 0) return 0;
  double *vw = calloc((size_t)(n * n), sizeof(double));
  double *r = malloc(sizeof(double) * (size_t)(n * n));
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) vw[i + j * n] = v[i + j * n] * w[j];
  memcpy(r, a, sizeof(double) * (size_t)(n * n));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n, -1.0, vw, (int)n, v,
              (int)n, 1.0, r, (int)n);
  /* scale before the norm so that near-overflow inputs stay finite */
  double anorm = tu_norm1(n, n, a), res = tu_norm1(n, n, r);
  free(vw);
  free(r);
  return ratio(res, fmax(anorm, DBL_MIN) * (double)n * ulp);
}

double tu_orthogonality(int64_t n, const double *v, double ulp) {
  if (n == 0) return 0;
  double *r = malloc(sizeof(double) * (size_t)(n * n));
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) r[i + j * n] = i == j;
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, (int)n, (int)n, (int)n, -1.0, v, (int)n, v,
              (int)n, 1.0, r, (int)n);
  double res = tu_norm1(n, n, r);
  free(r);
  return ratio(res, (double)n * ulp);
}

double tu_chol_residual(int64_t n, const double *a, const double *l, double ulp) {
  if (n == 0) return 0;
  double *r = malloc(sizeof(double) * (size_t)(n * n));
  memcpy(r, a, sizeof(double) * (size_t)(n * n));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)n, (int)n, (int)n, -1.0, l, (int)n, l,
              (int)n, 1.0, r, (int)n);
  double res = tu_norm1(n, n, r), anorm = tu_norm1(n, n, a);
  free(r);
  return ratio(res, anorm * (double)n * ulp);
}

double tu_solve_residual(int64_t n, int64_t nrhs, const double *m, bool trans, const double *x,
                         const double *b, double ulp) {
  if (n == 0 || nrhs == 0) return 0;
  double *r = malloc(sizeof(double) * (size_t)(n * nrhs));
  memcpy(r, b, sizeof(double) * (size_t)(n * nrhs));
  cblas_dgemm(CblasColMajor, trans ? CblasTrans : CblasNoTrans, CblasNoTrans, (int)n, (int)nrhs,
              (int)n, -1.0, m, (int)n, x, (int)n, 1.0, r, (int)n);
  double res = tu_norm1(n, nrhs, r), den = tu_norm1(n, n, m) * tu_norm1(n, nrhs, x);
  free(r);
  return ratio(res, den * (double)n * ulp);
}

bool tu_quick(void) {
  const char *q = getenv("GSTAT_TEST_QUICK");
  return q && *q && *q != '0';
}

bool tu_failed_as(gstat_ctx *ctx, gstat_status got, gstat_status want, const char *msg) {
  bool ok = got == want && strcmp(gstat_ctx_last_error(ctx), msg) == 0;
  if (!ok)
    fprintf(stderr, "got %d \"%s\"\nwant %d \"%s\"\n", (int)got, gstat_ctx_last_error(ctx),
            (int)want, msg);
  return ok;
}

gstat_ctx *tu_ctx(gstat_backend backend) {
  return tu_ctx_progress(backend, 0, NULL, NULL);
}

gstat_ctx *tu_ctx_progress(gstat_backend backend, int threads, gstat_progress_fn fn, void *user) {
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = backend;
  opt.num_threads = threads;
  opt.progress = fn;
  opt.progress_user = user;
  gstat_ctx *ctx = NULL;
  return gstat_ctx_create(&ctx, &opt) == GSTAT_OK ? ctx : NULL;
}

static void *counting_alloc(size_t size, size_t align, void *user) {
  tu_alloc_counter *c = user;
  if (align < 16 || (align & (align - 1)) != 0) c->bad_alignment++;
  c->allocs++;
  c->live += size;
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void counting_free(void *p, size_t size, void *user) {
  tu_alloc_counter *c = user;
  c->frees++;
  c->live -= size;
  free(p);
}

gstat_allocator tu_counting_allocator(tu_alloc_counter *c) {
  gstat_allocator a = {counting_alloc, counting_free, c};
  return a;
}
