/*
 * Band to tridiagonal by bulge chasing, float64 (sb2st.h).
 *
 * Task (j, k) of sweep j, with r0 = j + 1 + k b and len = min(b, n - r0):
 *   - a reflector H from column c0 (j for k = 0, else r0 - b), rows
 *     r0 .. r0 + len, that leaves beta at row r0 and zeros below;
 *   - for k > 0, H from the left on the rest of that block (columns
 *     c0 + 1 .. c0 + b - 1);
 *   - H on both sides of the diagonal block D = A[r0 .. r0 + len)^2;
 *   - H from the right on the block below D (rows r0 + len .. + b), which
 *     fills it: the bulge that task (j, k + 1) chases.
 * Task (j, k) touches columns [c0, c0 + 2b) and rows [c0 + b, c0 + 3b);
 * task (j - 1, k + 2) is the last of sweep j - 1 that it overlaps, in one
 * element: the beta it writes first. So sweep j runs task k once sweep
 * j - 1 has finished k + 2 tasks and written beta of the next; progress[j]
 * counts 2 per finished task and 1 for a written beta. Sweeps go
 * round-robin to resident blocks (one cooperative launch) that wait on
 * each other's progress counters; the band lives in L2 (2b x n doubles)
 * and is read and written with .cg accesses, past L1.
 *
 * The back-transformation groups the reflectors of L = b consecutive
 * sweeps at one step k (their rows overlap, shifted by one per sweep) into
 * one block reflector I - V T V^T of height b + L - 1. Groups are applied
 * to Z from the last sweep group to the first and, within one, from step
 * 0 upwards: a reflector must meet Z after every later-generated one that
 * shares a row with it.
 */
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sb2st.h"

namespace {

/* threads per bulge-chasing task (H200, float64 1x4096: 512 66.0 ms, 256
 * 71.0, 128 96.4) */
constexpr int kThreads = 512;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ double ldg(const double *p) {
  return __ldcg(p);
}
__device__ __forceinline__ void stg(double *p, double x) {
  __stcg(p, x);
}

/* A(i, j) of the band, 0 <= i - j < ld. */
struct band {
  double *ab;
  int64_t ld;
  __device__ double *at(int64_t i, int64_t j) const {
    return ab + (i - j) + j * ld;
  }
};

__host__ __device__ int64_t sweep_steps(int64_t n, int64_t b, int64_t j) {
  return j > n - 3 ? 0 : (n - 3 - j) / b + 1;
}

__device__ double warp_sum(double x) {
  for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(kFull, x, o);
  return x;
}

/* The block's sum of x (every thread calls it; red: kWarps doubles). */
__device__ double block_sum(double x, double *red) {
  x = warp_sum(x);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
  __syncthreads();
  double s = 0;
  for (int i = 0; i < kWarps; i++) s += red[i];
  return s;
}

/* Task (j, k). Its three blocks are read into shared memory at once (one
 * L2 round trip instead of one per phase), updated there, and each element
 * is written back as soon as it is final. sm: 3 b^2 + 3 b + kWarps + 4. */
__device__ void chase_task(band A, int64_t n, int64_t b, int64_t j, int64_t k, double *vout,
                           double *tau_out, double *sm, int *progress) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, B = (int)b;
  const int64_t r0 = j + 1 + k * b, c0 = k == 0 ? j : r0 - b, e0 = r0 + (b < n - r0 ? b : n - r0);
  const int len = (int)(e0 - r0), m = (int)(b < n - e0 ? b : n - e0), wr = k == 0 ? 1 : B;
  double *sR = sm, *sD = sR + B * B, *sE = sD + B * B, *sv = sE + B * B, *sw = sv + B, *sq = sw + B,
         *red = sq + B;

  for (int idx = tid; idx < len * wr; idx += kThreads)
    sR[idx % len + (idx / len) * B] = ldg(A.at(r0 + idx % len, c0 + idx / len));
  for (int idx = tid; idx < len * len; idx += kThreads) {
    const int i = idx % len, l = idx / len;
    if (i >= l) sD[i + l * B] = sD[l + i * B] = ldg(A.at(r0 + i, r0 + l));
  }
  for (int idx = tid; idx < m * len; idx += kThreads)
    sE[idx % m + (idx / m) * B] = ldg(A.at(e0 + idx % m, r0 + idx / m));
  __syncthreads();

  /* the reflector (LAPACK's dlarfg convention) from R's first column */
  const double x = tid < len ? sR[tid] : 0.0;
  const double sigma = block_sum(tid >= 1 && tid < len ? x * x : 0.0, red);
  if (tid == 0) {
    double alpha = x, tau = 0.0, beta = alpha, scale = 0.0;
    if (sigma > 0.0) {
      double mu = sqrt(alpha * alpha + sigma);
      beta = alpha <= 0.0 ? mu : -mu;
      tau = (beta - alpha) / beta;
      scale = 1.0 / (alpha - beta);
    }
    red[kWarps] = tau;
    red[kWarps + 1] = beta;
    red[kWarps + 2] = scale;
  }
  __syncthreads();
  const double tau = red[kWarps], beta = red[kWarps + 1], scale = red[kWarps + 2];
  if (tid < B) {
    double v = tid == 0 ? 1.0 : (tid < len ? x * scale : 0.0);
    sv[tid] = v;
    vout[tid] = v;
  }
  if (tid == 0) *tau_out = tau;
  if (tid < len) stg(A.at(r0 + tid, c0), tid == 0 ? beta : 0.0);
  if (tid == 0) { /* beta is all that sweep j + 1 waits for from this task */
    __threadfence();
    *(volatile int *)progress = (int)(2 * k + 1);
  }
  __syncthreads();
  if (tau == 0.0) return; /* H = I */

  /* H from the left on R's other columns (a warp per column); p = tau D v
   * and q = tau E v (a thread per row) */
  if (k > 0)
    for (int c = 1 + warp; c < B; c += kWarps) {
      double s = 0.0;
      for (int t = lane; t < len; t += 32) s += sv[t] * sR[t + c * B];
      s = tau * warp_sum(s);
      for (int t = lane; t < len; t += 32) stg(A.at(r0 + t, c0 + c), sR[t + c * B] - s * sv[t]);
    }
  if (tid < len) {
    double s[4] = {};
    for (int l = 0; l < len; l++) s[l & 3] += sD[tid + l * B] * sv[l];
    sw[tid] = tau * ((s[0] + s[1]) + (s[2] + s[3]));
  } else if (tid >= 64 && tid < 64 + m) {
    const int i = tid - 64;
    double s[4] = {};
    for (int l = 0; l < len; l++) s[l & 3] += sE[i + l * B] * sv[l];
    sq[i] = tau * ((s[0] + s[1]) + (s[2] + s[3]));
  }
  __syncthreads();
  /* w = p - (tau p^T v / 2) v; D -= v w^T + w v^T; E -= q v^T */
  const double pv = block_sum(tid < len ? sw[tid] * sv[tid] : 0.0, red);
  if (tid < len) sw[tid] -= 0.5 * tau * pv * sv[tid];
  __syncthreads();
  for (int idx = tid; idx < len * len; idx += kThreads) {
    const int i = idx % len, l = idx / len;
    if (i >= l) stg(A.at(r0 + i, r0 + l), sD[i + l * B] - sv[i] * sw[l] - sw[i] * sv[l]);
  }
  for (int idx = tid; idx < m * len; idx += kThreads) {
    const int i = idx % m, l = idx / m;
    stg(A.at(e0 + i, r0 + l), sE[i + l * B] - sq[i] * sv[l]);
  }
}

size_t chase_smem(int64_t b) {
  return sizeof(double) * (size_t)(3 * b * b + 3 * b + kWarps + 4);
}

__global__ void __launch_bounds__(kThreads)
    chase_kernel(double *ab, int64_t ld, int64_t n, int64_t b, int64_t steps, double *vs,
                 double *taus, int *progress) {
  extern __shared__ double sm[];
  const band A{ab, ld};
  for (int64_t j = blockIdx.x; j < n - 2; j += gridDim.x) {
    const int64_t nk = sweep_steps(n, b, j);
    for (int64_t k = 0; k < nk; k++) {
      if (j > 0) {
        if (threadIdx.x == 0) {
          const volatile int *f = progress + j - 1;
          const int need = (int)(2 * k + 5); /* tasks k + 1 done, beta of k + 2 */
          while (*f < need) __nanosleep(32);
          __threadfence();
        }
        __syncthreads();
      }
      chase_task(A, n, b, j, k, vs + (j * steps + k) * b, taus + j * steps + k, sm, progress + j);
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) {
        volatile int *f = progress + j;
        *f = k + 1 == nk ? INT_MAX : (int)(2 * (k + 1));
      }
    }
  }
}

/* ---- The chase for b = 32 (kB), shared memory carried from task to task.
 * Task (j, k + 1)'s R block is task (j, k)'s E block, which only task (j,
 * k) writes between them: it stays in shared memory. D and E are read in
 * one round trip (four independent loads a thread), the reflector is one
 * warp's work, and the products D v, E v, v^T R take half a warp per row
 * or column (ld kLd: odd, so rows and columns are conflict-free). */
constexpr int kB = 32, kLd = kB + 1;

size_t chase2_smem() {
  return sizeof(double) * (size_t)(3 * kB * kLd + 4 * kB + 4);
}

__device__ __forceinline__ unsigned long long sm_clock() {
  return (unsigned long long)clock64();
}

/* the sum over the 16 lanes of a half warp */
__device__ __forceinline__ double half_sum(double x) {
  for (int o = 8; o; o >>= 1) x += __shfl_xor_sync(kFull, x, o);
  return x;
}

/* trace (optional): per task of sweep trace_j, clock64 at 6 points */
__device__ void chase_task2(band A, int64_t n, int64_t j, int64_t k, double *sR, double *sD,
                            double *sE, double *sv, double *sp, double *sq, double *ss,
                            double *vout, double *tau_out, int *progress,
                            unsigned long long *tr) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r0 = j + 1 + k * kB, c0 = k == 0 ? j : r0 - kB;
  const int64_t e0 = r0 + (kB < n - r0 ? kB : n - r0);
  const int len = (int)(e0 - r0), m = (int)(kB < n - e0 ? kB : n - e0);
  {
    double dv[2], ev[2];
#pragma unroll
    for (int u = 0; u < 2; u++) {
      const int idx = tid + u * kThreads, i = idx & 31, l = idx >> 5;
      dv[u] = i < len && l < len ? ldg(A.at(r0 + (i > l ? i : l), r0 + (i > l ? l : i))) : 0.0;
      ev[u] = i < m && l < len ? ldg(A.at(e0 + i, r0 + l)) : 0.0;
    }
    const double rv = k == 0 && tid < len ? ldg(A.at(r0 + tid, j)) : 0.0;
#pragma unroll
    for (int u = 0; u < 2; u++) {
      const int idx = tid + u * kThreads, i = idx & 31, l = idx >> 5;
      sD[i + l * kLd] = dv[u];
      sE[i + l * kLd] = ev[u];
    }
    if (k == 0 && tid < kB) sR[tid] = rv;
  }
  __syncthreads();
  if (tr && tid == 0) tr[2] = sm_clock();
  if (warp == 0) { /* the reflector (LAPACK's dlarfg) from R's first column */
    const double x = lane < len ? sR[lane] : 0.0, alpha = __shfl_sync(kFull, x, 0);
    const double sigma = warp_sum(lane >= 1 ? x * x : 0.0);
    double tau = 0.0, beta = alpha, scale = 0.0;
    if (sigma > 0.0) {
      const double mu = sqrt(alpha * alpha + sigma);
      beta = alpha <= 0.0 ? mu : -mu;
      tau = (beta - alpha) / beta;
      scale = 1.0 / (alpha - beta);
    }
    const double v = lane == 0 ? 1.0 : (lane < len ? x * scale : 0.0);
    sv[lane] = v;
    vout[lane] = v;
    if (lane == 0) {
      ss[kB] = tau;
      *tau_out = tau;
    }
    if (lane < len) stg(A.at(r0 + lane, c0), lane == 0 ? beta : 0.0);
  }
  __syncthreads();
  if (tid == 0) { /* beta is all that sweep j + 1 waits for from this task */
    __threadfence();
    *(volatile int *)progress = (int)(2 * k + 1);
    if (tr) tr[3] = sm_clock();
  }
  const double tau = ss[kB];
  { /* p = tau D v, q = tau E v, s = tau v^T R: half a warp per row / column */
    const int g = tid >> 4, h = tid & 15;
    const double v0 = sv[h], v1 = sv[h + 16];
    const double p = half_sum(sD[h + g * kLd] * v0 + sD[h + 16 + g * kLd] * v1);
    const double q = half_sum(sE[g + h * kLd] * v0 + sE[g + (h + 16) * kLd] * v1);
    const double s = k > 0 ? half_sum(sR[h + g * kLd] * v0 + sR[h + 16 + g * kLd] * v1) : 0.0;
    if (h == 0) {
      sp[g] = tau * p;
      sq[g] = tau * q;
      ss[g] = tau * s;
    }
  }
  __syncthreads();
  if (tr && tid == 0) tr[4] = sm_clock();
  /* w = p - (tau p^T v / 2) v; D -= v w^T + w v^T; E -= q v^T; R -= v s^T */
  const double pv = warp_sum(sp[lane] * sv[lane]);
#pragma unroll
  for (int u = 0; u < 2; u++) {
    const int idx = tid + u * kThreads, i = idx & 31, l = idx >> 5;
    const double vi = sv[i], vl = sv[l];
    if (i >= l && i < len && l < len) {
      const double wi = sp[i] - 0.5 * tau * pv * vi, wl = sp[l] - 0.5 * tau * pv * vl;
      stg(A.at(r0 + i, r0 + l), sD[i + l * kLd] - vi * wl - wi * vl);
    }
    if (i < m && l < len) {
      const double x = sE[i + l * kLd] - sq[i] * vl;
      sE[i + l * kLd] = x; /* task k + 1's R */
      stg(A.at(e0 + i, r0 + l), x);
    }
    if (k > 0 && l >= 1 && i < len) stg(A.at(r0 + i, c0 + l), sR[i + l * kLd] - ss[l] * vi);
  }
}

__global__ void __launch_bounds__(kThreads)
    chase2_kernel(double *ab, int64_t n, int64_t steps, double *vs, double *taus, int *progress,
                  unsigned long long *trace, int64_t trace_j) {
  extern __shared__ double sm[];
  const band A{ab, 2 * kB};
  double *buf0 = sm, *buf1 = buf0 + kB * kLd, *sD = buf1 + kB * kLd, *sv = sD + kB * kLd,
         *sp = sv + kB, *sq = sp + kB, *ss = sq + kB;
  for (int64_t j = blockIdx.x; j < n - 2; j += gridDim.x) {
    const int64_t nk = sweep_steps(n, kB, j);
    double *sR = buf0, *sE = buf1;
    for (int64_t k = 0; k < nk; k++) {
      unsigned long long *tr = trace && j == trace_j ? trace + n + 6 * k : nullptr;
      if (tr && threadIdx.x == 0) tr[0] = sm_clock();
      if (j > 0) {
        if (threadIdx.x == 0) {
          const volatile int *f = progress + j - 1;
          const int need = (int)(2 * k + 5); /* tasks k + 1 done, beta of k + 2 */
          while (*f < need) __nanosleep(32);
          __threadfence();
        }
        __syncthreads();
      }
      if (trace && k == 0 && threadIdx.x == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        trace[j] = t;
      }
      if (tr && threadIdx.x == 0) tr[1] = sm_clock();
      chase_task2(A, n, j, k, sR, sD, sE, sv, sp, sq, ss, vs + (j * steps + k) * kB,
                  taus + j * steps + k, progress + j, tr);
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        *(volatile int *)(progress + j) = k + 1 == nk ? INT_MAX : (int)(2 * (k + 1));
        if (tr) tr[5] = sm_clock();
      }
      double *t = sR;
      sR = sE;
      sE = t;
    }
  }
}

__global__ void load_band(const double *a, int64_t lda, int64_t n, int64_t b, double *ab) {
  const int64_t j = blockIdx.y, r = threadIdx.x;
  if (r < 2 * b) ab[r + j * 2 * b] = (r <= b && j + r < n) ? a[(j + r) + j * lda] : 0.0;
}

__global__ void tridiagonal_of(const double *ab, int64_t ld, int64_t n, double *d, double *e) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) d[i] = ab[i * ld];
  if (i < n - 1) e[i] = ab[1 + i * ld];
}

/* Column i of group (J, k) (L sweeps wide): the vector of sweep J L + i at
 * step k, NULL when that sweep has no such step. */
__device__ const double *group_vector(const double *vs, int64_t n, int64_t b, int64_t L,
                                      int64_t steps, int64_t J, int64_t k, int64_t i) {
  const int64_t j = J * L + i;
  return j < n - 2 && k < sweep_steps(n, b, j) ? vs + (j * steps + k) * b : nullptr;
}

/* Group g's block reflector I - V T V^T (forward, columnwise, as dlarft:
 * T(i,i) = tau_i, T(i,c) = -tau_c sum_{l=i}^{c-1} T(i,l) (v_l . v_c)),
 * written as V (h x L) and Y = V T^T (h x L), h = b + L - 1: the group then
 * acts as Z -= V (Y^T Z). One block per group; T's row i by thread i (it
 * depends on row i alone). */
__global__ void group_vy_kernel(const double *vs, const double *taus, int64_t n, int64_t b,
                                int64_t Lw, int64_t steps, const int *gj, const int *gk, double *vg,
                                double *yg) {
  extern __shared__ double sm[];
  const int L = (int)Lw, B = (int)b, h = B + L - 1;
  const int64_t g = blockIdx.x, J = gj[g], k = gk[g];
  double *v = sm, *gram = v + h * L, *t = gram + L * L, *tau = t + L * L;
  for (int idx = threadIdx.x; idx < h * L; idx += blockDim.x) {
    const int r = idx % h, i = idx / h, off = r - i;
    const double *vi = group_vector(vs, n, b, Lw, steps, J, k, i);
    v[idx] = vi && off >= 0 && off < B ? vi[off] : 0.0;
  }
  for (int i = threadIdx.x; i < L; i += blockDim.x)
    tau[i] = group_vector(vs, n, b, Lw, steps, J, k, i) ? taus[(J * Lw + i) * steps + k] : 0.0;
  __syncthreads();
  for (int idx = threadIdx.x; idx < L * L; idx += blockDim.x) {
    const int l = idx % L, c = idx / L;
    double s = 0.0;
    if (l < c)
      for (int r = c; r < l + B; r++) s += v[r + l * h] * v[r + c * h];
    gram[idx] = s;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < L; i += blockDim.x) {
    for (int c = 0; c < i; c++) t[i + c * L] = 0.0;
    t[i + i * L] = tau[i];
    for (int c = i + 1; c < L; c++) {
      double s = 0.0;
      for (int l = i; l < c; l++) s += t[i + l * L] * gram[l + c * L];
      t[i + c * L] = -tau[c] * s;
    }
  }
  __syncthreads();
  double *vo = vg + g * h * L, *yo = yg + g * h * L;
  for (int idx = threadIdx.x; idx < h * L; idx += blockDim.x) {
    const int r = idx % h, i = idx / h;
    double s = 0.0;
    for (int l = i; l < L; l++) s += v[r + l * h] * t[i + l * L];
    vo[idx] = v[idx];
    yo[idx] = s;
  }
}

}  // namespace

extern "C" int64_t gstat_cu_sb2st_steps(int64_t n, int64_t b) {
  int64_t s = sweep_steps(n, b, 0);
  return s > 0 ? s : 1;
}

extern "C" cudaError_t gstat_cu_sb2st_load(const double *a, int64_t lda, int64_t n, int64_t b,
                                           double *ab, cudaStream_t st) {
  if (b < 1 || b > 64) return cudaErrorInvalidValue;
  load_band<<<dim3(1, (unsigned)n), (unsigned)(2 * b), 0, st>>>(a, lda, n, b, ab);
  return cudaGetLastError();
}

/* The trace of chase2_kernel (GSTAT_SB2ST_TRACE set; probes only): the
 * period between sweep starts and the phases of one task, on stderr. */
void print_trace(const unsigned long long *dt, int64_t n, int64_t tj, int64_t steps) {
  unsigned long long *h = new unsigned long long[(size_t)(n + 6 * steps)];
  int dev, khz = 1;
  if (cudaMemcpy(h, dt, sizeof(unsigned long long) * (size_t)(n + 6 * steps),
                 cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess) {
    delete[] h;
    return;
  }
  const int64_t a = n / 4, z = 3 * n / 4;
  fprintf(stderr, "sb2st trace: sweep starts %lld..%lld: %.2f us per sweep; whole %.2f ms\n",
          (long long)a, (long long)z, (double)(h[z] - h[a]) / 1e3 / (double)(z - a),
          (double)(h[n - 3] - h[0]) / 1e6);
  const char *names[5] = {"wait", "load", "reflector+beta", "products", "updates+flag"};
  double sum[5] = {0}, us_per_clk = 1e3 / khz;
  const int64_t nk = sweep_steps(n, kB, tj);
  for (int64_t k = 1; k + 1 < nk; k++)
    for (int p = 0; p < 5; p++) sum[p] += (double)(h[n + 6 * k + p + 1] - h[n + 6 * k + p]);
  fprintf(stderr, "sb2st trace: sweep %lld, %lld tasks, us per task:", (long long)tj,
          (long long)(nk - 2));
  for (int p = 0; p < 5; p++)
    fprintf(stderr, " %s %.2f", names[p], sum[p] * us_per_clk / (double)(nk - 2));
  fprintf(stderr, "\n");
  delete[] h;
}

/* One cooperative launch of the chase, at most one block per SM: the
 * kernel for b = 32 (chase2_kernel) unless GSTAT_SB2ST_V1 is set, else
 * the general one. */
cudaError_t launch_chase(double *ab, int64_t ld, int64_t n, int64_t b, int64_t steps, double *vs,
                         double *taus, int *progress, cudaStream_t st) {
  const bool v2 = b == kB && !getenv("GSTAT_SB2ST_V1");
  const void *fn = v2 ? (const void *)chase2_kernel : (const void *)chase_kernel;
  int dev, sms, per_sm;
  const size_t smem = v2 ? chase2_smem() : chase_smem(b);
  cudaError_t err;
  if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
      (err = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) !=
          cudaSuccess ||
      (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, kThreads, smem)) !=
          cudaSuccess)
    return err;
  if (per_sm < 1) return cudaErrorLaunchOutOfResources;
  int64_t blocks = sms < n - 2 ? sms : n - 2;
  if ((err = cudaMemsetAsync(progress, 0, sizeof(int) * (size_t)n, st)) != cudaSuccess) return err;
  if (!v2) {
    void *args[] = {&ab, &ld, &n, &b, &steps, &vs, &taus, &progress};
    return cudaLaunchCooperativeKernel(fn, dim3((unsigned)blocks), dim3(kThreads), args, smem, st);
  }
  static int traced = 0;
  unsigned long long *trace = nullptr;
  int64_t tj = n / 2;
  if (getenv("GSTAT_SB2ST_TRACE") && !traced++ &&
      cudaMalloc((void **)&trace, sizeof(unsigned long long) * (size_t)(n + 6 * steps)) !=
          cudaSuccess)
    trace = nullptr;
  void *args[] = {&ab, &n, &steps, &vs, &taus, &progress, &trace, &tj};
  err = cudaLaunchCooperativeKernel(fn, dim3((unsigned)blocks), dim3(kThreads), args, smem, st);
  if (trace) {
    if (err == cudaSuccess && (err = cudaStreamSynchronize(st)) == cudaSuccess)
      print_trace(trace, n, tj, steps);
    cudaFree(trace);
  }
  return err;
}

extern "C" cudaError_t gstat_cu_sb2st_reduce(double *ab, int64_t n, int64_t b, double *vs,
                                             double *taus, int *progress, double *d, double *e,
                                             cudaStream_t st) {
  if (b < 1 || b > 64) return cudaErrorInvalidValue;
  int64_t steps = gstat_cu_sb2st_steps(n, b), ld = 2 * b;
  if (n > 2) {
    cudaError_t err = launch_chase(ab, ld, n, b, steps, vs, taus, progress, st);
    if (err != cudaSuccess) return err;
  }
  tridiagonal_of<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(ab, ld, n, d, e);
  return cudaGetLastError();
}

/* The plan of Q2's application: groups of L sweeps in wavefronts
 * t = (G - 1 - J) + k (G groups of sweeps). Group (J, k) starts at row
 * J L + 1 + k b and is h = b + L - 1 rows high: it must meet Z after
 * (J, k - 1) and after the overlapping groups of later sweeps, (J + d, k')
 * with k' <= k, all in earlier wavefronts; (J - 1, k - 1), in the same
 * wavefront, ends just above it. Each wavefront is two batched gemms on
 * Z^T padded by h zero columns (n-long gemms ran faster than h-long ones on
 * Z: H200 f64 8192 172 against 194 ms). */
struct gstat_cu_sb2st_q2 {
  int64_t n, b, L, groups, waves, widest;
  int *gj, *gk;             /* device: each group's J and k */
  double *vg, *yg, *w, *zp; /* device: V and Y per group, W per wavefront slot, Z^T padded */
  const double **ptr;       /* device: per group, Y, Z rows, W, V (4 x groups) */
  int64_t *wave_start;      /* host: the wavefronts' first group (waves + 1) */
};

extern "C" void gstat_cu_sb2st_q2_free(gstat_cu_sb2st_q2 *p) {
  if (!p) return;
  cudaFree(p->gj);
  cudaFree(p->gk);
  cudaFree(p->vg);
  cudaFree(p->yg);
  cudaFree(p->w);
  cudaFree(p->zp);
  cudaFree(p->ptr);
  delete[] p->wave_start;
  delete p;
}

extern "C" gstat_cu_sb2st_q2 *gstat_cu_sb2st_q2_plan(int64_t n, int64_t b, int64_t L) {
  if (n <= 2 || b < 1 || b > 64 || L < 1 || L > 64) return nullptr;
  gstat_cu_sb2st_q2 *p = new gstat_cu_sb2st_q2();
  const int64_t h = b + L - 1, G = (n - 2 + L - 1) / L, ldz = n + h; /* Z^T's columns */
  p->n = n;
  p->b = b;
  p->L = L;
  p->waves = (G - 1) + sweep_steps(n, b, 0);
  std::vector<int> hj, hk;
  std::vector<int64_t> start;
  for (int64_t t = 0; t < p->waves; t++) {
    start.push_back((int64_t)hj.size());
    for (int64_t Jp = 0; Jp < G; Jp++) {
      const int64_t k = t - Jp, J = G - 1 - Jp;
      if (k < 0 || k >= sweep_steps(n, b, J * L)) continue;
      hj.push_back((int)J);
      hk.push_back((int)k);
    }
  }
  start.push_back((int64_t)hj.size());
  p->groups = (int64_t)hj.size();
  p->widest = 0;
  for (int64_t t = 0; t < p->waves; t++)
    p->widest = std::max(p->widest, start[(size_t)t + 1] - start[(size_t)t]);
  p->wave_start = new int64_t[start.size()];
  std::copy(start.begin(), start.end(), p->wave_start);
  const size_t gb = sizeof(double) * (size_t)(p->groups * h * L);
  if (cudaMalloc((void **)&p->gj, sizeof(int) * hj.size()) != cudaSuccess ||
      cudaMalloc((void **)&p->gk, sizeof(int) * hk.size()) != cudaSuccess ||
      cudaMalloc((void **)&p->vg, gb) != cudaSuccess ||
      cudaMalloc((void **)&p->yg, gb) != cudaSuccess ||
      cudaMalloc((void **)&p->w, sizeof(double) * (size_t)(p->widest * L * n)) != cudaSuccess ||
      cudaMalloc((void **)&p->zp, sizeof(double) * (size_t)(ldz * n)) != cudaSuccess ||
      cudaMalloc((void **)&p->ptr, sizeof(double *) * (size_t)(4 * p->groups)) != cudaSuccess) {
    gstat_cu_sb2st_q2_free(p);
    return nullptr;
  }
  std::vector<const double *> hp((size_t)(4 * p->groups));
  for (int64_t t = 0; t < p->waves; t++)
    for (int64_t g = start[(size_t)t]; g < start[(size_t)t + 1]; g++) {
      const int64_t row0 = (int64_t)hj[(size_t)g] * L + 1 + (int64_t)hk[(size_t)g] * b,
                    slot = g - start[(size_t)t];
      hp[(size_t)g] = p->yg + g * h * L;
      hp[(size_t)(p->groups + g)] = p->zp + row0 * n;
      hp[(size_t)(2 * p->groups + g)] = p->w + slot * L * n;
      hp[(size_t)(3 * p->groups + g)] = p->vg + g * h * L;
    }
  if (cudaMemcpy(p->gj, hj.data(), sizeof(int) * hj.size(), cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMemcpy(p->gk, hk.data(), sizeof(int) * hk.size(), cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMemset(p->zp, 0, sizeof(double) * (size_t)(ldz * n)) != cudaSuccess ||
      cudaMemcpy(p->ptr, hp.data(), sizeof(double *) * hp.size(), cudaMemcpyHostToDevice) !=
          cudaSuccess) {
    gstat_cu_sb2st_q2_free(p);
    return nullptr;
  }
  return p;
}

extern "C" cudaError_t gstat_cu_sb2st_q2_apply(gstat_cu_sb2st_q2 *p, cublasHandle_t blas,
                                               const double *vs, const double *taus, double *z,
                                               cudaStream_t st) {
  const int64_t n = p->n, b = p->b, L = p->L, h = b + L - 1;
  const int64_t steps = gstat_cu_sb2st_steps(n, b);
  const size_t smem = sizeof(double) * (size_t)(h * L + 2 * L * L + L);
  cudaError_t err;
  if ((err = cudaFuncSetAttribute(group_vy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)smem)) != cudaSuccess)
    return err;
  group_vy_kernel<<<(unsigned)p->groups, 128, smem, st>>>(vs, taus, n, b, L, steps, p->gj, p->gk,
                                                          p->vg, p->yg);
  if (cublasSetStream(blas, st) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  const int li = (int)L, hi = (int)h, ni = (int)n;
  /* Z^T (n x (n + h), ld n): a group's rows of Z are h of its columns */
  if (cublasDgeam(blas, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni, &one, z, ni, &zero, p->zp, ni, p->zp,
                  ni) != CUBLAS_STATUS_SUCCESS)
    return cudaErrorUnknown;
  for (int64_t t = 0; t < p->waves; t++) {
    const int64_t g0 = p->wave_start[t], cnt = p->wave_start[t + 1] - g0;
    const double *const *Y = p->ptr + g0, *const *Zc = p->ptr + p->groups + g0,
                        *const *W = p->ptr + 2 * p->groups + g0,
                        *const *V = p->ptr + 3 * p->groups + g0;
    /* W^T = Z^T(cols) Y; Z^T(cols) -= W^T V^T: each gemm n rows long */
    if (cublasDgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, li, hi, &one, Zc, ni, Y, hi, &zero,
                           (double *const *)W, ni, (int)cnt) != CUBLAS_STATUS_SUCCESS ||
        cublasDgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_T, ni, hi, li, &minus_one, W, ni, V, hi,
                           &one, (double *const *)Zc, ni, (int)cnt) != CUBLAS_STATUS_SUCCESS)
      return cudaErrorUnknown;
  }
  return cublasDgeam(blas, CUBLAS_OP_T, CUBLAS_OP_N, ni, ni, &one, p->zp, ni, &zero, z, ni, z,
                     ni) == CUBLAS_STATUS_SUCCESS
             ? cudaSuccess
             : cudaErrorUnknown;
}
