/*
 * The backward of eigh for small orders in one kernel (gstat_eigh_backward):
 *   gA = V (diag(gw) + F o (V^T gV - gV^T V)) V^T,
 *   F_ij = 1 / (2 (w_j - w_i)), 0 where |w_j - w_i| <= n eps max|w| (a
 *   degenerate block, and the diagonal), or with broadening b > 0
 *   (w_j - w_i) / (2 ((w_j - w_i)^2 + b)) outside the blocks:
 * torch.linalg's symmetric gradient, as gstat.torch writes it in torch
 * operations. Launched from Python that is a dozen small kernels for a batch
 * of 32 x 32 matrices, each bound by its launch; here a block per matrix
 * keeps V, gV and the products in shared memory.
 */
#include <cfloat>

#include "common.cuh"
#include "kernels.h"

namespace gstat_cu {
namespace {

constexpr int kBwdThreads = 256;
constexpr int kBwdMaxN = 32;
constexpr int64_t kBwdMaxBlocks = 65535;

template <typename T>
__device__ __forceinline__ T eps_of();
template <>
__device__ __forceinline__ float eps_of<float>() {
  return FLT_EPSILON;
}
template <>
__device__ __forceinline__ double eps_of<double>() {
  return DBL_EPSILON;
}

/* A strided batch of matrices (element b, row i, column j). */
template <typename T>
struct Strided {
  T *p;
  int64_t bs, rs, cs;
  __device__ T &at(int64_t b, int i, int j) const {
    return p[b * bs + i * rs + j * cs];
  }
};

/* m = a^T b (transpose_a) or a b, or a b^T (transpose_b), n x n in shared memory. */
template <typename T>
__device__ void product(int n, const T (*a)[kBwdMaxN + 1], const T (*b)[kBwdMaxN + 1],
                        T (*m)[kBwdMaxN + 1], bool transpose_a, bool transpose_b) {
  for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
    const int i = e % n, j = e / n;
    T acc = 0;
    for (int k = 0; k < n; ++k)
      acc += (transpose_a ? a[k][i] : a[i][k]) * (transpose_b ? b[j][k] : b[k][j]);
    m[i][j] = acc;
  }
}

template <typename T>
__global__ void __launch_bounds__(kBwdThreads)
    eigh_backward_kernel(int n, int64_t batch, Strided<const T> w, Strided<const T> gw, bool has_gw,
                         Strided<const T> V, Strided<const T> gV, double broadening,
                         Strided<T> out) {
  __shared__ T sv[kBwdMaxN][kBwdMaxN + 1], sg[kBwdMaxN][kBwdMaxN + 1], sm[kBwdMaxN][kBwdMaxN + 1];
  __shared__ T sw[kBwdMaxN];
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
      const int i = e % n, j = e / n;
      sv[i][j] = V.at(b, i, j);
      sg[i][j] = gV.at(b, i, j);
    }
    if (threadIdx.x < n) sw[threadIdx.x] = w.at(b, threadIdx.x, 0);
    __syncthreads();
    T amax = 0;
    for (int k = 0; k < n; ++k) amax = fmax(amax, fabs(sw[k]));
    const T tol = amax * (T(n) * eps_of<T>());
    product<T>(n, sv, sg, sm, true, false); /* V^T gV */
    __syncthreads();
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) { /* the middle factor, into sg */
      const int i = e % n, j = e / n;
      const T gap = sw[j] - sw[i];
      T f = 0;
      if (fabs(gap) > tol)
        f = broadening > 0 ? gap / (2 * (gap * gap + T(broadening))) : 1 / (2 * gap);
      T val = (sm[i][j] - sm[j][i]) * f;
      if (i == j) val = has_gw ? gw.at(b, i, 0) : T(0);
      sg[i][j] = val;
    }
    __syncthreads();
    product<T>(n, sv, sg, sm, false, false); /* V inner */
    __syncthreads();
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) { /* (V inner) V^T, rows of gA */
      const int i = e / n, j = e % n;
      T acc = 0;
      for (int k = 0; k < n; ++k) acc += sm[i][k] * sv[j][k];
      out.at(b, i, j) = acc;
    }
    __syncthreads(); /* the next element overwrites the shared arrays */
  }
}

template <typename T>
void launch(const gstat_cu_bwd_args *a, cudaStream_t stream) {
  const Strided<const T> w{static_cast<const T *>(a->w), a->w_bs, a->w_s, 0},
      gw{static_cast<const T *>(a->gw), a->gw_bs, a->gw_s, 0},
      V{static_cast<const T *>(a->v), a->v_bs, a->v_rs, a->v_cs},
      gV{static_cast<const T *>(a->gv), a->gv_bs, a->gv_rs, a->gv_cs};
  const Strided<T> out{static_cast<T *>(a->out), a->out_bs, a->out_rs, a->out_cs};
  const unsigned blocks = (unsigned)(a->batch < kBwdMaxBlocks ? a->batch : kBwdMaxBlocks);
  eigh_backward_kernel<T><<<blocks, kBwdThreads, 0, stream>>>(
      (int)a->n, a->batch, w, gw, a->gw != nullptr, V, gV, a->broadening, out);
}

} /* namespace */
} /* namespace gstat_cu */

extern "C" cudaError_t gstat_cu_eigh_backward(const gstat_cu_bwd_args *a, cudaStream_t stream) {
  if (!a || a->n < 1 || a->n > gstat_cu::kBwdMaxN || a->batch < 0 || !(a->broadening >= 0) ||
      (a->dtype != 1 && a->dtype != 2))
    return cudaErrorInvalidValue;
  if (a->batch == 0) return cudaSuccess;
  if (!a->w || !a->v || !a->gv || !a->out) return cudaErrorInvalidValue;
  if (a->dtype == 1)
    gstat_cu::launch<float>(a, stream);
  else
    gstat_cu::launch<double>(a, stream);
  return cudaGetLastError();
}
