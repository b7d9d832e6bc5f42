/* gstat against scikit-learn and R on real datasets (the CSV files in data/): PCA (every
 * method, F64 and F32), covariance and correlation (weights, missing values),
 * shrinkage, Mahalanobis distances and the streaming accumulator. The
 * reference values are files written by tests/reference/make_reference.{py,R}.
 *
 * Tolerances: a base relative tolerance (F64 1e-10, F32 1e-4, randomized
 * 1e-8) plus the error the problem's own conditioning allows. An eigenvalue
 * found from the covariance (or Gram) matrix carries an absolute error of a
 * few eps * lambda_max, and a component an error of eps * lambda_max / gap,
 * so the small eigenvalues of badly scaled data (breast_cancer's smallest is
 * 1.6e-12 lambda_max) cannot be promised to 1e-10 relative by any
 * covariance-based method (scikit-learn's covariance_eigh included);
 * components whose bound exceeds 0.1 are not determined by the data at that
 * precision and are skipped (counted). Each group prints its worst error /
 * tolerance, so the margins are visible. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#ifndef GSTAT_SOURCE_DIR
#error "GSTAT_SOURCE_DIR must name the source tree (tests/CMakeLists.txt sets it)"
#endif

/* ---- files ------------------------------------------------------------------ */

static char *read_file(const char *fmt, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, fmt, GSTAT_SOURCE_DIR, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)size + 1);
  size_t got = s ? fread(s, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!s || got != (size_t)size) {
    free(s);
    return NULL;
  }
  s[size] = 0;
  return s;
}

/* A numeric CSV with a header row: rows x cols doubles, row-major. */
static double *read_csv(const char *fmt, const char *name, int64_t *rows, int64_t *cols) {
  char *s = read_file(fmt, name);
  if (!s) return NULL;
  char *line = strchr(s, '\n'); /* skip the header */
  int64_t r = 0, c = 0, cap = 1024, count = 0;
  double *v = malloc(sizeof(double) * (size_t)cap);
  for (char *p = line ? line + 1 : s + strlen(s); *p;) {
    int64_t k = 0;
    for (;;) {
      char *end;
      double x = strtod(p, &end);
      if (end == p) break;
      if (count == cap) v = realloc(v, sizeof(double) * (size_t)(cap *= 2));
      v[count++] = x;
      k++;
      p = end;
      if (*p != ',') break;
      p++;
    }
    if (k == 0) break;
    if (c == 0) c = k;
    if (k != c) {
      fprintf(stderr, "%s: row %lld has %lld fields, not %lld\n", name, (long long)r, (long long)k,
              (long long)c);
      free(v);
      free(s);
      return NULL;
    }
    r++;
    while (*p == '\r' || *p == '\n') p++;
  }
  free(s);
  *rows = r;
  *cols = c;
  return v;
}

/* A reference file: '#' comments, then "key,rows,cols,v0,v1,..." lines. */
typedef struct {
  char key[128];
  int64_t rows, cols;
  double *v;
} ref_entry;
typedef struct {
  ref_entry *e;
  int64_t count;
} ref_file;

static int read_ref(const char *name, ref_file *rf) {
  memset(rf, 0, sizeof *rf);
  char *s = read_file("%s/tests/reference/%s", name);
  if (!s) return 0;
  int64_t cap = 0, ok = 1;
  for (char *p = s; *p && ok;) {
    char *eol = strchr(p, '\n');
    if (eol) *eol = 0;
    if (*p && *p != '#') {
      if (rf->count == cap)
        rf->e = realloc(rf->e, sizeof(ref_entry) * (size_t)(cap = cap * 2 + 16));
      ref_entry *e = &rf->e[rf->count++];
      e->v = NULL;
      char *comma = strchr(p, ',');
      size_t kl = comma ? (size_t)(comma - p) : 0;
      ok = comma && kl < sizeof e->key;
      if (ok) {
        memcpy(e->key, p, kl);
        e->key[kl] = 0;
        char *q = comma + 1;
        e->rows = strtoll(q, &q, 10);
        e->cols = strtoll(q + 1, &q, 10);
        e->v = malloc(sizeof(double) * (size_t)(e->rows * e->cols + 1));
        for (int64_t i = 0; ok && i < e->rows * e->cols; i++) {
          ok = *q == ',';
          e->v[i] = strtod(q + 1, &q); /* strtod reads "nan" */
        }
      }
      if (!ok) fprintf(stderr, "%s: malformed entry %lld\n", name, (long long)rf->count);
    }
    p = eol ? eol + 1 : p + strlen(p);
  }
  free(s);
  return (int)ok;
}

static void free_ref(ref_file *rf) {
  for (int64_t i = 0; i < rf->count; i++) free(rf->e[i].v);
  free(rf->e);
  memset(rf, 0, sizeof *rf);
}

/* The entry `key` (printf format), or NULL; rows/cols checked when >= 0. */
static const double *ref_get(const ref_file *rf, int64_t rows, int64_t cols, const char *fmt, ...) {
  char key[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(key, sizeof key, fmt, ap);
  va_end(ap);
  for (int64_t i = 0; i < rf->count; i++)
    if (!strcmp(rf->e[i].key, key)) {
      if ((rows >= 0 && rf->e[i].rows != rows) || (cols >= 0 && rf->e[i].cols != cols)) {
        fprintf(stderr, "reference %s is %lldx%lld, expected %lldx%lld\n", key,
                (long long)rf->e[i].rows, (long long)rf->e[i].cols, (long long)rows,
                (long long)cols);
        return NULL;
      }
      return rf->e[i].v;
    }
  return NULL;
}

/* ---- datasets --------------------------------------------------------------- */

typedef struct {
  const char *name;
  int64_t n, p;
  double *x;      /* n x p row-major */
  double *colmax; /* max |x| of each column */
  double *nanx;   /* wine only: x with NaN at tests/reference/wine_na_positions.csv */
  ref_file sk, r; /* sklearn_<name>.csv, r_<name>.csv */
} dataset;

enum { IRIS, WINE, BREAST_CANCER, DIGITS, NDATA };
static dataset data[NDATA] = {
    {.name = "iris"}, {.name = "wine"}, {.name = "breast_cancer"}, {.name = "digits"}};
static double *wine_fw, *wine_aw; /* tests/reference/wine_weights.csv */

static int setup(void **state) {
  (void)state;
  char file[256];
  for (int d = 0; d < NDATA; d++) {
    dataset *ds = &data[d];
    snprintf(file, sizeof file, "%s.csv", ds->name);
    ds->x = read_csv("%s/data/%s", file, &ds->n, &ds->p);
    if (!ds->x) return -1;
    ds->colmax = calloc((size_t)ds->p, sizeof(double));
    for (int64_t i = 0; i < ds->n; i++)
      for (int64_t j = 0; j < ds->p; j++)
        ds->colmax[j] = fmax(ds->colmax[j], fabs(ds->x[i * ds->p + j]));
    snprintf(file, sizeof file, "sklearn_%s.csv", ds->name);
    if (!read_ref(file, &ds->sk)) return -1;
    snprintf(file, sizeof file, "r_%s.csv", ds->name);
    if (!read_ref(file, &ds->r)) return -1;
  }
  int64_t r, c;
  double *na = read_csv("%s/tests/reference/%s", "wine_na_positions.csv", &r, &c);
  dataset *w = &data[WINE];
  if (!na || c != 2) return -1;
  w->nanx = malloc(sizeof(double) * (size_t)(w->n * w->p));
  memcpy(w->nanx, w->x, sizeof(double) * (size_t)(w->n * w->p));
  for (int64_t i = 0; i < r; i++) w->nanx[(int64_t)na[2 * i] * w->p + (int64_t)na[2 * i + 1]] = NAN;
  free(na);
  double *wt = read_csv("%s/tests/reference/%s", "wine_weights.csv", &r, &c);
  if (!wt || r != w->n || c != 2) return -1;
  wine_fw = malloc(sizeof(double) * (size_t)r);
  wine_aw = malloc(sizeof(double) * (size_t)r);
  for (int64_t i = 0; i < r; i++) {
    wine_fw[i] = wt[2 * i];
    wine_aw[i] = wt[2 * i + 1];
  }
  free(wt);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (int d = 0; d < NDATA; d++) {
    free(data[d].x);
    free(data[d].colmax);
    free(data[d].nanx);
    free_ref(&data[d].sk);
    free_ref(&data[d].r);
  }
  free(wine_fw);
  free(wine_aw);
  return 0;
}

/* ---- checks: count, remember the worst error / tolerance ---------------------- */

typedef struct {
  char what[160];
  int64_t checks, fails, skipped;
  double worst, worst_err; /* worst err / tol and that err */
  char worst_at[96];
} chk;

static int64_t total_fails;

static void chk_begin(chk *c, const char *fmt, ...) {
  memset(c, 0, sizeof *c);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->what, sizeof c->what, fmt, ap);
  va_end(ap);
}

/* |got - ref| <= tol; a NaN reference wants a NaN. */
static void chk_val(chk *c, double got, double ref, double tol, const char *fmt, ...) {
  char at[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(at, sizeof at, fmt, ap);
  va_end(ap);
  c->checks++;
  double err = isnan(ref) ? (isnan(got) ? 0 : INFINITY) : fabs(got - ref);
  if (isnan(err)) err = INFINITY; /* got NaN for a number */
  if (isnan(ref)) tol = 1;        /* only NaN-ness counts */
  double ratio = err == 0 ? 0 : err / tol;
  if (ratio > c->worst || (c->checks == 1 && ratio >= c->worst)) {
    c->worst = ratio;
    c->worst_err = err;
    snprintf(c->worst_at, sizeof c->worst_at, "%s", at);
  }
  if (!(err <= tol)) {
    if (c->fails < 5)
      fprintf(stderr, "  FAIL %s %s: got %.17g ref %.17g err %.3g tol %.3g\n", c->what, at, got,
              ref, err, tol);
    c->fails++;
  }
}

static void chk_true(chk *c, int ok, const char *fmt, ...) {
  char at[96];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(at, sizeof at, fmt, ap);
  va_end(ap);
  c->checks++;
  if (!ok) {
    if (c->fails < 5) fprintf(stderr, "  FAIL %s %s\n", c->what, at);
    c->fails++;
  }
}

static void chk_end(chk *c) {
  printf("%-64s %6lld checks, worst err/tol %.2e (err %.2e at %s)%s", c->what, (long long)c->checks,
         c->worst, c->worst_err, c->worst_at[0] ? c->worst_at : "-", c->skipped ? "" : "\n");
  if (c->skipped) printf(", %lld undetermined skipped\n", (long long)c->skipped);
  if (c->fails) printf("    %lld FAILED\n", (long long)c->fails);
  fflush(stdout);
  total_fails += c->fails;
}

/* ---- gstat calls ------------------------------------------------------------ */

static gstat_ctx *ctx;

static int ctx_setup(void **state) {
  (void)state;
  ctx = tu_ctx(GSTAT_BACKEND_CPU);
  return ctx ? 0 : -1;
}
static int ctx_teardown(void **state) {
  (void)state;
  gstat_ctx_destroy(ctx);
  ctx = NULL;
  return 0;
}

/* rows x p of x (row-major) in a descriptor of dtype and layout, `batch`
 * identical copies (a batch must give every element the same answer). */
static tu_buf make_input(const double *x, int64_t rows, int64_t p, gstat_dtype dt, tu_layout layout,
                         int64_t batch) {
  tu_buf b = tu_buf_new(dt, batch, rows, p, layout);
  for (int64_t k = 0; k < batch; k++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < p; j++) tu_set(&b.m, k, i, j, x[i * p + j]);
  return b;
}

static double eps_of(gstat_dtype dt) {
  return dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
}
static const char *dt_name(gstat_dtype dt) {
  return dt == GSTAT_F64 ? "F64" : "F32";
}
static const char *method_name(gstat_pca_method m) {
  return m == GSTAT_PCA_COVARIANCE_EIGH ? "cov"
         : m == GSTAT_PCA_GRAM_EIGH     ? "gram"
         : m == GSTAT_PCA_RANDOMIZED    ? "randomized"
                                        : "auto";
}

/* Index of the entry of largest magnitude (the first on ties). */
static int64_t argmax_abs(const double *v, int64_t n) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; j++)
    if (fabs(v[j]) > fabs(v[best])) best = j;
  return best;
}

/* ---- PCA against a reference -------------------------------------------------- */

typedef struct {
  int64_t k;
  const double *ev, *ratio, *sv, *noise, *mean, *scale;
  const double *comp;   /* k x p row-major, the reference's own signs */
  const double *scores; /* score_rows x k, consistent with comp's signs */
  int64_t score_rows;
  int whiten;
  const double *spectrum; /* all min(n, p) variances, descending (gaps, lambda_max) */
  int64_t m;
  double slack; /* multiplies the conditioning term (2: reference is itself eigh-based) */
} pca_ref;

/* Error allowed in component i: tol + a / gap (eps lambda_max / gap is what
 * any eigh-based method can promise); a is the eigenvalue error allowed. */
static double comp_bound(const pca_ref *r, int64_t i, double tol, double a) {
  double gap = INFINITY;
  if (i > 0) gap = fmin(gap, r->spectrum[i - 1] - r->spectrum[i]);
  if (i + 1 < r->m) gap = fmin(gap, r->spectrum[i] - r->spectrum[i + 1]);
  return tol + a / gap;
}

static double eig_slack(const pca_ref *r, int64_t p, double eps) {
  return r->slack * 4.0 * (double)p * eps * r->spectrum[0];
}

/* Compare dataset element b of res with r (r->comp NULL: eigenvalues only). */
static void cmp_pca(chk *c, const dataset *d, const gstat_pca_result *res, int64_t b,
                    const pca_ref *r, double tol, double eps) {
  int64_t n = d->n, p = d->p, k = r->k;
  chk_true(c, res->n_components == k && res->n_features == p && res->n_samples == n, "shape");
  if (res->n_components != k) return;
  double total = 0;
  for (int64_t i = 0; i < r->m; i++) total += r->spectrum[i];
  double a = eig_slack(r, p, eps); /* absolute eigenvalue error allowed */
  const double *ev = res->explained_variance + b * k,
               *ratio = res->explained_variance_ratio + b * k;
  const double *sv = res->singular_values + b * k, *comp = res->components + b * k * p;
  const double *mean = res->mean + b * p, *scale = res->scale + b * p;
  for (int64_t j = 0; j < p; j++) {
    if (r->mean)
      chk_val(c, mean[j], r->mean[j], tol * fabs(r->mean[j]) + 4 * eps * d->colmax[j], "mean[%lld]",
              (long long)j);
    if (r->scale)
      chk_val(c, scale[j], r->scale[j], (tol + 4 * eps) * r->scale[j], "scale[%lld]", (long long)j);
  }
  chk_val(c, res->total_variance[b], total, tol * total + a, "total_variance");
  for (int64_t i = 0; i < k; i++) {
    if (r->ev)
      chk_val(c, ev[i], r->ev[i], tol * r->ev[i] + a, "explained_variance[%lld]", (long long)i);
    if (r->ratio)
      chk_val(c, ratio[i], r->ratio[i], tol * r->ratio[i] + a / total, "ratio[%lld]", (long long)i);
    if (r->sv) {
      double s = r->sv[i], as = (double)(n - 1) * a;
      chk_val(c, sv[i], s, tol * s + fmin(s > 0 ? as / (2 * s) : INFINITY, sqrt(as)),
              "singular_values[%lld]", (long long)i);
    }
  }
  if (r->noise)
    chk_val(c, res->noise_variance[b], r->noise[0], tol * r->noise[0] + a, "noise_variance");

  double *ref = malloc(sizeof(double) * (size_t)p);
  for (int64_t i = 0; i < k; i++) {
    const double *g = comp + i * p;
    /* the sign rule holds on gstat's output whatever the accuracy */
    int64_t top = argmax_abs(g, p);
    chk_true(c, g[top] > 0, "component %lld: largest entry %lld is %g, not positive", (long long)i,
             (long long)top, g[top]);
    double vb = comp_bound(r, i, tol, a);
    if (!r->comp) continue;
    if (!(vb <= 0.1)) {
      c->skipped++;
      continue;
    }
    /* the reference under gstat's sign rule; a near-tie for the largest
     * entry is settled by the direction itself */
    memcpy(ref, r->comp + i * p, sizeof(double) * (size_t)p);
    int64_t rt = argmax_abs(ref, p);
    double second = 0;
    for (int64_t j = 0; j < p; j++)
      if (j != rt) second = fmax(second, fabs(ref[j]));
    double dot = 0;
    for (int64_t j = 0; j < p; j++) dot += ref[j] * g[j];
    double flip = ref[rt] < 0 ? -1 : 1;
    if (fabs(ref[rt]) - second <= 2 * vb) flip = dot < 0 ? -1 : 1;
    for (int64_t j = 0; j < p; j++)
      chk_val(c, g[j], flip * ref[j], vb, "components[%lld][%lld]", (long long)i, (long long)j);
    if (!r->scores || !res->scores) continue;
    double li = r->spectrum[i];
    if (r->whiten && !(a / li <= 0.1)) {
      c->skipped++;
      continue;
    }
    for (int64_t row = 0; row < r->score_rows; row++) {
      double rn = 0; /* norm of the centered (scaled) row */
      for (int64_t j = 0; j < p; j++) {
        double z = (d->x[row * p + j] - mean[j]) / scale[j];
        rn += z * z;
      }
      rn = sqrt(rn);
      double want = flip * r->scores[row * k + i], got = res->scores[(b * n + row) * k + i];
      double t = tol * fabs(want) + vb * rn;
      if (r->whiten) t = tol * fabs(want) + vb * rn / sqrt(li) + fabs(want) * (a / li);
      chk_val(c, got, want, t, "scores[%lld][%lld]", (long long)row, (long long)i);
    }
  }
  free(ref);
}

static gstat_status run_pca(const dataset *d, gstat_dtype dt, tu_layout layout, int64_t batch,
                            const gstat_pca_options *o, gstat_pca_result **res) {
  tu_buf X = make_input(d->x, d->n, d->p, dt, layout, batch);
  gstat_status st = gstat_pca(ctx, &X.m, o, res);
  if (st != GSTAT_OK)
    fprintf(stderr, "  gstat_pca(%s, %s, %s): %s\n", d->name, dt_name(dt), method_name(o->method),
            gstat_ctx_last_error(ctx));
  tu_buf_free(&X);
  return st;
}

/* The k tokens ("all", "2", ...) of the sklearn file, in file order. */
static int64_t pca_configs(const ref_file *rf, char tokens[][8], int64_t max) {
  int64_t count = 0;
  for (int64_t i = 0; i < rf->count && count < max; i++) {
    char tok[8];
    const char *key = rf->e[i].key, *pre = "pca/full/k=", *suf = "/whiten=0/explained_variance";
    size_t lp = strlen(pre), ls = strlen(suf), lk = strlen(key);
    if (lk <= lp + ls || strncmp(key, pre, lp) || strcmp(key + lk - ls, suf)) continue;
    if (lk - lp - ls >= sizeof tok) continue;
    memcpy(tok, key + lp, lk - lp - ls);
    tok[lk - lp - ls] = 0;
    strcpy(tokens[count++], tok);
  }
  return count;
}

/* pca_ref from the sklearn file for solver / k token / whiten. */
static int sk_ref(const dataset *d, const char *solver, const char *ktok, int whiten, pca_ref *r) {
  const ref_file *rf = &d->sk;
  int64_t p = d->p, m = d->p < d->n ? d->p : d->n;
  int64_t k = strcmp(ktok, "all") ? atoll(ktok) : m;
  memset(r, 0, sizeof *r);
  r->k = k;
  r->m = m;
  r->whiten = whiten;
  r->slack = strcmp(solver, "full") ? 2 : 1;
  r->spectrum = ref_get(rf, 1, m, "pca/full/k=all/whiten=0/explained_variance");
  const char *pre = "pca/%s/k=%s/whiten=0/";
  char f[96];
#define GET(field, rows, cols) \
  (snprintf(f, sizeof f, "%s%s", pre, field), ref_get(rf, rows, cols, f, solver, ktok))
  r->ev = GET("explained_variance", 1, k);
  r->ratio = GET("explained_variance_ratio", 1, k);
  r->sv = GET("singular_values", 1, k);
  r->noise = GET("noise_variance", 1, 1);
  r->mean = GET("mean", 1, p);
  r->comp = GET("components", k, p);
#undef GET
  r->scores = ref_get(rf, -1, k, "pca/%s/k=%s/whiten=%d/scores", solver, ktok, whiten);
  for (int64_t i = 0; i < rf->count; i++)
    if (r->scores == rf->e[i].v) r->score_rows = rf->e[i].rows;
  return r->spectrum && r->ev && r->ratio && r->sv && r->noise && r->mean && r->comp && r->scores;
}

/* Every sklearn PCA configuration of one dataset with one method. */
static void pca_vs_sklearn(const dataset *d, gstat_pca_method method, gstat_dtype dt) {
  char toks[8][8];
  int64_t nconf = pca_configs(&d->sk, toks, 8);
  assert_true(nconf > 0);
  double tol = dt == GSTAT_F64 ? 1e-10 : 1e-4, eps = eps_of(dt);
  /* F64 row-major one dataset; F32 strided batch of two (strides and batching) */
  tu_layout layout = dt == GSTAT_F64 ? TU_ROW_MAJOR : TU_STRIDED;
  int64_t batch = dt == GSTAT_F64 ? 1 : 2;
  int64_t fails = 0;
  for (int64_t ci = 0; ci < nconf; ci++)
    for (int whiten = 0; whiten <= 1; whiten++) {
      pca_ref r;
      if (!sk_ref(d, "full", toks[ci], whiten, &r)) continue; /* no whitened reference */
      gstat_pca_options o;
      gstat_pca_options_init(&o);
      o.method = method;
      o.n_components = strcmp(toks[ci], "all") ? r.k : 0;
      o.whiten = whiten;
      gstat_pca_result *res = NULL;
      assert_int_equal(run_pca(d, dt, layout, batch, &o, &res), GSTAT_OK);
      assert_int_equal(res->method, method);
      assert_int_equal(res->whiten, whiten);
      for (int s = 0; s < 2; s++) {
        const char *solver = s ? "covariance_eigh" : "full";
        assert_true(sk_ref(d, solver, toks[ci], whiten, &r));
        chk c;
        chk_begin(&c, "pca %s %s %s k=%s whiten=%d vs sklearn %s", d->name, dt_name(dt),
                  method_name(method), toks[ci], whiten, solver);
        for (int64_t b = 0; b < batch; b++) cmp_pca(&c, d, res, b, &r, tol, eps);
        if (dt == GSTAT_F64 && s == 0) {
          /* transform of the first rows reproduces the fit's scores, and
           * inverse_transform of all components gives the rows back */
          int64_t rows = r.score_rows, k = r.k, p = d->p;
          tu_buf X = make_input(d->x, rows, p, dt, TU_COL_MAJOR, 1);
          tu_buf S = tu_buf_new(GSTAT_F64, 1, rows, k, TU_ROW_MAJOR);
          tu_buf Y = tu_buf_new(GSTAT_F64, 1, rows, p, TU_STRIDED);
          assert_int_equal(gstat_pca_transform(ctx, res, &X.m, &S.m), GSTAT_OK);
          for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < k; j++) {
              double want = res->scores[i * k + j];
              chk_val(&c, tu_get(&S.m, 0, i, j), want, 1e-12 * (1 + fabs(want)),
                      "transform[%lld][%lld]", (long long)i, (long long)j);
            }
          if (k == p && !whiten) {
            /* exact up to how far the components are from orthonormal */
            assert_int_equal(gstat_pca_inverse_transform(ctx, res, &S.m, &Y.m), GSTAT_OK);
            double a = eig_slack(&r, p, DBL_EPSILON);
            for (int64_t i = 0; i < rows; i++) {
              double t = 0;
              for (int64_t ci = 0; ci < k; ci++)
                t += 2 * fabs(res->scores[i * k + ci]) * fmin(comp_bound(&r, ci, 1e-12, a), 2);
              for (int64_t j = 0; j < p; j++)
                chk_val(&c, tu_get(&Y.m, 0, i, j), d->x[i * p + j], 1e-12 * (1 + d->colmax[j]) + t,
                        "inverse_transform[%lld][%lld]", (long long)i, (long long)j);
            }
          }
          tu_buf_free(&X);
          tu_buf_free(&S);
          tu_buf_free(&Y);
        }
        chk_end(&c);
        fails += c.fails;
      }
      gstat_pca_result_free(res);
    }
  assert_int_equal(fails, 0);
}

/* Quick mode (valgrind, ~50x slower): PCA on the two small sets only. */
static int skip_big(const dataset *d) {
  return tu_quick() && d->n > 200;
}

static void test_pca_cov_eigh_f64(void **state) {
  (void)state;
  for (int d = 0; d < NDATA; d++)
    if (!skip_big(&data[d])) pca_vs_sklearn(&data[d], GSTAT_PCA_COVARIANCE_EIGH, GSTAT_F64);
}
static void test_pca_cov_eigh_f32(void **state) {
  (void)state;
  for (int d = 0; d < NDATA; d++)
    if (!skip_big(&data[d])) pca_vs_sklearn(&data[d], GSTAT_PCA_COVARIANCE_EIGH, GSTAT_F32);
}
static void test_pca_gram_eigh_f64(void **state) {
  (void)state;
  for (int d = 0; d < NDATA; d++)
    if (!skip_big(&data[d])) pca_vs_sklearn(&data[d], GSTAT_PCA_GRAM_EIGH, GSTAT_F64);
}
static void test_pca_gram_eigh_f32(void **state) {
  (void)state;
  for (int d = 0; d < NDATA; d++)
    if (!skip_big(&data[d])) pca_vs_sklearn(&data[d], GSTAT_PCA_GRAM_EIGH, GSTAT_F32);
}

/* Randomized with k < min(n, p) must find the exact top components: the
 * variances with the default power iterations (scikit-learn's rule), and the
 * components too with 20. A component converges like
 * (lambda_{k+oversamples+1} / lambda_k)^(q + 1/2) after q iterations; digits'
 * spectrum decays slowly (that ratio is 0.13 at k = 2, 0.25 at k = 5), so after
 * the default 7 its components are good to ~1e-7 only (scikit-learn's own
 * randomized solver: 2e-7 at k = 2, 1e-5 at k = 5), after 12 to just about
 * 1e-8; 20 leave a margin. */
static void test_pca_randomized(void **state) {
  (void)state;
  int64_t fails = 0;
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    char toks[8][8];
    int64_t nconf = skip_big(d) ? 0 : pca_configs(&d->sk, toks, 8);
    for (int64_t ci = 0; ci < nconf; ci++) {
      if (!strcmp(toks[ci], "all")) continue;
      for (int t = 0; t < 2; t++)
        for (int iters = 0; iters < 2; iters++) {
          gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
          pca_ref r;
          assert_true(sk_ref(d, "full", toks[ci], 0, &r));
          if (!iters) r.comp = NULL;
          gstat_pca_options o;
          gstat_pca_options_init(&o);
          o.method = GSTAT_PCA_RANDOMIZED;
          o.n_components = r.k;
          o.seed = 12345;
          o.power_iterations = iters ? 20 : -1;
          gstat_pca_result *res = NULL;
          assert_int_equal(run_pca(d, dt, TU_ROW_MAJOR, 1, &o, &res), GSTAT_OK);
          assert_int_equal(res->method, GSTAT_PCA_RANDOMIZED);
          chk c;
          chk_begin(&c, "pca %s %s randomized k=%s %s vs sklearn full", d->name, dt_name(dt),
                    toks[ci], iters ? "20 iterations" : "default (variances)");
          cmp_pca(&c, d, res, 0, &r, dt == GSTAT_F64 ? 1e-8 : 1e-4, eps_of(dt));
          chk_end(&c);
          fails += c.fails;
          gstat_pca_result_free(res);
        }
    }
  }
  assert_int_equal(fails, 0);
}

/* prcomp with and without scale.: sdev^2 is the variance (divisor n - 1);
 * rotation columns are components under R's own signs. */
static void test_pca_vs_prcomp(void **state) {
  (void)state;
  int64_t fails = 0;
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    int64_t n = d->n, p = d->p;
    for (int scale = 0; scale <= 1; scale++) {
      const double *sdev = ref_get(&d->r, 1, p, "prcomp/scale=%d/sdev", scale);
      gstat_pca_options o;
      gstat_pca_options_init(&o);
      o.scale = scale;
      if (!sdev) {
        /* digits: constant columns cannot be scaled (prcomp refuses too) */
        assert_true(scale == 1 && di == DIGITS);
        gstat_pca_result *res = NULL;
        o.method = GSTAT_PCA_COVARIANCE_EIGH;
        tu_buf X = make_input(d->x, n, p, GSTAT_F64, TU_ROW_MAJOR, 1);
        assert_int_equal(gstat_pca(ctx, &X.m, &o, &res), GSTAT_EINVAL);
        assert_null(res);
        printf("%-64s EINVAL as expected: %s\n", "pca digits scale=1 (constant columns)",
               gstat_ctx_last_error(ctx));
        tu_buf_free(&X);
        continue;
      }
      double *ev = malloc(sizeof(double) * (size_t)p), *ratio = malloc(sizeof(double) * (size_t)p);
      double *sv = malloc(sizeof(double) * (size_t)p),
             *comp = malloc(sizeof(double) * (size_t)(p * p));
      const double *rot = ref_get(&d->r, p, p, "prcomp/scale=%d/rotation", scale);
      double total = 0;
      for (int64_t i = 0; i < p; i++) total += ev[i] = sdev[i] * sdev[i];
      for (int64_t i = 0; i < p; i++) {
        ratio[i] = ev[i] / total;
        sv[i] = sqrt((double)(n - 1) * ev[i]);
        for (int64_t j = 0; j < p; j++) comp[i * p + j] = rot[j * p + i];
      }
      double zero = 0;
      pca_ref r = {.k = p,
                   .ev = ev,
                   .ratio = ratio,
                   .sv = sv,
                   .noise = &zero,
                   .mean = ref_get(&d->r, 1, p, "prcomp/scale=%d/center", scale),
                   .scale = scale ? ref_get(&d->r, 1, p, "prcomp/scale=1/scale") : NULL,
                   .comp = comp,
                   .scores = ref_get(&d->r, -1, p, "prcomp/scale=%d/x", scale),
                   .score_rows = 20,
                   .spectrum = ev,
                   .m = p,
                   .slack = 1};
      assert_non_null(rot);
      assert_non_null(r.mean);
      assert_non_null(r.scores);
      for (int mi = 0; mi < 2; mi++)
        for (int t = 0; t < 2; t++) {
          gstat_pca_method method = mi ? GSTAT_PCA_GRAM_EIGH : GSTAT_PCA_COVARIANCE_EIGH;
          gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
          if (skip_big(d)) continue;
          o.method = method;
          gstat_pca_result *res = NULL;
          assert_int_equal(run_pca(d, dt, t ? TU_COL_MAJOR : TU_ROW_MAJOR, 1, &o, &res), GSTAT_OK);
          chk c;
          chk_begin(&c, "pca %s %s %s scale=%d vs R prcomp", d->name, dt_name(dt),
                    method_name(method), scale);
          cmp_pca(&c, d, res, 0, &r, t ? 1e-4 : 1e-10, eps_of(dt));
          chk_end(&c);
          fails += c.fails;
          gstat_pca_result_free(res);
        }
      free(ev);
      free(ratio);
      free(sv);
      free(comp);
    }
  }
  assert_int_equal(fails, 0);
}

/* ---- covariance ----------------------------------------------------------- */

/* Covariance (or correlation) of x into a p x p double array; mean optional. */
static gstat_status run_cov(const double *x, int64_t n, int64_t p, gstat_dtype dt, tu_layout layout,
                            const gstat_cov_options *o, double *cov, double *mean) {
  tu_buf X = make_input(x, n, p, dt, layout, 1);
  tu_buf C = tu_buf_new(dt, 1, p, p, layout == TU_ROW_MAJOR ? TU_COL_MAJOR : TU_ROW_MAJOR);
  tu_buf M = tu_buf_new(GSTAT_F64, 1, p, 1, TU_STRIDED);
  tu_poison(&C);
  tu_poison(&M);
  gstat_status st = gstat_covariance(ctx, &X.m, o, &C.m, mean ? &M.m : NULL);
  if (st != GSTAT_OK) {
    fprintf(stderr, "  gstat_covariance: %s\n", gstat_ctx_last_error(ctx));
  } else {
    assert_true(tu_all_written(&C) && tu_outside_untouched(&C));
    for (int64_t i = 0; i < p; i++)
      for (int64_t j = 0; j < p; j++) cov[i * p + j] = tu_get(&C.m, 0, i, j);
    if (mean) {
      assert_true(tu_all_written(&M) && tu_outside_untouched(&M));
      for (int64_t j = 0; j < p; j++) mean[j] = tu_get(&M.m, 0, j, 0);
    }
  }
  tu_buf_free(&X);
  tu_buf_free(&C);
  tu_buf_free(&M);
  return st;
}

/* Entry (i, j) of a covariance to tol * sqrt(C_ii C_jj) (the scale of that
 * entry, however much it cancels); of a correlation to tol. */
static void cmp_cov(chk *c, const double *got, const double *ref, int64_t p, int corr, double tol) {
  for (int64_t i = 0; i < p; i++)
    for (int64_t j = 0; j < p; j++) {
      double s = corr ? 1 : sqrt(fabs(ref[i * p + i] * ref[j * p + j]));
      if (isnan(s)) s = fabs(ref[i * p + j]);
      chk_val(c, got[i * p + j], ref[i * p + j], tol * s, "[%lld][%lld]", (long long)i,
              (long long)j);
    }
}

static void test_covariance_vs_r(void **state) {
  (void)state;
  int64_t fails = 0;
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    int64_t p = d->p;
    const double *rcov = ref_get(&d->r, p, p, "cov"), *rcor = ref_get(&d->r, p, p, "cor");
    if (!rcov) continue; /* digits: see tests/reference/README.md */
    assert_non_null(rcor);
    const double *colmeans = ref_get(&d->r, 1, p, "prcomp/scale=0/center");
    double *got = malloc(sizeof(double) * (size_t)(p * p)),
           *mean = malloc(sizeof(double) * (size_t)p);
    for (int t = 0; t < 2; t++)
      for (int corr = 0; corr <= 1; corr++) {
        gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
        double tol = t ? 1e-4 : 1e-10;
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.correlation = corr;
        assert_int_equal(run_cov(d->x, d->n, p, dt, t ? TU_STRIDED : TU_ROW_MAJOR, &o, got, mean),
                         GSTAT_OK);
        chk c;
        chk_begin(&c, "%s %s %s vs R", corr ? "cor" : "cov", d->name, dt_name(dt));
        cmp_cov(&c, got, corr ? rcor : rcov, p, corr, tol);
        for (int64_t j = 0; j < p; j++)
          chk_val(&c, mean[j], colmeans[j],
                  tol * fabs(colmeans[j]) + 4 * DBL_EPSILON * d->colmax[j], "mean[%lld]",
                  (long long)j);
        chk_end(&c);
        fails += c.fails;
      }
    free(got);
    free(mean);
  }
  assert_int_equal(fails, 0);
}

static void test_covariance_missing_vs_r(void **state) {
  (void)state;
  const dataset *d = &data[WINE];
  int64_t p = d->p, fails = 0;
  static const struct {
    gstat_missing mode;
    const char *use;
  } modes[] = {{GSTAT_MISSING_EVERYTHING, "everything"},
               {GSTAT_MISSING_COMPLETE, "complete.obs"},
               {GSTAT_MISSING_PAIRWISE, "pairwise.complete.obs"}};
  double *got = malloc(sizeof(double) * (size_t)(p * p));
  for (int mi = 0; mi < 3; mi++)
    for (int t = 0; t < 2; t++)
      for (int corr = 0; corr <= 1; corr++) {
        gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
        const double *ref = ref_get(&d->r, p, p, "na/%s/%s", modes[mi].use, corr ? "cor" : "cov");
        assert_non_null(ref);
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.correlation = corr;
        o.missing = modes[mi].mode;
        assert_int_equal(
            run_cov(d->nanx, d->n, p, dt, t ? TU_COL_MAJOR : TU_ROW_MAJOR, &o, got, NULL),
            GSTAT_OK);
        /* R's cor(use = "everything") puts 1 on the diagonal even for a
         * column holding NA; gstat's contract (and numpy's corrcoef) is NaN
         * for every entry of such a column, so that is what is checked */
        double *want = malloc(sizeof(double) * (size_t)(p * p));
        memcpy(want, ref, sizeof(double) * (size_t)(p * p));
        const double *rcov = ref_get(&d->r, p, p, "na/%s/cov", modes[mi].use);
        if (corr && modes[mi].mode == GSTAT_MISSING_EVERYTHING)
          for (int64_t j = 0; j < p; j++)
            if (isnan(rcov[j * p + j])) want[j * p + j] = NAN;
        chk c;
        chk_begin(&c, "%s wine+NA use=%s %s vs R", corr ? "cor" : "cov", modes[mi].use,
                  dt_name(dt));
        cmp_cov(&c, got, want, p, corr, t ? 1e-4 : 1e-10);
        free(want);
        chk_end(&c);
        fails += c.fails;
      }
  free(got);
  assert_int_equal(fails, 0);
}

/* cov.wt(x, wt, cor = TRUE, method = "unbiased" / "ML") is aweights with
 * ddof 1 / 0 (the weights need not sum to 1: the divisor rule makes the
 * scale cancel); numpy.cov with fweights and/or aweights. */
static void test_covariance_weights(void **state) {
  (void)state;
  const dataset *d = &data[WINE];
  int64_t p = d->p, fails = 0;
  double *got = malloc(sizeof(double) * (size_t)(p * p)),
         *mean = malloc(sizeof(double) * (size_t)p);
  for (int t = 0; t < 2; t++) {
    gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
    double tol = t ? 1e-4 : 1e-10;
    for (int ml = 0; ml <= 1; ml++)
      for (int corr = 0; corr <= 1; corr++) {
        const char *method = ml ? "ML" : "unbiased";
        const double *ref = ref_get(&d->r, p, p, "cov.wt/%s/%s", method, corr ? "cor" : "cov");
        const double *center = ref_get(&d->r, 1, p, "cov.wt/%s/center", method);
        assert_non_null(ref);
        assert_non_null(center);
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.aweights = wine_aw;
        o.ddof = ml ? 0 : 1;
        o.correlation = corr;
        assert_int_equal(run_cov(d->x, d->n, p, dt, TU_ROW_MAJOR, &o, got, mean), GSTAT_OK);
        chk c;
        chk_begin(&c, "%s wine aweights vs R cov.wt %s %s", corr ? "cor" : "cov", method,
                  dt_name(dt));
        cmp_cov(&c, got, ref, p, corr, tol);
        for (int64_t j = 0; j < p; j++)
          chk_val(&c, mean[j], center[j], tol * fabs(center[j]) + 4 * DBL_EPSILON * d->colmax[j],
                  "center[%lld]", (long long)j);
        chk_end(&c);
        fails += c.fails;
      }
    static const char *kinds[] = {"fw", "aw", "fw_aw"};
    for (int ki = 0; ki < 3; ki++)
      for (int ddof = 0; ddof <= 1; ddof++) {
        const double *ref =
            ref_get(&d->sk, p, p, "numpy_cov/%s/ddof=%d/covariance", kinds[ki], ddof);
        const double *rmean = ref_get(&d->sk, 1, p, "numpy_cov/%s/ddof=%d/mean", kinds[ki], ddof);
        assert_non_null(ref);
        assert_non_null(rmean);
        gstat_cov_options o;
        gstat_cov_options_init(&o);
        o.fweights = ki != 1 ? wine_fw : NULL;
        o.aweights = ki != 0 ? wine_aw : NULL;
        o.ddof = ddof;
        assert_int_equal(run_cov(d->x, d->n, p, dt, TU_STRIDED, &o, got, mean), GSTAT_OK);
        chk c;
        chk_begin(&c, "cov wine %s ddof=%d vs numpy.cov %s", kinds[ki], ddof, dt_name(dt));
        cmp_cov(&c, got, ref, p, 0, tol);
        for (int64_t j = 0; j < p; j++)
          chk_val(&c, mean[j], rmean[j], tol * fabs(rmean[j]) + 4 * DBL_EPSILON * d->colmax[j],
                  "mean[%lld]", (long long)j);
        chk_end(&c);
        fails += c.fails;
      }
  }
  free(got);
  free(mean);
  assert_int_equal(fails, 0);
}

/* ---- shrinkage, Mahalanobis, accumulator ---------------------------------------- */

static void test_shrinkage_vs_sklearn(void **state) {
  (void)state;
  int64_t fails = 0;
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    int64_t p = d->p;
    for (int m = 0; m < 2; m++)
      for (int centered = 0; centered <= 1; centered++) {
        const char *name = m ? "oas" : "ledoit_wolf";
        const double *rc =
            ref_get(&d->sk, p, p, "shrink/%s/assume_centered=%d/covariance", name, centered);
        const double *rs =
            ref_get(&d->sk, 1, 1, "shrink/%s/assume_centered=%d/shrinkage", name, centered);
        if (!rc) continue; /* not for digits */
        assert_non_null(rs);
        for (int t = 0; t < 2; t++) {
          gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
          double tol = t ? 1e-4 : 1e-10;
          tu_buf X = make_input(d->x, d->n, p, dt, t ? TU_COL_MAJOR : TU_ROW_MAJOR, 1);
          tu_buf C = tu_buf_new(GSTAT_F64, 1, p, p, TU_STRIDED);
          tu_poison(&C);
          double s = NAN;
          gstat_status st = gstat_cov_shrink(
              ctx, &X.m, m ? GSTAT_SHRINK_OAS : GSTAT_SHRINK_LEDOIT_WOLF, centered, &C.m, NULL, &s);
          if (st != GSTAT_OK)
            fprintf(stderr, "  gstat_cov_shrink: %s\n", gstat_ctx_last_error(ctx));
          assert_int_equal(st, GSTAT_OK);
          assert_true(tu_all_written(&C) && tu_outside_untouched(&C));
          double *got = malloc(sizeof(double) * (size_t)(p * p));
          for (int64_t i = 0; i < p; i++)
            for (int64_t j = 0; j < p; j++) got[i * p + j] = tu_get(&C.m, 0, i, j);
          chk c;
          chk_begin(&c, "%s %s assume_centered=%d %s vs sklearn", name, d->name, centered,
                    dt_name(dt));
          chk_val(&c, s, rs[0], tol * rs[0] + 16 * eps_of(dt), "shrinkage");
          cmp_cov(&c, got, rc, p, 0, tol);
          chk_end(&c);
          fails += c.fails;
          free(got);
          tu_buf_free(&X);
          tu_buf_free(&C);
        }
      }
  }
  assert_int_equal(fails, 0);
}

/* d2 relative to tol + 4 eps cond(S): solving with S loses cond(S) * eps;
 * data sets where that exceeds 0.1 are skipped (breast_cancer's covariance
 * has condition 6e11: F32 cannot resolve it). */
static void maha_case(chk *c, const dataset *d, gstat_dtype dt, const double *center,
                      const double *S, int inverted, const double *want, double scale,
                      double cond) {
  int64_t n = d->n, p = d->p;
  double tol = (dt == GSTAT_F64 ? 1e-10 : 1e-4) + 4 * eps_of(dt) * cond;
  if (!(tol <= 0.1)) {
    c->skipped++;
    return;
  }
  tu_buf X = make_input(d->x, n, p, dt, TU_ROW_MAJOR, 1);
  tu_buf M = make_input(center, p, 1, dt, TU_COL_MAJOR, 1);
  tu_buf A = make_input(S, p, p, dt, TU_STRIDED, 1);
  tu_buf D = tu_buf_new(GSTAT_F64, 1, n, 1, TU_STRIDED);
  tu_poison(&D);
  gstat_status st = gstat_mahalanobis(ctx, &X.m, &M.m, &A.m, inverted, &D.m);
  if (st != GSTAT_OK) fprintf(stderr, "  gstat_mahalanobis: %s\n", gstat_ctx_last_error(ctx));
  assert_int_equal(st, GSTAT_OK);
  assert_true(tu_all_written(&D) && tu_outside_untouched(&D));
  for (int64_t i = 0; i < n; i++) {
    double w = want[i] * scale;
    chk_val(c, tu_get(&D.m, 0, i, 0), w, tol * w, "d2[%lld]", (long long)i);
  }
  tu_buf_free(&X);
  tu_buf_free(&M);
  tu_buf_free(&A);
  tu_buf_free(&D);
}

static void test_mahalanobis(void **state) {
  (void)state;
  int64_t fails = 0;
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    int64_t n = d->n, p = d->p;
    const double *rd = ref_get(&d->r, 1, n, "mahalanobis");
    if (!rd) continue;
    const double *rcov = ref_get(&d->r, p, p, "cov"),
                 *rcenter = ref_get(&d->r, 1, p, "prcomp/scale=0/center");
    const double *loc = ref_get(&d->sk, 1, p, "empirical/location");
    const double *ecov = ref_get(&d->sk, p, p, "empirical/covariance");
    const double *prec = ref_get(&d->sk, p, p, "empirical/precision");
    const double *cond = ref_get(&d->sk, 1, 1, "empirical/condition");
    const double *sd = ref_get(&d->sk, 1, n, "empirical/mahalanobis");
    assert_true(rcov && rcenter && loc && ecov && prec && cond && sd);
    for (int t = 0; t < 2; t++) {
      gstat_dtype dt = t ? GSTAT_F32 : GSTAT_F64;
      chk c;
      chk_begin(&c, "mahalanobis %s %s vs R (cov) and sklearn (ML cov, precision)", d->name,
                dt_name(dt));
      maha_case(&c, d, dt, rcenter, rcov, 0, rd, 1, cond[0]);
      maha_case(&c, d, dt, loc, ecov, 0, sd, 1, cond[0]);
      maha_case(&c, d, dt, loc, prec, 1, sd, 1, cond[0]);
      /* R's distances under the ML covariance are n / (n - 1) times larger */
      maha_case(&c, d, dt, loc, ecov, 0, rd, (double)n / (double)(n - 1), cond[0]);
      chk_end(&c);
      fails += c.fails;
    }
  }
  assert_int_equal(fails, 0);
}

/* Rows streamed through an accumulator in uneven chunks give R's cov (and
 * complete.obs with NA), and its PCA gives sklearn's. */
static void test_accumulator(void **state) {
  (void)state;
  int64_t fails = 0;
  static const int64_t chunks[] = {1, 7, 50, 0, 13};
  for (int di = 0; di < NDATA; di++) {
    const dataset *d = &data[di];
    int64_t n = d->n, p = d->p;
    for (int withna = 0; withna <= 1; withna++) {
      if (withna && di != WINE) continue;
      const double *x = withna ? d->nanx : d->x;
      gstat_cov_accum *acc = NULL;
      assert_int_equal(
          gstat_cov_accum_create(ctx, p, withna ? GSTAT_MISSING_COMPLETE : GSTAT_MISSING_EVERYTHING,
                                 &acc),
          GSTAT_OK);
      for (int64_t at = 0, ci = 0; at < n; ci++) {
        int64_t rows = chunks[ci % 5];
        if (rows > n - at) rows = n - at;
        tu_buf X = make_input(x + at * p, rows, p, GSTAT_F64, TU_COL_MAJOR, 1);
        assert_int_equal(gstat_cov_accum_add(ctx, acc, &X.m, NULL), GSTAT_OK);
        tu_buf_free(&X);
        at += rows;
      }
      const double *ref =
          withna ? ref_get(&d->r, p, p, "na/complete.obs/cov") : ref_get(&d->r, p, p, "cov");
      chk c;
      chk_begin(&c, "accumulator %s%s vs R cov%s", d->name, withna ? "+NA" : "",
                withna ? " complete.obs" : "");
      if (ref) {
        tu_buf C = tu_buf_new(GSTAT_F64, 1, p, p, TU_ROW_MAJOR);
        assert_int_equal(gstat_cov_accum_covariance(ctx, acc, 1, 0, &C.m, NULL), GSTAT_OK);
        double *got = malloc(sizeof(double) * (size_t)(p * p));
        for (int64_t i = 0; i < p; i++)
          for (int64_t j = 0; j < p; j++) got[i * p + j] = tu_get(&C.m, 0, i, j);
        cmp_cov(&c, got, ref, p, 0, 1e-10);
        free(got);
        tu_buf_free(&C);
      }
      if (withna) {
        int64_t skipped = gstat_cov_accum_rows_skipped(acc), with_nan = 0;
        for (int64_t i = 0; i < n; i++) {
          int has = 0;
          for (int64_t j = 0; j < p; j++) has |= isnan(x[i * p + j]);
          with_nan += has;
        }
        chk_true(&c, skipped == with_nan && gstat_cov_accum_rows(acc) + skipped == n,
                 "rows skipped %lld, rows with a NaN %lld", (long long)skipped,
                 (long long)with_nan);
      }
      if (ref) chk_end(&c); /* digits has no R covariance (see README) */
      fails += c.fails;
      if (!withna) {
        pca_ref r;
        assert_true(sk_ref(d, "full", "all", 0, &r));
        r.scores = NULL;
        gstat_pca_result *res = NULL;
        chk_begin(&c, "pca_from_accum %s vs sklearn full", d->name);
        gstat_status st = gstat_pca_from_accum(ctx, acc, NULL, &res);
        chk_true(&c, st == GSTAT_OK, "status %d (%s)", (int)st, gstat_ctx_last_error(ctx));
        if (st == GSTAT_OK) cmp_pca(&c, d, res, 0, &r, 1e-10, DBL_EPSILON);
        gstat_pca_result_free(res);
        chk_end(&c);
        fails += c.fails;
      }
      gstat_cov_accum_destroy(acc);
    }
  }
  assert_int_equal(fails, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pca_cov_eigh_f64, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_pca_cov_eigh_f32, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_pca_gram_eigh_f64, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_pca_gram_eigh_f32, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_pca_randomized, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_pca_vs_prcomp, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_covariance_vs_r, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_covariance_missing_vs_r, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_covariance_weights, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_shrinkage_vs_sklearn, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_mahalanobis, ctx_setup, ctx_teardown),
      cmocka_unit_test_setup_teardown(test_accumulator, ctx_setup, ctx_teardown),
  };
  int rc = cmocka_run_group_tests(tests, setup, teardown);
  printf("reference checks failed: %lld\n", (long long)total_fails);
  return rc;
}
