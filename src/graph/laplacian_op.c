/* The Laplacian as an operator on blocks of vectors: a CSR graph is applied
 * row by row (no Laplacian formed, the caller's arrays borrowed when they
 * can be); a dense graph keeps its (symmetric) adjacency, scaled on both
 * sides for the symmetric kind, and is streamed once per block of up to 8
 * vectors (column i of a symmetric matrix is row i: a dot product per row
 * with the block in cache; a GEMM would copy the whole matrix into its
 * packing buffers at every product). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clones.h"
#include "graph/graph_internal.h"
#include "graph/laplacian_op.h"
#include "backend/dense.h"
#include "backend/sparse_req.h"

/* How many entries ahead a CSR product prefetches its gathers: about a row
 * of a kNN graph (~15 entries); 8 gained less, 32 no more (bench/README.md). */
enum { AHEAD = 16 };

struct gstat_laplacian_op {
  gstat_laplacian_kind kind;
  int64_t n;
  gstat_i_graph g; /* CSR graphs: borrowed from the caller or owned */
  double *dense;   /* DENSE graphs: n x n, s_i a_ij s_j (symmetric kind) or a_ij, column-major
                      and symmetric; NULL for CSR */
  double *degrees; /* n */
  double *scale;   /* n: 1/sqrt(d) (symmetric), 1/d (random walk), unused otherwise */
};

/* Threads for the O(n^2) set-up passes of a dense operator (the caller runs
 * outside any parallel region); 1 for small graphs. */
static int op_threads(gstat_ctx *ctx, int64_t n) {
  return gstat_i_loop_threads(ctx, n, 2.0 * (double)n * (double)n, 16.0 * (double)n * (double)n);
}

/* The dense form: validated, symmetrized adjacency, scaled in place. */
static gstat_status dense_op(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                             gstat_laplacian_op *op) {
  int64_t n = G->adjacency.rows;
  size_t cells;
  if (!gstat_i_mul_size((size_t)n, (size_t)n, &cells) || cells > SIZE_MAX / sizeof(double) ||
      !(op->dense = malloc(cells * sizeof(double) + 1)))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate a %lld x %lld operator", fn,
                        (long long)n, (long long)n);
  gstat_i_err err = {0};
  if (gstat_i_dense_adjacency_threads(&err, fn, "G.adjacency[0]", &G->adjacency, 0, n,
                                      G->symmetrize, G->self_loops, op_threads(ctx, n),
                                      op->dense) != GSTAT_OK)
    return gstat_i_err_raise(ctx, &err);
  return GSTAT_OK;
}

gstat_status gstat_i_laplacian_op_new(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                                      gstat_laplacian_kind kind, gstat_laplacian_op **out) {
  *out = NULL;
  gstat_laplacian_op *op = calloc(1, sizeof *op);
  if (!op) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the operator", fn);
  gstat_status st = G->format == GSTAT_GRAPH_DENSE ? dense_op(ctx, fn, G, op)
                                                   : gstat_i_graph_from(ctx, fn, G, 0, &op->g);
  if (st != GSTAT_OK) {
    gstat_laplacian_op_destroy(op);
    return st;
  }
  int64_t n = op->dense ? G->adjacency.rows : op->g.n;
  op->n = n;
  op->kind = kind;
  op->degrees = malloc(sizeof(double) * (size_t)(2 * n + 1));
  if (!op->degrees) {
    gstat_laplacian_op_destroy(op);
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the degrees of %lld nodes", fn,
                        (long long)n);
  }
  op->scale = op->degrees + n;
  int nt = op_threads(ctx, n);
  if (op->dense) {
#pragma omp parallel for num_threads(nt) if (nt > 1)
    for (int64_t j = 0; j < n; j++) {
      double t = 0;
      for (int64_t i = 0; i < n; i++) t += op->dense[i + j * n];
      op->degrees[j] = t; /* column sums = row sums */
    }
  } else {
    gstat_i_graph_degrees(&op->g, op->degrees);
  }
  for (int64_t i = 0; i < n; i++) {
    double d = op->degrees[i];
    op->scale[i] = kind == GSTAT_LAPLACIAN_SYMMETRIC ? gstat_i_inv_sqrt_degree(d)
                   : d > 0                           ? 1.0 / d
                                                     : 0.0;
  }
  if (op->dense && kind == GSTAT_LAPLACIAN_SYMMETRIC) {
#pragma omp parallel for num_threads(nt) if (nt > 1)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n; i++)
        op->dense[i + j * n] =
            gstat_i_norm_weight(op->dense[i + j * n], op->scale[i], op->scale[j]);
  }
  *out = op;
  return GSTAT_OK;
}

bool gstat_i_laplacian_op_csr(const gstat_laplacian_op *op, double *p, gstat_i_csr_lap *out) {
  if (op->dense || op->kind == GSTAT_LAPLACIAN_RANDOM_WALK) return false;
  bool unnorm = op->kind == GSTAT_LAPLACIAN_UNNORMALIZED;
  for (int64_t i = 0; i < op->n; i++)
    p[i] = unnorm ? op->degrees[i] : op->degrees[i] > 0 ? 1.0 : 0.0;
  gstat_i_csr_lap a = {
      op->n, op->g.offsets, op->g.indices, op->g.base, op->g.weights, p, unnorm ? NULL : op->scale};
  *out = a;
  return true;
}

gstat_status gstat_i_laplacian_op_renumbered(gstat_ctx *ctx, const char *fn,
                                             const gstat_laplacian_op *op, gstat_laplacian_op **out,
                                             int64_t **order) {
  *out = NULL;
  *order = NULL;
  if (op->dense) return GSTAT_EUNSUPPORTED;
  const int64_t n = op->n;
  int64_t *ord = malloc(sizeof(int64_t) * (size_t)(n + 1));
  unsigned char *seen = malloc((size_t)n + 1);
  gstat_laplacian_op *r = calloc(1, sizeof *r);
  if (r) r->degrees = malloc(sizeof(double) * (size_t)(2 * n + 1));
  gstat_status st = GSTAT_OK;
  if (!ord || !seen || !r || !r->degrees) {
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate to renumber %lld nodes", fn,
                      (long long)n);
  } else {
    gstat_i_graph_bfs_order(&op->g, ord, seen);
    st = gstat_i_graph_renumbered(ctx, fn, &op->g, ord, &r->g);
  }
  free(seen);
  if (st != GSTAT_OK) {
    free(ord);
    gstat_laplacian_op_destroy(r);
    return st;
  }
  r->n = n;
  r->kind = op->kind;
  r->scale = r->degrees + n;
  for (int64_t i = 0; i < n; i++) { /* the same values: no sums in another order */
    r->degrees[i] = op->degrees[ord[i]];
    r->scale[i] = op->scale[ord[i]];
  }
  *out = r;
  *order = ord;
  return GSTAT_OK;
}

int64_t gstat_i_laplacian_op_components(gstat_ctx *ctx, const gstat_laplacian_op *op,
                                        int64_t *labels, int64_t *stack) {
  /* scaling keeps the signs: positive entries are the edges */
  if (op->dense) return gstat_i_dense_components(op->n, op->dense, labels, stack);
  return gstat_i_graph_components(ctx, &op->g, labels, stack);
}

gstat_status gstat_laplacian_op_create(gstat_ctx *ctx, const gstat_graph *G,
                                       gstat_laplacian_kind kind, gstat_laplacian_op **op) {
  static const char fn[] = "laplacian_op_create";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!op) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: op is NULL", fn);
  *op = NULL;
  gstat_status st = gstat_i_check_graph(ctx, fn, G);
  if (st != GSTAT_OK) return st;
  if (kind < GSTAT_LAPLACIAN_UNNORMALIZED || kind > GSTAT_LAPLACIAN_RANDOM_WALK)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: kind=%d is not a gstat_laplacian_kind", fn,
                        (int)kind);
  if (G->format == GSTAT_GRAPH_DENSE && G->adjacency.batch != 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: G.adjacency holds %lld graphs; this function takes one", fn,
                        (long long)G->adjacency.batch);
  /* the operator keeps its own scaled copy of a dense graph: made from a
   * host copy of one in device memory */
  gstat_graph H;
  gstat_i_staged copy;
  st = gstat_i_graph_on_host(ctx, fn, G, &H, &copy);
  if (st == GSTAT_OK) st = gstat_i_laplacian_op_new(ctx, fn, &H, kind, op);
  gstat_i_sched_release(ctx, &copy);
  return st;
}

/* Z (n x 8, row-major) = M Xt for the symmetric column-major M and Xt
 * (n x 8, row-major, in cache): row i of Z is column i of M against Xt. Rows
 * go in groups of R, so each row of Xt loaded feeds R accumulators. */
enum { R = 6 }; /* rows per group */
GSTAT_I_CLONES static void sym_rows8(int64_t n, const double *restrict M, const double *restrict xt,
                                     double *restrict zt, int nt) {
  int64_t groups = (n + R - 1) / R;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t g = 0; g < groups; g++) {
    int64_t i0 = g * R, rows = n - i0 < R ? n - i0 : R;
    const double *col[R];
    for (int r = 0; r < R; r++) col[r] = M + (i0 + (r < rows ? r : 0)) * n;
    double acc[R][8] = {{0}};
    for (int64_t j = 0; j < n; j++) {
      const double *x = xt + j * 8;
      for (int r = 0; r < R; r++) {
        double a = col[r][j];
#pragma omp simd
        for (int c = 0; c < 8; c++) acc[r][c] += a * x[c];
      }
    }
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < 8; c++) zt[(i0 + r) * 8 + c] = acc[r][c];
  }
}
/* Y = diag X - M X for a dense graph (see the struct): blocks of 8 columns. */
static gstat_status dense_apply(gstat_ctx *ctx, const gstat_laplacian_op *op, int64_t m,
                                const double *X, double *Y) {
  int64_t n = op->n;
  const double *d = op->degrees, *s = op->scale;
  double *xt = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, sizeof(double) * (size_t)(16 * n + 1));
  if (!xt)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "laplacian_op_apply: cannot allocate %lld x 16 scratch",
                        (long long)n);
  double *zt = xt + 8 * n;
  int64_t groups = (n + R - 1) / R; /* sym_rows8's pieces: 8 columns against M */
  int nt =
      gstat_i_loop_threads(ctx, groups, 16.0 * (double)n * (double)n, 8.0 * (double)n * (double)n);
  for (int64_t c0 = 0; c0 < m; c0 += 8) {
    int64_t cm = m - c0 < 8 ? m - c0 : 8;
    for (int64_t j = 0; j < n; j++)
      for (int64_t c = 0; c < 8; c++) xt[j * 8 + c] = c < cm ? X[j + (c0 + c) * n] : 0.0;
    sym_rows8(n, op->dense, xt, zt, nt);
    for (int64_t c = 0; c < cm; c++)
      for (int64_t i = 0; i < n; i++) {
        double xi = X[i + (c0 + c) * n], z = zt[i * 8 + c];
        /* unnormalized: d x - A x; symmetric: x - (S A S) x; random walk: x - S A x */
        Y[i + (c0 + c) * n] = op->kind == GSTAT_LAPLACIAN_UNNORMALIZED ? d[i] * xi - z
                              : op->kind == GSTAT_LAPLACIAN_SYMMETRIC
                                  ? (d[i] > 0 ? xi : 0.0) - z
                                  : (d[i] > 0 ? xi : 0.0) - s[i] * z;
      }
  }
  return GSTAT_OK;
}

/* Rows [r0, r1) of Y = L X for CM columns of a CSR graph, xt the block's
 * row-major copy (scaled by D^-1/2 when symmetric). CM is a constant after
 * inlining, so the accumulators stay in registers; each row's sum runs over
 * its entries in order, as before, so the results do not change. A graph
 * numbered without locality (kNN of data in their order) makes every
 * gather a cache miss: the row of the entry AHEAD entries on is fetched
 * early (the indices are known), so the misses overlap. */
static inline void csr_rows(const gstat_laplacian_op *op, int64_t r0, int64_t r1, const int CM,
                            const double *restrict xt, const double *restrict X,
                            double *restrict Y) {
  const gstat_i_graph *g = &op->g;
  const double *d = op->degrees, *s = op->scale, *w = g->weights;
  const int64_t *off = g->offsets, *idx = g->indices, base = g->base, nn = g->n;
  const int64_t last = off[r1] - AHEAD; /* prefetch only inside the rows' entries */
  bool unnorm = op->kind == GSTAT_LAPLACIAN_UNNORMALIZED;
  for (int64_t i = r0; i < r1; i++) {
    double acc[16] = {0};
    for (int64_t e = off[i]; e < off[i + 1]; e++) {
      if (e < last) {
        const double *ahead = xt + (idx[e + AHEAD] - base) * CM;
        __builtin_prefetch(ahead);
        if (CM > 1) __builtin_prefetch(ahead + CM - 1); /* a row may span two lines */
      }
      const double we = w ? w[e] : 1.0, *x = xt + (idx[e] - base) * CM;
#pragma omp simd
      for (int c = 0; c < CM; c++) acc[c] += we * x[c];
    }
    for (int c = 0; c < CM; c++) {
      double xi = X[i + c * nn];
      /* symmetric: x_i - s_i sum w s_j x_j; random walk: x_i - (1/d_i) sum w x_j */
      Y[i + c * nn] = unnorm ? d[i] * xi - acc[c] : (d[i] > 0 ? xi : 0.0) - s[i] * acc[c];
    }
  }
}

GSTAT_I_CLONES static void csr_rows_n(const gstat_laplacian_op *op, int64_t r0, int64_t r1, int cm,
                                      const double *xt, const double *X, double *Y) {
  switch (cm) {
    case 1: csr_rows(op, r0, r1, 1, xt, X, Y); break;
    case 2: csr_rows(op, r0, r1, 2, xt, X, Y); break;
    case 3: csr_rows(op, r0, r1, 3, xt, X, Y); break;
    case 4: csr_rows(op, r0, r1, 4, xt, X, Y); break;
    case 5: csr_rows(op, r0, r1, 5, xt, X, Y); break;
    case 6: csr_rows(op, r0, r1, 6, xt, X, Y); break;
    case 7: csr_rows(op, r0, r1, 7, xt, X, Y); break;
    case 8: csr_rows(op, r0, r1, 8, xt, X, Y); break;
    case 9: csr_rows(op, r0, r1, 9, xt, X, Y); break;
    case 10: csr_rows(op, r0, r1, 10, xt, X, Y); break;
    case 11: csr_rows(op, r0, r1, 11, xt, X, Y); break;
    case 12: csr_rows(op, r0, r1, 12, xt, X, Y); break;
    case 13: csr_rows(op, r0, r1, 13, xt, X, Y); break;
    case 14: csr_rows(op, r0, r1, 14, xt, X, Y); break;
    case 15: csr_rows(op, r0, r1, 15, xt, X, Y); break;
    default: csr_rows(op, r0, r1, 16, xt, X, Y); break;
  }
}

gstat_status gstat_i_laplacian_apply(gstat_ctx *ctx, void *opv, int64_t n, int64_t m,
                                     const double *X, double *Y) {
  const gstat_laplacian_op *op = opv;
  const gstat_i_graph *g = &op->g;
  const double *s = op->scale;
  bool sym = op->kind == GSTAT_LAPLACIAN_SYMMETRIC;
  (void)n;
  if (op->dense) return dense_apply(ctx, op, m, X, Y);
  enum { COLS = 16, ROWS = 512 }; /* columns per pass, rows per piece */
  int64_t nn = g->n, cols = m < COLS ? m : COLS;
  /* a row-major copy of the block (scaled by D^-1/2 when symmetric) makes
   * the gathers contiguous */
  double *xt = gstat_i_workspace(ctx, GSTAT_WS_GRAPH, sizeof(double) * (size_t)(nn * cols + 1));
  if (!xt)
    return gstat_i_fail(ctx, GSTAT_ENOMEM,
                        "laplacian_op_apply: cannot allocate %lld x %lld scratch", (long long)nn,
                        (long long)cols);
  /* threads pay off past a few hundred thousand entries; each row is summed
   * in index order by one thread (results independent of the threads) */
  double entries = (double)(g->offsets[nn] - g->offsets[0] + nn);
  int nt = gstat_i_loop_threads(ctx, nn, 2.0 * entries * (double)cols,
                                12.0 * entries + 16.0 * (double)nn * (double)cols);
  bool par = nt > 1;
  int64_t pieces = (nn + ROWS - 1) / ROWS;
  for (int64_t c0 = 0; c0 < m; c0 += COLS) {
    int cm = (int)(m - c0 < COLS ? m - c0 : COLS);
    const double *Xc = X + c0 * nn;
    double *Yc = Y + c0 * nn;
#pragma omp parallel num_threads(nt) if (par)
    {
#pragma omp for schedule(static)
      for (int64_t j = 0; j < nn; j++)
        for (int c = 0; c < cm; c++) xt[j * cm + c] = (sym ? s[j] : 1.0) * Xc[j + c * nn];
          /* pieces handed out one at a time: a thread the OS sets aside on a
           * loaded machine leaves its rows to the others */
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < pieces; t++)
        csr_rows_n(op, t * ROWS, t * ROWS + ROWS < nn ? t * ROWS + ROWS : nn, cm, xt, Xc, Yc);
    }
  }
  return GSTAT_OK;
}

gstat_status gstat_laplacian_op_apply(gstat_ctx *ctx, const gstat_laplacian_op *op, int64_t m,
                                      const double *X, double *Y) {
  static const char fn[] = "laplacian_op_apply";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (!op) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: op is NULL", fn);
  if (m < 0) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: m=%lld must be >= 0", fn, (long long)m);
  if (m == 0 || op->n == 0) return GSTAT_OK;
  if (!X || !Y) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, !X ? "X" : "Y");
  size_t span = sizeof(double) * (size_t)(op->n * m);
  if ((const char *)X < (const char *)Y + span && (const char *)Y < (const char *)X + span)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X and Y overlap", fn);
  return gstat_i_laplacian_apply(ctx, (void *)op, op->n, m, X, Y);
}

int64_t gstat_laplacian_op_size(const gstat_laplacian_op *op) {
  return op ? op->n : 0;
}

const double *gstat_laplacian_op_degrees(const gstat_laplacian_op *op) {
  return op ? op->degrees : NULL;
}

void gstat_laplacian_op_destroy(gstat_laplacian_op *op) {
  if (!op) return;
  gstat_i_graph_release(NULL, &op->g);
  free(op->dense);
  free(op->degrees);
  free(op);
}
