/*
 * Eigenvalues and eigenvectors of a batch of symmetric tridiagonal matrices
 * (from gstat_cu_sytrd_column's d and e), in double whatever the input,
 * each split first at negligible off-diagonals into blocks solved apart
 * (slot i: the eigenvalue i - lo of the block [lo, hi] holding row i),
 * then put in ascending order (order_values: a permutation of the slots):
 *
 *  - values: bisection on Sturm counts (LAPACK's dlaebz recurrence, pivmin
 *    guard) to ulp * ||T|| (||T||: Gershgorin); a thread per eigenvalue in
 *    large batches, up to 8 (multisection) in small ones;
 *  - vectors: for each eigenvalue the twisted factorization of T - lambda I
 *    (top-down L D L^T and bottom-up U D U^T, twisted where |gamma_r| is
 *    least; Parlett and Dhillon), a thread per eigenvector. The vector is
 *    as orthogonal to its neighbours as eps ||T|| / gap allows, so slots
 *    whose relative gap is not above the caller's tolerance are linked into
 *    clusters (tridiag_clusters.cu gives those their vectors).
 *
 * Per matrix b: d, e at b*n (e's first n - 1 used); wd (double) at b*n;
 * Zt and U (double) at b*n*n with element (k, i) at k*n + i: thread i
 * walks row after row, its neighbours beside it (coalesced).
 */
#include "tridiag.cuh"

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

/* grid (ceil(n * lanes / kBisectThreads), batch): wd[i] = the eigenvalue
 * of slot i (block_of) in double; norms[2b] = ||T|| (Gershgorin),
 * norms[2b + 1] = pivmin; info[b] = 1 when T is not finite (values NaN). Each eigenvalue has
 * `lanes` adjacent lanes of a warp (a power of two up to 32): each step they count at `lanes`
 * points splitting its interval into lanes + 1 parts, so a step gains
 * log2(lanes + 1) bits instead of one (multisection; one lane is plain
 * bisection). A step is a chain of n dependent divisions: with one matrix
 * of a few thousand, one lane per eigenvalue left about one warp per SM. */
template <typename T>
__global__ void __launch_bounds__(kBisectThreads)
    bisect(const T *d, const T *e, int n, int lanes, double *wd, double *norms, int *info) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *dd = reinterpret_cast<double *>(smem_raw), *e2 = dd + n, *ee = e2 + n;
  __shared__ double scratch[64];
  const size_t b = blockIdx.y;
  load_tridiag(d + b * n, e + b * n, n, dd, e2, ee);
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
  const double ulp = DBL_EPSILON, tnorm = fmax(fabs(lo), fabs(hi));
  split_tridiag(e2, ee, n, split_tol<T>(tnorm)); /* every thread: it syncs */
  if (bad_d > 0 || !isfinite(lo) || !isfinite(hi)) {
    if (i < n && s == 0) wd[b * n + i] = quiet_nan<double>();
    if (threadIdx.x == 0) info[b] = 1;
    return;
  }
  const double pivmin = DBL_MIN * fmax(1.0, emax2);
  if (blockIdx.x == 0 && threadIdx.x == 0) norms[2 * b] = tnorm, norms[2 * b + 1] = pivmin;
  if (i >= n) return; /* a whole group: lanes divides 32 */
  if (tnorm == 0) {   /* T = 0: every value exactly 0, not a midpoint near DBL_MIN */
    if (s == 0) wd[b * n + i] = 0;
    return;
  }
  int blo, bhi;
  block_of(ee, n, i, blo, bhi);
  const int local = i - blo, rows = bhi - blo + 1;
  const unsigned ones = lanes == 32 ? kFullMask : (1u << lanes) - 1, group = ones << first;
  const double widen = 2.1 * (tnorm * ulp * n + 2 * pivmin);
  double a = lo - widen, z = hi + widen;
  const double abstol = ulp * tnorm;
  for (int it = 0; it < 256; it++) {
    if (z - a <= fmax(abstol, 2 * ulp * fmax(fabs(a), fabs(z)))) break;
    /* points a + (t + 1) h, t < lanes; the counts rise with the point, so
     * the lanes at or below the slot's eigenvalue are the first m */
    const double h = (z - a) / (lanes + 1);
    const bool below = sturm_count(dd + blo, e2 + blo, rows, a + (s + 1) * h, pivmin) <= local;
    const int m = __popc((__ballot_sync(group, below) >> first) & ones);
    const double na = m > 0 ? a + m * h : a, nz = m < lanes ? a + (m + 1) * h : z;
    a = na;
    z = nz;
  }
  if (s > 0) return;
  wd[b * n + i] = 0.5 * (a + z);
}

/* grid (batch), block kOrderThreads: the slots' values (wd, ascending
 * within each block) in ascending order: perm[b * n + i] = the rank of
 * slot i (ties by slot), w at that rank = wd[i] / sigma[b] (sigma NULL:
 * none). A matrix with info[b] set keeps its slots (values NaN). */
constexpr int kOrderThreads = 256;
template <typename T>
__global__ void __launch_bounds__(kOrderThreads)
    order_values(const double *wd, int n, const double *sigma, const int *info, int *perm, T *w) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *v = reinterpret_cast<double *>(smem_raw);
  const size_t b = blockIdx.x;
  for (int k = threadIdx.x; k < n; k += blockDim.x) v[k] = wd[b * n + k];
  __syncthreads();
  const bool bad = info[b] != 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const double x = v[i];
    int rank = i;
    if (!bad) {
      rank = 0;
      for (int j = 0; j < n; j++) rank += v[j] < x || (v[j] == x && j < i);
    }
    perm[b * n + i] = rank;
    put(&w[b * n + rank], bad ? quiet_nan<double>() : sigma ? x / sigma[b] : x);
  }
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
 * column i (element (k, i) at k*n + i), using U as scratch, for the slots
 * whose rank (perm) is first_rank or more; the others' columns are left
 * alone. links[b*n + i] = kLinkNext when the gap to the next slot of the
 * block is not above gap_tol ||T||; flags[b] gets kFlagCluster for such a
 * gap (either side, between wanted slots), kFlagNonfinite for a value or
 * vector not finite, and flags[batch] = 1 with either. A slot's block
 * neighbour above has a larger value, so it is wanted with the slot. */
template <typename T>
__global__ void __launch_bounds__(kTriThreads)
    twisted_vectors(const T *d, const T *e, int n, const double *wd, const double *norms,
                    double gap_tol, const int *perm, int first_rank, double *Zt, double *U,
                    unsigned char *links, int *flags) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *dd = reinterpret_cast<double *>(smem_raw), *e2 = dd + n, *ee = e2 + n;
  const size_t b = blockIdx.y;
  load_tridiag(d + b * n, e + b * n, n, dd, e2, ee);
  const double tnorm = norms[2 * b], pivmin = norms[2 * b + 1];
  split_tridiag(e2, ee, n, split_tol<T>(tnorm)); /* as bisect split it */
  const int i = blockIdx.x * kTriThreads + threadIdx.x;
  if (i >= n) return;
  /* slot i: eigenvalue i - lo of block [lo, hi] (bisect); the vector
   * lives on the block's rows, zero elsewhere */
  int lo, hi;
  block_of(ee, n, i, lo, hi);
  const double *lamv = wd + b * n;
  const double lam = lamv[i];
  /* gaps to the block's neighbours: other blocks' vectors are orthogonal */
  const double tol = gap_tol * tnorm;
  const int *rank = perm + b * n;
  const bool wanted = rank[i] >= first_rank;
  const bool link_prev = wanted && i > lo && rank[i - 1] >= first_rank &&
                         !(fabs(lam - lamv[i - 1]) > tol); /* NaN too */
  const bool link_next = wanted && i < hi && !(fabs(lamv[i + 1] - lam) > tol);
  links[b * n + i] = link_next ? kLinkNext : 0;
  if (!wanted) return;
  int flag = link_prev || link_next ? kFlagCluster : 0;
  double *z = Zt + b * n * n + i, *u = U + b * n * n + i;
  for (int k = 0; k < lo; k++) z[(size_t)k * n] = 0;
  for (int k = hi + 1; k < n; k++) z[(size_t)k * n] = 0;
  z += (size_t)lo * n;
  u += (size_t)lo * n;
  dd += lo;
  e2 += lo;
  ee += lo;
  const int m = hi - lo + 1; /* from here rows 0..m-1 of the block */
  /* top-down: D+ into z */
  double dp = dd[0] - lam;
  if (fabs(dp) < pivmin) dp = -pivmin;
  z[0] = dp;
  for (int k = 1; k < m; k++) {
    dp = (dd[k] - lam) - e2[k - 1] / dp;
    if (fabs(dp) < pivmin) dp = -pivmin;
    z[(size_t)k * n] = dp;
  }
  /* bottom-up: U- into u, gamma_k = D+_k + D-_k - (d_k - lam), least |gamma| */
  double dm = dd[m - 1] - lam;
  if (fabs(dm) < pivmin) dm = -pivmin;
  int r = m - 1;
  double best = fabs(z[(size_t)(m - 1) * n]);
  auto z_at = [&](int k) { return z[(size_t)k * n]; };
  walk_prefetched(m - 2, -1, m - 1, z_at, [&](int k, double zk) {
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
      r + 1, 1, m - 1 - r, [&](int k) { return u[(size_t)(k - 1) * n]; },
      [&](int k, double uk) {
        x = -uk * x;
        z[(size_t)k * n] = x;
        ss += x * x;
      });
  const double s = 1 / sqrt(ss);
  walk_prefetched(0, 1, m, z_at, [&](int k, double zk) { z[(size_t)k * n] = zk * s; });
  if (!isfinite(s) || s == 0 || !isfinite(lam)) flag |= kFlagNonfinite;
  if (flag) {
    atomicOr(&flags[b], flag);
    flags[gridDim.y] = 1; /* every writer writes 1 */
  }
}

/* X (dense column-major, output type) = Zt^T per matrix, tiles of 32. */
template <typename T>
__global__ void __launch_bounds__(256)
    transpose_out(const double *Zt, int n, const int *perm, T *X) {
  __shared__ double tile[32][33];
  const size_t b = blockIdx.z;
  const double *src = Zt + b * n * n;
  const int *rank = perm + b * n; /* slot i's vector is X's column rank[i] */
  T *dst = X + b * n * n;
  int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32; /* tile of Zt: rows r0.., columns c0.. */
  for (int k = ty; k < 32; k += 8)
    if (r0 + k < n && c0 + tx < n) tile[k][tx] = src[(size_t)(r0 + k) * n + c0 + tx];
  __syncthreads();
  /* X(r, c) = Zt(c, r): X's column c0 + k, rows r0 + tx */
  for (int k = ty; k < 32; k += 8)
    if (c0 + k < n && r0 + tx < n) put(&dst[(size_t)rank[c0 + k] * n + r0 + tx], tile[tx][k]);
}

/* grid (ceil(n * n / 256), k): the j-th n x n of Tc (dense column-major,
 * both triangles) = T of matrix idx[j]. */
template <typename T>
__global__ void __launch_bounds__(256)
    dense_tridiag(const T *d, const T *e, int n, const int *idx, T *Tc) {
  const size_t b = (size_t)idx[blockIdx.y], nn = (size_t)n * n;
  const size_t at = (size_t)blockIdx.x * 256 + threadIdx.x;
  if (at >= nn) return;
  const int r = (int)(at % n), c = (int)(at / n);
  T v = 0;
  if (r == c) v = d[b * n + r];
  if (r == c + 1) v = e[b * n + c];
  if (c == r + 1) v = e[b * n + r];
  Tc[(size_t)blockIdx.y * nn + at] = v;
}

/* grid (ceil(n * n / 256), k): matrix idx[j] of X = the j-th n x n of Zc,
 * and its info = the j-th of info_c where that is not 0. */
template <typename T>
__global__ void __launch_bounds__(256)
    scatter_dense(const T *Zc, const int *info_c, int n, const int *idx, T *X, int *info) {
  const size_t b = (size_t)idx[blockIdx.y], nn = (size_t)n * n;
  const size_t at = (size_t)blockIdx.x * 256 + threadIdx.x;
  if (at == 0 && info_c[blockIdx.y] != 0) info[b] = info_c[blockIdx.y];
  if (at < nn) X[b * nn + at] = Zc[(size_t)blockIdx.y * nn + at];
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
                          int *perm, cudaStream_t stream) {
  const int lanes = bisection_lanes(n, batch);
  dim3 grid((unsigned)((n * lanes + kBisectThreads - 1) / kBisectThreads), (unsigned)batch);
  const size_t smem = 3 * (size_t)n * sizeof(double);
  cudaError_t err = allow_smem(bisect<T>, smem);
  if (err != cudaSuccess) return err;
  bisect<T><<<grid, kBisectThreads, smem, stream>>>(
      static_cast<const T *>(d), static_cast<const T *>(e), (int)n, lanes, wd, norms, info);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  const size_t osmem = (size_t)n * sizeof(double);
  if ((err = allow_smem(order_values<T>, osmem)) != cudaSuccess) return err;
  order_values<T><<<(unsigned)batch, kOrderThreads, osmem, stream>>>(wd, (int)n, sigma, info, perm,
                                                                     static_cast<T *>(w));
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_vectors(const void *d, const void *e, int64_t n, int64_t batch, const double *wd,
                           const double *norms, double gap_tol, const int *perm, int first_rank,
                           double *Zt, double *U, unsigned char *links, int *flags,
                           cudaStream_t stream) {
  dim3 grid((unsigned)((n + kTriThreads - 1) / kTriThreads), (unsigned)batch);
  const size_t smem = 3 * (size_t)n * sizeof(double);
  cudaError_t err = allow_smem(twisted_vectors<T>, smem);
  if (err != cudaSuccess) return err;
  twisted_vectors<T><<<grid, kTriThreads, smem, stream>>>(
      static_cast<const T *>(d), static_cast<const T *>(e), (int)n, wd, norms, gap_tol, perm,
      first_rank, Zt, U, links, flags);
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
                                               void *w, double *norms, int *info, int *perm,
                                               cudaStream_t stream) {
  if (!tridiag_args_ok(dtype, n, batch)) return cudaErrorInvalidValue;
  return dtype == kF64
             ? launch_values<double>(d, e, n, batch, sigma, wd, w, norms, info, perm, stream)
             : launch_values<float>(d, e, n, batch, sigma, wd, w, norms, info, perm, stream);
}

extern "C" cudaError_t gstat_cu_tridiag_vectors(int dtype, const void *d, const void *e, int64_t n,
                                                int64_t batch, const double *wd,
                                                const double *norms, double gap_tol,
                                                const int *perm, int64_t first_rank, double *Zt,
                                                double *U, unsigned char *links, int *flags,
                                                cudaStream_t stream) {
  if (!tridiag_args_ok(dtype, n, batch) || first_rank < 0 || first_rank >= n)
    return cudaErrorInvalidValue;
  const int first = (int)first_rank;
  return dtype == kF64 ? launch_vectors<double>(d, e, n, batch, wd, norms, gap_tol, perm, first, Zt,
                                                U, links, flags, stream)
                       : launch_vectors<float>(d, e, n, batch, wd, norms, gap_tol, perm, first, Zt,
                                               U, links, flags, stream);
}

extern "C" cudaError_t gstat_cu_tridiag_transpose(int dtype, const double *Zt, int64_t n,
                                                  int64_t batch, const int *perm, void *X,
                                                  cudaStream_t stream) {
  if (!tridiag_args_ok(dtype, n, batch)) return cudaErrorInvalidValue;
  unsigned tiles = (unsigned)((n + 31) / 32);
  dim3 grid(tiles, tiles, (unsigned)batch);
  if (dtype == kF64)
    transpose_out<double><<<grid, 256, 0, stream>>>(Zt, (int)n, perm, static_cast<double *>(X));
  else
    transpose_out<float><<<grid, 256, 0, stream>>>(Zt, (int)n, perm, static_cast<float *>(X));
  return cudaGetLastError();
}

static dim3 per_element_grid(int64_t n, int64_t k) {
  return dim3((unsigned)((n * n + 255) / 256), (unsigned)k);
}

extern "C" cudaError_t gstat_cu_tridiag_gather(int dtype, const void *d, const void *e, int64_t n,
                                               const int *idx, int64_t k, void *Tc,
                                               cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || n > GSTAT_CU_SYTRD_MAX_N || k < 1 || k > 65535)
    return cudaErrorInvalidValue;
  if (dtype == kF64)
    dense_tridiag<double><<<per_element_grid(n, k), 256, 0, stream>>>(
        static_cast<const double *>(d), static_cast<const double *>(e), (int)n, idx,
        static_cast<double *>(Tc));
  else
    dense_tridiag<float><<<per_element_grid(n, k), 256, 0, stream>>>(
        static_cast<const float *>(d), static_cast<const float *>(e), (int)n, idx,
        static_cast<float *>(Tc));
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_tridiag_scatter(int dtype, const void *Zc, const int *info_c,
                                                int64_t n, const int *idx, int64_t k, void *X,
                                                int *info, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || n > GSTAT_CU_SYTRD_MAX_N || k < 1 || k > 65535)
    return cudaErrorInvalidValue;
  if (dtype == kF64)
    scatter_dense<double><<<per_element_grid(n, k), 256, 0, stream>>>(
        static_cast<const double *>(Zc), info_c, (int)n, idx, static_cast<double *>(X), info);
  else
    scatter_dense<float><<<per_element_grid(n, k), 256, 0, stream>>>(
        static_cast<const float *>(Zc), info_c, (int)n, idx, static_cast<float *>(X), info);
  return cudaGetLastError();
}
