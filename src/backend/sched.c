/*
 * The scheduler (sched.h): backend choice, transfers and the fallback policy
 * for the statistics primitives. The eigensolvers and Cholesky of the public
 * API go through dispatch.c, whose backend rule eigh_top shares.
 */
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/graph.h"
#include "backend/backend.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"
#include "backend/sched.h"

static const gstat_i_backend cpu = {&gstat_i_cpu_backend_ops, NULL};

/* One primitive call, whichever backend runs it. */
typedef struct prim_call {
  gstat_i_prim op;
  const char *fn;
  const gstat_matrix *X;
  int64_t b;
  double *mean, *M;                         /* COMOMENT: M on the host, or */
  const gstat_matrix *S;                    /* S in X's memory */
  const double *center, *scale, *comp, *ev; /* PROJECT */
  int64_t k;
  gstat_matrix *Y;
  bool include_self; /* KNN */
  int64_t *nbr;
  double *d2;
  const gstat_i_rows_req *rows; /* ROWS (X and b are its own) */
  const double *w, *aw;         /* WCOMOMENT, PAIRWISE: row and analytic weights */
  const unsigned char *keep;    /* WCOMOMENT: the rows taken */
  bool about_zero;
  unsigned char *keep_out; /* NAN_ROWS */
  int64_t *inf_at;
  const gstat_i_pairwise_out *pw; /* PAIRWISE */
  const gstat_i_kmeans_opt *km;   /* KMEANS: labels into nbr, inertia into d2 */
  int64_t *iterations;
} prim_call;

static gstat_status rows_staged(gstat_ctx *ctx, const prim_call *c);

static bool has_op(const gstat_i_backend *be, gstat_i_prim op) {
  switch (op) {
    case GSTAT_I_PRIM_COMOMENT: return be->ops->comoment != NULL;
    case GSTAT_I_PRIM_PROJECT: return be->ops->project != NULL;
    case GSTAT_I_PRIM_KNN: return be->ops->knn != NULL;
    case GSTAT_I_PRIM_ROWS: return be->ops->rows != NULL;
    case GSTAT_I_PRIM_WCOMOMENT: return be->ops->wcomoment != NULL;
    case GSTAT_I_PRIM_NAN_ROWS: return be->ops->nan_rows != NULL;
    case GSTAT_I_PRIM_PAIRWISE: return be->ops->pairwise != NULL;
    case GSTAT_I_PRIM_KMEANS: return be->ops->kmeans != NULL;
    case GSTAT_I_PRIM_CSR_LAP: return be->ops->csr_lap_plan != NULL;
  }
  return false;
}

static gstat_status invoke(const gstat_i_backend *be, gstat_ctx *ctx, const prim_call *c) {
  if (c->op == GSTAT_I_PRIM_COMOMENT)
    return be->ops->comoment(be->state, ctx, c->X, c->b, c->mean, c->M, c->S);
  if (c->op == GSTAT_I_PRIM_KNN)
    return be->ops->knn(be->state, ctx, c->X, c->b, c->k, c->include_self, c->nbr, c->d2);
  if (c->op == GSTAT_I_PRIM_ROWS) return be->ops->rows(be->state, ctx, c->rows);
  if (c->op == GSTAT_I_PRIM_WCOMOMENT)
    return be->ops->wcomoment(be->state, ctx, c->X, c->b, c->w, c->keep, c->about_zero, c->mean,
                              c->M);
  if (c->op == GSTAT_I_PRIM_NAN_ROWS)
    return be->ops->nan_rows(be->state, ctx, c->X, c->b, c->keep_out, c->inf_at);
  if (c->op == GSTAT_I_PRIM_PAIRWISE)
    return be->ops->pairwise(be->state, ctx, c->X, c->b, c->w, c->aw, c->pw);
  if (c->op == GSTAT_I_PRIM_KMEANS)
    return be->ops->kmeans(be->state, ctx, c->X, c->km, c->nbr, c->d2, c->iterations);
  return be->ops->project(be->state, ctx, c->X, c->b, c->center, c->scale, c->comp, c->ev, c->k,
                          c->Y);
}

static gstat_i_work work_of(const prim_call *c) {
  gstat_i_work w = {c->op, c->X->dtype, 1, c->X->rows, c->X->cols, c->k};
  if (c->op == GSTAT_I_PRIM_KMEANS) {
    w.batch = c->km->n_init;
    w.k = c->km->k;
  }
  return w;
}

/* The backend owning device memory: the context's CUDA backend. */
static gstat_status device_backend(gstat_ctx *ctx, const char *fn, const char *name,
                                   gstat_i_backend *be) {
  if (gstat_i_cuda_backend(ctx, be) == GSTAT_OK) return GSTAT_OK;
  char why[sizeof ctx->last_error];
  memcpy(why, ctx->last_error, sizeof why);
  return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: %s is in CUDA device memory, but %s", fn, name,
                      why);
}

/* Where a call on host data runs: the CPU unless the context asks for CUDA
 * (and the module has the primitive) or, under AUTO, a usable GPU's estimate
 * beats the CPU's (the backends' rules tables: bench/README.md). */
static void choose_for_host(gstat_ctx *ctx, const gstat_i_work *w, gstat_i_backend *be) {
  *be = cpu;
  double here = cpu.ops->host_cost(NULL, ctx, w);
  if (ctx->opt.backend == GSTAT_BACKEND_CPU ||
      (ctx->opt.backend == GSTAT_BACKEND_AUTO && gstat_i_cpu_keeps_host_work(here)) ||
      !gstat_ctx_cuda_available(ctx))
    return;
  gstat_i_backend gpu;
  if (gstat_i_cuda_backend(ctx, &gpu) != GSTAT_OK || !has_op(&gpu, w->op)) return;
  if (ctx->opt.backend == GSTAT_BACKEND_CUDA) {
    if (!gpu.ops->host_cost || gpu.ops->host_cost(gpu.state, ctx, w) >= 0) *be = gpu;
    return;
  }
  if (!gpu.ops->host_cost) return;
  double there = gpu.ops->host_cost(gpu.state, ctx, w);
  if (there >= 0 && there < here) *be = gpu;
}

static bool retry_on_cpu(gstat_status st) {
  return st == GSTAT_ENOMEM || st == GSTAT_EBACKEND || st == GSTAT_EUNSUPPORTED;
}

/* c on the CPU with host copies of the device-resident X_b and Y_b. */
static gstat_status run_staged(gstat_ctx *ctx, const prim_call *c) {
  gstat_i_staged hx = {0}, hy = {0};
  gstat_matrix xb = gstat_i_batch_part(c->X, c->b, 1), yb;
  gstat_status st = gstat_i_sched_stage(ctx, c->fn, "X", &xb, true, &hx);
  prim_call h = *c;
  h.X = &hx.m;
  h.b = 0;
  if (st == GSTAT_OK && c->Y) {
    yb = gstat_i_batch_part(c->Y, c->b, 1);
    st = gstat_i_sched_stage(ctx, c->fn, "Y", &yb, false, &hy);
    h.Y = &hy.m;
  }
  double *M = NULL; /* a co-moment for S: on the host, then copied there */
  size_t mbytes = sizeof(double) * (size_t)(c->X->cols * c->X->cols);
  if (st == GSTAT_OK && c->S && !(M = gstat_i_alloc(ctx, mbytes ? mbytes : 1)))
    st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", c->fn, mbytes);
  if (M) h.M = M;
  if (st == GSTAT_OK) st = invoke(&cpu, ctx, &h);
  if (st == GSTAT_OK && M)
    st = gstat_i_sched_store(ctx, c->fn, "S", GSTAT_F64, M, c->X->cols, c->S, 0);
  if (M) gstat_i_free(ctx, M, mbytes ? mbytes : 1);
  if (st == GSTAT_OK && c->Y) st = gstat_i_sched_unstage(ctx, c->fn, "Y", &hy, &yb);
  gstat_i_sched_release(ctx, &hy);
  gstat_i_sched_release(ctx, &hx);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

/* Whether the diagonal of a co-moment left in S (device memory) is finite:
 * p numbers to the host. */
static bool s_diagonal_finite(gstat_ctx *ctx, const prim_call *c, gstat_status *st) {
  int64_t p = c->X->cols;
  size_t bytes = sizeof(double) * (size_t)(p > 0 ? p : 1);
  double *d = gstat_i_alloc(ctx, bytes);
  if (!d) {
    *st = gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", c->fn, bytes);
    return true;
  }
  gstat_matrix diag = *c->S, dh = gstat_matrix_col_major(d, GSTAT_F64, 1, p, 1);
  diag.batch = diag.cols = 1;
  diag.row_stride = c->S->row_stride + c->S->col_stride;
  *st = gstat_i_sched_copy(ctx, c->fn, "S", &diag, &dh);
  bool finite = true;
  for (int64_t j = 0; j < p && *st == GSTAT_OK; j++) finite &= isfinite(d[j]) != 0;
  gstat_i_free(ctx, d, bytes);
  return finite;
}

/* Whether a co-moment result has a NaN/Inf the data do not explain (a GPU
 * fault): then it is recomputed on the CPU. */
static bool comoment_suspect(gstat_ctx *ctx, const prim_call *c, gstat_status *st) {
  int64_t p = c->X->cols;
  bool finite = true;
  for (int64_t j = 0; j < p && finite; j++)
    finite = isfinite(c->mean[j]) && (!c->M || isfinite(c->M[j + j * p]));
  if (finite && !c->M) finite = s_diagonal_finite(ctx, c, st);
  if (*st != GSTAT_OK) return false;
  if (finite) return false;
  gstat_matrix xb = gstat_i_batch_part(c->X, c->b, 1);
  int64_t b, i, j;
  return !gstat_i_sched_find_nonfinite(ctx, c->fn, "X", &xb, &b, &i, &j, st) && *st == GSTAT_OK;
}

static gstat_status run(gstat_ctx *ctx, const prim_call *c) {
  bool on_device = c->X->location == GSTAT_CUDA || (c->Y && c->Y->location == GSTAT_CUDA);
  gstat_i_backend be;
  if (on_device) {
    gstat_status st = device_backend(ctx, c->fn, c->X->location == GSTAT_CUDA ? "X" : "Y", &be);
    if (st != GSTAT_OK) return st;
  } else {
    gstat_i_work w = work_of(c);
    choose_for_host(ctx, &w, &be);
  }
  gstat_status st = has_op(&be, c->op) ? invoke(&be, ctx, c) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK && be.ops != cpu.ops && c->op == GSTAT_I_PRIM_COMOMENT &&
      comoment_suspect(ctx, c, &st)) {
    ctx->last_backends |= be.ops->ran_flag; /* it ran; its result is not used */
    st = GSTAT_EBACKEND;
  }
  if (st == GSTAT_OK) {
    ctx->last_backends |= be.ops->ran_flag;
    return GSTAT_OK;
  }
  if (be.ops == cpu.ops || !retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0'; /* the GPU's failure is not the call's */
  if (on_device) return c->op == GSTAT_I_PRIM_ROWS ? rows_staged(ctx, c) : run_staged(ctx, c);
  st = invoke(&cpu, ctx, c);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

gstat_status gstat_i_sched_comoment(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, double *mean, double *M, const gstat_matrix *S) {
  prim_call c = {
      .op = GSTAT_I_PRIM_COMOMENT, .fn = fn, .X = X, .b = b, .mean = mean, .M = M, .S = S};
  return run(ctx, &c);
}

gstat_status gstat_i_sched_wcomoment(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                     int64_t b, const double *w, const unsigned char *keep,
                                     bool about_zero, double *mean, double *M) {
  prim_call c = {.op = GSTAT_I_PRIM_WCOMOMENT,
                 .fn = fn,
                 .X = X,
                 .b = b,
                 .w = w,
                 .keep = keep,
                 .about_zero = about_zero,
                 .mean = mean,
                 .M = M};
  return run(ctx, &c);
}

gstat_status gstat_i_sched_nan_rows(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, unsigned char *keep, int64_t *inf_at) {
  prim_call c = {
      .op = GSTAT_I_PRIM_NAN_ROWS, .fn = fn, .X = X, .b = b, .keep_out = keep, .inf_at = inf_at};
  return run(ctx, &c);
}

gstat_status gstat_i_sched_pairwise(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, const double *w, const double *aw,
                                    const gstat_i_pairwise_out *o) {
  prim_call c = {.op = GSTAT_I_PRIM_PAIRWISE, .fn = fn, .X = X, .b = b, .w = w, .aw = aw, .pw = o};
  return run(ctx, &c);
}

gstat_status gstat_i_sched_project(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                                   const double *mean, const double *scale, const double *comp,
                                   const double *ev, int64_t k, gstat_matrix *Y) {
  prim_call c = {.op = GSTAT_I_PRIM_PROJECT,
                 .fn = fn,
                 .X = X,
                 .b = b,
                 .center = mean,
                 .scale = scale,
                 .comp = comp,
                 .ev = ev,
                 .k = k,
                 .Y = Y};
  return run(ctx, &c);
}

/* The top k eigenpairs where a backend offers them: the CPU's where
 * gstat_eigh would run A there, the device's for device data; otherwise,
 * and after the device's failure (A untouched), the full eigh with its
 * fallback and retry. */
gstat_status gstat_i_sched_eigh_top(gstat_ctx *ctx, gstat_matrix *A, int64_t k, gstat_matrix *w) {
  if (gstat_i_eigh_runs_on_cpu(ctx, A) && cpu.ops->eigh_top) {
    gstat_status st = cpu.ops->eigh_top(NULL, ctx, A, k, w);
    if (st != GSTAT_EUNSUPPORTED) { /* else the full eigh is the faster plan */
      if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
      return st;
    }
  }
  gstat_i_backend be;
  if (A->location == GSTAT_CUDA && w->location == GSTAT_CUDA &&
      gstat_i_cuda_backend(ctx, &be) == GSTAT_OK && be.ops->eigh_top) {
    gstat_status st = be.ops->eigh_top(be.state, ctx, A, k, w);
    if (st == GSTAT_OK) {
      ctx->last_backends |= be.ops->ran_flag;
      return GSTAT_OK;
    }
    ctx->last_error[0] = '\0'; /* the full eigh decides what the call reports */
  }
  return gstat_i_eigh(ctx, A, GSTAT_LOWER, w, A, NULL);
}

gstat_status gstat_i_sched_eigh_lowest(gstat_ctx *ctx, gstat_matrix *A, const int64_t *m,
                                       gstat_matrix *w, int64_t *info) {
  if (gstat_i_eigh_runs_on_cpu(ctx, A) && cpu.ops->eigh_lowest) {
    gstat_status st = cpu.ops->eigh_lowest(NULL, ctx, A, m, w, info);
    if (st != GSTAT_EUNSUPPORTED) {
      ctx->last_backends |= GSTAT_RAN_CPU;
      return st;
    }
  }
  return gstat_i_eigh(ctx, A, GSTAT_LOWER, w, A, info);
}

gstat_status gstat_i_sched_knn(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                               int64_t k, bool include_self, int64_t *nbr, double *d2) {
  prim_call c = {.op = GSTAT_I_PRIM_KNN,
                 .fn = fn,
                 .X = X,
                 .b = b,
                 .k = k,
                 .include_self = include_self,
                 .nbr = nbr,
                 .d2 = d2};
  return run(ctx, &c);
}

/* ---- moving descriptors between memories ---- */

gstat_status gstat_i_sched_stage(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *M, bool with_data, gstat_i_staged *h) {
  memset(h, 0, sizeof *h);
  h->m = *M;
  if (M->location == GSTAT_HOST) return GSTAT_OK;
  gstat_i_backend be;
  gstat_status st = device_backend(ctx, fn, name, &be);
  if (st != GSTAT_OK) return st;
  size_t count, bytes;
  if (!gstat_i_mul_size((size_t)M->batch, (size_t)(M->rows * M->cols), &count) ||
      !gstat_i_mul_size(count, gstat_dtype_size(M->dtype), &bytes))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: a host copy's size overflows", fn);
  h->mem = gstat_i_alloc(ctx, bytes ? bytes : 1);
  if (!h->mem)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes for a host copy", fn,
                        bytes);
  h->bytes = bytes ? bytes : 1;
  h->m = gstat_matrix_col_major(h->mem, M->dtype, M->batch, M->rows, M->cols);
  if (!with_data || count == 0) return GSTAT_OK;
  st = be.ops->copy ? be.ops->copy(be.state, ctx, M, &h->m)
                    : gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                                   "%s: the CUDA backend cannot copy to the host", fn);
  if (st != GSTAT_OK) gstat_i_sched_release(ctx, h);
  return st;
}

gstat_status gstat_i_sched_unstage(gstat_ctx *ctx, const char *fn, const char *name,
                                   const gstat_i_staged *h, const gstat_matrix *M) {
  if (M->location == GSTAT_HOST || !h->mem) return GSTAT_OK;
  gstat_i_backend be;
  gstat_status st = device_backend(ctx, fn, name, &be);
  if (st != GSTAT_OK) return st;
  if (!be.ops->copy)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: the CUDA backend cannot copy to the device",
                        fn);
  return be.ops->copy(be.state, ctx, &h->m, (gstat_matrix *)M);
}

void gstat_i_sched_release(gstat_ctx *ctx, gstat_i_staged *h) {
  if (h->mem) gstat_i_free(ctx, h->mem, h->bytes);
  memset(h, 0, sizeof *h);
}

gstat_status gstat_i_sched_store(gstat_ctx *ctx, const char *fn, const char *name, gstat_dtype dt,
                                 const void *src, int64_t ld, const gstat_matrix *M, int64_t b) {
  if (M->location == GSTAT_HOST) {
    gstat_i_dense_store(dt, src, ld, M, b);
    return GSTAT_OK;
  }
  gstat_i_backend be;
  gstat_status st = device_backend(ctx, fn, name, &be);
  if (st != GSTAT_OK) return st;
  gstat_matrix from = gstat_matrix_col_major((void *)src, dt, 1, M->rows, M->cols);
  from.col_stride = ld;
  gstat_matrix to = *M;
  to.data = (char *)M->data + (size_t)(b * M->batch_stride) * gstat_dtype_size(M->dtype);
  to.batch = 1;
  if (!be.ops->copy)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: the CUDA backend cannot copy to the device",
                        fn);
  return be.ops->copy(be.state, ctx, &from, &to);
}

bool gstat_i_sched_find_nonfinite(gstat_ctx *ctx, const char *fn, const char *name,
                                  const gstat_matrix *M, int64_t *b, int64_t *i, int64_t *j,
                                  gstat_status *st) {
  *st = GSTAT_OK;
  if (M->location == GSTAT_HOST) return gstat_i_find_nonfinite(M, GSTAT_I_TRI_FULL, b, i, j);
  gstat_i_backend be;
  if ((*st = device_backend(ctx, fn, name, &be)) != GSTAT_OK) return false;
  if (be.ops->find_nonfinite) { /* a scan where the data lie */
    int64_t first = -1, per = M->rows * M->cols;
    if ((*st = be.ops->find_nonfinite(be.state, ctx, M, &first)) != GSTAT_OK || first < 0)
      return false;
    *b = first / per;
    *i = first % per / M->cols;
    *j = first % per % M->cols;
    return true;
  }
  gstat_i_staged h;
  if ((*st = gstat_i_sched_stage(ctx, fn, name, M, true, &h)) != GSTAT_OK) return false;
  bool found = gstat_i_find_nonfinite(&h.m, GSTAT_I_TRI_FULL, b, i, j);
  gstat_i_sched_release(ctx, &h);
  return found;
}

gstat_status gstat_i_sched_copy(gstat_ctx *ctx, const char *fn, const char *name,
                                const gstat_matrix *src, gstat_matrix *dst) {
  gstat_i_backend be = cpu;
  if (src->location == GSTAT_CUDA || dst->location == GSTAT_CUDA) {
    gstat_status st = device_backend(ctx, fn, name, &be);
    if (st != GSTAT_OK) return st;
  }
  return be.ops->copy(be.state, ctx, src, dst);
}

gstat_status gstat_i_sched_device_memory(gstat_ctx *ctx, const char *fn, const gstat_matrix *like,
                                         size_t bytes, void **mem) {
  *mem = NULL;
  gstat_i_backend be;
  if (like->location != GSTAT_CUDA) return GSTAT_EUNSUPPORTED;
  gstat_status st = device_backend(ctx, fn, "X", &be);
  if (st != GSTAT_OK) return st;
  if (!be.ops->workspace) return GSTAT_EUNSUPPORTED;
  *mem = be.ops->workspace(be.state, ctx, bytes);
  return *mem ? GSTAT_OK : GSTAT_ENOMEM;
}

/* The backend that holds S: the device's for device memory, else the CPU. */
static gstat_status sym_backend(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                gstat_i_backend *be) {
  *be = cpu;
  return S->location == GSTAT_CUDA ? device_backend(ctx, fn, "S", be) : GSTAT_OK;
}

/* An in-place map of S that its backend lacks, run by the CPU on a host
 * copy of S. */
typedef enum { SYM_SCALE, SYM_AFFINE } sym_op;

static gstat_status sym_map_on_host(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                    sym_op op, const double *d, const double *c) {
  gstat_i_staged h;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "S", S, true, &h);
  if (st == GSTAT_OK)
    st = op == SYM_SCALE ? cpu.ops->scale_sym(NULL, ctx, &h.m, d)
                         : cpu.ops->sym_affine(NULL, ctx, &h.m, d, c);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "S", &h, S);
  gstat_i_sched_release(ctx, &h);
  return st;
}

gstat_status gstat_i_sched_scale_sym(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                     const double *d) {
  gstat_i_backend be;
  gstat_status st = sym_backend(ctx, fn, S, &be);
  if (st != GSTAT_OK) return st;
  if (be.ops->scale_sym) return be.ops->scale_sym(be.state, ctx, S, d);
  return sym_map_on_host(ctx, fn, S, SYM_SCALE, d, NULL);
}

gstat_status gstat_i_sched_sym_affine(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                      const double *a, const double *c) {
  gstat_i_backend be;
  gstat_status st = sym_backend(ctx, fn, S, &be);
  if (st != GSTAT_OK) return st;
  if (be.ops->sym_affine) return be.ops->sym_affine(be.state, ctx, S, a, c);
  return sym_map_on_host(ctx, fn, S, SYM_AFFINE, a, c);
}

gstat_status gstat_i_sched_offdiag_sumsq(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                         double *out) {
  gstat_i_backend be;
  gstat_status st = sym_backend(ctx, fn, S, &be);
  if (st != GSTAT_OK) return st;
  if (be.ops->offdiag_sumsq) return be.ops->offdiag_sumsq(be.state, ctx, S, out);
  gstat_i_staged h;
  st = gstat_i_sched_stage(ctx, fn, "S", S, true, &h);
  if (st == GSTAT_OK) st = cpu.ops->offdiag_sumsq(NULL, ctx, &h.m, out);
  gstat_i_sched_release(ctx, &h);
  return st;
}

bool gstat_i_sched_eigh_stays_on_device(gstat_ctx *ctx, gstat_dtype dt, int64_t batch, int64_t m) {
  gstat_matrix host = gstat_matrix_col_major(NULL, dt, batch, m, m);
  return !gstat_i_eigh_runs_on_cpu(ctx, &host);
}

/* ---- dense primitives on descriptors ---- */

/* A dense primitive's backend: the CPU for host operands, the device's for
 * device operands; operands in both memories are a caller's error. */
static gstat_status dense_backend(gstat_ctx *ctx, const char *fn, const gstat_matrix *const *ms,
                                  int count, gstat_i_backend *be) {
  int on_device = 0;
  for (int i = 0; i < count; i++) on_device += ms[i]->location == GSTAT_CUDA;
  *be = cpu;
  if (on_device == 0) return GSTAT_OK;
  if (on_device < count)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: a dense step's operands lie in different memories",
                        fn);
  return device_backend(ctx, fn, "an operand", be);
}

/* The CPU's gemm on host copies of device-resident A, B and C. */
static gstat_status gemm_staged(gstat_ctx *ctx, const char *fn, gstat_trans ta, gstat_trans tb,
                                double alpha, const gstat_matrix *A, const gstat_matrix *B,
                                double beta, const gstat_matrix *C) {
  gstat_i_staged ha, hb = {0}, hc = {0};
  gstat_status st = gstat_i_sched_stage(ctx, fn, "A", A, true, &ha);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "B", B, true, &hb);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "C", C, beta != 0, &hc);
  if (st == GSTAT_OK) st = cpu.ops->gemm(NULL, ctx, ta, tb, alpha, &ha.m, &hb.m, beta, &hc.m);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "C", &hc, C);
  gstat_i_sched_release(ctx, &hc);
  gstat_i_sched_release(ctx, &hb);
  gstat_i_sched_release(ctx, &ha);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

gstat_status gstat_i_sched_gemm(gstat_ctx *ctx, const char *fn, gstat_trans ta, gstat_trans tb,
                                double alpha, const gstat_matrix *A, const gstat_matrix *B,
                                double beta, const gstat_matrix *C) {
  const gstat_matrix *ms[3] = {A, B, C};
  gstat_i_backend be;
  gstat_status st = dense_backend(ctx, fn, ms, 3, &be);
  if (st != GSTAT_OK) return st;
  if (C->batch == 0 || C->rows == 0 || C->cols == 0) return GSTAT_OK;
  st =
      be.ops->gemm ? be.ops->gemm(be.state, ctx, ta, tb, alpha, A, B, beta, C) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK) {
    ctx->last_backends |= be.ops->ran_flag;
    return GSTAT_OK;
  }
  if (be.ops == cpu.ops || !retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0'; /* the GPU's failure is not the call's */
  return gemm_staged(ctx, fn, ta, tb, alpha, A, B, beta, C);
}

gstat_status gstat_i_sched_syrk_lower(gstat_ctx *ctx, const char *fn, gstat_trans trans,
                                      const gstat_matrix *A, const gstat_matrix *C) {
  const gstat_matrix *ms[2] = {A, C};
  gstat_i_backend be;
  gstat_status st = dense_backend(ctx, fn, ms, 2, &be);
  if (st != GSTAT_OK) return st;
  if (C->batch == 0 || C->rows == 0) return GSTAT_OK;
  st = be.ops->syrk_lower ? be.ops->syrk_lower(be.state, ctx, trans, A, C) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK) {
    ctx->last_backends |= be.ops->ran_flag;
    return GSTAT_OK;
  }
  if (!retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0'; /* the full product decides what the call reports */
  gstat_trans other = trans == GSTAT_TRANS ? GSTAT_NO_TRANS : GSTAT_TRANS;
  return gstat_i_sched_gemm(ctx, fn, trans, other, 1.0, A, A, 0.0, C);
}

gstat_status gstat_i_sched_orthonormalize(gstat_ctx *ctx, const char *fn, const gstat_matrix *A) {
  gstat_i_backend be;
  gstat_status st = dense_backend(ctx, fn, &A, 1, &be);
  if (st != GSTAT_OK) return st;
  if (A->batch == 0 || A->cols == 0) return GSTAT_OK;
  st = be.ops->orthonormalize ? be.ops->orthonormalize(be.state, ctx, A) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK) {
    ctx->last_backends |= be.ops->ran_flag;
    return GSTAT_OK;
  }
  if (be.ops == cpu.ops || !retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0';
  gstat_i_staged h;
  st = gstat_i_sched_stage(ctx, fn, "A", A, true, &h);
  if (st == GSTAT_OK) st = cpu.ops->orthonormalize(NULL, ctx, &h.m);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "A", &h, A);
  gstat_i_sched_release(ctx, &h);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

/* ---- row-wise reductions and the Cholesky factor (Mahalanobis, shrinkage) ---- */

/* The rows primitive on the CPU through host copies of its device arguments. */
static gstat_status rows_staged(gstat_ctx *ctx, const prim_call *c) {
  const gstat_i_rows_req *r = c->rows;
  gstat_i_staged hx = {0}, hl = {0}, hq = {0}, hd = {0}, hc = {0};
  gstat_matrix xb = gstat_i_batch_part(r->X, r->b, 1);
  gstat_status st = gstat_i_sched_stage(ctx, c->fn, "X", &xb, true, &hx);
  if (st == GSTAT_OK && r->center_vec)
    st = gstat_i_sched_stage(ctx, c->fn, "center", r->center_vec, true, &hc);
  if (st == GSTAT_OK && r->L) st = gstat_i_sched_stage(ctx, c->fn, "L", r->L, true, &hl);
  if (st == GSTAT_OK && r->Q) st = gstat_i_sched_stage(ctx, c->fn, "Q", r->Q, true, &hq);
  if (st == GSTAT_OK && r->d) st = gstat_i_sched_stage(ctx, c->fn, "d", r->d, false, &hd);
  gstat_i_rows_req h = *r;
  h.X = &hx.m;
  h.b = 0;
  h.L = r->L ? &hl.m : NULL;
  h.Q = r->Q ? &hq.m : NULL;
  h.d = r->d ? &hd.m : NULL;
  h.center_vec = r->center_vec ? &hc.m : NULL;
  if (st == GSTAT_OK) st = cpu.ops->rows(NULL, ctx, &h);
  if (st == GSTAT_OK && r->d) st = gstat_i_sched_unstage(ctx, c->fn, "d", &hd, r->d);
  gstat_i_sched_release(ctx, &hd);
  gstat_i_sched_release(ctx, &hq);
  gstat_i_sched_release(ctx, &hl);
  gstat_i_sched_release(ctx, &hc);
  gstat_i_sched_release(ctx, &hx);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

gstat_status gstat_i_sched_rows(gstat_ctx *ctx, const char *fn, const gstat_i_rows_req *r) {
  bool solves = r->L || r->Q;
  prim_call c = {.op = GSTAT_I_PRIM_ROWS,
                 .fn = fn,
                 .X = r->X,
                 .b = r->b,
                 .k = solves ? r->X->cols : 1,
                 .rows = r};
  return run(ctx, &c);
}

/* gstat_cholesky on the CPU backend, with host copies of device A and F. */
static gstat_status cholesky_staged(gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                                    gstat_matrix *F, int64_t *info) {
  gstat_i_staged ha = {0}, hf = {0};
  gstat_status st = gstat_i_sched_stage(ctx, fn, "S", A, true, &ha);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "F", F, false, &hf);
  if (st == GSTAT_OK) st = cpu.ops->cholesky(NULL, ctx, &ha.m, GSTAT_LOWER, &hf.m, info);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "F", &hf, F);
  gstat_i_sched_release(ctx, &hf);
  gstat_i_sched_release(ctx, &ha);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

/* Host A and dense host F factored on the CPU element by element, each
 * with the BLAS threads its size earns (dense.h's potrf: one thread for
 * small orders, where the batch job's threaded LAPACK stalls on a busy
 * machine), in F's dtype; F's strict upper triangle zeroed. */
static gstat_status cholesky_in_place(gstat_ctx *ctx, const gstat_matrix *A, gstat_matrix *F,
                                      int64_t *info) {
  int64_t p = A->rows;
  size_t es = gstat_dtype_size(F->dtype);
  for (int64_t b = 0; b < A->batch; b++) {
    char *f = (char *)F->data + (size_t)(b * F->batch_stride) * es;
    gstat_i_dense_load(A, b, F->dtype, f, p);
    gstat_status st = gstat_i_potrf(ctx, F->dtype, p, f, p, &info[b]);
    if (st != GSTAT_OK) return st;
    for (int64_t j = 1; j < p; j++) memset(f + (size_t)(j * p) * es, 0, (size_t)j * es);
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
  return GSTAT_OK;
}

gstat_status gstat_i_sched_cholesky(gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                                    gstat_matrix *F, int64_t *info) {
  bool dense = F->dtype != GSTAT_BF16 && (F->rows <= 1 || F->row_stride == 1) &&
               F->col_stride == F->rows && (F->batch <= 1 || F->batch_stride == F->rows * F->rows);
  if (A->location == GSTAT_HOST && F->location == GSTAT_HOST && dense &&
      gstat_i_eigh_runs_on_cpu(ctx, A) && !gstat_i_same_view(A, F))
    return cholesky_in_place(ctx, A, F, info);
  unsigned ran = ctx->last_backends; /* gstat_cholesky starts its own record */
  ctx->progress_muted++;
  gstat_status st = gstat_cholesky(ctx, A, GSTAT_LOWER, F, info);
  ctx->progress_muted--;
  ctx->last_backends |= ran;
  if (st == GSTAT_ENOTPD) { /* element failures: the caller reads info */
    ctx->last_error[0] = '\0';
    return GSTAT_OK;
  }
  if (A->location == GSTAT_CUDA && retry_on_cpu(st)) {
    ctx->last_error[0] = '\0'; /* the GPU's failure is not the call's */
    return cholesky_staged(ctx, fn, A, F, info);
  }
  return st;
}

/* ---- graph primitives ---- */

/* The CPU's Laplacian on host copies of whatever lies on the device. */
static gstat_status laplacian_staged(gstat_ctx *ctx, const char *fn, const gstat_matrix *A, int sym,
                                     bool drop_loops, int kind, const gstat_matrix *L,
                                     const gstat_matrix *deg) {
  gstat_i_staged ha, hl = {0}, hd = {0};
  gstat_status st = gstat_i_sched_stage(ctx, fn, "G.adjacency", A, true, &ha);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "L", L, false, &hl);
  if (st == GSTAT_OK && deg) st = gstat_i_sched_stage(ctx, fn, "degrees", deg, false, &hd);
  if (st == GSTAT_OK)
    st = cpu.ops->laplacian(NULL, ctx, fn, &ha.m, sym, drop_loops, kind, &hl.m, deg ? &hd.m : NULL);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "L", &hl, L);
  if (st == GSTAT_OK && deg) st = gstat_i_sched_unstage(ctx, fn, "degrees", &hd, deg);
  gstat_i_sched_release(ctx, &hd);
  gstat_i_sched_release(ctx, &hl);
  gstat_i_sched_release(ctx, &ha);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

gstat_status gstat_i_sched_laplacian(gstat_ctx *ctx, const char *fn, const gstat_matrix *A, int sym,
                                     bool drop_loops, int kind, const gstat_matrix *L,
                                     const gstat_matrix *deg) {
  bool any = A->location == GSTAT_CUDA || L->location == GSTAT_CUDA ||
             (deg && deg->location == GSTAT_CUDA);
  bool all = A->location == GSTAT_CUDA && L->location == GSTAT_CUDA &&
             (!deg || deg->location == GSTAT_CUDA);
  if (!any) {
    gstat_status st = cpu.ops->laplacian(NULL, ctx, fn, A, sym, drop_loops, kind, L, deg);
    if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
    return st;
  }
  gstat_i_backend be;
  gstat_status st = device_backend(ctx, fn, A->location == GSTAT_CUDA ? "G.adjacency" : "L", &be);
  if (st != GSTAT_OK) return st;
  if (all && be.ops->laplacian) {
    st = be.ops->laplacian(be.state, ctx, fn, A, sym, drop_loops, kind, L, deg);
    if (st == GSTAT_OK) {
      ctx->last_backends |= be.ops->ran_flag;
      return GSTAT_OK;
    }
    if (!retry_on_cpu(st)) return st;
    ctx->last_error[0] = '\0'; /* the CPU reruns it, and names a bad weight */
  }
  return laplacian_staged(ctx, fn, A, sym, drop_loops, kind, L, deg);
}

/* ---- the batch spectral engine's steps ---- */

/* The backend whose memory holds M: the CPU for host memory. */
static gstat_status engine_backend(gstat_ctx *ctx, const gstat_matrix *M, gstat_i_backend *be) {
  *be = cpu;
  return M->location == GSTAT_CUDA ? device_backend(ctx, "spectral_batch", "G.adjacency", be)
                                   : GSTAT_OK;
}

static gstat_status lacks_step(gstat_ctx *ctx, const gstat_i_backend *be) {
  return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "spectral_batch: the %s backend lacks this step",
                      be->ops->name);
}

gstat_status gstat_i_sched_sc_laplacians(gstat_ctx *ctx, const gstat_i_sc_lap_req *r) {
  gstat_i_backend be;
  gstat_status st = engine_backend(ctx, r->A, &be);
  if (st != GSTAT_OK) return st;
  st = be.ops->sc_laplacians ? be.ops->sc_laplacians(be.state, ctx, r) : lacks_step(ctx, &be);
  if (st == GSTAT_OK) ctx->last_backends |= be.ops->ran_flag;
  return st;
}

gstat_status gstat_i_sched_sc_assign(gstat_ctx *ctx, const gstat_i_sc_assign_req *r) {
  gstat_i_backend be;
  gstat_status st = engine_backend(ctx, r->V, &be);
  if (st != GSTAT_OK) return st;
  st = be.ops->sc_assign ? be.ops->sc_assign(be.state, ctx, r) : lacks_step(ctx, &be);
  if (st == GSTAT_OK) ctx->last_backends |= be.ops->ran_flag;
  return st;
}

gstat_status gstat_i_sched_knn_with(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, int64_t k, bool include_self, int algorithm,
                                    uint64_t seed, int64_t *nbr, double *d2) {
  prim_call c = {.op = GSTAT_I_PRIM_KNN,
                 .fn = fn,
                 .X = X,
                 .b = b,
                 .k = k,
                 .include_self = include_self,
                 .nbr = nbr,
                 .d2 = d2};
  if (algorithm == GSTAT_KNN_AUTO) return run(ctx, &c);
  if (algorithm == GSTAT_KNN_BRUTE) { /* the GPU's search is GEMM distances too */
    gstat_i_backend be = cpu;
    if (X->location == GSTAT_HOST) {
      gstat_i_work w = work_of(&c);
      choose_for_host(ctx, &w, &be);
    }
    if (X->location != GSTAT_HOST || be.ops != cpu.ops) return run(ctx, &c);
  }
  gstat_matrix xb = gstat_i_batch_part(X, b, 1); /* the CPU's own methods, on a host copy */
  gstat_i_staged h;
  gstat_status st = gstat_i_sched_stage(ctx, fn, "X", &xb, true, &h);
  if (st == GSTAT_OK)
    st = gstat_i_cpu_knn_method(ctx, &h.m, k, include_self, algorithm, seed, nbr, d2);
  gstat_i_sched_release(ctx, &h);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

/* ---- the sparse eigensolver's steps ---- */

gstat_status gstat_i_sched_lincomb(gstat_ctx *ctx, const char *fn, const gstat_i_lincomb_req *r) {
  const gstat_matrix *ms[3] = {r->Z, r->X ? r->X : r->Z, r->Y ? r->Y : r->Z};
  gstat_i_backend be;
  gstat_status st = dense_backend(ctx, fn, ms, 3, &be);
  if (st != GSTAT_OK || r->Z->rows == 0 || r->Z->cols == 0) return st;
  st = be.ops->lincomb ? be.ops->lincomb(be.state, ctx, r) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK || be.ops == cpu.ops || !retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0'; /* on host copies */
  gstat_i_staged hz, hx = {0}, hy = {0};
  st = gstat_i_sched_stage(ctx, fn, "Z", r->Z, r->g != NULL, &hz);
  if (st == GSTAT_OK && r->X) st = gstat_i_sched_stage(ctx, fn, "X", r->X, true, &hx);
  if (st == GSTAT_OK && r->Y) st = gstat_i_sched_stage(ctx, fn, "Y", r->Y, true, &hy);
  gstat_i_lincomb_req h = {&hz.m, r->X ? &hx.m : NULL, r->Y ? &hy.m : NULL, r->g, r->a, r->b};
  if (st == GSTAT_OK) st = cpu.ops->lincomb(NULL, ctx, &h);
  if (st == GSTAT_OK) st = gstat_i_sched_unstage(ctx, fn, "Z", &hz, r->Z);
  gstat_i_sched_release(ctx, &hy);
  gstat_i_sched_release(ctx, &hx);
  gstat_i_sched_release(ctx, &hz);
  return st;
}

gstat_status gstat_i_sched_dots(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                const gstat_matrix *Y, double *out) {
  const gstat_matrix *ms[2] = {X, Y};
  gstat_i_backend be;
  gstat_status st = dense_backend(ctx, fn, ms, 2, &be);
  if (st != GSTAT_OK || X->cols == 0) return st;
  st = be.ops->dots ? be.ops->dots(be.state, ctx, X, Y, out) : GSTAT_EUNSUPPORTED;
  if (st == GSTAT_OK || be.ops == cpu.ops || !retry_on_cpu(st)) return st;
  ctx->last_error[0] = '\0';
  gstat_i_staged hx, hy = {0};
  st = gstat_i_sched_stage(ctx, fn, "X", X, true, &hx);
  if (st == GSTAT_OK) st = gstat_i_sched_stage(ctx, fn, "Y", Y, true, &hy);
  if (st == GSTAT_OK) st = cpu.ops->dots(NULL, ctx, &hx.m, &hy.m, out);
  gstat_i_sched_release(ctx, &hy);
  gstat_i_sched_release(ctx, &hx);
  return st;
}

gstat_status gstat_i_sched_csr_lap_plan(gstat_ctx *ctx, const char *fn, const gstat_i_csr_lap *A,
                                        gstat_i_sched_lap *out) {
  memset(out, 0, sizeof *out);
  out->where.location = GSTAT_HOST;
  /* where a host call would run (the backends' rules: from which size the
   * GPU pays under AUTO) */
  gstat_i_work w = {.op = GSTAT_I_PRIM_CSR_LAP,
                    .dtype = GSTAT_F64,
                    .batch = 1,
                    .n = A->n,
                    .p = A->offsets[A->n] - A->offsets[0]};
  gstat_i_backend gpu;
  choose_for_host(ctx, &w, &gpu);
  if (gpu.ops == cpu.ops) {
    ctx->last_error[0] = '\0'; /* no usable GPU is no failure: the host operator */
    return GSTAT_EUNSUPPORTED;
  }
  gstat_status st = gpu.ops->csr_lap_plan(gpu.state, ctx, A, &out->plan);
  if (st != GSTAT_OK) {
    if (retry_on_cpu(st)) ctx->last_error[0] = '\0'; /* the host operator instead */
    return retry_on_cpu(st) ? GSTAT_EUNSUPPORTED : st;
  }
  (void)fn;
  out->ops = gpu.ops;
  out->state = gpu.state;
  out->n = A->n;
  out->where.location = GSTAT_CUDA;
  out->where.device = ctx->opt.cuda_device;
  return GSTAT_OK;
}

gstat_status gstat_i_sched_csr_lap_apply(gstat_ctx *ctx, void *plan, int64_t n, int64_t m,
                                         const double *X, double *Y) {
  gstat_i_sched_lap *p = plan;
  gstat_matrix xm = p->where, ym = p->where;
  xm.data = (void *)X;
  ym.data = Y;
  xm.dtype = ym.dtype = GSTAT_F64;
  xm.batch = ym.batch = 1;
  xm.rows = ym.rows = n;
  xm.cols = ym.cols = m;
  xm.row_stride = ym.row_stride = 1;
  xm.col_stride = ym.col_stride = n;
  xm.batch_stride = ym.batch_stride = n * m;
  gstat_status st = p->ops->csr_lap_apply(p->state, ctx, p->plan, &xm, &ym);
  if (st == GSTAT_OK) ctx->last_backends |= p->ops->ran_flag;
  return st;
}

void gstat_i_sched_csr_lap_release(gstat_i_sched_lap *p) {
  if (p->plan) p->ops->csr_lap_release(p->state, p->plan);
  p->plan = NULL;
}

/* ---- k-means of one large embedding ---- */

gstat_status gstat_i_sched_kmeans(gstat_ctx *ctx, const char *fn, const gstat_matrix *E,
                                  const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                                  int64_t *iterations) {
  prim_call c = {.op = GSTAT_I_PRIM_KMEANS,
                 .fn = fn,
                 .X = E,
                 .km = opt,
                 .nbr = labels,
                 .d2 = inertia,
                 .iterations = iterations};
  return run(ctx, &c);
}
