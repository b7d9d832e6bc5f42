/*
 * The statistics matrix test, shared by test_fallback.c (the fake module,
 * whose "device memory" is host memory marked GSTAT_CUDA) and test_cuda.c
 * (the real module and cudaMalloc'd memory): every public statistic x
 * {host, device} data x {CPU, CUDA, AUTO} context x {f32, f64, bf16} agrees
 * with the CPU's result on host data, with outputs where the input lies.
 * Include it after testutil.h and cmocka.h.
 */
#ifndef GSTAT_TESTS_STATS_MATRIX_H
#define GSTAT_TESTS_STATS_MATRIX_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* How the including test makes "device memory". */
typedef struct sm_memory {
  void *(*alloc)(size_t bytes);
  void (*put)(void *dev, const void *host, size_t bytes);
  void (*get)(void *host, const void *dev, size_t bytes);
  void (*release)(void *dev);
} sm_memory;

/* The fake module's "device memory": host memory marked GSTAT_CUDA. */
static inline void *sm_fake_alloc(size_t bytes) {
  return malloc(bytes);
}
static inline void sm_fake_put(void *dev, const void *host, size_t bytes) {
  memcpy(dev, host, bytes);
}
static inline void sm_fake_get(void *host, const void *dev, size_t bytes) {
  memcpy(host, dev, bytes);
}
static inline const sm_memory *sm_fake_memory(void) {
  static const sm_memory m = {sm_fake_alloc, sm_fake_put, sm_fake_get, free};
  return &m;
}

/* A dense row-major batch of doubles, on the host or on the device in dtype dt. */
typedef struct sm_arg {
  gstat_matrix m;
  void *host; /* the values in dt, row-major */
  void *dev;  /* NULL: m describes host */
  size_t bytes;
} sm_arg;

static void sm_put_values(sm_arg *a, const double *v) {
  int64_t count = a->m.batch * a->m.rows * a->m.cols;
  for (int64_t e = 0; e < count; e++) {
    double x = tu_round(a->m.dtype, v[e]);
    if (a->m.dtype == GSTAT_F64)
      ((double *)a->host)[e] = x;
    else if (a->m.dtype == GSTAT_F32)
      ((float *)a->host)[e] = (float)x;
    else {
      float f = (float)x;
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      ((uint16_t *)a->host)[e] = (uint16_t)(u >> 16); /* exact: x is bf16 already */
    }
  }
}

static sm_arg sm_arg_new(const sm_memory *mem, bool device, gstat_dtype dt, int64_t batch,
                         int64_t rows, int64_t cols, const double *v) {
  sm_arg a;
  memset(&a, 0, sizeof a);
  a.bytes = (size_t)(batch * rows * cols) * gstat_dtype_size(dt);
  a.host = calloc(1, a.bytes ? a.bytes : 1);
  a.m = gstat_matrix_row_major(a.host, dt, batch, rows, cols);
  if (v) sm_put_values(&a, v);
  if (device) {
    a.dev = mem->alloc(a.bytes ? a.bytes : 1);
    mem->put(a.dev, a.host, a.bytes);
    a.m.data = a.dev;
    a.m.location = GSTAT_CUDA;
  }
  return a;
}

/* The values of a (from the device when it lies there) as doubles. */
static double *sm_values(const sm_memory *mem, sm_arg *a) {
  if (a->dev) mem->get(a->host, a->dev, a->bytes);
  gstat_matrix h = a->m;
  h.data = a->host;
  h.location = GSTAT_HOST;
  int64_t count = h.batch * h.rows * h.cols;
  double *v = malloc(sizeof(double) * (size_t)(count ? count : 1));
  for (int64_t b = 0; b < h.batch; b++)
    for (int64_t i = 0; i < h.rows; i++)
      for (int64_t j = 0; j < h.cols; j++) v[(b * h.rows + i) * h.cols + j] = tu_get(&h, b, i, j);
  return v;
}

static void sm_arg_free(const sm_memory *mem, sm_arg *a) {
  if (a->dev) mem->release(a->dev);
  free(a->host);
}

/* |x - y| <= tol (1 + |y|) everywhere, or both NaN. */
static void sm_close(const char *what, const double *x, const double *y, int64_t count,
                     double tol) {
  for (int64_t e = 0; e < count; e++)
    if (!(fabs(x[e] - y[e]) <= tol * (1 + fabs(y[e]))) && !(isnan(x[e]) && isnan(y[e]))) {
      print_error("%s: entry %lld is %.17g, the CPU's %.17g\n", what, (long long)e, x[e], y[e]);
      fail();
    }
}

enum { SM_NB = 2, SM_N = 240, SM_P = 9, SM_K = 3 };

/* Data with a large mean, distinct column spreads and correlation. */
static void sm_data(double *x) {
  tu_rng rng = tu_rng_new();
  for (int64_t b = 0; b < SM_NB; b++)
    for (int64_t i = 0; i < SM_N; i++)
      for (int64_t j = 0; j < SM_P; j++) {
        double *e = x + (b * SM_N + i) * SM_P + j;
        *e = 50.0 + (double)j + tu_normal(&rng) * (1.0 + 0.7 * (double)j);
        if (j > 0) *e += 0.3 * e[-1];
      }
}

/* One statistic, run on ctx with arguments in `where`, into doubles (out). */
typedef void (*sm_stat)(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                        const double *x, double **out, int64_t *count);

static void sm_check(gstat_ctx *ctx, gstat_status st) {
  if (st != GSTAT_OK) print_error("%s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
}

static void sm_covariance(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                          const double *x, double **out, int64_t *count) {
  double w[SM_N];
  for (int i = 0; i < SM_N; i++) w[i] = 1.0 + (double)(i % 3);
  sm_arg X = sm_arg_new(mem, device, dt, SM_NB, SM_N, SM_P, x);
  sm_arg C = sm_arg_new(mem, device, GSTAT_F64, 4 * SM_NB, SM_P, SM_P, NULL);
  sm_arg M = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_P, 1, NULL);
  gstat_cov_options o;
  for (int v = 0; v < 4; v++) { /* plain with the mean, correlation, weighted, COMPLETE */
    gstat_cov_options_init(&o);
    o.correlation = v == 1;
    if (v == 2) o.aweights = w;
    if (v == 3) o.missing = GSTAT_MISSING_COMPLETE;
    gstat_matrix Cv = C.m;
    Cv.data = (char *)C.m.data + (size_t)(v * SM_NB * SM_P * SM_P) * sizeof(double);
    Cv.batch = SM_NB;
    sm_check(ctx, gstat_covariance(ctx, &X.m, &o, &Cv, v == 0 ? &M.m : NULL));
  }
  double *c = sm_values(mem, &C), *m = sm_values(mem, &M);
  *count = 4 * SM_NB * SM_P * SM_P + SM_NB * SM_P;
  *out = realloc(c, sizeof(double) * (size_t)*count);
  memcpy(*out + 4 * SM_NB * SM_P * SM_P, m, sizeof(double) * SM_NB * SM_P);
  free(m);
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &C);
  sm_arg_free(mem, &M);
}

/* Covariance of data with NaN in every missing-value mode, weighted and
 * not: EVERYTHING (NaN columns), COMPLETE (R's complete.obs; na.or.complete
 * gives NaN without complete rows: the last element has none), PAIRWISE,
 * with correlation, analytic and frequency weights, moments about 0. */
enum { SM_MISS_VARIANTS = 8 };

/* x with NaN planted (xm: SM_NB x SM_N x SM_P) and the weights. */
static void sm_miss_data(const double *x, double *xm, double *fw, double *aw) {
  memcpy(xm, x, sizeof(double) * SM_NB * SM_N * SM_P);
  for (int64_t b = 0; b < SM_NB; b++)
    for (int64_t i = 0; i < SM_N; i++) {
      double *row = xm + (b * SM_N + i) * SM_P;
      if (i % 7 == 3) row[i % SM_P] = NAN;
      if (i % 11 == 5) row[0] = NAN;
      if (b == SM_NB - 1 && i % 2 == 1) row[SM_P - 1] = NAN; /* ... */
      if (b == SM_NB - 1 && i % 2 == 0) row[SM_P - 2] = NAN; /* no complete row */
    }
  for (int i = 0; i < SM_N; i++) {
    fw[i] = (double)(i % 4);
    aw[i] = 0.5 + (double)(i % 5) / 3.0;
  }
}

/* Variant v's options. */
static void sm_miss_options(int v, gstat_cov_options *o, double *fw, double *aw) {
  const gstat_missing modes[SM_MISS_VARIANTS] = {GSTAT_MISSING_EVERYTHING, GSTAT_MISSING_EVERYTHING,
                                                 GSTAT_MISSING_COMPLETE,   GSTAT_MISSING_COMPLETE,
                                                 GSTAT_MISSING_PAIRWISE,   GSTAT_MISSING_PAIRWISE,
                                                 GSTAT_MISSING_PAIRWISE,   GSTAT_MISSING_COMPLETE};
  gstat_cov_options_init(o);
  o->missing = modes[v];
  o->aweights = v == 1 || v == 5 || v == 6 || v == 7 ? aw : NULL;
  o->fweights = v == 3 || v == 5 ? fw : NULL;
  o->correlation = v == 3 || v == 5;
  o->ddof = v == 6 ? 0 : 1;
  o->assume_centered = v == 7;
}

static void sm_cov_missing(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                           const double *x, double **out, int64_t *count) {
  double *xm = malloc(sizeof(double) * SM_NB * SM_N * SM_P), fw[SM_N], aw[SM_N];
  sm_miss_data(x, xm, fw, aw);
  sm_arg X = sm_arg_new(mem, device, dt, SM_NB, SM_N, SM_P, xm);
  sm_arg C = sm_arg_new(mem, device, GSTAT_F64, SM_MISS_VARIANTS * SM_NB, SM_P, SM_P, NULL);
  sm_arg M = sm_arg_new(mem, device, GSTAT_F64, SM_MISS_VARIANTS * SM_NB, SM_P, 1, NULL);
  for (int v = 0; v < SM_MISS_VARIANTS; v++) {
    gstat_cov_options o;
    sm_miss_options(v, &o, fw, aw);
    gstat_matrix Cv = C.m, Mv = M.m; /* this variant's elements */
    Cv.data = (double *)C.m.data + v * SM_NB * SM_P * SM_P;
    Mv.data = (double *)M.m.data + v * SM_NB * SM_P;
    Cv.batch = Mv.batch = SM_NB;
    sm_check(ctx, gstat_covariance(ctx, &X.m, &o, &Cv, &Mv));
  }
  double *c = sm_values(mem, &C), *m = sm_values(mem, &M);
  int64_t nc = SM_MISS_VARIANTS * SM_NB * SM_P * SM_P, nm = SM_MISS_VARIANTS * SM_NB * SM_P;
  *count = nc + nm;
  *out = realloc(c, sizeof(double) * (size_t)*count);
  memcpy(*out + nc, m, sizeof(double) * (size_t)nm);
  free(m);
  free(xm);
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &C);
  sm_arg_free(mem, &M);
}

/* Ledoit-Wolf about the mean, then OAS about 0 (assume_centered): C, the
 * mean and the shrinkage of each. */
static void sm_shrinkage(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                         const double *x, double **out, int64_t *count) {
  enum { ONE = SM_NB * SM_P * SM_P + SM_NB * SM_P + SM_NB };
  sm_arg X = sm_arg_new(mem, device, dt, SM_NB, SM_N, SM_P, x);
  sm_arg C = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_P, SM_P, NULL);
  sm_arg M = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_P, 1, NULL);
  *count = 2 * ONE;
  *out = malloc(sizeof(double) * (size_t)*count);
  for (int v = 0; v < 2; v++) {
    double sh[SM_NB], *o = *out + v * ONE;
    sm_check(ctx, gstat_cov_shrink(ctx, &X.m, v ? GSTAT_SHRINK_OAS : GSTAT_SHRINK_LEDOIT_WOLF, v,
                                   &C.m, &M.m, sh));
    double *c = sm_values(mem, &C), *m = sm_values(mem, &M);
    memcpy(o, c, sizeof(double) * SM_NB * SM_P * SM_P);
    memcpy(o + SM_NB * SM_P * SM_P, m, sizeof(double) * SM_NB * SM_P);
    memcpy(o + SM_NB * SM_P * SM_P + SM_NB * SM_P, sh, sizeof sh);
    free(c);
    free(m);
  }
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &C);
  sm_arg_free(mem, &M);
}

static void sm_mahalanobis(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                           const double *x, double **out, int64_t *count) {
  double s[SM_NB * SM_P * SM_P], c[SM_NB * SM_P];
  for (int64_t b = 0; b < SM_NB; b++)
    for (int64_t i = 0; i < SM_P; i++) {
      c[b * SM_P + i] = 50.0 + (double)i;
      for (int64_t j = 0; j < SM_P; j++)
        s[(b * SM_P + i) * SM_P + j] =
            (i == j ? 4.0 + (double)i : 0.0) + 0.5 / (1.0 + (double)(i + j));
    }
  sm_arg X = sm_arg_new(mem, device, dt, SM_NB, SM_N, SM_P, x);
  sm_arg S = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_P, SM_P, s);
  sm_arg Z = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_P, 1, c);
  sm_arg D = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_N, 1, NULL);
  sm_check(ctx, gstat_mahalanobis(ctx, &X.m, &Z.m, &S.m, 0, &D.m));
  *out = sm_values(mem, &D);
  *count = SM_NB * SM_N;
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &S);
  sm_arg_free(mem, &Z);
  sm_arg_free(mem, &D);
}

/* Components, variances, scores, a transform and an inverse transform. */
static void sm_pca_method(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                          const double *x, gstat_pca_method method, double **out, int64_t *count) {
  sm_arg X = sm_arg_new(mem, device, dt, SM_NB, SM_N, SM_P, x);
  sm_arg Z = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_N, SM_K, NULL);
  sm_arg R = sm_arg_new(mem, device, GSTAT_F64, SM_NB, SM_N, SM_P, NULL);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.method = method;
  o.n_components = SM_K;
  o.whiten = method == GSTAT_PCA_GRAM_EIGH;
  o.scale = method != GSTAT_PCA_GRAM_EIGH;
  gstat_pca_result *r = NULL;
  sm_check(ctx, gstat_pca(ctx, &X.m, &o, &r));
  sm_check(ctx, gstat_pca_transform(ctx, r, &X.m, &Z.m));
  sm_check(ctx, gstat_pca_inverse_transform(ctx, r, &Z.m, &R.m));
  double *z = sm_values(mem, &Z), *rx = sm_values(mem, &R);
  int64_t nc = SM_NB * SM_K * SM_P, nv = SM_NB * SM_K, ns = SM_NB * SM_N * SM_K;
  int64_t nr = SM_NB * SM_N * SM_P;
  *count = nc + nv + 2 * ns + nr;
  double *v = malloc(sizeof(double) * (size_t)*count);
  memcpy(v, r->components, sizeof(double) * (size_t)nc);
  memcpy(v + nc, r->explained_variance, sizeof(double) * (size_t)nv);
  memcpy(v + nc + nv, r->scores, sizeof(double) * (size_t)ns);
  memcpy(v + nc + nv + ns, z, sizeof(double) * (size_t)ns);
  memcpy(v + nc + nv + 2 * ns, rx, sizeof(double) * (size_t)nr);
  *out = v;
  free(z);
  free(rx);
  gstat_pca_result_free(r);
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &Z);
  sm_arg_free(mem, &R);
}

static void sm_pca_cov(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                       const double *x, double **out, int64_t *count) {
  sm_pca_method(ctx, mem, device, dt, x, GSTAT_PCA_COVARIANCE_EIGH, out, count);
}
static void sm_pca_gram(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                        const double *x, double **out, int64_t *count) {
  sm_pca_method(ctx, mem, device, dt, x, GSTAT_PCA_GRAM_EIGH, out, count);
}
static void sm_pca_randomized(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                              const double *x, double **out, int64_t *count) {
  sm_pca_method(ctx, mem, device, dt, x, GSTAT_PCA_RANDOMIZED, out, count);
}

/* Rows added to an accumulator, its covariance and mean. */
static void sm_accumulator(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                           const double *x, double **out, int64_t *count) {
  sm_arg X = sm_arg_new(mem, device, dt, 1, SM_N, SM_P, x);
  sm_arg C = sm_arg_new(mem, device, GSTAT_F64, 1, SM_P, SM_P, NULL);
  sm_arg M = sm_arg_new(mem, device, GSTAT_F64, 1, SM_P, 1, NULL);
  gstat_cov_accum *acc = NULL;
  sm_check(ctx, gstat_cov_accum_create(ctx, SM_P, GSTAT_MISSING_EVERYTHING, &acc));
  sm_check(ctx, gstat_cov_accum_add(ctx, acc, &X.m, NULL));
  sm_check(ctx, gstat_cov_accum_covariance(ctx, acc, 1, 0, &C.m, &M.m));
  double *c = sm_values(mem, &C), *m = sm_values(mem, &M);
  *count = SM_P * SM_P + SM_P;
  *out = realloc(c, sizeof(double) * (size_t)*count);
  memcpy(*out + SM_P * SM_P, m, sizeof(double) * SM_P);
  free(m);
  gstat_cov_accum_destroy(acc);
  sm_arg_free(mem, &X);
  sm_arg_free(mem, &C);
  sm_arg_free(mem, &M);
}

/* The first element's neighbour lists (indices as doubles, then the
 * distances), with the point itself and without: exact on every backend. */
static void sm_knn(gstat_ctx *ctx, const sm_memory *mem, bool device, gstat_dtype dt,
                   const double *x, double **out, int64_t *count) {
  enum { K = 6 };
  sm_arg X = sm_arg_new(mem, device, dt, 1, SM_N, SM_P, x);
  int64_t idx[SM_N * K];
  double dist[SM_N * K];
  *count = 4 * SM_N * K;
  double *v = malloc(sizeof(double) * (size_t)*count);
  for (int self = 0; self <= 1; self++) {
    sm_check(ctx, gstat_knn(ctx, &X.m, K, self, idx, dist));
    for (int64_t e = 0; e < SM_N * K; e++) {
      v[(2 * self) * SM_N * K + e] = (double)idx[e];
      v[(2 * self + 1) * SM_N * K + e] = dist[e];
    }
  }
  *out = v;
  sm_arg_free(mem, &X);
}

static const struct {
  const char *name;
  sm_stat run;
} sm_stats[] = {
    {"covariance", sm_covariance},
    {"covariance missing", sm_cov_missing},
    {"shrinkage", sm_shrinkage},
    {"mahalanobis", sm_mahalanobis},
    {"pca covariance", sm_pca_cov},
    {"pca gram", sm_pca_gram},
    {"pca randomized", sm_pca_randomized},
    {"accumulator", sm_accumulator},
    {"knn", sm_knn},
};

/* The whole matrix; tol[d]: the relative tolerance for dtype d (f32, f64,
 * bf16) against the CPU on host data. */
static void sm_run_matrix(const sm_memory *mem, const double tol[3]) {
  const gstat_dtype dts[3] = {GSTAT_F32, GSTAT_F64, GSTAT_BF16};
  const gstat_backend backends[3] = {GSTAT_BACKEND_CPU, GSTAT_BACKEND_CUDA, GSTAT_BACKEND_AUTO};
  double *x = malloc(sizeof(double) * SM_NB * SM_N * SM_P);
  sm_data(x);
  gstat_ctx *ref = tu_ctx(GSTAT_BACKEND_CPU);
  for (size_t s = 0; s < sizeof sm_stats / sizeof sm_stats[0]; s++)
    for (int d = 0; d < 3; d++) {
      double *want = NULL;
      int64_t count = 0;
      sm_stats[s].run(ref, mem, false, dts[d], x, &want, &count);
      for (int where = 0; where < 2; where++)
        for (int be = 0; be < 3; be++) {
          gstat_ctx *ctx = tu_ctx(backends[be]);
          double *got = NULL;
          int64_t n = 0;
          sm_stats[s].run(ctx, mem, where == 1, dts[d], x, &got, &n);
          assert_int_equal(n, count);
          char what[128];
          snprintf(what, sizeof what, "%s, %s data, backend %d, dtype %d", sm_stats[s].name,
                   where ? "device" : "host", (int)backends[be], (int)dts[d]);
          /* GRAM and RANDOMIZED of device data centre and scale by GEMMs in
           * the data's precision, the host in double: in float that rounding,
           * through the sketch's power iterations, is divided by the random
           * data's gap after the third component, which some seeds make small */
          bool dense_pca = where == 1 && d != 1 &&
                           (!strcmp(sm_stats[s].name, "pca gram") ||
                            !strcmp(sm_stats[s].name, "pca randomized"));
          sm_close(what, got, want, n, dense_pca ? fmax(tol[d], 1e-3) : tol[d]);
          free(got);
          gstat_ctx_destroy(ctx);
        }
      free(want);
    }
  gstat_ctx_destroy(ref);
  free(x);
}

#endif /* GSTAT_TESTS_STATS_MATRIX_H */
