/* Pieces shared by the Jacobi eigensolvers of this directory: the warp
 * kernel for n <= 32 (eigh_jacobi.cu), the pair-per-lane kernel for
 * 8 < n <= 16 in float compute (eigh_jacobi_pairs.cu) and the block kernel
 * for 32 < n <= 64 (eigh_jacobi_block.cu). Internal to these .cu files. */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_JACOBI_COMMON_CUH
#define GSTAT_BACKEND_CUDA_KERNELS_JACOBI_COMMON_CUH

#include "common.cuh"

namespace gstat_cu {

/* The block kernel for 32 < n <= 64: the arguments of gstat_cu_eigh_jacobi,
 * already checked by it. */
cudaError_t eigh_jacobi_block(int dtype, const void *A, int uplo, int n, int64_t batch, void *W,
                              void *V, int *info, int *flags, cudaStream_t stream);
/* Queue the pair-per-lane kernel (eigh_jacobi_pairs.cu) for 8 < n <= 16 in
 * float compute: S = float or bf16 storage; the arguments of
 * gstat_cu_eigh_jacobi, already checked by it. Launch errors are left for
 * cudaGetLastError. */
template <typename S>
void launch_jacobi_pairs(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                         int *flags, cudaStream_t stream);

namespace {

/* Sweeps before the warp and pair kernels give up on an element (info = 1):
 * graded double matrices need up to ~14. */
constexpr int kMaxSweeps = 20;

/* Per-precision constants and the reciprocal square root of the rotation
 * formula (its arguments are >= 4 eps^2 and at most ~16 n^2, never
 * subnormal): the hardware approximation refined by Newton steps, to about
 * an ulp, so that c^2 + s^2 = 1 to about an ulp. */
template <typename T>
struct Prec;
template <>
struct Prec<float> {
  static constexpr float eps = FLT_EPSILON;
  static constexpr bool scaled = false;    /* see Scale: float's range is too short */
  __device__ static float rsqrt(float x) { /* the approximation and one Newton step */
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r * fmaf(-0.5f * x * r, r, 1.5f);
  }
};
template <>
struct Prec<double> {
  static constexpr double eps = DBL_EPSILON;
  static constexpr bool scaled = true;
  /* The hardware approximation r (relative error d ~ 2^-22, on the high
   * word) and one second-order correction: with e = 1 - x r^2 ~ -2d,
   * 1/sqrt(x) = r (1 - e)^(-1/2) = r (1 + e/2 + 3e^2/8 + O(e^3)), so the
   * result is off by ~5e^3/16 ~ 2^-63 before rounding, i.e. to about an ulp.
   * Five operations four deep, against seven six deep for two Newton steps:
   * the rotation is the critical path of every step. Branch-free, unlike
   * ::rsqrt, whose special-case calls would split the unrolled steps. */
  __device__ static double rsqrt(double x) {
    double r;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    const double e = fma(-x * r, r, 1.0);
    return fma(r * e, fma(0.375, e, 0.5), r);
  }
};

/* The circle method on N positions: position 0 is fixed, the others form the
 * cycle at(0) -> at(1) -> ... -> at(N-2) -> at(0) = 2 -> 4 -> ... -> N-2 ->
 * N-1 -> N-3 -> ... -> 3 -> 1 -> 2, and each step the content of at(i) moves
 * to at(i+1). Pairing positions (2m, 2m+1) for N-1 steps meets every pair of
 * indices exactly once (checked at compile time below). */
template <int N>
struct Ring {
  static_assert(N >= 4 && N % 2 == 0, "N must be even and >= 4");
  __host__ __device__ static constexpr int at(int i) {
    return i < N / 2 - 1 ? 2 * (i + 1) : N - 1 - 2 * (i - (N / 2 - 1));
  }
  /* inverse of at() on positions 1..N-1 */
  __host__ __device__ static constexpr int rank(int p) {
    return (p & 1) ? N / 2 - 1 + (N - 1 - p) / 2 : p / 2 - 1;
  }
  /* where the content of position p goes */
  __host__ __device__ static constexpr int next(int p) {
    return p == 0 ? 0 : (p & 1) ? (p == 1 ? 2 : p - 2) : (p == N - 2 ? N - 1 : p + 2);
  }
  /* the index at position p after t steps (0 <= t < N-1; index x starts at x) */
  __host__ __device__ static constexpr int index_at(int p, int t) {
    return p == 0 ? 0 : at(rank(p) - t < 0 ? rank(p) - t + N - 1 : rank(p) - t);
  }

  /* the position of index x after t steps (0 <= t < N-1): the inverse of
   * index_at, in closed form */
  __host__ __device__ static constexpr int position_of(int x, int t) {
    return x == 0 ? 0 : at((rank(x) + t) % (N - 1));
  }

  static constexpr bool schedule_is_round_robin() {
    bool met[N][N] = {};
    int idx[N] = {}, pos[N] = {}; /* idx: position -> index, pos: index -> position */
    for (int p = 0; p < N; ++p) idx[p] = pos[p] = p;
    for (int t = 0; t < N - 1; ++t) {
      for (int p = 0; p < N; ++p)
        if (index_at(p, t) != idx[p] || pos[idx[p]] != p || position_of(idx[p], t) != p)
          return false;
      for (int m = 0; m < N / 2; ++m) {
        const int x = idx[2 * m], y = idx[2 * m + 1];
        if (met[x][y]) return false;
        met[x][y] = met[y][x] = true;
      }
      int moved[N] = {};
      for (int p = 0; p < N; ++p) moved[next(p)] = idx[p];
      for (int p = 0; p < N; ++p) {
        idx[p] = moved[p];
        pos[idx[p]] = p;
      }
    }
    for (int x = 0; x < N; ++x) {
      if (idx[x] != x) return false; /* a sweep returns to the identity */
      for (int y = 0; y < N; ++y)
        if (x != y && !met[x][y]) return false;
    }
    return true;
  }
};
static_assert(Ring<4>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<8>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<16>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<32>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<40>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<48>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<56>::schedule_is_round_robin(), "ring schedule");
static_assert(Ring<64>::schedule_is_round_robin(), "ring schedule");

/* A kernel of the warp or pair kernel's signature: (A, uplo, n, batch, W,
 * V, info, flags), V = NULL for values only. */
template <typename S>
using JacobiKernel = void (*)(const S *, int, int, int64_t, S *, S *, int *, int *);

/* Launch kernel over a batch of n x n matrices, per_block of them a block
 * of `threads`, in grids that keep within the grid's limit for any batch. */
template <typename S>
void launch_over_batch(JacobiKernel<S> kernel, int64_t per_block, int threads, const void *A,
                       int uplo, int n, int64_t batch, void *W, void *V, int *info, int *flags,
                       cudaStream_t stream) {
  const int64_t per_grid = (int64_t)INT32_MAX * per_block, nn = (int64_t)n * n;
  const S *a = static_cast<const S *>(A);
  S *w = static_cast<S *>(W), *v = static_cast<S *>(V);
  for (int64_t b = 0; b < batch; b += per_grid) {
    const int64_t count = batch - b < per_grid ? batch - b : per_grid;
    const unsigned blocks = (unsigned)((count + per_block - 1) / per_block);
    kernel<<<blocks, threads, 0, stream>>>(a + b * nn, uplo, n, count, w + b * n,
                                           v ? v + b * nn : nullptr, info + b,
                                           flags ? flags + b : nullptr);
  }
}

/* Registers in position order follow their contents: x[next(p)] = x[p]. */
template <int N, typename T>
__device__ __forceinline__ void ring_advance(T (&x)[N]) {
  const T last = x[Ring<N>::at(N - 2)];
#pragma unroll
  for (int i = N - 2; i >= 1; --i) x[Ring<N>::at(i)] = x[Ring<N>::at(i - 1)];
  x[Ring<N>::at(0)] = last;
}

/* Keep x[m] or x[m + H] for m < H by bit H of mb, then recurse on H / 2
 * (template recursion: every index stays a compile-time constant). */
template <int H, typename T>
__device__ __forceinline__ void halve(T *x, int mb) {
  if constexpr (H >= 1) {
    const bool up = (mb & H) != 0;
#pragma unroll
    for (int m = 0; m < H; ++m) x[m] = up ? x[m + H] : x[m];
    halve<H / 2>(x, mb);
  }
}

/* a[k | 1] for a lane-dependent k: registers cannot be indexed dynamically,
 * so halve the N / 2 odd candidates bit by bit (N / 2 - 1 selects). */
template <int N, typename T>
__device__ __forceinline__ T pick_odd(const T (&a)[N], int k) {
  T x[N / 2];
#pragma unroll
  for (int m = 0; m < N / 2; ++m) x[m] = a[2 * m + 1];
  halve<N / 4>(x, k >> 1);
  return x[0];
}

/* x = 0 where c; for double only the high word is cleared (one select
 * instead of two), which leaves a value below 2^-1042: under the eps floor
 * of the convergence test and negligible next to entries near 1. */
__device__ __forceinline__ void clear_if(float &x, bool c) {
  x = c ? 0.0f : x;
}
__device__ __forceinline__ void clear_if(double &x, bool c) {
  int hi = __double2hiint(x);
  asm("{.reg .pred p; setp.ne.u32 p, %1, 0; selp.b32 %0, 0, %0, p;}" : "+r"(hi) : "r"((unsigned)c));
  x = __hiloint2double(hi, __double2loint(x));
}

/* Sign flips by integer instructions on the sign bit: the compiler negates
 * a double with a double-precision add, which would queue with the
 * rotation's arithmetic on its critical path. with_sign_flipped: x with its
 * sign bit XORed with `sign` (0 or INT32_MIN). */
__device__ __forceinline__ float with_sign_flipped(float x, int sign) {
  return __int_as_float(__float_as_int(x) ^ sign);
}
__device__ __forceinline__ double with_sign_flipped(double x, int sign) {
  return __longlong_as_double(__double_as_longlong(x) ^ ((long long)sign << 32));
}
/* x's sign bit, as 0 or INT32_MIN (-0 has it set) */
__device__ __forceinline__ int sign_bit(float x) {
  return __float_as_int(x) & INT32_MIN;
}
__device__ __forceinline__ int sign_bit(double x) {
  return __double2hiint(x) & INT32_MIN;
}

/* A rotation as computed: J = c [1 t; -t 1] on (p, q), s = t c, rc = 1 / c,
 * delta = t a_pq the diagonal update (a_pp -= delta, a_qq += delta). */
template <typename T>
struct Rotation {
  T c, s, t, rc, delta;
};

/* The rotation J (J_pp = J_qq = c, J_pq = s, J_qp = -s) with (J^T A J)_pq = 0
 * (Golub & Van Loan's sym.schur2), or the identity when the pair passes the
 * convergence test |a_pq| <= max(eps sqrt|a_pp a_qq|, eps) (the first part
 * compared in squares); returns whether it rotates. Branch-free, so every
 * lane can run it and the step stays one basic block. With d = a_qq - a_pp,
 * o = 2 a_pq and r = sqrt(d^2 + o^2): cos 2theta = |d| / r, so
 *   c = sqrt((1 + |d|/r) / 2),  s = sign(d) (o/r) / (2c),  t = s / c,
 * which needs two reciprocal square roots in a row (the textbook form,
 * zeta = d/o and t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), needs two
 * divisions and two square roots). No cancellation: 1 + |d|/r >= 1. The
 * matrix is scaled so that max|a_ij| < 1, hence |d| <= 2n, |o| < 2. */
template <typename T>
__device__ __forceinline__ bool jacobi_rotation(T app, T aqq, T apq, Rotation<T> &r) {
  constexpr T eps = Prec<T>::eps;
  const T apq2 = apq * apq;
  const bool rotate = fabs(apq) > eps && apq2 > eps * eps * fabs(app * aqq);
  const T d = aqq - app;
  /* 1 / r (o^2 = 4 a_pq^2); garbage (Inf, NaN) when the pair does not
   * rotate, which the selects below drop: leaving `rotate` out of the input
   * keeps its test off the critical path */
  const T rinv = Prec<T>::rsqrt(fma(T(4), apq2, d * d));
  const T x = fma(T(0.5) * fabs(d), rinv, T(0.5)); /* c^2, in [1/2, 1] */
  const T rc = Prec<T>::rsqrt(x);                  /* 1 / c */
  /* sign(d) o / 2r / c; d = -0 (rare) gives the other of the two 45-degree
   * rotations, which zero a_pq as well */
  const T s = with_sign_flipped(apq, sign_bit(d)) * rinv * rc;
  r.c = rotate ? x * rc : T(1);
  r.s = rotate ? s : T(0);
  r.t = rotate ? s * rc : T(0);
  r.rc = rotate ? rc : T(1);
  r.delta = r.t * apq;
  return rotate;
}

/* Ascending, ties by index, NaN last: a total order, so ranks are a permutation. */
template <typename T>
__device__ __forceinline__ bool before(T x, int i, T y, int j) {
  const bool xn = isnan(x), yn = isnan(y);
  if (xn || yn) return xn && yn ? i < j : yn;
  return x < y || (x == y && i < j);
}

/* Whether x is finite once stored as S (bf16 can overflow on rounding). */
template <typename S, typename T>
__device__ __forceinline__ bool finite_as(T x) {
  S stored;
  put(&stored, x);
  return finite(stored);
}

/* A published transform applied to one pair of entries (u, w) at positions
 * (2m, 2m + 1): the rotation (u, w) -> (c u - s w, s u + c w) with
 * (x, y) = (c, s), or scaled (u, w) -> (u - alpha w, w + beta u) with
 * (x, y) = (alpha, beta). */
template <bool SCALED, typename T>
__device__ __forceinline__ void transform_pair(T x, T y, T &u, T &w) {
  const T u0 = u, w0 = w;
  if constexpr (SCALED) {
    u = fma(-x, w0, u0);
    w = fma(y, u0, w0);
  } else {
    u = fma(x, u0, -y * w0);
    w = fma(y, u0, x * w0);
  }
}

} /* namespace */
} /* namespace gstat_cu */

#endif
