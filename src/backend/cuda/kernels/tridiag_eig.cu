/*
 * Eigenvalues and eigenvectors of a batch of symmetric tridiagonal matrices
 * (from gstat_cu_sytrd_column's d and e), in double whatever the input:
 *
 *  - values: bisection on Sturm counts (LAPACK's dlaebz recurrence, pivmin
 *    guard) to ulp * ||T|| (||T||: Gershgorin); a thread per eigenvalue in
 *    large batches, up to 8 (multisection) in small ones;
 *  - vectors: for each eigenvalue the twisted factorization of T - lambda I
 *    (top-down L D L^T and bottom-up U D U^T, twisted where |gamma_r| is
 *    least; Parlett and Dhillon), a thread per eigenvector. The vector is
 *    as orthogonal to its neighbours as eps ||T|| / gap allows, so a matrix
 *    whose relative gap is below the caller's tolerance is flagged and must
 *    be solved another way.
 *
 * Per matrix b: d, e at b*n (e's first n - 1 used); w (double) at b*n;
 * Zt and U (double) at b*n*n with element (k, i) at k*n + i: thread i
 * walks row after row, its neighbours beside it (coalesced).
 */
#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kTriThreads = 128;    /* the vectors' blocks */
constexpr int kBisectThreads = 512; /* the values' blocks */
/* Threads per launch (the whole batch) at which bisection stops giving an
 * eigenvalue more lanes (bisection_lanes): about 16 warps per SM of the
 * H200. */
constexpr int64_t kBisectFill = 65536;
constexpr int kMaxLanes = 8;

/* min and max over the block (whole warps, at most 32), every thread gets
 * both; scratch holds 64 doubles. */
__device__ void block_min_max(double &lo, double &hi, double *scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(kFullMask, lo, o));
    hi = fmax(hi, __shfl_xor_sync(kFullMask, hi, o));
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  if (lane == 0) scratch[warp] = lo, scratch[32 + warp] = hi;
  __syncthreads();
  lo = scratch[0], hi = scratch[32];
  for (int k = 1; k < warps; k++) lo = fmin(lo, scratch[k]), hi = fmax(hi, scratch[32 + k]);
  __syncthreads();
}

/* d and e of matrix b into shared memory as double: dd[n], e2[n] (e^2),
 * and ee[n] (e) when ee is not NULL. */
template <typename T>
__device__ void load_tridiag(const T *d, const T *e, int n, double *dd, double *e2, double *ee) {
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    dd[k] = (double)d[k];
    double x = k < n - 1 ? (double)e[k] : 0.0;
    e2[k] = x * x;
    if (ee) ee[k] = x;
  }
  __syncthreads();
}

/* Eigenvalues of T below or at x, as LAPACK's dlaebz counts them. */
__device__ int sturm_count(const double *dd, const double *e2, int n, double x, double pivmin) {
  double q = dd[0] - x;
  if (fabs(q) < pivmin) q = -pivmin;
  int c = q <= 0;
  for (int k = 1; k < n; k++) {
    q = (dd[k] - x) - e2[k - 1] / q;
    if (fabs(q) < pivmin) q = -pivmin;
    c += q <= 0;
  }
  return c;
}

/* grid (ceil(n * lanes / kBisectThreads), batch): w[i] = eigenvalue i
 * (ascending) in double, and in the output type divided by sigma[b];
 * norms[2b] = ||T|| (Gershgorin), norms[2b + 1] = pivmin; info[b] = 1 when
 * T is not finite (values NaN). Each eigenvalue has `lanes` adjacent lanes
 * of a warp (a power of two up to 32): each step they count at `lanes`
 * points splitting its interval into lanes + 1 parts, so a step gains
 * log2(lanes + 1) bits instead of one (multisection; one lane is plain
 * bisection). A step is a chain of n dependent divisions: with one matrix
 * of a few thousand, one lane per eigenvalue left about one warp per SM. */
template <typename T>
__global__ void __launch_bounds__(kBisectThreads)
    bisect(const T *d, const T *e, int n, int lanes, const double *sigma, double *wd, T *w,
           double *norms, int *info) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *dd = reinterpret_cast<double *>(smem_raw), *e2 = dd + n;
  __shared__ double scratch[64];
  const size_t b = blockIdx.y;
  load_tridiag(d + b * n, e + b * n, n, dd, e2, (double *)nullptr);
  double lo = INFINITY, hi = -INFINITY, emax2 = 0;
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    double r = (k > 0 ? sqrt(e2[k - 1]) : 0.0) + (k < n - 1 ? sqrt(e2[k]) : 0.0);
    lo = fmin(lo, dd[k] - r);
    hi = fmax(hi, dd[k] + r);
    emax2 = fmax(emax2, e2[k]);
  }
  /* a NaN anywhere makes the bounds NaN (fmin/fmax skip NaN: test each) */
  bool bad = false;
  for (int k = threadIdx.x; k < n; k += blockDim.x) bad |= !isfinite(dd[k]) || !isfinite(e2[k]);
  double neg_emax2 = -emax2, bad_d = bad ? 1.0 : 0.0;
  block_min_max(lo, hi, scratch);
  block_min_max(neg_emax2, bad_d, scratch);
  emax2 = -neg_emax2;
  const int lane = threadIdx.x & 31, first = lane & ~(lanes - 1), s = lane - first;
  const int i = (int)(((int64_t)blockIdx.x * kBisectThreads + threadIdx.x) / lanes);
  if (bad_d > 0 || !isfinite(lo) || !isfinite(hi)) {
    if (i < n && s == 0) {
      wd[b * n + i] = quiet_nan<double>();
      put(&w[b * n + i], quiet_nan<double>());
    }
    if (threadIdx.x == 0) info[b] = 1;
    return;
  }
  const double ulp = DBL_EPSILON, tnorm = fmax(fabs(lo), fabs(hi));
  const double pivmin = DBL_MIN * fmax(1.0, emax2);
  if (blockIdx.x == 0 && threadIdx.x == 0) norms[2 * b] = tnorm, norms[2 * b + 1] = pivmin;
  if (i >= n) return; /* a whole group: lanes divides 32 */
  if (tnorm == 0) {   /* T = 0: every value exactly 0, not a midpoint near DBL_MIN */
    if (s == 0) wd[b * n + i] = 0, put(&w[b * n + i], 0.0);
    return;
  }
  const unsigned ones = lanes == 32 ? kFullMask : (1u << lanes) - 1, group = ones << first;
  const double widen = 2.1 * (tnorm * ulp * n + 2 * pivmin);
  double a = lo - widen, z = hi + widen;
  const double abstol = ulp * tnorm;
  for (int it = 0; it < 256; it++) {
    if (z - a <= fmax(abstol, 2 * ulp * fmax(fabs(a), fabs(z)))) break;
    /* points a + (t + 1) h, t < lanes; the counts rise with the point, so
     * the lanes at or below eigenvalue i are the first m */
    const double h = (z - a) / (lanes + 1);
    const bool below = sturm_count(dd, e2, n, a + (s + 1) * h, pivmin) <= i;
    const int m = __popc((__ballot_sync(group, below) >> first) & ones);
    const double na = m > 0 ? a + m * h : a, nz = m < lanes ? a + (m + 1) * h : z;
    a = na;
    z = nz;
  }
  if (s > 0) return;
  double lam = 0.5 * (a + z);
  wd[b * n + i] = lam;
  put(&w[b * n + i], sigma ? lam / sigma[b] : lam);
}

/* Lanes per eigenvalue: up to kMaxLanes, until the batch has kBisectFill threads. */
inline int bisection_lanes(int64_t n, int64_t batch) {
  int lanes = 1;
  while (lanes < kMaxLanes && n * batch * lanes < kBisectFill) lanes *= 2;
  return lanes;
}

/* body(k, load(k)) for k = from, from + step, ... (count of them), the
 * loads issued eight at a time ahead of their bodies. The vectors' walks
 * over Zt and U (n x n doubles each: beyond L2 from n of about 1800) have
 * loads that do not depend on their recurrences, but issued in turn each
 * waited a full memory latency, with a single warp per SM when one matrix
 * has n threads. */
template <typename Load, typename Body>
__device__ __forceinline__ void walk_prefetched(int from, int step, int count, Load load,
                                                Body body) {
  constexpr int kAhead = 8;
  int c = 0;
  for (; c + kAhead <= count; c += kAhead) {
    double v[kAhead];
#pragma unroll
    for (int q = 0; q < kAhead; q++) v[q] = load(from + (c + q) * step);
#pragma unroll
    for (int q = 0; q < kAhead; q++) body(from + (c + q) * step, v[q]);
  }
  for (; c < count; c++) body(from + c * step, load(from + c * step));
}

/* grid (ceil(n / kTriThreads), batch): unit eigenvector i of T into Zt's
 * column i (element (k, i) at k*n + i), using U as scratch; flags[b] = 1
 * (and flags[batch] = 1) when a relative gap is not above gap_tol or the
 * vector is not finite. */
template <typename T>
__global__ void __launch_bounds__(kTriThreads)
    twisted_vectors(const T *d, const T *e, int n, const double *wd, const double *norms,
                    double gap_tol, double *Zt, double *U, int *flags) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *dd = reinterpret_cast<double *>(smem_raw), *e2 = dd + n, *ee = e2 + n;
  const size_t b = blockIdx.y;
  load_tridiag(d + b * n, e + b * n, n, dd, e2, ee);
  const int i = blockIdx.x * kTriThreads + threadIdx.x;
  if (i >= n) return;
  const double *lamv = wd + b * n;
  const double lam = lamv[i], tnorm = norms[2 * b], pivmin = norms[2 * b + 1];
  double gap = INFINITY;
  if (i > 0) gap = lam - lamv[i - 1];
  if (i < n - 1) gap = fmin(gap, lamv[i + 1] - lam);
  bool flag = !(gap > gap_tol * tnorm); /* NaN too; a zero T has no gap */
  double *z = Zt + b * n * n + i, *u = U + b * n * n + i;
  /* top-down: D+ into z */
  double dp = dd[0] - lam;
  if (fabs(dp) < pivmin) dp = -pivmin;
  z[0] = dp;
  for (int k = 1; k < n; k++) {
    dp = (dd[k] - lam) - e2[k - 1] / dp;
    if (fabs(dp) < pivmin) dp = -pivmin;
    z[(size_t)k * n] = dp;
  }
  /* bottom-up: U- into u, gamma_k = D+_k + D-_k - (d_k - lam), least |gamma| */
  double dm = dd[n - 1] - lam;
  if (fabs(dm) < pivmin) dm = -pivmin;
  int r = n - 1;
  double best = fabs(z[(size_t)(n - 1) * n]);
  auto z_at = [&](int k) { return z[(size_t)k * n]; };
  walk_prefetched(n - 2, -1, n - 1, z_at, [&](int k, double zk) {
    double uk = ee[k] / dm;
    u[(size_t)k * n] = uk;
    dm = (dd[k] - lam) - ee[k] * uk;
    if (fabs(dm) < pivmin) dm = -pivmin;
    double g = fabs(zk + dm - (dd[k] - lam));
    if (g < best) best = g, r = k;
  });
  /* x_r = 1, then outwards: x_k = -(e_k / D+_k) x_{k+1} above r and
   * x_k = -U-_{k-1} x_{k-1} below */
  double x = 1, ss = 1;
  z[(size_t)r * n] = 1;
  walk_prefetched(r - 1, -1, r, z_at, [&](int k, double zk) {
    x = -(ee[k] / zk) * x;
    z[(size_t)k * n] = x;
    ss += x * x;
  });
  x = 1;
  walk_prefetched(
      r + 1, 1, n - 1 - r, [&](int k) { return u[(size_t)(k - 1) * n]; },
      [&](int k, double uk) {
        x = -uk * x;
        z[(size_t)k * n] = x;
        ss += x * x;
      });
  const double s = 1 / sqrt(ss);
  walk_prefetched(0, 1, n, z_at, [&](int k, double zk) { z[(size_t)k * n] = zk * s; });
  if (!isfinite(s) || s == 0) flag = true;
  if (flag) flags[b] = flags[gridDim.y] = 1; /* every writer writes 1 */
}

/* X (dense column-major, output type) = Zt^T per matrix, tiles of 32. */
template <typename T>
__global__ void __launch_bounds__(256) transpose_out(const double *Zt, int n, T *X) {
  __shared__ double tile[32][33];
  const size_t b = blockIdx.z;
  const double *src = Zt + b * n * n;
  T *dst = X + b * n * n;
  int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32; /* tile of Zt: rows r0.., columns c0.. */
  for (int k = ty; k < 32; k += 8)
    if (r0 + k < n && c0 + tx < n) tile[k][tx] = src[(size_t)(r0 + k) * n + c0 + tx];
  __syncthreads();
  /* X(r, c) = Zt(c, r): X's column c0 + k, rows r0 + tx */
  for (int k = ty; k < 32; k += 8)
    if (c0 + k < n && r0 + tx < n) put(&dst[(size_t)(c0 + k) * n + r0 + tx], tile[tx][k]);
}

/* Dynamic shared memory above the default 48 KiB, static included, needs
 * the kernel's opt-in (up to 227 KiB on Hopper). */
template <typename K>
cudaError_t allow_smem(K kernel, size_t bytes) {
  if (bytes <= 40 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

template <typename T>
cudaError_t launch_values(const void *d, const void *e, int64_t n, int64_t batch,
                          const double *sigma, double *wd, void *w, double *norms, int *info,
                          cudaStream_t stream) {
  const int lanes = bisection_lanes(n, batch);
  dim3 grid((unsigned)((n * lanes + kBisectThreads - 1) / kBisectThreads), (unsigned)batch);
  const size_t smem = 2 * (size_t)n * sizeof(double);
  cudaError_t err = allow_smem(bisect<T>, smem);
  if (err != cudaSuccess) return err;
  bisect<T><<<grid, kBisectThreads, smem, stream>>>(static_cast<const T *>(d),
                                                    static_cast<const T *>(e), (int)n, lanes, sigma,
                                                    wd, static_cast<T *>(w), norms, info);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_vectors(const void *d, const void *e, int64_t n, int64_t batch, const double *wd,
                           const double *norms, double gap_tol, double *Zt, double *U, void *X,
                           int *flags, cudaStream_t stream) {
  dim3 grid((unsigned)((n + kTriThreads - 1) / kTriThreads), (unsigned)batch);
  const size_t smem = 3 * (size_t)n * sizeof(double);
  cudaError_t err = allow_smem(twisted_vectors<T>, smem);
  if (err != cudaSuccess) return err;
  twisted_vectors<T><<<grid, kTriThreads, smem, stream>>>(static_cast<const T *>(d),
                                                          static_cast<const T *>(e), (int)n, wd,
                                                          norms, gap_tol, Zt, U, flags);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  unsigned tiles = (unsigned)((n + 31) / 32);
  transpose_out<T>
      <<<dim3(tiles, tiles, (unsigned)batch), 256, 0, stream>>>(Zt, (int)n, static_cast<T *>(X));
  return cudaGetLastError();
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

static bool tridiag_args_ok(int dtype, int64_t n, int64_t batch) {
  return compute_dtype(dtype) && n >= 1 && n <= GSTAT_CU_TRIDIAG_MAX_N && batch >= 1 &&
         batch <= 65535;
}

extern "C" cudaError_t gstat_cu_tridiag_values(int dtype, const void *d, const void *e, int64_t n,
                                               int64_t batch, const double *sigma, double *wd,
                                               void *w, double *norms, int *info,
                                               cudaStream_t stream) {
  if (!tridiag_args_ok(dtype, n, batch)) return cudaErrorInvalidValue;
  return dtype == kF64 ? launch_values<double>(d, e, n, batch, sigma, wd, w, norms, info, stream)
                       : launch_values<float>(d, e, n, batch, sigma, wd, w, norms, info, stream);
}

extern "C" cudaError_t gstat_cu_tridiag_vectors(int dtype, const void *d, const void *e, int64_t n,
                                                int64_t batch, const double *wd,
                                                const double *norms, double gap_tol, double *Zt,
                                                double *U, void *X, int *flags,
                                                cudaStream_t stream) {
  if (!tridiag_args_ok(dtype, n, batch)) return cudaErrorInvalidValue;
  return dtype == kF64
             ? launch_vectors<double>(d, e, n, batch, wd, norms, gap_tol, Zt, U, X, flags, stream)
             : launch_vectors<float>(d, e, n, batch, wd, norms, gap_tol, Zt, U, X, flags, stream);
}
