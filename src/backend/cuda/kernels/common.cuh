/* Shared device helpers of src/backend/cuda/kernels (internal to these .cu files). */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_COMMON_CUH
#define GSTAT_BACKEND_CUDA_KERNELS_COMMON_CUH

#include <cfloat>
#include <cstdint>

#include <cuda_runtime.h>

#include "kernels.h"

namespace gstat_cu {

enum { kF32 = 1, kF64 = 2, kBF16 = 3 };
constexpr unsigned kFullMask = 0xffffffffu;

/* bfloat16 as stored by the caller; a distinct type so that overloads pick
 * the right conversion. */
struct bf16 {
  uint16_t bits;
};

/* ---- conversions (the same rules as src/core/matrix.c) ---------------------- */

__device__ __forceinline__ float widen(float x) {
  return x;
}
__device__ __forceinline__ double widen(double x) {
  return x;
}
__device__ __forceinline__ float widen(bf16 x) {
  return __uint_as_float((uint32_t)x.bits << 16);
}

__device__ __forceinline__ uint16_t f32_to_bf16_bits(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  return (uint16_t)(u >> 16);
}

__device__ __forceinline__ void put(float *p, float v) {
  *p = v;
}
__device__ __forceinline__ void put(float *p, double v) {
  *p = (float)v;
}
__device__ __forceinline__ void put(double *p, float v) {
  *p = (double)v;
}
__device__ __forceinline__ void put(double *p, double v) {
  *p = v;
}
__device__ __forceinline__ void put(bf16 *p, float v) {
  p->bits = f32_to_bf16_bits(v);
}
/* float64 -> bfloat16 through float32, as the CPU backend does */
__device__ __forceinline__ void put(bf16 *p, double v) {
  put(p, (float)v);
}

__device__ __forceinline__ bool finite(float x) {
  return isfinite(x);
}
__device__ __forceinline__ bool finite(double x) {
  return isfinite(x);
}
__device__ __forceinline__ bool finite(bf16 x) {
  return (x.bits & 0x7f80u) != 0x7f80u;
}

template <typename T>
__device__ __forceinline__ T quiet_nan();
template <>
__device__ __forceinline__ float quiet_nan<float>() {
  return __uint_as_float(0x7fc00000u);
}
template <>
__device__ __forceinline__ double quiet_nan<double>() {
  return __longlong_as_double(0x7ff8000000000000ll);
}
template <>
__device__ __forceinline__ bf16 quiet_nan<bf16>() {
  return bf16{0x7fc0u};
}

/* ---- launch geometry ----------------------------------------------------------- */

constexpr int kLinearThreads = 256;
/* Grid-stride kernels launch at most this many blocks (plenty to fill an H200). */
constexpr int64_t kMaxLinearBlocks = 1 << 16;

inline unsigned linear_blocks(int64_t total) {
  int64_t blocks = (total + kLinearThreads - 1) / kLinearThreads;
  return (unsigned)(blocks < kMaxLinearBlocks ? blocks : kMaxLinearBlocks);
}

/* Linear indices (plus a grid stride) fit 32 bits: cheaper index division. */
inline bool fits_u32(int64_t total) {
  return total <= (int64_t)UINT32_MAX - kMaxLinearBlocks * kLinearThreads;
}

/* n / d for a divisor d >= 1 fixed over a launch, made on the host. 32 bits:
 * a multiply-high, an add and a shift instead of the ~20 instructions of a
 * division, which made the element-wise kernels compute-bound (Granlund &
 * Montgomery's round-up method: s = ceil(log2 d), m = 2^32 (2^s - d) / d + 1;
 * exact for every 32-bit n). 64 bits: the plain division. */
template <typename U>
struct Divider;
template <>
struct Divider<uint32_t> {
  uint32_t m = 1, s = 0;
  explicit Divider(uint32_t d) {
    while ((uint64_t)1 << s < d) ++s;
    m = (uint32_t)(((uint64_t)1 << 32) * (((uint64_t)1 << s) - d) / d + 1);
  }
  __device__ uint32_t operator()(uint32_t n) const {
    return (uint32_t)(((uint64_t)__umulhi(n, m) + n) >> s);
  }
};
template <>
struct Divider<uint64_t> {
  uint64_t d;
  explicit Divider(uint64_t divisor) : d(divisor) {}
  __device__ uint64_t operator()(uint64_t n) const {
    return n / d;
  }
};

/* ---- block reflectors --------------------------------------------------------- */

/* Row j of the upper triangular T (r x r, ld ldt) of a forward block
 * reflector I - V T V^T (LAPACK's dlarft): T(j,j) = tau_j, T(j,i) = -tau_i
 * sum_{l=j}^{i-1} T(j,l) G(l,i), with G = V^T V (ld ldg; its strict upper
 * triangle read). Row j depends on row j alone: a thread per row, no
 * barrier. */
__device__ inline void larft_row(const double *g, int ldg, const double *tau, double *t, int ldt,
                                 int r, int j) {
  for (int i = 0; i < j; i++) t[j + i * ldt] = 0.0;
  t[j + j * ldt] = tau[j];
  for (int i = j + 1; i < r; i++) {
    double s = 0.0;
    for (int l = j; l < i; l++) s += t[j + l * ldt] * g[l + i * ldg];
    t[j + i * ldt] = -tau[i] * s;
  }
}

/* The sum of every thread's v in a block of N threads by a fixed tree (the
 * same sum every call), through part (N doubles of shared memory); every
 * thread gets it. */
template <int N>
__device__ __forceinline__ double block_tree_sum(double v, double *part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = N / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  return part[0];
}

inline bool valid_dtype(int d) {
  return d == kF32 || d == kF64 || d == kBF16;
}
inline bool compute_dtype(int d) {
  return d == kF32 || d == kF64;
}

} /* namespace gstat_cu */

#endif /* GSTAT_BACKEND_CUDA_KERNELS_COMMON_CUH */
