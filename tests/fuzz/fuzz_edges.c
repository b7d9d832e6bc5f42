/*
 * The CLI's edge-list and batch readers (src/cli/edge_reader.c) on arbitrary
 * bytes. One leading byte chooses batch, int or label ids, a fixed node
 * count and a header line; the rest is the file. Beyond "no crash, no leak,
 * no UB": every graph read has its nodes in [0, n), finite non-negative
 * weights (all or none), n <= the id limit, label names for every node, and
 * errors start with "file:line".
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>

#include "cli/edge_reader.h"
#include "fuzz_input.h"

static const char name[] = "fuzz.edges";

static void check_graph(const edge_set *s, const edge_graph *g, const edge_config *cfg) {
  FZ_CHECK(g->n >= 0 && g->n <= EDGE_MAX_ID + 1, "n=%lld", (long long)g->n);
  FZ_CHECK(cfg->nodes == 0 || cfg->ids != EDGE_IDS_INT || g->n == cfg->nodes, "n=%lld, nodes=%lld",
           (long long)g->n, (long long)cfg->nodes);
  FZ_CHECK(g->m >= 0 && g->id != NULL && g->line >= 1, "m=%lld line=%lld", (long long)g->m,
           (long long)g->line);
  FZ_CHECK((g->w != NULL) == (s->weighted != 0) || g->m == 0, "weights %p, weighted %d",
           (const void *)g->w, s->weighted);
  for (int64_t e = 0; e < g->m; e++) {
    FZ_CHECK(g->src[e] >= 0 && g->src[e] < g->n && g->dst[e] >= 0 && g->dst[e] < g->n,
             "edge %lld: %lld -> %lld of n=%lld", (long long)e, (long long)g->src[e],
             (long long)g->dst[e], (long long)g->n);
    if (g->w) FZ_CHECK(isfinite(g->w[e]) && g->w[e] >= 0, "weight %g", g->w[e]);
  }
  if (cfg->ids == EDGE_IDS_LABEL) {
    FZ_CHECK(g->labels != NULL || g->n == 0, "no labels");
    for (int64_t k = 0; k < g->n; k++) FZ_CHECK(g->labels[k] != NULL, "label %lld", (long long)k);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_input in = {data, size};
  uint8_t a = fz_u8(&in);
  edge_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.batch = a & 1;
  cfg.ids = (a >> 1) & 1 ? EDGE_IDS_LABEL : EDGE_IDS_INT;
  cfg.header = (a >> 2) & 1;
  /* a fixed node count, sometimes: small ones make ids out of range */
  cfg.nodes = (a >> 3) & 1 ? (a >> 4) : 0;
  static const uint8_t empty[1] = {'\n'};
  FILE *f = in.left ? fmemopen((void *)in.p, in.left, "rb") : fmemopen((void *)empty, 1, "rb");
  if (!f) return 0;
  char err[512] = "";
  edge_set s;
  memset(&s, 0xA5, sizeof s); /* the reader must fill it on every path */
  if (edge_read(f, name, &cfg, &s, err, sizeof err) != 0) {
    /* "gstat spectral: ..." only for out of memory and read errors */
    size_t k = strlen(name);
    FZ_CHECK(
        (strncmp(err, name, k) == 0 && err[k] == ':') || strncmp(err, "gstat spectral: ", 16) == 0,
        "message '%s'", err);
    FZ_CHECK(s.count == 0 && s.g == NULL, "a failed read left %lld graphs", (long long)s.count);
  } else {
    FZ_CHECK(s.count >= 1 && (cfg.batch || s.count == 1), "count=%lld", (long long)s.count);
    for (int64_t k = 0; k < s.count; k++) check_graph(&s, &s.g[k], &cfg);
  }
  edge_set_free(&s);
  fclose(f);
  return 0;
}
