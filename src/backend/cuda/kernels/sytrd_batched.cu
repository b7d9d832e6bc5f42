/*
 * Batched reduction of symmetric matrices to tridiagonal form, all matrices
 * of the batch in lockstep (one launch per step serves every matrix), and
 * the triangular factor of a block of reflectors for the back-transformation.
 * The driver (sytrd_eigh.c) runs them with cuBLAS for the rank-2k updates.
 *
 * The algorithm is LAPACK's blocked lower-triangle reduction (dsytrd with
 * dlatrd): within a panel of kSytrdPanel columns the trailing matrix is not
 * updated; column k is corrected by the panel's earlier reflectors V and
 * their w vectors W, and A22 * v is corrected by V (W^T v) and W (V^T v).
 * Storage is full (both triangles): the symmetric product A22 v reads the
 * columns of A22, contiguous. After column k, A's column k holds reflector
 * k written out (zeros down to row k, 1 at row k + 1), which is the V of the
 * corrections, of the panel's rank-2k update and of the back-transformation.
 */
#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kColThreads = 512; /* one block per matrix for a column */
constexpr int kSymvWarps = 8;    /* warps per block of the product */
constexpr int kTileDim = 32;     /* symmetrize: tile side */
constexpr int kP = GSTAT_CU_SYTRD_PANEL;

template <typename T>
struct SytrdArgs {
  T *a, *wpan, *d, *e, *tau, *y, *dots;
  int n;
};

/* Sum (or max) over a block of kColThreads threads; every thread gets it. */
template <typename T, bool kMax>
__device__ T block_reduce(T v, T *scratch) {
  for (int o = 16; o > 0; o >>= 1) {
    T u = __shfl_xor_sync(kFullMask, v, o);
    v = kMax ? (u > v ? u : v) : v + u;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); /* scratch may still be read from the previous call */
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kColThreads / 32 ? scratch[lane] : T(0);
  for (int o = 16; o > 0; o >>= 1) {
    T u = __shfl_xor_sync(kFullMask, v, o);
    v = kMax ? (u > v ? u : v) : v + u;
  }
  return v;
}

/* LAPACK's [sd]syevd scaling: a matrix whose largest lower-triangle
 * magnitude lies outside [sqrt(safmin / eps), sqrt(1 / (safmin / eps))] is
 * scaled into that range (sigma[b], 1 otherwise), so that the reduction
 * neither overflows nor loses digits to underflow; its eigenvalues are
 * divided by sigma afterwards. Two passes, kScaleBlocks blocks per matrix:
 * the largest magnitude (atomicMax on the bits of a non-negative double,
 * which order as the values do; NaN wins and leaves A unscaled), then the
 * scaling. */
constexpr int kScaleBlocks = 32;

template <typename T>
__global__ void __launch_bounds__(kColThreads)
    tri_amax(const T *a, int64_t n, bool upper, double *amax) {
  __shared__ T scratch[32];
  const T *m = a + (size_t)blockIdx.y * n * n;
  const size_t total = (size_t)n * n, step = (size_t)kColThreads * gridDim.x;
  T v = 0;
  for (size_t idx = blockIdx.x * (size_t)kColThreads + threadIdx.x; idx < total; idx += step) {
    size_t j = idx / n, i = idx - j * n;
    if (upper ? i <= j : i >= j) {
      T x = fabs(m[idx]);
      v = x > v || x != x ? x : v;
    }
  }
  v = block_reduce<T, true>(v, scratch);
  if (threadIdx.x == 0)
    atomicMax(reinterpret_cast<unsigned long long *>(amax + blockIdx.y),
              (unsigned long long)__double_as_longlong((double)v));
}

/* to_one: a power of two that brings the largest magnitude into [1, 2)
 * (exact, and far from underflow for solvers that square entries, such as
 * cuSOLVER's batched Jacobi), rather than LAPACK's edge of the safe range. */
template <typename T>
__global__ void __launch_bounds__(kColThreads)
    scale_tri(T *a, int64_t n, bool upper, bool to_one, const double *amax, double *sigma) {
  T *m = a + (size_t)blockIdx.y * n * n;
  const double eps = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
  const double safmin = sizeof(T) == 4 ? FLT_MIN : DBL_MIN;
  const double smlnum = safmin / eps, rmin = sqrt(smlnum), rmax = sqrt(1 / smlnum);
  const double an = amax[blockIdx.y];
  double sg = 1;
  if (an > 0 && an < rmin)
    sg = to_one ? ldexp(1.0, -ilogb(an)) : rmin / an;
  else if (an > rmax && an <= DBL_MAX) /* Inf: left for the output check */
    sg = to_one ? ldexp(1.0, -ilogb(an)) : rmax / an;
  if (blockIdx.x == 0 && threadIdx.x == 0) sigma[blockIdx.y] = sg;
  if (sg == 1) return;
  const size_t total = (size_t)n * n, step = (size_t)kColThreads * gridDim.x;
  for (size_t idx = blockIdx.x * (size_t)kColThreads + threadIdx.x; idx < total; idx += step) {
    size_t j = idx / n, i = idx - j * n;
    /* in double: a float factor for subnormal data would overflow */
    if (upper ? i <= j : i >= j) m[idx] = (T)((double)m[idx] * sg);
  }
}

template <typename T>
__global__ void unscale_values(T *w, int64_t n, int64_t batch, const double *sigma) {
  const int64_t total = n * batch;
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total;
       k += (int64_t)gridDim.x * blockDim.x) {
    const double sg = sigma[k / n];
    if (sg != 1) w[k] = (T)((double)w[k] / sg);
  }
}

/* Copy the lower triangle of each matrix onto its upper one, a tile at a
 * time through shared memory (both sides coalesced). Tiles on and below the
 * diagonal: blockIdx.x = tile row ti, blockIdx.y = tile column tj <= ti. */
template <typename T>
__global__ void __launch_bounds__(kTileDim * 8) symmetrize_lower(T *a, int n) {
  int ti = blockIdx.x, tj = blockIdx.y;
  if (tj > ti) return;
  __shared__ T tile[kTileDim][kTileDim + 1];
  T *m = a + (size_t)blockIdx.z * n * n;
  int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  /* read tile (ti, tj) of the lower part: rows ti*32+tx, columns tj*32+ty.. */
  for (int c = ty; c < kTileDim; c += 8) {
    int i = ti * kTileDim + tx, j = tj * kTileDim + c;
    if (i < n && j < n) tile[c][tx] = m[i + (size_t)j * n];
  }
  __syncthreads();
  /* write it transposed into tile (tj, ti): element (j, i) = a(i, j), i > j */
  for (int c = ty; c < kTileDim; c += 8) {
    int j = tj * kTileDim + tx, i = ti * kTileDim + c;
    if (i < n && j < n && i > j) m[j + (size_t)i * n] = tile[tx][c];
  }
}

/* One step for each matrix (a block each):
 *   finish >= 0: complete w of column `finish` from y = A22 v and the dots
 *                (V^T v, W^T v): w = tau (y - V W^T v - W V^T v), then
 *                w -= tau/2 (w^T v) v, stored as the panel's W column;
 *   start >= 0:  correct column `start` by the panel's earlier reflectors,
 *                record d, form its reflector (LAPACK's dlarfg: beta =
 *                -sign(alpha) |x|, tau = (beta - alpha) / beta), record e and
 *                tau, and write the reflector out in A's column. */
template <typename T>
__global__ void __launch_bounds__(kColThreads) sytrd_column(SytrdArgs<T> g, int finish, int start) {
  const int n = g.n;
  const size_t b = blockIdx.x;
  T *a = g.a + b * n * n, *wp = g.wpan + b * n * kP;
  T *d = g.d + b * n, *e = g.e + b * n, *tau = g.tau + b * n, *y = g.y + b * n;
  const T *dots = g.dots + b * 2 * kP;
  __shared__ T scratch[32], vk[kP], wk[kP], coef[2 * kP];
  if (finish >= 0) {
    const int c = finish, jc = c % kP, pc = c - jc;
    const T tc = tau[c];
    if (threadIdx.x < 2 * jc)
      coef[threadIdx.x] = dots[threadIdx.x < jc ? threadIdx.x : kP + threadIdx.x - jc];
    __syncthreads();
    /* coef[0..jc): W^T v, coef[jc..2jc): V^T v */
    T part = 0;
    for (int r = c + 1 + threadIdx.x; r < n; r += kColThreads) {
      T s = y[r];
      for (int t = 0; t < jc; t++)
        s -= a[r + (size_t)(pc + t) * n] * coef[t] + wp[r + (size_t)t * n] * coef[jc + t];
      s *= tc;
      wp[r + (size_t)jc * n] = s;
      part += s * a[r + (size_t)c * n];
    }
    T alpha = T(-0.5) * tc * block_reduce<T, false>(part, scratch);
    for (int r = c + 1 + threadIdx.x; r < n; r += kColThreads)
      wp[r + (size_t)jc * n] += alpha * a[r + (size_t)c * n];
    __syncthreads(); /* W's new column before a start reads its row k */
  }
  if (start < 0) return;
  const int k = start, j = k % kP, p = k - j;
  if (threadIdx.x < j) {
    vk[threadIdx.x] = a[k + (size_t)(p + threadIdx.x) * n];
    wk[threadIdx.x] = wp[k + (size_t)threadIdx.x * n];
  }
  __syncthreads();
  /* the column, corrected; this thread's rows k + tid, k + tid + 512, ... */
  T amax = 0;
  for (int r = k + threadIdx.x; r < n; r += kColThreads) {
    T s = a[r + (size_t)k * n];
    for (int t = 0; t < j; t++)
      s -= a[r + (size_t)(p + t) * n] * wk[t] + wp[r + (size_t)t * n] * vk[t];
    a[r + (size_t)k * n] = s;
    if (r >= k + 2) amax = fmax(amax, fabs(s));
  }
  amax = block_reduce<T, true>(amax, scratch);
  T ss = 0;
  if (amax > 0)
    for (int r = k + 2 + threadIdx.x; r < n; r += kColThreads) {
      T x = a[r + (size_t)k * n] / amax;
      ss += x * x;
    }
  ss = block_reduce<T, false>(ss, scratch);
  const T akk = a[k + (size_t)k * n];
  const T alpha = k + 1 < n ? a[k + 1 + (size_t)k * n] : T(0);
  T beta = alpha, tk = 0, scal = 0;
  if (amax > 0) {
    T xnorm = amax * sqrt(ss);
    beta = -copysign(hypot(alpha, xnorm), alpha);
    tk = (beta - alpha) / beta;
    scal = T(1) / (alpha - beta);
  }
  __syncthreads(); /* every thread has read akk and alpha */
  if (threadIdx.x == 0) {
    d[k] = akk;
    e[k] = beta;
    tau[k] = tk;
  }
  for (int r = threadIdx.x; r <= k; r += kColThreads) a[r + (size_t)k * n] = 0;
  if (threadIdx.x == 0 && k + 1 < n) a[k + 1 + (size_t)k * n] = 1;
  for (int r = k + 2 + threadIdx.x; r < n; r += kColThreads) a[r + (size_t)k * n] *= scal;
}

/* y = A22 v for column k (A22 = A(k+1:n, k+1:n), v = A(k+1:n, k)), a warp
 * per column of A22 (symmetric: a column is a row), and the dots of the
 * panel's earlier reflectors: dots[t] = W(:,t)^T v, dots[kP + t] =
 * V(:,t)^T v, t < j, a warp each in the last blocks. blockIdx.y: matrix. */
template <typename T>
__global__ void __launch_bounds__(kSymvWarps * 32)
    sytrd_symv(SytrdArgs<T> g, int k, int symv_blocks) {
  const int n = g.n, m = n - k - 1, j = k % kP, p = k - j;
  const size_t b = blockIdx.y;
  const T *a = g.a + b * n * n, *wp = g.wpan + b * n * kP;
  const T *v = a + k + 1 + (size_t)k * n;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T *vs = reinterpret_cast<T *>(smem_raw);
  for (int i = threadIdx.x; i < m; i += blockDim.x) vs[i] = v[i];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T *col;
  T *out;
  if ((int)blockIdx.x < symv_blocks) {
    int i = blockIdx.x * kSymvWarps + warp;
    if (i >= m) return;
    col = a + k + 1 + (size_t)(k + 1 + i) * n;
    out = g.y + b * n + k + 1 + i;
  } else {
    int t = (blockIdx.x - symv_blocks) * kSymvWarps + warp;
    if (t >= 2 * j) return;
    col = t < j ? wp + k + 1 + (size_t)t * n : a + k + 1 + (size_t)(p + t - j) * n;
    out = g.dots + b * 2 * kP + (t < j ? t : kP + t - j);
  }
  T s = 0;
  for (int r = lane; r < m; r += 32) s += col[r] * vs[r];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(kFullMask, s, o);
  if (lane == 0) *out = s;
}

/* The upper triangular T of a block of nbw reflectors (LAPACK's dlarft,
 * forward, columnwise): T(s,s) = tau_s, T(0:s, s) = -tau_s T(0:s, 0:s)
 * G(0:s, s) with G = V^T V. A warp per matrix; lane u owns row u. G and T
 * are nbw x nbw column-major (stride nbw * nbw per matrix), tau points at
 * the block's first reflector (stride n per matrix). */
template <typename T>
__global__ void __launch_bounds__(32) larft(const T *G, const T *tau, T *Tm, int nbw, int n) {
  const size_t b = blockIdx.x;
  const T *g = G + b * nbw * nbw, *tb = tau + b * n;
  T *t = Tm + b * nbw * nbw;
  const int u = threadIdx.x;
  T row[kP];
  for (int s = 0; s < nbw; s++) {
    T val = 0;
    if (u < s) {
      T acc = 0;
      for (int q = u; q < s; q++) acc += row[q] * g[q + s * nbw];
      val = -tb[s] * acc;
    } else if (u == s) {
      val = tb[s];
    }
    if (u < nbw) {
      row[s] = val;
      t[u + s * nbw] = val;
    }
  }
}

template <typename T>
cudaError_t column_step(void *a, void *wpan, void *vec, int n, int64_t batch, int finish, int start,
                        cudaStream_t stream) {
  T *v = static_cast<T *>(vec);
  SytrdArgs<T> g{static_cast<T *>(a), static_cast<T *>(wpan), v, v + batch * n, v + 2 * batch * n,
                 v + 3 * batch * n,   v + 4 * batch * n,      n};
  sytrd_column<T><<<(unsigned)batch, kColThreads, 0, stream>>>(g, finish, start);
  return cudaGetLastError();
}

template <typename T>
cudaError_t symv_step(void *a, void *wpan, void *vec, int n, int64_t batch, int k,
                      cudaStream_t stream) {
  T *v = static_cast<T *>(vec);
  SytrdArgs<T> g{static_cast<T *>(a), static_cast<T *>(wpan), v, v + batch * n, v + 2 * batch * n,
                 v + 3 * batch * n,   v + 4 * batch * n,      n};
  int m = n - k - 1, j = k % kP;
  int symv_blocks = (m + kSymvWarps - 1) / kSymvWarps,
      dot_blocks = (2 * j + kSymvWarps - 1) / kSymvWarps;
  dim3 grid((unsigned)(symv_blocks + dot_blocks), (unsigned)batch);
  sytrd_symv<T><<<grid, kSymvWarps * 32, (size_t)m * sizeof(T), stream>>>(g, k, symv_blocks);
  return cudaGetLastError();
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" size_t gstat_cu_sytrd_vec_elems(int64_t n, int64_t batch) {
  return (size_t)batch * (4 * (size_t)n + 2 * kP);
}

/* Both scalings over batches of any size, 65535 matrices a launch. */
static cudaError_t scale_safe(int dtype, void *a, int64_t n, int64_t batch, bool upper, bool to_one,
                              double *amax, double *sigma, cudaStream_t stream) {
  const size_t es = dtype == kF64 ? sizeof(double) : sizeof(float);
  for (int64_t b0 = 0; b0 < batch; b0 += 65535) {
    const int64_t nb = batch - b0 < 65535 ? batch - b0 : 65535;
    char *ab = static_cast<char *>(a) + (size_t)b0 * (size_t)(n * n) * es;
    cudaError_t err = cudaMemsetAsync(amax + b0, 0, sizeof(double) * (size_t)nb, stream);
    if (err != cudaSuccess) return err;
    /* a few thousand elements per block: small matrices need one */
    const int64_t want = n * n / (kColThreads * 8) + 1;
    dim3 grid((unsigned)(want < kScaleBlocks ? want : kScaleBlocks), (unsigned)nb);
    if (dtype == kF64) {
      tri_amax<double><<<grid, kColThreads, 0, stream>>>((double *)ab, n, upper, amax + b0);
      scale_tri<double>
          <<<grid, kColThreads, 0, stream>>>((double *)ab, n, upper, to_one, amax + b0, sigma + b0);
    } else {
      tri_amax<float><<<grid, kColThreads, 0, stream>>>((float *)ab, n, upper, amax + b0);
      scale_tri<float>
          <<<grid, kColThreads, 0, stream>>>((float *)ab, n, upper, to_one, amax + b0, sigma + b0);
    }
    if ((err = cudaGetLastError()) != cudaSuccess) return err;
  }
  return cudaSuccess;
}

extern "C" cudaError_t gstat_cu_sytrd_scale(int dtype, void *a, int64_t n, int64_t batch,
                                            double *amax, double *sigma, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || n > GSTAT_CU_TRIDIAG_MAX_N || batch < 1 || batch > 65535)
    return cudaErrorInvalidValue;
  return scale_safe(dtype, a, n, batch, false, false, amax, sigma, stream);
}

extern "C" cudaError_t gstat_cu_scale_to_unit(int dtype, void *a, int64_t n, int64_t batch,
                                              int upper, double *amax, double *sigma,
                                              cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || batch < 0) return cudaErrorInvalidValue;
  return scale_safe(dtype, a, n, batch, upper != 0, true, amax, sigma, stream);
}

extern "C" cudaError_t gstat_cu_unscale_values(int dtype, void *w, int64_t n, int64_t batch,
                                               const double *sigma, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || batch < 0) return cudaErrorInvalidValue;
  if (n == 0 || batch == 0) return cudaSuccess;
  const int64_t total = n * batch;
  const unsigned blocks = (unsigned)(total / 256 + 1 < 4096 ? total / 256 + 1 : 4096);
  if (dtype == kF64)
    unscale_values<double><<<blocks, 256, 0, stream>>>((double *)w, n, batch, sigma);
  else
    unscale_values<float><<<blocks, 256, 0, stream>>>((float *)w, n, batch, sigma);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sytrd_symmetrize(int dtype, void *a, int64_t n, int64_t batch,
                                                 cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || batch < 0 || n > GSTAT_CU_SYTRD_MAX_N || batch > 65535)
    return cudaErrorInvalidValue;
  if (n < 2 || batch == 0) return cudaSuccess;
  unsigned tiles = (unsigned)((n + kTileDim - 1) / kTileDim);
  dim3 grid(tiles, tiles, (unsigned)batch);
  if (dtype == kF64)
    symmetrize_lower<double><<<grid, kTileDim * 8, 0, stream>>>(static_cast<double *>(a), (int)n);
  else
    symmetrize_lower<float><<<grid, kTileDim * 8, 0, stream>>>(static_cast<float *>(a), (int)n);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sytrd_column(int dtype, void *a, void *wpan, void *vec, int64_t n,
                                             int64_t batch, int64_t finish, int64_t start,
                                             cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 1 || n > GSTAT_CU_SYTRD_MAX_N || batch < 1 ||
      batch > INT32_MAX || finish >= n - 1 || start >= n)
    return cudaErrorInvalidValue;
  return dtype == kF64
             ? column_step<double>(a, wpan, vec, (int)n, batch, (int)finish, (int)start, stream)
             : column_step<float>(a, wpan, vec, (int)n, batch, (int)finish, (int)start, stream);
}

extern "C" cudaError_t gstat_cu_sytrd_symv(int dtype, void *a, void *wpan, void *vec, int64_t n,
                                           int64_t batch, int64_t k, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 2 || n > GSTAT_CU_SYTRD_MAX_N || batch < 1 || batch > 65535 ||
      k < 0 || k >= n - 1)
    return cudaErrorInvalidValue;
  return dtype == kF64 ? symv_step<double>(a, wpan, vec, (int)n, batch, (int)k, stream)
                       : symv_step<float>(a, wpan, vec, (int)n, batch, (int)k, stream);
}

extern "C" cudaError_t gstat_cu_larft(int dtype, const void *G, const void *tau, void *T,
                                      int64_t nbw, int64_t n, int64_t batch, cudaStream_t stream) {
  if (!compute_dtype(dtype) || nbw < 1 || nbw > kP || batch < 1 || batch > INT32_MAX)
    return cudaErrorInvalidValue;
  if (dtype == kF64)
    larft<double><<<(unsigned)batch, 32, 0, stream>>>(static_cast<const double *>(G),
                                                      static_cast<const double *>(tau),
                                                      static_cast<double *>(T), (int)nbw, (int)n);
  else
    larft<float><<<(unsigned)batch, 32, 0, stream>>>(static_cast<const float *>(G),
                                                     static_cast<const float *>(tau),
                                                     static_cast<float *>(T), (int)nbw, (int)n);
  return cudaGetLastError();
}
