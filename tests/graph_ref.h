/* Helpers of the graph and spectral tests: the reference file written by
 * tests/reference/make_graph_reference.py, the adjusted Rand index, and
 * building CSR arrays from dense adjacency. Header-only (static). */
#ifndef GSTAT_TESTS_GRAPH_REF_H
#define GSTAT_TESTS_GRAPH_REF_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GSTAT_SOURCE_DIR
#error "GSTAT_SOURCE_DIR must name the source tree (tests/CMakeLists.txt sets it)"
#endif

typedef struct gref_entry {
  char key[96];
  int64_t rows, cols;
  double *v;
} gref_entry;

typedef struct gref {
  gref_entry *e;
  int64_t count;
  char *text;
} gref;

/* Parse "key,rows,cols,v..." lines of tests/reference/graph_reference.csv. */
static inline int gref_load(gref *r) {
  memset(r, 0, sizeof *r);
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/reference/graph_reference.csv", GSTAT_SOURCE_DIR);
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  r->text = malloc((size_t)size + 1);
  if (!r->text || fread(r->text, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    return 0;
  }
  fclose(f);
  r->text[size] = 0;
  int64_t cap = 64;
  r->e = malloc(sizeof(gref_entry) * (size_t)cap);
  for (char *line = r->text; line && *line;) {
    char *next = strchr(line, '\n');
    if (next) *next++ = 0;
    if (*line && *line != '#') {
      if (r->count == cap) r->e = realloc(r->e, sizeof(gref_entry) * (size_t)(cap *= 2));
      gref_entry *e = &r->e[r->count++];
      char *comma = strchr(line, ',');
      size_t klen = (size_t)(comma - line);
      if (klen >= sizeof e->key) klen = sizeof e->key - 1;
      memcpy(e->key, line, klen);
      e->key[klen] = 0;
      char *p = comma + 1;
      e->rows = strtoll(p, &p, 10);
      e->cols = strtoll(p + 1, &p, 10);
      e->v = malloc(sizeof(double) * (size_t)(e->rows * e->cols + 1));
      for (int64_t i = 0; i < e->rows * e->cols; i++) e->v[i] = strtod(p + 1, &p);
    }
    line = next;
  }
  return 1;
}

static inline const gref_entry *gref_get(const gref *r, const char *key) {
  for (int64_t i = 0; i < r->count; i++)
    if (strcmp(r->e[i].key, key) == 0) return &r->e[i];
  return NULL;
}

static inline void gref_free(gref *r) {
  for (int64_t i = 0; i < r->count; i++) free(r->e[i].v);
  free(r->e);
  free(r->text);
}

/* Adjusted Rand index of two labelings (labels >= 0). */
static inline double ari(const int64_t *a, const int64_t *b, int64_t n) {
  int64_t ka = 0, kb = 0;
  for (int64_t i = 0; i < n; i++) {
    if (a[i] + 1 > ka) ka = a[i] + 1;
    if (b[i] + 1 > kb) kb = b[i] + 1;
  }
  double *t = calloc((size_t)(ka * kb + ka + kb + 1), sizeof(double));
  double *ra = t + ka * kb, *rb = ra + ka;
  for (int64_t i = 0; i < n; i++) {
    t[a[i] * kb + b[i]] += 1;
    ra[a[i]] += 1;
    rb[b[i]] += 1;
  }
  double idx = 0, sa = 0, sb = 0;
  for (int64_t i = 0; i < ka * kb; i++) idx += t[i] * (t[i] - 1) / 2;
  for (int64_t i = 0; i < ka; i++) sa += ra[i] * (ra[i] - 1) / 2;
  for (int64_t j = 0; j < kb; j++) sb += rb[j] * (rb[j] - 1) / 2;
  free(t);
  double pairs = (double)n * (double)(n - 1) / 2;
  double expected = pairs > 0 ? sa * sb / pairs : 0, top = (sa + sb) / 2;
  if (top == expected) return 1.0; /* both trivial: identical up to renaming */
  return (idx - expected) / (top - expected);
}

/* CSR arrays (malloc'd) of the nonzeros of a dense row-major n x n matrix. */
typedef struct tcsr {
  int64_t n, nnz;
  int64_t *off, *idx;
  double *w;
} tcsr;

static inline tcsr tcsr_from_dense(const double *a, int64_t n) {
  tcsr c = {n, 0, NULL, NULL, NULL};
  for (int64_t i = 0; i < n * n; i++) c.nnz += a[i] != 0;
  c.off = malloc(sizeof(int64_t) * (size_t)(n + 1));
  c.idx = malloc(sizeof(int64_t) * (size_t)(c.nnz + 1));
  c.w = malloc(sizeof(double) * (size_t)(c.nnz + 1));
  int64_t e = 0;
  c.off[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++)
      if (a[i * n + j] != 0) {
        c.idx[e] = j;
        c.w[e++] = a[i * n + j];
      }
    c.off[i + 1] = e;
  }
  return c;
}

static inline void tcsr_free(tcsr *c) {
  free(c->off);
  free(c->idx);
  free(c->w);
}

#endif
