/* Memory-bound kernels: strided gather/scatter with dtype conversion,
 * non-finite scans, NaN fill and the eigenvector sign fix. */
#include <climits>

#include "common.cuh"

namespace gstat_cu {
namespace {

/* Call f(T{}) with T the storage type of dtype; false for an unknown dtype. */
template <typename F>
bool with_dtype(int dtype, F &&f) {
  switch (dtype) {
    case kF32: f(float{}); return true;
    case kF64: f(double{}); return true;
    case kBF16: f(bf16{}); return true;
  }
  return false;
}

/* batch * rows * cols without int64 overflow (the dispatcher checked it already). */
bool element_count(int64_t batch, int64_t rows, int64_t cols, int64_t *total) {
  if (batch < 0 || rows < 0 || cols < 0) return false;
  return !__builtin_mul_overflow(batch, rows, total) &&
         !__builtin_mul_overflow(*total, cols, total);
}

/* ---- gather / scatter ------------------------------------------------------------ */

/* One thread per element in dense (column-major) order, so the dense side is
 * always coalesced and the strided side is when rs == 1. */
template <bool GATHER, typename S, typename D, typename U>
__global__ void __launch_bounds__(kLinearThreads)
    copy_linear(const S *__restrict__ src, D *__restrict__ dst, U rows, U cols, Divider<U> by_rows,
                Divider<U> by_cols, U total, int64_t bs, int64_t rs, int64_t cs) {
  const U stride = (U)gridDim.x * blockDim.x;
  for (U e = (U)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
    const U col = by_rows(e); /* b * cols + j */
    const U i = e - col * rows;
    const U b = by_cols(col);
    const U j = col - b * cols;
    const int64_t off = (int64_t)b * bs + (int64_t)i * rs + (int64_t)j * cs;
    if (GATHER)
      put(dst + e, widen(src[off]));
    else
      put(dst + off, widen(src[e]));
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;

/* For a row-fast strided side (cs < rs, e.g. C row-major): a 32x32 tile goes
 * through shared memory so that both sides are read/written along their
 * contiguous dimension. */
template <bool GATHER, typename S, typename D>
__global__ void __launch_bounds__(kTile *kTileRows)
    copy_tiled(const S *__restrict__ src, D *__restrict__ dst, int64_t rows, int64_t cols,
               int64_t tiles_i, int64_t tiles_j, int64_t ntiles, int64_t bs, int64_t rs,
               int64_t cs) {
  __shared__ S tile[kTile][kTile + 1]; /* tile[i][j]; +1 avoids bank conflicts */
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
    const int64_t tj = t % tiles_j, rest = t / tiles_j;
    const int64_t i0 = rest % tiles_i * kTile, j0 = tj * kTile, b = rest / tiles_i;
    const int64_t dense = b * rows * cols, strided = b * bs;
#pragma unroll
    for (int r = 0; r < kTile; r += kTileRows) {
      if (GATHER) { /* strided side, j fastest */
        const int64_t i = i0 + ty + r, j = j0 + tx;
        if (i < rows && j < cols) tile[ty + r][tx] = src[strided + i * rs + j * cs];
      } else { /* dense side, i fastest */
        const int64_t i = i0 + tx, j = j0 + ty + r;
        if (i < rows && j < cols) tile[tx][ty + r] = src[dense + i + j * rows];
      }
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < kTile; r += kTileRows) {
      if (GATHER) {
        const int64_t i = i0 + tx, j = j0 + ty + r;
        if (i < rows && j < cols) put(dst + dense + i + j * rows, widen(tile[tx][ty + r]));
      } else {
        const int64_t i = i0 + ty + r, j = j0 + tx;
        if (i < rows && j < cols) put(dst + strided + i * rs + j * cs, widen(tile[ty + r][tx]));
      }
    }
    __syncthreads(); /* the tile is rewritten by the next iteration */
  }
}

template <bool GATHER, typename S, typename D>
void launch_copy(const void *src, void *dst, int64_t batch, int64_t rows, int64_t cols,
                 int64_t total, int64_t bs, int64_t rs, int64_t cs, cudaStream_t stream) {
  const S *s = static_cast<const S *>(src);
  D *d = static_cast<D *>(dst);
  if (rows >= kTile && cols >= kTile && cs < rs) {
    const int64_t ti = (rows + kTile - 1) / kTile, tj = (cols + kTile - 1) / kTile;
    const int64_t ntiles = batch * ti * tj;
    const unsigned blocks = (unsigned)(ntiles < kMaxLinearBlocks ? ntiles : kMaxLinearBlocks);
    copy_tiled<GATHER>
        <<<blocks, kTile * kTileRows, 0, stream>>>(s, d, rows, cols, ti, tj, ntiles, bs, rs, cs);
  } else if (fits_u32(total)) {
    const uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    copy_linear<GATHER><<<linear_blocks(total), kLinearThreads, 0, stream>>>(
        s, d, r, c, Divider<uint32_t>(r), Divider<uint32_t>(c), (uint32_t)total, bs, rs, cs);
  } else {
    const uint64_t r = (uint64_t)rows, c = (uint64_t)cols;
    copy_linear<GATHER><<<linear_blocks(total), kLinearThreads, 0, stream>>>(
        s, d, r, c, Divider<uint64_t>(r), Divider<uint64_t>(c), (uint64_t)total, bs, rs, cs);
  }
}

/* ---- non-finite scans, NaN fill ----------------------------------------------------- */

__device__ __forceinline__ bool in_part(int tri, uint64_t i, uint64_t j) {
  switch (tri) {
    case 1: return i >= j;
    case 2: return i <= j;
    case 3: return i > j;
    case 4: return i < j;
  }
  return true;
}

/* Every lane of a warp runs the same iterations (base is warp-aligned and the
 * stride a multiple of 32), so warp votes inside the loop are safe. */
template <typename S, typename U>
__global__ void __launch_bounds__(kLinearThreads)
    find_nonfinite_kernel(const S *__restrict__ A, int tri, U rows, U cols, Divider<U> by_rows,
                          Divider<U> by_cols, U total, int64_t bs, int64_t rs, int64_t cs,
                          bool j_fastest, unsigned long long *first) {
  const U stride = (U)gridDim.x * blockDim.x;
  const unsigned lane = threadIdx.x % 32;
  for (U base = ((U)blockIdx.x * blockDim.x + threadIdx.x) - lane; base < total; base += stride) {
    const U e = base + lane;
    bool bad = false;
    unsigned long long lin = ULLONG_MAX;
    if (e < total) {
      U b, i, j;
      if (j_fastest) { /* walk the strided side along its contiguous dimension */
        const U q = by_cols(e);
        j = e - q * cols;
        b = by_rows(q);
        i = q - b * rows;
      } else {
        const U q = by_rows(e);
        i = e - q * rows;
        b = by_cols(q);
        j = q - b * cols;
      }
      if (in_part(tri, i, j) && !finite(A[(int64_t)b * bs + (int64_t)i * rs + (int64_t)j * cs])) {
        bad = true;
        lin = ((unsigned long long)b * rows + i) * cols + j;
      }
    }
    if (__any_sync(kFullMask, bad)) { /* rare: one atomic per warp */
      for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long other = __shfl_xor_sync(kFullMask, lin, o);
        lin = other < lin ? other : lin;
      }
      if (lane == 0) atomicMin(first, lin);
    }
  }
}

/* ---- eigenvector signs ---------------------------------------------------------------- */

/* A group of W lanes per column (columns are contiguous runs of n): find the
 * first entry of largest magnitude (NaN never wins, like the CPU's scan) and
 * negate the column when it is negative. */
template <typename T, int W>
__global__ void __launch_bounds__(kLinearThreads)
    fix_signs_kernel(T *__restrict__ V, int64_t n, int64_t ncols) {
  const int lane = threadIdx.x % W;
  const unsigned mask = W == 32 ? kFullMask : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const int64_t groups = (int64_t)gridDim.x * blockDim.x / W;
  for (int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W; c < ncols; c += groups) {
    T *col = V + c * n;
    T best = -1, val = 0;
    int64_t at = INT64_MAX;
    for (int64_t i = lane; i < n; i += W) {
      const T x = col[i], m = fabs(x);
      if (m > best) {
        best = m;
        val = x;
        at = i;
      }
    }
    for (int o = W / 2; o > 0; o >>= 1) {
      const T ob = __shfl_xor_sync(mask, best, o), ov = __shfl_xor_sync(mask, val, o);
      const int64_t oat = __shfl_xor_sync(mask, at, o);
      if (ob > best || (ob == best && oat < at)) {
        best = ob;
        val = ov;
        at = oat;
      }
    }
    if (val < 0)
      for (int64_t i = lane; i < n; i += W) col[i] = -col[i];
  }
}

/* The whole post-processing of a solved eigh batch in one pass over the
 * vectors: a failed element (info != 0) becomes NaN; otherwise each column's
 * sign is fixed and any NaN/Inf in the column or its
 * eigenvalue flags the element (flags[b] |= 2). W lanes per column; with V
 * NULL (values only) the same on w alone. */
template <typename T, int W>
__global__ void __launch_bounds__(kLinearThreads)
    finish_eigh_kernel(T *__restrict__ V, T *__restrict__ w, int64_t n, int64_t ncols,
                       const int *__restrict__ info, int *__restrict__ flags) {
  const int lane = threadIdx.x % W;
  const unsigned mask = W == 32 ? kFullMask : ((1u << W) - 1u) << (threadIdx.x % 32 / W * W);
  const int64_t groups = (int64_t)gridDim.x * blockDim.x / W;
  for (int64_t c = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / W; c < ncols; c += groups) {
    const int64_t b = c / n;
    T *col = V ? V + c * n : nullptr;
    if (info[b] != 0) {
      if (col)
        for (int64_t i = lane; i < n; i += W) col[i] = quiet_nan<T>();
      if (lane == 0) {
        w[c] = quiet_nan<T>();
        atomicOr(flags + b, 2);
      }
      continue;
    }
    bool bad = lane == 0 && !finite(w[c]);
    T best = -1, val = 0;
    int64_t at = INT64_MAX;
    for (int64_t i = lane; col && i < n; i += W) {
      const T x = col[i], m = fabs(x);
      bad |= !finite(x);
      if (m > best) {
        best = m;
        val = x;
        at = i;
      }
    }
    for (int o = W / 2; o > 0; o >>= 1) {
      const T ob = __shfl_xor_sync(mask, best, o), ov = __shfl_xor_sync(mask, val, o);
      const int64_t oat = __shfl_xor_sync(mask, at, o);
      if (ob > best || (ob == best && oat < at)) {
        best = ob;
        val = ov;
        at = oat;
      }
    }
    if (__any_sync(mask, bad)) {
      if (lane == 0) atomicOr(flags + b, 2);
    } else if (col && val < 0) {
      for (int64_t i = lane; i < n; i += W) col[i] = -col[i];
    }
  }
}

template <typename T>
void launch_finish_eigh(void *V, void *w, int64_t n, int64_t ncols, const int *info, int *flags,
                        cudaStream_t stream) {
  T *v = static_cast<T *>(V), *ww = static_cast<T *>(w);
  if (n <= 8)
    finish_eigh_kernel<T, 8>
        <<<linear_blocks(ncols * 8), kLinearThreads, 0, stream>>>(v, ww, n, ncols, info, flags);
  else if (n <= 16)
    finish_eigh_kernel<T, 16>
        <<<linear_blocks(ncols * 16), kLinearThreads, 0, stream>>>(v, ww, n, ncols, info, flags);
  else
    finish_eigh_kernel<T, 32>
        <<<linear_blocks(ncols * 32), kLinearThreads, 0, stream>>>(v, ww, n, ncols, info, flags);
}

/* Ascending values with their columns, a block per matrix: a parallel
 * check, then (rarely: cuSOLVER's batched solver may leave two values of a
 * near-tie one ulp out of order) bubble passes whose adjacent swaps all
 * threads apply to the columns. NaN compares false and stays put. */
template <typename T>
__global__ void sort_eigenpairs_kernel(T *V, T *w, int64_t n, int64_t batch) {
  __shared__ int64_t at;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    T *wb = w + b * n, *vb = V ? V + b * n * n : nullptr;
    int inverted = 0;
    for (int64_t i = 1 + threadIdx.x; i < n; i += blockDim.x) inverted |= wb[i - 1] > wb[i];
    if (!__syncthreads_or(inverted)) continue;
    for (bool again = true; again;) {
      again = false;
      for (int64_t i = 1; i < n;) {
        if (threadIdx.x == 0) {
          int64_t j = i;
          while (j < n && !(wb[j - 1] > wb[j])) j++;
          at = j;
        }
        __syncthreads();
        const int64_t j = at;
        __syncthreads(); /* every thread has read `at` before thread 0 writes it again */
        if (j >= n) break;
        if (threadIdx.x == 0) {
          const T t = wb[j - 1];
          wb[j - 1] = wb[j];
          wb[j] = t;
        }
        for (int64_t k = threadIdx.x; vb && k < n; k += blockDim.x) {
          const T t = vb[k + (j - 1) * n];
          vb[k + (j - 1) * n] = vb[k + j * n];
          vb[k + j * n] = t;
        }
        __syncthreads();
        again = true;
        i = j + 1;
      }
    }
  }
}

template <typename T>
void launch_fix_signs(void *V, int64_t n, int64_t ncols, cudaStream_t stream) {
  T *v = static_cast<T *>(V);
  if (n <= 8)
    fix_signs_kernel<T, 8><<<linear_blocks(ncols * 8), kLinearThreads, 0, stream>>>(v, n, ncols);
  else if (n <= 16)
    fix_signs_kernel<T, 16><<<linear_blocks(ncols * 16), kLinearThreads, 0, stream>>>(v, n, ncols);
  else
    fix_signs_kernel<T, 32><<<linear_blocks(ncols * 32), kLinearThreads, 0, stream>>>(v, n, ncols);
}

} /* namespace */
} /* namespace gstat_cu */

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_gather(const void *src, int src_dtype, int64_t batch, int64_t rows,
                                       int64_t cols, int64_t bs, int64_t rs, int64_t cs, void *dst,
                                       int dst_dtype, cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, rows, cols, &total) || !compute_dtype(dst_dtype) ||
      !valid_dtype(src_dtype))
    return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!src || !dst) return cudaErrorInvalidValue;
  with_dtype(src_dtype, [&](auto s) {
    with_dtype(dst_dtype, [&](auto d) {
      launch_copy<true, decltype(s), decltype(d)>(src, dst, batch, rows, cols, total, bs, rs, cs,
                                                  stream);
    });
  });
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_scatter(const void *src, int src_dtype, int64_t batch, int64_t rows,
                                        int64_t cols, void *dst, int dst_dtype, int64_t bs,
                                        int64_t rs, int64_t cs, cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, rows, cols, &total) || !compute_dtype(src_dtype) ||
      !valid_dtype(dst_dtype))
    return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!src || !dst) return cudaErrorInvalidValue;
  with_dtype(src_dtype, [&](auto s) {
    with_dtype(dst_dtype, [&](auto d) {
      launch_copy<false, decltype(s), decltype(d)>(src, dst, batch, rows, cols, total, bs, rs, cs,
                                                   stream);
    });
  });
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_find_nonfinite(int dtype, const void *A, int tri, int64_t batch,
                                               int64_t rows, int64_t cols, int64_t bs, int64_t rs,
                                               int64_t cs, unsigned long long *first,
                                               cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, rows, cols, &total) || !valid_dtype(dtype) || tri < 0 || tri > 4)
    return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!A || !first) return cudaErrorInvalidValue;
  const bool j_fastest = cols > 1 && rows > 1 && cs < rs;
  with_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    const S *a = static_cast<const S *>(A);
    if (fits_u32(total)) {
      const uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
      find_nonfinite_kernel<<<linear_blocks(total), kLinearThreads, 0, stream>>>(
          a, tri, r, c, Divider<uint32_t>(r), Divider<uint32_t>(c), (uint32_t)total, bs, rs, cs,
          j_fastest, first);
    } else {
      const uint64_t r = (uint64_t)rows, c = (uint64_t)cols;
      find_nonfinite_kernel<<<linear_blocks(total), kLinearThreads, 0, stream>>>(
          a, tri, r, c, Divider<uint64_t>(r), Divider<uint64_t>(c), (uint64_t)total, bs, rs, cs,
          j_fastest, first);
    }
  });
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_fix_sign_cols(int dtype, void *V, int64_t n, int64_t ncols,
                                              cudaStream_t stream) {
  int64_t total;
  if (!element_count(1, n, ncols, &total) || !compute_dtype(dtype)) return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!V) return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_fix_signs<float>(V, n, ncols, stream);
  else
    launch_fix_signs<double>(V, n, ncols, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_fix_signs(int dtype, void *V, int64_t n, int64_t batch,
                                          cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, n, n, &total)) return cudaErrorInvalidValue;
  return gstat_cu_fix_sign_cols(dtype, V, n, batch * n, stream);
}

extern "C" cudaError_t gstat_cu_sort_eigenpairs(int dtype, void *V, void *w, int64_t n,
                                                int64_t batch, cudaStream_t stream) {
  if (!compute_dtype(dtype) || n < 0 || batch < 0 || !w) return cudaErrorInvalidValue;
  if (n < 2 || batch == 0) return cudaSuccess;
  const unsigned blocks = (unsigned)(batch < 65535 ? batch : 65535);
  if (dtype == kF32)
    sort_eigenpairs_kernel<float>
        <<<blocks, 128, 0, stream>>>(static_cast<float *>(V), static_cast<float *>(w), n, batch);
  else
    sort_eigenpairs_kernel<double>
        <<<blocks, 128, 0, stream>>>(static_cast<double *>(V), static_cast<double *>(w), n, batch);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_finish_eigh(int dtype, void *V, void *w, int64_t n, int64_t batch,
                                            const int *info, int *flags, cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, n, 1, &total) || !compute_dtype(dtype)) return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!w || !info || !flags) return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_finish_eigh<float>(V, w, n, total, info, flags, stream);
  else
    launch_finish_eigh<double>(V, w, n, total, info, flags, stream);
  return cudaGetLastError();
}

/* ---- non-finite input of the no-synchronization eigh ----------------------------------- */

namespace gstat_cu {
namespace {

constexpr int kFlagThreads = 128;

/* A block per element b of the dense column-major batch A: a NaN/Inf in its
 * read triangle sets flags[b] = 2 and makes its values (and vectors) NaN.
 * The Jacobi kernels need not carry such an input to their outputs, and
 * gstat_eigh_async has no finiteness check before them. */
template <typename S>
__global__ void __launch_bounds__(kFlagThreads)
    flag_nonfinite_kernel(const S *__restrict__ A, bool upper, int n, int64_t batch,
                          S *__restrict__ W, S *__restrict__ V, int *__restrict__ flags) {
  const int nn = n * n;
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    bool bad = false;
    for (int e = threadIdx.x; e < nn; e += blockDim.x) {
      const int j = e / n, i = e - j * n;
      bad = bad || ((upper ? i <= j : i >= j) && !finite(A[b * nn + e]));
    }
    if (__syncthreads_or(bad)) {
      const S nan = quiet_nan<S>();
      for (int e = threadIdx.x; e < nn; e += blockDim.x) {
        if (V) V[b * nn + e] = nan;
        if (e < n) W[b * n + e] = nan;
      }
      if (threadIdx.x == 0) flags[b] = 2;
    }
  }
}

} /* namespace */
} /* namespace gstat_cu */

extern "C" cudaError_t gstat_cu_flag_nonfinite(int dtype, const void *A, int upper, int64_t n,
                                               int64_t batch, void *W, void *V, int *flags,
                                               cudaStream_t stream) {
  int64_t total;
  if (!element_count(batch, n, n, &total) || !valid_dtype(dtype) || n > 4096)
    return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  if (!A || !W || !flags) return cudaErrorInvalidValue;
  const unsigned blocks = (unsigned)(batch < kMaxLinearBlocks ? batch : kMaxLinearBlocks);
  with_dtype(dtype, [&](auto tag) {
    using S = decltype(tag);
    flag_nonfinite_kernel<S>
        <<<blocks, kFlagThreads, 0, stream>>>(static_cast<const S *>(A), upper != 0, (int)n, batch,
                                              static_cast<S *>(W), static_cast<S *>(V), flags);
  });
  return cudaGetLastError();
}
