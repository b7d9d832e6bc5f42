/*
 * Band to tridiagonal by bulge chasing, float64, band kB = 32 (sb2st.h).
 *
 * Task (j, k) of sweep j, with r0 = j + 1 + k b and len = min(b, n - r0):
 *   - a reflector H from column c0 (j for k = 0, else r0 - b), rows
 *     r0 .. r0 + len, that leaves beta at row r0 and zeros below;
 *   - for k > 0, H from the left on the rest of that block R (columns
 *     c0 + 1 .. c0 + b - 1);
 *   - H on both sides of the diagonal block D = A[r0 .. r0 + len)^2;
 *   - H from the right on the block E below D (rows r0 + len .. + b),
 *     which fills it: the bulge that task (j, k + 1) chases.
 * Task (j, k) touches columns [c0, c0 + 2b) and rows [c0 + b, c0 + 3b);
 * task (j - 1, k + 2) is the last of sweep j - 1 that it overlaps, in one
 * element: the beta it writes first. So sweep j runs task k once sweep
 * j - 1 has finished k + 2 tasks and written beta of the next; progress[j]
 * counts 2 per finished task and 1 for a written beta. Sweeps go
 * round-robin to resident blocks (one cooperative launch) that wait on
 * each other's progress counters; the band lives in L2 (2b x n doubles)
 * and is read and written with .cg accesses, past L1. Task (j, k + 1)'s R
 * is task (j, k)'s E, which nothing else writes between them: it stays in
 * shared memory, which is much faster than every task reading its three
 * blocks (the times and a task's breakdown: bench/README.md, "Measurements
 * moved from code comments").
 *
 * The back-transformation groups the reflectors of L = b consecutive
 * sweeps at one step k (their rows overlap, shifted by one per sweep) into
 * one block reflector I - V T V^T of height b + L - 1, and forms M Q2 =
 * M H_1 H_2 ...: where two reflectors share a row, the earlier-generated
 * one meets M first. So the groups go from the first sweep group to the
 * last and, within one, from its last step down (wavefronts of groups
 * that share no row), each wavefront as soon as the chase has finished
 * the sweeps it needs.
 */
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "sb2st.h"

namespace {

constexpr int kB = GSTAT_CU_SB2ST_BAND, kL = GSTAT_CU_SB2ST_GROUP, kH = kB + kL - 1;
constexpr int kLd = kB + 1; /* shared blocks: odd, so rows and columns are conflict-free */
/* threads per bulge-chasing task: the fastest of 128, 256 and 512, measured
 * before R stayed in shared memory (bench/README.md, "Measurements moved
 * from code comments") */
constexpr int kThreads = 512;
using gstat_cu::kFullMask;
static_assert(kB == 32 && kThreads == 16 * kB, "a task's index arithmetic assumes these");

__device__ __forceinline__ double ldg(const double *p) {
  return __ldcg(p);
}
__device__ __forceinline__ void stg(double *p, double x) {
  __stcg(p, x);
}

/* A(i, j) of the band, 0 <= i - j < 2b. */
struct band {
  double *ab;
  __device__ double *at(int64_t i, int64_t j) const {
    return ab + (i - j) + j * (2 * kB);
  }
};

__host__ __device__ int64_t sweep_steps(int64_t n, int64_t j) {
  return j > n - 3 ? 0 : (n - 3 - j) / kB + 1;
}

__device__ double warp_sum(double x) {
  for (int o = 16; o; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

/* the sum over the 16 lanes of a half warp */
__device__ __forceinline__ double half_sum(double x) {
  for (int o = 8; o; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
  return x;
}

__device__ void chase_task(band A, int64_t n, int64_t j, int64_t k, double *sR, double *sD,
                           double *sE, double *sv, double *sp, double *sq, double *ss, double *vout,
                           double *tau_out, int *progress) {
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
  if (warp == 0) { /* the reflector (LAPACK's dlarfg) from R's first column */
    const double x = lane < len ? sR[lane] : 0.0, alpha = __shfl_sync(kFullMask, x, 0);
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

/* Shared memory of chase_kernel: R and E (they swap roles), D, and v, p,
 * q, s (kB each) with tau. */
constexpr size_t kChaseSmem = sizeof(double) * (size_t)(3 * kB * kLd + 4 * kB + 4);
static_assert(kChaseSmem <= 48 * 1024, "within the default dynamic shared memory");

__global__ void __launch_bounds__(kThreads)
    chase_kernel(double *ab, int64_t n, int64_t steps, double *vs, double *taus, int *progress) {
  extern __shared__ double sm[];
  const band A{ab};
  double *buf0 = sm, *buf1 = buf0 + kB * kLd, *sD = buf1 + kB * kLd, *sv = sD + kB * kLd,
         *sp = sv + kB, *sq = sp + kB, *ss = sq + kB;
  for (int64_t j = blockIdx.x; j < n - 2; j += gridDim.x) {
    const int64_t nk = sweep_steps(n, j);
    double *sR = buf0, *sE = buf1;
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
      chase_task(A, n, j, k, sR, sD, sE, sv, sp, sq, ss, vs + (j * steps + k) * kB,
                 taus + j * steps + k, progress + j);
      /* the block's stores, then one fence and the flag (the grid barrier's
       * pattern: the fence after the barrier covers the whole block) */
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        *(volatile int *)(progress + j) = k + 1 == nk ? INT_MAX : (int)(2 * (k + 1));
      }
      double *t = sR;
      sR = sE;
      sE = t;
    }
  }
}

__global__ void load_band(const double *a, int64_t lda, int64_t n, double *ab) {
  const int64_t j = blockIdx.y, r = threadIdx.x;
  if (r < 2 * kB) ab[r + j * 2 * kB] = (r <= kB && j + r < n) ? a[(j + r) + j * lda] : 0.0;
}

__global__ void tridiagonal_of(const double *ab, int64_t n, double *d, double *e) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) d[i] = ab[i * 2 * kB];
  if (i < n - 1) e[i] = ab[1 + i * 2 * kB];
}

/* Q2's groups: G sweep groups of kL, applied in wavefronts t = (G - 1 - J)
 * + k. Wave t holds Jp = G - 1 - J from first_jp(t) to min(t, G - 1): k =
 * t - Jp must be below group J's steps, which fall as J rises, so the
 * valid Jp are one range. */
__host__ __device__ int64_t sweep_groups(int64_t n) {
  return (n - 2 + kL - 1) / kL;
}
__host__ __device__ int64_t q2_waves(int64_t n) {
  return sweep_groups(n) - 1 + sweep_steps(n, 0);
}
/* The first Jp of wave t whose k = t - Jp is a step of its group. */
__host__ __device__ int64_t wave_first(int64_t n, int64_t t) {
  const int64_t G = sweep_groups(n), hi = t < G - 1 ? t : G - 1;
  int64_t lo = 0, up = hi + 1;
  while (lo < up) {
    const int64_t mid = (lo + up) / 2;
    if (t - mid < sweep_steps(n, (G - 1 - mid) * kL))
      up = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

__host__ __device__ int64_t wave_size(int64_t n, int64_t t) {
  const int64_t G = sweep_groups(n), hi = t < G - 1 ? t : G - 1, lo = wave_first(n, t);
  return hi - lo + 1 > 0 ? hi - lo + 1 : 0;
}

/* Spin (one thread) until sweeps from..upto - 1 have finished: a wave of
 * Q2 may start while the chase still runs on another stream. */
__global__ void wait_sweeps(const int *progress, int64_t from, int64_t upto) {
  for (int64_t j = from; j < upto; j++)
    while (*(const volatile int *)(progress + j) != INT_MAX) __nanosleep(256);
  __threadfence();
}

/* gj, gk and the gemms' pointer arrays of every group, wave by wave (one
 * block; thread t lays out waves t, t + blockDim, ...; the waves' first
 * groups by a running sum over them). */
__global__ void q2_index(int64_t n, int *gj, int *gk, const double **ptr, int64_t groups,
                         double *vg, double *yg, double *w, double *m) {
  const int64_t G = sweep_groups(n), waves = q2_waves(n);
  for (int64_t t = threadIdx.x; t < waves; t += blockDim.x) {
    int64_t g = 0;
    for (int64_t u = 0; u < t; u++) g += wave_size(n, u);
    const int64_t cnt = wave_size(n, t), hi = t < G - 1 ? t : G - 1;
    for (int64_t i = 0; i < cnt; i++, g++) {
      const int64_t Jp = hi - cnt + 1 + i, J = G - 1 - Jp, k = t - Jp;
      const int64_t row0 = J * kL + 1 + k * kB;
      gj[g] = (int)J;
      gk[g] = (int)k;
      ptr[g] = yg + g * kH * kL;
      ptr[groups + g] = m + row0 * n;
      ptr[2 * groups + g] = w + i * kL * n;
      ptr[3 * groups + g] = vg + g * kH * kL;
    }
  }
}

/* Column i of group (J, k): the vector of sweep J kL + i at step k, NULL
 * when that sweep has no such step. */
__device__ const double *group_vector(const double *vs, int64_t n, int64_t steps, int64_t J,
                                      int64_t k, int64_t i) {
  const int64_t j = J * kL + i;
  return j < n - 2 && k < sweep_steps(n, j) ? vs + (j * steps + k) * kB : nullptr;
}

/* Group g's block reflector I - V T V^T (forward, columnwise, as dlarft:
 * T(i,i) = tau_i, T(i,c) = -tau_c sum_{l=i}^{c-1} T(i,l) (v_l . v_c)),
 * written as V (kH x kL) and Y = V T^T (kH x kL): the group then acts as
 * M -= (M V) Y^T from the right. One block per group; T's row i by thread i (it depends
 * on row i alone). */
constexpr size_t kGroupSmem = sizeof(double) * (size_t)(kH * kL + 2 * kL * kL + kL);
static_assert(kGroupSmem <= 48 * 1024, "within the default dynamic shared memory");

__global__ void group_vy_kernel(const double *vs, const double *taus, int64_t n, int64_t steps,
                                const int *gj, const int *gk, int64_t g0, double *vg, double *yg) {
  extern __shared__ double sm[];
  const int64_t g = g0 + blockIdx.x, J = gj[g], k = gk[g];
  double *v = sm, *gram = v + kH * kL, *t = gram + kL * kL, *tau = t + kL * kL;
  for (int idx = threadIdx.x; idx < kH * kL; idx += blockDim.x) {
    const int r = idx % kH, i = idx / kH, off = r - i;
    const double *vi = group_vector(vs, n, steps, J, k, i);
    v[idx] = vi && off >= 0 && off < kB ? vi[off] : 0.0;
  }
  for (int i = threadIdx.x; i < kL; i += blockDim.x)
    tau[i] = group_vector(vs, n, steps, J, k, i) ? taus[(J * kL + i) * steps + k] : 0.0;
  __syncthreads();
  for (int idx = threadIdx.x; idx < kL * kL; idx += blockDim.x) {
    const int l = idx % kL, c = idx / kL;
    double s = 0.0;
    if (l < c)
      for (int r = c; r < l + kB; r++) s += v[r + l * kH] * v[r + c * kH];
    gram[idx] = s;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kL; i += blockDim.x)
    gstat_cu::larft_row(gram, kL, tau, t, kL, kL, i);
  __syncthreads();
  double *vo = vg + g * kH * kL, *yo = yg + g * kH * kL;
  for (int idx = threadIdx.x; idx < kH * kL; idx += blockDim.x) {
    const int r = idx % kH, i = idx / kH;
    double s = 0.0;
    for (int l = i; l < kL; l++) s += v[r + l * kH] * t[i + l * kL];
    vo[idx] = v[idx];
    yo[idx] = s;
  }
}

/* The widest wave (groups applied by one pair of batched gemms). */
int64_t widest_wave(int64_t n) {
  int64_t m = 0;
  for (int64_t t = 0; t < q2_waves(n); t++) {
    const int64_t c = wave_size(n, t);
    if (c > m) m = c;
  }
  return m;
}

int64_t group_count(int64_t n) {
  int64_t g = 0;
  for (int64_t t = 0; t < q2_waves(n); t++) g += wave_size(n, t);
  return g;
}

}  // namespace

extern "C" int64_t gstat_cu_sb2st_steps(int64_t n) {
  const int64_t s = sweep_steps(n, 0);
  return s > 0 ? s : 1;
}

extern "C" cudaError_t gstat_cu_sb2st_load(const double *a, int64_t lda, int64_t n, double *ab,
                                           cudaStream_t st) {
  if (n < 1) return cudaSuccess;
  load_band<<<dim3(1, (unsigned)n), (unsigned)(2 * kB), 0, st>>>(a, lda, n, ab);
  return cudaGetLastError();
}

extern "C" int64_t gstat_cu_sb2st_blocks(int64_t n, int sms) {
  /* A sweep of nk tasks is about 0.37 nk sweep periods long (a task 3.2
   * us, a sweep started every 8.7 at n = 4096): steps / 2 + 8 blocks keep
   * every sweep from waiting for a block and leave the other SMs to work
   * on another stream (two_stage.c forms Q1 Q2 meanwhile). */
  const int64_t want = gstat_cu_sb2st_steps(n) / 2 + 8;
  int64_t blocks = sms < n - 2 ? sms : n - 2;
  return blocks > want ? want : blocks;
}

extern "C" cudaError_t gstat_cu_sb2st_reduce(double *ab, int64_t n, double *vs, double *taus,
                                             int *progress, double *d, double *e, cudaStream_t st) {
  if (n < 1) return cudaSuccess;
  cudaError_t err;
  if (n > 2) {
    int dev, sms, per_sm;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess ||
        (err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chase_kernel, kThreads,
                                                             kChaseSmem)) != cudaSuccess)
      return err;
    if (per_sm < 1) return cudaErrorLaunchOutOfResources;
    int64_t steps = gstat_cu_sb2st_steps(n), blocks = gstat_cu_sb2st_blocks(n, sms);
    /* a slot left over: a kernel spinning on the counters on another stream
     * (two_stage.c's wait_sweeps) never holds the room a block needs */
    if (blocks > (int64_t)sms * per_sm - 1) blocks = (int64_t)sms * per_sm - 1;
    if (blocks < 1) return cudaErrorLaunchOutOfResources;
    void *args[] = {&ab, &n, &steps, &vs, &taus, &progress};
    if ((err = cudaLaunchCooperativeKernel((const void *)chase_kernel, dim3((unsigned)blocks),
                                           dim3(kThreads), args, kChaseSmem, st)) != cudaSuccess)
      return err;
  }
  tridiagonal_of<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(ab, n, d, e);
  return cudaGetLastError();
}

extern "C" gstat_cu_sb2st_q2_parts gstat_cu_sb2st_q2_parts_at(size_t *at, int64_t n) {
  gstat_cu_sb2st_q2_parts p = {};
  if (n <= 2) return p;
  const int64_t groups = group_count(n), gb = groups * kH * kL;
  p.groups = groups;
  p.gj = gstat_cu_ws_part(at, sizeof(int) * (size_t)groups);
  p.gk = gstat_cu_ws_part(at, sizeof(int) * (size_t)groups);
  p.ptr = gstat_cu_ws_part(at, sizeof(double *) * (size_t)(4 * groups));
  p.vy = gstat_cu_ws_part(at, sizeof(double) * (size_t)(2 * gb));
  p.w = gstat_cu_ws_part(at, sizeof(double) * (size_t)(widest_wave(n) * kL * n));
  return p;
}

extern "C" int64_t gstat_cu_sb2st_q2_pad(void) {
  return kH;
}

extern "C" cudaError_t gstat_cu_sb2st_q2_right(char *base, const gstat_cu_sb2st_q2_parts *p,
                                               int64_t n, cublasHandle_t blas, const double *vs,
                                               const double *taus, const int *progress,
                                               int sm_limit, double *m, cudaStream_t st) {
  if (n <= 2) return cudaSuccess;
  const int64_t groups = p->groups, steps = gstat_cu_sb2st_steps(n), G = sweep_groups(n);
  int *gj = (int *)(base + p->gj), *gk = (int *)(base + p->gk);
  const double **ptr = (const double **)(base + p->ptr);
  double *vg = (double *)(base + p->vy), *yg = vg + groups * kH * kL, *w = (double *)(base + p->w);
  cudaError_t err;
  /* the last groups' columns may run kH past n */
  if ((err = cudaMemsetAsync(m + n * n, 0, sizeof(double) * (size_t)(kH * n), st)) != cudaSuccess)
    return err;
  q2_index<<<1, 512, 0, st>>>(n, gj, gk, ptr, groups, vg, yg, w, m);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if (cublasSetStream(blas, st) != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  const double one = 1.0, zero = 0.0, minus_one = -1.0;
  const int li = kL, hi = kH, ni = (int)n;
  /* M Q2 = M H_1 H_2 ... in the order the chase made them, where they
   * overlap: the waves from the last, whose groups are the first sweeps'
   * (wave t holds groups J = G - 1 - Jp for Jp from wave_first(t)). Each
   * group is M_c -= (M_c V) (V T)^T on kH columns M_c of M, n rows long
   * gemms. A wave waits for the sweeps of its groups to finish. */
  for (int64_t t = q2_waves(n) - 1, g1 = groups, ready = 0; t >= 0; t--) {
    const int64_t cnt = wave_size(n, t), g0 = g1 - cnt;
    g1 = g0;
    if (cnt == 0) continue;
    int64_t upto = (G - wave_first(n, t)) * kL; /* past the wave's last sweep */
    if (upto > n - 2) upto = n - 2;
    if (progress && upto > ready) {
      wait_sweeps<<<1, 1, 0, st>>>(progress, ready, upto);
      ready = upto;
    }
    /* while the chase runs, the gemms aim at the SMs it leaves */
    if (cublasSetSmCountTarget(blas, upto < n - 2 ? sm_limit : 0) != CUBLAS_STATUS_SUCCESS)
      return cudaErrorUnknown;
    group_vy_kernel<<<(unsigned)cnt, 128, kGroupSmem, st>>>(vs, taus, n, steps, gj, gk, g0, vg, yg);
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
    const double *const *Y = ptr + g0, *const *Mc = ptr + groups + g0,
                        *const *W = ptr + 2 * groups + g0, *const *V = ptr + 3 * groups + g0;
    if (cublasDgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, ni, li, hi, &one, Mc, ni, V, hi, &zero,
                           (double *const *)W, ni, (int)cnt) != CUBLAS_STATUS_SUCCESS ||
        cublasDgemmBatched(blas, CUBLAS_OP_N, CUBLAS_OP_T, ni, hi, li, &minus_one, W, ni, Y, hi,
                           &one, (double *const *)Mc, ni, (int)cnt) != CUBLAS_STATUS_SUCCESS)
      return cudaErrorUnknown;
  }
  return cublasSetSmCountTarget(blas, 0) == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}
