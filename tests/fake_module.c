/*
 * A stand-in for the CUDA module, for testing the dispatcher's fallback on
 * machines without a GPU: it has the module's entry point and table, does
 * the work with the host's CPU backend, and fails on request
 * (GSTAT_FAKE_FAULT: "nodevice" at creation, "oom" for every call, "retry"
 * to flag every third element as unreliable after scribbling over it,
 * "retry-vouched" to do so and still vouch that every info is 0,
 * "sparse" to fail the Laplacian plan's products,
 * "nonfinite" to return a co-moment with a NaN, "nodense" to fail the GEMM and QR
 * alone, "topfail" to fail the top-k eigenpairs, "topspoil" to return wrong
 * ones). Like the CUDA module it
 * vouches for a call whose info is all 0 (info_clean).
 *
 * Its "device memory" is host memory in descriptors marked GSTAT_CUDA: the
 * statistics primitives (co-moment, projection, kNN, rows, NaN rows,
 * non-finite scan, copies, GEMM, QR) run the CPU's code on it, so CI
 * exercises the scheduler's device paths; the weighted co-moment and the
 * pairwise co-moments run the CUDA module's algorithms (left-out rows
 * zeroed rather than compacted; masked GEMMs) in plain C, so CI checks them
 * against the CPU's;
 * host data it takes as the CUDA module does (its host_cost says it always
 * pays, so AUTO picks it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

static const gstat_i_host_services *host;

/* The last call's info when all of it was 0 (what the CUDA module learns
 * from its device reduction), else NULL. */
typedef struct {
  const int64_t *clean_info;
  int64_t clean_count;
  void *chain; /* the workspace primitive's memory */
  size_t chain_bytes;
} fake_state;

static const char *fault(void) {
  const char *f = getenv("GSTAT_FAKE_FAULT");
  return f ? f : "";
}

/* Scribble over element b's outputs and flag it, as a GPU that produced
 * garbage would; the dispatcher must recompute it. */
static void spoil(gstat_matrix *m, int64_t b, int64_t *info) {
  info[b] = GSTAT_I_INFO_RETRY;
  if (!m || m->dtype != GSTAT_F64) return;
  double *p = (double *)m->data + b * m->batch_stride;
  for (int64_t i = 0; i < m->rows; i++)
    for (int64_t j = 0; j < m->cols; j++) p[i * m->row_stride + j * m->col_stride] = 12345.0;
}

static gstat_status after(void *state, gstat_status st, gstat_matrix *out, gstat_matrix *w,
                          int64_t batch, int64_t *info) {
  fake_state *s = state;
  s->clean_info = NULL;
  if (st != GSTAT_OK) return st;
  const bool vouch = !strcmp(fault(), "retry-vouched");
  if (vouch || !strcmp(fault(), "retry"))
    for (int64_t b = 1; b < batch; b += 3) {
      spoil(out, b, info);
      spoil(w, b, info);
    }
  bool clean = true;
  for (int64_t b = 0; b < batch; b++) clean = clean && info[b] == 0;
  if (clean || vouch) {
    s->clean_info = info;
    s->clean_count = batch;
  }
  return GSTAT_OK;
}

static bool info_clean(void *state, const int64_t *info, int64_t batch) {
  fake_state *s = state;
  bool clean = s->clean_info == info && s->clean_count == batch;
  s->clean_info = NULL;
  return clean;
}

static gstat_status oom(gstat_ctx *ctx) {
  return host->fail(ctx, GSTAT_ENOMEM, "fake: simulated device out of memory");
}

static gstat_status eigh(void *s, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                         gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(s, host->cpu->eigh(NULL, ctx, A, uplo, w, V, info), V, w, A->batch, info);
}

/* The top k eigenpairs (the CUDA module's eigh_top on device data): every
 * pair by the CPU's full eigh, which the contract allows, so that CI runs
 * the scheduler's device top-k path. "topfail" fails with A untouched (the
 * scheduler then runs the full eigh); "topspoil" answers with constant
 * vectors (a test can see that this path answered). */
static gstat_status eigh_top(void *s, gstat_ctx *ctx, gstat_matrix *A, int64_t k, gstat_matrix *w) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  if (!strcmp(fault(), "topfail"))
    return host->fail(ctx, GSTAT_EBACKEND, "fake eigh_top: simulated solver failure");
  int64_t *info = calloc((size_t)A->batch, sizeof *info);
  if (!info) return oom(ctx);
  gstat_status st = host->cpu->eigh(NULL, ctx, A, GSTAT_LOWER, w, A, info);
  for (int64_t b = 0; st == GSTAT_OK && b < A->batch; b++)
    if (info[b] != 0)
      st = host->fail(ctx, GSTAT_ENOCONV, "fake eigh_top: element %lld", (long long)b);
  free(info);
  if (st == GSTAT_OK && !strcmp(fault(), "topspoil") && A->dtype == GSTAT_F64)
    for (int64_t b = 0; b < A->batch; b++)
      for (int64_t j = A->cols - k; j < A->cols; j++)
        for (int64_t i = 0; i < A->rows; i++)
          ((double *)A->data)[b * A->batch_stride + i * A->row_stride + j * A->col_stride] = 0.5;
  return st;
}

static gstat_status cholesky(void *s, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                             gstat_matrix *F, int64_t *info) {
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(s, host->cpu->cholesky(NULL, ctx, A, uplo, F, info), F, NULL, A->batch, info);
}

static gstat_status cholesky_solve(void *s, gstat_ctx *ctx, const gstat_matrix *F, gstat_uplo uplo,
                                   const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(s, host->cpu->cholesky_solve(NULL, ctx, F, uplo, B, X, info), X, NULL, F->batch,
               info);
}

static gstat_status triangular_solve(void *s, gstat_ctx *ctx, const gstat_matrix *T,
                                     gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                     const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return after(s, host->cpu->triangular_solve(NULL, ctx, T, uplo, trans, diag, B, X, info), X, NULL,
               T->batch, info);
}

static gstat_status comoment(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             double *mean, double *M, const gstat_matrix *S) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  gstat_status st = host->cpu->comoment(NULL, ctx, X, b, mean, M, S);
  if (st == GSTAT_OK && !strcmp(fault(), "nonfinite")) { /* a NaN on the diagonal */
    if (M)
      M[0] = NAN;
    else if (S->dtype == GSTAT_F64)
      *(double *)S->data = NAN;
    else
      *(float *)S->data = NAN;
  }
  return st;
}

static gstat_status scale_sym(void *s, gstat_ctx *ctx, const gstat_matrix *S, const double *d) {
  (void)s;
  return host->cpu->scale_sym(NULL, ctx, S, d);
}

static gstat_status offdiag_sumsq(void *s, gstat_ctx *ctx, const gstat_matrix *S, double *out) {
  (void)s;
  return host->cpu->offdiag_sumsq(NULL, ctx, S, out);
}

static gstat_status sym_affine(void *s, gstat_ctx *ctx, const gstat_matrix *S, const double *a,
                               const double *c) {
  (void)s;
  return host->cpu->sym_affine(NULL, ctx, S, a, c);
}

/* "device memory" for a chain: one growing buffer the state keeps */
static void *workspace(void *state, gstat_ctx *ctx, size_t bytes) {
  fake_state *s = state;
  if (!strcmp(fault(), "oom")) return NULL;
  if (bytes > s->chain_bytes) {
    void *grown = realloc(s->chain, bytes);
    if (!grown) {
      host->fail(ctx, GSTAT_ENOMEM, "fake: cannot allocate %zu bytes", bytes);
      return NULL;
    }
    s->chain = grown;
    s->chain_bytes = bytes;
  }
  return s->chain;
}

static gstat_status project(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                            const double *mean, const double *scale, const double *comp,
                            const double *ev, int64_t k, gstat_matrix *Y) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->project(NULL, ctx, X, b, mean, scale, comp, ev, k, Y);
}

static gstat_status knn(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                        bool include_self, int64_t *nbr, double *d2) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->knn(NULL, ctx, X, b, k, include_self, nbr, d2);
}

static gstat_status copy(void *s, gstat_ctx *ctx, const gstat_matrix *src, gstat_matrix *dst) {
  (void)s;
  return host->cpu->copy(NULL, ctx, src, dst);
}

/* The first NaN/Inf in the kernels' order (element, row, column). */
static gstat_status find_nonfinite(void *s, gstat_ctx *ctx, const gstat_matrix *M, int64_t *first) {
  (void)s;
  (void)ctx;
  *first = -1;
  size_t es = M->dtype == GSTAT_F64 ? 8 : M->dtype == GSTAT_F32 ? 4 : 2;
  for (int64_t b = 0; b < M->batch; b++)
    for (int64_t i = 0; i < M->rows; i++)
      for (int64_t j = 0; j < M->cols; j++) {
        const char *e = (const char *)M->data +
                        (size_t)(b * M->batch_stride + i * M->row_stride + j * M->col_stride) * es;
        bool bad = M->dtype == GSTAT_F64   ? !isfinite(*(const double *)e)
                   : M->dtype == GSTAT_F32 ? !isfinite(*(const float *)e)
                                           : (*(const uint16_t *)e & 0x7f80u) == 0x7f80u;
        if (bad) {
          *first = (b * M->rows + i) * M->cols + j;
          return GSTAT_OK;
        }
      }
  return GSTAT_OK;
}

/* The dense primitives: the CPU's code on the "device" memory; they alone
 * run out of memory under "nodense" (the scheduler's per-step fallback). */
static bool dense_fails(void) {
  return !strcmp(fault(), "oom") || !strcmp(fault(), "nodense");
}

static gstat_status gemm(void *s, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb, double alpha,
                         const gstat_matrix *A, const gstat_matrix *B, double beta,
                         const gstat_matrix *C) {
  (void)s;
  if (dense_fails()) return oom(ctx);
  return host->cpu->gemm(NULL, ctx, ta, tb, alpha, A, B, beta, C);
}

static gstat_status syrk_lower(void *s, gstat_ctx *ctx, gstat_trans trans, const gstat_matrix *A,
                               const gstat_matrix *C) {
  (void)s;
  if (dense_fails()) return oom(ctx);
  return host->cpu->syrk_lower(NULL, ctx, trans, A, C);
}

static gstat_status orthonormalize(void *s, gstat_ctx *ctx, const gstat_matrix *A) {
  (void)s;
  if (dense_fails()) return oom(ctx);
  return host->cpu->orthonormalize(NULL, ctx, A);
}

static gstat_status lincomb(void *s, gstat_ctx *ctx, const gstat_i_lincomb_req *r) {
  (void)s;
  if (dense_fails()) return oom(ctx);
  return host->cpu->lincomb(NULL, ctx, r);
}

static gstat_status dots(void *s, gstat_ctx *ctx, const gstat_matrix *X, const gstat_matrix *Y,
                         double *out) {
  (void)s;
  if (dense_fails()) return oom(ctx);
  return host->cpu->dots(NULL, ctx, X, Y, out);
}

/* The Laplacian plan: the request kept (the caller's arrays outlive it),
 * applied by a plain loop in the order the CUDA module's SpMM may use: the
 * weights scaled on both sides first. */
static gstat_status csr_lap_plan(void *s, gstat_ctx *ctx, const gstat_i_csr_lap *A, void **plan) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  gstat_i_csr_lap *kept = malloc(sizeof *kept);
  if (!kept) return oom(ctx);
  *kept = *A;
  *plan = kept;
  return GSTAT_OK;
}

static gstat_status csr_lap_apply(void *s, gstat_ctx *ctx, void *plan, const gstat_matrix *X,
                                  const gstat_matrix *Y) {
  (void)s;
  if (!strcmp(fault(), "sparse")) return host->fail(ctx, GSTAT_EBACKEND, "fake: SpMM failed");
  const gstat_i_csr_lap *A = plan;
  const int64_t *off = A->offsets;
  for (int64_t c = 0; c < X->cols; c++) {
    const double *x = (const double *)X->data + c * X->col_stride;
    double *y = (double *)Y->data + c * Y->col_stride;
    for (int64_t i = 0; i < A->n; i++) {
      double acc = 0, si = A->s ? A->s[i] : 1;
      for (int64_t e = off[i]; e < off[i + 1]; e++) {
        int64_t j = A->indices[e] - A->base;
        double w = A->weights ? A->weights[e] : 1;
        acc += w * si * (A->s ? A->s[j] : 1) * x[j];
      }
      y[i] = A->p[i] * x[i] - acc;
    }
  }
  return GSTAT_OK;
}

static void csr_lap_release(void *s, void *plan) {
  (void)s;
  free(plan);
}

/* k-means: the CPU's, on host rows or the "device" ones alike */
static gstat_status kmeans(void *s, gstat_ctx *ctx, const gstat_matrix *E,
                           const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                           int64_t *iterations) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->kmeans(NULL, ctx, E, opt, labels, inertia, iterations);
}

static double host_cost(void *s, const gstat_ctx *ctx, const gstat_i_work *w) {
  (void)s;
  /* host data of the new co-moments stay on the CPU, as the CUDA module says */
  bool moments = w->op == GSTAT_I_PRIM_WCOMOMENT || w->op == GSTAT_I_PRIM_NAN_ROWS ||
                 w->op == GSTAT_I_PRIM_PAIRWISE;
  if (w->op == GSTAT_I_PRIM_KMEANS) return w->n >= 20000 ? 0.0 : -1.0; /* the module's rules */
  if (w->op == GSTAT_I_PRIM_CSR_LAP)
    return ctx->opt.backend != GSTAT_BACKEND_AUTO || w->n >= 100000 ? 0.0 : -1.0;
  return moments ? -1.0 : 0.0;
}

static int64_t allocations(void *s) {
  (void)s;
  return 0;
}

static void destroy(void *s) {
  free(((fake_state *)s)->chain);
  free(s);
}

/* The rows primitive: the CPU's code on "device" descriptors. */
static gstat_status rows(void *s, gstat_ctx *ctx, const gstat_i_rows_req *r) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->rows(NULL, ctx, r);
}

/* The CPU's Laplacian on the "device" data; an out-of-memory on request. */
static gstat_status laplacian(void *s, gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                              int sym, int drop_loops, int kind, const gstat_matrix *L,
                              const gstat_matrix *deg) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->laplacian(NULL, ctx, fn, A, sym, drop_loops, kind, L, deg);
}

/* The batch spectral engine's steps: the CPU's on the "device" data. */
static gstat_status sc_laplacians(void *s, gstat_ctx *ctx, const gstat_i_sc_lap_req *r) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->sc_laplacians(NULL, ctx, r);
}
static gstat_status sc_assign(void *s, gstat_ctx *ctx, const gstat_i_sc_assign_req *r) {
  (void)s;
  return host->cpu->sc_assign(NULL, ctx, r);
}

/* A dense column-major host descriptor (the module links no libgstat, so
 * not gstat_matrix_col_major: a static libgstat does not export it). */
static gstat_matrix col_major(void *data, gstat_dtype dt, int64_t rows, int64_t cols) {
  gstat_matrix m;
  memset(&m, 0, sizeof m);
  m.data = data;
  m.dtype = dt;
  m.location = GSTAT_HOST;
  m.batch = 1;
  m.rows = rows;
  m.cols = cols;
  m.row_stride = 1;
  m.col_stride = rows > 0 ? rows : 1;
  m.batch_stride = rows * cols;
  return m;
}

/* Element b of X as a malloc'd dense column-major n x p buffer of dtype ct. */
static void *dense_copy(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct) {
  size_t es = ct == GSTAT_F64 ? 8 : 4, count = (size_t)(X->rows * X->cols);
  void *buf = malloc(count ? count * es : 1);
  if (!buf) return NULL;
  gstat_matrix src = *X, dst = col_major(buf, ct, X->rows, X->cols);
  src.data = (char *)X->data + (size_t)(b * X->batch_stride) * (X->dtype == GSTAT_F64   ? 8
                                                                : X->dtype == GSTAT_F32 ? 4
                                                                                        : 2);
  src.batch = 1;
  src.location = dst.location = GSTAT_HOST;
  if (count && host->cpu->copy(NULL, ctx, &src, &dst) != GSTAT_OK) {
    free(buf);
    return NULL;
  }
  return buf;
}

static double at(gstat_dtype ct, const void *x, int64_t k) {
  return ct == GSTAT_F64 ? ((const double *)x)[k] : (double)((const float *)x)[k];
}

/* Column j's weighted mean over the kept rows (corrected second pass; a
 * constant column's value exactly), as the CUDA module's kernel. */
static double kept_mean(gstat_dtype ct, const void *x, int64_t n, int64_t j, const double *w,
                        const unsigned char *keep) {
  double s = 0, ws = 0, lo = INFINITY, hi = -INFINITY, r = 0;
  for (int64_t i = 0; i < n; i++) {
    if (keep && !keep[i]) continue;
    double v = at(ct, x, i + j * n), wi = w ? w[i] : 1.0;
    s += wi * v;
    ws += wi;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  double m = s / ws;
  for (int64_t i = 0; i < n; i++)
    if (!keep || keep[i]) r += (w ? w[i] : 1.0) * (at(ct, x, i + j * n) - m);
  return lo == hi && !isnan(s) ? lo : m + r / ws;
}

/* The weighted co-moment as the CUDA module computes it: a dense copy,
 * left-out rows zeroed (not compacted), kept rows centred and scaled by
 * sqrt(w), one product over all n rows. */
static gstat_status wcomoment(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                              const double *w, const unsigned char *keep, bool about_zero,
                              double *mean, double *M) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  int64_t n = X->rows, p = X->cols;
  gstat_dtype ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  void *x = dense_copy(ctx, X, b, ct);
  float *cf = malloc(sizeof(float) * (size_t)(p * p + 1));
  gstat_status st = x && cf ? GSTAT_OK : oom(ctx);
  for (int64_t j = 0; st == GSTAT_OK && j < p; j++) {
    double m = kept_mean(ct, x, n, j, w, keep);
    mean[j] = about_zero ? (isnan(m) ? NAN : 0.0) : m;
    for (int64_t i = 0; i < n; i++) {
      bool in = !keep || keep[i];
      double f = w ? sqrt(w[i]) : 1.0;
      if (ct == GSTAT_F64) {
        double *v = (double *)x + i + j * n;
        *v = in ? (*v - mean[j]) * f : 0.0;
      } else {
        float *v = (float *)x + i + j * n;
        *v = in ? (float)((double)(float)((double)*v - mean[j]) * f) : 0.0f;
      }
    }
  }
  if (st == GSTAT_OK) {
    gstat_matrix A = col_major(x, ct, n, p);
    gstat_matrix C = col_major(ct == GSTAT_F64 ? (void *)M : (void *)cf, ct, p, p);
    st = host->cpu->gemm(NULL, ctx, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, &A, &A, 0.0, &C);
  }
  if (st == GSTAT_OK && ct != GSTAT_F64)
    for (int64_t k = 0; k < p * p; k++) M[k] = (double)cf[k];
  free(x);
  free(cf);
  return st;
}

static gstat_status nan_rows(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             unsigned char *keep, int64_t *inf_at) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  return host->cpu->nan_rows(NULL, ctx, X, b, keep, inf_at);
}

/* C = A^T B for dense n x p float64 A and B. */
static gstat_status gram(gstat_ctx *ctx, int64_t n, int64_t p, double *A, double *B, double *C) {
  gstat_matrix a = col_major(A, GSTAT_F64, n, p);
  gstat_matrix bm = col_major(B, GSTAT_F64, n, p);
  gstat_matrix c = col_major(C, GSTAT_F64, p, p);
  return host->cpu->gemm(NULL, ctx, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, &a, &bm, 0.0, &c);
}

/* The pairwise co-moments as the CUDA module computes them: masked GEMMs
 * over x0 = x - shift (0 where missing), moments_req.h's last step. An
 * infinite value is left to the CPU (EUNSUPPORTED), as there. */
static gstat_status pairwise(void *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             const double *w, const double *aw, const gstat_i_pairwise_out *o) {
  (void)s;
  if (!strcmp(fault(), "oom")) return oom(ctx);
  int64_t n = X->rows, p = X->cols;
  size_t np = (size_t)(n * p + 1), pp = (size_t)(p * p + 1);
  double *x = dense_copy(ctx, X, b, GSTAT_F64), *shift = malloc(sizeof(double) * (size_t)(p + 1));
  double *B = malloc(sizeof(double) * np), *T = malloc(sizeof(double) * np);
  double *S = malloc(sizeof(double) * 3 * pp), *Q = S + pp, *P = Q + pp;
  unsigned char *in = malloc(np);
  gstat_status st = x && shift && B && T && S && in ? GSTAT_OK : oom(ctx);
  for (int64_t j = 0; st == GSTAT_OK && j < p; j++) { /* the shift: mean, or the constant */
    double sum = 0, lo = INFINITY, hi = -INFINITY, cnt = 0;
    for (int64_t i = 0; i < n; i++) {
      double v = x[i + j * n];
      if (isinf(v)) st = host->fail(ctx, GSTAT_EUNSUPPORTED, "fake: an infinite value");
      if (isnan(v)) continue;
      sum += v;
      cnt++;
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    shift[j] = cnt == 0 ? 0.0 : lo == hi ? lo : sum / cnt;
  }
  for (int64_t e = 0; st == GSTAT_OK && e < n * p; e++) { /* x becomes x0; B = D m */
    in[e] = !isnan(x[e]);
    x[e] = in[e] ? x[e] - shift[e / n] : 0.0;
    B[e] = in[e] ? (w ? w[e % n] : 1.0) : 0.0;
  }
  /* T in turn: m, x0, x0 * x0, D x0, aw m */
  for (int step = 0; st == GSTAT_OK && step < (o->WA ? 5 : 4); step++) {
    for (int64_t e = 0; e < n * p; e++)
      T[e] = step == 0   ? in[e]
             : step == 1 ? x[e]
             : step == 2 ? x[e] * x[e]
             : step == 3 ? B[e] * x[e]
                         : in[e] * aw[e % n];
    double *out = step == 0 ? o->W : step == 1 ? S : step == 2 ? Q : step == 3 ? P : o->WA;
    st = step == 3 ? gram(ctx, n, p, x, T, out) : gram(ctx, n, p, T, B, out);
  }
  if (st == GSTAT_OK) gstat_i_pairwise_from_sums(p, n, shift, S, Q, P, o);
  free(x);
  free(shift);
  free(B);
  free(T);
  free(S);
  free(in);
  return st;
}

/* The CUDA module's no-synchronization eigh (its limits: order <= 64,
 * dense arguments of one dtype): the CPU's eigh, info as the device's
 * 2 x batch ints (flags: a non-finite value in an element's values). */
static gstat_status eigh_async(void *s, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *w, gstat_matrix *V, int32_t *info) {
  (void)s;
  if (A->rows > 64)
    return host->fail(ctx, GSTAT_EUNSUPPORTED, "fake eigh_async: order %lld > 64",
                      (long long)A->rows);
  if (w->dtype != A->dtype || (V && V->dtype != A->dtype))
    return host->fail(ctx, GSTAT_EUNSUPPORTED, "fake eigh_async: one dtype");
  int64_t *inf = calloc((size_t)A->batch, sizeof *inf);
  if (!inf) return GSTAT_ENOMEM;
  gstat_status st = A->rows ? host->cpu->eigh(NULL, ctx, A, uplo, w, V, inf) : GSTAT_OK;
  for (int64_t b = 0; b < A->batch && st == GSTAT_OK; b++) {
    bool finite = true;
    for (int64_t i = 0; i < A->rows && A->dtype == GSTAT_F64; i++)
      finite = finite && isfinite(((double *)w->data)[b * w->batch_stride + i * w->row_stride]);
    info[b] = (int32_t)inf[b];
    info[A->batch + b] = finite ? 0 : 2;
  }
  free(inf);
  return st;
}

/* The CUDA module's fused eigh backward (float64 here, order <= 32) in
 * plain loops: M = V^T gV, the middle factor, then V (middle) V^T. */
static double entry(const gstat_matrix *m, int64_t b, int64_t i, int64_t j) {
  return ((const double *)m->data)[b * m->batch_stride + i * m->row_stride + j * m->col_stride];
}

static gstat_status eigh_backward(void *s, gstat_ctx *ctx, const gstat_matrix *w,
                                  const gstat_matrix *V, const gstat_matrix *gw,
                                  const gstat_matrix *gV, double broadening, gstat_matrix *gA) {
  (void)s;
  const int64_t n = V->rows;
  if (n > 32 || V->dtype != GSTAT_F64)
    return host->fail(ctx, GSTAT_EUNSUPPORTED, "fake eigh_backward: float64, order <= 32");
  double m[32][32], t[32][32];
  for (int64_t b = 0; b < V->batch; b++) {
    double amax = 0;
    for (int64_t k = 0; k < n; k++) amax = fmax(amax, fabs(entry(w, b, k, 0)));
    const double tol = amax * ((double)n * 0x1p-52);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        m[i][j] = 0;
        for (int64_t k = 0; k < n; k++) m[i][j] += entry(V, b, k, i) * entry(gV, b, k, j);
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        const double gap = entry(w, b, j, 0) - entry(w, b, i, 0);
        double f = 0;
        if (fabs(gap) > tol) f = broadening > 0 ? gap / (2 * (gap * gap + broadening)) : 0.5 / gap;
        t[i][j] = i == j ? (gw ? entry(gw, b, i, 0) : 0) : (m[i][j] - m[j][i]) * f;
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        m[i][j] = 0; /* V (middle) */
        for (int64_t k = 0; k < n; k++) m[i][j] += entry(V, b, i, k) * t[k][j];
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int64_t k = 0; k < n; k++) acc += m[i][k] * entry(V, b, j, k);
        ((double *)gA->data)[b * gA->batch_stride + i * gA->row_stride + j * gA->col_stride] = acc;
      }
  }
  return GSTAT_OK;
}

static const gstat_i_backend_ops ops = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .name = "fake-cuda",
    .ran_flag = GSTAT_RAN_CUDA,
    .eigh = eigh,
    .eigh_top = eigh_top,
    .cholesky = cholesky,
    .cholesky_solve = cholesky_solve,
    .triangular_solve = triangular_solve,
    .destroy = destroy,
    .device_allocations = allocations,
    .info_clean = info_clean,
    .copy = copy,
    .comoment = comoment,
    .scale_sym = scale_sym,
    .workspace = workspace,
    .project = project,
    .find_nonfinite = find_nonfinite,
    .knn = knn,
    .host_cost = host_cost,
    .gemm = gemm,
    .orthonormalize = orthonormalize,
    .syrk_lower = syrk_lower,
    .rows = rows,
    .laplacian = laplacian,
    .sc_laplacians = sc_laplacians,
    .sc_assign = sc_assign,
    .wcomoment = wcomoment,
    .nan_rows = nan_rows,
    .pairwise = pairwise,
    .eigh_async = eigh_async,
    .eigh_backward = eigh_backward,
    .lincomb = lincomb,
    .dots = dots,
    .csr_lap_plan = csr_lap_plan,
    .csr_lap_apply = csr_lap_apply,
    .csr_lap_release = csr_lap_release,
    .kmeans = kmeans,
    .offdiag_sumsq = offdiag_sumsq,
    .sym_affine = sym_affine,
};

static gstat_status create(gstat_ctx *ctx, int device, void **state) {
  (void)device;
  if (!strcmp(fault(), "nodevice"))
    return host->fail(ctx, GSTAT_EUNSUPPORTED, "fake: no CUDA device");
  *state = calloc(1, sizeof(fake_state));
  return *state ? GSTAT_OK : GSTAT_ENOMEM;
}

static gstat_status set_stream(void *state, void *stream) {
  (void)state;
  (void)stream;
  return GSTAT_OK;
}

static const gstat_i_module module = {GSTAT_I_BACKEND_API_VERSION, &ops, create, set_stream};

__attribute__((visibility("default"))) const gstat_i_module *gstat_cuda_module_v1(
    const gstat_i_host_services *h) {
  host = h;
  return &module;
}
