/*
 * Every graph and spectral routine on device data against the same call on
 * host data, shared by test_graph_device.c (the fake module, whose "device
 * memory" is host memory marked GSTAT_CUDA) and test_cuda.c (the real module
 * and cudaMalloc'd memory). Include it after stats_matrix.h (sm_memory,
 * sm_arg). tol: relative tolerance of values (0: bitwise); labels must be
 * identical (the graphs' eigengaps are clear), embeddings span the same
 * subspace.
 */
#ifndef GSTAT_TESTS_GRAPH_DEVICE_H
#define GSTAT_TESTS_GRAPH_DEVICE_H

#include "gstat/spectral.h"
#include "stats_matrix.h"

enum { GD_N = 36, GD_BLOCKS = 3 };

/* A symmetric n x n adjacency of `blocks` dense clusters (weights in
 * [0.5, 1)) joined by a few weak edges: a clear eigengap after `blocks`. */
static void gd_graph(tu_rng *rng, int64_t n, int64_t blocks, double *a) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j <= i; j++) {
      bool same = i * blocks / n == j * blocks / n;
      double w = i == j ? 0.0 : same ? 0.5 + 0.5 * tu_uniform(rng) : 0.0;
      if (!same && (i + 3 * j) % 17 == 0) w = 0.01;
      a[i * n + j] = a[j * n + i] = w;
    }
}

static gstat_ctx *gd_ctx(void) {
  return tu_ctx(GSTAT_BACKEND_AUTO);
}

/* values of two outputs (device one first) agree to tol */
static void gd_same(const sm_memory *mem, const char *what, sm_arg *dev, sm_arg *host, double tol) {
  double *x = sm_values(mem, dev), *y = sm_values(mem, host);
  sm_close(what, x, y, dev->m.batch * dev->m.rows * dev->m.cols, tol);
  free(x);
  free(y);
}

/* gstat_laplacian of dense adjacencies (f64, f32) in device memory, every
 * kind, L and degrees in device memory; then a CSR graph into a device L. */
static void gd_laplacian(const sm_memory *mem, double tol) {
  gstat_ctx *ctx = gd_ctx();
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = GD_N;
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
  for (int64_t b = 0; b < nb; b++) gd_graph(&rng, n, GD_BLOCKS, a + b * n * n);
  const gstat_dtype dts[2] = {GSTAT_F64, GSTAT_F32};
  for (int t = 0; t < 2; t++)
    for (int kind = 0; kind < 3; kind++) {
      sm_arg Ah = sm_arg_new(mem, false, dts[t], nb, n, n, a),
             Ad = sm_arg_new(mem, true, dts[t], nb, n, n, a);
      sm_arg Lh = sm_arg_new(mem, false, dts[t], nb, n, n, NULL),
             Ld = sm_arg_new(mem, true, dts[t], nb, n, n, NULL);
      sm_arg dh = sm_arg_new(mem, false, GSTAT_F64, nb, n, 1, NULL),
             dd = sm_arg_new(mem, true, GSTAT_F64, nb, n, 1, NULL);
      gstat_graph Gh = gstat_graph_dense(&Ah.m), Gd = gstat_graph_dense(&Ad.m);
      sm_check(ctx, gstat_laplacian(ctx, &Gh, (gstat_laplacian_kind)kind, &Lh.m, &dh.m));
      sm_check(ctx, gstat_laplacian(ctx, &Gd, (gstat_laplacian_kind)kind, &Ld.m, &dd.m));
      assert_int_equal(gstat_ctx_last_backends(ctx), GSTAT_RAN_CUDA); /* the device primitive */
      gd_same(mem, "laplacian L", &Ld, &Lh, tol);
      gd_same(mem, "laplacian degrees", &dd, &dh, tol);
      sm_arg_free(mem, &Ah);
      sm_arg_free(mem, &Ad);
      sm_arg_free(mem, &Lh);
      sm_arg_free(mem, &Ld);
      sm_arg_free(mem, &dh);
      sm_arg_free(mem, &dd);
    }
  /* an invalid weight on the device: the host's error and message */
  a[1] = -1.0;
  sm_arg Ah = sm_arg_new(mem, false, GSTAT_F64, 1, n, n, a),
         Ad = sm_arg_new(mem, true, GSTAT_F64, 1, n, n, a);
  sm_arg Ld = sm_arg_new(mem, true, GSTAT_F64, 1, n, n, NULL);
  gstat_graph Gh = gstat_graph_dense(&Ah.m), Gd = gstat_graph_dense(&Ad.m);
  Gh.symmetrize = Gd.symmetrize = GSTAT_SYM_MAX;
  assert_int_equal(gstat_laplacian(ctx, &Gh, GSTAT_LAPLACIAN_SYMMETRIC, &Ld.m, NULL), GSTAT_EINVAL);
  char want[512];
  snprintf(want, sizeof want, "%s", gstat_ctx_last_error(ctx));
  assert_int_equal(gstat_laplacian(ctx, &Gd, GSTAT_LAPLACIAN_SYMMETRIC, &Ld.m, NULL), GSTAT_EINVAL);
  assert_string_equal(gstat_ctx_last_error(ctx), want);
  sm_arg_free(mem, &Ah);
  sm_arg_free(mem, &Ad);
  sm_arg_free(mem, &Ld);
  /* a path graph as CSR, its Laplacian into device memory */
  int64_t off[5] = {0, 1, 3, 5, 6}, idx[6] = {1, 0, 2, 1, 3, 2};
  double w[6] = {1, 1, 2, 2, 3, 3};
  gstat_graph C = gstat_graph_csr(4, off, idx, w);
  sm_arg Ch = sm_arg_new(mem, false, GSTAT_F32, 1, 4, 4, NULL),
         Cd = sm_arg_new(mem, true, GSTAT_F32, 1, 4, 4, NULL);
  sm_arg ch = sm_arg_new(mem, false, GSTAT_F64, 1, 4, 1, NULL),
         cd = sm_arg_new(mem, true, GSTAT_F64, 1, 4, 1, NULL);
  sm_check(ctx, gstat_laplacian(ctx, &C, GSTAT_LAPLACIAN_RANDOM_WALK, &Ch.m, &ch.m));
  sm_check(ctx, gstat_laplacian(ctx, &C, GSTAT_LAPLACIAN_RANDOM_WALK, &Cd.m, &cd.m));
  gd_same(mem, "CSR laplacian L", &Cd, &Ch, 0);
  gd_same(mem, "CSR laplacian degrees", &cd, &ch, 0);
  sm_arg_free(mem, &Ch);
  sm_arg_free(mem, &Cd);
  sm_arg_free(mem, &ch);
  sm_arg_free(mem, &cd);
  free(a);
  gstat_ctx_destroy(ctx);
}

/* The CSR Laplacian, the operator and the components of dense device graphs. */
static void gd_csr_op_components(const sm_memory *mem) {
  gstat_ctx *ctx = gd_ctx();
  tu_rng rng = tu_rng_new();
  const int64_t nb = 2, n = GD_N;
  double *a = malloc(sizeof(double) * (size_t)(nb * n * n));
  for (int64_t b = 0; b < nb; b++) gd_graph(&rng, n, GD_BLOCKS, a + b * n * n);
  for (int64_t i = 0; i < n; i++) /* graph 1: the weak edges cut, 3 components */
    for (int64_t j = 0; j < n; j++)
      if (a[n * n + i * n + j] < 0.1) a[n * n + i * n + j] = 0;
  sm_arg Ah = sm_arg_new(mem, false, GSTAT_F64, nb, n, n, a),
         Ad = sm_arg_new(mem, true, GSTAT_F64, nb, n, n, a);
  gstat_graph Gh = gstat_graph_dense(&Ah.m), Gd = gstat_graph_dense(&Ad.m);
  int64_t ch[2], cd[2], lh[2 * GD_N], ld[2 * GD_N];
  sm_check(ctx, gstat_graph_components(ctx, &Gh, ch, lh));
  sm_check(ctx, gstat_graph_components(ctx, &Gd, cd, ld));
  assert_memory_equal(ch, cd, sizeof ch);
  assert_memory_equal(lh, ld, sizeof lh);
  assert_int_equal(cd[1], GD_BLOCKS);
  /* one graph (batch 1 views of element 0) */
  Gh.adjacency.batch = Gd.adjacency.batch = 1;
  int64_t nnz_h, nnz_d;
  sm_check(ctx, gstat_laplacian_csr(ctx, &Gh, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL,
                                    &nnz_h, NULL));
  sm_check(ctx, gstat_laplacian_csr(ctx, &Gd, GSTAT_LAPLACIAN_SYMMETRIC, 0, NULL, NULL, NULL,
                                    &nnz_d, NULL));
  assert_int_equal(nnz_h, nnz_d);
  int64_t *oh = malloc(sizeof(int64_t) * (size_t)(2 * (n + 1 + nnz_h)));
  double *vh = malloc(sizeof(double) * (size_t)(2 * nnz_h + 2 * n));
  int64_t *ih = oh + n + 1, *od = ih + nnz_h, *id = od + n + 1;
  double *vd = vh + nnz_h, *dgh = vd + nnz_h, *dgd = dgh + n;
  sm_check(ctx, gstat_laplacian_csr(ctx, &Gh, GSTAT_LAPLACIAN_SYMMETRIC, nnz_h, oh, ih, vh, &nnz_h,
                                    dgh));
  sm_check(ctx, gstat_laplacian_csr(ctx, &Gd, GSTAT_LAPLACIAN_SYMMETRIC, nnz_d, od, id, vd, &nnz_d,
                                    dgd));
  assert_memory_equal(oh, od, sizeof(int64_t) * (size_t)(n + 1));
  assert_memory_equal(ih, id, sizeof(int64_t) * (size_t)nnz_h);
  assert_memory_equal(vh, vd, sizeof(double) * (size_t)nnz_h);
  assert_memory_equal(dgh, dgd, sizeof(double) * (size_t)n);
  gstat_laplacian_op *ph = NULL, *pd = NULL;
  sm_check(ctx, gstat_laplacian_op_create(ctx, &Gh, GSTAT_LAPLACIAN_UNNORMALIZED, &ph));
  sm_check(ctx, gstat_laplacian_op_create(ctx, &Gd, GSTAT_LAPLACIAN_UNNORMALIZED, &pd));
  assert_memory_equal(gstat_laplacian_op_degrees(ph), gstat_laplacian_op_degrees(pd),
                      sizeof(double) * (size_t)n);
  double x[GD_N], yh[GD_N], yd[GD_N];
  for (int64_t i = 0; i < n; i++) x[i] = tu_normal(&rng);
  sm_check(ctx, gstat_laplacian_op_apply(ctx, ph, 1, x, yh));
  sm_check(ctx, gstat_laplacian_op_apply(ctx, pd, 1, x, yd));
  assert_memory_equal(yh, yd, sizeof yh);
  gstat_laplacian_op_destroy(ph);
  gstat_laplacian_op_destroy(pd);
  free(oh);
  free(vh);
  sm_arg_free(mem, &Ah);
  sm_arg_free(mem, &Ad);
  free(a);
  gstat_ctx_destroy(ctx);
}

static bool gd_csr_equal(const gstat_csr *x, const gstat_csr *y, double tol) {
  if (x->n != y->n || x->nnz != y->nnz) return false;
  if (memcmp(x->offsets, y->offsets, sizeof(int64_t) * (size_t)(x->n + 1)) ||
      memcmp(x->indices, y->indices, sizeof(int64_t) * (size_t)x->nnz))
    return false;
  for (int64_t e = 0; e < x->nnz; e++)
    if (!(fabs(x->weights[e] - y->weights[e]) <= tol * (1 + fabs(y->weights[e])))) return false;
  return true;
}

/* Affinities of points in device memory: dense into device memory, and CSR. */
static void gd_affinity(const sm_memory *mem, double tol) {
  gstat_ctx *ctx = gd_ctx();
  tu_rng rng = tu_rng_new();
  const int64_t n = 40, p = 3;
  double x[40 * 3];
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < p; j++) x[i * p + j] = tu_normal(&rng) + (double)(i % 3) * 4.0;
  sm_arg Xh = sm_arg_new(mem, false, GSTAT_F64, 1, n, p, x),
         Xd = sm_arg_new(mem, true, GSTAT_F64, 1, n, p, x);
  const gstat_affinity_kind kinds[4] = {GSTAT_AFFINITY_RBF, GSTAT_AFFINITY_KNN,
                                        GSTAT_AFFINITY_MUTUAL_KNN, GSTAT_AFFINITY_EPSILON};
  for (int k = 0; k < 4; k++) {
    gstat_affinity_options o;
    gstat_affinity_options_init(&o);
    o.kind = kinds[k];
    o.n_neighbors = 5;
    o.epsilon = 2.0;
    sm_arg Ah = sm_arg_new(mem, false, GSTAT_F32, 1, n, n, NULL),
           Ad = sm_arg_new(mem, true, GSTAT_F32, 1, n, n, NULL);
    sm_check(ctx, gstat_affinity_dense(ctx, &Xh.m, &o, &Ah.m));
    sm_check(ctx, gstat_affinity_dense(ctx, &Xd.m, &o, &Ad.m));
    gd_same(mem, "affinity_dense", &Ad, &Ah, tol);
    sm_arg_free(mem, &Ah);
    sm_arg_free(mem, &Ad);
    gstat_csr *ch = NULL, *cd = NULL;
    sm_check(ctx, gstat_affinity_csr(ctx, &Xh.m, &o, &ch));
    sm_check(ctx, gstat_affinity_csr(ctx, &Xd.m, &o, &cd));
    assert_true(gd_csr_equal(cd, ch, tol));
    gstat_csr_free(ch);
    gstat_csr_free(cd);
  }
  sm_arg_free(mem, &Xh);
  sm_arg_free(mem, &Xd);
  gstat_ctx_destroy(ctx);
}

/* Largest distance of a unit column of E (n x d, row-major) from the span
 * of F's columns (n x d, row-major), relative. */
static double gd_subspace_gap(int64_t n, int64_t d, const double *E, const double *F) {
  double *Q = malloc(sizeof(double) * (size_t)(n * d)), worst = 0;
  for (int64_t c = 0; c < d; c++) { /* Gram-Schmidt on F's columns */
    for (int64_t i = 0; i < n; i++) Q[c * n + i] = F[i * d + c];
    for (int pass = 0; pass < 2; pass++)
      for (int64_t q = 0; q < c; q++) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += Q[q * n + i] * Q[c * n + i];
        for (int64_t i = 0; i < n; i++) Q[c * n + i] -= s * Q[q * n + i];
      }
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += Q[c * n + i] * Q[c * n + i];
    for (int64_t i = 0; i < n; i++) Q[c * n + i] /= sqrt(s);
  }
  double *r = malloc(sizeof(double) * (size_t)n);
  for (int64_t c = 0; c < d; c++) {
    double norm = 0, res = 0;
    for (int64_t i = 0; i < n; i++) norm += E[i * d + c] * E[i * d + c];
    for (int64_t i = 0; i < n; i++) r[i] = E[i * d + c];
    for (int64_t q = 0; q < d; q++) {
      double s = 0;
      for (int64_t i = 0; i < n; i++) s += Q[q * n + i] * r[i];
      for (int64_t i = 0; i < n; i++) r[i] -= s * Q[q * n + i];
    }
    for (int64_t i = 0; i < n; i++) res += r[i] * r[i];
    worst = fmax(worst, sqrt(res / norm));
  }
  free(Q);
  free(r);
  return worst;
}

/* Spectral clustering (with and without a result) and the embedding of one
 * dense graph in device memory, the embedding written to device memory, on
 * a context of `backend` (CUDA: the Laplacian and the eigh stay on the
 * device for the embedding, and nothing runs on the CPU backend). */
static void gd_spectral(const sm_memory *mem, double tol, gstat_backend backend) {
  gstat_ctx *ctx = tu_ctx(backend);
  tu_rng rng = tu_rng_new();
  const int64_t n = 3 * GD_N, k = GD_BLOCKS;
  double *a = malloc(sizeof(double) * (size_t)(n * n));
  gd_graph(&rng, n, k, a);
  const gstat_dtype dts[2] = {GSTAT_F64, GSTAT_F32};
  for (int t = 0; t < 2; t++) {
    sm_arg Ah = sm_arg_new(mem, false, dts[t], 1, n, n, a),
           Ad = sm_arg_new(mem, true, dts[t], 1, n, n, a);
    gstat_graph Gh = gstat_graph_dense(&Ah.m), Gd = gstat_graph_dense(&Ad.m);
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    o.n_clusters = k;
    int64_t lh[3 * GD_N], ld[3 * GD_N];
    gstat_spectral_result *rh = NULL, *rd = NULL;
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gh, &o, lh, &rh));
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gd, &o, ld, NULL));
    assert_memory_equal(lh, ld, sizeof lh);
    memset(ld, 0, sizeof ld);
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gd, &o, ld, &rd));
    assert_memory_equal(lh, ld, sizeof lh);
    assert_int_equal(rd->n_clusters, k);
    assert_int_equal(rd->n_components, rh->n_components);
    double etol = dts[t] == GSTAT_F32 ? 1e-4 : tol > 0 ? 1e-9 : 0;
    sm_close("spectral eigenvalues", rd->eigenvalues, rh->eigenvalues, rh->n_eigenvalues, etol);
    assert_true(gd_subspace_gap(n, rh->n_components, rd->embedding, rh->embedding) <=
                (dts[t] == GSTAT_F32 ? 1e-3 : 1e-8));
    gstat_spectral_result_free(rh);
    gstat_spectral_result_free(rd);
    /* the iterative solver: its operator is formed from a host copy */
    o.solver = GSTAT_EIGEN_SPARSE;
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gh, &o, lh, NULL));
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gd, &o, ld, NULL));
    assert_memory_equal(lh, ld, sizeof lh);
    o.solver = GSTAT_EIGEN_AUTO;
    /* cluster-QR */
    o.assign = GSTAT_ASSIGN_CLUSTER_QR;
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gh, &o, lh, NULL));
    sm_check(ctx, gstat_spectral_clustering(ctx, &Gd, &o, ld, NULL));
    assert_memory_equal(lh, ld, sizeof lh);
    o.assign = GSTAT_ASSIGN_KMEANS;
    /* the embedding alone, into device memory */
    o.n_components = k;
    sm_arg Eh = sm_arg_new(mem, false, GSTAT_F64, 1, n, k, NULL),
           Ed = sm_arg_new(mem, true, GSTAT_F64, 1, n, k, NULL);
    double wh[GD_BLOCKS + 1], wd[GD_BLOCKS + 1];
    sm_check(ctx, gstat_spectral_embedding(ctx, &Gh, &o, &Eh.m, wh));
    sm_check(ctx, gstat_spectral_embedding(ctx, &Gd, &o, &Ed.m, wd));
    if (backend == GSTAT_BACKEND_CUDA)
      assert_int_equal(gstat_ctx_last_backends(ctx), GSTAT_RAN_CUDA);
    double *eh = sm_values(mem, &Eh), *ed = sm_values(mem, &Ed);
    assert_true(gd_subspace_gap(n, k, ed, eh) <= (dts[t] == GSTAT_F32 ? 1e-3 : 1e-8));
    sm_close("embedding eigenvalues", wd, wh, k, etol);
    free(eh);
    free(ed);
    sm_arg_free(mem, &Eh);
    sm_arg_free(mem, &Ed);
    sm_arg_free(mem, &Ah);
    sm_arg_free(mem, &Ad);
  }
  free(a);
  gstat_ctx_destroy(ctx);
}

/* ---- one large CSR graph: the sparse eigensolver where the context says ---- */

enum { GD_RING = 600, GD_RINGS = 4, GD_REACH = 4 };

/* GD_RINGS rings of GD_RING nodes, each node joined to the GD_REACH nearest
 * on both sides (weights in [0.5, 1)), consecutive rings joined by one weak
 * edge: rows sorted, symmetric. off: n + 1, idx and w: n (2 GD_REACH) + 2
 * GD_RINGS. */
static void gd_rings(tu_rng *rng, int64_t *off, int64_t *idx, double *w) {
  const int64_t n = GD_RING * GD_RINGS;
  double *ring = malloc(sizeof(double) * (size_t)(n * GD_REACH)); /* weight of i -- i + d */
  for (int64_t i = 0; i < n * GD_REACH; i++) ring[i] = 0.5 + 0.5 * tu_uniform(rng);
  int64_t e = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i / GD_RING, at = i % GD_RING, base = r * GD_RING;
    off[i] = e;
    /* the weak link: the first node of ring r to the first of r - 1 and r + 1 */
    if (at == 0 && r > 0) idx[e] = base - GD_RING, w[e++] = 0.01;
    int64_t nb[2 * GD_REACH];
    double wb[2 * GD_REACH];
    for (int64_t d = 1; d <= GD_REACH; d++) {
      int64_t lo = base + (at - d + GD_RING) % GD_RING, hi = base + (at + d) % GD_RING;
      nb[2 * d - 2] = lo, wb[2 * d - 2] = ring[lo * GD_REACH + d - 1];
      nb[2 * d - 1] = hi, wb[2 * d - 1] = ring[i * GD_REACH + d - 1];
    }
    for (int a = 0; a < 2 * GD_REACH; a++) /* sorted by column */
      for (int b = a + 1; b < 2 * GD_REACH; b++)
        if (nb[b] < nb[a]) {
          int64_t t = nb[a];
          double u = wb[a];
          nb[a] = nb[b], wb[a] = wb[b], nb[b] = t, wb[b] = u;
        }
    for (int a = 0; a < 2 * GD_REACH; a++) idx[e] = nb[a], w[e++] = wb[a];
    if (at == 0 && r + 1 < GD_RINGS) idx[e] = base + GD_RING, w[e++] = 0.01;
  }
  off[n] = e;
  free(ring);
}

/* Spectral clustering of one large CSR graph on a CUDA context (the
 * Laplacian planned on the device, the solver's basis there) against a CPU
 * context: the same labels, eigenvalues to the solver's tolerance, the
 * device recorded; with `fault` set in fault_var (a failing product), the
 * host's solver reruns it (fault NULL: not tried). */
static void gd_spectral_sparse(const char *fault_var, const char *fault) {
  const int64_t n = GD_RING * GD_RINGS, cap = n * 2 * GD_REACH + 2 * GD_RINGS;
  int64_t *off = malloc(sizeof(int64_t) * (size_t)(n + 1)), *idx = malloc(sizeof(int64_t) * cap);
  double *w = malloc(sizeof(double) * (size_t)cap);
  int64_t *lh = malloc(sizeof(int64_t) * 2 * (size_t)n), *ld = lh + n;
  tu_rng rng = tu_rng_new();
  gd_rings(&rng, off, idx, w);
  gstat_graph G = gstat_graph_csr(n, off, idx, w);
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  const gstat_laplacian_kind kinds[2] = {GSTAT_LAPLACIAN_SYMMETRIC, GSTAT_LAPLACIAN_UNNORMALIZED};
  for (int t = 0; t < (fault ? 3 : 2); t++) {
    if (t == 2 && fault) setenv(fault_var, fault, 1);
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    o.n_clusters = GD_RINGS;
    o.solver = GSTAT_EIGEN_SPARSE;
    o.laplacian = kinds[t % 2];
    o.eig_tol = 1e-10;
    gstat_spectral_result *rh = NULL, *rd = NULL;
    sm_check(cpu, gstat_spectral_clustering(cpu, &G, &o, lh, &rh));
    sm_check(gpu, gstat_spectral_clustering(gpu, &G, &o, ld, &rd));
    assert_true(rh->used_sparse && rd->used_sparse);
    assert_memory_equal(lh, ld, sizeof(int64_t) * (size_t)n);
    for (int64_t i = 1; i < n; i++) /* the rings, recovered */
      assert_int_equal(lh[i] == lh[i - 1], i % GD_RING != 0);
    double scale = o.laplacian == GSTAT_LAPLACIAN_SYMMETRIC ? 2 : 8;
    sm_close("sparse eigenvalues", rd->eigenvalues, rh->eigenvalues, rh->n_eigenvalues,
             1e-8 * scale);
    unsigned ran = gstat_ctx_last_backends(gpu);
    assert_true(ran & (t == 2 ? GSTAT_RAN_CPU : GSTAT_RAN_CUDA));
    gstat_spectral_result_free(rh);
    gstat_spectral_result_free(rd);
  }
  if (fault) unsetenv(fault_var);
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
  free(off);
  free(idx);
  free(w);
  free(lh);
}

/* GD_KM_CLUSTERS random 8-regular-ish clusters of GD_KM_SIZE nodes (each
 * node joined to 4 random others of its cluster, weights in [0.5, 1)), a
 * weak ring between the clusters: a clear eigengap, large enough that one
 * graph's k-means goes where the context says (the GPU's rule: 20000 points). */
enum { GD_KM_SIZE = 6000, GD_KM_CLUSTERS = 4, GD_KM_LINKS = 4 };

static gstat_csr *gd_km_graph(gstat_ctx *ctx, tu_rng *rng) {
  const int64_t n = GD_KM_SIZE * GD_KM_CLUSTERS, m = n * GD_KM_LINKS + GD_KM_CLUSTERS;
  int64_t *src = malloc(sizeof(int64_t) * (size_t)(2 * m)), *dst = src + m;
  double *w = malloc(sizeof(double) * (size_t)m);
  int64_t e = 0;
  for (int64_t i = 0; i < n; i++)
    for (int t = 0; t < GD_KM_LINKS; t++) {
      int64_t base = i / GD_KM_SIZE * GD_KM_SIZE,
              j = base + (int64_t)(tu_uniform(rng) * GD_KM_SIZE);
      if (j == i) j = base + (i - base + 1) % GD_KM_SIZE;
      src[e] = i, dst[e] = j, w[e++] = 0.5 + 0.5 * tu_uniform(rng);
    }
  for (int64_t c = 0; c < GD_KM_CLUSTERS; c++)
    src[e] = c * GD_KM_SIZE, dst[e] = (c + 1) % GD_KM_CLUSTERS * GD_KM_SIZE, w[e++] = 0.01;
  gstat_csr *G = NULL;
  sm_check(ctx, gstat_csr_from_edges(ctx, n, e, src, dst, w, GSTAT_SYM_MAX, &G));
  free(src);
  free(w);
  return G;
}

/* One large graph's k-means on a CUDA context (on the device: the module's
 * kmeans, or the fake's CPU code) and under AUTO against a CPU context: the
 * same labels, the clusters recovered, the inertia to rounding, the device
 * recorded. */
static void gd_kmeans_large(void) {
  gstat_ctx *cpu = tu_ctx(GSTAT_BACKEND_CPU), *gpu = tu_ctx(GSTAT_BACKEND_CUDA);
  tu_rng rng = tu_rng_new();
  gstat_csr *C = gd_km_graph(cpu, &rng);
  const int64_t n = C->n;
  gstat_graph G = gstat_graph_csr(n, C->offsets, C->indices, C->weights);
  int64_t *lh = malloc(sizeof(int64_t) * 2 * (size_t)n), *ld = lh + n;
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  o.n_clusters = GD_KM_CLUSTERS;
  o.solver = GSTAT_EIGEN_SPARSE;
  gstat_spectral_result *rh = NULL, *rd = NULL;
  sm_check(cpu, gstat_spectral_clustering(cpu, &G, &o, lh, &rh));
  sm_check(gpu, gstat_spectral_clustering(gpu, &G, &o, ld, &rd));
  assert_memory_equal(lh, ld, sizeof(int64_t) * (size_t)n);
  for (int64_t i = 1; i < n; i++) assert_int_equal(lh[i] == lh[i - 1], i % GD_KM_SIZE != 0);
  assert_true(fabs(rd->inertia - rh->inertia) <= 1e-9 * fmax(1, rh->inertia));
  assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
  /* block 1 (eigen_solver="lanczos", its basis on the device): the same
   * labels */
  o.solver = GSTAT_EIGEN_LANCZOS;
  sm_check(gpu, gstat_spectral_clustering(gpu, &G, &o, ld, NULL));
  assert_memory_equal(lh, ld, sizeof(int64_t) * (size_t)n);
  assert_true(gstat_ctx_last_backends(gpu) & GSTAT_RAN_CUDA);
  o.solver = GSTAT_EIGEN_SPARSE;
  gstat_spectral_result_free(rd);
  /* AUTO: the solve of 24000 nodes stays on the CPU (the rules' 1e5 nodes),
   * the k-means goes to the device (from 20000 points): the same labels */
  gstat_ctx *automatic = tu_ctx(GSTAT_BACKEND_AUTO);
  sm_check(automatic, gstat_spectral_clustering(automatic, &G, &o, ld, &rd));
  assert_memory_equal(lh, ld, sizeof(int64_t) * (size_t)n);
  assert_int_equal(gstat_ctx_last_backends(automatic), GSTAT_RAN_CPU | GSTAT_RAN_CUDA);
  gstat_ctx_destroy(automatic);
  gstat_spectral_result_free(rh);
  gstat_spectral_result_free(rd);
  gstat_csr_free(C);
  free(lh);
  gstat_ctx_destroy(cpu);
  gstat_ctx_destroy(gpu);
}

/* ---- batch spectral clustering of graphs in device memory ---- */

/* count SBM-like graphs of up to N nodes (dense, column-major): 2-4 blocks,
 * every 7th graph split in two components with no edge between, with
 * sizes[g] nodes (the rest zero padding). */
static void gd_sc_graphs(tu_rng *rng, int64_t count, int64_t N, const int64_t *sizes, double *A) {
  memset(A, 0, sizeof(double) * (size_t)(count * N * N));
  for (int64_t g = 0; g < count; g++) {
    int64_t n = sizes[g], blocks = 2 + g % 3;
    double *a = A + g * N * N;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < i; j++) {
        bool same = i * blocks / n == j * blocks / n;
        bool cut = g % 7 == 3 && (i < n / 2) != (j < n / 2);
        double p = same ? 0.5 : 0.04;
        if (!cut && (tu_uniform(rng) < p || (same && i == j + 1)))
          a[i + j * N] = a[j + i * N] = 0.5 + tu_uniform(rng);
      }
  }
}

/* The batch on ctx, its adjacency in mem's device memory or on the host. */
static gstat_status gd_sc_run(const sm_memory *mem, gstat_ctx *ctx, bool device, gstat_dtype dt,
                              int64_t count, int64_t N, const int64_t *sizes, const double *A,
                              const int64_t *ks, const gstat_spectral_options *o, int64_t *labels,
                              gstat_spectral_batch_result **res) {
  size_t cells = (size_t)(count * N * N), es = dt == GSTAT_F64 ? 8 : 4;
  void *h = malloc(cells * es);
  for (size_t c = 0; c < cells; c++) {
    if (dt == GSTAT_F64)
      ((double *)h)[c] = A[c];
    else
      ((float *)h)[c] = (float)A[c];
  }
  void *data = h, *d = NULL;
  if (device) {
    d = mem->alloc(cells * es);
    mem->put(d, h, cells * es);
    data = d;
  }
  gstat_graph_batch B;
  memset(&B, 0, sizeof B);
  B.format = GSTAT_GRAPH_DENSE;
  B.count = count;
  B.sizes = sizes;
  B.adjacency = gstat_matrix_col_major(data, dt, count, N, N);
  B.adjacency.location = device ? GSTAT_CUDA : GSTAT_HOST;
  gstat_status st = gstat_spectral_clustering_batch(ctx, &B, ks, o, labels, res);
  if (d) mem->release(d);
  free(h);
  return st;
}

/* Device results (rg, lg) against the host engine's (rc, lc): statuses, k,
 * components, eigenvalues; labels equal on (almost) every graph (the
 * eigenvectors differ by rounding, which may move a borderline node). */
static void gd_sc_compare(int64_t count, const int64_t *sizes, gstat_dtype dt,
                          const gstat_spectral_batch_result *rg,
                          const gstat_spectral_batch_result *rc, const int64_t *lg,
                          const int64_t *lc, const char *what) {
  int64_t node = 0, differ = 0;
  for (int64_t g = 0; g < count; g++) {
    assert_int_equal(rg->status[g], rc->status[g]);
    assert_int_equal(rg->graph_components[g], rc->graph_components[g]);
    assert_int_equal(rg->n_clusters[g], rc->n_clusters[g]);
    assert_int_equal(rg->eig_offsets[g + 1], rc->eig_offsets[g + 1]);
    for (int64_t e = rc->eig_offsets[g]; e < rc->eig_offsets[g + 1]; e++)
      assert_true(fabs(rg->eigenvalues[e] - rc->eigenvalues[e]) <=
                  (dt == GSTAT_F64 ? 1e-10 : 2e-4) * (1 + fabs(rc->eigenvalues[e])));
    bool same = true;
    for (int64_t i = 0; i < sizes[g]; i++) same &= lg[node + i] == lc[node + i];
    differ += !same;
    if (rc->status[g] == GSTAT_OK && same)
      assert_true(fabs(rg->inertia[g] - rc->inertia[g]) <=
                  (dt == GSTAT_F64 ? 1e-9 : 1e-4) * (1 + rc->inertia[g]));
    node += sizes[g];
  }
  if (differ > count / 50)
    fail_msg("%s: %lld of %lld graphs labelled differently", what, (long long)differ,
             (long long)count);
}

/* The device engine against the host engine on the same graphs (dense and
 * ragged, f32 and f64, the Laplacian kinds, eigengap k); a solver fault
 * (fault_var=retry: elements the dispatcher recomputes) compared alike;
 * cluster-QR in the device engine; no device memory (fault_var=oom, unless
 * NULL) runs the host engine on a copy: its labels exactly; a NaN weight
 * gives the host engine's error. */
static void gd_spectral_batch(const sm_memory *mem, const char *fault_var, const char *retry,
                              const char *oom) {
  tu_rng rng = tu_rng_new();
  const int64_t count = 300, N = 64;
  int64_t sizes[300], ks[300];
  double *A = malloc(sizeof(double) * (size_t)(count * N * N));
  int64_t *lg = malloc(sizeof(int64_t) * (size_t)(count * N)),
          *lc = malloc(sizeof(int64_t) * (size_t)(count * N));
  gstat_ctx *gpu = tu_ctx(GSTAT_BACKEND_CUDA), *cpu = tu_ctx(GSTAT_BACKEND_CPU);
  for (int variant = 0; variant < 7; variant++) {
    gstat_dtype dt = variant % 2 ? GSTAT_F32 : GSTAT_F64;
    bool ragged = variant >= 2 && variant != 6;
    for (int64_t g = 0; g < count; g++) {
      sizes[g] = ragged ? (g % 11 == 5 ? 0 : g % 13 == 2 ? 2 : 20 + (g * 7) % 45) : N;
      ks[g] = g % 17 == 4 ? 0 : 2 + g % 3; /* 0: eigengap */
      if (sizes[g] > 0 && ks[g] > sizes[g]) ks[g] = sizes[g];
    }
    gd_sc_graphs(&rng, count, N, sizes, A);
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    o.seed = 7;
    o.laplacian = variant == 1   ? GSTAT_LAPLACIAN_SYMMETRIC
                  : variant == 4 ? GSTAT_LAPLACIAN_UNNORMALIZED
                                 : GSTAT_LAPLACIAN_RANDOM_WALK;
    o.normalize_rows = variant == 2;
    if (variant >= 5) o.assign = GSTAT_ASSIGN_CLUSTER_QR;
    if (variant == 4) setenv(fault_var, retry, 1);
    gstat_spectral_batch_result *rg = NULL, *rc = NULL;
    gstat_status sg = gd_sc_run(mem, gpu, true, dt, count, N, sizes, A, ks, &o, lg, &rg);
    unsetenv(fault_var);
    assert_string_equal(gstat_ctx_last_backend_name(gpu), variant == 4 ? "cuda+cpu" : "cuda");
    gstat_status sc = gd_sc_run(mem, cpu, false, dt, count, N, sizes, A, ks, &o, lc, &rc);
    assert_int_equal(sg, sc);
    char what[32];
    snprintf(what, sizeof what, "variant %d", variant);
    gd_sc_compare(count, sizes, dt, rg, rc, lg, lc, what);
    gstat_spectral_batch_result_free(rg);
    gstat_spectral_batch_result_free(rc);
  }
  /* the host engine on a copy: no device memory (oom NULL: the backend's
   * simulated out-of-memory also fails its copy to the host) */
  if (oom) {
    for (int64_t g = 0; g < count; g++) sizes[g] = N, ks[g] = 2 + g % 3;
    gd_sc_graphs(&rng, count, N, sizes, A);
    gstat_spectral_options o;
    gstat_spectral_options_init(&o);
    setenv(fault_var, oom, 1);
    gstat_status sg = gd_sc_run(mem, gpu, true, GSTAT_F64, count, N, sizes, A, ks, &o, lg, NULL);
    unsetenv(fault_var);
    gstat_status sc = gd_sc_run(mem, cpu, false, GSTAT_F64, count, N, sizes, A, ks, &o, lc, NULL);
    assert_int_equal(sg, sc);
    assert_memory_equal(lg, lc, sizeof(int64_t) * (size_t)(count * N));
  }
  /* a NaN weight: the host engine's error, message included */
  A[5 * N * N + 3 + 9 * N] = NAN;
  gstat_spectral_options o;
  gstat_spectral_options_init(&o);
  gstat_status sg = gd_sc_run(mem, gpu, true, GSTAT_F64, count, N, sizes, A, ks, &o, lg, NULL);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", gstat_ctx_last_error(gpu));
  gstat_status sc = gd_sc_run(mem, cpu, false, GSTAT_F64, count, N, sizes, A, ks, &o, lc, NULL);
  assert_int_equal(sg, GSTAT_ENOTFINITE);
  assert_int_equal(sg, sc);
  assert_string_equal(msg, gstat_ctx_last_error(cpu));
  gstat_ctx_destroy(gpu);
  gstat_ctx_destroy(cpu);
  free(A);
  free(lg);
  free(lc);
}

#endif /* GSTAT_TESTS_GRAPH_DEVICE_H */
