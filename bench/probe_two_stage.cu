/*
 * probe_two_stage N B REPS [GROUP]
 *
 * A two-stage float64 eigensolver of one matrix, piece by piece, against
 * Xsyevd on the same matrix (bench_cuda's, sym_batch.h):
 *   1. dense A (lower) to a band of half-bandwidth B by block reflectors
 *      (cuSOLVER Xgeqrf per panel of B columns, cuBLAS symm / syr2k for
 *      the two-sided update);
 *   2. band to tridiagonal by bulge chasing (kernels/sb2st.cu);
 *   3. our tridiagonal step (bisection, twisted factorizations), then one
 *      Newton-Schulz step (syrk, symm);
 *   4. the vectors back through stage 2's reflectors (kernels/sb2st.cu),
 *      GROUP sweeps' reflectors at a time (default 32), batched gemms on
 *      Z^T;
 *   5. and through stage 1's (cuBLAS gemm / trmm, four panels at a time).
 * Median ms of each part over REPS (CUDA events), then the checks: the
 * eigenvalues against Xsyevd's, max |A z - w z| / max|A| and
 * max |Z^T Z - I|.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include "linalg/cuda/kernels/kernels.h"
#include "linalg/cuda/kernels/sb2st.h"
extern "C" {
#include "linalg/cuda/tridiag_step.h" /* a C header without C++ guards */
}
#include "probe_util.h"
#include "sym_batch_device.h"

#define CB(x)                                                       \
  do {                                                              \
    cublasStatus_t s_ = (x);                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                              \
      fprintf(stderr, "%s:%d cuBLAS %d\n", __FILE__, __LINE__, s_); \
      exit(1);                                                      \
    }                                                               \
  } while (0)
#define CS(x)                                                         \
  do {                                                                \
    cusolverStatus_t s_ = (x);                                        \
    if (s_ != CUSOLVER_STATUS_SUCCESS) {                              \
      fprintf(stderr, "%s:%d cuSOLVER %d\n", __FILE__, __LINE__, s_); \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

/* The panel's reflectors as an explicit m x r matrix (unit diagonal, zeros
 * above), from geqrf's compact form in p (leading dimension ld). */
__global__ void explicit_v(const double *p, int64_t ld, double *v, int64_t m, int64_t r,
                           int64_t ldv) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i >= m) return;
  v[i + j * ldv] = i > j ? p[i + j * ld] : (i == j ? 1.0 : 0.0);
}

/* The block reflector's upper triangular T (r x r, ld r) from G = V^T V and
 * tau: T(j,j) = tau_j, T(j,i) = -tau_i sum_{l=j}^{i-1} T(j,l) G(l,i).
 * Row j depends on row j alone, so one thread per row and no barrier. */
__global__ void larft_rows(const double *g, const double *tau, double *t, int r) {
  int j = threadIdx.x;
  if (j >= r) return;
  for (int i = 0; i < j; i++) t[j + i * r] = 0.0;
  t[j + j * r] = tau[j];
  for (int i = j + 1; i < r; i++) {
    double s = 0.0;
    for (int l = j; l < i; l++) s += t[j + l * r] * g[l + i * r];
    t[j + i * r] = -tau[i] * s;
  }
}

/* Zero the lower triangle below the band (row - col > b): what is left is
 * the band matrix, lower storage. */
__global__ void keep_band(double *a, int64_t n, int64_t b) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i < n && i - j > b) a[i + j * n] = 0.0;
}

/* r(:, j) -= w_j z(:, j): the residual's eigenvalue term. */
__global__ void sub_scaled(double *r, const double *z, const double *w, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, j = blockIdx.y;
  if (i < n) r[i + j * n] -= w[j] * z[i + j * n];
}

/* r -= I */
__global__ void minus_identity(double *r, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) r[i + i * n] -= 1.0;
}

/* Q1 is applied kMerge panels at a time (stage1_apply) */
enum { kMerge = 4 };

typedef struct {
  int64_t n, b;
  cublasHandle_t blas;
  cusolverDnHandle_t solver;
  cusolverDnParams_t params;
  cudaStream_t st;
  double *v, *x, *w, *g, *m, *tau, *t_all; /* t_all: every panel's T, b x b each */
  double *vbig, *gbig, *tbig;              /* Q1's merged panels */
  void *qr_ws, *qr_host;
  size_t qr_bytes, qr_host_bytes;
  int *info;
} stage1;

static int64_t panels(const stage1 *s) {
  int64_t p = 0;
  for (int64_t k = 0; k + s->b + 2 <= s->n; k += s->b) p++;
  return p;
}

static void stage1_init(stage1 *s, int64_t n, int64_t b) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->b = b;
  CK(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
  CB(cublasCreate(&s->blas));
  CB(cublasSetStream(s->blas, s->st));
  CS(cusolverDnCreate(&s->solver));
  CS(cusolverDnSetStream(s->solver, s->st));
  CS(cusolverDnCreateParams(&s->params));
  size_t mb = sizeof(double) * (size_t)(n * b);
  CK(cudaMalloc((void **)&s->v, mb));
  CK(cudaMalloc((void **)&s->vbig, mb * kMerge));
  CK(cudaMalloc((void **)&s->gbig, sizeof(double) * (size_t)(kMerge * b * kMerge * b)));
  CK(cudaMalloc((void **)&s->tbig, sizeof(double) * (size_t)(kMerge * b * kMerge * b)));
  CK(cudaMalloc((void **)&s->x, mb));
  CK(cudaMalloc((void **)&s->w, sizeof(double) * (size_t)(b > n ? b : n) * (size_t)n));
  CK(cudaMalloc((void **)&s->g, sizeof(double) * (size_t)(b * b)));
  CK(cudaMalloc((void **)&s->m, sizeof(double) * (size_t)(b * b)));
  CK(cudaMalloc((void **)&s->tau, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&s->t_all, sizeof(double) * (size_t)(b * b) * (size_t)(panels(s) + 1)));
  CK(cudaMalloc((void **)&s->info, sizeof(int)));
  CS(cusolverDnXgeqrf_bufferSize(s->solver, s->params, n - b, b, CUDA_R_64F, s->x, n, CUDA_R_64F,
                                 s->tau, CUDA_R_64F, &s->qr_bytes, &s->qr_host_bytes));
  CK(cudaMalloc(&s->qr_ws, s->qr_bytes + 1));
  s->qr_host = malloc(s->qr_host_bytes + 1);
}

/* A (n x n, ld n, lower) -> band B of half-bandwidth b in place; the
 * reflectors stay below the band, their T in s->t_all, tau in s->tau. */
static void stage1_reduce(stage1 *s, double *a) {
  const double one = 1.0, zero = 0.0, minus_one = -1.0, minus_half = -0.5;
  int64_t n = s->n, b = s->b, p = 0;
  for (int64_t k = 0; k + b + 2 <= n; k += b, p++) {
    int64_t m = n - k - b, r = m < b ? m : b;
    double *panel = a + (k + b) + k * n, *a22 = a + (k + b) + (k + b) * n, *tau = s->tau + k;
    double *t = s->t_all + p * b * b;
    CS(cusolverDnXgeqrf(s->solver, s->params, m, b, CUDA_R_64F, panel, n, CUDA_R_64F, tau,
                        CUDA_R_64F, s->qr_ws, s->qr_bytes, s->qr_host, s->qr_host_bytes, s->info));
    explicit_v<<<dim3((unsigned)((m + 255) / 256), (unsigned)r), 256, 0, s->st>>>(panel, n, s->v, m,
                                                                                  r, m);
    int mi = (int)m, ri = (int)r;
    CB(cublasDgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, s->v, mi, s->v, mi, &zero,
                   s->g, ri));
    larft_rows<<<1, 1024, 0, s->st>>>(s->g, tau, t, ri);
    /* X = A22 V; W = X T; M = T^T (V^T W); W -= V M / 2; A22 -= W V^T + V W^T
     * (full-matrix gemms instead of symm / syr2k were no faster: 39.2
     * against 39.9 ms at 4096) */
    CB(cublasDsymm(s->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, mi, ri, &one, a22, (int)n,
                   s->v, mi, &zero, s->x, mi));
    CB(cublasDtrmm(s->blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                   CUBLAS_DIAG_NON_UNIT, mi, ri, &one, t, ri, s->x, mi, s->w, mi));
    CB(cublasDgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, s->v, mi, s->w, mi, &zero,
                   s->g, ri));
    CB(cublasDtrmm(s->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                   CUBLAS_DIAG_NON_UNIT, ri, ri, &one, t, ri, s->g, ri, s->m, ri));
    CB(cublasDgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, mi, ri, ri, &minus_half, s->v, mi, s->m, ri,
                   &one, s->w, mi));
    CB(cublasDsyr2k(s->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, mi, ri, &minus_one, s->w, mi,
                    s->v, mi, &one, a22, (int)n));
  }
}

/* Z <- Q1 Z (Z n x n, ld n) from the reflectors stage1_reduce left in a,
 * kMerge panels at a time: their reflectors, stacked (each panel b rows
 * below the one before), form one block reflector with its own T, so the
 * gemms are kMerge times wider and kMerge times fewer. */
static void stage1_apply(stage1 *s, const double *a, double *z) {
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  int64_t n = s->n, b = s->b, np = panels(s);
  for (int64_t p0 = ((np - 1) / kMerge) * kMerge; p0 >= 0; p0 -= kMerge) {
    int64_t k0 = p0 * b, m0 = n - k0 - b, R = 0;
    CK(cudaMemsetAsync(s->vbig, 0, sizeof(double) * (size_t)(m0 * kMerge * b), s->st));
    for (int64_t p = p0; p < p0 + kMerge && p < np; p++) {
      int64_t k = p * b, m = n - k - b, r = m < b ? m : b, off = k - k0;
      explicit_v<<<dim3((unsigned)((m + 255) / 256), (unsigned)r), 256, 0, s->st>>>(
          a + (k + b) + k * n, n, s->vbig + off + off * m0, m, r, m0);
      R += r;
    }
    int mi = (int)m0, ri = (int)R, ni = (int)n;
    double *zs = z + (k0 + b);
    CB(cublasDgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ri, mi, &one, s->vbig, mi, s->vbig, mi,
                   &zero, s->gbig, ri));
    larft_rows<<<1, 1024, 0, s->st>>>(s->gbig, s->tau + k0, s->tbig, ri);
    /* Y = V^T Z; Y = T Y; Z -= V Y */
    CB(cublasDgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, ri, ni, mi, &one, s->vbig, mi, zs, ni, &zero,
                   s->w, ri));
    CB(cublasDtrmm(s->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                   CUBLAS_DIAG_NON_UNIT, ri, ni, &one, s->tbig, ri, s->w, ri, s->w, ri));
    CB(cublasDgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, mi, ni, ri, &minus_one, s->vbig, mi, s->w, ri,
                   &one, zs, ni));
  }
}

/* Eigenvalues (and vectors when jobz) of a (n x n, lower) by Xsyevd. */
static void syevd(stage1 *s, double *a, double *w, cusolverEigMode_t jobz, probe_ws *ws) {
  size_t db, hb;
  CS(cusolverDnXsyevd_bufferSize(s->solver, s->params, jobz, CUBLAS_FILL_MODE_LOWER, s->n,
                                 CUDA_R_64F, a, s->n, CUDA_R_64F, w, CUDA_R_64F, &db, &hb));
  probe_ws_reserve(ws, db, hb);
  CS(cusolverDnXsyevd(s->solver, s->params, jobz, CUBLAS_FILL_MODE_LOWER, s->n, CUDA_R_64F, a, s->n,
                      CUDA_R_64F, w, CUDA_R_64F, ws->dev, db, ws->host, hb, s->info));
}

static double max_abs(const double *d, size_t count) {
  double *h = (double *)malloc(sizeof(double) * count), m = 0;
  CK(cudaMemcpy(h, d, sizeof(double) * count, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; i++) m = fmax(m, fabs(h[i]));
  free(h);
  return m;
}

enum { PARTS = 7 };
static const char *part_name[PARTS] = {"sy2sb", "sb2st", "tridiagonal", "NS", "Q2", "Q1", "Xsyevd"};

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: probe_two_stage N B REPS [GROUP]\n");
    return 2;
  }
  int64_t n = atoll(argv[1]), b = atoll(argv[2]), group = argc == 5 ? atoll(argv[4]) : 32;
  int reps = atoi(argv[3]);
  size_t nn = (size_t)(n * n), bytes = sizeof(double) * nn;
  int64_t steps = gstat_cu_sb2st_steps(n, b);
  double *a0 = (double *)bench_sym_batch_device(1, n, 1), *a, *z, *z2, *r, *w, *wref, *ab, *vs,
         *taus, *d, *e;
  int *progress, *host_flag;
  CK(cudaMalloc((void **)&a, bytes));
  CK(cudaMalloc((void **)&z, bytes));
  CK(cudaMalloc((void **)&z2, bytes));
  CK(cudaMalloc((void **)&r, bytes));
  CK(cudaMalloc((void **)&w, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&wref, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&d, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&e, sizeof(double) * (size_t)n));
  CK(cudaMalloc((void **)&ab, sizeof(double) * (size_t)(2 * b * n)));
  CK(cudaMalloc((void **)&vs, sizeof(double) * (size_t)(n * steps * b)));
  CK(cudaMalloc((void **)&taus, sizeof(double) * (size_t)(n * steps)));
  gstat_cu_sb2st_q2 *q2 = gstat_cu_sb2st_q2_plan(n, b, group);
  if (!q2) {
    fprintf(stderr, "no Q2 plan\n");
    return 1;
  }
  CK(cudaMalloc((void **)&progress, sizeof(int) * (size_t)n));
  CK(cudaMallocHost((void **)&host_flag, sizeof(int)));
  size_t at = 0;
  gstat_cu_tridiag_parts parts = gstat_cu_tridiag_parts_at(&at, n, 1, 1);
  char *base;
  CK(cudaMalloc((void **)&base, at));
  stage1 s;
  stage1_init(&s, n, b);
  probe_ws ws;
  memset(&ws, 0, sizeof ws);
  cudaEvent_t ev[PARTS + 1];
  for (int i = 0; i <= PARTS; i++) CK(cudaEventCreate(&ev[i]));
  float *ms = (float *)malloc(sizeof(float) * (size_t)(PARTS * reps));
  int degenerate = 0;
  for (int rep = -1; rep < reps; rep++) {
    CK(cudaMemcpyAsync(a, a0, bytes, cudaMemcpyDeviceToDevice, s.st));
    CK(cudaEventRecord(ev[0], s.st));
    /* gstat's scaling of extreme magnitudes (sigma = 1 for these matrices) */
    CK(gstat_cu_sytrd_scale(2, a, n, 1, (double *)(base + parts.norms),
                            (double *)(base + parts.sigma), s.st));
    stage1_reduce(&s, a);
    CK(cudaEventRecord(ev[1], s.st));
    CK(gstat_cu_sb2st_load(a, n, n, b, ab, s.st));
    CK(gstat_cu_sb2st_reduce(ab, n, b, vs, taus, progress, d, e, s.st));
    CK(cudaEventRecord(ev[2], s.st));
    const char *what = "";
    gstat_cu_tridiag_step_args t = {2, n,      1, d,    e,         base, parts,
                                    w, s.info, z, 1e-8, host_flag, s.st};
    cudaError_t err = gstat_cu_tridiag_step(&t, &degenerate, &what);
    if (err != cudaSuccess) {
      fprintf(stderr, "tridiagonal step: %s: %s\n", what, cudaGetErrorString(err));
      return 1;
    }
    CK(cudaEventRecord(ev[3], s.st));
    {
      /* one Newton-Schulz step, as sytrd_eigh.c: Z := Z (3 I - Z^T Z) / 2,
       * Z^T Z by syrk and the product by symm: 3 n^3 flops, not 4 */
      const double one = 1.0, zero = 0.0, m_half = -0.5, three_halves = 1.5;
      int ni = (int)n;
      CB(cublasDsyrk(s.blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, ni, ni, &one, z, ni, &zero, r,
                     ni));
      CK(cudaMemcpyAsync(z2, z, bytes, cudaMemcpyDeviceToDevice, s.st));
      CB(cublasDsymm(s.blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, ni, ni, &m_half, r, ni, z,
                     ni, &three_halves, z2, ni));
      double *tmp = z;
      z = z2;
      z2 = tmp;
    }
    CK(cudaEventRecord(ev[4], s.st));
    CK(gstat_cu_sb2st_q2_apply(q2, s.blas, vs, taus, z, s.st));
    CK(cudaEventRecord(ev[5], s.st));
    stage1_apply(&s, a, z);
    CK(cudaEventRecord(ev[6], s.st));
    CK(cudaMemcpyAsync(r, a0, bytes, cudaMemcpyDeviceToDevice, s.st));
    syevd(&s, r, wref, CUSOLVER_EIG_MODE_VECTOR, &ws);
    CK(cudaEventRecord(ev[7], s.st));
    CK(cudaEventSynchronize(ev[7]));
    if (rep >= 0)
      for (int i = 0; i < PARTS; i++)
        CK(cudaEventElapsedTime(&ms[i * reps + rep], ev[i], ev[i + 1]));
  }
  { /* what the panel factorizations alone cost: every panel shape of stage 1,
     * Xgeqrf and the 32-bit Dgeqrf, on a copy of A */
    int lwork = 0;
    CS(cusolverDnDgeqrf_bufferSize(s.solver, (int)(n - b), (int)b, r, (int)n, &lwork));
    double *work;
    CK(cudaMalloc((void **)&work, sizeof(double) * (size_t)(lwork + 1)));
    float t_x = 0, t_d = 0;
    for (int api = 0; api < 2; api++) {
      CK(cudaMemcpyAsync(r, a0, bytes, cudaMemcpyDeviceToDevice, s.st));
      CK(cudaEventRecord(ev[0], s.st));
      for (int64_t k = 0; k + b + 2 <= n; k += b) {
        double *panel = r + (k + b) + k * n;
        if (api == 0)
          CS(cusolverDnXgeqrf(s.solver, s.params, n - k - b, b, CUDA_R_64F, panel, n, CUDA_R_64F,
                              s.tau + k, CUDA_R_64F, s.qr_ws, s.qr_bytes, s.qr_host,
                              s.qr_host_bytes, s.info));
        else
          CS(cusolverDnDgeqrf(s.solver, (int)(n - k - b), (int)b, panel, (int)n, s.tau + k, work,
                              lwork, s.info));
      }
      CK(cudaEventRecord(ev[1], s.st));
      CK(cudaEventSynchronize(ev[1]));
      CK(cudaEventElapsedTime(api == 0 ? &t_x : &t_d, ev[0], ev[1]));
    }
    printf("panels alone: Xgeqrf %.3f ms, Dgeqrf %.3f ms (%lld panels)\n", t_x, t_d,
           (long long)panels(&s));
    cudaFree(work);
  }
  /* checks */
  double amax = max_abs(a0, nn), wdiff = 0;
  double *hw = (double *)malloc(sizeof(double) * (size_t)n),
         *hwr = (double *)malloc(sizeof(double) * (size_t)n);
  CK(cudaMemcpy(hw, w, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hwr, wref, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < n; i++) wdiff = fmax(wdiff, fabs(hw[i] - hwr[i]));
  const double one = 1.0, zero = 0.0;
  int ni = (int)n;
  dim3 grid((unsigned)((n + 255) / 256), (unsigned)n);
  CB(cublasDsymm(s.blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, ni, ni, &one, a0, ni, z, ni,
                 &zero, r, ni));
  sub_scaled<<<grid, 256, 0, s.st>>>(r, z, w, n);
  CK(cudaStreamSynchronize(s.st));
  double res = max_abs(r, nn) / amax;
  CB(cublasDgemm(s.blas, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni, ni, &one, z, ni, z, ni, &zero, r, ni));
  minus_identity<<<(unsigned)((n + 255) / 256), 256, 0, s.st>>>(r, n);
  CK(cudaStreamSynchronize(s.st));
  double orth = max_abs(r, nn);
  float total = 0;
  printf("| f64 | 1x%lld | band %lld, groups %lld |", (long long)n, (long long)b, (long long)group);
  for (int i = 0; i < PARTS; i++) {
    float m = probe_median_f(ms + i * reps, reps);
    if (i < PARTS - 1) total += m;
    printf(" %s %.3f |", part_name[i], m);
  }
  printf(" two-stage %.3f ms | w diff %.1e | residual %.1e | orthogonality %.1e |%s\n", total,
         wdiff / amax, res, orth, degenerate ? " degenerate |" : "");
  return 0;
}
