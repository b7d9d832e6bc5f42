/*
 * Distributed batch spectral clustering: the (replicated) batch is cut into
 * contiguous ranges of graphs of about equal cost, each rank clusters its
 * range, and the labels are gathered in the original order. Contiguous
 * ranges keep each rank's labels one contiguous block of the output (one
 * gather, no permutation) and make the first failing rank own the first
 * failing graph. Per-graph results depend only on the graph, the options and
 * the seed, so the labels equal a single-process call's bitwise.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

static int64_t graph_nodes(const gstat_graph_batch *Gs, int64_t g) {
  if (Gs->format == GSTAT_GRAPH_CSR) return Gs->node_offsets[g + 1] - Gs->node_offsets[g];
  return Gs->sizes ? Gs->sizes[g] : Gs->adjacency.rows;
}

/* First graph of each rank: first[r] .. first[r+1]-1 belong to rank r. Graph g
 * goes to the rank whose share of the total cost holds g's midpoint. */
static void partition(const gstat_graph_batch *Gs, int size, int64_t *first) {
  double total = 0, before = 0;
  for (int64_t g = 0; g < Gs->count; g++) {
    double n = (double)graph_nodes(Gs, g);
    total += n * n * n + 1;
  }
  int r = 0;
  first[0] = 0;
  for (int64_t g = 0; g < Gs->count; g++) {
    double n = (double)graph_nodes(Gs, g), c = n * n * n + 1;
    int owner = (int)((before + c / 2) / total * size);
    if (owner > size - 1) owner = size - 1;
    while (r < owner) first[++r] = g;
    before += c;
  }
  while (r < size) first[++r] = Gs->count;
}

/* Shape checks that must pass before the partition reads any size. */
static gstat_status check_shape(gstat_mpi *m, const gstat_graph_batch *Gs, int64_t *total,
                                const char *fn) {
  *total = 0;
  if (Gs->count < 0) return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.count < 0", fn);
  if (Gs->format == GSTAT_GRAPH_CSR) {
    if (!Gs->node_offsets || !Gs->offsets)
      return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.node_offsets or Gs.offsets is NULL", fn);
    if (Gs->node_offsets[0] != 0)
      return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.node_offsets[0] must be 0", fn);
  } else if (Gs->format != GSTAT_GRAPH_DENSE) {
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.format=%d is not a gstat_graph_format", fn,
                            (int)Gs->format);
  } else if (Gs->adjacency.batch != Gs->count) {
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.adjacency.batch=%lld differs from count=%lld",
                            fn, (long long)Gs->adjacency.batch, (long long)Gs->count);
  }
  for (int64_t g = 0; g < Gs->count; g++) {
    int64_t n = graph_nodes(Gs, g);
    if (n < 0 || (Gs->format == GSTAT_GRAPH_DENSE && n > Gs->adjacency.rows))
      return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: graph %lld has %lld nodes", fn, (long long)g,
                              (long long)n);
    *total += n;
  }
  return GSTAT_OK;
}

/* Graphs a .. b-1 as a batch of their own (CSR: rebased copies of the index arrays). */
static gstat_status slice(gstat_mpi *m, const gstat_graph_batch *Gs, int64_t a, int64_t b,
                          gstat_graph_batch *sub, int64_t **bufs, const char *fn) {
  *sub = *Gs;
  sub->count = b - a;
  if (Gs->format == GSTAT_GRAPH_DENSE) {
    size_t es = gstat_dtype_size(Gs->adjacency.dtype);
    if (b > a && es)
      sub->adjacency.data =
          (char *)Gs->adjacency.data + (size_t)(a * Gs->adjacency.batch_stride) * es;
    sub->adjacency.batch = b - a;
    if (Gs->sizes) sub->sizes = Gs->sizes + a;
    return GSTAT_OK;
  }
  int64_t base = Gs->node_offsets[a], nodes = Gs->node_offsets[b] - base;
  int64_t e0 = Gs->offsets[base], ne = Gs->offsets[base + nodes] - e0;
  if (nodes < 0 || ne < 0) return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: offsets decrease", fn);
  int64_t *no = malloc(sizeof(int64_t) * (size_t)(b - a + 1));
  int64_t *of = malloc(sizeof(int64_t) * (size_t)(nodes + 1));
  int64_t *ix = malloc(sizeof(int64_t) * (size_t)(ne > 0 ? ne : 1));
  bufs[0] = no, bufs[1] = of, bufs[2] = ix;
  if (!no || !of || !ix)
    return gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: cannot copy the CSR slice", fn);
  if (ne > 0 && !Gs->indices)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: Gs.indices is NULL", fn);
  for (int64_t g = 0; g <= b - a; g++) no[g] = Gs->node_offsets[a + g] - base;
  for (int64_t i = 0; i <= nodes; i++) of[i] = Gs->offsets[base + i] - e0;
  for (int64_t e = 0; e < ne; e++) ix[e] = Gs->indices[e0 + e] - base;
  sub->node_offsets = no;
  sub->offsets = of;
  sub->indices = ix;
  sub->weights = Gs->weights ? Gs->weights + e0 : NULL;
  return GSTAT_OK;
}

/* Gather `per` int64 values per unit from every rank's contiguous block into out. */
static int gather(gstat_mpi *m, const int64_t *mine, const int64_t *first_unit, int root,
                  int64_t *out) {
  int *counts = malloc(sizeof(int) * (size_t)m->size),
      *displs = malloc(sizeof(int) * (size_t)m->size);
  int rc = MPI_ERR_NO_MEM;
  if (counts && displs) {
    for (int r = 0; r < m->size; r++) {
      counts[r] = (int)(first_unit[r + 1] - first_unit[r]);
      displs[r] = (int)first_unit[r];
    }
    int me = counts[m->rank];
    if (root == GSTAT_MPI_ALL_RANKS)
      rc = MPI_Allgatherv(mine, me, MPI_INT64_T, out, counts, displs, MPI_INT64_T, m->comm);
    else
      rc = MPI_Gatherv(mine, me, MPI_INT64_T, out, counts, displs, MPI_INT64_T, root, m->comm);
  }
  free(counts);
  free(displs);
  return rc;
}

/* The call's arguments on this rank, then every rank's agreement, then
 * that every rank passes the same batch: *total its nodes. */
static gstat_status check_call(gstat_mpi *m, const gstat_ctx *ctx, const gstat_graph_batch *Gs,
                               int root, bool labels_missing, int64_t *total, const char *fn) {
  gstat_status st = GSTAT_OK;
  *total = 0;
  if (!ctx || !Gs) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: %s is NULL", fn, ctx ? "Gs" : "ctx");
  } else if (!gstat_mpi_i_root_ok(m, root)) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: root=%d is not a rank of %d or GSTAT_MPI_ALL_RANKS",
                          fn, root, m->size);
  } else if ((st = check_shape(m, Gs, total, fn)) == GSTAT_OK && labels_missing && *total > 0) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: labels is NULL on a receiving rank", fn);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  int64_t lo, hi, lo2, hi2;
  if (gstat_mpi_i_minmax(m, Gs->count, &lo, &hi) != MPI_SUCCESS ||
      gstat_mpi_i_minmax(m, *total, &lo2, &hi2) != MPI_SUCCESS)
    return gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: MPI_Allreduce failed", fn);
  if (lo != hi || lo2 != hi2)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: the ranks pass different batches (count %lld..%lld, nodes "
                            "%lld..%lld); every rank must pass the whole batch",
                            fn, (long long)lo, (long long)hi, (long long)lo2, (long long)hi2);
  return GSTAT_OK;
}

/* Where every rank's graphs and nodes begin (first, node_first: size + 1
 * entries); EUNSUPPORTED when a share passes MPI's int counts. */
static gstat_status shares(gstat_mpi *m, const gstat_graph_batch *Gs, int64_t *first,
                           int64_t *node_first, const char *fn) {
  gstat_status st = GSTAT_OK;
  partition(Gs, m->size, first);
  node_first[0] = 0;
  for (int r = 0; r < m->size; r++) {
    int64_t n = 0;
    for (int64_t g = first[r]; g < first[r + 1]; g++) n += graph_nodes(Gs, g);
    node_first[r + 1] = node_first[r] + n;
    if (n > INT_MAX || node_first[r] > INT_MAX)
      st = gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED, "%s: rank %d's share is above INT_MAX nodes", fn,
                            r);
  }
  return st;
}

/* Every rank's labels, and its graphs' statuses and cluster counts (per:
 * 2 (b - a) values), to the receiving ranks (all: 2 count values there);
 * the MPI return code. */
static int gather_results(gstat_mpi *m, const gstat_graph_batch *Gs, const int64_t *mylabels,
                          int64_t *per, int64_t a, int64_t b, const int64_t *first,
                          const int64_t *node_first, int root, int64_t *labels, int64_t *all,
                          gstat_status *graph_status, int64_t *k_used) {
  int rc = gather(m, mylabels, node_first, root, labels);
  if (rc != MPI_SUCCESS) return rc;
  /* statuses and k travel as int64; always gathered, so every rank joins */
  int64_t *ks = malloc(sizeof(int64_t) * (size_t)(b - a + 1));
  if (ks) memcpy(ks, per + (b - a), sizeof(int64_t) * (size_t)(b - a));
  int rc1 = gather(m, per, first, root, all);
  int rc2 = gather(m, ks ? ks : per, first, root, all ? all + Gs->count : NULL);
  for (int64_t g = 0; all && g < Gs->count; g++) {
    if (graph_status) graph_status[g] = (gstat_status)all[g];
    if (k_used) k_used[g] = all[Gs->count + g];
  }
  free(ks);
  return rc1 != MPI_SUCCESS ? rc1 : rc2;
}

gstat_status gstat_mpi_spectral_clustering_batch(gstat_mpi *m, gstat_ctx *ctx,
                                                 const gstat_graph_batch *Gs,
                                                 const int64_t *n_clusters,
                                                 const gstat_spectral_options *opt, int root,
                                                 int64_t *labels, gstat_status *graph_status,
                                                 int64_t *k_used) {
  static const char fn[] = "mpi_spectral_batch";
  if (!m) return GSTAT_EINVAL;
  m->msg[0] = '\0';
  int64_t total = 0, a = 0, b = 0, mynodes = 0;
  int64_t *all = NULL, *first = NULL, *node_first = NULL, *mylabels = NULL, *per = NULL,
          *bufs[3] = {0};
  gstat_spectral_batch_result *res = NULL;
  int recv = gstat_mpi_i_receives(m, root);
  gstat_status st = check_call(m, ctx, Gs, root, recv && !labels, &total, fn);
  if (st != GSTAT_OK) return st;
  first = malloc(sizeof(int64_t) * (size_t)(m->size + 1));
  node_first = malloc(sizeof(int64_t) * (size_t)(m->size + 1));
  if (recv) all = malloc(sizeof(int64_t) * (size_t)(2 * Gs->count + 1));
  if (!first || !node_first || (recv && !all)) {
    st = gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: out of memory", fn);
    goto agree;
  }
  st = shares(m, Gs, first, node_first, fn);
  a = first[m->rank], b = first[m->rank + 1];
  mynodes = node_first[m->rank + 1] - node_first[m->rank];
  gstat_graph_batch sub;
  mylabels = malloc(sizeof(int64_t) * (size_t)(mynodes > 0 ? mynodes : 1));
  per = malloc(sizeof(int64_t) * (size_t)(2 * (b - a) + 1));
  if (st == GSTAT_OK && (!mylabels || !per))
    st = gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: out of memory", fn);
  if (st == GSTAT_OK) st = slice(m, Gs, a, b, &sub, bufs, fn);
  if (st == GSTAT_OK && b > a) {
    st = gstat_spectral_clustering_batch(ctx, &sub, n_clusters ? n_clusters + a : NULL, opt,
                                         mylabels, &res);
    if (st != GSTAT_OK) {
      const char *e = gstat_ctx_last_error(ctx);
      gstat_mpi_i_fail(m, st, "graphs %lld..%lld (numbered from 0 within that range below): %s",
                       (long long)a, (long long)(b - 1), e && *e ? e : gstat_status_string(st));
    }
  }
agree:;
  /* whole-call failures (nothing ran: no result) first; they write nothing */
  char own[GSTAT_MPI_MSG]; /* a graph's own failure, reported after the gather */
  memcpy(own, m->msg, sizeof own);
  gstat_status whole = gstat_mpi_i_agree(m, st != GSTAT_OK && !res ? st : GSTAT_OK);
  if (whole != GSTAT_OK) {
    st = whole;
    goto done;
  }
  for (int64_t g = 0; g < b - a; g++) {
    per[g] = res ? (int64_t)res->status[g] : 0;
    per[(b - a) + g] = res ? res->n_clusters[g] : 0;
  }
  int rc = gather_results(m, Gs, mylabels, per, a, b, first, node_first, root, recv ? labels : NULL,
                          all, graph_status, k_used);
  if (rc != MPI_SUCCESS)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: gathering the labels: MPI error %d", fn, rc);
  else if (st != GSTAT_OK)
    memcpy(m->msg, own, sizeof own);
  st = gstat_mpi_i_agree(m, st); /* the first failing graph lies on the lowest failing rank */
done:
  gstat_spectral_batch_result_free(res);
  free(all);
  free(first);
  free(node_first);
  free(mylabels);
  free(per);
  for (int i = 0; i < 3; i++) free(bufs[i]);
  return st;
}
