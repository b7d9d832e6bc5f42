/* Dense symmetric adjacency matrices: reading and symmetrizing an input,
 * scattering a CSR graph, components, and the Laplacian in place. */
#include <float.h>
#include <math.h>
#include <stdbool.h>

#include "core/matrix.h"
#include "graph/graph_internal.h"

static double elem(const gstat_matrix *M, int64_t b, int64_t i, int64_t j) {
  const void *p = gstat_i_elem(M, b, i, j);
  switch (M->dtype) {
    case GSTAT_F64: return *(const double *)p;
    case GSTAT_F32: return (double)*(const float *)p;
    default: return (double)gstat_bf16_to_f32(*(const uint16_t *)p);
  }
}

static gstat_status check_weight(gstat_i_err *err, const char *fn, const char *name, double v,
                                 int64_t i, int64_t j) {
  if (!isfinite(v))
    return gstat_i_err_set(err, GSTAT_ENOTFINITE, "%s: %s entry (%lld, %lld) is NaN or Inf", fn,
                           name, (long long)i, (long long)j);
  if (v < 0)
    return gstat_i_err_set(err, GSTAT_EINVAL,
                           "%s: %s entry (%lld, %lld)=%g is negative: weights must be >= 0", fn,
                           name, (long long)i, (long long)j, v);
  return GSTAT_OK;
}

/* The general reader: any dtype, messages for the first bad entry. */
static gstat_status adjacency_any(gstat_i_err *err, const char *fn, const char *name,
                                  const gstat_matrix *M, int64_t b, int64_t n, gstat_symmetrize sym,
                                  gstat_self_loops loops, double *A) {
  for (int64_t j = 0; j < n; j++) {
    double d = elem(M, b, j, j);
    if (check_weight(err, fn, name, d, j, j) != GSTAT_OK) return err->status;
    if (A) A[j + j * n] = loops == GSTAT_LOOPS_DROP ? 0.0 : d;
    for (int64_t i = j + 1; i < n; i++) {
      double lo = elem(M, b, i, j), up = elem(M, b, j, i);
      if (check_weight(err, fn, name, lo, i, j) != GSTAT_OK ||
          check_weight(err, fn, name, up, j, i) != GSTAT_OK)
        return err->status;
      if (sym == GSTAT_SYM_CHECK && !gstat_i_sym_close(lo, up, M->dtype))
        return gstat_i_err_set(err, GSTAT_EINVAL,
                               "%s: %s is not symmetric: entry (%lld, %lld)=%g but (%lld, %lld)=%g "
                               "(set symmetrize to MAX, MEAN or SUM)",
                               fn, name, (long long)i, (long long)j, lo, (long long)j, (long long)i,
                               up);
      if (A) A[i + j * n] = A[j + i * n] = gstat_i_sym_combine(sym, lo, up);
    }
  }
  return GSTAT_OK;
}

/* The same for f64/f32 without a per-entry dtype switch or call: this read is
 * a sixth of a batch of small graphs. Any entry that is not a finite weight
 * >= 0, or an asymmetric pair, sends the graph to adjacency_any for the
 * message, so both give the same results and errors. Entry (i, j) meets
 * (j, i) in 64 x 64 tiles, so that neither the transposed read nor the
 * mirrored write strides through memory (bench/README.md, "Measurements
 * moved from code comments"); one call does the column tile starting at j0
 * and returns false on a bad entry. */
#define ADJ_TILE 64
#define DEFINE_ADJ_TILES(TYPE, SFX, EPS)                                                         \
  static bool adj_tiles_##SFX(const gstat_matrix *M, int64_t b, int64_t n, gstat_symmetrize sym, \
                              gstat_self_loops loops, double *A, int64_t j0) {                   \
    const TYPE *p = (const TYPE *)gstat_i_elem(M, b, 0, 0);                                      \
    const int64_t rs = M->row_stride, cs = M->col_stride;                                        \
    const int64_t j1 = j0 + ADJ_TILE < n ? j0 + ADJ_TILE : n;                                    \
    for (int64_t j = j0; j < j1; j++) {                                                          \
      const double d = (double)p[j * rs + j * cs];                                               \
      if (!(d >= 0 && d <= DBL_MAX)) return false;                                               \
      if (A) A[j + j * n] = loops == GSTAT_LOOPS_DROP ? 0.0 : d;                                 \
    }                                                                                            \
    for (int64_t i0 = j0; i0 < n; i0 += ADJ_TILE) {                                              \
      const int64_t i1 = i0 + ADJ_TILE < n ? i0 + ADJ_TILE : n;                                  \
      for (int64_t j = j0; j < j1; j++)                                                          \
        for (int64_t i = i0 > j + 1 ? i0 : j + 1; i < i1; i++) {                                 \
          const double lo = (double)p[i * rs + j * cs], up = (double)p[j * rs + i * cs];         \
          if (!(lo >= 0 && lo <= DBL_MAX && up >= 0 && up <= DBL_MAX)) return false;             \
          if (sym == GSTAT_SYM_CHECK && !gstat_i_sym_agree(lo, up, EPS)) return false;           \
          if (A) A[i + j * n] = A[j + i * n] = gstat_i_sym_pair(sym, lo, up);                    \
        }                                                                                        \
    }                                                                                            \
    return true;                                                                                 \
  }

DEFINE_ADJ_TILES(double, f64, 2.220446049250313e-16)
DEFINE_ADJ_TILES(float, f32, 1.1920929e-7)

static bool adj_tiles(const gstat_matrix *M, int64_t b, int64_t n, gstat_symmetrize sym,
                      gstat_self_loops loops, double *A, int64_t j0) {
  return M->dtype == GSTAT_F64 ? adj_tiles_f64(M, b, n, sym, loops, A, j0)
                               : adj_tiles_f32(M, b, n, sym, loops, A, j0);
}

gstat_status gstat_i_dense_adjacency(gstat_i_err *err, const char *fn, const char *name,
                                     const gstat_matrix *M, int64_t b, int64_t n,
                                     gstat_symmetrize sym, gstat_self_loops loops, double *A) {
  bool ok = M->dtype == GSTAT_F64 || M->dtype == GSTAT_F32;
  for (int64_t j0 = 0; ok && j0 < n; j0 += ADJ_TILE) ok = adj_tiles(M, b, n, sym, loops, A, j0);
  return ok ? GSTAT_OK : adjacency_any(err, fn, name, M, b, n, sym, loops, A);
}

gstat_status gstat_i_dense_adjacency_threads(gstat_i_err *err, const char *fn, const char *name,
                                             const gstat_matrix *M, int64_t b, int64_t n,
                                             gstat_symmetrize sym, gstat_self_loops loops, int nt,
                                             double *A) {
  int bad = !(M->dtype == GSTAT_F64 || M->dtype == GSTAT_F32);
  int64_t tiles = (n + ADJ_TILE - 1) / ADJ_TILE;
  if (!bad) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : bad) if (nt > 1)
    for (int64_t t = 0; t < tiles; t++) bad |= !adj_tiles(M, b, n, sym, loops, A, t * ADJ_TILE);
  }
  return bad ? adjacency_any(err, fn, name, M, b, n, sym, loops, A) : GSTAT_OK;
}

void gstat_i_csr_to_dense(const gstat_i_csr_in *g, gstat_symmetrize sym, gstat_self_loops loops,
                          double *A) {
  int64_t n = g->n;
  for (int64_t c = 0; c < n * n; c++) A[c] = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t e = g->offsets[i]; e < g->offsets[i + 1]; e++)
      A[i + (g->indices[e] - g->base) * n] = g->weights ? g->weights[e] : 1.0;
  for (int64_t j = 0; j < n; j++) {
    if (loops == GSTAT_LOOPS_DROP) A[j + j * n] = 0;
    for (int64_t i = j + 1; i < n; i++)
      A[i + j * n] = A[j + i * n] = gstat_i_sym_combine(sym, A[i + j * n], A[j + i * n]);
  }
}

int64_t gstat_i_dense_components(int64_t n, const double *A, int64_t *labels, int64_t *stack) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++) labels[i] = -1;
  for (int64_t s = 0; s < n; s++) {
    if (labels[s] >= 0) continue;
    int64_t top = 0;
    stack[top++] = s;
    labels[s] = count;
    while (top > 0) {
      const double *col = A + stack[--top] * n;
      for (int64_t v = 0; v < n; v++)
        if (labels[v] < 0 && col[v] > 0) {
          labels[v] = count;
          stack[top++] = v;
        }
    }
    count++;
  }
  return count;
}

void gstat_i_dense_laplacian(int64_t n, double *A, gstat_laplacian_kind kind, double *d) {
  for (int64_t j = 0; j < n; j++) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += A[i + j * n];
    d[j] = s; /* column sum = row sum: A is symmetric */
  }
  for (int64_t j = 0; j < n; j++) {
    double *col = A + j * n;
    if (kind == GSTAT_LAPLACIAN_UNNORMALIZED) {
      for (int64_t i = 0; i < n; i++) col[i] = -col[i];
      col[j] += d[j];
    } else if (kind == GSTAT_LAPLACIAN_SYMMETRIC) {
      double sj = gstat_i_inv_sqrt_degree(d[j]);
      for (int64_t i = 0; i < n; i++)
        col[i] = -gstat_i_norm_weight(col[i], gstat_i_inv_sqrt_degree(d[i]), sj);
      col[j] += d[j] > 0 ? 1.0 : 0.0;
    } else { /* random walk: row i scaled by 1 / d_i */
      for (int64_t i = 0; i < n; i++) col[i] = d[i] > 0 ? -col[i] / d[i] : -col[i];
      col[j] += d[j] > 0 ? 1.0 : 0.0;
    }
  }
}
