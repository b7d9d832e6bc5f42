/*
 * `gstat spectral`: read an edge list, a table of points or a batch of edge
 * lists, cluster through the public spectral API, write labels (and the
 * embedding / eigenvalues) as CSV or JSON.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli_args.h"
#include "commands.h"
#include "out_files.h"
#include "csv_reader.h"
#include "edge_reader.h"
#include "gstat/core.h"
#include "gstat/graph.h"
#include "gstat/spectral.h"
#include "output.h"
#include "progress.h"
#include "spectral_args.h"
#include "svg_plot.h"

/* RBF builds a dense n x n matrix: refuse what cannot sensibly fit. */
#define RBF_MAX_BYTES ((double)((int64_t)4 << 30))

typedef struct job {
  const spectral_args *a;
  gstat_ctx *ctx;
  const char *name;
  FILE *in;
  int is_stdin;
  struct stat st;
  gstat_spectral_options opt;
  /* edge lists */
  edge_set es;
  gstat_csr **csr; /* one per graph */
  /* points */
  double *X;
  int64_t n_points, p;
  double *A; /* RBF: dense affinity */
  /* batch concatenation */
  int64_t *node_off, *offsets, *indices;
  double *weights;
  /* results */
  int64_t *labels;
  gstat_spectral_result *res;
  gstat_spectral_batch_result *bres;
  cli_outputs out;
  progress pr; /* reading points, then the library's kNN, eigensolver, batches */
  char label[96];
} job;

/* failures name this subcommand */
#define fail(...) cli_fail("spectral", __VA_ARGS__)

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The library's message, with what the user can do about it where we know. */
static int lib_fail(job *j, const char *what, gstat_status st) {
  const char *msg = gstat_ctx_last_error(j->ctx);
  char hint[256] = "";
  if (!msg || !*msg) msg = gstat_status_string(st);
  if (j->a->kind == IN_BATCH && j->es.count > 0) { /* name the graph as the file does */
    const char *g = strstr(msg, "graph ");
    long long gi = -1;
    if (g && sscanf(g + 6, "%lld", &gi) == 1 && gi >= 0 && gi < j->es.count)
      snprintf(hint, sizeof hint, " (graph id '%s', first on line %lld)", j->es.g[gi].id,
               (long long)j->es.g[gi].line);
  } else if (j->a->kind == IN_EDGES && j->a->ids == EDGE_IDS_INT && j->es.count == 1 &&
             strstr(msg, "connected components")) {
    const edge_graph *G = &j->es.g[0];
    unsigned char *seen = calloc((size_t)G->n, 1);
    int64_t unused = 0;
    if (seen) {
      for (int64_t e = 0; e < G->m; e++) seen[G->src[e]] = seen[G->dst[e]] = 1;
      for (int64_t i = 0; i < G->n; i++) unused += !seen[i];
      free(seen);
    }
    if (unused)
      snprintf(hint, sizeof hint,
               "; %lld of the ids 0..%lld appear in no edge and are isolated nodes "
               "(--node-ids label numbers only the ids that appear)",
               (long long)unused, (long long)G->n - 1);
  }
  return fail("%s: %s%s%s%s", j->name, what[0] ? what : "", what[0] ? ": " : "", msg, hint);
}

/* ---- output files (removed again after a failure) ------------------------------------ */

/* ---- inputs ------------------------------------------------------------------------------ */

static gstat_symmetrize edge_sym(const spectral_args *a) {
  return a->symmetrize >= 0 ? (gstat_symmetrize)a->symmetrize : GSTAT_SYM_MAX;
}

/* Isolated nodes an int-id graph may have beyond its edges' own ids without
 * --nodes: the input's size bounds the work, so that one line "0 99999999"
 * is a question, not a graph of 10^8 nodes. */
#define EDGE_IMPLIED_ISOLATED_MAX INT64_C(65536)

static int too_many_isolated(const job *j, const edge_graph *G) {
  if (j->a->ids != EDGE_IDS_INT || j->a->nodes > 0) return 0;
  if (G->n <= 2 * G->m + EDGE_IMPLIED_ISOLATED_MAX) return 0;
  char what[160] = "";
  if (j->a->kind == IN_BATCH)
    snprintf(what, sizeof what, "graph '%s' (first on line %lld): ", G->id, (long long)G->line);
  fail(
      "%s: %snode ids up to %lld make a graph of %lld nodes from %lld edge%s, so at least "
      "%lld nodes would be isolated; pass --nodes %lld if that is meant, or --node-ids label "
      "to number only the ids that appear",
      j->name, what, (long long)G->n - 1, (long long)G->n, (long long)G->m, G->m == 1 ? "" : "s",
      (long long)(G->n - 2 * G->m), (long long)G->n);
  return 1;
}

static int read_edges(job *j) {
  char err[1024];
  edge_config cfg = {j->a->kind == IN_BATCH, j->a->ids, j->a->nodes, j->a->header};
  if (edge_read(j->in, j->name, &cfg, &j->es, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return CLI_EXIT_FAILURE;
  }
  j->csr = calloc((size_t)j->es.count, sizeof(gstat_csr *));
  if (!j->csr) return fail("out of memory");
  for (int64_t g = 0; g < j->es.count; g++) {
    const edge_graph *G = &j->es.g[g];
    if (too_many_isolated(j, G)) return CLI_EXIT_FAILURE;
    gstat_status st =
        gstat_csr_from_edges(j->ctx, G->n, G->m, G->src, G->dst, G->w, edge_sym(j->a), &j->csr[g]);
    if (st != GSTAT_OK) {
      char what[160] = "";
      if (j->a->kind == IN_BATCH)
        snprintf(what, sizeof what, "graph '%s' (first on line %lld)", G->id, (long long)G->line);
      if (st == GSTAT_EINVAL && edge_sym(j->a) == GSTAT_SYM_CHECK)
        return fail(
            "%s: %s%s%s (--symmetrize check wants every edge in both directions with "
            "equal weights)",
            j->name, what, what[0] ? ": " : "", gstat_ctx_last_error(j->ctx));
      return lib_fail(j, what, st);
    }
  }
  return 0;
}

static int read_points(job *j) {
  const spectral_args *a = j->a;
  char err[1200];
  csv_reader *rd = NULL;
  csv_config cfg = {.delimiter = a->delimiter,
                    .header = a->header ? CSV_HEADER_YES : CSV_HEADER_AUTO,
                    .missing_is_error = 1,
                    .progress = progress_update,
                    .progress_user = &j->pr};
  snprintf(j->label, sizeof j->label, "gstat spectral: reading %s", j->name);
  progress_init(&j->pr, j->label, S_ISREG(j->st.st_mode) ? (int64_t)j->st.st_size : 0);
  if (csv_open(&rd, j->in, j->name, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return CLI_EXIT_FAILURE;
  }
  int rc = CLI_EXIT_FAILURE;
  j->p = csv_columns(rd);
  int64_t cap = 0;
  for (;;) {
    if (j->n_points + 4096 > cap) {
      cap = cap ? 2 * cap : 8192;
      double *x = realloc(j->X, sizeof(double) * (size_t)(cap * j->p));
      if (!x) {
        fail("%s: out of memory holding %lld points", j->name, (long long)cap);
        goto done;
      }
      j->X = x;
    }
    int64_t got = 0;
    if (csv_read_rows(rd, j->X + j->n_points * j->p, 4096, &got, NULL)) {
      fprintf(stderr, "%s\n", csv_error(rd));
      goto done;
    }
    if (got == 0) break;
    j->n_points += got;
  }
  rc = 0;
done:
  progress_done(&j->pr);
  csv_close(rd);
  return rc;
}

/* ---- clustering ------------------------------------------------------------------------- */

static int cluster_one(job *j, const gstat_graph *G, int64_t n) {
  j->labels = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (!j->labels) return fail("out of memory");
  gstat_status st = gstat_spectral_clustering(j->ctx, G, &j->opt, j->labels, &j->res);
  return st == GSTAT_OK ? 0 : lib_fail(j, "", st);
}

static int cluster_edges(job *j) {
  const gstat_csr *c = j->csr[0];
  gstat_graph G = gstat_graph_csr(c->n, c->offsets, c->indices, c->weights);
  return cluster_one(j, &G, c->n);
}

static int cluster_points(job *j) {
  const spectral_args *a = j->a;
  gstat_affinity_options ao;
  gstat_affinity_options_init(&ao);
  ao.kind = a->affinity;
  ao.gamma = a->gamma;
  ao.n_neighbors = a->neighbors;
  ao.epsilon = a->eps;
  ao.knn.algorithm = a->knn_algorithm;
  ao.knn.seed = a->seed;
  if (a->symmetrize >= 0) ao.symmetrize = (gstat_symmetrize)a->symmetrize;
  int64_t n = j->n_points;
  if ((a->affinity == GSTAT_AFFINITY_KNN || a->affinity == GSTAT_AFFINITY_MUTUAL_KNN) &&
      a->neighbors > n)
    return fail("%s: --neighbors %lld is more than the %lld points", j->name,
                (long long)a->neighbors, (long long)n);
  gstat_matrix X = gstat_matrix_row_major(j->X, GSTAT_F64, 1, n, j->p);
  gstat_status st;
  if (a->affinity == GSTAT_AFFINITY_RBF) {
    if ((double)n * (double)n * 8 > RBF_MAX_BYTES)
      return fail(
          "%s: --affinity rbf on %lld points needs a dense %lld x %lld matrix (%.1f GiB); "
          "use --affinity knn for large inputs",
          j->name, (long long)n, (long long)n, (long long)n,
          (double)n * (double)n * 8 / 1073741824.0);
    j->A = malloc(sizeof(double) * (size_t)(n * n));
    if (!j->A) return fail("out of memory (%lld x %lld affinity)", (long long)n, (long long)n);
    gstat_matrix Am = gstat_matrix_col_major(j->A, GSTAT_F64, 1, n, n);
    if ((st = gstat_affinity_dense(j->ctx, &X, &ao, &Am)) != GSTAT_OK) return lib_fail(j, "", st);
    gstat_graph G = gstat_graph_dense(&Am);
    return cluster_one(j, &G, n);
  }
  j->csr = calloc(1, sizeof(gstat_csr *));
  if (!j->csr) return fail("out of memory");
  if ((st = gstat_affinity_csr(j->ctx, &X, &ao, &j->csr[0])) != GSTAT_OK)
    return lib_fail(j, "", st);
  return cluster_edges(j);
}

/* All graphs as one block-diagonal CSR, as gstat_spectral_clustering_batch takes them. */
static int cluster_batch(job *j) {
  int64_t count = j->es.count, total = 0, nnz = 0;
  for (int64_t g = 0; g < count; g++) total += j->csr[g]->n, nnz += j->csr[g]->nnz;
  j->node_off = malloc(sizeof(int64_t) * (size_t)(count + 1));
  j->offsets = malloc(sizeof(int64_t) * (size_t)(total + 1));
  j->indices = malloc(sizeof(int64_t) * (size_t)(nnz > 0 ? nnz : 1));
  j->weights = malloc(sizeof(double) * (size_t)(nnz > 0 ? nnz : 1));
  j->labels = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
  if (!j->node_off || !j->offsets || !j->indices || !j->weights || !j->labels)
    return fail("out of memory");
  int64_t node = 0, e = 0;
  j->offsets[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    const gstat_csr *c = j->csr[g];
    j->node_off[g] = node;
    for (int64_t i = 0; i < c->n; i++) j->offsets[node + i + 1] = e + c->offsets[i + 1];
    for (int64_t t = 0; t < c->nnz; t++) {
      j->indices[e + t] = node + c->indices[t];
      j->weights[e + t] = c->weights ? c->weights[t] : 1.0;
    }
    node += c->n;
    e += c->nnz;
  }
  j->node_off[count] = node;
  gstat_graph_batch B;
  memset(&B, 0, sizeof B);
  B.format = GSTAT_GRAPH_CSR;
  B.count = count;
  B.node_offsets = j->node_off;
  B.offsets = j->offsets;
  B.indices = j->indices;
  B.weights = j->weights;
  gstat_status st = gstat_spectral_clustering_batch(j->ctx, &B, NULL, &j->opt, j->labels, &j->bres);
  if (st == GSTAT_OK) return 0;
  lib_fail(j, "", st);
  int64_t more = 0;
  for (int64_t g = 0; j->bres && g < count; g++) { /* the other failed graphs, briefly */
    if (j->bres->status[g] == GSTAT_OK) continue;
    if (more++ == 0) continue; /* the first is the message above */
    if (more <= 10)
      fprintf(stderr, "gstat spectral: %s: graph '%s' (line %lld) failed too: %s\n", j->name,
              j->es.g[g].id, (long long)j->es.g[g].line, gstat_status_string(j->bres->status[g]));
  }
  if (more > 10)
    fprintf(stderr, "gstat spectral: %s: %lld graphs failed\n", j->name, (long long)more);
  return CLI_EXIT_FAILURE;
}

/* ---- writers ---------------------------------------------------------------------------- */

/* Name of node i of graph g as the input spelled it. */
static void put_node(FILE *f, const job *j, int64_t g, int64_t i, int json) {
  if (j->a->kind != IN_POINTS && j->a->ids == EDGE_IDS_LABEL) {
    const char *s = j->es.g[g].labels[i];
    if (json)
      out_json_str(f, s);
    else
      out_csv_str(f, s);
  } else {
    fprintf(f, "%lld", (long long)i);
  }
}

static void put_i64_array(FILE *f, const int64_t *v, int64_t n) {
  fputc('[', f);
  for (int64_t i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)v[i]);
  fputc(']', f);
}

static void put_num_array(FILE *f, const double *v, int64_t n) {
  fputc('[', f);
  for (int64_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    out_json_num(f, v[i]);
  }
  fputc(']', f);
}

static void put_names(FILE *f, const job *j, int64_t g, int64_t n) {
  if (j->a->kind == IN_POINTS || j->a->ids != EDGE_IDS_LABEL) return;
  fputs(", \"names\": [", f);
  for (int64_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    put_node(f, j, g, i, 1);
  }
  fputc(']', f);
}

static int write_labels(job *j, FILE *f) {
  const spectral_args *a = j->a;
  int json = a->format == OUT_JSON;
  const char *node_word = a->kind == IN_POINTS ? "point" : "node";
  if (a->kind != IN_BATCH) {
    const gstat_spectral_result *r = j->res;
    if (json) {
      fputs("{\"input\": ", f);
      out_json_str(f, j->name);
      fprintf(f,
              ", \"%ss\": %lld, \"clusters\": %lld, \"components\": %lld, \"inertia\": ", node_word,
              (long long)r->n, (long long)r->n_clusters, (long long)r->graph_components);
      out_json_num(f, r->inertia);
      put_names(f, j, 0, r->n);
      fputs(", \"labels\": ", f);
      put_i64_array(f, j->labels, r->n);
      fputs("}\n", f);
    } else {
      fprintf(f, "%s,cluster\n", node_word);
      for (int64_t i = 0; i < r->n; i++) {
        put_node(f, j, 0, i, 0);
        fprintf(f, ",%lld\n", (long long)j->labels[i]);
      }
    }
    return ferror(f) ? -1 : 0;
  }
  const gstat_spectral_batch_result *r = j->bres;
  if (json) {
    fputs("{\"input\": ", f);
    out_json_str(f, j->name);
    fputs(", \"graphs\": [", f);
  } else {
    fputs("graph,node,cluster\n", f);
  }
  for (int64_t g = 0; g < j->es.count; g++) {
    int64_t n = j->node_off[g + 1] - j->node_off[g];
    const int64_t *lab = j->labels + j->node_off[g];
    if (json) {
      fputs(g ? ",\n  {\"graph\": " : "\n  {\"graph\": ", f);
      out_json_str(f, j->es.g[g].id);
      fprintf(f, ", \"nodes\": %lld, \"clusters\": %lld, \"components\": %lld, \"inertia\": ",
              (long long)n, (long long)r->n_clusters[g], (long long)r->graph_components[g]);
      out_json_num(f, r->inertia[g]);
      put_names(f, j, g, n);
      fputs(", \"labels\": ", f);
      put_i64_array(f, lab, n);
      fputc('}', f);
    } else {
      for (int64_t i = 0; i < n; i++) {
        out_csv_str(f, j->es.g[g].id);
        fputc(',', f);
        put_node(f, j, g, i, 0);
        fprintf(f, ",%lld\n", (long long)lab[i]);
      }
    }
  }
  if (json) fputs("\n]}\n", f);
  return ferror(f) ? -1 : 0;
}

static int write_embedding(job *j, FILE *f) {
  const gstat_spectral_result *r = j->res;
  int64_t n = r->n, d = r->n_components;
  if (j->a->format == OUT_JSON) {
    fprintf(f, "{\"input\": ");
    out_json_str(f, j->name);
    fprintf(f, ", \"rows\": %lld, \"columns\": %lld", (long long)n, (long long)d);
    put_names(f, j, 0, n);
    fputs(", \"embedding\": [", f);
    for (int64_t i = 0; i < n; i++) {
      fputs(i ? ",\n  " : "\n  ", f);
      put_num_array(f, r->embedding + i * d, d);
    }
    fputs("\n]}\n", f);
  } else {
    fputs(j->a->kind == IN_POINTS ? "point" : "node", f);
    for (int64_t c = 0; c < d; c++) fprintf(f, ",e%lld", (long long)c + 1);
    fputc('\n', f);
    for (int64_t i = 0; i < n; i++) {
      put_node(f, j, 0, i, 0);
      for (int64_t c = 0; c < d; c++) {
        fputc(',', f);
        out_csv_num(f, r->embedding[i * d + c]);
      }
      fputc('\n', f);
    }
  }
  return ferror(f) ? -1 : 0;
}

static int write_eigenvalues(job *j, FILE *f) {
  int json = j->a->format == OUT_JSON;
  if (j->a->kind != IN_BATCH) {
    const gstat_spectral_result *r = j->res;
    if (json) {
      fputs("{\"eigenvalues\": ", f);
      put_num_array(f, r->eigenvalues, r->n_eigenvalues);
      fputs("}\n", f);
    } else {
      fputs("index,eigenvalue\n", f);
      for (int64_t i = 0; i < r->n_eigenvalues; i++) {
        fprintf(f, "%lld,", (long long)i);
        out_csv_num(f, r->eigenvalues[i]);
        fputc('\n', f);
      }
    }
    return ferror(f) ? -1 : 0;
  }
  const gstat_spectral_batch_result *r = j->bres;
  fputs(json ? "{\"graphs\": [" : "graph,index,eigenvalue\n", f);
  for (int64_t g = 0; g < r->count; g++) {
    const double *w = r->eigenvalues + r->eig_offsets[g];
    int64_t m = r->eig_offsets[g + 1] - r->eig_offsets[g];
    if (json) {
      fputs(g ? ",\n  {\"graph\": " : "\n  {\"graph\": ", f);
      out_json_str(f, j->es.g[g].id);
      fputs(", \"eigenvalues\": ", f);
      put_num_array(f, w, m);
      fputc('}', f);
    } else {
      for (int64_t i = 0; i < m; i++) {
        out_csv_str(f, j->es.g[g].id);
        fprintf(f, ",%lld,", (long long)i);
        out_csv_num(f, w[i]);
        fputc('\n', f);
      }
    }
  }
  if (json) fputs("\n]}\n", f);
  return ferror(f) ? -1 : 0;
}

/* Nodes drawn by --plot: beyond this an evenly spaced sample (an SVG of a
 * million circles helps nobody). */
#define PLOT_POINTS 20000

/* --plot: the embedding's first two informative columns, coloured by
 * cluster. Of a connected graph the first eigenvector is the trivial one
 * (constant, or sqrt(degree) for the sym Laplacian) unless --drop-first
 * removed it, so it is skipped as R's plot(gs_spectral) skips it; with
 * several components the first eigenvectors are the component indicators,
 * kept. */
static int write_plot(job *j, FILE *f) {
  const gstat_spectral_result *r = j->res;
  int64_t n = r->n, d = r->n_components, k = r->n_clusters;
  int64_t c0 = (!j->a->drop_first && r->graph_components == 1 && d >= 2) ? 1 : 0;
  int64_t stride = (n + PLOT_POINTS - 1) / PLOT_POINTS, m = 0;
  if (stride < 1) stride = 1;
  int64_t cap = n / stride + 1;
  double *x = malloc(sizeof(double) * (size_t)cap), *y = malloc(sizeof(double) * (size_t)cap);
  int64_t *node = malloc(sizeof(int64_t) * (size_t)cap);
  int32_t *group = malloc(sizeof(int32_t) * (size_t)cap);
  char(*names)[32] = calloc((size_t)(k > 0 ? k : 1), sizeof *names);
  const char **name_ptr = calloc((size_t)(k > 0 ? k : 1), sizeof *name_ptr);
  int rc = -1;
  if (!x || !y || !node || !group || !names || !name_ptr || d == 0) goto done;
  for (int64_t i = 0; i < n; i += stride, m++) {
    x[m] = r->embedding[i * d + c0];
    y[m] = c0 + 1 < d ? r->embedding[i * d + c0 + 1] : 0;
    node[m] = i;
    group[m] = (int32_t)j->labels[i];
  }
  for (int64_t c = 0; c < k; c++) {
    snprintf(names[c], sizeof names[c], "cluster %lld", (long long)c);
    name_ptr[c] = names[c];
  }
  char lx[64], ly[64]; /* eigenvectors counted from 1, the smallest first */
  int64_t first = c0 + 1 + (j->a->drop_first != 0);
  snprintf(lx, sizeof lx, "eigenvector %lld", (long long)first);
  snprintf(ly, sizeof ly, "eigenvector %lld", (long long)first + 1);
  svg_spectral_plot p = {
      j->name, n, k, m, node, x, c0 + 1 < d ? y : NULL, lx, ly, {group, k, name_ptr, "cluster"}};
  rc = svg_write_spectral_plot(f, &p);
done:
  if (rc && d == 0) fail("%s: --plot: the embedding has no column to draw", j->name);
  free(x), free(y), free(node), free(group), free(names), free(name_ptr);
  return rc;
}

static int write_one(job *j, const char *path, const char *what, int (*fn)(job *, FILE *)) {
  FILE *f = cli_open_output(&j->out, path, what);
  if (!f) return CLI_EXIT_FAILURE;
  return cli_close_output(&j->out, f, path, what, fn(j, f) == 0);
}

static int write_results(job *j) {
  const spectral_args *a = j->a;
  if (a->embedding && write_one(j, a->embedding, "embedding", write_embedding))
    return CLI_EXIT_FAILURE;
  if (a->eigenvalues && write_one(j, a->eigenvalues, "eigenvalues", write_eigenvalues))
    return CLI_EXIT_FAILURE;
  if (a->plot && write_one(j, a->plot, "plot", write_plot)) return CLI_EXIT_FAILURE;
  return write_one(j, a->output ? a->output : "-", "labels", write_labels);
}

/* ---- driver ------------------------------------------------------------------------------ */

static int open_input(job *j) {
  const spectral_args *a = j->a;
  j->is_stdin = strcmp(a->input, "-") == 0;
  j->name = j->is_stdin ? "<stdin>" : a->input;
  if (j->is_stdin) {
    j->in = stdin;
    return 0;
  }
  if (stat(a->input, &j->st) != 0) return fail("cannot open %s: %s", a->input, strerror(errno));
  if (S_ISDIR(j->st.st_mode)) return fail("%s is a directory, not an input file", a->input);
  if (!(j->in = fopen(a->input, "rb")))
    return fail("cannot open %s: %s", a->input, strerror(errno));
  const char *outs[4] = {a->output, a->embedding, a->eigenvalues, a->plot};
  for (int i = 0; i < 4; i++) {
    if (outs[i] && strcmp(outs[i], "-") && cli_same_file(j->is_stdin ? NULL : &j->st, outs[i])) {
      fprintf(stderr, "gstat spectral: %s would overwrite the input file\n", outs[i]);
      return CLI_EXIT_USAGE;
    }
  }
  return 0;
}

static int create_context(job *j) {
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  o.backend = j->a->backend;
  o.num_threads = j->a->threads;
  o.progress = progress_library; /* shown on a terminal once a step is long */
  o.progress_user = &j->pr;
  gstat_status st = gstat_ctx_create(&j->ctx, &o);
  if (st != GSTAT_OK)
    return fail("cannot set up the %s backend: %s%s",
                j->a->backend == GSTAT_BACKEND_CUDA  ? "cuda"
                : j->a->backend == GSTAT_BACKEND_CPU ? "cpu"
                                                     : "default",
                gstat_status_string(st),
                j->a->backend == GSTAT_BACKEND_CUDA
                    ? " (the CUDA module libgstat_cuda.so.0 and a GPU are needed; --backend auto "
                      "uses the CPU when they are missing)"
                    : "");
  return 0;
}

static void set_options(job *j) {
  const spectral_args *a = j->a;
  gstat_spectral_options_init(&j->opt);
  j->opt.n_clusters = a->eigengap ? 0 : a->k;
  if (a->max_clusters) j->opt.max_clusters = a->max_clusters;
  j->opt.laplacian = a->laplacian;
  j->opt.assign = a->assign;
  if (a->n_init) j->opt.n_init = a->n_init;
  j->opt.seed = a->seed;
  j->opt.normalize_rows = a->normalize_rows;
  j->opt.drop_first = a->drop_first;
}

static void report(const job *j, double t_read, double t_fit) {
  if (j->a->kind == IN_BATCH) {
    int64_t kmin = INT64_MAX, kmax = 0;
    for (int64_t g = 0; g < j->bres->count; g++) {
      if (j->bres->n_clusters[g] < kmin) kmin = j->bres->n_clusters[g];
      if (j->bres->n_clusters[g] > kmax) kmax = j->bres->n_clusters[g];
    }
    fprintf(stderr,
            "gstat spectral: %s: %lld graphs, %lld nodes; k %lld..%lld; backend %s; read %.3f s, "
            "cluster %.3f s\n",
            j->name, (long long)j->es.count, (long long)j->node_off[j->es.count], (long long)kmin,
            (long long)kmax, gstat_ctx_last_backend_name(j->ctx), t_read, t_fit);
    return;
  }
  const gstat_spectral_result *r = j->res;
  fprintf(stderr,
          "gstat spectral: %s: %lld %s, k %lld, %lld connected component%s, inertia %.6g, %s "
          "eigensolver; backend %s; read %.3f s, cluster %.3f s\n",
          j->name, (long long)r->n, j->a->kind == IN_POINTS ? "points" : "nodes",
          (long long)r->n_clusters, (long long)r->graph_components,
          r->graph_components == 1 ? "" : "s", r->inertia, r->used_sparse ? "sparse" : "dense",
          gstat_ctx_last_backend_name(j->ctx), t_read, t_fit);
}

static void job_free(job *j, int failed) {
  if (failed) cli_remove_created(&j->out); /* no half-written files */
  if (j->in && j->in != stdin) fclose(j->in);
  for (int64_t g = 0; j->csr && g < (j->a->kind == IN_POINTS ? 1 : j->es.count); g++)
    gstat_csr_free(j->csr[g]);
  free(j->csr);
  edge_set_free(&j->es);
  free(j->X);
  free(j->A);
  free(j->node_off), free(j->offsets), free(j->indices), free(j->weights);
  free(j->labels);
  gstat_spectral_result_free(j->res);
  gstat_spectral_batch_result_free(j->bres);
  gstat_ctx_destroy(j->ctx);
}

int spectral_main(int argc, char **argv) {
  spectral_args a;
  job j;
  memset(&j, 0, sizeof j);
  j.out.cmd = "spectral";
  int rc = spectral_parse_args(argc, argv, &a);
  if (rc) return rc;
  if (a.help) {
    spectral_help(stdout);
    return fflush(stdout) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
  }
  j.a = &a;
  set_options(&j);
  double t0 = seconds();
  if ((rc = open_input(&j)) || (rc = create_context(&j))) goto done;
  rc = a.kind == IN_POINTS ? read_points(&j) : read_edges(&j);
  if (rc) goto done;
  double t1 = seconds();
  snprintf(j.label, sizeof j.label, "gstat spectral: %s", j.name);
  progress_stage(&j.pr, j.label);
  rc = a.kind == IN_POINTS  ? cluster_points(&j)
       : a.kind == IN_BATCH ? cluster_batch(&j)
                            : cluster_edges(&j);
  progress_done(&j.pr);
  if (rc) goto done;
  if (a.verbose) report(&j, t1 - t0, seconds() - t1);
  rc = write_results(&j);
done:
  job_free(&j, rc != 0);
  return rc;
}
