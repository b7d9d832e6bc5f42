/* rgstat: registration, the per-call context, errors and interrupts. */
#include <stdio.h>
#include <string.h>

#include <R_ext/Rdynload.h>
#include <R_ext/Visibility.h>

#include "rgstat.h"

/* Rinterface.h declares it for front ends; it is exported by libR and is
 * how a C caller raises an interrupt after cleaning up (Rcpp does the same). */
void Rf_onintr(void);

/* Which backend ran the last gs_ call ("cpu", "cuda", "cuda+cpu", "none"). */
static char last_backend[32] = "none";
/* What the GPU did in that call (the growth of the context's counters). */
static gstat_device_stats last_device_stats;

static gstat_backend option_backend(void) {
  SEXP o = Rf_GetOption1(Rf_install("rgstat.backend"));
  if (o == R_NilValue) return GSTAT_BACKEND_AUTO;
  if (!Rf_isString(o) || XLENGTH(o) != 1)
    Rf_error("option rgstat.backend must be \"auto\", \"cpu\" or \"cuda\"");
  const char *s = CHAR(STRING_ELT(o, 0));
  if (strcmp(s, "auto") == 0) return GSTAT_BACKEND_AUTO;
  if (strcmp(s, "cpu") == 0) return GSTAT_BACKEND_CPU;
  if (strcmp(s, "cuda") == 0) return GSTAT_BACKEND_CUDA;
  Rf_error("option rgstat.backend must be \"auto\", \"cpu\" or \"cuda\", not \"%s\"", s);
  return GSTAT_BACKEND_AUTO; /* not reached */
}

static int option_threads(void) {
  SEXP o = Rf_GetOption1(Rf_install("rgstat.threads"));
  if (o == R_NilValue) return 0;
  double v = Rf_asReal(o);
  if (!(v >= 0 && v <= 4096)) Rf_error("option rgstat.threads must be a count >= 0 (0: all cores)");
  return (int)v;
}

static void check_interrupt(void *unused) {
  (void)unused;
  R_CheckUserInterrupt();
}

/* The R function progress_reporter()'s update(what, done, total) for the
 * call in progress (NULL: none), set by the R wrapper around the call. */
static SEXP progress_fn = NULL;

SEXP rg_set_progress(SEXP fn) {
  if (progress_fn) R_ReleaseObject(progress_fn);
  progress_fn = NULL;
  if (fn != R_NilValue) {
    R_PreserveObject(fn);
    progress_fn = fn;
  }
  return R_NilValue;
}

typedef struct progress_args {
  const char *what;
  int64_t done, total;
} progress_args;

static void call_progress_fn(void *data) {
  const progress_args *p = data;
  SEXP call = PROTECT(Rf_lang4(progress_fn, Rf_mkString(p->what), Rf_ScalarReal((double)p->done),
                               Rf_ScalarReal((double)p->total)));
  Rf_eval(call, R_GlobalEnv);
  UNPROTECT(1);
}

/* The context that every call uses, kept between calls so that its
 * workspace (and on a GPU its handles, device buffers and solver graphs) is
 * reused: a repeated call of one shape allocates nothing. It is re-created
 * when options(rgstat.backend, rgstat.threads) change and destroyed when the
 * package is unloaded. R calls it from one
 * thread, and nothing in a call calls rgstat again. */
static struct {
  gstat_ctx *ctx;
  gstat_backend backend;
  int threads;
  rg_call *running; /* the call in progress, for the progress callback */
  gstat_device_stats before;
} shared;

static void shared_drop(void) {
  gstat_ctx_destroy(shared.ctx);
  shared.ctx = NULL;
}

/* Called by gstat between units of work on the calling thread. A pending
 * interrupt would longjmp out of R_CheckUserInterrupt, past the C library's
 * cleanup, so it is caught by R_ToplevelExec here and turned into a cancel;
 * rg_check re-raises it once everything is freed. */
static int progress_cb(int64_t done, int64_t total, const char *what, void *user) {
  (void)user;
  rg_call *c = shared.running;
  if (!c) return 0;
  if (!R_ToplevelExec(check_interrupt, NULL)) {
    c->interrupted = 1;
    return 1;
  }
  if (progress_fn && total > 0) {
    /* R is called only when the bar would move (R's txtProgressBar draws
     * in 1/50ths), and inside R_ToplevelExec so that an error in it cannot
     * jump over the C library's cleanup: a failed update leaves the bar. */
    int pct = (int)(100 * done / total);
    if (pct != c->last_percent || (what && strcmp(what, c->last_what) != 0)) {
      progress_args p = {what ? what : "", done, total};
      snprintf(c->last_what, sizeof c->last_what, "%s", p.what);
      c->last_percent = pct;
      R_ToplevelExec(call_progress_fn, &p);
    }
  }
  return 0;
}

void rg_begin(rg_call *c, const char *fname) {
  c->ctx = NULL;
  c->fname = fname;
  c->interrupted = 0;
  c->last_percent = -1;
  c->last_what[0] = '\0';
  gstat_backend backend = option_backend();
  int threads = option_threads();
  if (shared.ctx && (shared.backend != backend || shared.threads != threads)) shared_drop();
  if (!shared.ctx) {
    gstat_ctx_options opt;
    gstat_ctx_options_init(&opt);
    opt.backend = backend;
    opt.num_threads = threads;
    opt.progress = progress_cb;
    gstat_ctx *ctx = NULL;
    gstat_status st = gstat_ctx_create(&ctx, &opt);
    if (st != GSTAT_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", ctx ? gstat_ctx_last_error(ctx) : gstat_status_string(st));
      gstat_ctx_destroy(ctx);
      if (st == GSTAT_EUNSUPPORTED)
        Rf_error(
            "%s: backend \"cuda\" asked for (option rgstat.backend) but no usable CUDA module: %s",
            fname, msg);
      Rf_error("%s: cannot create a gstat context: %s", fname, msg);
    }
    shared.ctx = ctx;
    shared.backend = backend;
    shared.threads = threads;
  }
  gstat_ctx_device_stats(shared.ctx, &shared.before, sizeof shared.before);
  shared.running = c;
  c->ctx = shared.ctx;
}

/* What the call did on the device: the growth of the context's counters. */
static void record_device_stats(gstat_ctx *ctx) {
  gstat_device_stats now;
  gstat_ctx_device_stats(ctx, &now, sizeof now);
  last_device_stats.allocations = now.allocations - shared.before.allocations;
  last_device_stats.graph_captures = now.graph_captures - shared.before.graph_captures;
  last_device_stats.graph_refusals = now.graph_refusals - shared.before.graph_refusals;
  last_device_stats.graph_launches = now.graph_launches - shared.before.graph_launches;
  last_device_stats.pipeline_pieces = now.pipeline_pieces - shared.before.pipeline_pieces;
  last_device_stats.own_tridiag_chunks = now.own_tridiag_chunks - shared.before.own_tridiag_chunks;
  last_device_stats.own_tridiag_degenerate =
      now.own_tridiag_degenerate - shared.before.own_tridiag_degenerate;
  last_device_stats.own_tridiag_clustered =
      now.own_tridiag_clustered - shared.before.own_tridiag_clustered;
}

void rg_check(rg_call *c, gstat_status st) {
  snprintf(last_backend, sizeof last_backend, "%s", gstat_ctx_last_backend_name(c->ctx));
  record_device_stats(c->ctx);
  if (st == GSTAT_OK) return;
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", gstat_ctx_last_error(c->ctx));
  if (!*msg) snprintf(msg, sizeof msg, "%s", gstat_status_string(st));
  rg_end(c); /* the context stays usable: only its last error changed */
  if (c->interrupted && st == GSTAT_ECANCELED) Rf_onintr();
  Rf_error("%s: %s", c->fname, msg);
}

void rg_end(rg_call *c) {
  c->ctx = NULL;
  shared.running = NULL;
}

void attribute_visible R_unload_rgstat(DllInfo *dll) {
  (void)dll;
  shared_drop();
}

double *rg_real_matrix(SEXP x, const char *what, int64_t *rows, int64_t *cols) {
  if (TYPEOF(x) != REALSXP) Rf_error("%s must be a double matrix", what);
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  if (TYPEOF(dim) != INTSXP || XLENGTH(dim) != 2) Rf_error("%s must be a matrix", what);
  *rows = INTEGER(dim)[0];
  *cols = INTEGER(dim)[1];
  return REAL(x);
}

int rg_int(SEXP x, const char *what) {
  if (XLENGTH(x) != 1) Rf_error("%s must be a single number", what);
  int v = Rf_asInteger(x);
  if (v == NA_INTEGER) Rf_error("%s must not be NA", what);
  return v;
}

double rg_double(SEXP x, const char *what) {
  if (XLENGTH(x) != 1) Rf_error("%s must be a single number", what);
  return Rf_asReal(x);
}

gstat_matrix rg_colmajor(double *data, int64_t batch, int64_t rows, int64_t cols) {
  return gstat_matrix_col_major(data, GSTAT_F64, batch, rows, cols);
}

SEXP rg_named_list(int n, const char **names) {
  SEXP out = PROTECT(Rf_allocVector(VECSXP, n));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, n));
  for (int i = 0; i < n; i++) SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

/* last_device_stats as a named double vector (counts beyond 2^31 fit). */
static SEXP device_stats_vector(void) {
  static const char *names[] = {
      "allocations",     "graph_captures",     "graph_refusals",         "graph_launches",
      "pipeline_pieces", "own_tridiag_chunks", "own_tridiag_degenerate", "own_tridiag_clustered"};
  const gstat_device_stats *d = &last_device_stats;
  const int64_t v[] = {d->allocations,
                       d->graph_captures,
                       d->graph_refusals,
                       d->graph_launches,
                       d->pipeline_pieces,
                       d->own_tridiag_chunks,
                       d->own_tridiag_degenerate,
                       d->own_tridiag_clustered};
  enum { N = sizeof v / sizeof v[0] };
  SEXP out = PROTECT(Rf_allocVector(REALSXP, N));
  SEXP nm = PROTECT(Rf_allocVector(STRSXP, N));
  for (int i = 0; i < N; i++) {
    REAL(out)[i] = (double)v[i];
    SET_STRING_ELT(nm, i, Rf_mkChar(names[i]));
  }
  Rf_setAttrib(out, R_NamesSymbol, nm);
  UNPROTECT(2);
  return out;
}

SEXP rg_backend_info(void) {
  static const char *names[] = {"last", "cuda_available", "version", "device_stats"};
  gstat_ctx *ctx = NULL;
  int cuda = 0;
  if (gstat_ctx_create(&ctx, NULL) == GSTAT_OK) cuda = gstat_ctx_cuda_available(ctx);
  gstat_ctx_destroy(ctx);
  SEXP out = PROTECT(rg_named_list(4, names));
  SET_VECTOR_ELT(out, 0, Rf_mkString(last_backend));
  SET_VECTOR_ELT(out, 1, Rf_ScalarLogical(cuda));
  SET_VECTOR_ELT(out, 2, Rf_mkString(gstat_version_string()));
  SET_VECTOR_ELT(out, 3, device_stats_vector());
  UNPROTECT(1);
  return out;
}

/* through void (*)(void), the generic function pointer type, as C allows */
#define ENTRY(name, n) \
  { #name, (DL_FUNC)(void (*)(void)) & name, n }
static const R_CallMethodDef call_methods[] = {
    ENTRY(rg_backend_info, 0), ENTRY(rg_eigen, 2),
    ENTRY(rg_eigen_batch, 2),  ENTRY(rg_chol, 1),
    ENTRY(rg_chol_pivot, 2),   ENTRY(rg_chol_solve, 2),
    ENTRY(rg_chol2inv, 1),     ENTRY(rg_cov, 5),
    ENTRY(rg_cov_shrink, 3),   ENTRY(rg_mahalanobis, 4),
    ENTRY(rg_pca, 6),          ENTRY(rg_laplacian, 3),
    ENTRY(rg_spectral, 2),     ENTRY(rg_spectral_batch, 3),
    ENTRY(rg_set_progress, 1), ENTRY(rg_asymmetry, 2),
    {NULL, NULL, 0},
};

void attribute_visible R_init_rgstat(DllInfo *dll) {
  R_registerRoutines(dll, NULL, call_methods, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
