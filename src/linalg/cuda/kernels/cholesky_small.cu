/*
 * Batched in-place Cholesky (lower) for n <= 64.
 *
 * n <= 32: a group of N lanes (N = 4 .. 32, 32/N groups per warp) per matrix,
 * lane i holds row i in registers; right-looking, one step per column j:
 * lanes publish their a_ij to a shared column buffer (double-buffered, so one
 * __syncwarp per step), every lane derives l_kj = a_kj / l_jj from it and
 * updates its row. Per matrix: n steps, ~n^3/6 FMAs spread over n lanes, n
 * warp syncs. 1024 x 32 measured 0.012 ms (float) / 0.014 ms (double) on an
 * H200, about the time to move its 8 MB (16 MB). The update order per entry
 * (k ascending) and the scaling by 1/l_jj are the CPU's (chol_small.c).
 *
 * 32 < n <= 64: one 64-thread block per matrix in shared memory, the same
 * right-looking steps with one __syncthreads each.
 *
 * The first non-positive (or NaN) pivot sets info = j + 1; the factorization
 * carries on with NaNs, as the caller overwrites failed elements anyway.
 */
#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kWarpsPerBlock = 4;

template <typename T, int N>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    chol_regs_kernel(T *__restrict__ A, int n, int64_t batch, int *__restrict__ info) {
  constexpr int G = 32 / N;
  __shared__ T column[kWarpsPerBlock][2][G][N];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / N, L = lane % N;
  const int64_t b0 = ((int64_t)blockIdx.x * kWarpsPerBlock + warp) * G;
  if (b0 >= batch) return; /* whole warp idle */
  const int64_t b = b0 + g;
  const bool live = b < batch && L < n;
  T *Ab = A + b * n * n;

  /* row L; for a fixed j the group reads a contiguous column: coalesced */
  T a[N];
#pragma unroll
  for (int j = 0; j < N; ++j) a[j] = live && j < n && j <= L ? Ab[L + (int64_t)j * n] : T(0);

  int fail = 0;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (j >= n) break; /* n is the same for every lane */
    T *col = column[warp][j & 1][g];
    col[L] = a[j];
    __syncwarp();
    const T d = col[j];
    if (!(d > 0) && fail == 0) fail = j + 1;
    const T s = sqrt(d), r = 1 / s;
    const T l = a[j] * r; /* l_Lj for L > j */
#pragma unroll
    for (int k = j + 1; k < N; ++k)
      if (k < n && k <= L) a[k] -= l * (col[k] * r);
    a[j] = L == j ? s : L > j ? l : T(0);
  }

#pragma unroll
  for (int j = 0; j < N; ++j) /* a[j > L] == 0 zeroes the strict upper triangle */
    if (live && j < n) Ab[L + (int64_t)j * n] = a[j];
  if (b < batch && L == 0) info[b] = fail;
}

constexpr int kBig = 64;
constexpr int kLd = kBig + 1; /* odd leading dimension: row accesses hit distinct banks */

template <typename T>
__global__ void __launch_bounds__(kBig) chol_shared_kernel(T *__restrict__ A, int n,
                                                           int *__restrict__ info) {
  __shared__ T S[kBig * kLd]; /* column-major */
  const int L = threadIdx.x;
  const int64_t b = blockIdx.x;
  T *Ab = A + b * n * n;
  if (L < n)
    for (int j = 0; j <= L; ++j) S[L + j * kLd] = Ab[L + (int64_t)j * n];

  int fail = 0;
  T pending = 0; /* l_L,j-1, written back once column j-1 is no longer read */
  for (int j = 0; j < n; ++j) {
    __syncthreads(); /* step j-1's updates are visible */
    if (j > 0 && L >= j - 1 && L < n) S[L + (j - 1) * kLd] = pending;
    const T d = S[j + j * kLd];
    if (!(d > 0) && fail == 0) fail = j + 1;
    const T s = sqrt(d), r = 1 / s;
    if (L > j && L < n) {
      const T l = S[L + j * kLd] * r;
      for (int k = j + 1; k <= L; ++k) S[L + k * kLd] -= l * (S[k + j * kLd] * r);
      pending = l;
    } else if (L == j) {
      pending = s;
    }
  }
  __syncthreads();
  if (L == n - 1) S[L + L * kLd] = pending; /* l_{n-1,n-1} */
  __syncthreads();
  if (L < n)
    for (int j = 0; j < n; ++j) Ab[L + (int64_t)j * n] = j <= L ? S[L + j * kLd] : T(0);
  if (L == 0) info[b] = fail;
}

template <typename T, int N>
void launch_regs(T *A, int n, int64_t batch, int *info, cudaStream_t stream) {
  constexpr int64_t per_block = kWarpsPerBlock * (32 / N);
  constexpr int64_t max_chunk = INT32_MAX * per_block;
  for (int64_t b = 0; b < batch; b += max_chunk) {
    const int64_t count = batch - b < max_chunk ? batch - b : max_chunk;
    chol_regs_kernel<T, N><<<(unsigned)((count + per_block - 1) / per_block),
                             32 * kWarpsPerBlock, 0, stream>>>(A + b * n * n, n, count, info + b);
  }
}

template <typename T> void launch_chol(void *A_, int n, int64_t batch, int *info, cudaStream_t stream) {
  T *A = static_cast<T *>(A_);
  if (n <= 4)
    launch_regs<T, 4>(A, n, batch, info, stream);
  else if (n <= 8)
    launch_regs<T, 8>(A, n, batch, info, stream);
  else if (n <= 16)
    launch_regs<T, 16>(A, n, batch, info, stream);
  else if (n <= 32)
    launch_regs<T, 32>(A, n, batch, info, stream);
  else
    for (int64_t b = 0; b < batch; b += INT32_MAX) {
      const int64_t count = batch - b < INT32_MAX ? batch - b : INT32_MAX;
      chol_shared_kernel<T><<<(unsigned)count, kBig, 0, stream>>>(A + b * n * n, n, info + b);
    }
}

} /* namespace */
} /* namespace gstat_cu */

extern "C" cudaError_t gstat_cu_cholesky_small(int dtype, void *A, int64_t n, int64_t batch,
                                               int *info, cudaStream_t stream) {
  using namespace gstat_cu;
  if (!compute_dtype(dtype) || n < 0 || n > GSTAT_CU_CHOL_MAX_N || batch < 0)
    return cudaErrorInvalidValue;
  if (n == 0 || batch == 0) return cudaSuccess;
  if (!A || !info) return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_chol<float>(A, (int)n, batch, info, stream);
  else
    launch_chol<double>(A, (int)n, batch, info, stream);
  return cudaGetLastError();
}
