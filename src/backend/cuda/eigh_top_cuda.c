/*
 * The backend's eigh_top on device data: every eigenvalue of one dense
 * symmetric matrix and the eigenvectors of its k largest (PCA's k
 * components of p). cuSOLVER's reduction to tridiagonal form (sytrd) on a
 * copy, our tridiagonal step (tridiag_step.h: all values by bisection, the
 * top k vectors by twisted factorizations) and cuSOLVER's
 * back-transformation (ormtr) of those k columns only; Xsyevd computes and
 * back-transforms all p (bench/README.md, "Top-k eigenpairs on the device").
 * Where the step cannot serve the top k (eigenvalue gaps too small for its
 * vectors, a non-finite T) the caller's A is untouched and the scheduler
 * runs the full eigh.
 */
#include <stdint.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/tridiag_step.h"

/* Where this path runs instead of the full eigh: one matrix of order
 * min_n..max_n (float32; float64 up to max_n_f64), k <= n / min_ratio
 * (ormtr's work grows with k; a batch goes to the full eigh's batched or
 * threaded paths). Float32 from 4096, where the full eigh runs the same
 * reduction and step for every vector; below, cuSOLVER's whole solver was
 * faster. Float64 not measured: off. bench/README.md, "Top-k eigenpairs
 * on the device". */
static const struct {
  int64_t min_n, max_n_f32, max_n_f64, min_ratio;
} top_rules = {4096, GSTAT_CU_TRIDIAG_MAX_N, 0, 4};

/* Relative eigenvalue gap below which the twisted vectors of two wanted
 * values are not trusted (as the full eigh's split path). */
static const double top_gap = 1e-8;

/* The device workspace, in bytes from its start. */
typedef struct {
  size_t a, d, e, tau, x, dinfo, solver_work, total;
  gstat_cu_tridiag_parts tri;
} layout;

static layout top_layout(int64_t n, size_t es, int lwork) {
  layout l;
  size_t at = 0, nn = (size_t)(n * n);
  l.a = gstat_cu_ws_part(&at, nn * es); /* the reduction's copy of A */
  l.d = gstat_cu_ws_part(&at, (size_t)n * es);
  l.e = gstat_cu_ws_part(&at, (size_t)n * es);
  l.tau = gstat_cu_ws_part(&at, (size_t)n * es);
  l.x = gstat_cu_ws_part(&at, nn * es); /* the tridiagonal vectors by rank */
  l.dinfo = gstat_cu_ws_part(&at, sizeof(int));
  l.solver_work = gstat_cu_ws_part(&at, (size_t)lwork * es);
  l.tri = gstat_cu_tridiag_parts_at(&at, n, 1, 1);
  l.total = at;
  return l;
}

/* cuSOLVER's workspace (elements) for sytrd of order n and ormtr of n x k,
 * or -1. The queries read no data. */
static int solver_lwork(cusolverDnHandle_t h, bool f64, int n, int k, void *a) {
  int l1 = 0, l2 = 0;
  cusolverStatus_t st;
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  if (f64) {
    double *p = a;
    st = cusolverDnDsytrd_bufferSize(h, lo, n, p, n, p, p, p, &l1);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnDormtr_bufferSize(h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, n, k, p, n, p, p, n,
                                       &l2);
  } else {
    float *p = a;
    st = cusolverDnSsytrd_bufferSize(h, lo, n, p, n, p, p, p, &l1);
    if (st == CUSOLVER_STATUS_SUCCESS)
      st = cusolverDnSormtr_bufferSize(h, CUBLAS_SIDE_LEFT, lo, CUBLAS_OP_N, n, k, p, n, p, p, n,
                                       &l2);
  }
  if (st != CUSOLVER_STATUS_SUCCESS) return -1;
  return l1 > l2 ? l1 : l2;
}

/* Whether the path takes A (dense, device) and w for k pairs. */
static bool top_fits(const gstat_matrix *A, const gstat_matrix *w, int64_t k) {
  const int64_t n = A->rows;
  const bool f64 = A->dtype == GSTAT_F64;
  if ((!f64 && A->dtype != GSTAT_F32) || A->batch != 1 || A->cols != n || n < top_rules.min_n ||
      n > (f64 ? top_rules.max_n_f64 : top_rules.max_n_f32) || k < 1 || k * top_rules.min_ratio > n)
    return false;
  return A->row_stride == 1 && A->col_stride == n && A->location == GSTAT_CUDA &&
         w->location == GSTAT_CUDA && w->dtype == A->dtype && w->batch == 1 && w->rows == n &&
         w->cols == 1 && w->row_stride == 1;
}

#define SOLVER(call, name) GSTAT_CU_LIB_STEP(call, CUSOLVER_STATUS_SUCCESS, name)

typedef struct {
  gstat_cu_state *s;
  bool f64;
  int n, k, lwork;
  void *A, *w; /* the caller's matrix (its last k columns get the vectors) and values */
  char *base;
  layout l;
  int *host_flag; /* pinned, 2 ints */
} top_run;

/* The reduction of A's copy; then every value into w and the top k
 * tridiagonal vectors (the step's read backs). */
static cudaError_t reduce_and_solve(const top_run *r, int *degenerate, const char **what) {
  const size_t es = r->f64 ? sizeof(double) : sizeof(float);
  const int n = r->n;
  char *b = r->base;
  cudaStream_t stream = r->s->stream;
  cudaError_t err;
  GSTAT_CU_STEP(cudaMemcpyAsync(b + r->l.a, r->A, (size_t)n * (size_t)n * es,
                                cudaMemcpyDeviceToDevice, stream),
                "copying A");
  /* LAPACK's scaling of extreme magnitudes, which sytrd alone lacks */
  GSTAT_CU_STEP(
      gstat_cu_sytrd_scale(r->f64 ? 2 : 1, b + r->l.a, n, 1, (double *)(b + r->l.tri.norms),
                           (double *)(b + r->l.tri.sigma), stream),
      "scaling");
  int *dinfo = (int *)(b + r->l.dinfo);
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  if (r->f64)
    SOLVER(cusolverDnDsytrd(r->s->solver, lo, n, (double *)(b + r->l.a), n, (double *)(b + r->l.d),
                            (double *)(b + r->l.e), (double *)(b + r->l.tau),
                            (double *)(b + r->l.solver_work), r->lwork, dinfo),
           "cusolverDnDsytrd");
  else
    SOLVER(cusolverDnSsytrd(r->s->solver, lo, n, (float *)(b + r->l.a), n, (float *)(b + r->l.d),
                            (float *)(b + r->l.e), (float *)(b + r->l.tau),
                            (float *)(b + r->l.solver_work), r->lwork, dinfo),
           "cusolverDnSsytrd");
  gstat_cu_tridiag_step_args t = {.cdt = r->f64 ? 2 : 1,
                                  .n = n,
                                  .nb = 1,
                                  .d = b + r->l.d,
                                  .e = b + r->l.e,
                                  .base = b,
                                  .parts = r->l.tri,
                                  .w = r->w,
                                  .info = dinfo,
                                  .X = b + r->l.x,
                                  .first_rank = n - r->k,
                                  .gap_tol = top_gap,
                                  .host_flag = r->host_flag,
                                  .clusters = gstat_cu_own_clusters(r->s),
                                  .stream = stream};
  return gstat_cu_tridiag_step(&t, degenerate, what);
}

/* The top k tridiagonal vectors back-transformed into A's last k columns,
 * the sign rule applied. */
static cudaError_t back_transform(const top_run *r, const char **what) {
  const size_t es = r->f64 ? sizeof(double) : sizeof(float);
  const int n = r->n, k = r->k;
  char *b = r->base;
  const size_t top = (size_t)(n - k) * (size_t)n; /* elements before the top k columns */
  char *z = b + r->l.x + top * es, *out = (char *)r->A + top * es;
  int *dinfo = (int *)(b + r->l.dinfo);
  cudaError_t err;
  const cublasSideMode_t left = CUBLAS_SIDE_LEFT;
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  if (r->f64)
    SOLVER(cusolverDnDormtr(r->s->solver, left, lo, CUBLAS_OP_N, n, k, (double *)(b + r->l.a), n,
                            (double *)(b + r->l.tau), (double *)z, n,
                            (double *)(b + r->l.solver_work), r->lwork, dinfo),
           "cusolverDnDormtr");
  else
    SOLVER(cusolverDnSormtr(r->s->solver, left, lo, CUBLAS_OP_N, n, k, (float *)(b + r->l.a), n,
                            (float *)(b + r->l.tau), (float *)z, n, (float *)(b + r->l.solver_work),
                            r->lwork, dinfo),
           "cusolverDnSormtr");
  GSTAT_CU_STEP(
      cudaMemcpyAsync(out, z, (size_t)k * (size_t)n * es, cudaMemcpyDeviceToDevice, r->s->stream),
      "copying the vectors");
  GSTAT_CU_STEP(gstat_cu_fix_sign_cols(r->f64 ? 2 : 1, out, n, k, r->s->stream), "the sign rule");
  return cudaSuccess;
}

gstat_status gstat_cu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                               gstat_matrix *w) {
  gstat_cu_state *s = state;
  if (!top_fits(A, w, k)) return GSTAT_EUNSUPPORTED; /* the full eigh: no message */
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "eigh: simulated device out of memory");
  cudaSetDevice(s->device);
  top_run r = {.s = s,
               .f64 = A->dtype == GSTAT_F64,
               .n = (int)A->rows,
               .k = (int)k,
               .A = A->data,
               .w = w->data};
  if (cusolverDnSetStream(s->solver, s->stream) != CUSOLVER_STATUS_SUCCESS ||
      (r.lwork = solver_lwork(s->solver, r.f64, r.n, r.k, A->data)) < 0)
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "eigh: cuSOLVER's workspace query failed");
  r.l = top_layout(r.n, r.f64 ? sizeof(double) : sizeof(float), r.lwork);
  r.base = gstat_cu_buffer(s, ctx, CU_WORK, r.l.total);
  r.host_flag = gstat_cu_host_buffer(s, ctx, &s->host_info, 2 * sizeof(int));
  if (!r.base || !r.host_flag) return GSTAT_ENOMEM;
  const char *what = "";
  int degenerate = 0;
  s->own_tridiag_chunks++;
  cudaError_t err = reduce_and_solve(&r, &degenerate, &what);
  s->own_tridiag_degenerate += err == cudaSuccess && degenerate;
  if (err == cudaSuccess && degenerate) return GSTAT_EUNSUPPORTED; /* A untouched */
  if (err == cudaSuccess) err = back_transform(&r, &what);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "eigh", what, err);
}
