/*
 * Times gstat's PCA methods and gstat_covariance on one n x p dataset:
 *
 *   bench_pca [--dtype f32|f64] [--reps R] [--methods LIST] [--in FILE]
 *             [--ev-out DIR] [--scores] [--seed S] N P K
 *
 *   LIST     comma-separated, from cov, gram, randomized, auto, covariance,
 *            wcovariance (analytic weights), complete and pairwise (missing
 *            modes, one NaN in every 97th row) (default
 *            cov,gram,randomized,covariance)
 *   FILE     raw row-major N*P elements of the dtype; random data if absent
 *   DIR      where to write ev_<method>.raw: the K explained variances as
 *            float64 (for accuracy checks by the driving script)
 *   --scores also compute the scores (off: a fit, like sklearn's PCA.fit)
 *
 * Each method runs once untimed (workspace, result allocation) and then REPS
 * times (default 3) on the same context and result; one line per method:
 *   method=<m> best_ms=<best of REPS, wall clock> first_ms=<first call> ran=<method that ran>
 * bench/pca_vs_sklearn.py and bench/pca_vs_r.R drive it.
 */
#define _POSIX_C_SOURCE 199309L
#include <gstat/gstat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double normal(uint64_t *s) {
  double u = (double)(splitmix(s) >> 11) * 0x1.0p-53, v = (double)(splitmix(s) >> 11) * 0x1.0p-53;
  return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

/* Low rank plus noise, X = (L diag(0.8^i)) R + 0.05 noise with rank 50: a
 * decaying spectrum, so the top components are well separated (as in real
 * data, and as randomized PCA needs) rather than a flat Gaussian one. */
static void make_data(double *x, int64_t n, int64_t p, uint64_t seed) {
  enum { RANK = 50 };
  double *r = malloc(sizeof(double) * RANK * (size_t)p);
  double l[RANK];
  for (int64_t i = 0; i < RANK * p; i++) r[i] = normal(&seed) / sqrt((double)p);
  for (int64_t i = 0; i < n; i++) {
    for (int t = 0; t < RANK; t++) l[t] = normal(&seed) * pow(0.8, t) * sqrt((double)p);
    for (int64_t j = 0; j < p; j++) {
      double v = 0.05 * normal(&seed);
      for (int t = 0; t < RANK; t++) v += l[t] * r[t * p + j];
      x[i * p + j] = v;
    }
  }
  free(r);
}

static int method_of(const char *s, gstat_pca_method *m) {
  if (!strcmp(s, "cov"))
    *m = GSTAT_PCA_COVARIANCE_EIGH;
  else if (!strcmp(s, "gram"))
    *m = GSTAT_PCA_GRAM_EIGH;
  else if (!strcmp(s, "randomized"))
    *m = GSTAT_PCA_RANDOMIZED;
  else if (!strcmp(s, "auto"))
    *m = GSTAT_PCA_AUTO;
  else
    return 0;
  return 1;
}

static const char *method_name(gstat_pca_method m) {
  switch (m) {
    case GSTAT_PCA_COVARIANCE_EIGH: return "cov";
    case GSTAT_PCA_GRAM_EIGH: return "gram";
    case GSTAT_PCA_RANDOMIZED: return "randomized";
    default: return "auto";
  }
}

static int usage(const char *argv0) {
  fprintf(
      stderr,
      "usage: %s [--dtype f32|f64] [--reps R]\n"
      "          [--methods cov,gram,randomized,auto,covariance,wcovariance,complete,pairwise]\n"
      "          [--in FILE] [--ev-out DIR] [--scores] [--seed S] N P K\n",
      argv0);
  return 2;
}

/* The covariance variants' options (analytic weights w; NaN planted into
 * the data for the missing modes); 0 for a PCA method. */
static int cov_variant(const char *name, gstat_cov_options *co, double *w, int64_t n) {
  gstat_cov_options_init(co);
  if (!strcmp(name, "covariance")) return 1;
  if (!strcmp(name, "wcovariance")) {
    for (int64_t i = 0; i < n; i++) w[i] = 0.5 + (double)(i % 7) / 4.0;
    co->aweights = w;
    return 1;
  }
  co->missing = !strcmp(name, "complete") ? GSTAT_MISSING_COMPLETE : GSTAT_MISSING_PAIRWISE;
  return !strcmp(name, "complete") || !strcmp(name, "pairwise") ? 2 : 0;
}

/* Time one method; 0 on success. */
static int run_method(gstat_ctx *ctx, const char *name, const gstat_matrix *X, int64_t k, int reps,
                      int scores, const char *ev_dir) {
  int64_t n = X->rows, p = X->cols;
  gstat_pca_method m = GSTAT_PCA_AUTO;
  gstat_cov_options co;
  double *w = malloc(sizeof(double) * (size_t)n);
  int is_cov = cov_variant(name, &co, w, n);
  gstat_matrix Xv = *X;
  void *nan_copy = NULL;
  if (is_cov == 2) { /* a copy with one NaN in every 97th row */
    size_t es = gstat_dtype_size(X->dtype), bytes = (size_t)(n * p) * es;
    nan_copy = malloc(bytes);
    memcpy(nan_copy, X->data, bytes);
    for (int64_t i = 0; i < n; i += 97) {
      char *e = (char *)nan_copy + (size_t)(i * p + i % p) * es;
      if (X->dtype == GSTAT_F64)
        *(double *)e = NAN;
      else
        *(float *)e = NAN;
    }
    Xv.data = nan_copy;
  }
  if (!is_cov && !method_of(name, &m)) {
    fprintf(stderr, "unknown method %s\n", name);
    return 2;
  }
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.method = m;
  o.n_components = k;
  o.compute_scores = scores;
  gstat_pca_result *res = NULL;
  void *c = is_cov ? malloc(gstat_dtype_size(X->dtype) * (size_t)(p * p)) : NULL;
  gstat_matrix C = gstat_matrix_row_major(c, X->dtype, 1, p, p);
  if (is_cov && !c) return 1;
  double best = INFINITY, first = 0;
  for (int r = 0; r <= reps; r++) {
    double t0 = now_ms();
    gstat_status st =
        is_cov ? gstat_covariance(ctx, &Xv, &co, &C, NULL) : gstat_pca(ctx, X, &o, &res);
    double t = now_ms() - t0;
    if (st != GSTAT_OK) {
      fprintf(stderr, "%s: %s\n", name, gstat_ctx_last_error(ctx));
      free(c);
      free(w);
      free(nan_copy);
      gstat_pca_result_free(res);
      return 1;
    }
    if (r == 0)
      first = t;
    else if (t < best)
      best = t;
  }
  if (reps == 0) best = first;
  printf("method=%s best_ms=%.4f first_ms=%.4f ran=%s\n", name, best, first,
         is_cov ? name : method_name(res->method));
  if (is_cov) { /* a checksum, to compare builds */
    double sum = 0;
    for (int64_t e = 0; e < p * p; e++)
      sum += X->dtype == GSTAT_F64 ? ((double *)c)[e] : (double)((float *)c)[e];
    printf("method=%s checksum=%.17g\n", name, sum);
  }
  if (ev_dir && !is_cov) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ev_%s.raw", ev_dir, name);
    FILE *f = fopen(path, "wb");
    size_t kk = (size_t)res->n_components;
    if (!f || fwrite(res->explained_variance, sizeof(double), kk, f) != kk) {
      fprintf(stderr, "cannot write %s\n", path);
      if (f) fclose(f);
      gstat_pca_result_free(res);
      return 1;
    }
    fclose(f);
  }
  free(c);
  free(w);
  free(nan_copy);
  gstat_pca_result_free(res);
  return 0;
}

int main(int argc, char **argv) {
  gstat_dtype dt = GSTAT_F64;
  int reps = 3, scores = 0;
  const char *methods = "cov,gram,randomized,covariance", *in = NULL, *ev_dir = NULL;
  uint64_t seed = 2026;
  int argi = 1;
  for (; argi < argc && !strncmp(argv[argi], "--", 2); argi++) {
    const char *a = argv[argi];
    int has_value = argi + 1 < argc;
    if (!strcmp(a, "--scores"))
      scores = 1;
    else if (!strcmp(a, "--dtype") && has_value) {
      const char *v = argv[++argi];
      if (!strcmp(v, "f32"))
        dt = GSTAT_F32;
      else if (!strcmp(v, "f64"))
        dt = GSTAT_F64;
      else
        return usage(argv[0]);
    } else if (!strcmp(a, "--reps") && has_value)
      reps = atoi(argv[++argi]);
    else if (!strcmp(a, "--methods") && has_value)
      methods = argv[++argi];
    else if (!strcmp(a, "--in") && has_value)
      in = argv[++argi];
    else if (!strcmp(a, "--ev-out") && has_value)
      ev_dir = argv[++argi];
    else if (!strcmp(a, "--seed") && has_value)
      seed = strtoull(argv[++argi], NULL, 10);
    else
      return usage(argv[0]);
  }
  if (argc - argi != 3 || reps < 0) return usage(argv[0]);
  int64_t n = atoll(argv[argi]), p = atoll(argv[argi + 1]), k = atoll(argv[argi + 2]);
  if (n < 1 || p < 1 || k < 0) return usage(argv[0]);

  size_t count = (size_t)n * (size_t)p, es = gstat_dtype_size(dt);
  void *x = malloc(count * es);
  if (!x) return 1;
  if (in) {
    FILE *f = fopen(in, "rb");
    if (!f || fread(x, es, count, f) != count) {
      fprintf(stderr, "cannot read %zu elements from %s\n", count, in);
      return 1;
    }
    fclose(f);
  } else {
    double *d = dt == GSTAT_F64 ? x : malloc(count * sizeof(double));
    if (!d) return 1;
    make_data(d, n, p, seed);
    if (dt == GSTAT_F32) {
      for (size_t i = 0; i < count; i++) ((float *)x)[i] = (float)d[i];
      free(d);
    }
  }
  gstat_ctx *ctx;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return 1;
  gstat_matrix X = gstat_matrix_row_major(x, dt, 1, n, p);
  int rc = 0;
  char *list = malloc(strlen(methods) + 1);
  strcpy(list, methods);
  for (char *tok = strtok(list, ","); tok && !rc; tok = strtok(NULL, ","))
    rc = run_method(ctx, tok, &X, k, reps, scores, ev_dir);
  free(list);
  gstat_ctx_destroy(ctx);
  free(x);
  return rc;
}
