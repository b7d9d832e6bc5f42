/* The CPU backend: batch loops over the per-element routines of cpu_ops.c,
 * parallel over matrices (OpenMP) with single-threaded BLAS inside, or one
 * matrix at a time with threaded BLAS when the batch is too small. */
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/backend.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/cpu_job.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/cpu/rows_cpu.h"

/* Item `it` of the batch: group `it` (of `lanes` elements) while it < groups,
 * then the elements after the last whole group one by one. */
static void run_item(const gstat_i_cpu_job *job, int64_t it, int64_t groups, int64_t lanes,
                     char *ws, int64_t *info) {
  if (lanes > 1 && it < groups) {
    job->group(job, it * lanes, ws, info);
  } else {
    int64_t b = groups * lanes + (it - groups);
    int64_t st = job->one(job, b, ws);
    if (info) info[b] = st;
  }
}

/* One-thread seconds of one element: the kernel's flops (eigh with vectors
 * ~9 n^3, values ~2 n^3; Cholesky n^3 / 3; solves 2 n^2 per right-hand
 * side) and packing, at the rules' small-kernel rate (LAPACK runs larger
 * elements faster per flop: their estimate errs toward threads they fill). */
static double element_seconds(const gstat_i_cpu_job *job) {
  double n = (double)job->n, flops;
  if (job->flops > 0)
    flops = job->flops;
  else if (job->w)
    flops = (job->out ? 9.0 : 2.0) * n * n * n;
  else if (job->B)
    flops = 2.0 * n * n * (double)job->B->cols;
  else
    flops = n * n * n / 3.0;
  return gstat_i_cpu_seconds(job->A->dtype, flops + 8.0 * n * n, job->flops > 0); /* GEMMs */
}

/* The batch through job's routines; info[b] gets element b's status (info
 * may be NULL for a job whose elements cannot fail; no group routine then). */
static gstat_status run_batch(gstat_ctx *ctx, const char *fn, gstat_i_cpu_job *job, int64_t batch,
                              int64_t *info) {
  /* items: whole groups first (when the job has a group routine), then the
   * remaining elements one by one */
  int64_t lanes = job->group && batch >= job->lanes ? job->lanes : 1;
  int64_t groups = lanes > 1 ? batch / lanes : batch,
          items = groups + (lanes > 1 ? batch % lanes : 0);
  double each = element_seconds(job);
  int nt = gstat_i_cpu_batch_threads(ctx, items, each * (double)batch);
  /* one element at a time: BLAS may thread each (large) element; an eigh's
   * reduction is a chain of matrix-vector products (~4 n^2 flops each) */
  double step =
      job->w ? gstat_i_cpu_seconds(job->A->dtype, 4.0 * (double)(job->n * job->n), false) : each;
  int blas_nt = nt == 1 && !job->small
                    ? gstat_i_cpu_blas_threads(ctx, gstat_i_cpu_blas_step_seconds(each, step))
                    : 1;
  size_t total;
  if (!gstat_i_mul_size(job->per_thread, (size_t)nt, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_CPU, total);
  if (!ws)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", fn, total);
  /* With a progress callback the items run in slices, reported (and
   * cancellable) between slices from this thread; without one, in one go. */
  int64_t slice = items;
  if (ctx->opt.progress && ctx->progress_muted == 0 && items > 1) {
    int64_t slices = gstat_i_cpu_slices(each * (double)batch);
    slice = (items + slices - 1) / slices;
    if (slice < 4 * (int64_t)nt) slice = 4 * (int64_t)nt;
  }
  for (int64_t lo = 0; lo < items; lo += slice) {
    int64_t hi = items - lo < slice ? items : lo + slice;
#ifdef _OPENMP
    if (nt > 1) {
      int64_t chunk = (hi - lo) / ((int64_t)nt * 8);
      if (chunk < 1) chunk = 1;
#pragma omp parallel for num_threads(nt) schedule(dynamic, chunk)
      for (int64_t it = lo; it < hi; it++)
        run_item(job, it, groups, lanes, ws + job->per_thread * (size_t)omp_get_thread_num(), info);
    } else {
      /* One matrix at a time: BLAS may use the context's threads (restored after). */
      gstat_i_blas_threads_saved saved = gstat_i_blas_threads_enter(blas_nt);
      for (int64_t it = lo; it < hi; it++) run_item(job, it, groups, lanes, ws, info);
      gstat_i_blas_threads_leave(saved);
    }
#else
    (void)blas_nt;
    for (int64_t it = lo; it < hi; it++) run_item(job, it, groups, lanes, ws, info);
#endif
    if (slice < items) {
      gstat_status st = gstat_i_progress(ctx, fn, hi, items);
      if (st != GSTAT_OK) return st;
    }
  }
  return GSTAT_OK;
}

static gstat_status setup_failed(gstat_ctx *ctx, const char *fn) {
  return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", fn);
}

static gstat_status cpu_eigh(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                             gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  (void)state;
  gstat_i_cpu_job job = {.A = A, .out = V, .w = w, .uplo = uplo, .n = A->rows};
  bool ok =
      A->dtype == GSTAT_F64 ? gstat_i_cpu_eigh_setup_f64(&job) : gstat_i_cpu_eigh_setup_f32(&job);
  if (!ok) return setup_failed(ctx, "eigh");
  return run_batch(ctx, "eigh", &job, A->batch, info);
}

static gstat_status cpu_cholesky(void *state, gstat_ctx *ctx, const gstat_matrix *A,
                                 gstat_uplo uplo, gstat_matrix *F, int64_t *info) {
  (void)state;
  gstat_i_cpu_job job = {.A = A, .out = F, .uplo = uplo, .n = A->rows};
  bool ok =
      A->dtype == GSTAT_F64 ? gstat_i_cpu_chol_setup_f64(&job) : gstat_i_cpu_chol_setup_f32(&job);
  if (!ok) return setup_failed(ctx, "cholesky");
  return run_batch(ctx, "cholesky", &job, A->batch, info);
}

static gstat_status cpu_cholesky_solve(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                       gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                       int64_t *info) {
  (void)state;
  gstat_i_cpu_job job = {.A = F, .B = B, .out = X, .uplo = uplo, .n = F->rows};
  bool ok = F->dtype == GSTAT_F64 ? gstat_i_cpu_cholsolve_setup_f64(&job)
                                  : gstat_i_cpu_cholsolve_setup_f32(&job);
  if (!ok) return setup_failed(ctx, "cholesky_solve");
  return run_batch(ctx, "cholesky_solve", &job, F->batch, info);
}

static gstat_status cpu_triangular_solve(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                         gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                         const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  (void)state;
  gstat_i_cpu_job job = {
      .A = T, .B = B, .out = X, .uplo = uplo, .trans = trans, .diag = diag, .n = T->rows};
  bool ok = T->dtype == GSTAT_F64 ? gstat_i_cpu_trsolve_setup_f64(&job)
                                  : gstat_i_cpu_trsolve_setup_f32(&job);
  if (!ok) return setup_failed(ctx, "triangular_solve");
  return run_batch(ctx, "triangular_solve", &job, T->batch, info);
}

/* gstat_eigh_backward on host data: three GEMMs and the gap weights per
 * matrix, computed in the data's dtype (float32 or float64), any order. */
static gstat_status cpu_eigh_backward(void *state, gstat_ctx *ctx, const gstat_matrix *w,
                                      const gstat_matrix *V, const gstat_matrix *gw,
                                      const gstat_matrix *gV, double broadening, gstat_matrix *gA) {
  (void)state;
  if (V->dtype != GSTAT_F32 && V->dtype != GSTAT_F64)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "eigh_backward: float32 or float64 only");
  if (V->rows > INT32_MAX / V->rows)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "eigh_backward: order %lld is too large for BLAS",
                        (long long)V->rows);
  gstat_i_cpu_job job = {.A = V,
                         .B = gV,
                         .out = gA,
                         .vals = w,
                         .grad_vals = gw,
                         .broadening = broadening,
                         .n = V->rows};
  bool ok = V->dtype == GSTAT_F64 ? gstat_i_cpu_eigh_backward_setup_f64(&job)
                                  : gstat_i_cpu_eigh_backward_setup_f32(&job);
  if (!ok) return setup_failed(ctx, "eigh_backward");
  return run_batch(ctx, "eigh_backward", &job, V->batch, NULL); /* no element fails */
}

const gstat_i_backend_ops gstat_i_cpu_backend_ops = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .name = "cpu",
    .ran_flag = GSTAT_RAN_CPU,
    .eigh = cpu_eigh,
    .cholesky = cpu_cholesky,
    .cholesky_solve = cpu_cholesky_solve,
    .triangular_solve = cpu_triangular_solve,
    .eigh_backward = cpu_eigh_backward,
    .destroy = NULL,
    .copy = gstat_i_cpu_copy,
    .comoment = gstat_i_cpu_comoment,
    .scale_sym = gstat_i_cpu_scale_sym,
    .project = gstat_i_cpu_project,
    .eigh_top = gstat_i_cpu_eigh_top,
    .knn = gstat_i_cpu_knn,
    .host_cost = gstat_i_cpu_host_cost,
    .eigh_lowest = gstat_i_cpu_eigh_lowest,
    .gemm = gstat_i_cpu_gemm,
    .orthonormalize = gstat_i_cpu_orthonormalize,
    .syrk_lower = gstat_i_cpu_syrk_lower,
    .rows = gstat_i_cpu_rows,
    .laplacian = gstat_i_cpu_laplacian,
    .sc_laplacians = gstat_i_cpu_sc_laplacians,
    .sc_assign = gstat_i_cpu_sc_assign,
    .wcomoment = gstat_i_cpu_wcomoment,
    .nan_rows = gstat_i_cpu_nan_rows,
    .pairwise = gstat_i_cpu_pairwise,
    .lincomb = gstat_i_cpu_lincomb,
    .dots = gstat_i_cpu_dots,
    .kmeans = gstat_i_cpu_kmeans,
    .offdiag_sumsq = gstat_i_cpu_offdiag_sumsq,
    .sym_affine = gstat_i_cpu_sym_affine,
};
