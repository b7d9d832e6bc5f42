/*
 * gstat_eigh, gstat_cholesky and the solves over every test family
 * (families.h), single-family and mixed batches, every dtype and layout,
 * both triangles. Checked by LAPACK's ratios (threshold 60): eigh residual
 * ||A - V W V^T|| / (||A|| n ulp), orthogonality ||I - V^T V|| / (n ulp),
 * values-only against values-with-vectors and against the planted spectrum
 * (in n ulp max|w|), ascending order; Cholesky ||A - L L^T|| / (||A|| n ulp)
 * where it succeeds, success where the family is surely positive definite,
 * GSTAT_ENOTPD with info in 1..n and NaN where it surely is not; solve
 * residuals ||B - op(M) X|| / (||M|| ||X|| n ulp).
 *
 * `test_families` runs on the CPU (GSTAT_TEST_QUICK=1: small orders only,
 * for valgrind). `test_families cuda` runs the same on a CUDA context with
 * host arrays and orders up to 1024 (exit 77 when there is no usable GPU),
 * and prints a line per family: its worst ratios, the time of its largest
 * eigh and the CUDA path each order took; GSTAT_FAMILIES_LONG=1 adds the
 * 640 x 512 mixed batch.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "families.h"

static const double max_ratio = 60;

static gstat_ctx *ctx;
static bool on_cuda;
static int failures;

enum { MAX_ROWS = 32, MAX_PATHS = 8 };

/* The worst of one family (or the mixed batches, row tf_nfamilies) in one dtype. */
typedef struct {
  double res, orth, values, spectrum, chol, solve;
  int64_t n_timed, nb_timed;
  double ms;  /* eigh with vectors at the largest order (CUDA: a repeated call) */
  int npaths; /* CUDA: the paths of the orders, in runs of equal ones */
  int64_t path_from[MAX_PATHS], path_to[MAX_PATHS];
  char path[MAX_PATHS][64];
} worst;
static worst table[MAX_ROWS];

typedef struct {
  gstat_dtype dt;
  int64_t n, nb;
  int family; /* index into tf_families, or -1: mixed (each element its own) */
  gstat_uplo uplo;
  tu_layout lin, lout;
} fcase;

/* The matrices of a case (what the library sees, after rounding) and what
 * is known of each. */
typedef struct {
  double *a, *d;
  tf_info *info;
  int *fam;
} batch;

static const char *dtype_name(gstat_dtype dt) {
  return dt == GSTAT_F64 ? "f64" : dt == GSTAT_F32 ? "f32" : "bf16";
}

static int row_of(const fcase *c) {
  return c->family >= 0 ? c->family : tf_nfamilies;
}

static void report_failure(const fcase *c, int64_t b, const batch *m, const char *what, double v) {
  if (++failures > 20) return; /* the count is printed with the table */
  fprintf(
      stderr, "FAIL %s %.3g: %s n=%lld batch=%lld element %lld family %s uplo %d layouts %s/%s\n",
      what, v, dtype_name(c->dt), (long long)c->n, (long long)c->nb, (long long)b,
      tf_families[m->fam[b]].name, (int)c->uplo, tu_layout_name(c->lin), tu_layout_name(c->lout));
}

static void ratio_ok(const fcase *c, int64_t b, const batch *m, const char *what, double v,
                     double *worst_v) {
  if (!(v <= max_ratio)) report_failure(c, b, m, what, v);
  if (!(v <= *worst_v)) *worst_v = v; /* NaN sticks */
}

static batch make_batch(const fcase *c, tu_rng *r) {
  int64_t n = c->n, nb = c->nb;
  batch m = {malloc(sizeof(double) * (size_t)(nb * n * n + 1)),
             malloc(sizeof(double) * (size_t)(nb * n + 1)),
             malloc(sizeof(tf_info) * (size_t)(nb + 1)), malloc(sizeof(int) * (size_t)(nb + 1))};
  int order[MAX_ROWS] = {0};
  for (int64_t b = 0; b < nb; b++) {
    int k = (int)(b % tf_nfamilies);
    if (k == 0) /* a fresh random order of the families for each round */
      for (int i = 0; i < tf_nfamilies; i++) {
        int j = (int)(tu_uniform(r) * (i + 1));
        order[i] = order[j];
        order[j] = i;
      }
    m.fam[b] = c->family >= 0 ? c->family : order[k];
    m.info[b] = tf_generate(r, &tf_families[m.fam[b]], n, c->dt, m.a + b * n * n, m.d + b * n);
  }
  return m;
}

static void free_batch(batch *m) {
  free(m->a);
  free(m->d);
  free(m->info);
  free(m->fam);
}

/* A buffer holding the batch (rounded to its dtype, a updated to match),
 * NaN in the triangle that is not read. */
static tu_buf input_of(const fcase *c, batch *m) {
  int64_t n = c->n;
  tu_buf A = tu_buf_new(c->dt, c->nb, n, n, c->lin);
  for (int64_t b = 0; b < c->nb; b++) {
    tu_store_matrix(&A, b, m->a + b * n * n);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        if ((c->uplo == GSTAT_LOWER && i < j) || (c->uplo == GSTAT_UPPER && i > j))
          tu_set(&A.m, b, i, j, NAN);
  }
  return A;
}

static int compare_doubles(const void *x, const void *y) {
  double p = *(const double *)x, q = *(const double *)y;
  return (p > q) - (p < q);
}

/* max |w - sorted d| in units of n ulp max|d|: the rounding to the dtype
 * moves the spectrum by up to sqrt(n) ulp max|d|, well inside. */
static double spectrum_ratio(int64_t n, const double *w, const double *d, double ulp) {
  double *s = malloc(sizeof(double) * (size_t)(n + 1)), top = 0, err = 0;
  memcpy(s, d, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), compare_doubles);
  for (int64_t i = 0; i < n; i++) top = fmax(top, fabs(s[i])), err = fmax(err, fabs(w[i] - s[i]));
  free(s);
  return err == 0 ? 0 : err / (fmax(top, DBL_MIN) * (double)n * ulp);
}

static bool ascending(int64_t n, const double *w) {
  for (int64_t i = 1; i < n; i++)
    if (!(w[i - 1] <= w[i])) return false;
  return true;
}

/* Element b's ratios from the two eigh calls (W, V: with vectors; W2 values only). */
static void check_element(const fcase *c, const batch *m, int64_t b, const tu_buf *W,
                          const tu_buf *W2, const tu_buf *V, worst *t) {
  int64_t n = c->n;
  double ulp = tf_ulp(c->dt), top = 0, diff = 0;
  double *w = malloc(sizeof(double) * (size_t)(n + 1)),
         *w2 = malloc(sizeof(double) * (size_t)(n + 1));
  double *v = malloc(sizeof(double) * (size_t)(n * n + 1));
  tu_read(&W->m, b, w);
  tu_read(&W2->m, b, w2);
  tu_read(&V->m, b, v);
  if (!ascending(n, w) || !ascending(n, w2))
    report_failure(c, b, m, "eigenvalues not ascending", 0);
  ratio_ok(c, b, m, "eigh residual", tu_eig_residual(n, m->a + b * n * n, w, v, ulp), &t->res);
  ratio_ok(c, b, m, "eigh orthogonality", tu_orthogonality(n, v, ulp), &t->orth);
  for (int64_t i = 0; i < n; i++)
    top = fmax(top, fabs(w[i])), diff = fmax(diff, fabs(w[i] - w2[i]));
  ratio_ok(c, b, m, "values only vs with vectors",
           diff == 0 ? 0 : diff / (fmax(top, DBL_MIN) * (double)n * ulp), &t->values);
  if (m->info[b].spectrum_known)
    ratio_ok(c, b, m, "planted spectrum", spectrum_ratio(n, w, m->d + b * n, ulp), &t->spectrum);
  free(w);
  free(w2);
  free(v);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The CUDA path of the last call, from the backend name and the counters
 * that moved (gstat_device_stats): own-tridiag (the lockstep or two-stage
 * solvers), clustered (their cluster step served some matrices),
 * handed-back (some or all of a chunk re-solved by cuSOLVER), graph (cuSOLVER's
 * batched solver replayed), pipeline (host arrays in pieces). */
static void path_of(const gstat_device_stats *before, char *out, size_t len) {
  gstat_device_stats s;
  gstat_ctx_device_stats(ctx, &s, sizeof s);
  snprintf(out, len, "%s%s%s%s%s%s", gstat_ctx_last_backend_name(ctx),
           s.own_tridiag_chunks > before->own_tridiag_chunks ? "/own-tridiag" : "",
           s.own_tridiag_clustered > before->own_tridiag_clustered ? "/clustered" : "",
           s.own_tridiag_degenerate > before->own_tridiag_degenerate ? "/handed-back" : "",
           s.graph_launches > before->graph_launches ? "/graph" : "",
           s.pipeline_pieces > before->pipeline_pieces ? "/pipeline" : "");
}

/* Orders grouped by the path they took: "1-100:cuda 257-1024:cuda/own-tridiag". */
static void note_path(worst *t, int64_t n, const char *path) {
  if (t->npaths > 0 && strcmp(t->path[t->npaths - 1], path) == 0) {
    t->path_to[t->npaths - 1] = n;
  } else if (t->npaths < MAX_PATHS) {
    t->path_from[t->npaths] = t->path_to[t->npaths] = n;
    snprintf(t->path[t->npaths++], sizeof t->path[0], "%s", path);
  }
}

/* eigh with vectors and values only; every element's ratios. */
static void run_eigh(const fcase *c, batch *m) {
  int64_t n = c->n, nb = c->nb;
  worst *t = &table[row_of(c)];
  tu_buf A = input_of(c, m);
  tu_buf W = tu_buf_new(c->dt, nb, n, 1, c->lout), W2 = tu_buf_new(c->dt, nb, n, 1, c->lin);
  tu_buf V = tu_buf_new(c->dt, nb, n, n, c->lout);
  int64_t *info = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  gstat_device_stats before;
  gstat_ctx_device_stats(ctx, &before, sizeof before);
  double t0 = now_ms();
  gstat_status st = gstat_eigh(ctx, &A.m, c->uplo, &W.m, &V.m, info);
  double ms = now_ms() - t0;
  char path[64];
  path_of(&before, path, sizeof path);
  if (on_cuda) { /* the first call of a shape allocates and captures: time a second */
    t0 = now_ms();
    if (st == GSTAT_OK) st = gstat_eigh(ctx, &A.m, c->uplo, &W.m, &V.m, info);
    ms = now_ms() - t0;
    note_path(t, n, path);
  }
  if (n > t->n_timed || (n == t->n_timed && nb >= t->nb_timed))
    t->n_timed = n, t->nb_timed = nb, t->ms = ms;
  gstat_status st2 = gstat_eigh(ctx, &A.m, c->uplo, &W2.m, NULL, NULL);
  if (st != GSTAT_OK || st2 != GSTAT_OK) {
    fprintf(stderr, "eigh: %s\n", gstat_ctx_last_error(ctx));
    report_failure(c, 0, m, "eigh status", (double)(st != GSTAT_OK ? st : st2));
  } else {
    if (!tu_outside_untouched(&W) || !tu_outside_untouched(&W2) || !tu_outside_untouched(&V))
      report_failure(c, 0, m, "eigh wrote outside its outputs", 0);
    for (int64_t b = 0; b < nb; b++) {
      if (info[b] != 0) report_failure(c, b, m, "eigh info", (double)info[b]);
      check_element(c, m, b, &W, &W2, &V, t);
    }
  }
  free(info);
  tu_buf_free(&A);
  tu_buf_free(&W);
  tu_buf_free(&W2);
  tu_buf_free(&V);
}

/* cholesky_solve with the factors F of every element, then
 * triangular_solve with them. */
static void run_solves(const fcase *c, const batch *m, const tu_buf *F, tu_rng *r) {
  int64_t n = c->n, nb = c->nb, k = 3;
  double ulp = tf_ulp(c->dt);
  worst *t = &table[row_of(c)];
  tu_buf B = tu_buf_new(c->dt, nb, n, k, c->lout), X = tu_buf_new(c->dt, nb, n, k, c->lin);
  double *rhs = malloc(sizeof(double) * (size_t)(nb * n * k + 1));
  double *x = malloc(sizeof(double) * (size_t)(n * k + 1)),
         *f = malloc(sizeof(double) * (size_t)(n * n + 1));
  int64_t *info = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  tu_fill_normal(r, &B, rhs);
  if (gstat_cholesky_solve(ctx, &F->m, c->uplo, &B.m, &X.m, info) != GSTAT_OK)
    report_failure(c, 0, m, "cholesky_solve status", 0);
  else
    for (int64_t e = 0; e < nb; e++) {
      tu_read(&X.m, e, x);
      ratio_ok(c, e, m, "cholesky_solve residual",
               tu_solve_residual(n, k, m->a + e * n * n, false, x, rhs + e * n * k, ulp),
               &t->solve);
    }
  gstat_trans trans = (gstat_trans)((c->lin + c->uplo) % 2);
  if (gstat_triangular_solve(ctx, &F->m, c->uplo, trans, GSTAT_NON_UNIT, &B.m, &X.m, info) !=
      GSTAT_OK)
    report_failure(c, 0, m, "triangular_solve status", 0);
  else
    for (int64_t e = 0; e < nb; e++) {
      tu_read(&X.m, e, x);
      tu_read(&F->m, e, f); /* the factor's triangle, zeros elsewhere */
      ratio_ok(c, e, m, "triangular_solve residual",
               tu_solve_residual(n, k, f, trans == GSTAT_TRANS, x, rhs + e * n * k, ulp),
               &t->solve);
    }
  free(rhs);
  free(x);
  free(f);
  free(info);
  tu_buf_free(&B);
  tu_buf_free(&X);
}

/* Element b of a Cholesky call: failed (NaN factor) only where the family
 * allows it, else the factor's residual. */
static void check_factor(const fcase *c, const batch *m, int64_t b, const tu_buf *F, int64_t info,
                         double *l) {
  int64_t n = c->n;
  int definite = m->info[b].definite;
  if (info < 0 || info > n) report_failure(c, b, m, "cholesky info out of range", (double)info);
  if (info > 0) {
    if (definite == 1)
      report_failure(c, b, m, "positive definite, yet cholesky info", (double)info);
    tu_read(&F->m, b, l);
    for (int64_t i = 0; i < n * n; i++)
      if (!isnan(l[i])) {
        report_failure(c, b, m, "failed element's factor not NaN", l[i]);
        break;
      }
    return;
  }
  if (definite == -1) report_failure(c, b, m, "not positive definite, yet factored", 0);
  if (!tu_lower_factor(&F->m, b, c->uplo, l))
    report_failure(c, b, m, "opposite triangle not zero", 0);
  ratio_ok(c, b, m, "cholesky residual", tu_chol_residual(n, m->a + b * n * n, l, tf_ulp(c->dt)),
           &table[row_of(c)].chol);
}

static void run_cholesky(const fcase *c, batch *m, tu_rng *r) {
  int64_t n = c->n, nb = c->nb;
  tu_buf A = input_of(c, m), F = tu_buf_new(c->dt, nb, n, n, c->lout);
  double *l = malloc(sizeof(double) * (size_t)(n * n + 1));
  int64_t *info = malloc(sizeof(int64_t) * (size_t)(nb + 1));
  bool some_not_pd = false, failed = false;
  gstat_status st = gstat_cholesky(ctx, &A.m, c->uplo, &F.m, info);
  if (st != GSTAT_OK && st != GSTAT_ENOTPD) {
    fprintf(stderr, "cholesky: %s\n", gstat_ctx_last_error(ctx));
    report_failure(c, 0, m, "cholesky status", (double)st);
  } else {
    for (int64_t b = 0; b < nb; b++) {
      some_not_pd |= m->info[b].definite == -1;
      failed |= info[b] != 0;
      check_factor(c, m, b, &F, info[b], l);
    }
    if (!tu_outside_untouched(&F)) report_failure(c, 0, m, "cholesky wrote outside F", 0);
    if (failed != (st == GSTAT_ENOTPD))
      report_failure(c, 0, m, "cholesky status and info disagree", st);
    if (some_not_pd && st != GSTAT_ENOTPD) report_failure(c, 0, m, "cholesky status", st);
    if (st == GSTAT_OK) run_solves(c, m, &F, r);
  }
  free(l);
  free(info);
  tu_buf_free(&A);
  tu_buf_free(&F);
}

static void run_case(gstat_dtype dt, int family, int64_t n, int64_t nb) {
  static int k; /* rotates triangles and layouts through the cases */
  fcase c = {dt, n, nb, family, (gstat_uplo)(k % 2), (tu_layout)(k % 3), (tu_layout)((k / 3) % 3)};
  k++;
  tu_rng r = tu_rng_new();
  batch m = make_batch(&c, &r);
  run_eigh(&c, &m);
  run_cholesky(&c, &m, &r);
  free_batch(&m);
}

static void print_table(gstat_dtype dt) {
  for (int row = 0; row <= tf_nfamilies; row++) {
    const worst *t = &table[row];
    printf(
        "# families %s %-4s %-20s residual %5.3g orth %5.3g values %5.3g spectrum %5.3g "
        "chol %5.3g solve %5.3g eigh %lldx%lld %.3g ms",
        on_cuda ? "cuda" : "cpu", dtype_name(dt),
        row < tf_nfamilies ? tf_families[row].name : "mixed", t->res, t->orth, t->values,
        t->spectrum, t->chol, t->solve, (long long)t->nb_timed, (long long)t->n_timed, t->ms);
    for (int p = 0; p < t->npaths; p++)
      if (t->path_from[p] == t->path_to[p])
        printf(" %lld:%s", (long long)t->path_from[p], t->path[p]);
      else
        printf(" %lld-%lld:%s", (long long)t->path_from[p], (long long)t->path_to[p], t->path[p]);
    printf("\n");
  }
  fflush(stdout);
}

static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && *v != '0';
}

/* Every family at every order, then the mixed batches; one table line per family. */
static void families_in(gstat_dtype dt) {
  static const int64_t cpu_sizes[] = {1, 2, 17, 33, 64, 100, 257};
  static const int64_t cuda_sizes[] = {1, 2, 17, 33, 64, 100, 257, 512, 1024};
  const int64_t *sizes = on_cuda ? cuda_sizes : cpu_sizes;
  int nsizes = on_cuda ? 9 : 7;
  int64_t limit = tu_quick() ? 33 : on_cuda && dt == GSTAT_BF16 ? 512 : on_cuda ? 1024 : 257;
  const int64_t nf = tf_nfamilies;
  /* mixed batches: order, batch */
  const int64_t cpu_mixed[][2] = {{17, tu_quick() ? nf : 2 * nf}, {64, nf}};
  const int64_t cuda_mixed[][2] = {{33, 4 * nf}, {512, nf}, {1024, nf}, {512, 640}};
  int nmixed = on_cuda ? (env_on("GSTAT_FAMILIES_LONG") && dt != GSTAT_BF16 ? 4 : 3) : 2;
  assert_true(tf_nfamilies < MAX_ROWS);
  memset(table, 0, sizeof table);
  failures = 0;
  for (int f = 0; f < tf_nfamilies; f++)
    for (int s = 0; s < nsizes && sizes[s] <= limit; s++)
      run_case(dt, f, sizes[s], on_cuda ? (sizes[s] <= 64 ? 8 : 4) : sizes[s] <= 64 ? 2 : 1);
  for (int k = 0; k < nmixed; k++) {
    const int64_t *mx = on_cuda ? cuda_mixed[k] : cpu_mixed[k];
    if (mx[0] <= limit) run_case(dt, -1, mx[0], mx[1]);
  }
  print_table(dt);
  if (failures)
    printf("# families %s %s: %d failures (the first 20 above)\n", on_cuda ? "cuda" : "cpu",
           dtype_name(dt), failures);
  assert_int_equal(failures, 0);
}

static void test_f32(void **state) {
  (void)state;
  families_in(GSTAT_F32);
}

static void test_f64(void **state) {
  (void)state;
  families_in(GSTAT_F64);
}

static void test_bf16(void **state) {
  (void)state;
  families_in(GSTAT_BF16);
}

int main(int argc, char **argv) {
  on_cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  ctx = tu_ctx(on_cuda ? GSTAT_BACKEND_CUDA : GSTAT_BACKEND_CPU);
  if (!ctx && on_cuda) {
    printf("test_families cuda: no usable CUDA device or module: SKIPPED\n");
    return 77;
  }
  if (!ctx) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),
      cmocka_unit_test(test_f64),
      cmocka_unit_test(test_bf16),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  gstat_ctx_destroy(ctx);
  return rc;
}
