/*
 * A graph renumbered for locality. A kNN graph comes numbered in the data's
 * order, so a product with it gathers the rows of its operand at random;
 * numbered breadth-first, a node's neighbours sit near it (within a level
 * or two), and the gathers hit the cache (the sparse eigensolver's gain:
 * bench/README.md, "Breadth-first numbering").
 */
#include <omp.h>
#include <stdlib.h>

#include "backend/dense.h"
#include "graph/graph_internal.h"

void gstat_i_graph_bfs_order(const gstat_i_graph *g, int64_t *order, unsigned char *seen) {
  const int64_t n = g->n;
  int64_t head = 0, tail = 0;
  for (int64_t i = 0; i < n; i++) seen[i] = 0;
  for (int64_t s = 0; s < n; s++) {
    if (seen[s]) continue;
    seen[s] = 1;
    order[tail++] = s;
    while (head < tail) {
      const int64_t u = order[head++];
      for (int64_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
        const int64_t v = g->indices[e] - g->base;
        if (!seen[v]) {
          seen[v] = 1;
          order[tail++] = v;
        }
      }
    }
  }
}

typedef struct {
  int64_t j;
  double w;
} entry;

static int by_column(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->j > y->j) - (x->j < y->j);
}

/* Rows up to this long are sorted by insertion; longer ones (a hub's) by
 * qsort, whose cost does not grow with the square of the row. */
enum { INSERTION_MAX = 32 };

/* Row `old` of g as row `row` of c: columns through inv, sorted; scratch:
 * room for the row's entries when it is longer than INSERTION_MAX. */
static void renumbered_row(const gstat_i_graph *g, const int64_t *inv, int64_t old, gstat_csr *c,
                           int64_t row, entry *scratch) {
  int64_t *idx = (int64_t *)c->indices;
  double *w = (double *)c->weights;
  const int64_t at = c->offsets[row], len = c->offsets[row + 1] - at;
  for (int64_t t = 0; t < len; t++) {
    const int64_t e = g->offsets[old] + t, j = inv[g->indices[e] - g->base];
    const double x = g->weights ? g->weights[e] : 1.0;
    if (len > INSERTION_MAX) {
      scratch[t].j = j;
      scratch[t].w = x;
      continue;
    }
    int64_t p = t;
    for (; p > 0 && idx[at + p - 1] > j; p--) {
      idx[at + p] = idx[at + p - 1];
      w[at + p] = w[at + p - 1];
    }
    idx[at + p] = j;
    w[at + p] = x;
  }
  if (len <= INSERTION_MAX) return;
  qsort(scratch, (size_t)len, sizeof(entry), by_column);
  for (int64_t t = 0; t < len; t++) {
    idx[at + t] = scratch[t].j;
    w[at + t] = scratch[t].w;
  }
}

gstat_status gstat_i_graph_renumbered(gstat_ctx *ctx, const char *fn, const gstat_i_graph *g,
                                      const int64_t *order, gstat_i_graph *out) {
  const int64_t n = g->n, nnz = g->offsets[n] - g->offsets[0];
  int64_t longest = 0;
  for (int64_t i = 0; i < n; i++)
    if (g->offsets[i + 1] - g->offsets[i] > longest) longest = g->offsets[i + 1] - g->offsets[i];
  const int nt = gstat_i_loop_threads(ctx, n, 4.0 * (double)nnz, 24.0 * (double)nnz);
  int64_t *inv = malloc(sizeof(int64_t) * (size_t)(n + 1));
  entry *scratch = longest > INSERTION_MAX ? malloc(sizeof(entry) * (size_t)(longest * nt)) : NULL;
  gstat_csr *c = inv ? gstat_i_csr_new(n, nnz, true) : NULL;
  if (!c || (longest > INSERTION_MAX && !scratch)) {
    gstat_csr_free(c);
    free(scratch);
    free(inv);
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate a renumbered copy of %lld nodes",
                        fn, (long long)n);
  }
  int64_t *off = (int64_t *)c->offsets;
  off[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    inv[order[i]] = i;
    off[i + 1] = off[i] + (g->offsets[order[i] + 1] - g->offsets[order[i]]);
  }
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    entry *mine = scratch ? scratch + longest * omp_get_thread_num() : NULL;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; i++) renumbered_row(g, inv, order[i], c, i, mine);
  }
  free(scratch);
  free(inv);
  gstat_i_graph_adopt(out, c);
  return GSTAT_OK;
}
