/* Graphs: Laplacians against scipy.sparse.csgraph.laplacian (dense, CSR,
 * operator; every dtype/layout path), Laplacian identities (row sums,
 * normalized spectra in [0, 2], multiplicity of 0 = components), edge lists
 * (sorting, duplicates summed, symmetrization modes), components, affinities
 * against scikit-learn (RBF, kNN) and by brute force (mutual kNN, epsilon),
 * and the bad-input table. */
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

static double max_abs_diff(const double *a, const double *b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

/* L (row-major) of a dense graph through gstat_laplacian. */
static void dense_laplacian(gstat_ctx *ctx, const double *a, int64_t n, gstat_symmetrize sym,
                            gstat_laplacian_kind kind, double *L, double *deg) {
  gstat_matrix A = gstat_matrix_row_major((void *)a, GSTAT_F64, 1, n, n);
  gstat_graph G = gstat_graph_dense(&A);
  G.symmetrize = sym;
  gstat_matrix Lm = gstat_matrix_row_major(L, GSTAT_F64, 1, n, n);
  gstat_matrix D = gstat_vector_batch(deg, GSTAT_F64, 1, n);
  assert_int_equal(gstat_laplacian(ctx, &G, kind, &Lm, deg ? &D : NULL), GSTAT_OK);
}

static void test_laplacian_vs_scipy(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const char *names[] = {"small", "blocks", "directed", "dense"};
  tu_rng rng = tu_rng_new();
  for (int gi = 0; gi < 4; gi++) {
    char key[96];
    snprintf(key, sizeof key, "lap/%s/adjacency", names[gi]);
    const gref_entry *A = gref_get(&REF, key);
    assert_non_null(A);
    int64_t n = A->rows;
    snprintf(key, sizeof key, "lap/%s/symmetric", names[gi]);
    gstat_symmetrize sym = gref_get(&REF, key)->v[0] ? GSTAT_SYM_CHECK : GSTAT_SYM_MAX;
    snprintf(key, sizeof key, "lap/%s/components", names[gi]);
    int64_t comps = (int64_t)gref_get(&REF, key)->v[0];
    double *L = malloc(sizeof(double) * (size_t)(n * n)), *deg = malloc(sizeof(double) * (size_t)n);
    double *Lc = calloc((size_t)(n * n), sizeof(double));
    tcsr c = tcsr_from_dense(A->v, n);
    for (int normed = 0; normed < 2; normed++) {
      snprintf(key, sizeof key, "lap/%s/normed=%d", names[gi], normed);
      const gref_entry *R = gref_get(&REF, key);
      gstat_laplacian_kind kind = normed ? GSTAT_LAPLACIAN_SYMMETRIC : GSTAT_LAPLACIAN_UNNORMALIZED;
      /* dense input */
      dense_laplacian(ctx, A->v, n, sym, kind, L, deg);
      assert_true(max_abs_diff(L, R->v, n * n) <= 1e-13);
      /* CSR input, dense output */
      gstat_graph G = gstat_graph_csr(n, c.off, c.idx, c.w);
      G.symmetrize = sym;
      gstat_matrix Lm = gstat_matrix_col_major(L, GSTAT_F64, 1, n, n); /* symmetric: same */
      assert_int_equal(gstat_laplacian(ctx, &G, kind, &Lm, NULL), GSTAT_OK);
      assert_true(max_abs_diff(L, R->v, n * n) <= 1e-13);
      /* CSR output into caller buffers (query first) */
      int64_t nnz = -1;
      assert_int_equal(gstat_laplacian_csr(ctx, &G, kind, 0, NULL, NULL, NULL, &nnz, NULL),
                       GSTAT_OK);
      int64_t *off = malloc(sizeof(int64_t) * (size_t)(n + 1)),
              *idx = malloc(sizeof(int64_t) * (size_t)nnz);
      double *val = malloc(sizeof(double) * (size_t)nnz);
      assert_int_equal(gstat_laplacian_csr(ctx, &G, kind, nnz - 1, off, idx, val, &nnz, NULL),
                       GSTAT_EINVAL);
      assert_int_equal(gstat_laplacian_csr(ctx, &G, kind, nnz, off, idx, val, &nnz, deg), GSTAT_OK);
      memset(Lc, 0, sizeof(double) * (size_t)(n * n));
      for (int64_t i = 0; i < n; i++) {
        bool diag = false;
        for (int64_t e = off[i]; e < off[i + 1]; e++) {
          if (e > off[i]) assert_true(idx[e] > idx[e - 1]);
          diag |= idx[e] == i;
          Lc[i * n + idx[e]] = val[e];
        }
        assert_true(diag); /* the diagonal is always stored */
      }
      assert_true(max_abs_diff(Lc, R->v, n * n) <= 1e-13);
      free(off);
      free(idx);
      free(val);
      /* the operator (CSR rows, then a dense graph streamed in blocks of 8):
       * L X for a random block of 20 columns (two passes of the CSR kernel,
       * three of the dense one, the last partial) */
      gstat_matrix Ad = gstat_matrix_row_major(A->v, GSTAT_F64, 1, n, n);
      gstat_graph Gd = gstat_graph_dense(&Ad);
      Gd.symmetrize = sym;
      double *X = malloc(sizeof(double) * (size_t)(20 * n)),
             *Y = malloc(sizeof(double) * (size_t)(20 * n));
      for (int64_t i = 0; i < 20 * n; i++) X[i] = tu_normal(&rng);
      for (int form = 0; form < 2; form++) {
        gstat_laplacian_op *op = NULL;
        assert_int_equal(gstat_laplacian_op_create(ctx, form ? &Gd : &G, kind, &op), GSTAT_OK);
        assert_int_equal(gstat_laplacian_op_size(op), n);
        assert_int_equal(gstat_laplacian_op_apply(ctx, op, 20, X, Y), GSTAT_OK);
        for (int64_t col = 0; col < 20; col++)
          for (int64_t i = 0; i < n; i++) {
            double want = 0;
            for (int64_t j = 0; j < n; j++) want += R->v[i * n + j] * X[j + col * n];
            assert_true(fabs(Y[i + col * n] - want) <= 1e-12 * (1 + fabs(want)));
          }
        for (int64_t i = 0; !normed && i < n; i++) /* degrees: D - A's diagonal */
          assert_true(fabs(gstat_laplacian_op_degrees(op)[i] - R->v[i * n + i]) <= 1e-12);
        gstat_laplacian_op_destroy(op);
        if (normed) continue;
        /* random walk: row i of D - A over d_i (0 for an isolated node) */
        assert_int_equal(
            gstat_laplacian_op_create(ctx, form ? &Gd : &G, GSTAT_LAPLACIAN_RANDOM_WALK, &op),
            GSTAT_OK);
        assert_int_equal(gstat_laplacian_op_apply(ctx, op, 20, X, Y), GSTAT_OK);
        for (int64_t col = 0; col < 20; col++)
          for (int64_t i = 0; i < n; i++) {
            double want = 0, di = R->v[i * n + i];
            for (int64_t j = 0; j < n; j++) want += R->v[i * n + j] * X[j + col * n];
            want = di > 0 ? want / di : 0.0;
            assert_true(fabs(Y[i + col * n] - want) <= 1e-12 * (1 + fabs(want)));
          }
        gstat_laplacian_op_destroy(op);
      }
      free(X);
      free(Y);
    }
    /* random walk: I - D^-1 A, row i of the unnormalized Laplacian over d_i */
    snprintf(key, sizeof key, "lap/%s/normed=0", names[gi]);
    const gref_entry *U = gref_get(&REF, key);
    dense_laplacian(ctx, A->v, n, sym, GSTAT_LAPLACIAN_RANDOM_WALK, L, deg);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double d = U->v[i * n + i], want = d > 0 ? U->v[i * n + j] / d : 0.0;
        assert_true(fabs(L[i * n + j] - want) <= 1e-14);
      }
    /* components against scipy */
    gstat_matrix Am = gstat_matrix_row_major(A->v, GSTAT_F64, 1, n, n);
    gstat_graph G = gstat_graph_dense(&Am);
    int64_t count = -1;
    assert_int_equal(gstat_graph_components(ctx, &G, &count, NULL), GSTAT_OK);
    assert_int_equal(count, comps);
    G = gstat_graph_csr(n, c.off, c.idx, c.w);
    assert_int_equal(gstat_graph_components(ctx, &G, &count, NULL), GSTAT_OK);
    assert_int_equal(count, comps);
    tcsr_free(&c);
    free(L);
    free(Lc);
    free(deg);
  }
  gstat_ctx_destroy(ctx);
}

/* float32 / bfloat16 inputs and outputs, strided batches, in place. */
static void test_laplacian_dtypes_batches(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  const gref_entry *A = gref_get(&REF, "lap/small/adjacency");
  const gref_entry *R = gref_get(&REF, "lap/small/normed=1");
  int64_t n = A->rows;
  for (int dt = 0; dt < 2; dt++) {
    gstat_dtype dtype = dt ? GSTAT_BF16 : GSTAT_F32;
    for (tu_layout lay = 0; lay < TU_LAYOUT_COUNT; lay++) {
      tu_buf in = tu_buf_new(dtype, 3, n, n, lay), out = tu_buf_new(GSTAT_F32, 3, n, n, lay);
      for (int64_t b = 0; b < 3; b++)
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < n; j++) tu_set(&in.m, b, i, j, A->v[i * n + j]);
      tu_poison(&out);
      gstat_graph G = gstat_graph_dense(&in.m);
      assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &out.m, NULL), GSTAT_OK);
      assert_true(tu_all_written(&out));
      assert_true(tu_outside_untouched(&out));
      double tol = dt ? 2e-2 : 1e-6; /* bf16 rounds the weights themselves */
      for (int64_t b = 0; b < 3; b++)
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < n; j++)
            assert_true(fabs(tu_get(&out.m, b, i, j) - R->v[i * n + j]) <= tol);
      tu_buf_free(&in);
      tu_buf_free(&out);
    }
  }
  /* in place: L written over the adjacency it reads */
  double *a = malloc(sizeof(double) * (size_t)(n * n));
  memcpy(a, A->v, sizeof(double) * (size_t)(n * n));
  gstat_matrix M = gstat_matrix_row_major(a, GSTAT_F64, 1, n, n);
  gstat_graph G = gstat_graph_dense(&M);
  assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &M, NULL), GSTAT_OK);
  assert_true(max_abs_diff(a, R->v, n * n) <= 1e-13);
  free(a);
  gstat_ctx_destroy(ctx);
}

/* A random graph: `blocks` groups of nodes with edges only inside, plus
 * `isolated` nodes at the end. Row-major n x n. */
static void block_graph(tu_rng *rng, int64_t n, int64_t blocks, int64_t isolated, double p,
                        double *a) {
  memset(a, 0, sizeof(double) * (size_t)(n * n));
  int64_t m = n - isolated;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = i + 1; j < m; j++)
      if (i * blocks / m == j * blocks / m && (j == i + 1 || tu_uniform(rng) < p))
        a[i * n + j] = a[j * n + i] = 0.1 + tu_uniform(rng); /* a path keeps blocks connected */
}

static void test_laplacian_identities(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  tu_rng rng = tu_rng_new();
  int64_t n = tu_quick() ? 24 : 60;
  double *a = malloc(sizeof(double) * (size_t)(n * n)),
         *L = malloc(sizeof(double) * (size_t)(n * n));
  double *w = malloc(sizeof(double) * (size_t)n), *deg = malloc(sizeof(double) * (size_t)n);
  struct {
    int64_t blocks, isolated;
  } cases[] = {{1, 0}, {2, 0}, {3, 2}, {1, 1}, {4, 0}};
  for (int c = 0; c < 5; c++) {
    block_graph(&rng, n, cases[c].blocks, cases[c].isolated, 0.3, a);
    int64_t want = cases[c].blocks + cases[c].isolated, count;
    gstat_matrix Am = gstat_matrix_row_major(a, GSTAT_F64, 1, n, n);
    gstat_graph G = gstat_graph_dense(&Am);
    assert_int_equal(gstat_graph_components(ctx, &G, &count, NULL), GSTAT_OK);
    assert_int_equal(count, want);
    for (int kind = 0; kind < 3; kind++) {
      dense_laplacian(ctx, a, n, GSTAT_SYM_CHECK, (gstat_laplacian_kind)kind, L, deg);
      if (kind != GSTAT_LAPLACIAN_SYMMETRIC) /* rows of D - A and I - D^-1 A sum to 0 */
        for (int64_t i = 0; i < n; i++) {
          double s = 0;
          for (int64_t j = 0; j < n; j++) s += L[i * n + j];
          assert_true(fabs(s) <= 1e-13 * (1 + deg[i]));
        }
      if (kind == GSTAT_LAPLACIAN_RANDOM_WALK) continue; /* not symmetric */
      gstat_matrix Lm = gstat_matrix_row_major(L, GSTAT_F64, 1, n, n);
      gstat_matrix W = gstat_vector_batch(w, GSTAT_F64, 1, n);
      assert_int_equal(gstat_eigh(ctx, &Lm, GSTAT_LOWER, &W, NULL, NULL), GSTAT_OK);
      int64_t zeros = 0;
      for (int64_t i = 0; i < n; i++) {
        zeros += fabs(w[i]) < 1e-10;
        assert_true(w[i] >= -1e-12);
        if (kind == GSTAT_LAPLACIAN_SYMMETRIC) assert_true(w[i] <= 2 + 1e-12);
      }
      assert_int_equal(zeros, want);
    }
  }
  free(a);
  free(L);
  free(w);
  free(deg);
  gstat_ctx_destroy(ctx);
}

static void test_edges_and_symmetrization(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  /* unsorted, a duplicate (1 -> 2 twice: summed), one direction only, a self-loop */
  int64_t src[] = {2, 1, 0, 1, 3, 2};
  int64_t dst[] = {0, 2, 1, 2, 3, 1};
  double w[] = {1.0, 0.5, 2.0, 0.25, 4.0, 3.0};
  gstat_csr *c = NULL;
  assert_int_equal(gstat_csr_from_edges(ctx, 4, 6, src, dst, w, GSTAT_SYM_CHECK, &c), GSTAT_EINVAL);
  assert_null(c);
  assert_string_equal(gstat_ctx_last_error(ctx),
                      "csr_from_edges: the edge list is not symmetric: entry (0, 1)=2 but (1, 0)=0 "
                      "(set symmetrize to MAX, MEAN or SUM)");
  /* directed weights: (0,1)=2, (1,2)=0.75, (2,0)=1, (2,1)=3, (3,3)=4 */
  struct {
    gstat_symmetrize s;
    double w01, w12, w02;
  } modes[] = {{GSTAT_SYM_MAX, 2, 3, 1},
               {GSTAT_SYM_MEAN, 1, 1.875, 0.5},
               {GSTAT_SYM_SUM, 2, 3.75, 1},
               {GSTAT_SYM_MIN, 0, 0.75, 0}};
  for (int m = 0; m < 4; m++) {
    assert_int_equal(gstat_csr_from_edges(ctx, 4, 6, src, dst, w, modes[m].s, &c), GSTAT_OK);
    double d[16] = {0};
    assert_int_equal(c->n, 4);
    assert_int_equal(c->offsets[4], c->nnz);
    for (int64_t i = 0; i < 4; i++)
      for (int64_t e = c->offsets[i]; e < c->offsets[i + 1]; e++) {
        if (e > c->offsets[i]) assert_true(c->indices[e] > c->indices[e - 1]);
        d[i * 4 + c->indices[e]] = c->weights[e];
      }
    assert_true(d[1] == modes[m].w01 && d[4] == modes[m].w01);
    assert_true(d[6] == modes[m].w12 && d[9] == modes[m].w12);
    assert_true(d[2] == modes[m].w02 && d[8] == modes[m].w02);
    assert_true(d[15] == (modes[m].s == GSTAT_SYM_SUM ? 8.0 : 4.0)); /* the loop is kept */
    /* the CSR is a graph: loop dropped by default, components */
    gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
    int64_t count, lab[4];
    assert_int_equal(gstat_graph_components(ctx, &G, &count, lab), GSTAT_OK);
    assert_int_equal(count, modes[m].s == GSTAT_SYM_MIN ? 3 : 2); /* node 3 alone */
    assert_int_equal(lab[0], 0);
    assert_int_equal(lab[3], count - 1);
    double L[16], deg[4];
    gstat_matrix Lm = gstat_matrix_row_major(L, GSTAT_F64, 1, 4, 4);
    gstat_matrix D = gstat_vector_batch(deg, GSTAT_F64, 1, 4);
    assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_UNNORMALIZED, &Lm, &D), GSTAT_OK);
    assert_true(deg[3] == 0 && L[15] == 0);
    G.self_loops = GSTAT_LOOPS_KEEP; /* the loop counts in the degree, cancels in D - A */
    assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_UNNORMALIZED, &Lm, &D), GSTAT_OK);
    assert_true(deg[3] == d[15] && L[15] == 0);
    gstat_csr_free(c);
    c = NULL;
  }
  {
    /* exactly symmetric with self-loops and a stored zero pair: the loops
     * leave the degrees (dropped by a plain copy), the zero pair joins nothing */
    const int64_t off[] = {0, 2, 4, 6}, idx[] = {0, 1, 0, 2, 1, 2};
    const double wt[] = {5, 2, 2, 0, 0, 1};
    gstat_graph G = gstat_graph_csr(3, off, idx, wt);
    int64_t loff[4], lidx[8], nnz = 0, count = 0, lab[3];
    double lval[8], deg[3];
    assert_int_equal(
        gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_UNNORMALIZED, 8, loff, lidx, lval, &nnz, deg),
        GSTAT_OK);
    assert_int_equal(nnz, 5);
    assert_true(deg[0] == 2 && deg[1] == 2 && deg[2] == 0);
    const int64_t want_off[] = {0, 2, 4, 5}, want_idx[] = {0, 1, 0, 1, 2};
    const double want_val[] = {2, -2, -2, 2, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(loff[i], want_off[i]);
    for (int e = 0; e < 5; e++) {
      assert_int_equal(lidx[e], want_idx[e]);
      assert_true(lval[e] == want_val[e]);
    }
    assert_int_equal(gstat_graph_components(ctx, &G, &count, lab), GSTAT_OK);
    assert_int_equal(count, 2);
    /* a capacity short of the need: refused, the need told, nothing written */
    loff[0] = -1;
    tu_expect_fail(
        ctx,
        gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_UNNORMALIZED, 4, loff, lidx, lval, &nnz, NULL),
        GSTAT_EINVAL, "laplacian_csr: capacity=4 is below the 5 entries needed");
    assert_int_equal(nnz, 5);
    assert_int_equal(loff[0], -1);
  }
  /* an empty graph and an edge-free one */
  assert_int_equal(gstat_csr_from_edges(ctx, 0, 0, NULL, NULL, NULL, GSTAT_SYM_MAX, &c), GSTAT_OK);
  assert_int_equal(c->n, 0);
  gstat_csr_free(c);
  assert_int_equal(gstat_csr_from_edges(ctx, 3, 0, NULL, NULL, NULL, GSTAT_SYM_MAX, &c), GSTAT_OK);
  gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
  int64_t count;
  assert_int_equal(gstat_graph_components(ctx, &G, &count, NULL), GSTAT_OK);
  assert_int_equal(count, 3);
  gstat_csr_free(c);
  gstat_ctx_destroy(ctx);
}

/* CSR (library-owned) to a dense row-major matrix. */
static double *densify(const gstat_csr *c) {
  double *d = calloc((size_t)(c->n * c->n), sizeof(double));
  for (int64_t i = 0; i < c->n; i++)
    for (int64_t e = c->offsets[i]; e < c->offsets[i + 1]; e++)
      d[i * c->n + c->indices[e]] = c->weights ? c->weights[e] : 1.0;
  return d;
}

static void test_affinities(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  /* RBF against sklearn.metrics.pairwise.rbf_kernel, dense and CSR */
  const gref_entry *X = gref_get(&REF, "rbf/X"), *R = gref_get(&REF, "rbf/A");
  int64_t n = X->rows, p = X->cols;
  gstat_affinity_options o;
  gstat_affinity_options_init(&o);
  o.gamma = gref_get(&REF, "rbf/gamma")->v[0];
  gstat_matrix Xm = gstat_matrix_row_major(X->v, GSTAT_F64, 1, n, p);
  double *A = malloc(sizeof(double) * (size_t)(n * n));
  gstat_matrix Am = gstat_matrix_row_major(A, GSTAT_F64, 1, n, n);
  assert_int_equal(gstat_affinity_dense(ctx, &Xm, &o, &Am), GSTAT_OK);
  assert_true(max_abs_diff(A, R->v, n * n) <= 1e-13);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) assert_true(A[i * n + j] == A[j * n + i]);
  gstat_csr *c = NULL;
  assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_OK);
  double *d = densify(c);
  assert_true(max_abs_diff(d, R->v, n * n) <= 1e-13);
  free(d);
  gstat_csr_free(c);
  free(A);

  /* kNN connectivity, (C + C^T) / 2 with the point itself: scikit-learn's graph */
  const char *sets[] = {"moons", "blobs"};
  for (int s = 0; s < 2; s++) {
    char key[64];
    snprintf(key, sizeof key, "knn/%s/X", sets[s]);
    X = gref_get(&REF, key);
    snprintf(key, sizeof key, "knn/%s/graph", sets[s]);
    const gref_entry *K = gref_get(&REF, key);
    n = X->rows;
    p = X->cols;
    Xm = gstat_matrix_row_major(X->v, GSTAT_F64, 1, n, p);
    gstat_affinity_options_init(&o);
    o.kind = GSTAT_AFFINITY_KNN;
    assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_OK);
    assert_int_equal(c->nnz, K->rows);
    for (int64_t e = 0; e < K->rows; e++) {
      int64_t i = (int64_t)K->v[e * 3], j = (int64_t)K->v[e * 3 + 1];
      assert_true(e >= c->offsets[i] && e < c->offsets[i + 1]);
      assert_int_equal(c->indices[e], j);
      assert_true(c->weights[e] == K->v[e * 3 + 2]);
    }
    double *full = densify(c);
    /* mutual kNN: the pairs in both directions, weight 1 */
    o.kind = GSTAT_AFFINITY_MUTUAL_KNN;
    gstat_csr *m = NULL;
    assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &m), GSTAT_OK);
    double *mu = densify(m);
    for (int64_t i = 0; i < n * n; i++) assert_true(mu[i] == (full[i] == 1.0 ? 1.0 : 0.0));
    /* distance weights: the Euclidean distance of each kept pair */
    o.kind = GSTAT_AFFINITY_KNN;
    o.weights = GSTAT_KNN_DISTANCE;
    o.symmetrize = GSTAT_SYM_MAX;
    o.include_self = 0;
    o.n_neighbors = 9; /* the 9 others of the graph above */
    gstat_csr *dc = NULL;
    assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &dc), GSTAT_OK);
    for (int64_t i = 0; i < n; i++)
      for (int64_t e = dc->offsets[i]; e < dc->offsets[i + 1]; e++) {
        int64_t j = dc->indices[e];
        double dist = hypot(X->v[i * p] - X->v[j * p], X->v[i * p + 1] - X->v[j * p + 1]);
        assert_true(j != i && fabs(dc->weights[e] - dist) <= 1e-12 * (1 + dist));
        assert_true(full[i * n + j] > 0); /* the same pairs, without the self-loops */
      }
    /* epsilon: brute force; dense output equals the CSR */
    o.kind = GSTAT_AFFINITY_EPSILON;
    o.weights = GSTAT_KNN_CONNECTIVITY;
    o.epsilon = 0.3;
    gstat_csr *ec = NULL;
    assert_int_equal(gstat_affinity_csr(ctx, &Xm, &o, &ec), GSTAT_OK);
    double *ed = densify(ec), *edd = malloc(sizeof(double) * (size_t)(n * n));
    gstat_matrix Em = gstat_matrix_col_major(edd, GSTAT_F64, 1, n, n);
    assert_int_equal(gstat_affinity_dense(ctx, &Xm, &o, &Em), GSTAT_OK);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double dist = hypot(X->v[i * p] - X->v[j * p], X->v[i * p + 1] - X->v[j * p + 1]);
        if (i != j && fabs(dist - 0.3) > 1e-9)
          assert_true(ed[i * n + j] == (dist <= 0.3 ? 1.0 : 0.0));
        assert_true(edd[i + j * n] == ed[i * n + j]);
      }
    free(ed);
    free(edd);
    free(full);
    free(mu);
    gstat_csr_free(c);
    gstat_csr_free(m);
    gstat_csr_free(dc);
    gstat_csr_free(ec);
  }
  gstat_ctx_destroy(ctx);
}

/* gstat_knn: scikit-learn's kneighbors order (distance, then index), the
 * point itself first with include_self, float32 data, its refusals. */
static void test_knn_lists(void **state) {
  (void)state;
  gstat_ctx *ctx = NULL;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  /* 1-d points 0, 2, 4, 5, 9: point 1's two nearest tie at distance 2 */
  float x[5] = {0, 2, 4, 5, 9};
  gstat_matrix X = gstat_matrix_col_major(x, GSTAT_F32, 1, 5, 1);
  int64_t ind[25]; /* 5 points x k up to 5 */
  double dist[25];
  assert_int_equal(gstat_knn(ctx, &X, 2, 0, ind, dist), GSTAT_OK);
  const int64_t want[10] = {1, 2, 0, 2, 3, 1, 2, 1, 3, 2};
  const double wd[10] = {2, 4, 2, 2, 1, 2, 1, 3, 4, 5};
  for (int e = 0; e < 10; e++) {
    assert_int_equal(ind[e], want[e]);
    assert_true(dist[e] == wd[e]);
  }
  assert_int_equal(gstat_knn(ctx, &X, 3, 1, ind, NULL), GSTAT_OK);
  const int64_t self[6] = {0, 1, 2, 1, 0, 2}; /* rows 0 and 1 */
  for (int e = 0; e < 6; e++) assert_int_equal(ind[e], self[e]);
  assert_int_equal(gstat_knn(ctx, &X, 5, 1, ind, NULL), GSTAT_OK);
  tu_expect_fail(ctx, gstat_knn(ctx, &X, 5, 0, ind, dist), GSTAT_EINVAL,
                 "knn: k=5 must be in [1, 4] for 5 points");
  tu_expect_fail(ctx, gstat_knn(ctx, &X, 1, 0, NULL, dist), GSTAT_EINVAL, "knn: indices is NULL");
  x[3] = NAN;
  tu_expect_fail(ctx, gstat_knn(ctx, &X, 1, 0, ind, dist), GSTAT_ENOTFINITE,
                 "knn: X row 3 column 0 is NaN or Inf");
  gstat_ctx_destroy(ctx);
}

/* The symmetry check of a graph large enough to run on threads: a ring with
 * two neighbours each side is accepted (exactly symmetric, by the hash
 * pass; pairs equal to rounding, by the lookups), two pairs' weights
 * swapped are refused although the weights and counts are the same, and
 * with two defects the message names the one the serial order finds first
 * (upper entries before missing lower mirrors), whichever thread saw what. */
static void test_symmetry_check_threads(void **state) {
  (void)state;
  enum { N = 200000, K = 4 };
  int64_t *off = malloc(sizeof(int64_t) * (N + 1)), *idx = malloc(sizeof(int64_t) * N * K);
  double *w = malloc(sizeof(double) * N * K);
  for (int64_t i = 0; i < N; i++) {
    int64_t nb[K] = {(i + N - 2) % N, (i + N - 1) % N, (i + 1) % N, (i + 2) % N};
    for (int a = 1; a < K; a++) /* sorted: the rows at the seam wrap */
      for (int b = a; b > 0 && nb[b] < nb[b - 1]; b--) {
        int64_t t = nb[b];
        nb[b] = nb[b - 1];
        nb[b - 1] = t;
      }
    off[i] = i * K;
    for (int a = 0; a < K; a++) {
      idx[i * K + a] = nb[a];
      w[i * K + a] = 1.0 + (double)((i + nb[a]) % 7);
    }
  }
  off[N] = (int64_t)N * K;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  gstat_graph G = gstat_graph_csr(N, off, idx, w);
  int64_t nnz = 0;
  /* exactly symmetric: the hash pass proves it without lookups */
  assert_int_equal(
      gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_OK);
  /* (3, 4) = 1 and (7, 8) = 2 swapped: the same weights and counts, but two pairs differ */
  double w34 = w[3 * K + 2];
  w[3 * K + 2] = w[7 * K + 2];
  w[7 * K + 2] = w34;
  tu_expect_fail(
      ctx, gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_EINVAL,
      "laplacian_csr: G is not symmetric: entry (3, 4)=2 but (4, 3)=1 (set symmetrize to MAX, "
      "MEAN or SUM)");
  w[7 * K + 2] = w[3 * K + 2];
  w[3 * K + 2] = w34;
  w[5 * K + 2] *= 1 + 1e-14; /* (5, 6): equal to rounding */
  assert_int_equal(
      gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_OK);
  assert_int_equal(nnz, (int64_t)N * (K + 1));
  if (gstat_ctx_num_threads(ctx) > 1) /* the check ran on threads */
    assert_true(gstat_ctx_last_threads(ctx) > 1);
  w[10 * K + 0] = 0;      /* (10, 8) = 0: its mirror (8, 10) = 5 is the defect */
  w[(N - 3) * K + 3] = 9; /* (N-3, N-1) = 9 against 1 + (2N-4) % 7 */
  char msg[200];
  snprintf(msg, sizeof msg,
           "laplacian_csr: G is not symmetric: entry (8, 10)=5 but (10, 8)=0 (set symmetrize to "
           "MAX, MEAN or SUM)");
  tu_expect_fail(
      ctx, gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_EINVAL, msg);
  w[10 * K + 0] = 5;
  snprintf(msg, sizeof msg,
           "laplacian_csr: G is not symmetric: entry (%d, %d)=9 but (%d, %d)=%g (set symmetrize "
           "to MAX, MEAN or SUM)",
           N - 3, N - 1, N - 1, N - 3, 1.0 + (double)((2 * N - 4) % 7));
  tu_expect_fail(
      ctx, gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_EINVAL, msg);
  /* a lower entry without its mirror: refused unless it is 0 */
  int64_t off3[] = {0, 0, 1, 1}, idx3[] = {0};
  double w3[] = {2};
  G = gstat_graph_csr(3, off3, idx3, w3);
  tu_expect_fail(
      ctx, gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_EINVAL,
      "laplacian_csr: G is not symmetric: entry (1, 0)=2 but (0, 1)=0 (set symmetrize to "
      "MAX, MEAN or SUM)");
  w3[0] = 0;
  assert_int_equal(
      gstat_laplacian_csr(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL, &nnz, NULL),
      GSTAT_OK);
  gstat_ctx_destroy(ctx);
  free(off);
  free(idx);
  free(w);
}

/* Components of a graph large enough for threads: 300000 nodes in
 * components of random sizes whose nodes interleave (a node's component is
 * a hash of it), each a random tree plus random chords, some nodes
 * isolated, some edges of weight 0 (not edges): the labels on 1 and 4
 * threads equal a breadth-first search's (numbered by smallest node), and
 * the threaded pass ran on threads. */
static void test_components_threads(void **state) {
  (void)state;
  enum { N = 300000, DEG = 3 };
  int64_t *comp = malloc(sizeof(int64_t) * N), *first = malloc(sizeof(int64_t) * N);
  int64_t *off = malloc(sizeof(int64_t) * (N + 1)), *idx = malloc(sizeof(int64_t) * N * 2 * DEG);
  int64_t *src = malloc(sizeof(int64_t) * N * DEG), *dst = malloc(sizeof(int64_t) * N * DEG);
  double *ew = malloc(sizeof(double) * N * DEG), *w = malloc(sizeof(double) * N * 2 * DEG);
  int64_t *want = malloc(sizeof(int64_t) * N), *got = malloc(sizeof(int64_t) * N);
  int64_t *queue = malloc(sizeof(int64_t) * N), *deg = calloc(N, sizeof(int64_t));
  tu_rng rng = tu_rng_new();
  const int64_t groups = 5000;
  for (int64_t g = 0; g < groups; g++) first[g] = -1;
  int64_t m = 0;
  for (int64_t i = 0; i < N; i++) { /* an edge to an earlier node of its group: a tree */
    comp[i] = (int64_t)(tu_uniform(&rng) * (double)groups);
    int64_t g = comp[i];
    if (first[g] >= 0 && tu_uniform(&rng) < 0.98) {
      src[m] = i, dst[m] = first[g], ew[m] = tu_uniform(&rng) < 0.01 ? 0.0 : 1.0 + (double)(i % 5);
      m++;
    }
    if (first[g] < 0 || tu_uniform(&rng) < 0.3) first[g] = i;
  }
  for (int64_t e = 0; e < m; e++) deg[src[e]]++, deg[dst[e]]++;
  off[0] = 0;
  for (int64_t i = 0; i < N; i++) off[i + 1] = off[i] + deg[i], deg[i] = off[i];
  for (int64_t e = 0; e < m; e++) { /* both directions, then rows sorted */
    idx[deg[src[e]]] = dst[e], w[deg[src[e]]++] = ew[e];
    idx[deg[dst[e]]] = src[e], w[deg[dst[e]]++] = ew[e];
  }
  for (int64_t i = 0; i < N; i++)
    for (int64_t a = off[i] + 1; a < off[i + 1]; a++)
      for (int64_t b = a; b > off[i] && idx[b] < idx[b - 1]; b--) {
        int64_t t = idx[b];
        idx[b] = idx[b - 1], idx[b - 1] = t;
        double tw = w[b];
        w[b] = w[b - 1], w[b - 1] = tw;
      }
  int64_t count = 0; /* the reference: breadth-first from each unlabelled node in order */
  for (int64_t i = 0; i < N; i++) want[i] = -1;
  for (int64_t s = 0; s < N; s++) {
    if (want[s] >= 0) continue;
    int64_t head = 0, tail = 0;
    queue[tail++] = s;
    want[s] = count;
    while (head < tail) {
      int64_t u = queue[head++];
      for (int64_t e = off[u]; e < off[u + 1]; e++)
        if (want[idx[e]] < 0 && w[e] > 0) want[idx[e]] = count, queue[tail++] = idx[e];
    }
    count++;
  }
  gstat_graph G = gstat_graph_csr(N, off, idx, w);
  for (int t = 0; t < 2; t++) {
    gstat_ctx_options opt;
    gstat_ctx_options_init(&opt);
    opt.backend = GSTAT_BACKEND_CPU;
    opt.num_threads = t ? 4 : 1;
    gstat_ctx *ctx = NULL;
    assert_int_equal(gstat_ctx_create(&ctx, &opt), GSTAT_OK);
    int64_t n_comp = 0;
    assert_int_equal(gstat_graph_components(ctx, &G, &n_comp, got), GSTAT_OK);
    assert_int_equal(n_comp, count);
    for (int64_t i = 0; i < N; i++)
      if (got[i] != want[i])
        fail_msg("threads %d: node %lld labelled %lld, want %lld", opt.num_threads, (long long)i,
                 (long long)got[i], (long long)want[i]);
    if (t) assert_true(gstat_ctx_last_threads(ctx) > 1);
    gstat_ctx_destroy(ctx);
  }
  assert_true(count > groups / 2); /* weight-0 edges and skipped links split some groups */
  free(comp), free(first), free(off), free(idx), free(src), free(dst), free(ew), free(w);
  free(want), free(got), free(queue), free(deg);
}

static void test_bad_input(void **state) {
  (void)state;
  gstat_ctx *ctx = tu_ctx(GSTAT_BACKEND_CPU);
  /* a 3-node path 0 - 1 - 2 */
  int64_t off[] = {0, 1, 3, 4}, idx[] = {1, 0, 2, 1};
  double w[] = {1, 1, 2, 2};
  double L[9] = {0};
  gstat_matrix Lm = gstat_matrix_row_major(L, GSTAT_F64, 1, 3, 3);
  gstat_graph G = gstat_graph_csr(3, off, idx, w);
  assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_OK);

  int64_t bad_idx[] = {1, 0, 3, 1};
  G = gstat_graph_csr(3, off, bad_idx, w);
  memset(L, 0x7f, sizeof L);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.indices[2]=3 (row 1) is outside the graph's nodes [0, 3)");
  for (int i = 0; i < 9; i++) assert_true(L[i] > 1e300); /* nothing written */
  int64_t unsorted[] = {1, 2, 0, 1};
  G = gstat_graph_csr(3, off, unsorted, w);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: row 1 of G is not sorted: indices[2]=0 follows 2 (CSR rows must be "
                 "strictly increasing; build from an edge list to sum duplicates)");
  int64_t dup[] = {1, 0, 0, 1};
  G = gstat_graph_csr(3, off, dup, w);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: row 1 of G is a duplicate: indices[2]=0 follows 0 (CSR rows must be "
                 "strictly increasing; build from an edge list to sum duplicates)");
  double neg[] = {1, 1, -2, -2}, nan_w[] = {1, 1, NAN, 2};
  G = gstat_graph_csr(3, off, idx, neg);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.weights[2]=-2 (row 1, column 2) is negative: weights must be >= 0");
  G = gstat_graph_csr(3, off, idx, nan_w);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL),
                 GSTAT_ENOTFINITE, "laplacian: G.weights[2] (row 1, column 2) is NaN or Inf");
  double asym[] = {1, 1, 2, 3};
  G = gstat_graph_csr(3, off, idx, asym);
  tu_expect_fail(
      ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
      "laplacian: G is not symmetric: entry (1, 2)=2 but (2, 1)=3 (set symmetrize to MAX, "
      "MEAN or SUM)");
  G.symmetrize = GSTAT_SYM_MEAN; /* accepted once symmetrized */
  assert_int_equal(gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_UNNORMALIZED, &Lm, NULL), GSTAT_OK);
  assert_true(L[5] == -2.5);
  int64_t bad_off[] = {0, 2, 1, 4}, idx2[] = {1, 2, 0, 1};
  G = gstat_graph_csr(3, bad_off, idx2, w);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.offsets[2]=1 is below offsets[1]=2 (offsets must not decrease)");
  G = gstat_graph_csr(3, off, idx, w);
  G.csr.nnz = 5;
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.csr.offsets[n]=4 differs from G.csr.nnz=5");
  G = gstat_graph_csr(3, off, idx, w);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, (gstat_laplacian_kind)7, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: kind=7 is not a gstat_laplacian_kind");
  gstat_matrix L2 = gstat_matrix_row_major(L, GSTAT_F64, 1, 2, 2);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &L2, NULL), GSTAT_EINVAL,
                 "laplacian: L is 1 x 2 x 2, expected 1 x 3 x 3");
  tu_expect_fail(ctx, gstat_laplacian(ctx, NULL, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL),
                 GSTAT_EINVAL, "laplacian: G is NULL");
  /* dense: asymmetric, negative, NaN, not square */
  double a[9] = {0, 1, 0, 1, 0, 2, 0, 2.5, 0};
  gstat_matrix Am = gstat_matrix_row_major(a, GSTAT_F64, 1, 3, 3);
  G = gstat_graph_dense(&Am);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.adjacency[0] is not symmetric: entry (2, 1)=2.5 but (1, 2)=2 (set "
                 "symmetrize to MAX, MEAN or SUM)");
  a[7] = -2;
  a[5] = -2;
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.adjacency[0] entry (2, 1)=-2 is negative: weights must be >= 0");
  a[7] = a[5] = NAN;
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL),
                 GSTAT_ENOTFINITE, "laplacian: G.adjacency[0] entry (2, 1) is NaN or Inf");
  gstat_matrix R = gstat_matrix_row_major(a, GSTAT_F64, 1, 3, 2);
  G = gstat_graph_dense(&R);
  tu_expect_fail(ctx, gstat_laplacian(ctx, &G, GSTAT_LAPLACIAN_SYMMETRIC, &Lm, NULL), GSTAT_EINVAL,
                 "laplacian: G.adjacency is 3 x 2, not square");
  /* edge lists */
  gstat_csr *c = NULL;
  int64_t s[] = {0, 1}, t[] = {1, 5};
  double ew[] = {1, -1};
  tu_expect_fail(ctx, gstat_csr_from_edges(ctx, 3, 2, s, t, NULL, GSTAT_SYM_MAX, &c), GSTAT_EINVAL,
                 "csr_from_edges: edge 1 (1 -> 5) has a node outside [0, 3)");
  t[1] = 2;
  tu_expect_fail(ctx, gstat_csr_from_edges(ctx, 3, 2, s, t, ew, GSTAT_SYM_MAX, &c), GSTAT_EINVAL,
                 "csr_from_edges: weights[1]=-1 (edge 1 -> 2) is negative: weights must be >= 0");
  ew[1] = INFINITY;
  tu_expect_fail(ctx, gstat_csr_from_edges(ctx, 3, 2, s, t, ew, GSTAT_SYM_MAX, &c),
                 GSTAT_ENOTFINITE, "csr_from_edges: weights[1] (edge 1 -> 2) is NaN or Inf");
  tu_expect_fail(ctx, gstat_csr_from_edges(ctx, -1, 0, s, t, NULL, GSTAT_SYM_MAX, &c), GSTAT_EINVAL,
                 "csr_from_edges: n=-1 must be >= 0");
  assert_null(c);
  /* affinities */
  double x[8] = {0, 0, 1, 0, 0, 1, 1, 1};
  gstat_matrix Xm = gstat_matrix_row_major(x, GSTAT_F64, 1, 4, 2);
  gstat_affinity_options o;
  gstat_affinity_options_init(&o);
  o.kind = GSTAT_AFFINITY_KNN;
  o.n_neighbors = 5;
  tu_expect_fail(ctx, gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_EINVAL,
                 "affinity_csr: opt.n_neighbors=5 must be in [1, 4] for 4 points (the point itself "
                 "included)");
  o.n_neighbors = 0;
  tu_expect_fail(ctx, gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_EINVAL,
                 "affinity_csr: opt.n_neighbors=0 must be in [1, 4] for 4 points (the point itself "
                 "included)");
  o.n_neighbors = 2;
  o.symmetrize = GSTAT_SYM_CHECK;
  tu_expect_fail(ctx, gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_EINVAL,
                 "affinity_csr: opt.symmetrize=0 must be MAX, MEAN, SUM or MIN (a kNN graph is "
                 "directed)");
  o.kind = GSTAT_AFFINITY_EPSILON;
  tu_expect_fail(ctx, gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_EINVAL,
                 "affinity_csr: opt.epsilon=0 must be > 0 and finite");
  o.kind = GSTAT_AFFINITY_RBF;
  x[3] = NAN;
  tu_expect_fail(ctx, gstat_affinity_csr(ctx, &Xm, &o, &c), GSTAT_ENOTFINITE,
                 "affinity_csr: X[0] row 1 column 1 is NaN or Inf");
  assert_null(c);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_laplacian_vs_scipy),
      cmocka_unit_test(test_laplacian_dtypes_batches),
      cmocka_unit_test(test_laplacian_identities),
      cmocka_unit_test(test_edges_and_symmetrization),
      cmocka_unit_test(test_affinities),
      cmocka_unit_test(test_knn_lists),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_symmetry_check_threads),
      cmocka_unit_test(test_components_threads),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
