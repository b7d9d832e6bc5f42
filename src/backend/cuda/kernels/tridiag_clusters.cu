/*
 * The vectors of eigenvalue clusters, for the matrices whose twisted
 * vectors (tridiag_eig.cu) are not reliably orthogonal: slots chained by
 * gaps not above the tolerance (links) form a cluster of c slots in one
 * block of m rows of the split T. A thread block per cluster gives them
 * vectors spanning the cluster's invariant subspace, each close to its own
 * eigenvector:
 *
 *  - a pseudo-random start (a hash of matrix, slot and row);
 *  - two passes of inverse iteration, each column with its own eigenvalue
 *    as shift: T - lambda I = L D L^T without pivoting, pivots held at
 *    eps ||T|| or above in magnitude (U's column as their store), then
 *    scaled to max 1, each pass followed by classical Gram-Schmidt twice
 *    in slot order (ascending eigenvalues), every sum in a fixed order
 *    (no atomics);
 *  - a check: every column a unit vector with ||T z - lambda z|| within
 *    kResidualUnits n eps ||T|| of the output's dtype; otherwise the
 *    matrix gets kFlagFailed (and is solved another way).
 *
 * bench/sim_tridiag_split.py runs the same recipe on the CPU, with the
 * residuals and orthogonality it reaches on the test families
 * (bench/README.md). Layout as tridiag_eig.cu: Zt and U at b*n*n with
 * element (k, i) at k*n + i, so a cluster's columns sit side by side in
 * each row.
 */
#include "tridiag.cuh"

namespace gstat_cu {
namespace {

constexpr int kClusterThreads = 256;
constexpr int kClusterWarps = kClusterThreads / 32;
/* Largest cluster (its Gram-Schmidt coefficients live in shared memory
 * beside T): beyond, the matrix is handed back. The caller bounds m c^2
 * (max_work: one SM would take longer than cuSOLVER's solve). */
constexpr int kMaxCluster = 2048;
/* LAPACK's test threshold for residuals, in units of n eps ||T||. */
constexpr double kResidualUnits = 60.0;
/* From this many earlier columns on, a thread per dot product: its serial
 * chain of m rows is then no longer than a warp's q/kClusterWarps * m/32. */
constexpr int kDotsByThread = 128;

/* A uniform value in [-1, 1) from three integers (splitmix64's finalizer). */
__device__ inline double hashed_uniform(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^
               (c + 0x1D8E4E27C47D124Full) * 0x94D049BB133111EBull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (double)(x >> 11) * 0x1.0p-52 - 1.0;
}

/* Sum over the thread block; every thread gets it. scratch: kClusterWarps doubles. */
__device__ double block_sum(double v, double *scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  double s = 0;
  for (int w = 0; w < kClusterWarps; w++) s += scratch[w];
  __syncthreads();
  return s;
}

/* Column q of the cluster (rows 0..m-1 of the block, z[k*n]) := (T - lam
 * I)^-1 z scaled to max 1, pivots in u[k*n]. dd, ee: the block's rows. */
__device__ void inverse_iteration(const double *dd, const double *ee, int m, int n, double lam,
                                  double guard, double *z, double *u) {
  double piv = 1, y = 0;
  for (int k = 0; k < m; k++) {
    const double mult = k > 0 ? ee[k - 1] / piv : 0.0;
    double p = (dd[k] - lam) - (k > 0 ? mult * ee[k - 1] : 0.0);
    if (fabs(p) < guard) p = p < 0 ? -guard : guard;
    y = z[(size_t)k * n] - mult * y;
    z[(size_t)k * n] = y;
    u[(size_t)k * n] = p;
    piv = p;
  }
  double x = 0, big = 0;
  for (int k = m - 1; k >= 0; k--) {
    x = (z[(size_t)k * n] - (k < m - 1 ? ee[k] * x : 0.0)) / u[(size_t)k * n];
    z[(size_t)k * n] = x;
    big = fmax(big, fabs(x));
  }
  const double s = big > 0 ? 1 / big : 1;
  for (int k = 0; k < m; k++) z[(size_t)k * n] *= s;
}

/* dots[p] = z_p . z_q for p < q, each summed in a fixed order (no
 * atomics): a warp per p (lanes over rows) while q is
 * small, a thread per p over all rows (reads coalesced across p) beyond. */
__device__ void column_dots(const double *z, int m, int n, int q, double *dots) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (q < kDotsByThread) {
    for (int p = warp; p < q; p += kClusterWarps) {
      double acc = 0;
      for (int k = lane; k < m; k += 32) acc += z[(size_t)k * n + p] * z[(size_t)k * n + q];
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
      if (lane == 0) dots[p] = acc;
    }
    return;
  }
  for (int p = threadIdx.x; p < q; p += blockDim.x) {
    double acc = 0;
    for (int k = 0; k < m; k++) acc += z[(size_t)k * n + p] * z[(size_t)k * n + q];
    dots[p] = acc;
  }
}

/* Columns 0..c-1 of z (rows 0..m-1, element (k, q) at k*n + q) made
 * orthonormal in order, each by classical Gram-Schmidt twice against those
 * before it. dots: c doubles of shared memory. Returns false (every
 * thread) when a column vanished or is not finite. */
__device__ bool orthonormalize(double *z, int m, int n, int c, double *dots, double *scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int q = 0; q < c; q++) {
    for (int again = 0; again < 2 && q > 0; again++) {
      column_dots(z, m, n, q, dots);
      __syncthreads();
      /* z_q -= sum_p dots[p] z_p: a warp per row, lanes over p */
      for (int k = warp; k < m; k += kClusterWarps) {
        double acc = 0;
        for (int p = lane; p < q; p += 32) acc += dots[p] * z[(size_t)k * n + p];
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
        if (lane == 0) z[(size_t)k * n + q] -= acc;
      }
      __syncthreads();
    }
    double ss = 0;
    for (int k = threadIdx.x; k < m; k += blockDim.x)
      ss += z[(size_t)k * n + q] * z[(size_t)k * n + q];
    ss = block_sum(ss, scratch);
    if (!(ss > 0) || !isfinite(ss)) return false;
    const double s = 1 / sqrt(ss);
    for (int k = threadIdx.x; k < m; k += blockDim.x) z[(size_t)k * n + q] *= s;
    __syncthreads();
  }
  return true;
}

/* Whether column q (thread per column) is a unit vector with a residual
 * ||T z - lam z||_inf within tol. */
__device__ bool column_ok(const double *dd, const double *ee, int m, int n, double lam,
                          const double *z, double tol) {
  double ss = 0, worst = 0;
  for (int k = 0; k < m; k++) {
    const double zk = z[(size_t)k * n];
    double r = (dd[k] - lam) * zk;
    if (k > 0) r += ee[k - 1] * z[(size_t)(k - 1) * n];
    if (k < m - 1) r += ee[k] * z[(size_t)(k + 1) * n];
    worst = fmax(worst, fabs(r));
    ss += zk * zk;
  }
  return fabs(ss - 1) <= 1e-10 && worst <= tol; /* NaN fails both */
}

/* A thread per listed matrix: kFlagFailed where some cluster's m c^2
 * exceeds max_work, before any cluster of it is worked on (its vectors
 * come from cuSOLVER then). One pass over the slots: the blocks of the
 * split T as cluster_vectors finds them, the longest run of linked slots
 * in each. */
template <typename T>
__global__ void check_cluster_work(const T *e, int n, const double *norms,
                                   const unsigned char *links, const int *idx, int k,
                                   double max_work, int *flags) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= k) return;
  const size_t b = (size_t)idx[j];
  const T *eb = e + b * n;
  const unsigned char *link = links + b * n;
  const double tol = split_tol<T>(norms[2 * b]);
  int lo = 0, run = 0, longest = 0;
  for (int i = 0; i < n; i++) {
    if (i < n - 1 && (link[i] & kLinkNext)) {
      run++;
    } else {
      longest = max(longest, run > 0 ? run + 1 : 0);
      run = 0;
    }
    if (i == n - 1 || fabs((double)eb[i]) <= tol) { /* row i ends its block */
      longest = max(longest, run > 0 ? run + 1 : 0);
      const double m = (double)(i - lo + 1);
      if (m * longest * longest > max_work || longest > kMaxCluster) {
        flags[b] |= kFlagFailed;
        return;
      }
      lo = i + 1;
      run = 0;
      longest = 0;
    }
  }
}

/* grid (n, k): thread block (i, j) takes the cluster of matrix idx[j]
 * that starts at slot i, if one does (links); fail != 0 fails every
 * cluster (the hand-back's test). */
template <typename T>
__global__ void __launch_bounds__(kClusterThreads)
    cluster_vectors(const T *d, const T *e, int n, const double *wd, const double *norms,
                    const unsigned char *links, const int *idx, int fail, double *Zt, double *U,
                    int *flags) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  double *dd = reinterpret_cast<double *>(smem_raw), *ee = dd + n, *dots = ee + n;
  __shared__ double scratch[kClusterWarps];
  __shared__ int ok;
  const size_t b = (size_t)idx[blockIdx.y];
  const int i = blockIdx.x;
  const unsigned char *link = links + b * n;
  if (!(link[i] & kLinkNext) || (i > 0 && (link[i - 1] & kLinkNext))) return;
  /* too much work somewhere in the matrix, or another cluster failed: one
   * read for the whole block, so that every warp leaves or none does */
  if (__syncthreads_or(threadIdx.x == 0 && (*(volatile int *)&flags[b] & kFlagFailed))) return;
  int c = 2;
  while (i + c - 1 < n - 1 && (link[i + c - 1] & kLinkNext)) c++;
  load_tridiag(d + b * n, e + b * n, n, dd, nullptr, ee);
  const double tnorm = norms[2 * b];
  split_tridiag(nullptr, ee, n, split_tol<T>(tnorm));
  int lo, hi;
  block_of(ee, n, i, lo, hi);
  const int m = hi - lo + 1;
  /* m c^2 was bounded by check_cluster_work; c bounds dots in shared memory */
  if (fail || c > kMaxCluster) {
    if (threadIdx.x == 0) atomicOr(&flags[b], kFlagFailed);
    return;
  }
  double *z = Zt + b * n * n + (size_t)lo * n + i, *u = U + b * n * n + (size_t)lo * n + i;
  const double *lam = wd + b * n + i;
  dd += lo;
  ee += lo;
  for (int at = threadIdx.x; at < m * c; at += blockDim.x) {
    const int k = at / c, q = at % c;
    z[(size_t)k * n + q] = hashed_uniform(b, (uint64_t)(i + q), (uint64_t)(lo + k));
  }
  if (threadIdx.x == 0) ok = 1;
  __syncthreads();
  const double guard = DBL_EPSILON * tnorm;
  for (int pass = 0; pass < 2; pass++) {
    for (int q = threadIdx.x; q < c; q += blockDim.x)
      inverse_iteration(dd, ee, m, n, lam[q], guard, z + q, u + q);
    __syncthreads();
    if (!orthonormalize(z, m, n, c, dots, scratch)) {
      if (threadIdx.x == 0) atomicOr(&flags[b], kFlagFailed);
      return;
    }
  }
  const double eps = sizeof(T) == 4 ? (double)FLT_EPSILON : DBL_EPSILON;
  const double tol = kResidualUnits * n * eps * tnorm;
  for (int q = threadIdx.x; q < c; q += blockDim.x)
    if (!column_ok(dd, ee, m, n, lam[q], z + q, tol)) ok = 0;
  __syncthreads();
  if (threadIdx.x == 0 && !ok) atomicOr(&flags[b], kFlagFailed);
}

template <typename T>
cudaError_t launch_clusters(const void *d, const void *e, int64_t n, const double *wd,
                            const double *norms, const unsigned char *links, const int *idx,
                            int64_t k, int fail, double max_work, double *Zt, double *U, int *flags,
                            cudaStream_t stream) {
  const size_t smem = (2 * (size_t)n + kMaxCluster) * sizeof(double);
  if (smem > 40 * 1024) {
    cudaError_t err = cudaFuncSetAttribute(cluster_vectors<T>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess) return err;
  }
  if (!fail) {
    const int per = 128;
    check_cluster_work<T><<<(unsigned)((k + per - 1) / per), per, 0, stream>>>(
        static_cast<const T *>(e), (int)n, norms, links, idx, (int)k, max_work, flags);
  }
  cluster_vectors<T><<<dim3((unsigned)n, (unsigned)k), kClusterThreads, smem, stream>>>(
      static_cast<const T *>(d), static_cast<const T *>(e), (int)n, wd, norms, links, idx, fail, Zt,
      U, flags);
  return cudaGetLastError();
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_tridiag_clusters(int dtype, const void *d, const void *e, int64_t n,
                                                 const double *wd, const double *norms,
                                                 const unsigned char *links, const int *idx,
                                                 int64_t k, int fail, double max_work, double *Zt,
                                                 double *U, int *flags, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 2 || n > GSTAT_CU_TRIDIAG_MAX_N || k < 1 || k > 65535)
    return cudaErrorInvalidValue;
  return dtype == kF64 ? launch_clusters<double>(d, e, n, wd, norms, links, idx, k, fail, max_work,
                                                 Zt, U, flags, stream)
                       : launch_clusters<float>(d, e, n, wd, norms, links, idx, k, fail, max_work,
                                                Zt, U, flags, stream);
}
