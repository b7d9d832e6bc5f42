/* The sparse eigensolver (src/graph/sparse_eigs.c) and the CSR product
 * (src/graph/csr_apply.c), internal API: residuals ||Lv - lambda v|| within
 * the tolerance for every returned pair (recomputed here with a naive
 * product), agreement with dense gstat_eigh on Laplacians of paths, rings,
 * grids, kNN graphs, stochastic block models and disconnected graphs (the
 * multiplicity of 0 is the number of components), both methods, the dense
 * fallback, determinism for a seed, partial results on ENOCONV, bad input,
 * a failing or non-finite operator, cancellation, and the CSR product
 * against a naive loop (empty rows, values NULL, any column count, threads). */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph/graph_internal.h"
#include "graph/sparse_eigs.h"
#include "testutil.h"

/* ---- graphs ---- */

typedef struct {
  int64_t n, nnz;
  int64_t *off, *idx;
  double *val;
} csr;

static void csr_free(csr *a) {
  free(a->off);
  free(a->idx);
  free(a->val);
  memset(a, 0, sizeof *a);
}

typedef struct {
  int64_t n, count, cap;
  int64_t *i, *j;
  double *w;
} edges;

static edges edges_new(int64_t n) {
  edges e = {n, 0, 64, NULL, NULL, NULL};
  e.i = malloc(sizeof(int64_t) * 64);
  e.j = malloc(sizeof(int64_t) * 64);
  e.w = malloc(sizeof(double) * 64);
  return e;
}

static void edge(edges *e, int64_t i, int64_t j, double w) {
  if (i == j) return;
  if (e->count == e->cap) {
    e->cap *= 2;
    e->i = realloc(e->i, sizeof(int64_t) * (size_t)e->cap);
    e->j = realloc(e->j, sizeof(int64_t) * (size_t)e->cap);
    e->w = realloc(e->w, sizeof(double) * (size_t)e->cap);
  }
  e->i[e->count] = i;
  e->j[e->count] = j;
  e->w[e->count++] = w;
}

static void edges_free(edges *e) {
  free(e->i);
  free(e->j);
  free(e->w);
}

/* Dense symmetric adjacency (duplicates summed), column-major n x n. */
static double *adjacency(const edges *e) {
  int64_t n = e->n;
  double *a = calloc((size_t)(n * n), sizeof(double));
  for (int64_t t = 0; t < e->count; t++) {
    a[e->i[t] + e->j[t] * n] += e->w[t];
    a[e->j[t] + e->i[t] * n] += e->w[t];
  }
  return a;
}

/* The Laplacian, dense (column-major) and CSR: D - A, or I - D^-1/2 A D^-1/2
 * (an isolated node gets 0 on the diagonal, as scipy's). *upper: a bound of
 * the spectrum (2, or 2 max degree). */
static double *laplacian(const edges *e, bool normed, csr *out, double *upper) {
  int64_t n = e->n;
  double *a = adjacency(e), *deg = calloc((size_t)n, sizeof(double));
  double maxdeg = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++) deg[i] += a[i + j * n];
    maxdeg = fmax(maxdeg, deg[i]);
  }
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < n; i++) {
      double v = -a[i + j * n];
      if (normed) v = deg[i] > 0 && deg[j] > 0 ? v / sqrt(deg[i] * deg[j]) : 0;
      if (i == j) v = normed ? (deg[i] > 0 ? 1 : 0) : deg[i];
      a[i + j * n] = v;
    }
  *upper = normed ? 2 : 2 * maxdeg;
  out->n = n;
  out->off = calloc((size_t)n + 1, sizeof(int64_t));
  out->nnz = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      if (a[i + j * n] != 0) out->nnz++;
  out->idx = malloc(sizeof(int64_t) * (size_t)(out->nnz + 1));
  out->val = malloc(sizeof(double) * (size_t)(out->nnz + 1));
  int64_t p = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++)
      if (a[i + j * n] != 0) {
        out->idx[p] = j;
        out->val[p++] = a[i + j * n];
      }
    out->off[i + 1] = p;
  }
  free(deg);
  return a;
}

static edges path(int64_t n) {
  edges e = edges_new(n);
  for (int64_t i = 0; i + 1 < n; i++) edge(&e, i, i + 1, 1);
  return e;
}

static edges ring(int64_t n) {
  edges e = path(n);
  edge(&e, n - 1, 0, 1);
  return e;
}

static edges grid(int64_t r, int64_t c) {
  edges e = edges_new(r * c);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      if (i + 1 < r) edge(&e, i * c + j, (i + 1) * c + j, 1);
      if (j + 1 < c) edge(&e, i * c + j, i * c + j + 1, 1);
    }
  return e;
}

/* kNN of random points in the unit square (brute force), connectivity
 * symmetrized by (A + A^T) / 2, as scikit-learn's spectral clustering. */
static edges knn(tu_rng *r, int64_t n, int kn) {
  double *x = malloc(sizeof(double) * (size_t)(2 * n)), *d = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < 2 * n; i++) x[i] = tu_uniform(r);
  edges e = edges_new(n);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++)
      d[j] = j == i ? INFINITY
                    : (x[2 * i] - x[2 * j]) * (x[2 * i] - x[2 * j]) +
                          (x[2 * i + 1] - x[2 * j + 1]) * (x[2 * i + 1] - x[2 * j + 1]);
    for (int t = 0; t < kn; t++) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; j++)
        if (d[j] < d[best]) best = j;
      edge(&e, i, best, 0.5);
      d[best] = INFINITY;
    }
  }
  free(x);
  free(d);
  return e;
}

/* Stochastic block model: blocks of `size` nodes, edge probabilities pin
 * within and pout across. */
static edges sbm(tu_rng *r, int blocks, int64_t size, double pin, double pout) {
  int64_t n = blocks * size;
  edges e = edges_new(n);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++)
      if (tu_uniform(r) < (i / size == j / size ? pin : pout)) edge(&e, i, j, 1);
  return e;
}

/* The disjoint union (nodes of b after those of a). */
static edges join(edges a, edges b) {
  edges e = edges_new(a.n + b.n);
  for (int64_t t = 0; t < a.count; t++) edge(&e, a.i[t], a.j[t], a.w[t]);
  for (int64_t t = 0; t < b.count; t++) edge(&e, a.n + b.i[t], a.n + b.j[t], b.w[t]);
  edges_free(&a);
  edges_free(&b);
  return e;
}

/* ---- references ---- */

/* Naive y = A x, row by row in index order (the same order as the library). */
static void naive_apply(const csr *a, const double *x, double *y) {
  for (int64_t i = 0; i < a->n; i++) {
    double acc = 0;
    for (int64_t p = a->off[i]; p < a->off[i + 1]; p++)
      acc += (a->val ? a->val[p] : 1.0) * x[a->idx[p]];
    y[i] = acc;
  }
}

/* All eigenvalues of the dense n x n matrix (copied) by gstat_eigh, on a
 * context of its own with one thread: threaded LAPACK on these small sizes
 * only leaves OpenMP workers spinning, which valgrind pays for dearly. */
static void dense_eigenvalues(int64_t n, const double *a, double *lam) {
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  o.num_threads = 1;
  o.backend = GSTAT_BACKEND_CPU;
  gstat_ctx *one = NULL;
  assert_int_equal(gstat_ctx_create(&one, &o), GSTAT_OK);
  double *tmp = malloc(sizeof(double) * (size_t)(n * n));
  memcpy(tmp, a, sizeof(double) * (size_t)(n * n));
  gstat_matrix A = gstat_matrix_col_major(tmp, GSTAT_F64, 1, n, n);
  gstat_matrix w = gstat_vector_batch(lam, GSTAT_F64, 1, n);
  assert_int_equal(gstat_eigh(one, &A, GSTAT_LOWER, &w, NULL, NULL), GSTAT_OK);
  free(tmp);
  gstat_ctx_destroy(one);
}

typedef struct {
  double *w, *V, *res;
  gstat_i_eigs_report rep;
  gstat_status status;
} result;

static void result_free(result *r) {
  free(r->w);
  free(r->V);
  free(r->res);
}

static result solve(gstat_ctx *ctx, csr *L, const gstat_i_eigs_options *opt) {
  result r;
  int64_t n = L->n, k = opt->k;
  r.w = malloc(sizeof(double) * (size_t)k);
  r.V = malloc(sizeof(double) * (size_t)(n * k));
  r.res = malloc(sizeof(double) * (size_t)k);
  gstat_i_csr op = {L->n, L->off, L->idx, L->val};
  r.status = gstat_i_sparse_eigs(ctx, n, gstat_i_csr_apply, &op, opt, r.w, r.V, r.res, &r.rep);
  return r;
}

/* Every returned pair: residual recomputed here within the tolerance (and
 * equal to the reported one), unit and orthogonal vectors, the sign rule,
 * ascending values. */
static void check_pairs(const csr *L, const gstat_i_eigs_options *opt, const result *r,
                        bool all_converged) {
  int64_t n = L->n, k = opt->k;
  double tol = opt->tol > 0 ? opt->tol : 1e-8, scale = r->rep.scale, worst = 0;
  double *y = malloc(sizeof(double) * (size_t)n);
  int64_t conv = 0;
  for (int64_t c = 0; c < k; c++) {
    const double *v = r->V + c * n;
    naive_apply(L, v, y);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (y[i] - r->w[c] * v[i]) * (y[i] - r->w[c] * v[i]);
    double res = sqrt(acc), thr = tol * fmax(fabs(r->w[c]), scale);
    assert_true(isfinite(res));
    assert_true(fabs(res - r->res[c]) <= 1e-9 * scale + 1e-3 * res);
    if (res <= thr * (1 + 1e-6)) conv++;
    if (all_converged) assert_true(res <= thr * (1 + 1e-6));
    worst = fmax(worst, res);
    int64_t arg = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(v[i]) > fabs(v[arg])) arg = i;
    assert_true(v[arg] > 0);
    if (c > 0) assert_true(r->w[c] >= r->w[c - 1]);
    for (int64_t d = 0; d <= c; d++) {
      double dot = 0;
      for (int64_t i = 0; i < n; i++) dot += v[i] * r->V[i + d * n];
      assert_true(fabs(dot - (c == d)) < 1e-10);
    }
  }
  assert_true(fabs(worst - r->rep.max_residual) <= 1e-9 * scale + 1e-3 * worst);
  if (all_converged) assert_int_equal(r->rep.converged, k);
  assert_true(conv >= r->rep.converged);
  free(y);
}

/* Agreement with the dense eigenvalues lam (ascending): |lambda - dense| <=
 * residual bound. */
static void check_against_dense(const double *lam, const result *r, int64_t k) {
  for (int64_t c = 0; c < k; c++) {
    /* Weyl/Kato: each Ritz value is within its residual of an eigenvalue;
     * in order, the i-th is within the largest residual of lambda_i */
    double err = fabs(r->w[c] - lam[c]);
    if (!(err <= r->rep.max_residual + 1e-12 * r->rep.scale))
      fail_msg("pair %lld: %.17g vs dense %.17g (max residual %.3g)", (long long)c, r->w[c], lam[c],
               r->rep.max_residual);
  }
}

static double *eigenvalues_of(const double *dense, int64_t n) {
  double *lam = malloc(sizeof(double) * (size_t)n);
  dense_eigenvalues(n, dense, lam);
  return lam;
}

static const gstat_i_eigs_method METHODS[] = {GSTAT_I_EIGS_CHEBYSHEV_DAVIDSON,
                                              GSTAT_I_EIGS_BLOCK_LANCZOS};

/* One graph through both methods (block k), normalized and not; with
 * `simple` (no repeated eigenvalue among the k) also with a block of 1
 * (auto: Lanczos), projecting every step and with partial
 * reorthogonalization. */
static void run_graph(const edges *e, int64_t k, double tol, bool simple) {
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  assert_non_null(ctx);
  for (int normed = 0; normed < 2; normed++) {
    csr L;
    double upper;
    double *dense = laplacian(e, normed, &L, &upper), *lam = eigenvalues_of(dense, L.n);
    for (int m = 0; m < 2 + 2 * simple; m++) {
      gstat_i_eigs_options opt = {.k = k, .tol = tol, .seed = 7, .upper = upper};
      if (m < 2)
        opt.method = METHODS[m];
      else
        opt.block = 1, opt.partial_reorth = m == 2 ? -1 : 1;
      result r = solve(ctx, &L, &opt);
      if (r.status != GSTAT_OK) fail_msg("%s", gstat_ctx_last_error(ctx));
      assert_int_equal(r.rep.dense, 0);
      check_pairs(&L, &opt, &r, true);
      check_against_dense(lam, &r, k);
      if (m == 3) assert_true(r.rep.whole_steps < r.rep.iterations);
      result_free(&r);
    }
    free(lam);
    free(dense);
    csr_free(&L);
  }
  gstat_ctx_destroy(ctx);
}

/* ---- tests ---- */

static void test_path(void **state) {
  (void)state;
  edges e = path(tu_quick() ? 180 : 300);
  run_graph(&e, 6, 1e-8, true);
  edges_free(&e);
}

static void test_ring(void **state) {
  (void)state;
  /* eigenvalues 0 and pairs: the pairs need a block >= 2 (default: k) */
  edges e = ring(tu_quick() ? 160 : 240);
  run_graph(&e, 5, 1e-9, false);
  edges_free(&e);
}

static void test_grid(void **state) {
  (void)state;
  /* square: pairs again (k = 6 ends after a pair) */
  edges e = tu_quick() ? grid(14, 14) : grid(16, 16);
  run_graph(&e, 6, 1e-8, false);
  edges_free(&e);
}

static void test_knn(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  edges e = knn(&rng, tu_quick() ? 180 : 500, 8);
  run_graph(&e, 6, 1e-8, true);
  edges_free(&e);
}

static void test_sbm(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  int64_t size = tu_quick() ? 50 : 120;
  edges e = sbm(&rng, 4, size, 0.25, 0.01);
  run_graph(&e, 4, 1e-8, true);
  /* the 4 eigenvectors of the normalized Laplacian nearly span the block
   * indicators scaled by D^1/2: each block's vector is well inside span(V) */
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  csr L;
  double upper;
  double *dense = laplacian(&e, true, &L, &upper);
  gstat_i_eigs_options opt = {.k = 4, .tol = 1e-8, .seed = 3, .upper = upper};
  result r = solve(ctx, &L, &opt);
  assert_int_equal(r.status, GSTAT_OK);
  int64_t n = L.n;
  double *u = malloc(sizeof(double) * (size_t)n);
  for (int blk = 0; blk < 4; blk++) {
    /* D^1/2 1_block: the degree of a node is its number of edges */
    double nrm = 0;
    for (int64_t i = 0; i < n; i++) u[i] = 0;
    for (int64_t t = 0; t < e.count; t++) {
      if (e.i[t] / size == blk) u[e.i[t]] += 1;
      if (e.j[t] / size == blk) u[e.j[t]] += 1;
    }
    for (int64_t i = 0; i < n; i++) {
      u[i] = sqrt(u[i]);
      nrm += u[i] * u[i];
    }
    double inside = 0;
    for (int c = 0; c < 4; c++) {
      double dot = 0;
      for (int64_t i = 0; i < n; i++) dot += u[i] * r.V[i + c * n];
      inside += dot * dot;
    }
    assert_true(inside / nrm > 0.9);
  }
  free(u);
  free(dense);
  csr_free(&L);
  result_free(&r);
  gstat_ctx_destroy(ctx);
  edges_free(&e);
}

/* Four components (eigenvalue 0 four times) through both methods; then
 * their null vectors given as known: the same pairs in fewer products. */
static void test_disconnected(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  bool q = tu_quick();
  /* components: a path, a ring, a kNN graph, a single edge: 4 zeros */
  int64_t sizes[4] = {q ? 60 : 80, q ? 60 : 90, q ? 60 : 110, 2};
  edges e = join(join(path(sizes[0]), ring(sizes[1])), join(knn(&rng, sizes[2], 6), path(2)));
  /* a random kNN graph of 60 points may split: a path through it keeps it one */
  for (int64_t i = sizes[0] + sizes[1]; i + 1 < sizes[0] + sizes[1] + sizes[2]; i++)
    edge(&e, i, i + 1, 1);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double *a = adjacency(&e), *U = calloc((size_t)(4 * e.n), sizeof(double));
  for (int normed = 0; normed < 2; normed++) {
    csr L;
    double upper;
    double *dense = laplacian(&e, normed, &L, &upper), *lam = eigenvalues_of(dense, L.n);
    /* the null vectors, one per component (D^1/2 1_c or 1_c, normalized) */
    for (int64_t c = 0, at = 0; c < 4; at += sizes[c++]) {
      double t = 0;
      for (int64_t i = at; i < at + sizes[c]; i++) {
        double d = 0;
        for (int64_t j = 0; j < e.n; j++) d += a[i + j * e.n];
        U[i + c * e.n] = normed ? sqrt(d) : 1;
        t += U[i + c * e.n] * U[i + c * e.n];
      }
      for (int64_t i = at; i < at + sizes[c]; i++) U[i + c * e.n] /= sqrt(t);
    }
    int64_t applies_without = 0;
    /* both methods, then the null vectors given (the search for two), also
     * to a block of 1 (which projects them out of its basis), the last with
     * partial reorthogonalization (which tracks them) */
    for (size_t m = 0; m < 5; m++) {
      gstat_i_eigs_options opt = {
          .k = 6, .tol = 1e-9, .seed = 11, .upper = upper, .method = METHODS[m % 2]};
      if (m >= 2) opt.known = U, opt.n_known = 4, opt.method = GSTAT_I_EIGS_AUTO;
      if (m >= 3) opt.block = 1, opt.partial_reorth = m == 4 ? 1 : -1;
      result r = solve(ctx, &L, &opt);
      if (m == 0) applies_without = r.rep.operator_applies;
      if (m >= 2) assert_true(3 * r.rep.operator_applies < 2 * applies_without);
      if (m == 4) assert_true(r.rep.whole_steps < r.rep.iterations);
      if (r.status != GSTAT_OK) fail_msg("%s", gstat_ctx_last_error(ctx));
      assert_int_equal(r.rep.dense, 0);
      check_pairs(&L, &opt, &r, true);
      check_against_dense(lam, &r, opt.k);
      int zeros = 0;
      for (int c = 0; c < 6; c++) zeros += fabs(r.w[c]) < 1e-7;
      assert_int_equal(zeros, 4);
      result_free(&r);
    }
    free(lam);
    free(dense);
    csr_free(&L);
  }
  free(a);
  free(U);
  gstat_ctx_destroy(ctx);
  edges_free(&e);
}

/* Partial reorthogonalization (block 1) against projecting every step: the
 * same pairs in fewer whole-basis steps. A 2-D kNN graph with a long basis:
 * the estimates ask for whole steps within a cycle. A long path, where
 * Ritz vectors converge far within long cycles: with restarts that carried
 * the whole steps' coefficients into the kept vectors' relation, the loss
 * doubled every cycle (bench/README.md); now it stays at rounding. */
static void test_partial_reorth(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  bool q = tu_quick();
  edges graphs[2] = {knn(&rng, q ? 700 : 1200, 8), path(q ? 1500 : 2500)};
  int64_t basis[2] = {100, 120};
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  for (int g = 0; g < 2; g++) {
    csr L;
    double upper;
    double *dense = laplacian(&graphs[g], true, &L, &upper), *lam = eigenvalues_of(dense, L.n);
    int64_t iters = 0;
    for (int reorth = -1; reorth <= 1; reorth += 2) {
      gstat_i_eigs_options opt = {.k = 6,
                                  .tol = 1e-10,
                                  .seed = 5,
                                  .upper = upper,
                                  .block = 1,
                                  .basis = basis[g],
                                  .partial_reorth = reorth};
      result r = solve(ctx, &L, &opt);
      if (r.status != GSTAT_OK) fail_msg("%s", gstat_ctx_last_error(ctx));
      check_pairs(&L, &opt, &r, true);
      check_against_dense(lam, &r, opt.k);
      if (reorth < 0) {
        assert_int_equal(r.rep.whole_steps, r.rep.iterations);
        iters = r.rep.iterations;
      } else {
        assert_true(r.rep.iterations <= iters + iters / 10);
        /* more than the first step after each restart, at most a quarter */
        assert_true(r.rep.whole_steps > r.rep.restarts + 1 &&
                    4 * r.rep.whole_steps <= r.rep.iterations);
      }
      result_free(&r);
    }
    free(lam);
    free(dense);
    csr_free(&L);
    edges_free(&graphs[g]);
  }
  gstat_ctx_destroy(ctx);
}

/* Graphs with few distinct eigenvalues exhaust the Krylov space after a
 * step or two: the block loses rank, its deflated columns are replaced by
 * random ones, and the repeated eigenvalue still comes out k - 1 times.
 * Complete graph: 0 and n (n - 1 times); star: 0, 1 (n - 2 times), n. */
static void test_exhausted(void **state) {
  (void)state;
  int64_t n = 120;
  edges complete = edges_new(n), star = edges_new(n);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = i + 1; j < n; j++) edge(&complete, i, j, 1);
    if (i > 0) edge(&star, 0, i, 1);
  }
  const edges *graphs[] = {&complete, &star};
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  for (int g = 0; g < 2; g++)
    for (int normed = 0; normed < 2; normed++) {
      csr L;
      double upper;
      double *dense = laplacian(graphs[g], normed, &L, &upper), *lam = eigenvalues_of(dense, n);
      /* both methods with a block of k, then Lanczos with a block of 1: its
       * deflated columns (found after both rounds of one read back) must give
       * true, orthonormal pairs, though a block of 1 may miss copies of a
       * repeated eigenvalue (it finds one eigenvalue more, at 1e-13 residual) */
      for (size_t m = 0; m <= sizeof METHODS / sizeof *METHODS; m++) {
        gstat_i_eigs_options opt = {.k = 4, .tol = 1e-10, .seed = 2, .upper = upper, .basis = 16};
        if (m < sizeof METHODS / sizeof *METHODS)
          opt.method = METHODS[m];
        else
          opt.block = 1;
        result r = solve(ctx, &L, &opt);
        if (r.status != GSTAT_OK) fail_msg("%s", gstat_ctx_last_error(ctx));
        assert_int_equal(r.rep.dense, 0);
        assert_true(r.rep.deflated > 0);
        check_pairs(&L, &opt, &r, true);
        if (opt.block == 0)
          check_against_dense(lam, &r, opt.k);
        else
          assert_true(fabs(r.w[0] - lam[0]) < 1e-9);
        result_free(&r);
      }
      free(lam);
      free(dense);
      csr_free(&L);
    }
  gstat_ctx_destroy(ctx);
  edges_free(&complete);
  edges_free(&star);
}

/* No upper bound given: the Davidson method estimates one; the scale then
 * comes from that estimate. */
static void test_no_upper(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  edges e = knn(&rng, tu_quick() ? 180 : 400, 7);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  for (int normed = 0; normed < 2; normed++) {
    csr L;
    double upper;
    double *dense = laplacian(&e, normed, &L, &upper);
    double *lam = malloc(sizeof(double) * (size_t)L.n);
    dense_eigenvalues(L.n, dense, lam);
    for (size_t m = 0; m < sizeof METHODS / sizeof *METHODS; m++) {
      gstat_i_eigs_options opt = {.k = 5, .tol = 1e-8, .seed = 5, .method = METHODS[m]};
      result r = solve(ctx, &L, &opt);
      if (r.status != GSTAT_OK) fail_msg("%s", gstat_ctx_last_error(ctx));
      assert_int_equal(r.rep.dense, 0);
      /* the scale is an estimate of ||L||, at most a little above it */
      assert_true(r.rep.scale >= 0.5 * lam[L.n - 1] && r.rep.scale <= 1.5 * upper);
      check_pairs(&L, &opt, &r, true);
      check_against_dense(lam, &r, opt.k);
      result_free(&r);
    }
    free(lam);
    free(dense);
    csr_free(&L);
  }
  gstat_ctx_destroy(ctx);
  edges_free(&e);
}

/* Small n (and k close to n): the dense fallback, exact. */
static void test_dense_fallback(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  struct {
    int64_t n, k;
  } cases[] = {{1, 1}, {2, 2}, {5, 3}, {30, 4}, {40, 40}};
  for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
    edges e = ring(cases[t].n);
    csr L;
    double upper;
    double *dense = laplacian(&e, true, &L, &upper), *lam = eigenvalues_of(dense, L.n);
    gstat_i_eigs_options opt = {.k = cases[t].k, .tol = 1e-10, .upper = upper};
    result r = solve(ctx, &L, &opt);
    if (r.status != GSTAT_OK)
      fail_msg("n=%lld: %s", (long long)cases[t].n, gstat_ctx_last_error(ctx));
    assert_int_equal(r.rep.dense, 1);
    assert_int_equal(r.rep.iterations, 0);
    assert_int_equal(r.rep.operator_applies, cases[t].n + cases[t].k);
    check_pairs(&L, &opt, &r, true);
    check_against_dense(lam, &r, opt.k);
    result_free(&r);
    free(lam);
    free(dense);
    csr_free(&L);
    edges_free(&e);
  }
  gstat_ctx_destroy(ctx);
}

/* The same seed gives bitwise the same answer, on the same and on another
 * context; another seed a different start (same eigenvalues). */
static void test_deterministic(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  edges e = knn(&rng, tu_quick() ? 180 : 400, 8);
  csr L;
  double upper;
  double *dense = laplacian(&e, true, &L, &upper);
  gstat_ctx *c1 = tu_ctx(GSTAT_BACKEND_CPU), *c2 = tu_ctx(GSTAT_BACKEND_CPU);
  for (size_t m = 0; m < sizeof METHODS / sizeof *METHODS; m++) {
    gstat_i_eigs_options opt = {
        .k = 5, .tol = 1e-9, .seed = 42, .upper = upper, .method = METHODS[m]};
    result a = solve(c1, &L, &opt), b = solve(c1, &L, &opt), c = solve(c2, &L, &opt);
    assert_int_equal(a.status, GSTAT_OK);
    assert_int_equal(a.rep.dense, 0);
    result *others[] = {&b, &c};
    for (int o = 0; o < 2; o++) {
      const result *x = others[o];
      assert_memory_equal(a.w, x->w, sizeof(double) * 5);
      assert_memory_equal(a.V, x->V, sizeof(double) * (size_t)(5 * L.n));
      assert_memory_equal(a.res, x->res, sizeof(double) * 5);
      assert_int_equal(a.rep.iterations, x->rep.iterations);
      assert_int_equal(a.rep.operator_applies, x->rep.operator_applies);
    }
    opt.seed = 43;
    result d = solve(c1, &L, &opt);
    assert_int_equal(d.status, GSTAT_OK);
    assert_true(memcmp(a.V, d.V, sizeof(double) * (size_t)(5 * L.n)) != 0);
    for (int i = 0; i < 5; i++) assert_true(fabs(a.w[i] - d.w[i]) < 1e-8);
    result_free(&a);
    result_free(&b);
    result_free(&c);
    result_free(&d);
  }
  gstat_ctx_destroy(c1);
  gstat_ctx_destroy(c2);
  free(dense);
  csr_free(&L);
  edges_free(&e);
}

/* max_iter too small: ENOCONV with the best estimates filled in, finite,
 * orthonormal, residuals reported honestly, and a message. */
static void test_not_converged(void **state) {
  (void)state;
  edges e = path(tu_quick() ? 180 : 400);
  csr L;
  double upper;
  double *dense = laplacian(&e, true, &L, &upper), *lam = eigenvalues_of(dense, L.n);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  for (size_t m = 0; m < sizeof METHODS / sizeof *METHODS; m++) {
    gstat_i_eigs_options opt = {
        .k = 6, .tol = 1e-10, .max_iter = 2, .seed = 1, .upper = upper, .method = METHODS[m]};
    result r = solve(ctx, &L, &opt);
    assert_int_equal(r.status, GSTAT_ENOCONV);
    assert_non_null(strstr(gstat_ctx_last_error(ctx), "converged"));
    assert_int_equal(r.rep.dense, 0);
    assert_true(r.rep.converged < opt.k);
    assert_true(r.rep.iterations >= 1 && r.rep.iterations <= 3);
    assert_true(r.rep.max_residual > 0);
    check_pairs(&L, &opt, &r, false);
    /* Ritz values are upper bounds of the eigenvalues (Cauchy interlacing) */
    for (int c = 0; c < 6; c++) assert_true(r.w[c] >= lam[c] - 1e-12);
    result_free(&r);
  }
  gstat_ctx_destroy(ctx);
  free(lam);
  free(dense);
  csr_free(&L);
  edges_free(&e);
}

/* ---- operators that misbehave ---- */

typedef struct {
  csr *L;
  int64_t calls, fail_at;
  gstat_status fail_with;
} wrapped;

static gstat_status bad_apply(gstat_ctx *ctx, void *op, int64_t n, int64_t m, const double *X,
                              double *Y) {
  wrapped *w = op;
  gstat_i_csr c = {w->L->n, w->L->off, w->L->idx, w->L->val};
  gstat_status st = gstat_i_csr_apply(ctx, &c, n, m, X, Y);
  if (++w->calls == w->fail_at) {
    if (w->fail_with == GSTAT_ENOTFINITE) {
      Y[n / 2] = NAN;
      return GSTAT_OK;
    }
    return gstat_i_fail(ctx, w->fail_with, "test operator failed on call %lld",
                        (long long)w->calls);
  }
  return st;
}

static int cancel_after(int64_t done, int64_t total, const char *what, void *user) {
  (void)total;
  assert_string_equal(what, "sparse_eigs");
  int *calls = user;
  return ++*calls >= 3 && done > 0;
}

static void test_bad_operator(void **state) {
  (void)state;
  edges e = path(200);
  csr L;
  double upper;
  double *dense = laplacian(&e, true, &L, &upper);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  double w[4], V[4 * 200];
  for (size_t m = 0; m < sizeof METHODS / sizeof *METHODS; m++) {
    gstat_i_eigs_options opt = {.k = 4, .tol = 1e-10, .upper = upper, .method = METHODS[m]};
    for (int64_t at = 1; at <= 5; at += 2) {
      wrapped wr = {&L, 0, at, GSTAT_ENOTFINITE};
      assert_int_equal(gstat_i_sparse_eigs(ctx, 200, bad_apply, &wr, &opt, w, V, NULL, NULL),
                       GSTAT_ENOTFINITE);
      assert_non_null(strstr(gstat_ctx_last_error(ctx), "NaN or Inf"));
      wrapped wf = {&L, 0, at, GSTAT_EBACKEND};
      assert_int_equal(gstat_i_sparse_eigs(ctx, 200, bad_apply, &wf, &opt, w, V, NULL, NULL),
                       GSTAT_EBACKEND);
      assert_non_null(strstr(gstat_ctx_last_error(ctx), "test operator failed"));
    }
  }
  gstat_ctx_destroy(ctx);

  /* cancellation through the progress callback */
  int calls = 0;
  gstat_ctx *cc = tu_ctx_progress(GSTAT_BACKEND_AUTO, 0, cancel_after, &calls);
  assert_non_null(cc);
  gstat_i_csr op = {L.n, L.off, L.idx, L.val};
  gstat_i_eigs_options opt = {.k = 4, .tol = 1e-12, .upper = upper, .basis = 20};
  assert_int_equal(gstat_i_sparse_eigs(cc, 200, gstat_i_csr_apply, &op, &opt, w, V, NULL, NULL),
                   GSTAT_ECANCELED);
  assert_true(calls >= 3);
  gstat_ctx_destroy(cc);
  free(dense);
  csr_free(&L);
  edges_free(&e);
}

static void test_bad_input(void **state) {
  (void)state;
  edges e = path(100);
  csr L;
  double upper;
  double *dense = laplacian(&e, true, &L, &upper);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_i_csr op = {L.n, L.off, L.idx, L.val};
  double w[8], V[8 * 100];
  const gstat_i_eigs_options good = {.k = 3, .tol = 1e-8, .upper = 2};
  struct {
    gstat_i_eigs_options opt;
    int64_t n;
    const char *msg;
  } cases[] = {
      {{.k = 0}, 100, "k=0"},
      {{.k = 101}, 100, "k=101"},
      {{.k = 1}, 0, "k=1"},
      {{.k = 3, .tol = -1}, 100, "tol=-1"},
      {{.k = 3, .tol = NAN}, 100, "tol=nan"},
      {{.k = 3, .upper = -2}, 100, "upper=-2"},
      {{.k = 3, .upper = INFINITY}, 100, "upper=inf"},
      {{.k = 3, .max_iter = -1}, 100, "max_iter"},
      {{.k = 3, .block = -1}, 100, "block"},
      {{.k = 3, .block = 1000}, 100, "block"},
      {{.k = 3, .degree = -1}, 100, "degree"},
      {{.k = 3, .method = (gstat_i_eigs_method)7}, 100, "method"},
      {{.k = 3, .block = 2, .basis = 6}, 100, "basis=6"},
      {{.k = 3, .block = 2, .basis = 4, .method = GSTAT_I_EIGS_BLOCK_LANCZOS}, 100, "basis=4"},
  };
  for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
    memset(w, 0x5a, sizeof w);
    assert_int_equal(gstat_i_sparse_eigs(ctx, cases[t].n, gstat_i_csr_apply, &op, &cases[t].opt, w,
                                         V, NULL, NULL),
                     GSTAT_EINVAL);
    if (!strstr(gstat_ctx_last_error(ctx), cases[t].msg))
      fail_msg("case %zu: '%s' lacks '%s'", t, gstat_ctx_last_error(ctx), cases[t].msg);
    for (size_t i = 0; i < sizeof w; i++) assert_int_equal(((unsigned char *)w)[i], 0x5a);
  }
  assert_int_equal(gstat_i_sparse_eigs(ctx, 100, NULL, &op, &good, w, V, NULL, NULL), GSTAT_EINVAL);
  assert_int_equal(gstat_i_sparse_eigs(ctx, 100, gstat_i_csr_apply, &op, NULL, w, V, NULL, NULL),
                   GSTAT_EINVAL);
  assert_int_equal(
      gstat_i_sparse_eigs(ctx, 100, gstat_i_csr_apply, &op, &good, NULL, V, NULL, NULL),
      GSTAT_EINVAL);
  assert_int_equal(
      gstat_i_sparse_eigs(ctx, 100, gstat_i_csr_apply, &op, &good, w, NULL, NULL, NULL),
      GSTAT_EINVAL);
  assert_int_equal(gstat_i_sparse_eigs(NULL, 100, gstat_i_csr_apply, &op, &good, w, V, NULL, NULL),
                   GSTAT_EINVAL);
  /* the operator's size disagrees: its own EINVAL comes through */
  assert_int_equal(gstat_i_sparse_eigs(ctx, 99, gstat_i_csr_apply, &op, &good, w, V, NULL, NULL),
                   GSTAT_EINVAL);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "csr_apply"));
  gstat_ctx_destroy(ctx);
  free(dense);
  csr_free(&L);
  edges_free(&e);
}

/* ---- the CSR product ---- */

static void test_csr_apply(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  int64_t n = tu_quick() ? 2000 : 5000; /* above the product's threading threshold */
  csr a = {n, 0, calloc((size_t)n + 1, sizeof(int64_t)), NULL, NULL};
  a.idx = malloc(sizeof(int64_t) * (size_t)(n * 40));
  a.val = malloc(sizeof(double) * (size_t)(n * 40));
  for (int64_t i = 0; i < n; i++) {
    /* empty rows, short rows, a few heavy rows (to unbalance a row split) */
    int64_t len = i % 7 == 3 ? 0 : i % 97 == 5 ? 39 : (int64_t)(tu_uniform(&rng) * 8);
    for (int64_t t = 0; t < len; t++) {
      a.idx[a.nnz] = (int64_t)(tu_uniform(&rng) * (double)n);
      a.val[a.nnz++] = tu_normal(&rng);
    }
    a.off[i + 1] = a.nnz;
  }
  int64_t ms[] = {1, 2, 3, 7, 8, 9, 17};
  double *X = malloc(sizeof(double) * (size_t)(n * 17)),
         *Y = malloc(sizeof(double) * (size_t)(n * 17));
  double *R = malloc(sizeof(double) * (size_t)(n * 17));
  for (int64_t i = 0; i < n * 17; i++) X[i] = tu_normal(&rng);
  int threads[] = {1, 3};
  for (int t = 0; t < 2; t++) {
    gstat_ctx_options o;
    gstat_ctx_options_init(&o);
    o.num_threads = threads[t];
    gstat_ctx *ctx = NULL;
    assert_int_equal(gstat_ctx_create(&ctx, &o), GSTAT_OK);
    for (int with_values = 0; with_values < 2; with_values++) {
      csr view = a;
      if (!with_values) view.val = NULL;
      gstat_i_csr op = {n, view.off, view.idx, view.val};
      for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++) {
        int64_t m = ms[mi];
        memset(Y, 0x7f, sizeof(double) * (size_t)(n * m));
        assert_int_equal(gstat_i_csr_apply(ctx, &op, n, m, X, Y), GSTAT_OK);
        for (int64_t c = 0; c < m; c++) naive_apply(&view, X + c * n, R + c * n);
        /* the same summation order: bitwise equal */
        assert_memory_equal(Y, R, sizeof(double) * (size_t)(n * m));
      }
    }
    gstat_i_csr op = {n, a.off, a.idx, a.val};
    assert_int_equal(gstat_i_csr_apply(ctx, &op, n, 0, X, Y), GSTAT_OK);
    assert_int_equal(gstat_i_csr_apply(ctx, &op, n - 1, 1, X, Y), GSTAT_EINVAL);
    assert_non_null(strstr(gstat_ctx_last_error(ctx), "csr_apply"));
    gstat_ctx_destroy(ctx);
  }
  free(X);
  free(Y);
  free(R);
  csr_free(&a);
}

/* The breadth-first renumbering the sparse spectral path solves on
 * (src/graph/graph_order.c), on a graph given as a borrowed slice (offsets
 * from 7, indices from 1), with and without weights: two shuffled chains,
 * an isolated node and a hub of 600 neighbours (a row sorted by qsort, not
 * by insertion). The order is a permutation in which every node but a
 * component's first has a neighbour before it; the copy has rows strictly
 * increasing and exactly the entries of the graph, renamed. */
static void test_renumbered_graph(void **state) {
  (void)state;
  enum { N = 2000, LEAD = 7 };
  tu_rng rng = tu_rng_new();
  int64_t p[N];
  for (int64_t i = 0; i < N; i++) p[i] = i;
  for (int64_t i = N - 1; i > 0; i--) {
    int64_t j = (int64_t)(tu_uniform(&rng) * (double)(i + 1)), t = p[i];
    p[i] = p[j], p[j] = t;
  }
  /* dense 0/1 adjacency for the reference, then the CSR slice */
  unsigned char *adj = calloc((size_t)N * N, 1);
  for (int64_t i = 0; i + 1 < N - 1; i++)
    if (i != 1499) adj[p[i] * N + p[i + 1]] = adj[p[i + 1] * N + p[i]] = 1;
  for (int64_t k = 1; k <= 600; k++) adj[p[0] * N + p[2 * k]] = adj[p[2 * k] * N + p[0]] = 1;
  int64_t *off = malloc(sizeof(int64_t) * (N + 1)), nnz = 0;
  for (int64_t i = 0; i < N * N; i++) nnz += adj[i];
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)(nnz + LEAD));
  double *wt = malloc(sizeof(double) * (size_t)(nnz + LEAD));
  int64_t e = LEAD;
  for (int64_t i = 0; i < N; i++) {
    off[i] = e;
    for (int64_t j = 0; j < N; j++)
      if (adj[i * N + j]) idx[e] = j + 1, wt[e++] = 1.0 + (double)((i + j) % 5);
  }
  off[N] = e;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  int64_t order[N], inv[N];
  unsigned char seen[N];
  for (int weighted = 0; weighted < 2; weighted++) {
    gstat_i_graph g = {N, nnz, off, idx, weighted ? wt : NULL, 1, NULL, 0}, r;
    gstat_i_graph_bfs_order(&g, order, seen);
    for (int64_t i = 0; i < N; i++) inv[i] = -1;
    for (int64_t i = 0; i < N; i++) {
      assert_true(order[i] >= 0 && order[i] < N && inv[order[i]] < 0);
      inv[order[i]] = i;
    }
    int64_t roots = 0;
    for (int64_t i = 0; i < N; i++) {
      bool reached = false;
      for (int64_t t = off[order[i]]; t < off[order[i] + 1]; t++) reached |= inv[idx[t] - 1] < i;
      roots += !reached;
    }
    assert_int_equal(roots, 3); /* the two chains (the hub joins the first) and the lone node */
    assert_int_equal(gstat_i_graph_renumbered(ctx, "test", &g, order, &r), GSTAT_OK);
    assert_int_equal(r.offsets[0], 0);
    assert_int_equal(r.base, 0);
    assert_int_equal(r.offsets[N], nnz);
    for (int64_t i = 0; i < N; i++) {
      assert_int_equal(r.offsets[i + 1] - r.offsets[i], off[order[i] + 1] - off[order[i]]);
      for (int64_t t = r.offsets[i]; t < r.offsets[i + 1]; t++) {
        int64_t a = order[i], b = order[r.indices[t]];
        assert_true(t == r.offsets[i] || r.indices[t] > r.indices[t - 1]);
        assert_true(adj[a * N + b]);
        assert_true(r.weights[t] == (weighted ? 1.0 + (double)((a + b) % 5) : 1.0));
      }
    }
    gstat_i_graph_release(ctx, &r);
  }
  gstat_ctx_destroy(ctx);
  free(adj);
  free(off);
  free(idx);
  free(wt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csr_apply),
      cmocka_unit_test(test_path),
      cmocka_unit_test(test_renumbered_graph),
      cmocka_unit_test(test_ring),
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_knn),
      cmocka_unit_test(test_sbm),
      cmocka_unit_test(test_disconnected),
      cmocka_unit_test(test_exhausted),
      cmocka_unit_test(test_partial_reorth),
      cmocka_unit_test(test_no_upper),
      cmocka_unit_test(test_dense_fallback),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_not_converged),
      cmocka_unit_test(test_bad_operator),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
