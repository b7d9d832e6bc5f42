/*
 * Batched in-place Cholesky (lower) for n <= 64, and the two kernels of one
 * step of the blocked factorization of larger n (chol_cuda.c): a diagonal
 * block of at most GSTAT_CU_CHOL_BLOCK columns and the rows below it.
 *
 * A group of N lanes (N = 4 .. 64, the next power of two >= n) per matrix,
 * lane i holds row i in registers; right-looking, one step per column j:
 * lanes publish their a_ij to a shared column buffer (double-buffered, so one
 * barrier per step), every lane derives l_kj = a_kj / l_jj from it and
 * updates its row. N <= 32: 32/N groups per warp, the barrier a __syncwarp;
 * N = 64: one matrix per 64-thread block, the barrier a __syncthreads, the
 * column loop rolled (chol_rolled_kernel; a shared-memory version of that
 * block, one entry per load/store, was slower than potrfBatched: registers
 * it is). Per matrix: n steps, ~n^3/6 FMAs
 * spread over n lanes, n barriers; a batch of 1024 x 32 takes about the time
 * to move its data (bench/README.md, "Measurements moved from code
 * comments"). The update order per entry (k ascending) and the scaling by
 * 1/l_jj are the CPU's (chol_small.c).
 *
 * The first non-positive (or NaN) pivot sets info = j + 1 and the whole
 * element is written as NaN (what the caller does with failed elements), so
 * no separate fill pass is needed.
 */
#include <climits>
#include <cstdlib>

#include "common.cuh"

namespace gstat_cu {
namespace {

constexpr int kWarpsPerBlock = 4;

/* Threads per block and matrices per block for group size N. */
template <int N>
struct CholShape {
  static constexpr int kThreads = N <= 32 ? 32 * kWarpsPerBlock : N;
  static constexpr int kGroups = kThreads / N;
};

template <int N>
__device__ __forceinline__ void group_barrier() {
  if constexpr (N <= 32)
    __syncwarp();
  else
    __syncthreads();
}

/* Row L of element Ab in registers: a[k] = A(L, k) for k <= L < n, zeros
 * elsewhere; for a fixed k the group reads a contiguous column: coalesced. */
template <typename T, int N>
__device__ __forceinline__ void load_row(const T *Ab, int n, int lda, int L, bool live, T (&a)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) a[k] = live && k < n && k <= L ? Ab[L + (int64_t)k * lda] : T(0);
}

/* Lane 0 of element b records its verdict (see chol_regs_kernel). */
__device__ __forceinline__ void record_info(int64_t b, int64_t batch, int L, int fail,
                                            int first_col, int *info, unsigned *any) {
  if (b >= batch || L != 0) return;
  if (first_col < 0) {
    info[b] = fail;
    if (fail && any) *any = 1;
  } else if (fail && info[b] == 0) {
    info[b] = first_col + fail;
  }
}

/* Element b is the n x n matrix at src + b * stride, leading dimension lda,
 * its factor written at dst + b * stride (dst may be src: every lane of a
 * group has read its row before the group's first barrier, and writes
 * after the last). first_col < 0: a whole matrix, info[b] = fail.
 * Otherwise the diagonal block at column first_col of a blocked
 * factorization: info[b] becomes first_col + fail on the first failure and
 * is left alone otherwise. guard (NULL: none): a deferred finiteness scan's
 * verdict, read before anything is written; unless it is ULLONG_MAX the
 * kernel writes nothing, so a non-finite input leaves the output as it was.
 * any (NULL: none): set to 1 when an element fails, so that no reduction
 * over info need follow. */
template <typename T, int N>
__global__ void __launch_bounds__(CholShape<N>::kThreads)
    chol_regs_kernel(const T *src, T *dst, int n, int lda, int64_t stride, int64_t batch,
                     int *__restrict__ info, int first_col, const unsigned long long *guard,
                     unsigned *any) {
  static_assert(N <= 32, "n 33-64: chol_rolled_kernel");
  if (guard && *guard != ULLONG_MAX) return; /* the same for every thread */
  constexpr int G = CholShape<N>::kGroups;
  __shared__ T column[2][G][N];
  const int g = threadIdx.x / N, L = threadIdx.x % N;
  const int64_t b = (int64_t)blockIdx.x * G + g;
  /* whole warp idle (no barrier spans warps here) */
  if ((int64_t)blockIdx.x * G + (threadIdx.x / 32) * (32 / N) >= batch) return;
  const bool live = b < batch && L < n;
  const T *Ab = src + b * stride;
  T *Fb = dst + b * stride;

  T a[N];
  load_row<T, N>(Ab, n, lda, L, live, a);

  int fail = 0; /* the same in every lane of the group: it comes from col[j] */
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (j >= n) break; /* n is the same for every lane */
    T *col = column[j & 1][g];
    col[L] = a[j];
    group_barrier<N>();
    const T d = col[j];
    if (!(d > 0) && fail == 0) fail = j + 1;
    const T s = sqrt(d), r = 1 / s;
    const T l = a[j] * r; /* l_Lj for L > j */
#pragma unroll
    for (int k = j + 1; k < N; ++k)
      if (k < n && k <= L) a[k] -= l * (col[k] * r);
    a[j] = L == j ? s : L > j ? l : T(0);
  }

  const T nan = quiet_nan<T>();
#pragma unroll
  for (int j = 0; j < N; ++j) /* a[j > L] == 0 zeroes the strict upper triangle */
    if (live && j < n) Fb[L + (int64_t)j * lda] = fail ? nan : a[j];
  record_info(b, batch, L, fail, first_col, info, any);
}

/* n 33-64 (N = 64): the same factorization with the column loop rolled. A
 * fully unrolled 64-column body overflows the instruction cache (ncu:
 * instruction-fetch stalls in float64); rolled, it is faster there
 * (bench/README.md, "The forty-second session's GPU calls"). Lane L keeps A(L, j +
 * k) in a[k] at column j and shifts the window by one after each step; each
 * column of the factor is stored as soon as it is final (row L only, so in
 * place is safe), and a failed element is overwritten with NaN at the end.
 * Same arithmetic, same order as chol_regs_kernel. */
template <typename T, int N>
__global__ void __launch_bounds__(CholShape<N>::kThreads)
    chol_rolled_kernel(const T *src, T *dst, int n, int lda, int64_t stride, int64_t batch,
                       int *__restrict__ info, int first_col, const unsigned long long *guard,
                       unsigned *any) {
  static_assert(N > 32, "one group a block: its barrier is the block's");
  if (guard && *guard != ULLONG_MAX) return;
  __shared__ T column[2][2 * N]; /* read up to index j + N - 1 < 2N */
  const int L = threadIdx.x;
  const int64_t b = blockIdx.x;
  const bool live = b < batch && L < n;
  T *Fb = dst + b * stride;
  T a[N];
  load_row<T, N>(src + b * stride, n, lda, L, live, a);
  int fail = 0;
  for (int j = 0; j < n; ++j) {
    T *col = column[j & 1];
    col[L] = a[0];
    group_barrier<N>();
    const T d = col[j];
    if (!(d > 0) && fail == 0) fail = j + 1;
    const T s = sqrt(d), r = 1 / s;
    const T l = a[0] * r;
    if (live) Fb[L + (int64_t)j * lda] = L == j ? s : L > j ? l : T(0);
#pragma unroll
    for (int k = 1; k < N; ++k)
      if (j + k < n && j + k <= L) a[k] -= l * (col[j + k] * r);
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = k + 1 < N ? a[k + 1] : T(0);
  }
  if (fail && live)
    for (int j = 0; j < n; ++j) Fb[L + (int64_t)j * lda] = quiet_nan<T>();
  record_info(b, batch, L, fail, first_col, info, any);
}

template <typename T, int N>
void launch_regs(const T *A, T *F, int n, int lda, int64_t stride, int64_t batch, int *info,
                 int first_col, const unsigned long long *guard, unsigned *any,
                 cudaStream_t stream) {
  constexpr int64_t per_block = CholShape<N>::kGroups;
  constexpr int64_t max_chunk = INT32_MAX * per_block;
  for (int64_t b = 0; b < batch; b += max_chunk) {
    const int64_t count = batch - b < max_chunk ? batch - b : max_chunk;
    const unsigned blocks = (unsigned)((count + per_block - 1) / per_block);
    if constexpr (N > 32)
      chol_rolled_kernel<T, N><<<blocks, CholShape<N>::kThreads, 0, stream>>>(
          A + b * stride, F + b * stride, n, lda, stride, count, info + b, first_col, guard, any);
    else
      chol_regs_kernel<T, N><<<blocks, CholShape<N>::kThreads, 0, stream>>>(
          A + b * stride, F + b * stride, n, lda, stride, count, info + b, first_col, guard, any);
  }
}

template <typename T>
void launch_chol(const void *A_, void *F_, int n, int lda, int64_t stride, int64_t batch, int *info,
                 int first_col, const unsigned long long *guard, unsigned *any,
                 cudaStream_t stream) {
  const T *A = static_cast<const T *>(A_);
  T *F = static_cast<T *>(F_);
  if (n <= 4)
    launch_regs<T, 4>(A, F, n, lda, stride, batch, info, first_col, guard, any, stream);
  else if (n <= 8)
    launch_regs<T, 8>(A, F, n, lda, stride, batch, info, first_col, guard, any, stream);
  else if (n <= 16)
    launch_regs<T, 16>(A, F, n, lda, stride, batch, info, first_col, guard, any, stream);
  else if (n <= 32)
    launch_regs<T, 32>(A, F, n, lda, stride, batch, info, first_col, guard, any, stream);
  else
    launch_regs<T, 64>(A, F, n, lda, stride, batch, info, first_col, guard, any, stream);
}

/* Rows below a factored diagonal block L11 (kb x kb, kb <= KB): X L11^T =
 * A21 in place, one thread per row (the rows are independent forward
 * substitutions, dividing by the pivots as LAPACK's trsm does), L11 in
 * shared memory. Neighbouring threads own neighbouring rows, so every
 * column read and write is coalesced. Block (x, y): rows x * blockDim.x ..,
 * elements y, y + gridDim.y, ... */
template <typename T, int KB>
__global__ void __launch_bounds__(128)
    panel_solve_kernel(T *__restrict__ A, int kb, int m, int lda, int64_t stride, int64_t batch) {
  __shared__ T Ls[KB][KB + 1]; /* Ls[j][k] = L11(j, k), k <= j */
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T *D = A + b * stride; /* the diagonal block's first entry */
    __syncthreads();       /* Ls of the previous element is read */
    for (int e = threadIdx.x; e < kb * kb; e += blockDim.x) {
      const int j = e % kb, k = e / kb;
      if (k <= j) Ls[j][k] = D[j + (int64_t)k * lda];
    }
    __syncthreads();
    if (r >= m) continue;
    T *row = D + kb + r; /* entry (r, k) of A21 at row[k * lda] */
    T x[KB];
#pragma unroll
    for (int k = 0; k < KB; ++k) x[k] = k < kb ? row[(int64_t)k * lda] : T(0);
#pragma unroll
    for (int j = 0; j < KB; ++j) {
      if (j >= kb) break; /* the same in every thread */
      T sum = x[j];
#pragma unroll
      for (int k = 0; k < j; ++k) sum -= x[k] * Ls[j][k];
      x[j] = sum / Ls[j][j];
    }
#pragma unroll
    for (int k = 0; k < KB; ++k)
      if (k < kb) row[(int64_t)k * lda] = x[k];
  }
}

/* One step of the blocked factorization: the diagonal block, then the rows below it. */
template <typename T>
void launch_block(void *A, int kb, int m, int lda, int64_t stride, int64_t batch, int first_col,
                  int *info, cudaStream_t stream) {
  launch_chol<T>(A, A, kb, lda, stride, batch, info, first_col, nullptr, nullptr, stream);
  if (m == 0) return;
  const dim3 grid((unsigned)((m + 127) / 128), (unsigned)(batch < 65535 ? batch : 65535));
  panel_solve_kernel<T, GSTAT_CU_CHOL_BLOCK>
      <<<grid, 128, 0, stream>>>(static_cast<T *>(A), kb, m, lda, stride, batch);
}

} /* namespace */
} /* namespace gstat_cu */

extern "C" cudaError_t gstat_cu_cholesky_small_to(int dtype, const void *A, void *F, int64_t n,
                                                  int64_t batch, int *info,
                                                  const unsigned long long *guard, unsigned *any,
                                                  cudaStream_t stream) {
  using namespace gstat_cu;
  if (!compute_dtype(dtype) || n < 0 || n > GSTAT_CU_CHOL_MAX_N || batch < 0)
    return cudaErrorInvalidValue;
  if (n == 0 || batch == 0) return cudaSuccess;
  if (!A || !F || !info) return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_chol<float>(A, F, (int)n, (int)n, n * n, batch, info, -1, guard, any, stream);
  else
    launch_chol<double>(A, F, (int)n, (int)n, n * n, batch, info, -1, guard, any, stream);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_cholesky_small(int dtype, void *A, int64_t n, int64_t batch,
                                               int *info, cudaStream_t stream) {
  return gstat_cu_cholesky_small_to(dtype, A, A, n, batch, info, nullptr, nullptr, stream);
}

extern "C" cudaError_t gstat_cu_cholesky_block(int dtype, void *A, int64_t kb, int64_t m,
                                               int64_t lda, int64_t stride, int64_t batch,
                                               int64_t first_col, int *info, cudaStream_t stream) {
  using namespace gstat_cu;
  if (!compute_dtype(dtype) || kb < 1 || kb > GSTAT_CU_CHOL_BLOCK || m < 0 || lda < kb + m ||
      lda > INT32_MAX || stride < 0 || batch < 0 || first_col < 0 || first_col > INT32_MAX - kb)
    return cudaErrorInvalidValue;
  if (batch == 0) return cudaSuccess;
  if (!A || !info) return cudaErrorInvalidValue;
  if (dtype == kF32)
    launch_block<float>(A, (int)kb, (int)m, (int)lda, stride, batch, (int)first_col, info, stream);
  else
    launch_block<double>(A, (int)kb, (int)m, (int)lda, stride, batch, (int)first_col, info, stream);
  return cudaGetLastError();
}
