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
 * task (j - 1, k + 2) is the last of sweep j - 1 that it overlaps, so
 * sweep j runs task k once sweep j - 1 has finished k + 3 tasks. Sweeps go
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
#include <cstdint>

#include "sb2st.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;
constexpr int kApplyCols = 32; /* columns of Z per block of the apply kernel */

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

/* Task (j, k); sv, sw: b doubles each, red: kWarps + 4. */
__device__ void chase_task(band A, int64_t n, int64_t b, int64_t j, int64_t k, double *vout,
                           double *tau_out, double *sv, double *sw, double *red) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t r0 = j + 1 + k * b, c0 = k == 0 ? j : r0 - b;
  const int len = (int)(b < n - r0 ? b : n - r0);

  /* the reflector (LAPACK's dlarfg convention) */
  double x = tid < len ? ldg(A.at(r0 + tid, c0)) : 0.0;
  double sigma = block_sum(tid >= 1 && tid < len ? x * x : 0.0, red);
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
  if (tid < b) {
    double v = tid == 0 ? 1.0 : (tid < len ? x * scale : 0.0);
    sv[tid] = v;
    vout[tid] = v;
  }
  if (tid == 0) *tau_out = tau;
  if (tid < len) stg(A.at(r0 + tid, c0), tid == 0 ? beta : 0.0);
  __syncthreads();
  if (tau == 0.0) return; /* H = I */

  /* H from the left on the block's other columns */
  if (k > 0)
    for (int c = 1 + warp; c < b; c += kWarps) {
      const int64_t col = c0 + c;
      double s = 0.0;
      for (int t = lane; t < len; t += 32) s += sv[t] * ldg(A.at(r0 + t, col));
      s = tau * warp_sum(s);
      for (int t = lane; t < len; t += 32) {
        double *p = A.at(r0 + t, col);
        stg(p, ldg(p) - s * sv[t]);
      }
    }

  /* both sides of D: p = tau D v, w = p - (tau p^T v / 2) v, D -= v w^T + w v^T */
  for (int i = warp; i < len; i += kWarps) {
    double s = 0.0;
    for (int l = lane; l < len; l += 32)
      s += ldg(i >= l ? A.at(r0 + i, r0 + l) : A.at(r0 + l, r0 + i)) * sv[l];
    s = warp_sum(s);
    if (lane == 0) sw[i] = tau * s;
  }
  __syncthreads();
  double pv = block_sum(tid < len ? sw[tid] * sv[tid] : 0.0, red);
  if (tid < len) sw[tid] -= 0.5 * tau * pv * sv[tid];
  __syncthreads();
  for (int idx = tid; idx < len * len; idx += kThreads) {
    int i = idx % len, l = idx / len;
    if (i >= l) {
      double *p = A.at(r0 + i, r0 + l);
      stg(p, ldg(p) - sv[i] * sw[l] - sw[i] * sv[l]);
    }
  }
  __syncthreads();

  /* H from the right on the block below D: E -= tau (E v) v^T */
  const int64_t e0 = r0 + len;
  const int m = (int)(b < n - e0 ? b : n - e0);
  if (tid < m) {
    double s = 0.0;
    for (int l = 0; l < len; l++) s += ldg(A.at(e0 + tid, r0 + l)) * sv[l];
    sw[tid] = tau * s;
  }
  __syncthreads();
  for (int idx = tid; idx < m * len; idx += kThreads) {
    int i = idx % m, l = idx / m;
    double *p = A.at(e0 + i, r0 + l);
    stg(p, ldg(p) - sw[i] * sv[l]);
  }
}

__global__ void __launch_bounds__(kThreads)
    chase_kernel(double *ab, int64_t ld, int64_t n, int64_t b, int64_t steps, double *vs,
                 double *taus, int *progress) {
  __shared__ double sv[64], sw[64], red[kWarps + 4];
  const band A{ab, ld};
  for (int64_t j = blockIdx.x; j < n - 2; j += gridDim.x) {
    const int64_t nk = sweep_steps(n, b, j);
    for (int64_t k = 0; k < nk; k++) {
      if (j > 0) {
        if (threadIdx.x == 0) {
          const volatile int *f = progress + j - 1;
          const int need = (int)k + 3;
          while (*f < need) __nanosleep(32);
          __threadfence();
        }
        __syncthreads();
      }
      chase_task(A, n, b, j, k, vs + (j * steps + k) * b, taus + j * steps + k, sv, sw, red);
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) {
        volatile int *f = progress + j;
        *f = k + 1 == nk ? INT_MAX : (int)(k + 1);
      }
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

/* Column i of group (J, k): the vector of sweep J b + i at step k, NULL when
 * that sweep has no such step. */
__device__ const double *group_vector(const double *vs, int64_t n, int64_t b, int64_t steps,
                                      int64_t J, int64_t k, int64_t i) {
  const int64_t j = J * b + i;
  return j < n - 2 && k < sweep_steps(n, b, j) ? vs + (j * steps + k) * b : nullptr;
}

/* T of each group's block reflector (forward, columnwise, as dlarft):
 * T(i,i) = tau_i, T(i,c) = -tau_c sum_{l=i}^{c-1} T(i,l) (v_l . v_c). One
 * block per group (blockIdx.x = k, blockIdx.y = J); row i by thread i. */
__global__ void group_t_kernel(const double *vs, const double *taus, int64_t n, int64_t b,
                               int64_t steps, double *tg) {
  extern __shared__ double sm[];
  const int64_t k = blockIdx.x, J = blockIdx.y;
  const int L = (int)b;
  double *g = sm, *t = g + L * L, *tau = t + L * L;
  double *out = tg + (J * steps + k) * L * L;
  if (k >= sweep_steps(n, b, J * b)) return;
  for (int i = threadIdx.x; i < L; i += blockDim.x) {
    const int64_t j = J * b + i;
    tau[i] = group_vector(vs, n, b, steps, J, k, i) ? taus[j * steps + k] : 0.0;
  }
  /* g(l, c) = v_l . v_c for l < c: column l sits at rows l .. l + b, c at c .. c + b */
  for (int idx = threadIdx.x; idx < L * L; idx += blockDim.x) {
    const int l = idx % L, c = idx / L;
    if (l >= c) continue;
    const double *vl = group_vector(vs, n, b, steps, J, k, l),
                 *vc = group_vector(vs, n, b, steps, J, k, c);
    double s = 0.0;
    if (vl && vc)
      for (int r = c; r < l + b; r++) s += vl[r - l] * vc[r - c];
    g[l + c * L] = s;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < L; i += blockDim.x) {
    for (int c = 0; c < i; c++) t[i + c * L] = 0.0;
    t[i + i * L] = tau[i];
    for (int c = i + 1; c < L; c++) {
      double s = 0.0;
      for (int l = i; l < c; l++) s += t[i + l * L] * g[l + c * L];
      t[i + c * L] = -tau[c] * s;
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < L * L; idx += blockDim.x) out[idx] = t[idx];
}

/* Z <- Q2 Z on kApplyCols columns per block, group by group in the order
 * of the header comment: Zs -= V (T (V^T Zs)) on the group's rows. */
__global__ void __launch_bounds__(kThreads)
    apply_kernel(const double *vs, const double *tg, int64_t n, int64_t b, int64_t steps,
                 double *z) {
  extern __shared__ double sm[];
  const int L = (int)b, h = 2 * L - 1, C = kApplyCols;
  const int64_t col0 = blockIdx.x * (int64_t)C;
  const int cw = (int)(C < n - col0 ? C : n - col0);
  double *zs = sm, *vg = zs + h * C, *t = vg + h * L, *w = t + L * L, *w2 = w + L * C;
  const int64_t groups = (n - 2 + L - 1) / L;
  for (int64_t J = groups - 1; J >= 0; J--)
    for (int64_t k = 0; k < sweep_steps(n, b, J * b); k++) {
      const int64_t row0 = J * b + 1 + k * b;
      const int hh = (int)(h < n - row0 ? h : n - row0);
      for (int idx = threadIdx.x; idx < h * C; idx += kThreads) {
        const int r = idx % h, c = idx / h;
        zs[idx] = r < hh && c < cw ? z[(row0 + r) + (col0 + c) * n] : 0.0;
      }
      for (int idx = threadIdx.x; idx < h * L; idx += kThreads) {
        const int r = idx % h, i = idx / h, off = r - i;
        const double *v = group_vector(vs, n, b, steps, J, k, i);
        vg[idx] = v && off >= 0 && off < L ? v[off] : 0.0;
      }
      const double *tk = tg + (J * steps + k) * L * L;
      for (int idx = threadIdx.x; idx < L * L; idx += kThreads) t[idx] = tk[idx];
      __syncthreads();
      for (int idx = threadIdx.x; idx < L * C; idx += kThreads) {
        const int i = idx % L, c = idx / L;
        double s = 0.0;
        for (int r = i; r < i + L; r++) s += vg[r + i * h] * zs[r + c * h];
        w[idx] = s;
      }
      __syncthreads();
      for (int idx = threadIdx.x; idx < L * C; idx += kThreads) {
        const int i = idx % L, c = idx / L;
        double s = 0.0;
        for (int l = i; l < L; l++) s += t[i + l * L] * w[l + c * L];
        w2[idx] = s;
      }
      __syncthreads();
      for (int idx = threadIdx.x; idx < h * C; idx += kThreads) {
        const int r = idx % h, c = idx / h;
        const int lo = r - L + 1 > 0 ? r - L + 1 : 0, hi = r < L - 1 ? r : L - 1;
        double s = 0.0;
        for (int i = lo; i <= hi; i++) s += vg[r + i * h] * w2[i + c * L];
        if (r < hh && c < cw) z[(row0 + r) + (col0 + c) * n] = zs[idx] - s;
      }
      __syncthreads();
    }
}

size_t apply_smem(int64_t b) {
  const size_t L = (size_t)b, h = 2 * L - 1;
  return sizeof(double) * (h * kApplyCols + h * L + L * L + 2 * L * kApplyCols);
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

extern "C" cudaError_t gstat_cu_sb2st_reduce(double *ab, int64_t n, int64_t b, double *vs,
                                             double *taus, int *progress, double *d, double *e,
                                             cudaStream_t st) {
  if (b < 1 || b > 64) return cudaErrorInvalidValue;
  cudaError_t err;
  int64_t steps = gstat_cu_sb2st_steps(n, b), ld = 2 * b;
  if (n > 2) {
    int dev, sms, per_sm;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chase_kernel, kThreads, 0)) !=
            cudaSuccess)
      return err;
    int64_t blocks = sms < n - 2 ? sms : n - 2;
    if (per_sm < 1) return cudaErrorLaunchOutOfResources;
    if ((err = cudaMemsetAsync(progress, 0, sizeof(int) * (size_t)n, st)) != cudaSuccess)
      return err;
    void *args[] = {&ab, &ld, &n, &b, &steps, &vs, &taus, &progress};
    if ((err = cudaLaunchCooperativeKernel((const void *)chase_kernel, dim3((unsigned)blocks),
                                           dim3(kThreads), args, 0, st)) != cudaSuccess)
      return err;
  }
  tridiagonal_of<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(ab, ld, n, d, e);
  return cudaGetLastError();
}

extern "C" size_t gstat_cu_sb2st_apply_bytes(int64_t n, int64_t b) {
  int64_t groups = (n - 2 + b - 1) / b;
  if (groups < 1) groups = 1;
  return sizeof(double) * (size_t)(groups * gstat_cu_sb2st_steps(n, b) * b * b);
}

extern "C" cudaError_t gstat_cu_sb2st_apply(const double *vs, const double *taus, int64_t n,
                                            int64_t b, double *tg, double *z, cudaStream_t st) {
  if (b < 1 || b > 64) return cudaErrorInvalidValue;
  if (n <= 2) return cudaSuccess;
  cudaError_t err;
  const int64_t steps = gstat_cu_sb2st_steps(n, b), groups = (n - 2 + b - 1) / b;
  const size_t tsm = sizeof(double) * (size_t)(2 * b * b + b), asm_ = apply_smem(b);
  if ((err = cudaFuncSetAttribute(group_t_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)tsm)) != cudaSuccess ||
      (err = cudaFuncSetAttribute(apply_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  (int)asm_)) != cudaSuccess)
    return err;
  group_t_kernel<<<dim3((unsigned)steps, (unsigned)groups), 128, tsm, st>>>(vs, taus, n, b, steps,
                                                                            tg);
  apply_kernel<<<(unsigned)((n + kApplyCols - 1) / kApplyCols), kThreads, asm_, st>>>(vs, tg, n, b,
                                                                                      steps, z);
  return cudaGetLastError();
}
