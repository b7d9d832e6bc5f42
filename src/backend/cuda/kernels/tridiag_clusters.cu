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

/* The cluster's c columns (rows 0..m-1 of its block, z[k*n + q]): a
 * pseudo-random start, a hash of matrix b, slot i + q and row lo + k. */
__device__ void random_start(double *z, int m, int n, int c, size_t b, int i, int lo) {
  for (int at = threadIdx.x; at < m * c; at += blockDim.x) {
    const int k = at / c, q = at % c;
    z[(size_t)k * n + q] = hashed_uniform(b, (uint64_t)(i + q), (uint64_t)(lo + k));
  }
}

/* One pass of inverse iteration over the cluster's c columns, a thread per
 * column, each shifted by its own eigenvalue lam[q] (pivots in u). */
__device__ void invert_columns(const double *dd, const double *ee, int m, int n, int c,
                               const double *lam, double guard, double *z, double *u) {
  for (int q = threadIdx.x; q < c; q += blockDim.x)
    inverse_iteration(dd, ee, m, n, lam[q], guard, z + q, u + q);
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
 * come from cuSOLVER then), unless a wide list is given: then such a
 * cluster of at most kMaxCluster slots is appended to it (the wide path's
 * work). One pass over the slots: the blocks of the split T as
 * cluster_vectors finds them, the runs of linked slots in each. */
template <typename T>
__global__ void check_cluster_work(const T *e, int n, const double *norms,
                                   const unsigned char *links, const int *idx, int k,
                                   double max_work, int *flags, gstat_cu_wide_cluster *wide,
                                   int wide_cap, int *wide_count) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= k) return;
  const size_t b = (size_t)idx[j];
  const T *eb = e + b * n;
  const unsigned char *link = links + b * n;
  const double tol = split_tol<T>(norms[2 * b]);
  int lo = 0, hi = -1, first = 0, run = 0; /* hi: the current block's last row, once found */
  for (int i = 0; i < n; i++) {
    const bool linked = i < n - 1 && (link[i] & kLinkNext);
    const bool ends = i == n - 1 || fabs((double)eb[i]) <= tol; /* row i ends its block */
    if (linked && !ends) {
      if (run++ == 0) first = i;
      continue;
    }
    if (run > 0) { /* slots first .. i: a cluster of run + 1 */
      const int c = run + 1;
      if (hi < i)
        for (hi = i; hi < n - 1 && !(fabs((double)eb[hi]) <= tol);) hi++;
      const double m = (double)(hi - lo + 1);
      if (c > kMaxCluster || (m * c * c > max_work && !wide)) {
        flags[b] |= kFlagFailed;
        return;
      }
      if (m * c * c > max_work) {
        const int at = atomicAdd(wide_count, 1);
        if (at >= wide_cap) {
          flags[b] |= kFlagFailed;
          return;
        }
        wide[at] = {(int)b, first, c, lo, (int)m};
      }
    }
    run = 0;
    if (ends) lo = i + 1;
  }
}

/* grid (n, k): thread block (i, j) takes the cluster of matrix idx[j]
 * that starts at slot i, if one does (links); fail != 0 fails every
 * cluster (the hand-back's test). */
template <typename T>
__global__ void __launch_bounds__(kClusterThreads)
    cluster_vectors(const T *d, const T *e, int n, const double *wd, const double *norms,
                    const unsigned char *links, const int *idx, int fail, double wide_above,
                    double *Zt, double *U, int *flags) {
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
  if (!fail && wide_above > 0 && (double)m * c * c > wide_above) return; /* the wide path's */
  /* m c^2 was bounded by check_cluster_work; c bounds dots in shared memory */
  if (fail || c > kMaxCluster) {
    if (threadIdx.x == 0) atomicOr(&flags[b], kFlagFailed);
    return;
  }
  double *z = Zt + b * n * n + (size_t)lo * n + i, *u = U + b * n * n + (size_t)lo * n + i;
  const double *lam = wd + b * n + i;
  dd += lo;
  ee += lo;
  random_start(z, m, n, c, b, i, lo);
  if (threadIdx.x == 0) ok = 1;
  __syncthreads();
  const double guard = DBL_EPSILON * tnorm;
  for (int pass = 0; pass < 2; pass++) {
    invert_columns(dd, ee, m, n, c, lam, guard, z, u);
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
                            gstat_cu_wide_cluster *wide, int wide_cap, int *wide_count,
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
        static_cast<const T *>(e), (int)n, norms, links, idx, (int)k, max_work, flags, wide,
        wide_cap, wide_count);
  }
  cluster_vectors<T><<<dim3((unsigned)n, (unsigned)k), kClusterThreads, smem, stream>>>(
      static_cast<const T *>(d), static_cast<const T *>(e), (int)n, wd, norms, links, idx, fail,
      wide ? max_work : 0.0, Zt, U, flags);
  return cudaGetLastError();
}

/* ---- the wide path: clusters above the bound, by Cholesky QR over many blocks ---- */

/* Whether the wide cluster's matrix has failed already: one read per block,
 * so that every warp leaves or none does. */
__device__ bool wide_failed(const gstat_cu_wide_cluster &w, const int *flags) {
  return __syncthreads_or(threadIdx.x == 0 && threadIdx.y == 0 &&
                          (*(volatile const int *)&flags[w.b] & kFlagFailed));
}

/* A block per wide cluster: (pass 0) the pseudo-random start as
 * cluster_vectors gives it, then one pass of inverse iteration, each column
 * with its own eigenvalue (U's rows: the pivots). */
__global__ void __launch_bounds__(kClusterThreads)
    wide_invert(const double *d, const double *e, int n, const double *wd, const double *norms,
                const gstat_cu_wide_cluster *list, int pass, double *Zt, double *U,
                const int *flags) {
  const gstat_cu_wide_cluster w = list[blockIdx.x];
  if (wide_failed(w, flags)) return;
  const size_t b = (size_t)w.b;
  double *z = Zt + b * n * n + (size_t)w.lo * n + w.i, *u = U + b * n * n + (size_t)w.lo * n + w.i;
  if (pass == 0) random_start(z, w.m, n, w.c, b, w.i, w.lo);
  __syncthreads();
  invert_columns(d + b * n + w.lo, e + b * n + w.lo, w.m, n, w.c, wd + b * n + w.i,
                 DBL_EPSILON * norms[2 * b], z, u);
}

constexpr int kTile = 32, kTileRows = 8; /* 32 x 32 outputs, a block of 32 x 8 threads */

/* G = Z^T Z of each wide cluster (Z: its m x c columns in src's rows, G:
 * c x c at G's (i, i), leading dimension n), upper tiles computed, both
 * triangles written. grid (tiles^2 of the largest cluster, clusters). */
__global__ void __launch_bounds__(kTile *kTileRows)
    wide_gram(int n, const gstat_cu_wide_cluster *list, int tiles, const double *src, double *G,
              const int *flags) {
  __shared__ double a[kTile][kTile + 1], bt[kTile][kTile + 1];
  const gstat_cu_wide_cluster w = list[blockIdx.y];
  const int tr = blockIdx.x / tiles, tc = blockIdx.x % tiles;
  if (tr * kTile >= w.c || tc * kTile >= w.c || tc < tr || wide_failed(w, flags)) return;
  const size_t b = (size_t)w.b;
  const double *z = src + b * n * n + (size_t)w.lo * n + w.i;
  const int tx = threadIdx.x, ty = threadIdx.y, p0 = tr * kTile, q0 = tc * kTile;
  double acc[kTile / kTileRows] = {};
  for (int k0 = 0; k0 < w.m; k0 += kTile) {
    for (int r = ty; r < kTile; r += kTileRows) {
      const int k = k0 + r;
      a[r][tx] = k < w.m && p0 + tx < w.c ? z[(size_t)k * n + p0 + tx] : 0.0;
      bt[r][tx] = k < w.m && q0 + tx < w.c ? z[(size_t)k * n + q0 + tx] : 0.0;
    }
    __syncthreads();
    for (int r = 0; r < kTile; r++)
      for (int o = 0; o < kTile / kTileRows; o++) acc[o] += a[r][ty + o * kTileRows] * bt[r][tx];
    __syncthreads();
  }
  double *g = G + b * n * n + (size_t)w.i * n + w.i;
  for (int o = 0; o < kTile / kTileRows; o++) {
    const int p = p0 + ty + o * kTileRows, q = q0 + tx;
    if (p < w.c && q < w.c && p <= q) {
      g[(size_t)p * n + q] = acc[o];
      g[(size_t)q * n + p] = acc[o];
    }
  }
}

/* A block per wide cluster: G (+ shift I when shifted) = R^T R by Cholesky
 * in place (R in the upper triangle), then R^-1's strict upper part into
 * the lower triangle transposed (X[p][q], p < q, at G[q][p]; thread per
 * column). shift: Fukaya et al.'s 11 (m c + c (c + 1)) u ||Z||_F^2. A pivot
 * that is not positive and finite fails the matrix. */
__global__ void __launch_bounds__(kClusterThreads)
    wide_cholesky(int n, const gstat_cu_wide_cluster *list, int shifted, double *G, int *flags) {
  const gstat_cu_wide_cluster w = list[blockIdx.x];
  if (wide_failed(w, flags)) return;
  const int c = w.c;
  double *g = G + (size_t)w.b * n * n + (size_t)w.i * n + w.i;
  if (shifted) {
    double tr = 0;
    for (int q = 0; q < c; q++) tr += g[(size_t)q * n + q];
    const double s = 11.0 * ((double)w.m * c + (double)c * (c + 1)) * DBL_EPSILON * tr;
    __syncthreads();
    for (int q = threadIdx.x; q < c; q += blockDim.x) g[(size_t)q * n + q] += s;
  }
  __syncthreads();
  for (int j = 0; j < c; j++) {
    const double pivot = g[(size_t)j * n + j];
    if (!(pivot > 0) || !isfinite(pivot)) {
      if (threadIdx.x == 0) atomicOr(&flags[w.b], kFlagFailed);
      return;
    }
    const double r = sqrt(pivot);
    __syncthreads();
    for (int q = j + 1 + threadIdx.x; q < c; q += blockDim.x) g[(size_t)j * n + q] /= r;
    if (threadIdx.x == 0) g[(size_t)j * n + j] = r;
    __syncthreads();
    /* trailing update of the upper triangle, a thread per column q */
    for (int q = j + 1 + threadIdx.x; q < c; q += blockDim.x) {
      const double rq = g[(size_t)j * n + q];
      for (int p = j + 1; p <= q; p++) g[(size_t)p * n + q] -= g[(size_t)j * n + p] * rq;
    }
    __syncthreads();
  }
  for (int q = threadIdx.x; q < c; q += blockDim.x) /* column q of R^-1, bottom up */
    for (int p = q - 1; p >= 0; p--) {
      double acc = g[(size_t)p * n + q] / g[(size_t)q * n + q]; /* t = q: X[q][q] = 1 / R[q][q] */
      for (int t = p + 1; t < q; t++) acc += g[(size_t)p * n + t] * g[(size_t)q * n + t];
      g[(size_t)q * n + p] = -acc / g[(size_t)p * n + p];
    }
}

/* dst = src R^-1 over each wide cluster's m x c (R^-1 as wide_cholesky
 * leaves it: X[p][q] = G[q][p] for p < q, 1 / G[q][q] on the diagonal).
 * grid (row tiles x column tiles of the largest cluster, clusters). */
__global__ void __launch_bounds__(kTile *kTileRows)
    wide_apply(int n, const gstat_cu_wide_cluster *list, int tiles, const double *src,
               const double *G, double *dst, const int *flags) {
  __shared__ double a[kTile][kTile + 1], x[kTile][kTile + 1];
  const gstat_cu_wide_cluster w = list[blockIdx.y];
  const int tr = blockIdx.x / tiles, tc = blockIdx.x % tiles;
  if (tr * kTile >= w.m || tc * kTile >= w.c || wide_failed(w, flags)) return;
  const size_t b = (size_t)w.b, off = b * n * n + (size_t)w.lo * n + w.i;
  const double *z = src + off, *g = G + b * n * n + (size_t)w.i * n + w.i;
  const int tx = threadIdx.x, ty = threadIdx.y, k0 = tr * kTile, q0 = tc * kTile;
  double acc[kTile / kTileRows] = {};
  for (int p0 = 0; p0 <= q0; p0 += kTile) {       /* X is upper triangular: p <= q */
    for (int r = ty; r < kTile; r += kTileRows) { /* x[p][q] read along p: rows of G's lower part */
      const int k = k0 + r, p = p0 + tx, q = q0 + r;
      a[r][tx] = k < w.m && p < w.c ? z[(size_t)k * n + p] : 0.0;
      x[tx][r] = p < w.c && q < w.c && p <= q
                     ? (p == q ? 1.0 / g[(size_t)q * n + q] : g[(size_t)q * n + p])
                     : 0.0;
    }
    __syncthreads();
    for (int t = 0; t < kTile; t++)
      for (int o = 0; o < kTile / kTileRows; o++) acc[o] += a[ty + o * kTileRows][t] * x[t][tx];
    __syncthreads();
  }
  for (int o = 0; o < kTile / kTileRows; o++) {
    const int k = k0 + ty + o * kTileRows, q = q0 + tx;
    if (k < w.m && q < w.c) dst[off + (size_t)k * n + q] = acc[o];
  }
}

/* A block per wide cluster: its m x c back from U's rows into Zt's. */
__global__ void __launch_bounds__(kClusterThreads)
    wide_copy(int n, const gstat_cu_wide_cluster *list, const double *U, double *Zt,
              const int *flags) {
  const gstat_cu_wide_cluster w = list[blockIdx.x];
  if (wide_failed(w, flags)) return;
  const size_t off = (size_t)w.b * n * n + (size_t)w.lo * n + w.i;
  for (int at = threadIdx.x; at < w.m * w.c; at += blockDim.x) {
    const size_t k = (size_t)(at / w.c) * n + at % w.c;
    Zt[off + k] = U[off + k];
  }
}

/* A block per wide cluster: cluster_vectors' check of every column. */
__global__ void __launch_bounds__(kClusterThreads)
    wide_check(const double *d, const double *e, int n, const double *wd, const double *norms,
               const gstat_cu_wide_cluster *list, const double *Zt, int *flags) {
  const gstat_cu_wide_cluster w = list[blockIdx.x];
  if (wide_failed(w, flags)) return;
  const size_t b = (size_t)w.b;
  const double tol = kResidualUnits * n * DBL_EPSILON * norms[2 * b];
  const double *z = Zt + b * n * n + (size_t)w.lo * n + w.i;
  for (int q = threadIdx.x; q < w.c; q += blockDim.x)
    if (!column_ok(d + b * n + w.lo, e + b * n + w.lo, w.m, n, wd[b * n + w.i + q], z + q, tol))
      atomicOr(&flags[b], kFlagFailed);
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_tridiag_clusters(int dtype, const void *d, const void *e, int64_t n,
                                                 const double *wd, const double *norms,
                                                 const unsigned char *links, const int *idx,
                                                 int64_t k, int fail, double max_work, double *Zt,
                                                 double *U, int *flags, gstat_cu_wide_cluster *wide,
                                                 int wide_cap, int *wide_count,
                                                 cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 2 || n > GSTAT_CU_TRIDIAG_MAX_N || k < 1 || k > 65535 ||
      (wide && dtype != kF64))
    return cudaErrorInvalidValue;
  return dtype == kF64 ? launch_clusters<double>(d, e, n, wd, norms, links, idx, k, fail, max_work,
                                                 Zt, U, flags, wide, wide_cap, wide_count, stream)
                       : launch_clusters<float>(d, e, n, wd, norms, links, idx, k, fail, max_work,
                                                Zt, U, flags, nullptr, 0, nullptr, stream);
}

extern "C" cudaError_t gstat_cu_tridiag_wide(const double *d, const double *e, int64_t n,
                                             const double *wd, const double *norms,
                                             const gstat_cu_wide_cluster *list, int count,
                                             int max_c, int max_m, double *Zt, double *U, double *G,
                                             int *flags, cudaStream_t stream) {
  if (n < 2 || n > GSTAT_CU_TRIDIAG_MAX_N || count < 1 || max_c < 2 || max_c > kMaxCluster ||
      max_m < max_c || max_m > n)
    return cudaErrorInvalidValue;
  const int tiles = (max_c + kTile - 1) / kTile, row_tiles = (max_m + kTile - 1) / kTile;
  const dim3 tile_block(kTile, kTileRows);
  for (int pass = 0; pass < 2; pass++) {
    wide_invert<<<count, kClusterThreads, 0, stream>>>(d, e, (int)n, wd, norms, list, pass, Zt, U,
                                                       flags);
    /* shifted Cholesky QR, then Cholesky QR twice: Zt -> U -> Zt -> U */
    const double *src = Zt;
    double *dst = U;
    for (int round = 0; round < 3; round++) {
      wide_gram<<<dim3((unsigned)(tiles * tiles), (unsigned)count), tile_block, 0, stream>>>(
          (int)n, list, tiles, src, G, flags);
      wide_cholesky<<<count, kClusterThreads, 0, stream>>>((int)n, list, round == 0, G, flags);
      wide_apply<<<dim3((unsigned)(row_tiles * tiles), (unsigned)count), tile_block, 0, stream>>>(
          (int)n, list, tiles, src, G, dst, flags);
      src = dst;
      dst = dst == U ? Zt : U;
    }
    wide_copy<<<count, kClusterThreads, 0, stream>>>((int)n, list, U, Zt, flags);
  }
  wide_check<<<count, kClusterThreads, 0, stream>>>(d, e, (int)n, wd, norms, list, Zt, flags);
  return cudaGetLastError();
}
