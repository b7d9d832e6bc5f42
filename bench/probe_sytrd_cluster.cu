/*
 * probe_sytrd_cluster N REPS
 *
 * An experiment for bench/README.md's owed item 4 (the PCA rows at orders
 * 1000-2000, where cuSOLVER's reduction to tridiagonal form is most of the
 * time): the reduction of one float32 symmetric matrix (lower triangle) by
 * one thread block cluster of 16 blocks (Hopper), the matrix kept in the
 * blocks' shared memory for the whole reduction, against cusolverDnSsytrd on
 * the same matrix in the same rounds. Median ms over REPS (CUDA events);
 * then the checks: d and |e| against cuSOLVER's (relative to max|A|), and
 * with Q formed from our reflectors by cuSOLVER's Sormtr (LAPACK's layout),
 * max|A Q - Q T| / max|A| and max|Q^T Q - I|.
 *
 * The method is LAPACK's unblocked ssytd2 (lower): for each column j a
 * Householder reflector H = I - tau v v^T from A(j+1:n, j), p = tau A22 v,
 * w = p - (tau / 2)(p^T v) v, A22 -= v w^T + w v^T. The lower triangle's
 * columns are spread over the 16 blocks cyclically (block c holds columns
 * c, c + 16, ...), packed; a column costs three cluster barriers: after the
 * owner's reflector, after each block's partial product with its columns
 * (a partial p of all rows), after the slices of p are summed across the
 * blocks (through distributed shared memory) with their parts of p^T v.
 */
#include <cooperative_groups.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include "probe_util.h"

namespace cg = cooperative_groups;

enum { CLUSTER = 16, THREADS = 512, WARPS = THREADS / 32, SCALARS = 64 };
enum { S_TAU = 0, S_DOT = 1 }; /* places in a block's scalars */

/* Floats of shared memory a block needs: four vectors of n, the scalars and
 * its packed columns (the first block's are the most). */
static size_t smem_floats(int n) {
  size_t cols = 0;
  for (int k = 0; k < n; k += CLUSTER) cols += (size_t)(n - k);
  return 4 * (size_t)n + SCALARS + cols;
}

/* Offset of this block's t-th column (k = c + CLUSTER t) in its packing. */
__device__ __forceinline__ int64_t col_offset(int n, int c, int t) {
  return (int64_t)t * n - (int64_t)CLUSTER * t * (t - 1) / 2 - (int64_t)c * t;
}

/* The block's sum of x over its threads (every thread gets it). */
__device__ float block_sum(float x, float *scratch) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  x = lane < WARPS ? scratch[lane] : 0.0f;
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__global__ void __launch_bounds__(THREADS, 1)
    cluster_sytrd(const float *__restrict__ A, int n, float *__restrict__ out, float *d, float *e,
                  float *tau_out) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ float sm[];
  cg::cluster_group cluster = cg::this_cluster();
  const int c = (int)cluster.block_rank(), tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  float *v = sm, *w = v + n, *ppart = w + n, *pslice = ppart + n, *sc = pslice + n;
  float *cols = sc + SCALARS, *red = sc + 8; /* red: the block reductions' 32 floats */
  const int owned = (n - c + CLUSTER - 1) / CLUSTER;
  for (int t = 0; t < owned; t++) { /* the block's columns from A's lower triangle */
    const int k = c + CLUSTER * t;
    float *col = cols + col_offset(n, c, t);
    for (int i = k + tid; i < n; i += THREADS) col[i - k] = A[i + (int64_t)k * n];
  }
  __syncthreads();
  for (int j = 0; j < n - 1; j++) {
    const int o = j % CLUSTER, m = n - j - 1;              /* the owner; rows j+1..n-1 */
    if (c == o) {                                          /* the reflector from A(j+1:n, j) */
      float *x = cols + col_offset(n, c, j / CLUSTER) + 1; /* x[i - j - 1] = A(i, j) */
      const float alpha = x[0]; /* read before the sum's barriers: thread 0 writes it below */
      float part = 0.0f;
      for (int i = 1 + tid; i < m; i += THREADS) part += x[i] * x[i];
      const float xnorm2 = block_sum(part, red);
      float tau = 0.0f, beta = alpha, scal = 0.0f;
      if (xnorm2 > 0.0f) {
        beta = -copysignf(sqrtf(alpha * alpha + xnorm2), alpha);
        tau = (beta - alpha) / beta;
        scal = 1.0f / (alpha - beta);
      }
      for (int i = 1 + tid; i < m; i += THREADS) {
        const float vi = xnorm2 > 0.0f ? x[i] * scal : x[i];
        x[i] = vi;
        v[j + 1 + i] = vi;
      }
      if (tid == 0) {
        d[j] = x[-1];
        e[j] = beta;
        tau_out[j] = tau;
        x[0] = beta;
        v[j + 1] = 1.0f;
        sc[S_TAU] = tau;
      }
    }
    cluster.sync(); /* 1: the reflector is in the owner's v */
    const float *vo = cluster.map_shared_rank(v, o);
    const float tau = *cluster.map_shared_rank(sc + S_TAU, o);
    if (tau == 0.0f) continue; /* H = I: nothing changes (every block sees the same tau) */
    if (c != o)
      for (int i = j + 1 + tid; i < n; i += THREADS) v[i] = vo[i];
    for (int i = j + 1 + tid; i < n; i += THREADS) ppart[i] = 0.0f;
    __syncthreads();
    /* the block's columns k > j: p(i) += A(i,k) v(k) for i >= k, p(k) += A(i,k) v(i) for i > k */
    const int t0 = (j + 1 - c + CLUSTER - 1) / CLUSTER;
    for (int t = t0 + warp; t < owned; t += WARPS) {
      const int k = c + CLUSTER * t;
      const float *col = cols + col_offset(n, c, t), vk = v[k];
      float dot = 0.0f;
#pragma unroll 4
      for (int i = k + lane; i < n; i += 32) {
        const float a = col[i - k];
        if (i > k) dot += a * v[i];
        atomicAdd(&ppart[i], a * vk);
      }
      for (int s = 16; s > 0; s >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, s);
      if (lane == 0) atomicAdd(&ppart[k], dot);
    }
    cluster.sync(); /* 2: every block's partial p */
    const int lo = j + 1 + (int)((int64_t)c * m / CLUSTER),
              hi = j + 1 + (int)((int64_t)(c + 1) * m / CLUSTER);
    float part = 0.0f;
    for (int i = lo + tid; i < hi; i += THREADS) {
      float s = 0.0f;
      for (int r = 0; r < CLUSTER; r++) s += cluster.map_shared_rank(ppart, r)[i];
      s *= tau;
      pslice[i] = s;
      part += s * v[i];
    }
    part = block_sum(part, red);
    if (tid == 0) sc[S_DOT] = part;
    cluster.sync(); /* 3: the slices of p and their parts of p^T v */
    float dot = 0.0f;
    for (int r = 0; r < CLUSTER; r++) dot += cluster.map_shared_rank(sc + S_DOT, r)[0];
    const float alpha2 = -0.5f * tau * dot;
    for (int r = 0; r < CLUSTER; r++) {
      const float *ps = cluster.map_shared_rank(pslice, r);
      const int rlo = j + 1 + (int)((int64_t)r * m / CLUSTER),
                rhi = j + 1 + (int)((int64_t)(r + 1) * m / CLUSTER);
      for (int i = rlo + tid; i < rhi; i += THREADS) w[i] = ps[i] + alpha2 * v[i];
    }
    __syncthreads();
    for (int t = t0 + warp; t < owned; t += WARPS) { /* A22 -= v w^T + w v^T */
      const int k = c + CLUSTER * t;
      float *col = cols + col_offset(n, c, t);
      const float vk = v[k], wk = w[k];
#pragma unroll 4
      for (int i = k + lane; i < n; i += 32) col[i - k] -= v[i] * wk + w[i] * vk;
    }
    __syncthreads();
  }
  if (c == (n - 1) % CLUSTER && tid == 0) d[n - 1] = cols[col_offset(n, c, (n - 1) / CLUSTER)];
  for (int t = 0; t < owned; t++) { /* LAPACK's layout: T's diagonals, the reflectors below */
    const int k = c + CLUSTER * t;
    const float *col = cols + col_offset(n, c, t);
    for (int i = k + tid; i < n; i += THREADS) out[i + (int64_t)k * n] = col[i - k];
  }
  cluster.sync(); /* no block leaves while another may read its shared memory */
#endif
}

static void launch(const float *A, int n, float *out, float *d, float *e, float *tau, size_t smem) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(CLUSTER);
  cfg.blockDim = dim3(THREADS);
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = CLUSTER;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, cluster_sytrd, A, n, out, d, e, tau));
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static float median(float *t, int k) {
  qsort(t, (size_t)k, sizeof(float), cmp_float);
  return t[k / 2];
}

/* max|A Q - Q T| / max|A| and max|Q^T Q - I| in double on the host. */
static void check_q(int n, const float *hA, const float *hQ, const float *d, const float *e,
                    double amax, double *resid, double *orth) {
  double r = 0, q = 0;
  double *col = (double *)malloc(sizeof(double) * (size_t)n);
  double *full = (double *)malloc(sizeof(double) * (size_t)n * n); /* A from its lower triangle */
  for (int k = 0; k < n; k++)
    for (int i = 0; i < n; i++)
      full[i + (size_t)k * n] = i >= k ? hA[i + (size_t)k * n] : hA[k + (size_t)i * n];
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < n; i++) col[i] = 0;
    for (int k = 0; k < n; k++) {
      const double qk = hQ[k + (size_t)j * n];
      for (int i = 0; i < n; i++) col[i] += full[i + (size_t)k * n] * qk;
    }
    for (int i = 0; i < n; i++) {
      double t = d[j] * (double)hQ[i + (size_t)j * n];
      if (j > 0) t += e[j - 1] * (double)hQ[i + (size_t)(j - 1) * n];
      if (j + 1 < n) t += e[j] * (double)hQ[i + (size_t)(j + 1) * n];
      r = fmax(r, fabs(col[i] - t));
    }
  }
  for (int j = 0; j < n; j += 7) /* a sample of columns: O(n^3 / 7) */
    for (int k = 0; k <= j; k++) {
      double s = 0;
      for (int i = 0; i < n; i++) s += (double)hQ[i + (size_t)j * n] * hQ[i + (size_t)k * n];
      q = fmax(q, fabs(s - (j == k)));
    }
  free(col);
  free(full);
  *resid = r / amax;
  *orth = q;
}

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 1000, reps = argc > 2 ? atoi(argv[2]) : 10;
  int dev = 0, optin = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  const size_t smem = smem_floats(n) * sizeof(float);
  if (n < 2 || smem > (size_t)optin) {
    printf("n=%d needs %zu bytes of shared memory a block (the device allows %d)\n", n, smem,
           optin);
    return 2;
  }
  CK(cudaFuncSetAttribute(cluster_sytrd, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaFuncSetAttribute(cluster_sytrd, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  const size_t nn = (size_t)n * n;
  float *hA = (float *)malloc(sizeof(float) * nn);
  uint64_t s = 12345;
  double amax = 0;
  for (int j = 0; j < n; j++)
    for (int i = j; i < n; i++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      float x = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      hA[i + (size_t)j * n] = hA[j + (size_t)i * n] = x;
      amax = fmax(amax, fabs(x));
    }
  float *dA, *dOut, *dWork, *dd, *de, *dtau, *cA, *cd, *ce, *ctau;
  int *dInfo;
  CK(cudaMalloc(&dA, sizeof(float) * nn));
  CK(cudaMalloc(&dOut, sizeof(float) * nn));
  CK(cudaMalloc(&cA, sizeof(float) * nn));
  CK(cudaMalloc(&dd, sizeof(float) * 6 * (size_t)n));
  de = dd + n, dtau = de + n, cd = dtau + n, ce = cd + n, ctau = ce + n;
  CK(cudaMalloc(&dInfo, sizeof(int)));
  CK(cudaMemcpy(dA, hA, sizeof(float) * nn, cudaMemcpyHostToDevice));
  cusolverDnHandle_t h;
  CS(cusolverDnCreate(&h));
  int lwork = 0;
  CS(cusolverDnSsytrd_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, cA, n, cd, ce, ctau, &lwork));
  int lq = 0;
  CS(cusolverDnSormtr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, n,
                                 dOut, n, dtau, cA, n, &lq));
  CK(cudaMalloc(&dWork, sizeof(float) * (size_t)(lwork > lq ? lwork : lq)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float *t_ours = (float *)malloc(sizeof(float) * reps),
        *t_cs = (float *)malloc(sizeof(float) * reps);
  launch(dA, n, dOut, dd, de, dtau, smem); /* warm-up */
  CK(cudaDeviceSynchronize());
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(e0));
    launch(dA, n, dOut, dd, de, dtau, smem);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t_ours[r], e0, e1));
    CK(cudaMemcpy(cA, dA, sizeof(float) * nn, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(e0));
    CS(cusolverDnSsytrd(h, CUBLAS_FILL_MODE_LOWER, n, cA, n, cd, ce, ctau, dWork, lwork, dInfo));
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&t_cs[r], e0, e1));
  }
  float *hv = (float *)malloc(sizeof(float) * 6 * (size_t)n);
  CK(cudaMemcpy(hv, dd, sizeof(float) * 6 * (size_t)n, cudaMemcpyDeviceToHost));
  double dd_err = 0, de_err = 0;
  for (int i = 0; i < n; i++) dd_err = fmax(dd_err, fabs((double)hv[i] - hv[3 * n + i]));
  for (int i = 0; i + 1 < n; i++)
    de_err = fmax(de_err, fabs(fabs((double)hv[n + i]) - fabs((double)hv[4 * n + i])));
  /* Q = H(0) ... H(n-2) applied to I by Sormtr from our reflectors */
  float *hQ = (float *)malloc(sizeof(float) * nn);
  for (size_t i = 0; i < nn; i++) hQ[i] = 0;
  for (int i = 0; i < n; i++) hQ[i + (size_t)i * n] = 1;
  CK(cudaMemcpy(cA, hQ, sizeof(float) * nn, cudaMemcpyHostToDevice));
  CS(cusolverDnSormtr(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, n, dOut, n, dtau,
                      cA, n, dWork, lq, dInfo));
  CK(cudaMemcpy(hQ, cA, sizeof(float) * nn, cudaMemcpyDeviceToHost));
  double resid = 0, orth = 0;
  check_q(n, hA, hQ, hv, hv + n, amax, &resid, &orth);
  printf(
      "n=%d reps=%d smem_KiB=%.1f cluster_ms=%.3f cusolver_sytrd_ms=%.3f ratio=%.2f "
      "d_err=%.2e e_err=%.2e resid=%.2e orth=%.2e\n",
      n, reps, smem / 1024.0, median(t_ours, reps), median(t_cs, reps),
      median(t_cs, reps) / median(t_ours, reps), dd_err / amax, de_err / amax, resid, orth);
  return 0;
}
