/* Exact k nearest neighbours on the device (knn_kernels.h): a centred copy
 * and its squared norms for the GEMM distances, a per-row threshold by two
 * 12-bit histogram passes and the candidates under it (in low dimensions: a
 * thread per row over tiles of the points, no distance block), the candidates'
 * exact distances sorted in shared memory, and the exhaustive path (every
 * distance of a row, stably sorted) for rows whose candidates overflow. */
#include <climits>
#include <cmath>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "common.cuh"
#include "knn_kernels.h"

namespace gstat_cu {
namespace {

constexpr int kThreads = 256;
constexpr int kBins = 4096; /* 12 bits of a float key per histogram pass */

/* ---- the centred, scaled copy ---- */

/* stats[c] = mean of column c (double), stats[p + c] = its largest |deviation|. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    col_stats(const T *__restrict__ x, int64_t n, int64_t p, double *__restrict__ stats) {
  __shared__ double part[kThreads];
  const int64_t c = blockIdx.x;
  const T *col = x + c * n;
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) s += (double)col[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int h = kThreads / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  const double mean = part[0] / (double)n;
  __syncthreads();
  double m = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) m = fmax(m, fabs((double)col[i] - mean));
  part[threadIdx.x] = m;
  __syncthreads();
  for (int h = kThreads / 2; h > 0; h /= 2) {
    if (threadIdx.x < h) part[threadIdx.x] = fmax(part[threadIdx.x], part[threadIdx.x + h]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    stats[c] = mean;
    stats[p + c] = part[0];
  }
}

/* stats[2p] = 2^-e, 2^e the binade of the largest deviation (1 when none). */
__global__ void scale_of(double *stats, int64_t p) {
  double spread = 0;
  for (int64_t c = 0; c < p; c++) spread = fmax(spread, stats[p + c]);
  int e = 0;
  if (spread > 0) frexp(spread, &e);
  stats[2 * p] = ldexp(1.0, -e);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    center_scaled(const T *__restrict__ x, T *__restrict__ y, int64_t n, int64_t p,
                  const double *__restrict__ stats) {
  const double scale = stats[2 * p];
  for (int64_t e = (int64_t)blockIdx.x * kThreads + threadIdx.x; e < n * p;
       e += (int64_t)gridDim.x * kThreads)
    y[e] = (T)(((double)x[e] - stats[e / n]) * scale);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    squared_norms(const T *__restrict__ y, T *__restrict__ sq, int64_t n, int64_t p) {
  const int64_t i = (int64_t)blockIdx.x * kThreads + threadIdx.x;
  if (i >= n) return;
  T s = 0;
  for (int64_t c = 0; c < p; c++) s += y[i + c * n] * y[i + c * n];
  sq[i] = s;
}

/* ---- the threshold and the candidates ---- */

/* A float key >= a + B (rounded up for double data), and its bits (keys
 * are >= 0, so the bits order as the values). */
__device__ __forceinline__ float hi_key(float a, float b) {
  return a + b;
}
__device__ __forceinline__ float hi_key(double a, double b) {
  return __double2float_ru(a + b);
}

/* The bin of hist (kBins) holding the target-th smallest key (1-based) and
 * how many keys lie in the bins before it, into *bin / *before. */
__device__ void find_bin(const unsigned *hist, unsigned target, unsigned *bin, unsigned *before) {
  typedef cub::BlockScan<unsigned, kThreads> scan_t;
  __shared__ typename scan_t::TempStorage tmp;
  constexpr int per = kBins / kThreads;
  unsigned local = 0, start = 0;
  for (int q = 0; q < per; q++) local += hist[threadIdx.x * per + q];
  scan_t(tmp).ExclusiveSum(local, start);
  if (start < target && target <= start + local) {
    for (int q = 0; q < per; q++) {
      unsigned h = hist[threadIdx.x * per + q];
      if (start + h >= target) {
        *bin = threadIdx.x * per + q;
        *before = start;
        break;
      }
      start += h;
    }
  }
  __syncthreads();
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    select_rows(const T *__restrict__ dots, const T *__restrict__ sq, int64_t n, int64_t r0,
                int64_t kp, T c, T eta, int cap, int *__restrict__ cand, int *__restrict__ count) {
  __shared__ unsigned hist[kBins];
  __shared__ unsigned bin1, before1, bin2, before2;
  __shared__ int stored;
  const int64_t r = blockIdx.x, i = r0 + r;
  const T *row = dots + r * n;
  const T si = sq[i];
  for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
  if (threadIdx.x == 0) stored = 0;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < n; j += kThreads) { /* pass 1: the top 12 bits */
    if (j == i) continue;
    T s = si + sq[j], a = s - 2 * row[j];
    a = a > 0 ? a : (T)0;
    atomicAdd(&hist[__float_as_uint(hi_key(a, c * s + eta)) >> 19], 1u);
  }
  __syncthreads();
  find_bin(hist, (unsigned)kp, &bin1, &before1);
  for (int b = threadIdx.x; b < kBins; b += kThreads) hist[b] = 0;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < n; j += kThreads) { /* pass 2: the next 12 in that bin */
    if (j == i) continue;
    T s = si + sq[j], a = s - 2 * row[j];
    a = a > 0 ? a : (T)0;
    unsigned u = __float_as_uint(hi_key(a, c * s + eta));
    if (u >> 19 == bin1) atomicAdd(&hist[(u >> 7) & (kBins - 1)], 1u);
  }
  __syncthreads();
  find_bin(hist, (unsigned)kp - before1, &bin2, &before2);
  /* kp keys lie at or below the top of that bin: a bound of the kp-th */
  const T thr = (T)__uint_as_float(bin1 << 19 | bin2 << 7 | 0x7fu);
  for (int64_t j = threadIdx.x; j < n; j += kThreads) { /* pass 3: every j that may beat it */
    if (j == i) continue;
    T s = si + sq[j], a = s - 2 * row[j];
    a = a > 0 ? a : (T)0;
    if (a - (c * s + eta) <= thr) {
      int at = atomicAdd(&stored, 1);
      if (at < cap) cand[r * cap + at] = (int)j;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) count[r] = stored;
}

/* ---- low dimensions: the candidates from the coordinates ---- */

/* A thread per query row, the points streamed through shared memory in
 * tiles, each distance formed as the GEMM forms it (a = s - 2 y_i.y_j, s =
 * sq_i + sq_j, the dot an FMA chain: select_rows' bound B = c s + eta covers
 * it) and never stored. One pass: the kp smallest a + B so far give the
 * threshold (an upper bound of the final one, which it reaches at the end),
 * and every j with a - B at or below the current threshold is written to the
 * row's list; a full list is compacted against the threshold of the moment,
 * and a list still full then overflows (the exhaustive path). The list holds
 * a superset of the final candidates: the exact step sorts them anyway. */
constexpr int kFusedThreads = 128;

/* 16 bytes from registers to shared memory in one store (the tile's rows
 * are 16-byte multiples: fewer bank conflicts than scalar stores). */
__device__ __forceinline__ void store16(float *dst, const float *src) {
  *reinterpret_cast<float4 *>(dst) = make_float4(src[0], src[1], src[2], src[3]);
}
__device__ __forceinline__ void store16(double *dst, const double *src) {
  *reinterpret_cast<double2 *>(dst) = make_double2(src[0], src[1]);
}

/* a - B and a + B for the pair (q: the row's coordinates, v: the point's,
 * v[P] its squared norm); the same instructions wherever it is called. */
template <typename T, int P>
__device__ __forceinline__ void pair_bounds(const T (&q)[P], T si, const T *v, T c, T eta, T *lo,
                                            T *hi) {
  T dot = 0;
#pragma unroll
  for (int d = 0; d < P; d++) dot = fma(q[d], v[d], dot);
  const T s = si + v[P], a = fma((T)-2, dot, s), b = fma(c, s, eta);
  *lo = a - b;
  *hi = a + b;
}

/* How many entries of row i's list (its first `stored`) have a - B at or
 * below thr, moved to the front. Out of line, the row's coordinates read
 * again: it runs rarely and keeps the hot loop's registers its own. */
template <typename T, int P>
__device__ __noinline__ int compact_list(const T *__restrict__ y, const T *__restrict__ sq,
                                         int64_t n, int p, int64_t i, T c, T eta, T thr, int *list,
                                         int stored) {
  T q[P], v[P + 1], lo, hi;
#pragma unroll
  for (int d = 0; d < P; d++) q[d] = d < p ? y[i + d * n] : (T)0;
  int kept = 0;
  for (int t = 0; t < stored; t++) {
    const int j = list[t];
#pragma unroll
    for (int d = 0; d < P; d++) v[d] = d < p ? y[j + d * n] : (T)0;
    v[P] = sq[j];
    pair_bounds<T, P>(q, sq[i], v, c, eta, &lo, &hi);
    if (lo <= thr) list[kept++] = j;
  }
  return kept;
}

/* One query row per thread (the 39th session's H100 run: two rows a thread,
 * each point read from shared memory serving both, was slower at every
 * shape; bench/README.md). A row that overflows, or lies past the block,
 * gets threshold -inf and admits nothing more. */
template <typename T, int P>
__global__ void __launch_bounds__(kFusedThreads)
    fused_select_rows(const T *__restrict__ y, const T *__restrict__ sq, int64_t n, int p,
                      int64_t r0, int64_t rb, int kp, T c, T eta, int cap, int *__restrict__ cand,
                      int *__restrict__ count) {
  constexpr int W = P + 16 / sizeof(T); /* coordinates, norm, padding: 16-byte rows */
  __shared__ __align__(16) T tile[kFusedThreads][W];
  const int64_t r = (int64_t)blockIdx.x * kFusedThreads + threadIdx.x;
  const bool active = r < rb;
  const int self = (int)(r0 + r);
  const T si = active ? sq[r0 + r] : (T)0;
  T q[P], top[GSTAT_CU_KNN_FUSED_MAX_KP];
#pragma unroll
  for (int a = 0; a < P; a++) q[a] = active && a < p ? y[r0 + r + a * n] : (T)0;
  for (int t = 0; t < kp; t++) top[t] = (T)INFINITY;
  T worst = active ? (T)INFINITY : (T)-INFINITY; /* top[kp - 1], in a register */
  int stored = 0;
  int *list = cand + r * cap;
  for (int64_t j0 = 0; j0 < n; j0 += kFusedThreads) {
    const int64_t jt = j0 + threadIdx.x;
    __syncthreads();
    T row[W];
#pragma unroll
    for (int a = 0; a < W; a++) row[a] = jt < n && a < p ? y[jt + a * n] : (T)0;
    row[P] = jt < n ? sq[jt] : (T)0;
#pragma unroll
    for (int a = 0; a < W; a += 16 / sizeof(T)) store16(&tile[threadIdx.x][a], &row[a]);
    __syncthreads();
    if (!(worst > (T)-INFINITY)) continue; /* this row admits nothing more */
    const int m = n - j0 < kFusedThreads ? (int)(n - j0) : kFusedThreads;
#pragma unroll 4
    for (int t = 0; t < m; t++) {
      const int j = (int)(j0 + t);
      T v[P + 1];
#pragma unroll
      for (int a = 0; a <= P; a++) v[a] = tile[t][a];
      T lo, hi;
      pair_bounds<T, P>(q, si, v, c, eta, &lo, &hi);
      if (!(lo <= worst) || j == self) continue; /* NaN: never a candidate */
      if (hi < worst) {                          /* insertion into the sorted kp */
        int at = kp - 1;
        for (; at > 0 && top[at - 1] > hi; at--) top[at] = top[at - 1];
        top[at] = hi;
        worst = top[kp - 1];
      }
      if (stored == cap) stored = compact_list<T, P>(y, sq, n, p, self, c, eta, worst, list, cap);
      if (stored == cap) { /* still full: the exhaustive path takes the row */
        stored = cap + 1;
        worst = (T)-INFINITY;
        continue;
      }
      list[stored++] = j;
    }
  }
  if (active) count[r] = stored;
}

/* ---- exact distances and the final order ---- */

/* The CPU's exact squared distance: differences in double, squared and
 * summed in column order, each operation rounded on its own (no FMA). */
template <typename T>
__device__ __forceinline__ double exact_d2(const T *__restrict__ x, int64_t n, int64_t p, int64_t i,
                                           int64_t j) {
  double s = 0;
  for (int64_t c = 0; c < p; c++) {
    double g = __dsub_rn((double)x[i + c * n], (double)x[j + c * n]);
    s = __dadd_rn(s, __dmul_rn(g, g));
  }
  return s;
}

__device__ __forceinline__ bool after(double da, int ja, double db, int jb, bool by_index) {
  return by_index ? ja > jb : (da > db || (da == db && ja > jb));
}

/* Ascending bitonic sort of the m (a power of two) entries (d, j) in shared
 * memory, by (d, j) or by j alone. */
__device__ void bitonic(double *d, int *j, int m, bool by_index) {
  for (int size = 2; size <= m; size *= 2)
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int t = threadIdx.x; t < m / 2; t += blockDim.x) {
        int lo = (t / stride) * stride * 2 + t % stride, hi = lo + stride;
        bool up = (lo & size) == 0;
        if (after(d[lo], j[lo], d[hi], j[hi], by_index) == up) {
          double td = d[lo];
          int tj = j[lo];
          d[lo] = d[hi];
          j[lo] = j[hi];
          d[hi] = td;
          j[hi] = tj;
        }
      }
      __syncthreads();
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    exact_rows(const T *__restrict__ x, int64_t n, int64_t p, int64_t r0, int64_t kp,
               int include_self, int cap, const int *__restrict__ cand,
               const int *__restrict__ count, int64_t *__restrict__ nbr, double *__restrict__ d2,
               int *__restrict__ overflow) {
  extern __shared__ double smem[];
  double *d = smem;
  int *jj = (int *)(smem + cap);
  const int64_t r = blockIdx.x, i = r0 + r, k = kp + include_self;
  const int cnt = count[r];
  if (threadIdx.x == 0) overflow[r] = cnt > cap;
  if (cnt > cap) return;
  for (int t = threadIdx.x; t < cap; t += kThreads) {
    bool real = t < cnt;
    int j = real ? cand[r * cap + t] : INT_MAX;
    d[t] = real ? exact_d2(x, n, p, i, j) : INFINITY;
    jj[t] = j;
  }
  __syncthreads();
  bitonic(d, jj, cap, false);
  int m = 1;
  while (m < k) m *= 2;
  for (int t = threadIdx.x + (int)kp; t < cap; t += kThreads) { /* keep kp, then self */
    bool self = include_self && t == kp;
    d[t] = self ? 0.0 : INFINITY;
    jj[t] = self ? (int)i : INT_MAX;
  }
  __syncthreads();
  bitonic(d, jj, m, true);
  for (int t = threadIdx.x; t < k; t += kThreads) {
    nbr[r * k + t] = jj[t];
    d2[r * k + t] = d[t];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    all_distances(const T *__restrict__ x, int64_t n, int64_t p, const int *__restrict__ rows,
                  int64_t g, double *__restrict__ keys, int *__restrict__ vals,
                  int *__restrict__ offsets) {
  const int64_t q = blockIdx.y;
  const int64_t i = rows[q];
  for (int64_t j = (int64_t)blockIdx.x * kThreads + threadIdx.x; j < n;
       j += (int64_t)gridDim.x * kThreads) {
    keys[q * n + j] = exact_d2(x, n, p, i, j);
    vals[q * n + j] = (int)j;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    offsets[q] = (int)(q * n);
    if (q == g - 1) offsets[g] = (int)(g * n);
  }
}

int blocks_for(int64_t count) {
  int64_t b = (count + kThreads - 1) / kThreads;
  return (int)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

}  // namespace
}  // namespace gstat_cu

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_knn_center(int dtype, const void *x, void *y, void *sq, int64_t n,
                                           int64_t p, double *stats, cudaStream_t stream) {
  if ((dtype != kF32 && dtype != kF64) || n < 1 || p < 1 || p > 65535 * 64)
    return cudaErrorInvalidValue;
  int nb = (int)((n + kThreads - 1) / kThreads);
  if (dtype == kF32) {
    col_stats<<<(unsigned)p, kThreads, 0, stream>>>((const float *)x, n, p, stats);
    scale_of<<<1, 1, 0, stream>>>(stats, p);
    center_scaled<<<blocks_for(n * p), kThreads, 0, stream>>>((const float *)x, (float *)y, n, p,
                                                              stats);
    squared_norms<<<nb, kThreads, 0, stream>>>((const float *)y, (float *)sq, n, p);
  } else {
    col_stats<<<(unsigned)p, kThreads, 0, stream>>>((const double *)x, n, p, stats);
    scale_of<<<1, 1, 0, stream>>>(stats, p);
    center_scaled<<<blocks_for(n * p), kThreads, 0, stream>>>((const double *)x, (double *)y, n, p,
                                                              stats);
    squared_norms<<<nb, kThreads, 0, stream>>>((const double *)y, (double *)sq, n, p);
  }
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_knn_select(int dtype, const void *dots, const void *sq, int64_t n,
                                           int64_t r0, int64_t rb, int64_t kp, double c, double eta,
                                           int cap, int *cand, int *count, cudaStream_t stream) {
  if ((dtype != kF32 && dtype != kF64) || kp < 1 || kp >= n || rb < 1 || rb > INT_MAX)
    return cudaErrorInvalidValue;
  if (dtype == kF32)
    select_rows<<<(unsigned)rb, kThreads, 0, stream>>>(
        (const float *)dots, (const float *)sq, n, r0, kp, (float)c, (float)eta, cap, cand, count);
  else
    select_rows<<<(unsigned)rb, kThreads, 0, stream>>>((const double *)dots, (const double *)sq, n,
                                                       r0, kp, c, eta, cap, cand, count);
  return cudaGetLastError();
}

template <typename T>
static void launch_fused(const T *y, const T *sq, int64_t n, int p, int64_t r0, int64_t rb, int kp,
                         T c, T eta, int cap, int *cand, int *count, cudaStream_t stream) {
  const unsigned blocks = (unsigned)((rb + kFusedThreads - 1) / kFusedThreads);
#define FUSED(P)          \
  fused_select_rows<T, P> \
      <<<blocks, kFusedThreads, 0, stream>>>(y, sq, n, p, r0, rb, kp, c, eta, cap, cand, count)
  if (p <= 4)
    FUSED(4);
  else if (p <= 8)
    FUSED(8);
  else if (p <= 12)
    FUSED(12);
  else if (p <= 16)
    FUSED(16);
  else if (p <= 24)
    FUSED(24);
  else
    FUSED(32);
#undef FUSED
}

extern "C" cudaError_t gstat_cu_knn_fused_select(int dtype, const void *y, const void *sq,
                                                 int64_t n, int64_t p, int64_t r0, int64_t rb,
                                                 int64_t kp, double c, double eta, int cap,
                                                 int *cand, int *count, cudaStream_t stream) {
  if ((dtype != kF32 && dtype != kF64) || p < 1 || p > GSTAT_CU_KNN_FUSED_MAX_P || kp < 1 ||
      kp > GSTAT_CU_KNN_FUSED_MAX_KP || kp >= n || rb < 1 || rb > INT_MAX || n > INT_MAX)
    return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_fused((const float *)y, (const float *)sq, n, (int)p, r0, rb, (int)kp, (float)c,
                 (float)eta, cap, cand, count, stream);
  else
    launch_fused((const double *)y, (const double *)sq, n, (int)p, r0, rb, (int)kp, c, eta, cap,
                 cand, count, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_knn_exact(int dtype, const void *x, int64_t n, int64_t p,
                                          int64_t r0, int64_t rb, int64_t kp, int include_self,
                                          int cap, const int *cand, const int *count, int64_t *nbr,
                                          double *d2, int *overflow, cudaStream_t stream) {
  if ((dtype != kF32 && dtype != kF64) || cap < 2 || cap > GSTAT_CU_KNN_MAX_CAP ||
      (cap & (cap - 1)) || kp + include_self > cap || rb < 1 || rb > INT_MAX)
    return cudaErrorInvalidValue;
  size_t shared = (size_t)cap * (sizeof(double) + sizeof(int));
  if (dtype == kF32)
    exact_rows<<<(unsigned)rb, kThreads, shared, stream>>>(
        (const float *)x, n, p, r0, kp, include_self, cap, cand, count, nbr, d2, overflow);
  else
    exact_rows<<<(unsigned)rb, kThreads, shared, stream>>>(
        (const double *)x, n, p, r0, kp, include_self, cap, cand, count, nbr, d2, overflow);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_knn_all_distances(int dtype, const void *x, int64_t n, int64_t p,
                                                  const int *rows, int64_t g, double *keys,
                                                  int *vals, int *offsets, cudaStream_t stream) {
  if ((dtype != kF32 && dtype != kF64) || g < 1 || g > 65535 || g * n > INT_MAX)
    return cudaErrorInvalidValue;
  dim3 grid((unsigned)blocks_for(n < 64 * kThreads ? n : 64 * kThreads), (unsigned)g);
  if (dtype == kF32)
    all_distances<<<grid, kThreads, 0, stream>>>((const float *)x, n, p, rows, g, keys, vals,
                                                 offsets);
  else
    all_distances<<<grid, kThreads, 0, stream>>>((const double *)x, n, p, rows, g, keys, vals,
                                                 offsets);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_knn_sort_segments(const double *keys, const int *vals,
                                                  double *keys_out, int *vals_out, int64_t g,
                                                  int64_t n, const int *offsets, void *temp,
                                                  size_t *temp_bytes, cudaStream_t stream) {
  return cub::DeviceSegmentedSort::StableSortPairs(
      temp, *temp_bytes, keys, keys_out, vals, vals_out, g * n, g, offsets, offsets + 1, stream);
}
