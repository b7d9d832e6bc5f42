/* .Call glue for Laplacians and spectral clustering. Graphs arrive from R as
 * small lists: list(type = "dense", A), list(type = "csr", n, p, j, x) (the
 * CSC arrays of a symmetric Matrix::dgCMatrix, which are its CSR arrays), or
 * list(type = "data", X, affinity, gamma, n_neighbors) for gs_spectral. */
#include <stdio.h>
#include <string.h>

#include "rgstat.h"

static SEXP list_elt(SEXP list, const char *name) {
  SEXP names = Rf_getAttrib(list, R_NamesSymbol);
  for (R_xlen_t i = 0; i < XLENGTH(list); i++)
    if (strcmp(CHAR(STRING_ELT(names, i)), name) == 0) return VECTOR_ELT(list, i);
  Rf_error("internal: no element '%s'", name);
  return R_NilValue; /* not reached */
}

/* R integer vector -> int64 (R_alloc'd, freed by R after the .Call) */
static int64_t *int64_of(SEXP v, const char *what) {
  if (TYPEOF(v) != INTSXP) Rf_error("internal: %s must be an integer vector", what);
  R_xlen_t len = XLENGTH(v);
  int64_t *out = (int64_t *)R_alloc(len > 0 ? (size_t)len : 1, sizeof(int64_t));
  for (R_xlen_t i = 0; i < len; i++) out[i] = INTEGER(v)[i];
  return out;
}

static SEXP int_of(const int64_t *v, int64_t len, int64_t add) {
  SEXP out = Rf_allocVector(INTSXP, len);
  for (int64_t i = 0; i < len; i++) INTEGER(out)[i] = v[i] < 0 ? NA_INTEGER : (int)(v[i] + add);
  return out;
}

/* A graph described by a list; `owned` is a CSR the library made (kNN). */
typedef struct rg_graph {
  gstat_graph g;
  gstat_csr *owned;
  int64_t n;
} rg_graph;

/* Builds the graph; for type "data" this runs the affinity (needs c). */
static gstat_status make_graph(rg_call *c, SEXP spec, int symmetrize, rg_graph *out) {
  const char *type = CHAR(STRING_ELT(list_elt(spec, "type"), 0));
  out->owned = NULL;
  if (strcmp(type, "dense") == 0 || strcmp(type, "data") == 0) {
    int64_t n, m;
    double *a;
    if (strcmp(type, "data") == 0) {
      double *xd = rg_real_matrix(list_elt(spec, "X"), "x", &n, &m);
      gstat_affinity_options ao;
      gstat_affinity_options_init(&ao);
      ao.kind = (gstat_affinity_kind)rg_int(list_elt(spec, "affinity"), "affinity");
      ao.gamma = rg_double(list_elt(spec, "gamma"), "gamma");
      ao.n_neighbors = rg_int(list_elt(spec, "n_neighbors"), "n_neighbors");
      gstat_matrix X = rg_colmajor(xd, 1, n, m);
      if (ao.kind == GSTAT_AFFINITY_RBF) { /* complete graph: dense is smaller than CSR */
        a = (double *)R_alloc((size_t)(n > 0 ? n * n : 1), sizeof(double));
        gstat_matrix A = rg_colmajor(a, 1, n, n);
        gstat_status st = gstat_affinity_dense(c->ctx, &X, &ao, &A);
        if (st != GSTAT_OK) return st;
      } else {
        gstat_status st = gstat_affinity_csr(c->ctx, &X, &ao, &out->owned);
        if (st != GSTAT_OK) return st;
        out->g = gstat_graph_csr(n, out->owned->offsets, out->owned->indices, out->owned->weights);
        out->n = n;
        return GSTAT_OK;
      }
    } else {
      a = rg_real_matrix(list_elt(spec, "A"), "the adjacency matrix", &n, &m);
      if (n != m)
        Rf_error("%s: the adjacency matrix must be square (it is %lld x %lld)", c->fname,
                 (long long)n, (long long)m);
    }
    gstat_matrix A = rg_colmajor(a, 1, n, n); /* the graph copies the descriptor */
    out->g = gstat_graph_dense(&A);
    out->n = n;
  } else {
    int64_t n = rg_int(list_elt(spec, "n"), "n");
    SEXP x = list_elt(spec, "x");
    out->g = gstat_graph_csr(n, int64_of(list_elt(spec, "p"), "p"),
                             int64_of(list_elt(spec, "j"), "j"), x == R_NilValue ? NULL : REAL(x));
    out->n = n;
  }
  out->g.symmetrize = (gstat_symmetrize)symmetrize;
  return GSTAT_OK;
}

SEXP rg_laplacian(SEXP graph, SEXP kind, SEXP symmetrize) {
  static const char *dnames[] = {"L", "degrees"};
  static const char *snames[] = {"p", "j", "x", "degrees"};
  gstat_laplacian_kind k = (gstat_laplacian_kind)rg_int(kind, "type");
  rg_call c;
  rg_begin(&c, "gs_laplacian");
  rg_graph G;
  rg_check(&c, make_graph(&c, graph, rg_int(symmetrize, "symmetrize"), &G));
  int64_t n = G.n;
  SEXP out;
  if (G.g.format == GSTAT_GRAPH_DENSE) {
    out = PROTECT(rg_named_list(2, dnames));
    SEXP L = Rf_allocMatrix(REALSXP, (int)n, (int)n);
    SET_VECTOR_ELT(out, 0, L);
    SEXP deg = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 1, deg);
    gstat_matrix Lm = rg_colmajor(REAL(L), 1, n, n);
    gstat_matrix D = gstat_vector_batch(REAL(deg), GSTAT_F64, 1, n);
    rg_check(&c, gstat_laplacian(c.ctx, &G.g, k, &Lm, &D));
  } else {
    int64_t nnz = 0;
    rg_check(&c, gstat_laplacian_csr(c.ctx, &G.g, k, 0, NULL, NULL, NULL, &nnz, NULL));
    if (nnz > INT32_MAX) {
      rg_end(&c);
      Rf_error("gs_laplacian: %lld entries do not fit a Matrix sparse matrix", (long long)nnz);
    }
    int64_t *off = (int64_t *)R_alloc((size_t)n + 1, sizeof(int64_t));
    int64_t *idx = (int64_t *)R_alloc(nnz > 0 ? (size_t)nnz : 1, sizeof(int64_t));
    out = PROTECT(rg_named_list(4, snames));
    SEXP vals = Rf_allocVector(REALSXP, nnz);
    SET_VECTOR_ELT(out, 2, vals);
    SEXP deg = Rf_allocVector(REALSXP, n);
    SET_VECTOR_ELT(out, 3, deg);
    rg_check(&c, gstat_laplacian_csr(c.ctx, &G.g, k, nnz, off, idx, REAL(vals), &nnz, REAL(deg)));
    SET_VECTOR_ELT(out, 0, int_of(off, n + 1, 0));
    SET_VECTOR_ELT(out, 1, int_of(idx, nnz, 0));
  }
  rg_end(&c);
  UNPROTECT(1);
  return out;
}

static void spectral_options(SEXP opts, gstat_spectral_options *o) {
  gstat_spectral_options_init(o);
  o->n_clusters = rg_int(list_elt(opts, "k"), "k");
  o->max_clusters = rg_int(list_elt(opts, "max_clusters"), "max_clusters");
  o->n_components = rg_int(list_elt(opts, "n_components"), "n_components");
  o->laplacian = (gstat_laplacian_kind)rg_int(list_elt(opts, "laplacian"), "laplacian");
  o->assign = (gstat_assign_labels)rg_int(list_elt(opts, "assign"), "assign");
  o->n_init = rg_int(list_elt(opts, "n_init"), "n_init");
  o->seed = (uint64_t)rg_double(list_elt(opts, "seed"), "seed");
  o->normalize_rows = Rf_asLogical(list_elt(opts, "normalize_rows")) == TRUE;
  o->drop_first = Rf_asLogical(list_elt(opts, "drop_first")) == TRUE;
}

SEXP rg_spectral(SEXP graph, SEXP opts) {
  static const char *names[] = {"cluster",          "eigenvalues", "embedding",  "k",
                                "graph_components", "inertia",     "used_sparse"};
  gstat_spectral_options o;
  spectral_options(opts, &o);
  rg_call c;
  rg_begin(&c, "gs_spectral");
  rg_graph G;
  rg_check(&c, make_graph(&c, graph, rg_int(list_elt(opts, "symmetrize"), "symmetrize"), &G));
  int64_t n = G.n;
  int64_t *labels = (int64_t *)R_alloc(n > 0 ? (size_t)n : 1, sizeof(int64_t));
  gstat_spectral_result *res = NULL;
  gstat_status st = gstat_spectral_clustering(c.ctx, &G.g, &o, labels, &res);
  gstat_csr_free(G.owned);
  /* k-means or the sparse solver not converging still gives usable labels:
   * an R warning (raised once everything is freed), not an error. */
  char warn[1024] = "";
  if (st == GSTAT_ENOCONV) {
    snprintf(warn, sizeof warn, "gs_spectral: %s", gstat_ctx_last_error(c.ctx));
    st = GSTAT_OK;
  }
  if (st != GSTAT_OK) gstat_spectral_result_free(res);
  rg_check(&c, st);
  rg_end(&c);
  SEXP out = PROTECT(rg_named_list(7, names));
  SET_VECTOR_ELT(out, 0, int_of(labels, n, 1));
  SEXP ev = Rf_allocVector(REALSXP, res->n_eigenvalues);
  SET_VECTOR_ELT(out, 1, ev);
  if (res->n_eigenvalues > 0)
    memcpy(REAL(ev), res->eigenvalues, (size_t)res->n_eigenvalues * sizeof(double));
  int64_t nc = res->n_components;
  SEXP emb = Rf_allocMatrix(REALSXP, (int)n, (int)nc);
  SET_VECTOR_ELT(out, 2, emb);
  for (int64_t r = 0; r < n; r++)
    for (int64_t j = 0; j < nc; j++) REAL(emb)[r + j * n] = res->embedding[r * nc + j];
  SET_VECTOR_ELT(out, 3, Rf_ScalarInteger((int)res->n_clusters));
  SET_VECTOR_ELT(out, 4, Rf_ScalarInteger((int)res->graph_components));
  SET_VECTOR_ELT(out, 5, Rf_ScalarReal(res->inertia));
  SET_VECTOR_ELT(out, 6, Rf_ScalarLogical(res->used_sparse));
  gstat_spectral_result_free(res);
  if (*warn) Rf_warning("%s", warn);
  UNPROTECT(1);
  return out;
}

SEXP rg_spectral_batch(SEXP graphs, SEXP k, SEXP opts) {
  static const char *names[] = {"labels", "k",           "graph_components", "inertia",
                                "status", "eig_offsets", "eigenvalues",      "message"};
  gstat_spectral_options o;
  spectral_options(opts, &o);
  gstat_graph_batch B;
  memset(&B, 0, sizeof B);
  const char *type = CHAR(STRING_ELT(list_elt(graphs, "type"), 0));
  int64_t total;
  if (strcmp(type, "dense") == 0) {
    SEXP a = list_elt(graphs, "A");
    SEXP dim = Rf_getAttrib(a, R_DimSymbol);
    if (TYPEOF(a) != REALSXP || TYPEOF(dim) != INTSXP || XLENGTH(dim) != 3) Rf_error("internal: A");
    int64_t nmax = INTEGER(dim)[0];
    B.format = GSTAT_GRAPH_DENSE;
    B.count = INTEGER(dim)[2];
    B.adjacency = rg_colmajor(REAL(a), B.count, nmax, nmax);
    SEXP sizes = list_elt(graphs, "sizes");
    B.sizes = int64_of(sizes, "sizes");
    total = 0;
    for (int64_t g = 0; g < B.count; g++) total += B.sizes[g];
  } else {
    SEXP x = list_elt(graphs, "x");
    B.format = GSTAT_GRAPH_CSR;
    B.node_offsets = int64_of(list_elt(graphs, "node_offsets"), "node_offsets");
    B.count = XLENGTH(list_elt(graphs, "node_offsets")) - 1;
    B.offsets = int64_of(list_elt(graphs, "p"), "p");
    B.indices = int64_of(list_elt(graphs, "j"), "j");
    B.weights = x == R_NilValue ? NULL : REAL(x);
    total = B.node_offsets[B.count];
  }
  B.symmetrize = (gstat_symmetrize)rg_int(list_elt(opts, "symmetrize"), "symmetrize");
  if (XLENGTH(k) != B.count) Rf_error("internal: k");
  int64_t *kk = int64_of(k, "k");
  int64_t *labels = (int64_t *)R_alloc(total > 0 ? (size_t)total : 1, sizeof(int64_t));
  gstat_spectral_batch_result *res = NULL;
  rg_call c;
  rg_begin(&c, "gs_spectral_batch");
  gstat_status st = gstat_spectral_clustering_batch(c.ctx, &B, kk, &o, labels, &res);
  /* Graphs failing on their own (disconnected with more components than k,
   * ...) come back with their status and labels NA: a warning, not an error.
   * The result exists exactly when the graphs ran. */
  int per_graph = st != GSTAT_OK && st != GSTAT_ECANCELED && res != NULL;
  char msg[1024] = "";
  if (per_graph) snprintf(msg, sizeof msg, "%s", gstat_ctx_last_error(c.ctx));
  if (st != GSTAT_OK && !per_graph) {
    gstat_spectral_batch_result_free(res);
    res = NULL;
  }
  rg_check(&c, per_graph ? GSTAT_OK : st);
  rg_end(&c);
  int64_t cnt = B.count;
  SEXP out = PROTECT(rg_named_list(8, names));
  SET_VECTOR_ELT(out, 0, int_of(labels, total, 1));
  SET_VECTOR_ELT(out, 1, int_of(res->n_clusters, cnt, 0));
  SET_VECTOR_ELT(out, 2, int_of(res->graph_components, cnt, 0));
  SEXP in = Rf_allocVector(REALSXP, cnt);
  SET_VECTOR_ELT(out, 3, in);
  SEXP stv = Rf_allocVector(INTSXP, cnt);
  SET_VECTOR_ELT(out, 4, stv);
  for (int64_t g = 0; g < cnt; g++) {
    REAL(in)[g] = res->inertia[g];
    INTEGER(stv)[g] = (int)res->status[g];
  }
  SET_VECTOR_ELT(out, 5, int_of(res->eig_offsets, cnt + 1, 0));
  int64_t ne = res->eig_offsets[cnt];
  SEXP ev = Rf_allocVector(REALSXP, ne);
  SET_VECTOR_ELT(out, 6, ev);
  if (ne > 0) memcpy(REAL(ev), res->eigenvalues, (size_t)ne * sizeof(double));
  SET_VECTOR_ELT(out, 7, Rf_mkString(msg));
  gstat_spectral_batch_result_free(res);
  UNPROTECT(1);
  return out;
}
