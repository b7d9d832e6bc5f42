/* Spectral embedding and clustering: quality (adjusted Rand index) against
 * the ground truth and scikit-learn's SpectralClustering on blobs, moons,
 * circles (kNN affinity), a stochastic block model and Zachary's karate
 * club; the eigengap; embeddings against gstat_eigh of the Laplacian; the
 * sparse path against the dense one; batches equal to one-at-a-time calls
 * (ragged CSR and padded dense, any thread count); edge cases (1- and
 * 2-node graphs, k = n, k > n, empty and disconnected graphs); progress and
 * cancel; and the bad-input table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph_ref.h"
#include "testutil.h"

static gref REF;

static const gref_entry *get(const char *fmt, const char *name) {
  char key[96];
  snprintf(key, sizeof key, fmt, name);
  const gref_entry *e = gref_get(&REF, key);
  if (!e) fprintf(stderr, "missing reference %s\n", key);
  assert_non_null(e);
  return e;
}

static int64_t *as_labels(const gref_entry *e) {
  int64_t n = e->rows * e->cols, *l = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t i = 0; i < n; i++) l[i] = (int64_t)e->v[i];
  return l;
}

/* The graph of a reference data set: scikit-learn's kNN affinity of its
 * points (10 neighbours, the point itself included, (C + C^T) / 2), or its
 * adjacency. The CSR is library-owned (free with gstat_csr_free). */
static gstat_csr *dataset_graph(gstat_ctx *ctx, const char *name, int64_t *n) {
  char key[96];
  snprintf(key, sizeof key, "cluster/%s/X", name);
  const gref_entry *X = gref_get(&REF, key);
  gstat_csr *c = NULL;
  if (X) {
    gstat_matrix Xm = gstat_matrix_row_major(X->v, GSTAT_F64, 1, X->rows, X->cols);
    gstat_affinity_options o;
    gstat_affinity_options_init(&o);
    o.kind = GSTAT_AFFINITY_KNN;
    assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_OK);
  } else {
    const gref_entry *A = get("cluster/%s/adjacency", name);
    int64_t m = A->rows, cnt = 0;
    int64_t *s = malloc(sizeof(int64_t) * (size_t)(m * m)),
            *t = malloc(sizeof(int64_t) * (size_t)(m * m));
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < m; j++)
        if (A->v[i * m + j] != 0) {
          s[cnt] = i;
          t[cnt++] = j;
        }
    assert_int_equal(gstat_csr_from_edges(ctx, m, cnt, s, t, NULL, GSTAT_SYM_CHECK, &c), GSTAT_OK);
    free(s);
    free(t);
  }
  *n = c->n;
  return c;
}

static void test_quality_vs_sklearn(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const char *sets[] = {"blobs", "moons", "circles", "sbm", "karate"};
  for (int s = 0; s < 5; s++) {
    int64_t n;
    gstat_csr *c = dataset_graph(ctx, sets[s], &n);
    int64_t *truth = as_labels(get("cluster/%s/truth", sets[s]));
    int64_t *skl = as_labels(get("cluster/%s/sklearn", sets[s]));
    double skl_ari = get("cluster/%s/sklearn_ari", sets[s])->v[0];
    int64_t k = (int64_t)get("cluster/%s/k", sets[s])->v[0];
    int64_t *lab = malloc(sizeof(int64_t) * (size_t)n);
    gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    o.n_clusters = k;
    gstat_spectral_result *res = NULL;
    assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
    double a_truth = ari(lab, truth, n), a_skl = ari(lab, skl, n);
    assert_int_equal(res->n_clusters, k);
    assert_int_equal(res->n, n);
    assert_int_equal(res->n_components, k);
    assert_int_equal(res->n_eigenvalues, k);
    assert_true(res->eigenvalues[0] >= -1e-12 && res->eigenvalues[0] <= 1e-10);
    assert_true(res->inertia >= 0 && isfinite(res->inertia));
    /* cluster-QR and Ng-Jordan-Weiss rows on the same graph */
    o.assign = GSTAT_ASSIGN_CLUSTER_QR;
    int64_t *lab_qr = malloc(sizeof(int64_t) * (size_t)n);
    assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab_qr, NULL), GSTAT_OK);
    o.assign = GSTAT_ASSIGN_KMEANS;
    o.laplacian = GSTAT_LAPLACIAN_SYMMETRIC;
    o.normalize_rows = 1;
    int64_t *lab_njw = malloc(sizeof(int64_t) * (size_t)n);
    assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab_njw, NULL), GSTAT_OK);
    int64_t *skl_qr = as_labels(get("cluster/%s/sklearn_qr", sets[s]));
    printf(
        "  %-8s n=%3lld k=%lld ARI vs truth: gstat %.4f (cluster-QR %.4f, NJW %.4f), "
        "scikit-learn %.4f (cluster-QR %.4f); gstat vs scikit-learn %.4f (cluster-QR %.4f)\n",
        sets[s], (long long)n, (long long)k, a_truth, ari(lab_qr, truth, n), ari(lab_njw, truth, n),
        skl_ari, ari(skl_qr, truth, n), a_skl, ari(lab_qr, skl_qr, n));
    assert_true(a_truth >= skl_ari - 1e-12);
    assert_true(ari(lab_qr, truth, n) >= ari(skl_qr, truth, n) - 1e-12);
    free(skl_qr);
    gstat_spectral_result_free(res);
    gstat_csr_free(c);
    free(truth);
    free(skl);
    free(lab);
    free(lab_qr);
    free(lab_njw);
  }
  gstat_ctx_destroy(ctx);
}

/* Stochastic block model: `blocks` blocks of `size`, dense row-major. */
static void sbm(tu_rng *rng, int64_t blocks, int64_t size, double pin, double pout, double *a) {
  int64_t n = blocks * size;
  memset(a, 0, sizeof(double) * (size_t)(n * n));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++)
      if (tu_uniform(rng) < (i / size == j / size ? pin : pout)) a[i * n + j] = a[j * n + i] = 1;
}

static void test_eigengap_and_embedding(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  int64_t n = 4 * 25;
  double *a = malloc(sizeof(double) * (size_t)(n * n));
  sbm(&rng, 4, 25, 0.5, 0.01, a);
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 1, n, n);
  gstat_graph G = gstat_graph_dense(&A);
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)n), truth[100];
  for (int64_t i = 0; i < n; i++) truth[i] = i / 25;
  gstat_spectral_result *res = NULL;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, NULL, lab, &res), GSTAT_OK); /* k: eigengap */
  assert_int_equal(res->n_clusters, 4);
  assert_int_equal(res->n_eigenvalues, 11);
  assert_true(ari(lab, truth, n) > 0.99);
  for (int64_t i = 0; i < n; i++) assert_int_equal(lab[i], i / 25); /* numbered by first node */
  gstat_spectral_result_free(res);

  /* embedding with drop_first: D^-1/2 times eigenvectors 2..4 of L_sym, signed */
  double *L = malloc(sizeof(double) * (size_t)(n * n)), w[100], deg[100];
  gstat_matrix Lm = gstat_matrix_col_major(L, GSTAT_F64, 1, n, n);
  gstat_matrix D = gstat_vector_batch(deg, GSTAT_F64, 1, n);
  assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, &D), GSTAT_OK);
  gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, n);
  assert_int_equal(gstat_eigh(ctx, &Lm, GSTAT_LOWER, &W, &Lm, NULL), GSTAT_OK);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_components = 3;
  o.drop_first = 1;
  double E[300], ev[4];
  gstat_matrix Em = gstat_matrix_row_major(E, GSTAT_F64, 1, n, 3);
  assert_int_equal(gstat_spectral_embedding(ctx, &G, &o, &Em, ev), GSTAT_OK);
  for (int64_t c = 0; c < 4; c++) assert_true(fabs(ev[c] - w[c]) <= 1e-12);
  for (int64_t c = 0; c < 3; c++) {
    double big = 0, sign = 1;
    for (int64_t i = 0; i < n; i++) {
      double v = L[i + (c + 1) * n] / sqrt(deg[i]);
      if (fabs(v) > big) {
        big = fabs(v);
        sign = v < 0 ? -1 : 1;
      }
    }
    for (int64_t i = 0; i < n; i++)
      assert_true(fabs(E[i * 3 + c] - sign * L[i + (c + 1) * n] / sqrt(deg[i])) <= 1e-10);
  }
  /* symmetric Laplacian, normalized rows: unit rows */
  o.laplacian = GSTAT_LAPLACIAN_SYMMETRIC;
  o.normalize_rows = 1;
  o.drop_first = 0;
  assert_int_equal(gstat_spectral_embedding(ctx, &G, &o, &Em, NULL), GSTAT_OK);
  for (int64_t i = 0; i < n; i++)
    assert_true(fabs(E[i * 3] * E[i * 3] + E[i * 3 + 1] * E[i * 3 + 1] +
                     E[i * 3 + 2] * E[i * 3 + 2] - 1) < 1e-12);
  free(a);
  free(L);
  free(lab);
  gstat_ctx_destroy(ctx);
}

/* The sparse path knows the null space of a disconnected graph (one null
 * vector per component, checked by one product): those eigenvalues come out
 * exactly 0, the solver searches only the rest, and the labels are the
 * components. Three rings of different sizes (their other eigenvalues come
 * in pairs) and an isolated node; both sparse solvers. */
static void test_known_null_space(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const int64_t sizes[3] = {500, 450, 400}, n = 500 + 450 + 400 + 1;
  int64_t *s = malloc(sizeof(int64_t) * (size_t)n), *t = malloc(sizeof(int64_t) * (size_t)n);
  int64_t m = 0, first = 0;
  for (int r = 0; r < 3; first += sizes[r++])
    for (int64_t i = 0; i < sizes[r]; i++, m++) {
      s[m] = first + i;
      t[m] = first + (i + 1) % sizes[r];
    }
  gstat_csr *c = NULL;
  assert_int_equal(gstat_csr_from_edges(ctx, n, m, s, t, NULL, GSTAT_SYM_MAX, &c), GSTAT_OK);
  gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)n);
  double *emb = malloc(sizeof(double) * (size_t)(6 * n)), w[6];
  gstat_matrix E = gstat_matrix_col_major(emb, GSTAT_F64, 1, n, 6);
  const gstat_eigen_solver solvers[2] = {GSTAT_EIGEN_SPARSE, GSTAT_EIGEN_LANCZOS};
  for (int v = 0; v < 2; v++) {
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    o.n_clusters = 4;
    o.solver = solvers[v];
    gstat_spectral_result *res = NULL;
    assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
    assert_int_equal(res->used_sparse, 1);
    assert_int_equal(res->graph_components, 4);
    for (int i = 0; i < 4; i++) assert_true(res->eigenvalues[i] == 0.0);
    for (int64_t i = 0; i < n; i++) /* components in the order of their first node */
      assert_int_equal(lab[i], i < 500 ? 0 : i < 950 ? 1 : i < 1350 ? 2 : 3);
    gstat_spectral_result_free(res);
    /* two pairs past the null space: the solver runs; the largest ring's
     * smallest nonzero eigenvalue 1 - cos(2 pi / 500) comes next */
    o.n_components = 6;
    o.drop_first = 0;
    assert_int_equal(gstat_spectral_embedding(ctx, &G, &o, &E, w), GSTAT_OK);
    for (int i = 0; i < 4; i++) assert_true(w[i] == 0.0);
    assert_true(fabs(w[4] - (1 - cos(2 * 3.14159265358979323846 / 500))) < 1e-9);
    assert_true(w[5] >= w[4] - 1e-12);
  }
  free(emb);
  free(lab);
  free(s);
  free(t);
  gstat_csr_free(c);
  gstat_ctx_destroy(ctx);
}

static void test_sparse_matches_dense(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  int64_t n;
  gstat_csr *c = dataset_graph(ctx, "moons", &n);
  gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = 2;
  int64_t *ld = malloc(sizeof(int64_t) * (size_t)n), *ls = malloc(sizeof(int64_t) * (size_t)n);
  gstat_spectral_result *rd = NULL, *rs = NULL;
  o.solver = GSTAT_EIGEN_DENSE;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, ld, &rd), GSTAT_OK);
  o.solver = GSTAT_EIGEN_SPARSE;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, ls, &rs), GSTAT_OK);
  assert_int_equal(rs->used_sparse, 1);
  assert_int_equal(rd->used_sparse, 0);
  for (int64_t i = 0; i < 2; i++)
    assert_true(fabs(rd->eigenvalues[i] - rs->eigenvalues[i]) <= 1e-7);
  assert_true(ari(ld, ls, n) == 1.0);
  printf("  sparse path: %lld iterations, largest residual %.2e\n", (long long)rs->eig_iterations,
         rs->eig_max_residual);
  /* a dense graph above dense_limit: AUTO takes the iterative solver (GEMM operator) */
  double *a = calloc((size_t)(n * n), sizeof(double));
  for (int64_t i = 0; i < n; i++)
    for (int64_t e = c->offsets[i]; e < c->offsets[i + 1]; e++)
      a[i * n + c->indices[e]] = c->weights[e];
  gstat_matrix Am = gstat_matrix_row_major(a, GSTAT_F64, 1, n, n);
  gstat_graph Gd = gstat_graph_dense(&Am);
  gstat_spectral_result *ra = NULL;
  o.solver = GSTAT_EIGEN_AUTO;
  o.dense_limit = 100;
  assert_int_equal(gstat_spectral_clustering(ctx, &Gd, &o, ls, &ra), GSTAT_OK);
  assert_int_equal(ra->used_sparse, 1);
  for (int64_t i = 0; i < 2; i++)
    assert_true(fabs(rd->eigenvalues[i] - ra->eigenvalues[i]) <= 1e-7);
  assert_true(ari(ld, ls, n) == 1.0);
  gstat_spectral_result_free(ra);
  free(a);
  /* AUTO below dense_limit: a kNN graph goes to the iterative solver when
   * nnz 6000 < n^3, a complete graph of 100 nodes stays dense
   * (bench/README.md, "Dense or iterative eigensolver") */
  o.dense_limit = 2048;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, ls, &ra), GSTAT_OK);
  assert_int_equal(ra->used_sparse, (double)c->nnz * 6000.0 < (double)n * (double)n * (double)n);
  printf("  AUTO on the %lld-node kNN graph (%lld entries): %s\n", (long long)n, (long long)c->nnz,
         ra->used_sparse ? "iterative" : "dense");
  gstat_spectral_result_free(ra);
  int64_t m = 100, ne = m * (m - 1), e = 0;
  int64_t *src = malloc(sizeof(int64_t) * (size_t)ne), *dst = malloc(sizeof(int64_t) * (size_t)ne);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < m; j++)
      if (i != j) src[e] = i, dst[e++] = j;
  gstat_csr *full = NULL;
  assert_int_equal(gstat_csr_from_edges(ctx, m, ne, src, dst, NULL, GSTAT_SYM_CHECK, &full),
                   GSTAT_OK);
  gstat_graph Gf = gstat_graph_csr(full->n, full->offsets, full->indices, full->weights);
  int64_t *lf = malloc(sizeof(int64_t) * (size_t)m);
  assert_int_equal(gstat_spectral_clustering(ctx, &Gf, &o, lf, &ra), GSTAT_OK);
  assert_int_equal(ra->used_sparse, 0);
  gstat_spectral_result_free(ra);
  gstat_csr_free(full);
  free(lf);
  free(src);
  free(dst);
  gstat_spectral_result_free(rd);
  gstat_spectral_result_free(rs);
  gstat_csr_free(c);
  free(ld);
  free(ls);
  gstat_ctx_destroy(ctx);
}

/* ---- batches -------------------------------------------------------------------- */

typedef struct ragged {
  int64_t count, total, nmax;
  int64_t *node_offsets, *offsets, *indices, *sizes, *k;
  double *weights;
  double *dense; /* count x nmax x nmax, row-major, padding poisoned with NaN */
} ragged;

/* Graphs of varied sizes (repeated sizes, 1- and 2-node graphs, an empty
 * one, a disconnected one with k >= components) with weights. */
static ragged make_batch(tu_rng *rng, int64_t count) {
  ragged r;
  memset(&r, 0, sizeof r);
  r.count = count;
  r.sizes = malloc(sizeof(int64_t) * (size_t)count);
  r.k = malloc(sizeof(int64_t) * (size_t)count);
  r.node_offsets = malloc(sizeof(int64_t) * (size_t)(count + 1));
  /* 64 nodes: few pairs take the lowest-pairs solver (graph 7 % 12 split) */
  const int64_t menu[] = {1, 2, 0, 12, 64, 30, 7, 64, 30, 45, 3, 12};
  r.node_offsets[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    /* one graph past eigh's own kernel (n > 128: LAPACK, one per call) */
    r.sizes[g] = g == 11 ? 136 : menu[g % 12];
    r.node_offsets[g + 1] = r.node_offsets[g] + r.sizes[g];
    if (r.sizes[g] > r.nmax) r.nmax = r.sizes[g];
  }
  r.total = r.node_offsets[count];
  int64_t cap = 0;
  for (int64_t g = 0; g < count; g++) cap += r.sizes[g] * r.sizes[g];
  r.offsets = malloc(sizeof(int64_t) * (size_t)(r.total + 1));
  r.indices = malloc(sizeof(int64_t) * (size_t)(cap + 1));
  r.weights = malloc(sizeof(double) * (size_t)(cap + 1));
  r.dense = malloc(sizeof(double) * (size_t)(count * r.nmax * r.nmax + 1));
  for (int64_t i = 0; i < count * r.nmax * r.nmax; i++) r.dense[i] = NAN;
  double *a = malloc(sizeof(double) * (size_t)(r.nmax * r.nmax + 1));
  int64_t e = 0;
  r.offsets[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    int64_t n = r.sizes[g], base = r.node_offsets[g];
    int64_t blocks = n >= 12 ? 2 + (g % 3) : 1; /* a few communities */
    bool split = g % 12 == 7;                   /* two components, no edge between */
    for (int64_t i = 0; i < n * n; i++) a[i] = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) {
        bool same = i * blocks / n == j * blocks / n;
        if (split && !same) continue;
        if (j == i + 1 && same ? 1 : tu_uniform(rng) < (same ? 0.6 : 0.05))
          a[i * n + j] = a[j * n + i] = 0.5 + tu_uniform(rng);
      }
    r.k[g] = n == 0 ? 0 : n <= 2 ? n : blocks;
    for (int64_t i = 0; i < n; i++) {
      for (int64_t j = 0; j < n; j++) {
        r.dense[(g * r.nmax + i) * r.nmax + j] = a[i * n + j];
        if (a[i * n + j] != 0) {
          r.indices[e] = base + j;
          r.weights[e++] = a[i * n + j];
        }
      }
      r.offsets[base + i + 1] = e;
    }
  }
  free(a);
  return r;
}

static void free_batch(ragged *r) {
  free(r->node_offsets);
  free(r->offsets);
  free(r->indices);
  free(r->weights);
  free(r->sizes);
  free(r->k);
  free(r->dense);
}

static gstat_graph_batch csr_batch(const ragged *r) {
  gstat_graph_batch b;
  memset(&b, 0, sizeof b);
  b.format = GSTAT_GRAPH_CSR;
  b.count = r->count;
  b.node_offsets = r->node_offsets;
  b.offsets = r->offsets;
  b.indices = r->indices;
  b.weights = r->weights;
  return b;
}

static void test_batch_equals_single(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  int64_t count = tu_quick() ? 24 : 96;
  ragged r = make_batch(&rng, count);
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.seed = 42;
  for (int variant = 0; variant < 3; variant++) {
    const int64_t *ks = variant == 1 ? NULL : r.k; /* NULL: k by the eigengap */
    o.assign = variant == 2 ? GSTAT_ASSIGN_CLUSTER_QR : GSTAT_ASSIGN_KMEANS;
    int64_t *lab = malloc(sizeof(int64_t) * (size_t)(r.total + 1));
    gstat_graph_batch b = csr_batch(&r);
    gstat_spectral_batch_result *res = NULL;
    assert_int_equal(gstat_spectral_clustering_batch(ctx, &b, ks, &o, lab, &res), GSTAT_OK);
    /* one at a time, each graph as its own CSR with local indices */
    for (int64_t g = 0; g < count; g++) {
      int64_t n = r.sizes[g], base = r.node_offsets[g],
              *off = malloc(sizeof(int64_t) * (size_t)(n + 1));
      int64_t first = r.offsets[base], nnz = r.offsets[base + n] - first;
      int64_t *idx = malloc(sizeof(int64_t) * (size_t)(nnz + 1));
      for (int64_t i = 0; i <= n; i++) off[i] = r.offsets[base + i] - first;
      for (int64_t e = 0; e < nnz; e++) idx[e] = r.indices[first + e] - base;
      gstat_graph G = gstat_graph_csr(n, off, idx, r.weights + first);
      gstat_spectral_options og = o;
      og.n_clusters = ks ? ks[g] : 0;
      int64_t *one = malloc(sizeof(int64_t) * (size_t)(n + 1));
      gstat_spectral_result *rs = NULL;
      assert_int_equal(gstat_spectral_clustering(ctx, &G, &og, one, &rs), GSTAT_OK);
      assert_memory_equal(one, lab + base, sizeof(int64_t) * (size_t)n);
      assert_int_equal(rs->n_clusters, res->n_clusters[g]);
      assert_int_equal(rs->graph_components, res->graph_components[g]);
      assert_int_equal(res->status[g], GSTAT_OK);
      assert_int_equal(rs->n_eigenvalues, res->eig_offsets[g + 1] - res->eig_offsets[g]);
      assert_memory_equal(rs->eigenvalues, res->eigenvalues + res->eig_offsets[g],
                          sizeof(double) * (size_t)rs->n_eigenvalues);
      if (n > 0) assert_memory_equal(&rs->inertia, &res->inertia[g], sizeof(double));
      if (g % 12 == 7) assert_int_equal(rs->graph_components, 2 + g % 3); /* split blocks */
      gstat_spectral_result_free(rs);
      free(one);
      free(off);
      free(idx);
    }
    /* the padded dense batch gives the same labels (padding is NaN: never read) */
    int64_t *lab2 = malloc(sizeof(int64_t) * (size_t)(r.total + 1));
    gstat_graph_batch d;
    memset(&d, 0, sizeof d);
    d.format = GSTAT_GRAPH_DENSE;
    d.count = count;
    d.adjacency = gstat_matrix_row_major(r.dense, GSTAT_F64, count, r.nmax, r.nmax);
    d.sizes = r.sizes;
    assert_int_equal(gstat_spectral_clustering_batch(ctx, &d, ks, &o, lab2, NULL), GSTAT_OK);
    assert_memory_equal(lab, lab2, sizeof(int64_t) * (size_t)r.total);
    /* and so does a one-thread context */
    gstat_ctx_options co;
    gstat_ctx_options_init(&co);
    co.backend = GSTAT_BACKEND_CPU;
    co.num_threads = 1;
    gstat_ctx *c1 = NULL;
    assert_int_equal(gstat_ctx_create(&c1, &co), GSTAT_OK);
    assert_int_equal(gstat_spectral_clustering_batch(c1, &b, ks, &o, lab2, NULL), GSTAT_OK);
    assert_memory_equal(lab, lab2, sizeof(int64_t) * (size_t)r.total);
    gstat_ctx_destroy(c1);
    gstat_spectral_batch_result_free(res);
    free(lab);
    free(lab2);
  }
  free_batch(&r);
  gstat_ctx_destroy(ctx);
}

typedef struct progress_log {
  int calls, cancel_at;
  int64_t last_done, total;
} progress_log;

static int on_progress(int64_t done, int64_t total, const char *what, void *user) {
  progress_log *p = user;
  assert_string_equal(what, "spectral_batch: graphs");
  assert_true(done >= p->last_done);
  p->last_done = done;
  p->total = total;
  return ++p->calls == p->cancel_at;
}

static void test_progress_and_cancel(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  ragged r = make_batch(&rng, 24);
  for (int cancel = 0; cancel < 2; cancel++) {
    progress_log log = {0, cancel ? 3 : -1, 0, 0};
    gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, on_progress, &log);
    assert_non_null(ctx);
    gstat_graph_batch b = csr_batch(&r);
    int64_t *lab = malloc(sizeof(int64_t) * (size_t)r.total);
    gstat_spectral_batch_result *res = NULL;
    gstat_status st = gstat_spectral_clustering_batch(ctx, &b, r.k, NULL, lab, &res);
    if (!cancel) {
      assert_int_equal(st, GSTAT_OK);
      assert_true(log.calls >= 2);
      assert_int_equal(log.last_done, 24);
      assert_int_equal(log.total, 24);
    } else {
      assert_int_equal(st, GSTAT_ECANCELED);
      assert_int_equal(log.calls, 3);
      int64_t cancelled = 0, unlabeled = 0;
      for (int64_t g = 0; g < 24; g++) cancelled += res->status[g] == GSTAT_ECANCELED;
      for (int64_t i = 0; i < r.total; i++) unlabeled += lab[i] == -1;
      assert_true(cancelled > 0 && unlabeled > 0);
    }
    gstat_spectral_batch_result_free(res);
    free(lab);
    gstat_ctx_destroy(ctx);
  }
  free_batch(&r);
}

typedef struct kmeans_log {
  int kmeans_calls, cancel;
  int64_t total;
} kmeans_log;

static int on_kmeans(int64_t done, int64_t total, const char *what, void *user) {
  kmeans_log *p = user;
  if (strcmp(what, "kmeans: iterations") != 0) return 0;
  assert_true(done >= 0 && done < total);
  p->total = total;
  p->kmeans_calls++;
  return p->cancel;
}

/* One graph's k-means reports every iteration (of n_init x max_iter) and stops
 * when cancelled, dense and sparse solver alike; the caps are refused. */
static void test_kmeans_progress_and_cancel(void **state) {
  (void)state;
  enum { N = 60 };
  double *a = calloc(N * N, sizeof(double));
  for (int i = 0; i < N; i++) /* two dense blocks joined by one weak edge */
    for (int j = 0; j < N; j++)
      if (i != j && (i < N / 2) == (j < N / 2)) a[i * N + j] = 1;
  a[0 * N + N - 1] = a[(N - 1) * N + 0] = 0.01;
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 1, N, N);
  gstat_graph G = gstat_graph_dense(&A);
  for (int solver = GSTAT_EIGEN_DENSE; solver <= GSTAT_EIGEN_LANCZOS; solver++)
    for (int cancel = 0; cancel < 2; cancel++) {
      kmeans_log log = {0, cancel, 0};
      gstat_ctx *ctx = tu_ctx_progress(GSTAT_BACKEND_CPU, 0, on_kmeans, &log);
      assert_non_null(ctx);
      gstat_spectral_options o;
      gstat_spectral_options_init(&o);
      o.n_clusters = 2;
      o.solver = (gstat_eigen_solver)solver;
      int64_t lab[N];
      gstat_status st = gstat_spectral_clustering(ctx, &G, &o, lab, NULL);
      assert_int_equal(log.total, o.n_init * o.max_iter);
      if (cancel) {
        assert_int_equal(st, GSTAT_ECANCELED);
        assert_int_equal(log.kmeans_calls, 1);
        assert_non_null(strstr(gstat_ctx_last_error(ctx), "kmeans: iterations: cancelled"));
        for (int i = 0; i < N; i++) assert_int_equal(lab[i], -1);
      } else {
        assert_int_equal(st, GSTAT_OK);
        assert_true(log.kmeans_calls >= o.n_init); /* at least one iteration a run */
        assert_true(lab[0] != lab[N - 1] && lab[1] == lab[0]);
      }
      gstat_ctx_destroy(ctx);
    }
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_spectral_options o;
  int64_t lab[N];
  gstat_spectral_options_init(&o);
  o.n_init = GSTAT_SPECTRAL_MAX_N_INIT + 1;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.n_init=1001 must be in [1, 1000]");
  gstat_spectral_options_init(&o);
  o.max_iter = INT64_MAX;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.max_iter=9223372036854775807 must be in [1, 100000]");
  gstat_spectral_options_init(&o);
  o.eig_max_iter = GSTAT_SPECTRAL_MAX_EIG_ITER + 1;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.eig_max_iter=1000001 must be in [0, 1000000]");
  gstat_ctx_destroy(ctx);
  free(a);
}

static void test_edge_cases(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  gstat_spectral_result *res = NULL;
  int64_t lab[8];
  /* 1 node: k = 1, label 0, eigenvalue 0 */
  int64_t off1[] = {0, 0};
  gstat_graph G = gstat_graph_csr(1, off1, NULL, NULL);
  o.n_clusters = 1;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
  assert_int_equal(lab[0], 0);
  assert_true(res->eigenvalues[0] == 0 && res->graph_components == 1);
  gstat_spectral_result_free(res);
  o.n_clusters = 0; /* eigengap on one node: k = 1 */
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
  assert_int_equal(res->n_clusters, 1);
  gstat_spectral_result_free(res);
  /* 2 connected nodes: k = 1 and k = 2 (= n: each its own cluster) */
  int64_t off2[] = {0, 1, 2}, idx2[] = {1, 0};
  G = gstat_graph_csr(2, off2, idx2, NULL);
  o.n_clusters = 2;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
  assert_true(lab[0] == 0 && lab[1] == 1 && res->inertia == 0);
  assert_true(fabs(res->eigenvalues[1] - 2) < 1e-14);
  gstat_spectral_result_free(res);
  o.n_clusters = 1;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_OK);
  assert_true(lab[0] == 0 && lab[1] == 0);
  /* k > n */
  o.n_clusters = 3;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_EINVAL,
                 "spectral_clustering: G: n_clusters=3 exceeds its 2 nodes");
  assert_null(res);
  /* the empty graph */
  int64_t off0[] = {0};
  G = gstat_graph_csr(0, off0, NULL, NULL);
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, NULL, &res), GSTAT_OK);
  assert_true(res->n == 0 && res->n_clusters == 0 && res->n_eigenvalues == 0);
  gstat_spectral_result_free(res);
  /* two components {0,1,2} {3,4} and an isolated node 5 */
  int64_t s[] = {0, 1, 0, 3}, t[] = {1, 2, 2, 4};
  gstat_csr *c = NULL;
  assert_int_equal(gstat_csr_from_edges(ctx, 6, 4, s, t, NULL, GSTAT_SYM_MAX, &c), GSTAT_OK);
  G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
  o.n_clusters = 3;
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
  assert_int_equal(res->graph_components, 3);
  int64_t want[] = {0, 0, 0, 1, 1, 2};
  assert_memory_equal(lab, want, sizeof want);
  for (int i = 0; i < 3; i++) assert_true(fabs(res->eigenvalues[i]) < 1e-12);
  gstat_spectral_result_free(res);
  o.n_clusters = 0; /* the eigengap finds the 3 components */
  assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
  assert_int_equal(res->n_clusters, 3);
  assert_memory_equal(lab, want, sizeof want);
  gstat_spectral_result_free(res);
  o.n_clusters = 2; /* more components than clusters: no defined answer */
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_EINVAL,
                 "spectral_clustering: G has 3 connected components, more than n_clusters=2: no "
                 "well-defined clustering (ask for at least 3 clusters)");
  for (int i = 0; i < 6; i++) assert_int_equal(lab[i], -1);
  assert_null(res);
  o.solver = GSTAT_EIGEN_SPARSE; /* the same on the sparse path */
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_EINVAL,
                 "spectral_clustering: G has 3 connected components, more than n_clusters=2: no "
                 "well-defined clustering (ask for at least 3 clusters)");
  o.solver = GSTAT_EIGEN_AUTO;
  o.n_clusters = 4;
  o.disconnected = GSTAT_DISCONNECTED_REJECT;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_EINVAL,
                 "spectral_clustering: G has 3 connected components (opt.disconnected rejects "
                 "disconnected graphs)");
  /* PROCEED (scikit-learn's way): 2 clusters of 3 components from the 2
   * smallest eigenvectors; each component is one point of the embedding, so
   * it lands in one cluster, on both solvers */
  o.disconnected = GSTAT_DISCONNECTED_PROCEED;
  o.n_clusters = 2;
  for (int sv = GSTAT_EIGEN_DENSE; sv <= GSTAT_EIGEN_LANCZOS; sv++) {
    o.solver = (gstat_eigen_solver)sv;
    assert_int_equal(gstat_spectral_clustering(ctx, &G, &o, lab, &res), GSTAT_OK);
    assert_int_equal(res->graph_components, 3);
    for (int i = 0; i < 6; i++) assert_true(lab[i] == 0 || lab[i] == 1);
    assert_true(lab[0] == lab[1] && lab[1] == lab[2] && lab[3] == lab[4]);
    gstat_spectral_result_free(res);
  }
  o.solver = GSTAT_EIGEN_AUTO;
  o.disconnected = GSTAT_DISCONNECTED_AUTO;
  /* in a batch, that graph fails alone; the others are labelled */
  gstat_csr_free(c);
  gstat_ctx_destroy(ctx);
}

/* A batch of two graphs in one concatenated CSR. */
static gstat_graph_batch two_csr_graphs(const int64_t *node_off, const int64_t *off,
                                        const int64_t *idx, const double *w) {
  gstat_graph_batch b;
  memset(&b, 0, sizeof b);
  b.format = GSTAT_GRAPH_CSR;
  b.count = 2;
  b.node_offsets = node_off;
  b.offsets = off;
  b.indices = idx;
  b.weights = w;
  return b;
}

/* NaN/Inf weights are one graph's failure in a batch (labels -1, ENOTFINITE
 * naming the entry), CSR and dense alike; the other graphs are clustered. */
static void batch_nonfinite_weights(gstat_ctx *ctx) {
  /* two paths of 3 nodes; graph 0's edge (1, 2) is NaN */
  int64_t node_off[] = {0, 3, 6}, off[] = {0, 1, 3, 4, 5, 7, 8}, idx[] = {1, 0, 2, 1, 4, 3, 5, 4};
  double w[] = {1, 1, NAN, NAN, 1, 1, 1, 1};
  gstat_graph_batch b = two_csr_graphs(node_off, off, idx, w);
  int64_t ks[] = {2, 2}, lab[6];
  gstat_spectral_batch_result *res = NULL;
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, lab, &res),
                 GSTAT_ENOTFINITE,
                 "spectral_batch: Gs graph 0.weights[2] (row 1, column 2) is NaN or Inf");
  assert_non_null(res);
  assert_int_equal(res->status[0], GSTAT_ENOTFINITE);
  assert_int_equal(res->status[1], GSTAT_OK);
  assert_true(lab[0] == -1 && lab[1] == -1 && lab[2] == -1);
  assert_true(lab[3] >= 0 && lab[5] >= 0 && lab[3] != lab[5]);
  gstat_spectral_batch_result_free(res);
  /* dense: graph 1 holds +Inf */
  double a[2 * 9] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, INFINITY, 0, INFINITY, 0};
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 2, 3, 3);
  b.format = GSTAT_GRAPH_DENSE;
  b.adjacency = A;
  res = NULL;
  assert_int_equal(gstat_spectral_clustering_batch(ctx, &b, ks, NULL, lab, &res), GSTAT_ENOTFINITE);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "graph 1"));
  assert_int_equal(res->status[0], GSTAT_OK);
  assert_int_equal(res->status[1], GSTAT_ENOTFINITE);
  assert_true(lab[0] >= 0 && lab[0] != lab[2] && lab[3] == -1 && lab[5] == -1);
  gstat_spectral_batch_result_free(res);
}

static void test_batch_graph_failure(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  /* graph 0: path of 3; graph 1: 3 isolated nodes (3 components) */
  int64_t node_off[] = {0, 3, 6}, off[] = {0, 1, 3, 4, 4, 4, 4}, idx[] = {1, 0, 2, 1};
  gstat_graph_batch b = two_csr_graphs(node_off, off, idx, NULL);
  int64_t ks[] = {2, 2}, lab[6];
  gstat_spectral_batch_result *res = NULL;
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, lab, &res), GSTAT_EINVAL,
                 "spectral_batch: graph 1 has 3 connected components, more than n_clusters=2: no "
                 "well-defined clustering (ask for at least 3 clusters)");
  assert_non_null(res);
  assert_int_equal(res->status[0], GSTAT_OK);
  assert_int_equal(res->status[1], GSTAT_EINVAL);
  assert_int_equal(res->graph_components[1], 3);
  assert_true(lab[0] >= 0 && lab[3] == -1 && lab[5] == -1);
  assert_true(lab[0] != lab[2]); /* the path's ends apart */
  gstat_spectral_batch_result_free(res);
  batch_nonfinite_weights(ctx);
  gstat_ctx_destroy(ctx);
}

/* An allocator that refuses blocks of *user bytes or more. */
static void *capped_alloc(size_t size, size_t align, void *user) {
  if (size >= *(size_t *)user) return NULL;
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void plain_free(void *p, size_t size, void *user) {
  (void)size;
  (void)user;
  free(p);
}

/* A chunk that cannot get its workspace stops the batch: the graphs done
 * (the smaller sizes come first) keep what an unconstrained call gives
 * them, the others get labels -1, the call's status and no inertia. */
static void test_batch_out_of_memory(void **state) {
  (void)state;
  tu_rng rng = tu_rng_new();
  ragged r = make_batch(&rng, 24);
  gstat_graph_batch b = csr_batch(&r);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.seed = 7;
  int64_t *want = malloc(sizeof(int64_t) * (size_t)r.total),
          *lab = malloc(sizeof(int64_t) * (size_t)r.total);
  gstat_ctx *plain = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_spectral_batch_result *ref = NULL, *res = NULL;
  gstat_status st = gstat_spectral_clustering_batch(plain, &b, r.k, &o, want, &ref);
  assert_true(st == GSTAT_OK || st == GSTAT_EINVAL); /* the split graphs fail on their own */
  size_t limit = 100000;                             /* the chunk of 64-node graphs needs more */
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = GSTAT_BACKEND_CPU;
  co.num_threads = 2;
  co.allocator.alloc = capped_alloc;
  co.allocator.free = plain_free;
  co.allocator.user = &limit;
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, &co), GSTAT_OK);
  assert_int_equal(gstat_spectral_clustering_batch(ctx, &b, r.k, &o, lab, &res), GSTAT_ENOMEM);
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "spectral_batch: cannot allocate"));
  assert_non_null(strstr(gstat_ctx_last_error(ctx), "graphs of 64 nodes"));
  assert_non_null(res);
  int64_t done = 0, stopped = 0;
  for (int64_t g = 0; g < r.count; g++) {
    int64_t n = r.sizes[g], base = r.node_offsets[g];
    if (n < 64) {
      done++;
      assert_int_equal(res->status[g], ref->status[g]);
      assert_int_equal(res->n_clusters[g], ref->n_clusters[g]);
      assert_memory_equal(lab + base, want + base, sizeof(int64_t) * (size_t)n);
    } else {
      stopped++;
      assert_int_equal(res->status[g], GSTAT_ENOMEM);
      assert_true(isnan(res->inertia[g]));
      for (int64_t i = 0; i < n; i++) assert_int_equal(lab[base + i], -1);
    }
  }
  assert_true(done > 0 && stopped > 0);
  gstat_spectral_batch_result_free(res);
  gstat_spectral_batch_result_free(ref);
  gstat_ctx_destroy(ctx);
  gstat_ctx_destroy(plain);
  free(want);
  free(lab);
  free_batch(&r);
}

static void test_bad_input(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  int64_t off[] = {0, 1, 3, 4}, idx[] = {1, 0, 2, 1}, lab[3] = {7, 7, 7};
  double w[] = {1, 1, 2, 2};
  gstat_graph G = gstat_graph_csr(3, off, idx, w);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = -1;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.n_clusters=-1 must be >= 1 (or 0: choose k by the "
                 "eigengap)");
  gstat_spectral_options_init(&o);
  o.n_init = 0;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.n_init=0 must be in [1, 1000]");
  gstat_spectral_options_init(&o);
  o.assign = GSTAT_ASSIGN_CLUSTER_QR;
  o.n_components = 3;
  tu_expect_fail(
      ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
      "spectral_clustering: cluster-QR uses k embedding columns: leave opt.n_components at 0");
  gstat_spectral_options_init(&o);
  o.tol = NAN;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: opt.tol=nan must be >= 0 and finite");
  gstat_spectral_options_init(&o);
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, NULL, NULL), GSTAT_EINVAL,
                 "spectral_clustering: labels is NULL");
  o.n_clusters = 2;
  o.drop_first = 1;
  o.n_components = 3;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: G: 3 embedding columns + the dropped first need more than "
                 "its 3 nodes");
  double nan_w[] = {1, 1, NAN, 2};
  G = gstat_graph_csr(3, off, idx, nan_w);
  gstat_spectral_options_init(&o);
  o.n_clusters = 2;
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_ENOTFINITE,
                 "spectral_clustering: G.weights[2] (row 1, column 2) is NaN or Inf");
  for (int i = 0; i < 3; i++) assert_int_equal(lab[i], 7); /* nothing written */
  double a[18] = {0};
  gstat_matrix A = gstat_matrix_row_major(a, GSTAT_F64, 2, 3, 3);
  G = gstat_graph_dense(&A);
  tu_expect_fail(ctx, gstat_spectral_clustering(ctx, &G, &o, lab, NULL), GSTAT_EINVAL,
                 "spectral_clustering: G.adjacency holds 2 graphs; this function takes one (see "
                 "gstat_spectral_clustering_batch)");
  /* batches: an index in another graph's range, a negative weight, sizes */
  int64_t node_off[] = {0, 2, 4}, boff[] = {0, 1, 2, 3, 4}, bidx[] = {1, 0, 3, 1};
  double bw[] = {1, 1, 1, 1};
  gstat_graph_batch b = two_csr_graphs(node_off, boff, bidx, bw);
  int64_t blab[4] = {7, 7, 7, 7}, ks[] = {1, 1};
  tu_expect_fail(
      ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, blab, NULL), GSTAT_EINVAL,
      "spectral_batch: Gs graph 1.indices[3]=1 (row 3) is outside the graph's nodes [2, 4)");
  bidx[3] = 2;
  bw[1] = -1;
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, blab, NULL), GSTAT_EINVAL,
                 "spectral_batch: Gs graph 0.weights[1]=-1 (row 1, column 0) is negative: weights "
                 "must be >= 0");
  bw[1] = 1;
  ks[1] = 0;
  ks[0] = -2;
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, blab, NULL), GSTAT_EINVAL,
                 "spectral_batch: graph 0: n_clusters=-2 must be >= 1 (or 0: by the eigengap)");
  ks[0] = 1;
  bw[2] = 0.5; /* graph 1: (2,3)=0.5 but (3,2)=1 */
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, NULL, blab, NULL), GSTAT_EINVAL,
                 "spectral_batch: Gs graph 1 is not symmetric: entry (2, 3)=0.5 but (3, 2)=1 (set "
                 "symmetrize to MAX, MEAN or SUM)");
  for (int i = 0; i < 4; i++) assert_int_equal(blab[i], 7);
  b.symmetrize = GSTAT_SYM_MAX;
  assert_int_equal(gstat_spectral_clustering_batch(ctx, &b, ks, NULL, blab, NULL), GSTAT_OK);
  gstat_spectral_options_init(&o);
  for (int sv = GSTAT_EIGEN_SPARSE; sv <= GSTAT_EIGEN_LANCZOS; sv++) {
    o.solver = (gstat_eigen_solver)sv;
    tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &b, ks, &o, blab, NULL), GSTAT_EINVAL,
                   "spectral_batch: opt.solver=SPARSE and LANCZOS are for one large graph; "
                   "batches use the dense solver");
  }
  int64_t bad_sizes[] = {3, 4};
  gstat_graph_batch d;
  memset(&d, 0, sizeof d);
  d.format = GSTAT_GRAPH_DENSE;
  d.count = 2;
  d.adjacency = A;
  d.sizes = bad_sizes;
  tu_expect_fail(ctx, gstat_spectral_clustering_batch(ctx, &d, NULL, NULL, blab, NULL),
                 GSTAT_EINVAL, "spectral_batch: Gs.sizes[1]=4 is outside [0, 3]");
  gstat_ctx_destroy(ctx);
}

static int setup(void **state) {
  (void)state;
  return gref_load(&REF) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  gref_free(&REF);
  return 0;
}

/* Grids g of a x (b0 + g % 3) nodes side by side: edges into src/dst from
 * node offset `first`; returns the edge count. */
static int64_t grid_edges(int64_t first, int64_t a, int64_t b, int64_t *src, int64_t *dst) {
  int64_t e = 0;
  for (int64_t i = 0; i < a; i++)
    for (int64_t j = 0; j < b; j++) {
      int64_t v = first + i * b + j;
      if (i + 1 < a) src[e] = v, dst[e++] = v + b;
      if (j + 1 < b) src[e] = v, dst[e++] = v + 1;
    }
  return e;
}

/* Ten grid components of nearly equal shapes: the pair after the null space
 * lies in a cluster of ten (each grid's smallest nonzero eigenvalue, some
 * repeated). A solver basis sized for the one pair searched does not
 * converge in 1000 iterations here (nor on 10-d blobs of 10^6 points); the
 * embedding converges and its eleventh eigenvalue is the largest grid's
 * own (the dense solver on that grid alone). */
static void test_cluster_above_null_space(void **state) {
  (void)state;
  enum { G = 10, A = 40, B0 = 41 };
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  int64_t n = 0, ne = 0, cap = 0;
  for (int g = 0; g < G; g++) cap += 2 * A * (B0 + g % 3);
  int64_t *src = malloc(sizeof(int64_t) * (size_t)cap),
          *dst = malloc(sizeof(int64_t) * (size_t)cap);
  for (int g = 0; g < G; g++) {
    ne += grid_edges(n, A, B0 + g % 3, src + ne, dst + ne);
    n += A * (B0 + g % 3);
  }
  gstat_csr *all = NULL, *one = NULL;
  assert_int_equal(gstat_csr_from_edges(ctx, n, ne, src, dst, NULL, GSTAT_SYM_MAX, &all), GSTAT_OK);
  int64_t n1 = A * (B0 + 2), ne1 = grid_edges(0, A, B0 + 2, src, dst);
  assert_int_equal(gstat_csr_from_edges(ctx, n1, ne1, src, dst, NULL, GSTAT_SYM_MAX, &one),
                   GSTAT_OK);
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = 1;
  o.n_components = 10;
  o.drop_first = 1;
  o.laplacian = GSTAT_LAPLACIAN_RANDOM_WALK;
  o.disconnected = GSTAT_DISCONNECTED_PROCEED;
  o.solver = GSTAT_EIGEN_SPARSE;
  o.eig_max_iter = 1000;
  double *e = malloc(sizeof(double) * (size_t)(n * 10)), ev[11], ev1[11];
  gstat_matrix E = gstat_matrix_col_major(e, GSTAT_F64, 1, n, 10);
  gstat_graph Ga = gstat_graph_csr(all->n, all->offsets, all->indices, all->weights);
  assert_int_equal(gstat_spectral_embedding(ctx, &Ga, &o, &E, ev), GSTAT_OK);
  o.n_components = 1;
  o.solver = GSTAT_EIGEN_DENSE;
  gstat_matrix E1 = gstat_matrix_col_major(e, GSTAT_F64, 1, n1, 1);
  gstat_graph G1 = gstat_graph_csr(one->n, one->offsets, one->indices, one->weights);
  assert_int_equal(gstat_spectral_embedding(ctx, &G1, &o, &E1, ev1), GSTAT_OK);
  for (int c = 0; c < 10; c++) assert_true(fabs(ev[c]) < 1e-10);
  assert_true(fabs(ev[10] - ev1[1]) < 1e-7 * ev1[1]);
  gstat_csr_free(all);
  gstat_csr_free(one);
  free(src);
  free(dst);
  free(e);
  gstat_ctx_destroy(ctx);
}

/* Two grid components (60 x 100 and 30 x 40; 7200 nodes, from 4096 on the
 * solver works on the graph renumbered breadth-first): the unnormalized
 * Laplacian's four smallest eigenvalues are 0, 0, 4 sin^2(pi / 200) and
 * 4 sin^2(pi / 120), and the same graph with its nodes shuffled has the
 * same embedding, row for row (columns up to sign: grid modes tie in
 * magnitude at opposite corners). */
static void test_embedding_any_numbering(void **state) {
  (void)state;
  enum { A = 60, B = 100, C = 30, D = 40, N = A * B + C * D, COLS = 4 };
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  int64_t cap = 2 * N, *src = malloc(sizeof(int64_t) * cap), *dst = malloc(sizeof(int64_t) * cap);
  int64_t ne = grid_edges(0, A, B, src, dst);
  ne += grid_edges(A * B, C, D, src + ne, dst + ne);
  int64_t *perm = malloc(sizeof(int64_t) * N); /* node i is node perm[i] of the shuffled graph */
  tu_rng rng = tu_rng_new();
  for (int64_t i = 0; i < N; i++) perm[i] = i;
  for (int64_t i = N - 1; i > 0; i--) {
    int64_t j = (int64_t)(tu_uniform(&rng) * (double)(i + 1)), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = 2;
  o.n_components = COLS;
  o.laplacian = GSTAT_LAPLACIAN_UNNORMALIZED;
  o.solver = GSTAT_EIGEN_SPARSE;
  double *e[2], ev[2][COLS];
  for (int shuffled = 0; shuffled < 2; shuffled++) {
    if (shuffled)
      for (int64_t t = 0; t < ne; t++) src[t] = perm[src[t]], dst[t] = perm[dst[t]];
    gstat_csr *c = NULL;
    assert_int_equal(gstat_csr_from_edges(ctx, N, ne, src, dst, NULL, GSTAT_SYM_MAX, &c), GSTAT_OK);
    gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
    e[shuffled] = malloc(sizeof(double) * N * COLS);
    gstat_matrix E = gstat_matrix_col_major(e[shuffled], GSTAT_F64, 1, N, COLS);
    assert_int_equal(gstat_spectral_embedding(ctx, &G, &o, &E, ev[shuffled]), GSTAT_OK);
    gstat_csr_free(c);
  }
  const double pi = 3.14159265358979323846;
  const double exact[COLS] = {0, 0, 4 * pow(sin(pi / (2 * B)), 2), 4 * pow(sin(pi / (2 * A)), 2)};
  for (int k = 0; k < COLS; k++) {
    assert_true(fabs(ev[0][k] - exact[k]) <= 1e-9 && fabs(ev[1][k] - exact[k]) <= 1e-9);
    double dot = 0, n0 = 0, n1 = 0;
    for (int64_t i = 0; i < N; i++) {
      double a = e[0][i + k * N], b = e[1][perm[i] + k * N];
      dot += a * b, n0 += a * a, n1 += b * b;
    }
    assert_true(fabs(dot) >= (1 - 1e-6) * sqrt(n0 * n1));
  }
  free(e[0]);
  free(e[1]);
  free(perm);
  free(src);
  free(dst);
  gstat_ctx_destroy(ctx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quality_vs_sklearn),
      cmocka_unit_test(test_eigengap_and_embedding),
      cmocka_unit_test(test_sparse_matches_dense),
      cmocka_unit_test(test_known_null_space),
      cmocka_unit_test(test_batch_equals_single),
      cmocka_unit_test(test_batch_out_of_memory),
      cmocka_unit_test(test_progress_and_cancel),
      cmocka_unit_test(test_edge_cases),
      cmocka_unit_test(test_batch_graph_failure),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_kmeans_progress_and_cancel),
      cmocka_unit_test(test_cluster_above_null_space),
      cmocka_unit_test(test_embedding_any_numbering),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
