/*
 * GPU timings in one run, data already on the device (fp32/fp64):
 *   bench_cuda eigh|cholesky f32|f64|bf16 BATCH N REPS [INPUT_FILE|-] [upper]
 * prints key=value pairs: gstat_ms and the raw cuSOLVER anchors
 * (syevBatched_ms = cusolverDnXsyevBatched, syevjBatched_ms for n <= 32,
 * syevd_loop_ms = cusolverDnXsyevd per matrix on one stream,
 * potrfBatched_ms), each the median of REPS rounds (a round times each
 * routine once, with CUDA events, after one warm-up call each); the anchors
 * include the device copy of A they need (they overwrite it), as gstat's
 * time includes its own. A key is missing when its routine was not run or
 * failed. INPUT_FILE, when given, receives the input batch (raw, dense, in
 * the dtype), so that other libraries can be timed on the very same
 * matrices: the divide-and-conquer solvers' time depends on the spectrum.
 * With `upper`, gstat_upper_ms times gstat reading the upper triangle of the
 * same matrices (the anchors always read the lower one).
 *   bench_cuda cholesky_solve|trsm f32|f64 BATCH N REPS [INPUT_FILE|-] [NRHS]
 * times the solves with the lower Cholesky factor of the same matrices
 * (gstat_cholesky, untimed) and NRHS (default 1) right-hand sides into a
 * separate X: gstat_ms, and as anchors xpotrs_loop_ms (cusolverDnXpotrs per
 * matrix) or trsm_loop_ms (cublas trsm per matrix) for batches up to 64, and
 * trsmBatched_ms (twice for cholesky_solve); each anchor copies B into X
 * first (they solve in place), as gstat's time includes its own copy.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <gstat/gstat.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "gpu_ctx.h"
#include "sym_batch.h"

typedef int (*run_fn)(void *arg);

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One routine to time: fn(arg) returns nonzero on failure. */
typedef struct {
  const char *key;
  run_fn fn;
  double *t; /* one time per round */
  bool failed;
} runner;

/* Median times of every runner over reps rounds, after one warm-up call
 * each. A round times every runner once (CUDA events), so the GPU's clock
 * and temperature drift over the run falls on all of them alike instead of
 * on whichever ran last. A runner that fails is NAN. */
static void time_rounds(runner *rs, int nr, void *arg, int reps, double *med) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int k = 0; k < nr; k++) {
    rs[k].t = malloc(sizeof(double) * (size_t)reps);
    rs[k].failed = rs[k].fn(arg) != 0;
  }
  CK(cudaDeviceSynchronize());
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < nr; k++) {
      if (rs[k].failed) continue;
      CK(cudaEventRecord(e0, 0));
      rs[k].failed = rs[k].fn(arg) != 0;
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      rs[k].t[r] = ms;
    }
  for (int k = 0; k < nr; k++) {
    if (!rs[k].failed) qsort(rs[k].t, (size_t)reps, sizeof(double), cmp);
    med[k] = rs[k].failed ? NAN : rs[k].t[reps / 2];
    free(rs[k].t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

typedef struct {
  const char *op;
  int f64, bf16;
  int64_t batch, n;
  size_t es;
  void *a0, *a, *w, *v, *work;
  int *info;
  size_t work_bytes;
  void *host_work;
  size_t host_bytes;
  void **ptrs;
  gstat_ctx *ctx;
  cusolverDnHandle_t h;
  cusolverDnParams_t p;
  syevjInfo_t j;
  /* the solves: lower factor, right-hand sides, solutions */
  void *l, *rhs, *x;
  int64_t nrhs;
  void **xptrs;
  cublasHandle_t blas;
} bench;

static int gstat_call(bench *b, gstat_uplo uplo) {
  gstat_dtype dt = b->bf16 ? GSTAT_BF16 : b->f64 ? GSTAT_F64 : GSTAT_F32;
  gstat_matrix A = gstat_matrix_col_major(b->a0, dt, b->batch, b->n, b->n);
  gstat_matrix W = gstat_vector_batch(b->w, dt, b->batch, b->n);
  gstat_matrix V = gstat_matrix_col_major(b->v, dt, b->batch, b->n, b->n);
  A.location = W.location = V.location = GSTAT_CUDA;
  gstat_status st = strcmp(b->op, "cholesky") ? gstat_eigh(b->ctx, &A, uplo, &W, &V, NULL)
                                              : gstat_cholesky(b->ctx, &A, uplo, &V, NULL);
  if (st != GSTAT_OK) fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(b->ctx));
  return st != GSTAT_OK;
}

static int run_gstat(void *arg) {
  return gstat_call(arg, GSTAT_LOWER);
}

/* the same symmetric matrices read from their upper triangle */
static int run_gstat_upper(void *arg) {
  return gstat_call(arg, GSTAT_UPPER);
}

static size_t bytes_a(const bench *b) {
  return (size_t)(b->batch * b->n * b->n) * b->es;
}

static int run_syev_batched(void *arg) {
  bench *b = arg;
  cudaDataType t = b->f64 ? CUDA_R_64F : CUDA_R_32F;
  CK(cudaMemcpyAsync(b->a, b->a0, bytes_a(b), cudaMemcpyDeviceToDevice, 0));
  return cusolverDnXsyevBatched(b->h, b->p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, b->n,
                                t, b->a, b->n, t, b->w, t, b->work, b->work_bytes, b->host_work,
                                b->host_bytes, b->info, b->batch) != CUSOLVER_STATUS_SUCCESS;
}

static int run_syevj_batched(void *arg) {
  bench *b = arg;
  CK(cudaMemcpyAsync(b->a, b->a0, bytes_a(b), cudaMemcpyDeviceToDevice, 0));
  cusolverStatus_t st =
      b->f64 ? cusolverDnDsyevjBatched(b->h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                       (int)b->n, b->a, (int)b->n, b->w, b->work,
                                       (int)(b->work_bytes / 8), b->info, b->j, (int)b->batch)
             : cusolverDnSsyevjBatched(b->h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                       (int)b->n, b->a, (int)b->n, b->w, b->work,
                                       (int)(b->work_bytes / 4), b->info, b->j, (int)b->batch);
  return st != CUSOLVER_STATUS_SUCCESS;
}

static int run_syevd_loop(void *arg) {
  bench *b = arg;
  cudaDataType t = b->f64 ? CUDA_R_64F : CUDA_R_32F;
  CK(cudaMemcpyAsync(b->a, b->a0, bytes_a(b), cudaMemcpyDeviceToDevice, 0));
  for (int64_t k = 0; k < b->batch; k++)
    if (cusolverDnXsyevd(b->h, b->p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, b->n, t,
                         (char *)b->a + (size_t)(k * b->n * b->n) * b->es, b->n, t,
                         (char *)b->w + (size_t)(k * b->n) * b->es, t, b->work, b->work_bytes,
                         b->host_work, b->host_bytes, b->info) != CUSOLVER_STATUS_SUCCESS)
      return 1;
  return 0;
}

static int run_potrf_batched(void *arg) {
  bench *b = arg;
  CK(cudaMemcpyAsync(b->a, b->a0, bytes_a(b), cudaMemcpyDeviceToDevice, 0));
  cusolverStatus_t st =
      b->f64 ? cusolverDnDpotrfBatched(b->h, CUBLAS_FILL_MODE_LOWER, (int)b->n, (double **)b->ptrs,
                                       (int)b->n, b->info, (int)b->batch)
             : cusolverDnSpotrfBatched(b->h, CUBLAS_FILL_MODE_LOWER, (int)b->n, (float **)b->ptrs,
                                       (int)b->n, b->info, (int)b->batch);
  return st != CUSOLVER_STATUS_SUCCESS;
}

/* cuSOLVER's 64-bit potrf on each matrix in turn: torch's path for one matrix */
static int run_xpotrf_loop(void *arg) {
  bench *b = arg;
  cudaDataType t = b->f64 ? CUDA_R_64F : CUDA_R_32F;
  CK(cudaMemcpyAsync(b->a, b->a0, bytes_a(b), cudaMemcpyDeviceToDevice, 0));
  for (int64_t k = 0; k < b->batch; k++)
    if (cusolverDnXpotrf(b->h, b->p, CUBLAS_FILL_MODE_LOWER, b->n, t,
                         (char *)b->a + (size_t)(k * b->n * b->n) * b->es, b->n, t, b->work,
                         b->work_bytes, b->host_work, b->host_bytes,
                         b->info) != CUSOLVER_STATUS_SUCCESS)
      return 1;
  return 0;
}

static bool is_solve(const bench *b) {
  return !strcmp(b->op, "cholesky_solve") || !strcmp(b->op, "trsm");
}

static size_t bytes_x(const bench *b) {
  return (size_t)(b->batch * b->n * b->nrhs) * b->es;
}

static int run_gstat_solve(void *arg) {
  bench *b = arg;
  gstat_dtype dt = b->f64 ? GSTAT_F64 : GSTAT_F32;
  gstat_matrix L = gstat_matrix_col_major(b->l, dt, b->batch, b->n, b->n);
  gstat_matrix B = gstat_matrix_col_major(b->rhs, dt, b->batch, b->n, b->nrhs);
  gstat_matrix X = gstat_matrix_col_major(b->x, dt, b->batch, b->n, b->nrhs);
  L.location = B.location = X.location = GSTAT_CUDA;
  gstat_status st = strcmp(b->op, "trsm")
                        ? gstat_cholesky_solve(b->ctx, &L, GSTAT_LOWER, &B, &X, NULL)
                        : gstat_triangular_solve(b->ctx, &L, GSTAT_LOWER, GSTAT_NO_TRANS,
                                                 GSTAT_NON_UNIT, &B, &X, NULL);
  if (st != GSTAT_OK) fprintf(stderr, "gstat: %s\n", gstat_ctx_last_error(b->ctx));
  return st != GSTAT_OK;
}

static int run_xpotrs_loop(void *arg) {
  bench *b = arg;
  cudaDataType t = b->f64 ? CUDA_R_64F : CUDA_R_32F;
  CK(cudaMemcpyAsync(b->x, b->rhs, bytes_x(b), cudaMemcpyDeviceToDevice, 0));
  for (int64_t k = 0; k < b->batch; k++)
    if (cusolverDnXpotrs(b->h, b->p, CUBLAS_FILL_MODE_LOWER, b->n, b->nrhs, t,
                         (char *)b->l + (size_t)(k * b->n * b->n) * b->es, b->n, t,
                         (char *)b->x + (size_t)(k * b->n * b->nrhs) * b->es, b->n,
                         b->info) != CUSOLVER_STATUS_SUCCESS)
      return 1;
  return 0;
}

/* One trsm pass, op(L) X = X, per matrix or batched. */
static int trsm_pass(bench *b, cublasOperation_t op, bool batched) {
  const double one = 1;
  const float onef = 1;
  int n = (int)b->n, r = (int)b->nrhs;
  if (batched)
    return (b->f64 ? cublasDtrsmBatched(b->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, op,
                                        CUBLAS_DIAG_NON_UNIT, n, r, &one,
                                        (const double *const *)b->ptrs, n,
                                        (double *const *)b->xptrs, n, (int)b->batch)
                   : cublasStrsmBatched(b->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, op,
                                        CUBLAS_DIAG_NON_UNIT, n, r, &onef,
                                        (const float *const *)b->ptrs, n, (float *const *)b->xptrs,
                                        n, (int)b->batch)) != CUBLAS_STATUS_SUCCESS;
  for (int64_t k = 0; k < b->batch; k++) {
    char *l = (char *)b->l + (size_t)(k * b->n * b->n) * b->es,
         *x = (char *)b->x + (size_t)(k * b->n * b->nrhs) * b->es;
    cublasStatus_t st =
        b->f64 ? cublasDtrsm(b->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, op,
                             CUBLAS_DIAG_NON_UNIT, n, r, &one, (const double *)l, n, (double *)x, n)
               : cublasStrsm(b->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, op,
                             CUBLAS_DIAG_NON_UNIT, n, r, &onef, (const float *)l, n, (float *)x, n);
    if (st != CUBLAS_STATUS_SUCCESS) return 1;
  }
  return 0;
}

static int run_trsm(bench *b, bool batched) {
  CK(cudaMemcpyAsync(b->x, b->rhs, bytes_x(b), cudaMemcpyDeviceToDevice, 0));
  if (trsm_pass(b, CUBLAS_OP_N, batched)) return 1;
  return !strcmp(b->op, "cholesky_solve") && trsm_pass(b, CUBLAS_OP_T, batched);
}

static int run_trsm_batched(void *arg) {
  return run_trsm(arg, true);
}

static int run_trsm_loop(void *arg) {
  return run_trsm(arg, false);
}

/* The solves' operands: L = the lower Cholesky factor of b->a0 (gstat, not
 * timed), B uniform(-1, 1) from an LCG, X, pointer arrays to L and X. */
static void solve_setup(bench *b) {
  gstat_dtype dt = b->f64 ? GSTAT_F64 : GSTAT_F32;
  size_t nl = (size_t)(b->batch * b->n * b->n), nx = (size_t)(b->batch * b->n * b->nrhs);
  CK(cudaMalloc(&b->l, nl * b->es));
  CK(cudaMalloc(&b->rhs, nx * b->es));
  CK(cudaMalloc(&b->x, nx * b->es));
  gstat_matrix A = gstat_matrix_col_major(b->a0, dt, b->batch, b->n, b->n);
  gstat_matrix L = gstat_matrix_col_major(b->l, dt, b->batch, b->n, b->n);
  A.location = L.location = GSTAT_CUDA;
  if (gstat_cholesky(b->ctx, &A, GSTAT_LOWER, &L, NULL) != GSTAT_OK) {
    fprintf(stderr, "gstat_cholesky: %s\n", gstat_ctx_last_error(b->ctx));
    exit(1);
  }
  double *h = malloc(nx * sizeof(double));
  unsigned long long s = 11;
  for (size_t i = 0; i < nx; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    h[i] = (double)(s >> 11) * 0x1.0p-52 - 1;
  }
  if (!b->f64) bench_pack_float(h, nx);
  CK(cudaMemcpy(b->rhs, h, nx * b->es, cudaMemcpyHostToDevice));
  free(h);
  void **hp = malloc(sizeof(void *) * 2 * (size_t)b->batch);
  for (int64_t k = 0; k < b->batch; k++) {
    hp[k] = (char *)b->l + (size_t)(k * b->n * b->n) * b->es;
    hp[b->batch + k] = (char *)b->x + (size_t)(k * b->n * b->nrhs) * b->es;
  }
  CK(cudaMalloc((void **)&b->ptrs, sizeof(void *) * 2 * (size_t)b->batch));
  CK(cudaMemcpy(b->ptrs, hp, sizeof(void *) * 2 * (size_t)b->batch, cudaMemcpyHostToDevice));
  b->xptrs = b->ptrs + b->batch;
  free(hp);
  if (cublasCreate(&b->blas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasCreate failed\n");
    exit(1);
  }
}

/* Grow the shared solver workspace. */
static void need(bench *b, size_t dev, size_t host) {
  if (dev > b->work_bytes) {
    cudaFree(b->work);
    CK(cudaMalloc(&b->work, dev));
    b->work_bytes = dev;
  }
  if (host > b->host_bytes) {
    free(b->host_work);
    b->host_work = malloc(host);
    b->host_bytes = host;
  }
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr,
            "usage: %s eigh|cholesky f32|f64|bf16 BATCH N REPS [INPUT_FILE|-] [upper]\n"
            "       %s cholesky_solve|trsm f32|f64 BATCH N REPS [INPUT_FILE|-] [NRHS]\n",
            argv[0], argv[0]);
    return 2;
  }
  bench b;
  memset(&b, 0, sizeof b);
  b.op = argv[1];
  b.f64 = !strcmp(argv[2], "f64");
  b.bf16 = !strcmp(argv[2], "bf16");
  b.batch = atoll(argv[3]);
  b.n = atoll(argv[4]);
  int reps = atoi(argv[5]);
  b.es = b.f64 ? 8 : b.bf16 ? 2 : 4;
  size_t na = (size_t)(b.batch * b.n * b.n);
  /* random symmetric (diagonally dominant, so also SPD for Cholesky) */
  double *h = malloc(na * sizeof(double));
  bench_sym_batch(h, b.batch, b.n, 7);
  if (b.bf16) /* packed in place, as bench_pack_float */
    for (size_t i = 0; i < na; i++) ((unsigned short *)h)[i] = gstat_f32_to_bf16((float)h[i]);
  else if (!b.f64)
    bench_pack_float(h, na);
  /* the same matrices for the anchors timed elsewhere (torch, CuPy) */
  if (argc > 6 && strcmp(argv[6], "-")) {
    FILE *f = fopen(argv[6], "wb");
    if (!f || fwrite(h, b.es, na, f) != na || fclose(f) != 0) {
      fprintf(stderr, "cannot write %s\n", argv[6]);
      return 1;
    }
  }
  CK(cudaMalloc(&b.a0, na * b.es));
  CK(cudaMalloc(&b.a, na * b.es));
  CK(cudaMalloc(&b.v, na * b.es));
  CK(cudaMalloc(&b.w, (size_t)(b.batch * b.n) * b.es));
  CK(cudaMalloc((void **)&b.info, sizeof(int) * (size_t)b.batch));
  CK(cudaMemcpy(b.a0, h, na * b.es, cudaMemcpyHostToDevice));
  b.ctx = bench_gpu_ctx();
  b.nrhs = argc > 7 && is_solve(&b) ? atoll(argv[7]) : 1;
  if (is_solve(&b)) {
    if (b.bf16 || b.nrhs < 1) return 2;
    solve_setup(&b);
  }
  run_fn gstat_run = is_solve(&b) ? run_gstat_solve : run_gstat;
  size_t free0, total, free1;
  CK(cudaMemGetInfo(&free0, &total));
  if (gstat_run(&b)) return 1;
  CK(cudaMemGetInfo(&free1, &total));
  runner rs[6];
  int nr = 0;
  rs[nr++] = (runner){"gstat_ms", gstat_run, NULL, false};
  if (is_solve(&b)) {
    cusolverDnCreate(&b.h);
    cusolverDnCreateParams(&b.p);
    rs[nr++] = (runner){"trsmBatched_ms", run_trsm_batched, NULL, false};
    if (b.batch <= 64)
      rs[nr++] = !strcmp(b.op, "trsm") ? (runner){"trsm_loop_ms", run_trsm_loop, NULL, false}
                                       : (runner){"xpotrs_loop_ms", run_xpotrs_loop, NULL, false};
  } else if (argc > 7 && !strcmp(argv[7], "upper"))
    rs[nr++] = (runner){"gstat_upper_ms", run_gstat_upper, NULL, false};
  if (!b.bf16 && !is_solve(&b)) {
    cusolverDnCreate(&b.h);
    cusolverDnCreateParams(&b.p);
    cudaDataType t = b.f64 ? CUDA_R_64F : CUDA_R_32F;
    size_t dev = 0, host = 0;
    if (!strcmp(b.op, "cholesky")) {
      void **hp = malloc(sizeof(void *) * (size_t)b.batch);
      for (int64_t k = 0; k < b.batch; k++) hp[k] = (char *)b.a + (size_t)(k * b.n * b.n) * b.es;
      CK(cudaMalloc((void **)&b.ptrs, sizeof(void *) * (size_t)b.batch));
      CK(cudaMemcpy(b.ptrs, hp, sizeof(void *) * (size_t)b.batch, cudaMemcpyHostToDevice));
      free(hp);
      if (b.n < 4096) rs[nr++] = (runner){"potrfBatched_ms", run_potrf_batched, NULL, false};
      if (b.batch <= 64 &&
          cusolverDnXpotrf_bufferSize(b.h, b.p, CUBLAS_FILL_MODE_LOWER, b.n, t, b.a, b.n, t, &dev,
                                      &host) == CUSOLVER_STATUS_SUCCESS) {
        need(&b, dev, host);
        rs[nr++] = (runner){"xpotrf_loop_ms", run_xpotrf_loop, NULL, false};
      }
    } else {
      /* every workspace before the first round: need() reallocates */
      if (b.n * b.n * b.batch <= 2147483647LL &&
          cusolverDnXsyevBatched_bufferSize(b.h, b.p, CUSOLVER_EIG_MODE_VECTOR,
                                            CUBLAS_FILL_MODE_LOWER, b.n, t, b.a, b.n, t, b.w, t,
                                            &dev, &host, b.batch) == CUSOLVER_STATUS_SUCCESS) {
        need(&b, dev, host);
        rs[nr++] = (runner){"syevBatched_ms", run_syev_batched, NULL, false};
      }
      if (b.n <= 32) {
        int lwork = 0;
        cusolverDnCreateSyevjInfo(&b.j);
        if (b.f64)
          cusolverDnDsyevjBatched_bufferSize(b.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                             (int)b.n, b.a, (int)b.n, b.w, &lwork, b.j,
                                             (int)b.batch);
        else
          cusolverDnSsyevjBatched_bufferSize(b.h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                             (int)b.n, b.a, (int)b.n, b.w, &lwork, b.j,
                                             (int)b.batch);
        need(&b, (size_t)lwork * b.es, 0);
        rs[nr++] = (runner){"syevjBatched_ms", run_syevj_batched, NULL, false};
      }
      if (b.batch <= 64 && cusolverDnXsyevd_bufferSize(
                               b.h, b.p, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, b.n, t,
                               b.a, b.n, t, b.w, t, &dev, &host) == CUSOLVER_STATUS_SUCCESS) {
        need(&b, dev, host);
        rs[nr++] = (runner){"syevd_loop_ms", run_syevd_loop, NULL, false};
      }
    }
  }
  double med[6];
  time_rounds(rs, nr, &b, reps, med);
  for (int k = 0; k < nr; k++)
    if (!isnan(med[k])) printf("%s=%.4f ", rs[k].key, med[k]);
  printf("gstat_device_MiB=%.1f ", (double)(free0 - free1) / 1048576.0);
  /* the caller's A, w and V (gstat's footprint adds to these) */
  printf("caller_MiB=%.1f\n", (double)((2 * na + (size_t)(b.batch * b.n)) * b.es) / 1048576.0);
  return 0;
}
