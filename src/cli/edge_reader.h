/*
 * Reader of edge lists: one edge per line, `src dst [weight]`, or with
 * `batch` set, `graph_id src dst [weight]` for many graphs in one file.
 *
 * Format: UTF-8 text (a leading BOM is skipped), LF or CRLF. Fields are
 * separated by commas (spaces around them are ignored) or, on a line
 * without a comma, by runs of spaces and tabs. '#' starts a comment that
 * runs to the end of the line; blank lines are skipped. Every data line has
 * the number of fields of the first one (the weight column is all or
 * nothing). Weights are decimal numbers, finite and >= 0 (0 is no edge).
 *
 * Node ids: EDGE_IDS_INT takes non-negative decimal integers; a graph has
 * max id + 1 nodes (or `nodes`, when given: larger ids are errors), so ids
 * that appear in no edge are isolated nodes. EDGE_IDS_LABEL takes any token
 * as a name and numbers the names 0, 1, ... in order of first appearance
 * (per graph). Graph ids are always names, numbered in order of first
 * appearance; the lines of a graph need not be contiguous.
 *
 * Every error is "file:line:column: reason" (or "file:line: reason" when no
 * column applies), line and column 1-based, columns in characters.
 */
#ifndef GSTAT_CLI_EDGE_READER_H
#define GSTAT_CLI_EDGE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum edge_ids { EDGE_IDS_INT = 0, EDGE_IDS_LABEL = 1 } edge_ids;

/* Largest integer node id: a typo must not make a graph of 10^12 nodes. */
#define EDGE_MAX_ID INT64_C(99999999)

typedef struct edge_config {
  int batch; /* lines start with a graph id */
  edge_ids ids;
  int64_t nodes; /* INT: every graph has this many nodes (0: max id + 1) */
  int header;    /* skip the first data line (column names) */
} edge_config;

typedef struct edge_graph {
  const char *id;      /* batch: the graph id as written; else "" */
  int64_t n, m;        /* nodes, edges (lines) */
  int64_t *src, *dst;  /* m node indices in [0, n) */
  double *w;           /* m weights, or NULL without a weight column */
  const char **labels; /* LABEL: the n node names by index; INT: NULL */
  int64_t line;        /* line of the graph's first edge */
} edge_graph;

typedef struct edge_set {
  int64_t count; /* graphs (1 without batch) */
  edge_graph *g;
  int weighted;
  char **strings; /* owned names (ids, labels) */
  int64_t n_strings;
} edge_set;

/* Read all of `in` (not closed); `name` is used in messages. Returns 0, or
 * -1 with the message in err (and *out empty). */
int edge_read(FILE *in, const char *name, const edge_config *cfg, edge_set *out, char *err,
              size_t errlen);

void edge_set_free(edge_set *s);

#endif /* GSTAT_CLI_EDGE_READER_H */
