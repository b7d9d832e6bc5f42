/* One float64 matrix by the two-stage reduction (two_stage.h). */
#include "backend/cuda/two_stage.h"

#include "backend/cuda/kernels/band_reflectors.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/kernels/sb2st.h"
#include "backend/cuda/tridiag_step.h"

enum {
  kB = GSTAT_CU_SB2ST_BAND,
  kMerge = 4, /* Q1 is applied kMerge panels at a time */
};
_Static_assert(GSTAT_CU_SB2ST_BAND <= GSTAT_CU_SYTRD_PANEL,
               "a panel's T comes from gstat_cu_larft");

/* The device workspace, in bytes from its start. */
typedef struct {
  size_t d, e, tau, ab, vs, taus, progress, z, q, pv, px, pw, g, m, t, vbig, gbig, tbig, qr, total;
  gstat_cu_tridiag_parts tri;
  gstat_cu_sb2st_q2_parts q2;
} layout;

static layout device_layout(int64_t n, size_t qr_bytes) {
  layout l;
  size_t at = 0, dn = sizeof(double) * (size_t)n, steps = (size_t)gstat_cu_sb2st_steps(n);
  l.d = gstat_cu_ws_part(&at, dn);
  l.e = gstat_cu_ws_part(&at, dn);
  l.tau = gstat_cu_ws_part(&at, dn);
  l.ab = gstat_cu_ws_part(&at, dn * 2 * kB);
  l.vs = gstat_cu_ws_part(&at, dn * steps * kB);
  l.taus = gstat_cu_ws_part(&at, dn * steps);
  l.progress = gstat_cu_ws_part(&at, sizeof(int) * (size_t)n);
  l.z = gstat_cu_ws_part(&at, dn * (size_t)n); /* the tridiagonal eigenvectors */
  /* Q1 Q2, with the columns Q2's last groups run into */
  l.q = gstat_cu_ws_part(&at, dn * (size_t)(n + gstat_cu_sb2st_q2_pad()));
  l.pv = gstat_cu_ws_part(&at, dn * kB); /* a panel's V */
  l.px = gstat_cu_ws_part(&at, dn * kB); /* A22 V */
  l.pw = gstat_cu_ws_part(&at, dn * kMerge * kB);
  l.g = gstat_cu_ws_part(&at, sizeof(double) * kB * kB);
  l.m = gstat_cu_ws_part(&at, sizeof(double) * kB * kB);
  l.t = gstat_cu_ws_part(&at, sizeof(double) * kB * kB);
  l.vbig = gstat_cu_ws_part(&at, dn * kMerge * kB);
  l.gbig = gstat_cu_ws_part(&at, sizeof(double) * kMerge * kB * kMerge * kB);
  l.tbig = gstat_cu_ws_part(&at, sizeof(double) * kMerge * kB * kMerge * kB);
  l.qr = gstat_cu_ws_part(&at, qr_bytes);
  l.tri = gstat_cu_tridiag_parts_at(&at, n, 1, 1);
  l.q2 = gstat_cu_sb2st_q2_parts_at(&at, n);
  l.total = at;
  return l;
}

int gstat_cu_two_stage_fits(int64_t n) {
  return n >= kB + 3 && n <= GSTAT_CU_TRIDIAG_MAX_N;
}

/* Xgeqrf's workspace for the largest panel, or 0 with *ok = 0. */
static size_t qr_bytes(cusolverDnHandle_t solver, cusolverDnParams_t params, int64_t n,
                       const double *a, size_t *host, int *ok) {
  size_t dev = 0;
  *ok = cusolverDnXgeqrf_bufferSize(solver, params, n - kB, kB, CUDA_R_64F, a, n, CUDA_R_64F, a,
                                    CUDA_R_64F, &dev, host) == CUSOLVER_STATUS_SUCCESS;
  return dev;
}

size_t gstat_cu_two_stage_bytes(cusolverDnHandle_t solver, cusolverDnParams_t params, int64_t n,
                                const double *a, size_t *host_bytes) {
  int ok = 0;
  *host_bytes = 0;
  if (!gstat_cu_two_stage_fits(n)) return 0;
  size_t dev = qr_bytes(solver, params, n, a, host_bytes, &ok);
  return ok ? device_layout(n, dev).total : 0;
}

#define BLAS(call, name) GSTAT_CU_LIB_STEP(call, CUBLAS_STATUS_SUCCESS, name)
#define SOLVER(call, name) GSTAT_CU_LIB_STEP(call, CUSOLVER_STATUS_SUCCESS, name)

typedef struct {
  const gstat_cu_two_stage_args *a;
  char *base;
  layout l;
  size_t qr_dev, qr_host;
} run;

static double *part(const run *r, size_t offset) {
  return (double *)(r->base + offset);
}

/* Stage 1: A (lower) -> band of half-width kB in place; each panel's
 * reflectors stay below the band, tau in l.tau. Per panel: V from Xgeqrf,
 * X = A22 V, W = X T, M = T^T (V^T W), W -= V M / 2, A22 -= W V^T + V W^T
 * (full-matrix gemms instead of symm / syr2k were no faster:
 * bench/README.md, "Measurements moved from code comments"). */
static cudaError_t reduce_to_band(const run *r, const char **what) {
  const gstat_cu_two_stage_args *a = r->a;
  const double one = 1.0, zero = 0.0, minus_one = -1.0, minus_half = -0.5;
  const int64_t n = a->n;
  double *v = part(r, r->l.pv), *x = part(r, r->l.px), *w = part(r, r->l.pw);
  double *g = part(r, r->l.g), *m = part(r, r->l.m), *t = part(r, r->l.t);
  int *info = (int *)part(r, r->l.progress); /* free until stage 2 */
  cudaError_t err;
  for (int64_t k = 0; k + kB + 2 <= n; k += kB) {
    const int64_t rows = n - k - kB, cols = rows < kB ? rows : kB;
    double *panel = a->a + (k + kB) + k * n, *a22 = a->a + (k + kB) + (k + kB) * n;
    double *tau = part(r, r->l.tau) + k;
    const int mi = (int)rows, ri = (int)cols, ni = (int)n;
    SOLVER(
        cusolverDnXgeqrf(a->solver, a->params, rows, kB, CUDA_R_64F, panel, n, CUDA_R_64F, tau,
                         CUDA_R_64F, part(r, r->l.qr), r->qr_dev, a->host_work, r->qr_host, info),
        "cusolverDnXgeqrf");
    GSTAT_CU_STEP(gstat_cu_explicit_v(panel, n, v, rows, cols, rows, a->stream), "panel vectors");
    BLAS(cublasDgemm(a->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, v, mi, v, mi, &zero, g,
                     ri),
         "panel Gram matrix");
    GSTAT_CU_STEP(gstat_cu_larft(2, g, tau, t, ri, n, 1, a->stream), "panel T");
    BLAS(cublasDsymm(a->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, mi, ri, &one, a22, ni, v,
                     mi, &zero, x, mi),
         "A22 V");
    BLAS(cublasDtrmm(a->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                     CUBLAS_DIAG_NON_UNIT, mi, ri, &one, t, ri, x, mi, w, mi),
         "X T");
    BLAS(cublasDgemm(a->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, v, mi, w, mi, &zero, g,
                     ri),
         "V^T W");
    BLAS(cublasDtrmm(a->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                     CUBLAS_DIAG_NON_UNIT, ri, ri, &one, t, ri, g, ri, m, ri),
         "T^T V^T W");
    BLAS(cublasDgemm(a->blas, CUBLAS_OP_N, CUBLAS_OP_N, mi, ri, ri, &minus_half, v, mi, m, ri, &one,
                     w, mi),
         "W - V M / 2");
    BLAS(cublasDsyr2k(a->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, mi, ri, &minus_one, w, mi, v,
                      mi, &one, a22, ni),
         "A22 update");
  }
  return cudaSuccess;
}

static int64_t panel_count(int64_t n) {
  int64_t p = 0;
  for (int64_t k = 0; k + kB + 2 <= n; k += kB) p++;
  return p;
}

/* Q1 (n x n, ld n) from the reflectors reduce_to_band left in A, kMerge
 * panels at a time: their reflectors, stacked (each panel kB rows below the
 * one before), form one block reflector with its own T, so the gemms are
 * kMerge times wider and kMerge times fewer. Q = H_0 H_1 ... I is built
 * from the last block: a block at column k0 meets only the columns from
 * k0 + kB on (the ones before are still columns of I), as LAPACK's dorgqr. */
static cudaError_t form_q1(const run *r, double *q, cudaStream_t st, cublasHandle_t blas,
                           const char **what) {
  const gstat_cu_two_stage_args *a = r->a;
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  const int64_t n = a->n, np = panel_count(n);
  double *vbig = part(r, r->l.vbig), *gbig = part(r, r->l.gbig), *tbig = part(r, r->l.tbig);
  double *w = part(r, r->l.pw) /* kMerge kB x n */, *tau = part(r, r->l.tau);
  cudaError_t err;
  GSTAT_CU_STEP(cudaMemsetAsync(q, 0, sizeof(double) * (size_t)(n * n), st), "clearing Q");
  GSTAT_CU_STEP(gstat_cu_unit_diagonal(q, n, n, st), "Q = I");
  BLAS(cublasSetStream(blas, st), "cuBLAS stream");
  for (int64_t p0 = ((np - 1) / kMerge) * kMerge; p0 >= 0; p0 -= kMerge) {
    const int64_t k0 = p0 * kB, m0 = n - k0 - kB;
    int64_t R = 0;
    GSTAT_CU_STEP(cudaMemsetAsync(vbig, 0, sizeof(double) * (size_t)(m0 * kMerge * kB), st),
                  "clearing Q1's vectors");
    for (int64_t p = p0; p < p0 + kMerge && p < np; p++) {
      const int64_t k = p * kB, rows = n - k - kB, cols = rows < kB ? rows : kB, off = k - k0;
      GSTAT_CU_STEP(gstat_cu_explicit_v(a->a + (k + kB) + k * n, n, vbig + off + off * m0, rows,
                                        cols, m0, st),
                    "Q1's vectors");
      R += cols;
    }
    const int mi = (int)m0, ri = (int)R, ni = (int)n;
    double *qs = q + (k0 + kB) + (k0 + kB) * n; /* rows and columns from k0 + kB */
    BLAS(cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, vbig, mi, vbig, mi, &zero,
                     gbig, ri),
         "Q1 Gram matrix");
    GSTAT_CU_STEP(gstat_cu_larft_rows(gbig, tau + k0, tbig, ri, st), "Q1's T");
    /* Y = V^T Q; Y = T Y; Q -= V Y */
    BLAS(cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, mi, mi, &one, vbig, mi, qs, ni, &zero, w,
                     ri),
         "V^T Q");
    BLAS(cublasDtrmm(blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                     CUBLAS_DIAG_NON_UNIT, ri, mi, &one, tbig, ri, w, ri, w, ri),
         "T V^T Q");
    BLAS(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, mi, mi, ri, &minus_one, vbig, mi, w, ri, &one,
                     qs, ni),
         "Q1");
  }
  return cudaSuccess;
}

/* One Newton-Schulz step, Z := Z (3 I - Z^T Z) / 2: Z^T Z by syrk into
 * `gram`, a copy of Z in `copy`, the product by symm (3 n^3 flops, not 4). */
static cudaError_t newton_schulz(const run *r, double *z, double *gram, double *copy,
                                 const char **what) {
  const gstat_cu_two_stage_args *a = r->a;
  const double one = 1.0, zero = 0.0, minus_half = -0.5, three_halves = 1.5;
  const int ni = (int)a->n;
  cudaError_t err;
  BLAS(cublasDsyrk(a->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, ni, ni, &one, z, ni, &zero, gram,
                   ni),
       "Z^T Z");
  GSTAT_CU_STEP(cudaMemcpyAsync(copy, z, sizeof(double) * (size_t)(a->n * a->n),
                                cudaMemcpyDeviceToDevice, a->stream),
                "copying Z");
  BLAS(cublasDsymm(a->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, ni, ni, &minus_half, gram,
                   ni, copy, ni, &three_halves, z, ni),
       "Newton-Schulz step");
  return cudaSuccess;
}

static cudaError_t mark(const gstat_cu_two_stage_args *a, int i) {
  return a->marks ? cudaEventRecord(a->marks[i], a->stream) : cudaSuccess;
}

/* The SMs the side stream's gemms target while the chase runs: those the
 * chase leaves, when they are a third of the GPU or more (else all: the
 * side stream's work is then the longer, H200 float64 8192), unless the
 * caller says otherwise (a->side_sms). */
static int side_sm_limit(const gstat_cu_two_stage_args *a) {
  int dev = 0, sms = 0;
  if (!a->side) return 0; /* after the chase */
  if (a->side_sms >= 0) return a->side_sms;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    cudaGetLastError(); /* not for a later launch to report */
    return 0;
  }
  const int64_t left = sms - gstat_cu_sb2st_blocks(a->n, sms);
  return 3 * left >= sms ? (int)left : 0;
}

/* The side stream's part, while the main stream chases the bulges (which
 * leaves most SMs idle) and solves T: Q1 once the band is there, then Q1
 * Q2, each wavefront of stage 2's reflectors as soon as the chase has made
 * them (it waits on the chase's progress counters on the device). ev[1]
 * follows whatever was queued, even on failure. */
static cudaError_t side_q(const run *r, cudaStream_t side, cublasHandle_t blas, const char **what) {
  const gstat_cu_two_stage_args *a = r->a;
  const int limit = side_sm_limit(a);
  cudaError_t err = cudaStreamWaitEvent(side, a->ev[0], 0);
  if (err != cudaSuccess)
    *what = "waiting for the band";
  else if (cublasSetSmCountTarget(blas, limit) != CUBLAS_STATUS_SUCCESS)
    *what = "cuBLAS SM target", err = cudaErrorUnknown;
  else if ((err = form_q1(r, part(r, r->l.q), side, blas, what)) == cudaSuccess &&
           (err = gstat_cu_sb2st_q2_right(r->base, &r->l.q2, a->n, blas, part(r, r->l.vs),
                                          part(r, r->l.taus), (const int *)part(r, r->l.progress),
                                          limit, part(r, r->l.q), side)) != cudaSuccess)
    *what = "stage 2 back-transformation";
  cudaError_t rec = cudaEventRecord(a->ev[1], side);
  if (err == cudaSuccess && rec != cudaSuccess) *what = "event";
  cublasSetSmCountTarget(blas, 0); /* whatever happened above */
  return err != cudaSuccess ? err : rec;
}

/* After the chase, on the main stream: T's eigenvectors Z (*degenerate:
 * stop there), their Newton-Schulz step, then (Q1 Q2) Z into A. */
static cudaError_t vectors(const run *r, cudaStream_t side, cublasHandle_t side_blas,
                           int *degenerate, const char **what) {
  const gstat_cu_two_stage_args *a = r->a;
  const int64_t n = a->n;
  double *z = part(r, r->l.z);
  gstat_cu_tridiag_step_args t = {.cdt = 2,
                                  .n = n,
                                  .nb = 1,
                                  .d = part(r, r->l.d),
                                  .e = part(r, r->l.e),
                                  .base = r->base,
                                  .parts = r->l.tri,
                                  .w = a->w,
                                  .info = a->info,
                                  .X = z,
                                  .gap_tol = a->gap_tol,
                                  .host_flag = a->host_flag,
                                  .clusters = a->clusters,
                                  .stream = a->stream};
  cudaError_t err = gstat_cu_tridiag_step(&t, degenerate, what);
  if (err != cudaSuccess || *degenerate) return err;
  GSTAT_CU_STEP(mark(a, 2), "event");
  /* the step's own scratch is free again: Z^T Z and the copy of Z there */
  if ((err = newton_schulz(r, z, part(r, r->l.tri.zt), part(r, r->l.tri.u), what)) != cudaSuccess)
    return err;
  GSTAT_CU_STEP(mark(a, 3), "event");
  if (!a->side && (err = side_q(r, side, side_blas, what)) != cudaSuccess) return err;
  GSTAT_CU_STEP(cudaStreamWaitEvent(a->stream, a->ev[1], 0), "waiting for Q1 Q2");
  GSTAT_CU_STEP(mark(a, 4), "event");
  const double one = 1.0, zero = 0.0;
  const int ni = (int)n;
  BLAS(cublasSetStream(a->blas, a->stream), "cuBLAS stream");
  BLAS(cublasDgemm(a->blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, part(r, r->l.q), ni, z, ni,
                   &zero, a->a, ni),
       "Q1 Q2 Z");
  return mark(a, 5);
}

cudaError_t gstat_cu_two_stage(const gstat_cu_two_stage_args *a, int *degenerate,
                               const char **what) {
  const int64_t n = a->n;
  int ok = 0;
  run r = {.a = a, .base = a->work};
  *degenerate = 0;
  if (gstat_cu_two_stage_fits(n))
    r.qr_dev = qr_bytes(a->solver, a->params, n, a->a, &r.qr_host, &ok);
  if (!ok || !a->host_flag || (r.qr_host && !a->host_work)) {
    *what = "arguments";
    return cudaErrorInvalidValue;
  }
  r.l = device_layout(n, r.qr_dev);
  double *d = part(&r, r.l.d), *e = part(&r, r.l.e), *ab = part(&r, r.l.ab);
  double *vs = part(&r, r.l.vs), *taus = part(&r, r.l.taus);
  double *sigma = part(&r, r.l.tri.sigma), *scratch = part(&r, r.l.tri.norms);
  cudaStream_t side = a->side ? a->side : a->stream;
  cublasHandle_t side_blas = a->side ? a->side_blas : a->blas;
  cudaError_t err;
  SOLVER(cusolverDnSetStream(a->solver, a->stream), "cuSOLVER stream");
  BLAS(cublasSetStream(a->blas, a->stream), "cuBLAS stream");
  /* LAPACK's scaling of extreme magnitudes */
  GSTAT_CU_STEP(gstat_cu_sytrd_scale(2, a->a, n, 1, scratch, sigma, a->stream), "scaling");
  if ((err = reduce_to_band(&r, what)) != cudaSuccess) return err;
  GSTAT_CU_STEP(mark(a, 0), "event");
  /* the chase's progress counters (Xgeqrf's info above) are zero before
   * the side stream may look at them */
  GSTAT_CU_STEP(cudaMemsetAsync(part(&r, r.l.progress), 0, sizeof(int) * (size_t)n, a->stream),
                "clearing the progress counters");
  GSTAT_CU_STEP(cudaEventRecord(a->ev[0], a->stream), "event");
  GSTAT_CU_STEP(gstat_cu_sb2st_load(a->a, n, n, ab, a->stream), "band copy");
  GSTAT_CU_STEP(
      gstat_cu_sb2st_reduce(ab, n, vs, taus, (int *)part(&r, r.l.progress), d, e, a->stream),
      "bulge chasing");
  GSTAT_CU_STEP(mark(a, 1), "event");
  err = cudaSuccess;
  /* the side stream's work goes in after the chase, which waits for room
   * for all its blocks (a cooperative launch): a wait of the side stream
   * on its counters then never holds the room the chase needs */
  if (a->side) err = side_q(&r, side, side_blas, what);
  if (err == cudaSuccess) err = vectors(&r, side, side_blas, degenerate, what);
  /* nothing may outlive the call on the side stream: the caller reuses the
   * workspace (on success the last product waited already; else wait on the
   * host, which does not depend on ev[1] having been recorded) */
  if (a->side && (err != cudaSuccess || *degenerate)) cudaStreamSynchronize(a->side);
  return err;
}
