/* Graph descriptors, CSR validation, symmetry checks, symmetrization and the
 * working CSR form (gstat_i_graph) every graph function starts from. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/matrix.h"
#include "core/rng_impl.h"
#include "backend/dense.h"
#include "graph/graph_internal.h"

gstat_graph gstat_graph_dense(const gstat_matrix *adjacency) {
  gstat_graph g;
  memset(&g, 0, sizeof g);
  g.format = GSTAT_GRAPH_DENSE;
  if (adjacency) g.adjacency = *adjacency;
  return g;
}

gstat_graph gstat_graph_csr(int64_t n, const int64_t *offsets, const int64_t *indices,
                            const double *weights) {
  gstat_graph g;
  memset(&g, 0, sizeof g);
  g.format = GSTAT_GRAPH_CSR;
  g.csr.n = n;
  g.csr.nnz = offsets && n >= 0 ? offsets[n] : 0;
  g.csr.offsets = offsets;
  g.csr.indices = indices;
  g.csr.weights = weights;
  return g;
}

double gstat_i_sym_combine(gstat_symmetrize mode, double a, double b) {
  return gstat_i_sym_pair(mode, a, b);
}

bool gstat_i_sym_close(double a, double b, gstat_dtype dt) {
  double eps = dt == GSTAT_F64 ? 2.220446049250313e-16 : dt == GSTAT_F32 ? 1.1920929e-7 : 7.8125e-3;
  return gstat_i_sym_agree(a, b, eps);
}

gstat_status gstat_i_csr_validate(gstat_i_err *err, const char *fn, const char *name,
                                  const gstat_i_csr_in *g, bool *self_loops) {
  bool loops = false;
  for (int64_t i = 0; i < g->n; i++) {
    int64_t lo = g->offsets[i], hi = g->offsets[i + 1];
    if (hi < lo)
      return gstat_i_err_set(err, GSTAT_EINVAL,
                             "%s: %s.offsets[%lld]=%lld is below offsets[%lld]=%lld (offsets must "
                             "not decrease)",
                             fn, name, (long long)(g->base + i + 1), (long long)hi,
                             (long long)(g->base + i), (long long)lo);
    for (int64_t e = lo; e < hi; e++) {
      int64_t j = g->indices[e];
      if (j < g->base || j >= g->base + g->n)
        return gstat_i_err_set(err, GSTAT_EINVAL,
                               "%s: %s.indices[%lld]=%lld (row %lld) is outside the graph's nodes "
                               "[%lld, %lld)",
                               fn, name, (long long)e, (long long)j, (long long)(g->base + i),
                               (long long)g->base, (long long)(g->base + g->n));
      if (e > lo && j <= g->indices[e - 1])
        return gstat_i_err_set(
            err, GSTAT_EINVAL,
            "%s: row %lld of %s is %s: indices[%lld]=%lld follows %lld (CSR rows must be "
            "strictly increasing; build from an edge list to sum duplicates)",
            fn, (long long)(g->base + i), name,
            j == g->indices[e - 1] ? "a duplicate" : "not sorted", (long long)e, (long long)j,
            (long long)g->indices[e - 1]);
      if (j == g->base + i) loops = true;
      if (g->weights) {
        double w = g->weights[e];
        if (!isfinite(w))
          return gstat_i_err_set(err, GSTAT_ENOTFINITE,
                                 "%s: %s.weights[%lld] (row %lld, column %lld) is NaN or Inf", fn,
                                 name, (long long)e, (long long)(g->base + i), (long long)j);
        if (w < 0)
          return gstat_i_err_set(err, GSTAT_EINVAL,
                                 "%s: %s.weights[%lld]=%g (row %lld, column %lld) is negative: "
                                 "weights must be >= 0",
                                 fn, name, (long long)e, w, (long long)(g->base + i), (long long)j);
      }
    }
  }
  if (self_loops) *self_loops = loops;
  return GSTAT_OK;
}

/* Entry of column `col` (global) in row i, or -1. Rows are sorted. */
static int64_t find_entry(const gstat_i_csr_in *g, int64_t i, int64_t col) {
  int64_t lo = g->offsets[i], hi = g->offsets[i + 1];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (g->indices[mid] < col)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < g->offsets[i + 1] && g->indices[lo] == col ? lo : -1;
}

/* The first upper entry of row i whose mirror is not close (-1: none);
 * *equal cleared where a pair differs. *found counts the mirrors present
 * and *lower the row's lower entries: over the graph the two agree exactly
 * when every lower entry is some upper entry's mirror, so lower entries need
 * no lookup of their own unless they differ. */
static int64_t upper_defect(const gstat_i_csr_in *g, int64_t i, bool *equal, int64_t *found,
                            int64_t *lower) {
  for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
    int64_t j = g->indices[e] - g->base;
    if (j <= i) {
      *lower += j < i;
      continue;
    }
    int64_t m = find_entry(g, j, g->base + i);
    double a = g->weights ? g->weights[e] : 1.0;
    double b = m < 0 ? 0.0 : g->weights ? g->weights[m] : 1.0;
    *found += m >= 0;
    if (a != b) *equal = false;
    if (!gstat_i_sym_close(a, b, GSTAT_F64)) return e;
  }
  return -1;
}

/* The first nonzero lower entry of row i without an upper mirror (-1: none). */
static int64_t lower_defect(const gstat_i_csr_in *g, int64_t i) {
  for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
    int64_t j = g->indices[e] - g->base;
    if (j >= i) break;
    if ((!g->weights || g->weights[e] != 0) && find_entry(g, j, g->base + i) < 0) return e;
  }
  return -1;
}

/* The error naming the first asymmetric entry: upper entries in row order,
 * then lower entries whose upper mirror is missing (an error path only). */
static gstat_status report_asymmetry(gstat_i_err *err, const char *fn, const char *name,
                                     const gstat_i_csr_in *g) {
  bool equal = true;
  int64_t found = 0, lower = 0, e = -1, i = 0;
  for (; i < g->n && e < 0; i++) e = upper_defect(g, i, &equal, &found, &lower);
  if (e < 0)
    for (i = 0; i < g->n && e < 0; i++) e = lower_defect(g, i);
  if (e < 0) return GSTAT_OK;
  const int64_t row = g->base + i - 1, col = g->indices[e], m = find_entry(g, col - g->base, row);
  const double a = g->weights ? g->weights[e] : 1.0;
  const double b = m < 0 ? 0.0 : g->weights ? g->weights[m] : 1.0;
  return gstat_i_err_set(err, GSTAT_EINVAL,
                         "%s: %s is not symmetric: entry (%lld, %lld)=%g but (%lld, %lld)=%g "
                         "(set symmetrize to MAX, MEAN or SUM)",
                         fn, name, (long long)row, (long long)col, a, (long long)col,
                         (long long)row, b);
}

static uint64_t mix64(uint64_t z) {
  return gstat_i_splitmix64(&z);
}

/* Whether the graph is exactly symmetric, by one streaming pass: the upper
 * entries (i < j, w) and the mirrored lower ones (j > i, w) are the same
 * set exactly when the sums of a 128-bit hash of their (pair, weight bits)
 * agree, but for a chance of about 2^-128 (rows have no duplicates). The
 * mirror lookups it spares are random accesses bound by memory latency
 * (bench/README.md, "The symmetry check by hashes"). A graph it does not
 * prove symmetric goes through the lookups. */
static bool hashes_symmetric(const gstat_i_csr_in *g, int threads) {
  uint64_t up1 = 0, up2 = 0, lo1 = 0, lo2 = 0;
  int64_t ups = 0, los = 0;
  (void)threads; /* without OpenMP */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static, 4096) \
    reduction(+ : up1, up2, lo1, lo2, ups, los)
  for (int64_t i = 0; i < g->n; i++)
    for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
      const int64_t j = g->indices[e] - g->base;
      if (j == i) continue;
      double w = g->weights ? g->weights[e] : 1.0;
      uint64_t bits = 0;
      if (w != 0) memcpy(&bits, &w, sizeof bits); /* -0 and 0 alike */
      const uint64_t a = (uint64_t)(j < i ? j : i), b = (uint64_t)(j < i ? i : j);
      const uint64_t h1 = mix64(mix64(mix64(a ^ 0x243f6a8885a308d3ull) ^ b) ^ bits);
      const uint64_t h2 = mix64(h1 + 0x13198a2e03707344ull);
      if (j > i)
        up1 += h1, up2 += h2, ups++;
      else
        lo1 += h1, lo2 += h2, los++;
    }
  return ups == los && up1 == lo1 && up2 == lo2;
}

/* Rows checked on threads (ctx NULL: one): each mirror lookup is a random
 * access into another row, bound by memory latency, which threads overlap;
 * a graph exactly symmetric needs none (hashes_symmetric). */
gstat_status gstat_i_csr_check_symmetric(gstat_i_err *err, const char *fn, const char *name,
                                         const gstat_i_csr_in *g, gstat_ctx *ctx, bool *exact) {
  const int64_t entries = g->offsets[g->n] - g->offsets[0];
  const int threads = ctx ? gstat_i_loop_threads(ctx, g->n, 0, 24.0 * (double)entries) : 1;
  bool mirrored = true, equal = true;
  int64_t found = 0, lower = 0;
  if (hashes_symmetric(g, threads)) {
    if (exact) *exact = true;
    return GSTAT_OK;
  }
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 4096) \
    reduction(&& : mirrored, equal) reduction(+ : found, lower)
  for (int64_t i = 0; i < g->n; i++)
    if (mirrored) mirrored = upper_defect(g, i, &equal, &found, &lower) < 0;
  if (mirrored && found != lower) { /* some lower entries have no mirror: zeros may not */
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 4096) \
    reduction(&& : mirrored)
    for (int64_t i = 0; i < g->n; i++)
      if (mirrored) mirrored = lower_defect(g, i) < 0;
  }
  if (!mirrored) return report_asymmetry(err, fn, name, g);
  if (exact) *exact = equal;
  return GSTAT_OK;
}

gstat_csr *gstat_i_csr_new(int64_t n, int64_t nnz, bool weights) {
  size_t count, bytes;
  if (n < 0 || nnz < 0 || !gstat_i_add_size((size_t)n + 1, (size_t)nnz, &count) ||
      !gstat_i_add_size(count, weights ? (size_t)nnz : 0, &count) ||
      !gstat_i_mul_size(count, 8, &bytes) || !gstat_i_add_size(bytes, 64, &bytes))
    return NULL;
  gstat_csr *c = malloc(bytes);
  if (!c) return NULL;
  int64_t *block = (int64_t *)((char *)c + 64);
  int64_t *offsets = block, *indices = block + n + 1;
  c->n = n;
  c->nnz = nnz;
  c->offsets = offsets;
  c->indices = indices;
  c->weights = weights ? (const double *)(indices + nnz) : NULL;
  offsets[0] = 0;
  return c;
}

void gstat_csr_free(gstat_csr *csr) {
  free(csr);
}

gstat_csr *gstat_i_csr_symmetrized(const gstat_i_csr_in *g, gstat_symmetrize sym,
                                   gstat_self_loops loops, bool keep_zeros) {
  int64_t n = g->n, first = g->offsets[0], nnz = g->offsets[n] - first;
  gstat_csr *out = NULL;
  /* the transpose by a counting sort (its rows come out sorted) */
  int64_t *toff = calloc((size_t)n + 1, sizeof *toff),
          *tidx = malloc(sizeof(int64_t) * (size_t)(nnz + 1));
  double *tval = malloc(sizeof(double) * (size_t)(nnz + 1));
  if (!toff || !tidx || !tval) goto done;
  for (int64_t e = first; e < first + nnz; e++) toff[g->indices[e] - g->base + 1]++;
  for (int64_t i = 0; i < n; i++) toff[i + 1] += toff[i];
  for (int64_t i = 0; i < n; i++)
    for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
      int64_t j = g->indices[e] - g->base, p = toff[j]++;
      tidx[p] = i;
      tval[p] = g->weights ? g->weights[e] : 1.0;
    }
  for (int64_t i = n; i > 0; i--) toff[i] = toff[i - 1];
  toff[0] = 0;
  /* merge row i of A with row i of A^T, twice: count, then fill */
  for (int pass = 0; pass < 2; pass++) {
    int64_t count = 0;
    int64_t *oo = pass ? (int64_t *)out->offsets : NULL,
            *oi = pass ? (int64_t *)out->indices : NULL;
    double *ow = pass ? (double *)out->weights : NULL;
    for (int64_t i = 0; i < n; i++) {
      int64_t a = g->offsets[i], ae = g->offsets[i + 1], t = toff[i], te = toff[i + 1];
      while (a < ae || t < te) {
        int64_t ja = a < ae ? g->indices[a] - g->base : INT64_MAX,
                jt = t < te ? tidx[t] : INT64_MAX;
        int64_t j = ja < jt ? ja : jt;
        double va = 0, vt = 0;
        if (ja == j) va = g->weights ? g->weights[a++] : 1.0;
        if (jt == j) vt = tval[t++];
        double w = gstat_i_sym_combine(sym, va, vt);
        if (j == i && loops == GSTAT_LOOPS_DROP) continue;
        if (w == 0 && !keep_zeros) continue;
        if (pass) {
          oi[count] = j;
          ow[count] = w;
        }
        count++;
      }
      if (pass) oo[i + 1] = count;
    }
    if (!pass) {
      out = gstat_i_csr_new(n, count, true);
      if (!out) goto done;
    }
  }
done:
  free(toff);
  free(tidx);
  free(tval);
  return out;
}

gstat_status gstat_i_check_graph(gstat_ctx *ctx, const char *fn, const gstat_graph *G) {
  if (!G) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G is NULL", fn);
  if (G->symmetrize < GSTAT_SYM_CHECK || G->symmetrize > GSTAT_SYM_MIN)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.symmetrize=%d is not a gstat_symmetrize", fn,
                        (int)G->symmetrize);
  if (G->self_loops != GSTAT_LOOPS_DROP && G->self_loops != GSTAT_LOOPS_KEEP)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.self_loops=%d is not a gstat_self_loops", fn,
                        (int)G->self_loops);
  if (G->format == GSTAT_GRAPH_DENSE) {
    gstat_status s = gstat_i_check_matrix(ctx, fn, "G.adjacency", &G->adjacency);
    if (s != GSTAT_OK) return s;
    if (G->adjacency.rows != G->adjacency.cols)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.adjacency is %lld x %lld, not square", fn,
                          (long long)G->adjacency.rows, (long long)G->adjacency.cols);
    return GSTAT_OK;
  }
  if (G->format != GSTAT_GRAPH_CSR)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.format=%d is not a gstat_graph_format", fn,
                        (int)G->format);
  const gstat_csr *c = &G->csr;
  if (c->n < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.csr.n=%lld must be >= 0", fn, (long long)c->n);
  if (!c->offsets) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.csr.offsets is NULL", fn);
  if (c->offsets[0] != 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.csr.offsets[0]=%lld must be 0", fn,
                        (long long)c->offsets[0]);
  if (c->offsets[c->n] != c->nnz)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.csr.offsets[n]=%lld differs from G.csr.nnz=%lld",
                        fn, (long long)c->offsets[c->n], (long long)c->nnz);
  if (c->nnz > 0 && !c->indices)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: G.csr.indices is NULL", fn);
  return GSTAT_OK;
}

gstat_status gstat_i_graph_on_host(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                   gstat_graph *H, gstat_i_staged *copy) {
  *H = *G;
  memset(copy, 0, sizeof *copy);
  if (G->format != GSTAT_GRAPH_DENSE || G->adjacency.location == GSTAT_HOST) return GSTAT_OK;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "G.adjacency", &G->adjacency, true, copy);
  if (st == GSTAT_OK) H->adjacency = copy->m;
  return st;
}

void gstat_i_graph_release(gstat_ctx *ctx, gstat_i_graph *g) {
  (void)ctx;
  gstat_csr_free(g->owned);
  memset(g, 0, sizeof *g);
}

void gstat_i_graph_adopt(gstat_i_graph *out, gstat_csr *c) {
  out->n = c->n;
  out->nnz = c->nnz;
  out->offsets = c->offsets;
  out->indices = c->indices;
  out->weights = c->weights;
  out->base = 0;
  out->owned = c;
}

/* A dense element as an owned CSR of its positive entries. */
static gstat_status from_dense(gstat_ctx *ctx, const char *fn, const gstat_graph *G, int64_t b,
                               gstat_i_graph *out) {
  gstat_status st = GSTAT_OK;
  int64_t n = G->adjacency.rows;
  size_t cells;
  double *A = NULL;
  if (!gstat_i_mul_size((size_t)n, (size_t)n, &cells) || cells > SIZE_MAX / sizeof(double) ||
      !(A = malloc(cells * sizeof(double) + 1))) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate a %lld x %lld adjacency", fn,
                      (long long)n, (long long)n);
    goto done;
  }
  gstat_i_err err = {0};
  char name[48];
  snprintf(name, sizeof name, "G.adjacency[%lld]", (long long)b);
  st =
      gstat_i_dense_adjacency(&err, fn, name, &G->adjacency, b, n, G->symmetrize, G->self_loops, A);
  if (st != GSTAT_OK) {
    st = gstat_i_err_raise(ctx, &err);
    goto done;
  }
  int64_t nnz = 0;
  for (size_t c = 0; c < cells; c++) nnz += A[c] > 0;
  gstat_csr *c = gstat_i_csr_new(n, nnz, true);
  if (!c) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the graph's CSR form", fn);
    goto done;
  }
  int64_t *off = (int64_t *)c->offsets, *idx = (int64_t *)c->indices, e = 0;
  double *w = (double *)c->weights;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++) /* symmetric: row i = column i */
      if (A[j + i * n] > 0) {
        idx[e] = j;
        w[e++] = A[j + i * n];
      }
    off[i + 1] = e;
  }
  gstat_i_graph_adopt(out, c);
done:
  free(A);
  return st;
}

/* An exactly symmetric graph without its self-loops (and stored zeros), as
 * gstat_i_csr_symmetrized would give it: a copy row by row, no transpose
 * and merge (bench/README.md, the Laplacian of 10^6 nodes). */
static gstat_csr *csr_without_loops(const gstat_i_csr_in *g) {
  int64_t n = g->n, count = 0;
  for (int pass = 0; pass < 2; pass++) {
    gstat_csr *out = pass ? gstat_i_csr_new(n, count, true) : NULL;
    if (pass && !out) return NULL;
    int64_t *oo = out ? (int64_t *)out->offsets : NULL, *oi = out ? (int64_t *)out->indices : NULL;
    double *ow = out ? (double *)out->weights : NULL;
    count = 0;
    for (int64_t i = 0; i < n; i++) {
      for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++) {
        int64_t j = g->indices[e] - g->base;
        double w = g->weights ? g->weights[e] : 1.0;
        if (j == i || w == 0) continue;
        if (out) oi[count] = j, ow[count] = w;
        count++;
      }
      if (out) oo[i + 1] = count;
    }
    if (out) return out;
  }
  return NULL;
}

gstat_status gstat_i_graph_from(gstat_ctx *ctx, const char *fn, const gstat_graph *G, int64_t b,
                                gstat_i_graph *out) {
  memset(out, 0, sizeof *out);
  if (G->format == GSTAT_GRAPH_DENSE) return from_dense(ctx, fn, G, b, out);
  gstat_i_csr_in in = {G->csr.n, 0, G->csr.offsets, G->csr.indices, G->csr.weights};
  gstat_i_err err = {0};
  bool loops = false;
  if (gstat_i_csr_validate(&err, fn, "G", &in, &loops) != GSTAT_OK)
    return gstat_i_err_raise(ctx, &err);
  gstat_i_err probe = {0};
  bool exact = false;
  bool symmetric = gstat_i_csr_check_symmetric(&probe, fn, "G", &in, ctx, &exact) == GSTAT_OK;
  if (G->symmetrize == GSTAT_SYM_CHECK && !symmetric) return gstat_i_err_raise(ctx, &probe);
  /* MAX, MEAN, MIN (and CHECK) leave an exactly symmetric graph as it is;
   * CHECK averages pairs that agree only to its tolerance */
  bool borrow =
      exact && G->symmetrize != GSTAT_SYM_SUM && !(loops && G->self_loops == GSTAT_LOOPS_DROP);
  if (borrow) {
    out->n = in.n;
    out->nnz = G->csr.nnz;
    out->offsets = in.offsets;
    out->indices = in.indices;
    out->weights = in.weights;
    return GSTAT_OK;
  }
  gstat_csr *c = exact && G->symmetrize != GSTAT_SYM_SUM
                     ? csr_without_loops(&in)
                     : gstat_i_csr_symmetrized(&in, G->symmetrize, G->self_loops, false);
  if (!c) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the symmetrized graph", fn);
  gstat_i_graph_adopt(out, c);
  return GSTAT_OK;
}

void gstat_i_graph_degrees(const gstat_i_graph *g, double *d) {
  for (int64_t i = 0; i < g->n; i++) {
    double s = 0;
    for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
      s += g->weights ? g->weights[e] : 1.0;
    d[i] = s;
  }
}

/* The root of x's tree; halves the path on the way (parents only ever
 * decrease, so every value read is a valid ancestor whatever other threads
 * write). */
static int64_t find_root(int64_t *parent, int64_t x) {
  for (;;) {
    int64_t p = __atomic_load_n(&parent[x], __ATOMIC_RELAXED);
    if (p == x) return x;
    int64_t gp = __atomic_load_n(&parent[p], __ATOMIC_RELAXED);
    if (gp != p)
      __atomic_compare_exchange_n(&parent[x], &p, gp, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    x = gp;
  }
}

/* Join the trees of a and b: the larger root goes under the smaller, by a
 * compare-and-swap that fails only when another thread moved that root. */
static void unite(int64_t *parent, int64_t a, int64_t b) {
  for (;;) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    if (a < b) {
      int64_t t = a;
      a = b;
      b = t;
    }
    int64_t expect = a;
    if (__atomic_compare_exchange_n(&parent[a], &expect, b, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
      return;
  }
}

/* Union-find over the edges on threads: a breadth-first search is one chain
 * of random accesses (bench/README.md, "The symmetry check by hashes").
 * Every tree's root is its smallest node, so numbering the roots in node
 * order labels the components as a search from node 0 on would: in the
 * order of their smallest node. */
int64_t gstat_i_graph_components(gstat_ctx *ctx, const gstat_i_graph *g, int64_t *labels,
                                 int64_t *parent) {
  const int64_t n = g->n;
  const int threads = gstat_i_loop_threads(ctx, n, 0, 24.0 * (double)g->nnz);
  (void)threads; /* without OpenMP */
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i++) parent[i] = i;
#pragma omp for schedule(dynamic, 4096)
    for (int64_t u = 0; u < n; u++)
      for (int64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
        int64_t v = g->indices[e] - g->base;
        if (v != u && (!g->weights || g->weights[e] > 0)) unite(parent, u, v);
      }
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i++) labels[i] = find_root(parent, i);
  }
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) labels[i] = labels[i] == i ? count++ : labels[labels[i]];
  return count;
}
