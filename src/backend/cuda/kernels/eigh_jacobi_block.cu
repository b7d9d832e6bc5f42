/*
 * Batched symmetric eigensolver for 32 < n <= 64: parallel cyclic Jacobi,
 * one thread block per matrix, A in shared memory.
 *
 * Why not the warp kernel of eigh_jacobi.cu: a 64 x 64 matrix and its
 * vectors are 8192 values, 256 per lane of a warp: more registers than a
 * lane has. Why not cusolverDnXsyevBatched, which these orders used
 * before: its Householder steps run one after another per matrix, while
 * Jacobi rotates all n/2 pairs of a step at once (bench/README.md has the
 * measurements).
 *
 * The matrix is padded to NP = n rounded up to a multiple of 8 with zeros,
 * which never mix with the matrix: their couplings are exactly 0, so their
 * rotations are the identity. A step rotates the NP/2 pairs of the
 * round-robin schedule (Ring, shared with the warp kernel): the pair at
 * positions (2m, 2m+1), the indices moving along the ring between steps.
 *   - A: the upper triangle, packed, by index (it never moves; the index
 *     map says which indices form this step's pairs);
 *   - V, float: in registers by position. Thread (row r, quarter h) holds
 *     row r's positions 2hQ .. 2hQ + 2Q - 1 (Q = NP/8 pairs), so its pairs
 *     are its own registers; the ring moves each entry one slot of its
 *     parity along (two registers), with one shuffle each way between the
 *     quarters, which sit in adjacent lanes. V goes to shared memory by
 *     index only at the end;
 *   - V, double: in shared memory by index. In registers, 16 doubles a
 *     thread need ~76 registers (3 blocks an SM instead of 4), which was
 *     slower (bench/README.md, "Measurements moved from code comments").
 *     A (packed, 16.25 KiB) and V (32 KiB) then fit 4 blocks an SM;
 *   - the index at each position, for this step and the next.
 * A step, two barriers:
 *   1. warp 0: lane m computes the rotation of pair m from a_pp, a_qq and
 *      a_pq, writes a_pp and a_qq updated exactly (Rutishauser) and a_pq
 *      cleared; threads 32 .. 32 + NP - 1 move the index map one step on;
 *   2. every thread: the off-diagonal 2x2 blocks (pair i, pair j), i < j,
 *      each read once and written back rotated on both sides (J_i^T B J_j);
 *      V J; for V in registers, the ring move.
 * A step in which no pair rotates skips phase 2 (phase 1 still clears the
 * pairs' a_pq, which are below the test's threshold, or NaN).
 *
 * Convergence as in the warp kernel: a pair rotates only if
 * |a_pq| > max(eps sqrt|a_pp a_qq|, eps) (scaled matrix); the matrix has
 * converged after NP - 1 consecutive steps without a rotation, or earlier
 * when a quiet step finds every off-diagonal entry <= eps. After
 * kMaxSweepsBlock sweeps the element fails (info = 1, NaN outputs).
 */
#include "jacobi_common.cuh"

namespace gstat_cu {
namespace {

constexpr int kRows = 64;           /* V's rows, at most: n <= 64 */
constexpr int kThreads = 4 * kRows; /* four threads per row of V */
constexpr int kWarps = kThreads / 32;
constexpr int kMaxSweepsBlock = 20;

/* The padded order NP (a multiple of 8: a thread's quarter of a row of V
 * holds NP / 8 pairs) and what follows from it. */
template <int NP>
struct Dims {
  static_assert(NP % 8 == 0 && NP <= kRows, "NP: a multiple of 8, at most 64");
  static constexpr int pairs = NP / 2;                       /* rotations per step */
  static constexpr int steps = NP - 1;                       /* steps per sweep */
  static constexpr int off_blocks = pairs * (pairs - 1) / 2; /* 2x2 blocks (i, j), i < j */
  static constexpr int packed_size = NP * (NP + 1) / 2;
  static constexpr int quarter = NP / 8; /* pairs per thread of V in registers */
  /* entry (x, y) in the packed upper triangle: row lo starts at
   * lo (2 NP - 1 - lo) / 2 (an even product) */
  __device__ static int packed(int x, int y) {
    const int lo = min(x, y), hi = max(x, y);
    return (lo * (2 * NP - 1 - lo) >> 1) + hi;
  }
};

/* Where V lives, and the registers that allows (see the top). */
template <typename T>
struct Placement {
  static constexpr bool v_in_registers = sizeof(T) == 4;
  /* at most 64 registers a thread; used: float 37-47 (5 blocks an SM with
   * V), double 40-45 (shared memory allows 4) */
  static constexpr int min_blocks = 4;
};

template <typename T>
struct Pair2 {
  T c, s;
};

template <typename T, int NP>
struct BlockSmem {
  T a[Dims<NP>::packed_size];         /* A, packed upper triangle, scaled by 2^-e */
  T vt[NP][NP];                       /* vt[x][i] = V(i, x) (registers: only at the end) */
  T lambda[NP];                       /* eigenvalues, unsorted */
  Pair2<T> rot[Dims<NP>::pairs];      /* this step's rotations (c, s), by pair */
  T red[kWarps];                      /* the block's max |a_ij| */
  int rank[NP];                       /* where eigenvalue x goes */
  uint16_t off[Dims<NP>::off_blocks]; /* i << 8 | j of off-diagonal block e */
  uint8_t idx[2][NP];                 /* index at each position, this step and the next */
};

/* The index pair at positions (2m, 2m + 1), read as one 16-bit load. */
__device__ __forceinline__ void pair_at(const uint8_t *at, int m, int &p, int &q) {
  const unsigned pq = reinterpret_cast<const uint16_t *>(at)[m];
  p = (int)(pq & 0xffu);
  q = (int)(pq >> 8);
}

/* A thread's quarter h of a row of V follows the schedule: the contents of
 * its positions 2hQ .. 2hQ + 2Q - 1 move as Ring<NP>::next says. Evens move
 * up a slot, the last one to the next quarter's first (quarter 3: to its
 * own last odd, position NP - 1); odds move down a slot, the first one to
 * the previous quarter's last (quarter 0: to position 2). */
template <int Q, typename T>
__device__ __forceinline__ void ring_shift(T (&v)[2 * Q], int h) {
  const T from_prev = __shfl_up_sync(kFullMask, v[2 * Q - 2], 1);
  const T from_next = __shfl_down_sync(kFullMask, v[1], 1);
  const T old0 = v[0], old1 = v[1], last_even = v[2 * Q - 2];
#pragma unroll
  for (int k = 0; k + 1 < Q; ++k) v[2 * k + 1] = v[2 * k + 3];
  v[2 * Q - 1] = h == 3 ? last_even : from_next;
#pragma unroll
  for (int k = Q - 1; k >= 2; --k) v[2 * k] = v[2 * k - 2];
  v[2] = h == 0 ? old1 : old0;
  v[0] = h == 0 ? old0 : from_prev;
}

template <typename S, typename T, int NP, bool WANT_V>
__global__ void __launch_bounds__(kThreads, Placement<T>::min_blocks)
    eigh_jacobi_block_kernel(const S *__restrict__ A, int uplo, int n, S *__restrict__ W,
                             S *__restrict__ V, int *__restrict__ info, int *__restrict__ flags) {
  using D = Dims<NP>;
  constexpr int Q = D::quarter;
  constexpr bool VREG = Placement<T>::v_in_registers;
  extern __shared__ __align__(16) unsigned char raw[];
  BlockSmem<T, NP> &sm = *reinterpret_cast<BlockSmem<T, NP> *>(raw);
  constexpr T eps = Prec<T>::eps;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int row = tid / 4, h = tid % 4; /* V in registers: this thread's part */
  const int64_t b = blockIdx.x, nn = (int64_t)n * n;

  /* Zeros (the padding and the other triangle), the index map's start,
   * the off-diagonal blocks in row order, V = I. */
  for (int e = tid; e < D::packed_size; e += kThreads) sm.a[e] = 0;
  if (tid < NP) sm.idx[0][tid] = (uint8_t)tid;
  for (int e = tid; e < D::off_blocks; e += kThreads) {
    int i = 0, r = e;
    while (r >= D::pairs - 1 - i) r -= D::pairs - 1 - i++;
    sm.off[e] = (uint16_t)(i << 8 | (i + 1 + r));
  }
  T v[VREG ? 2 * Q : 1]; /* position 2hQ + j holds index 2hQ + j */
  if constexpr (WANT_V && VREG) {
#pragma unroll
    for (int j = 0; j < 2 * Q; ++j) v[j] = 2 * h * Q + j == row ? T(1) : T(0);
  } else if constexpr (WANT_V) {
    for (int e = tid; e < NP * NP; e += kThreads) sm.vt[e / NP][e % NP] = e / NP == e % NP;
  }
  __syncthreads();

  /* Load the uplo triangle (coalesced) and find max|a_ij|. */
  T amax = 0;
  for (int e = tid; e < (int)nn; e += kThreads) {
    const int i = e % n, j = e / n;
    if (uplo == 0 ? i >= j : i <= j) {
      const T x = widen(A[b * nn + e]);
      sm.a[D::packed(i, j)] = x;
      amax = fmax(amax, fabs(x));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmax(amax, __shfl_xor_sync(kFullMask, amax, o));
  if (lane == 0) sm.red[warp] = amax;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kWarps; ++w) amax = fmax(amax, sm.red[w]);
  /* Scale by a power of two so that max|a_ij| is in [0.5, 1). */
  int ex = 0;
  if (amax > 0 && isfinite(amax)) frexp(amax, &ex);
  for (int e = tid; e < D::packed_size; e += kThreads) sm.a[e] = ldexp(sm.a[e], -ex);
  __syncthreads();

  int quiet = 0; /* consecutive steps without a rotation */
  int step = 0;
  bool converged = false;
  for (; step < kMaxSweepsBlock * D::steps; ++step) {
    const uint8_t *at = sm.idx[step & 1];
    /* Phase 1: the rotations, and the index map's next step. */
    bool rotated = false;
    if (warp == 0) {
      if (lane < D::pairs) {
        int p, q;
        pair_at(at, lane, p, q);
        const int pp = D::packed(p, p), qq = D::packed(q, q), pq = D::packed(p, q);
        const T app = sm.a[pp], aqq = sm.a[qq];
        Rotation<T> r;
        rotated = jacobi_rotation(app, aqq, sm.a[pq], r);
        sm.rot[lane] = Pair2<T>{r.c, r.s};
        sm.a[pp] = app - r.delta;
        sm.a[qq] = aqq + r.delta;
        sm.a[pq] = 0; /* not rotated: below the test's threshold, or NaN (which
                       * the delta above has carried to the diagonal) */
      }
    } else if (tid < 32 + NP) { /* the index at position p moves to next(p) */
      const int p = tid - 32;
      sm.idx[(step & 1) ^ 1][Ring<NP>::next(p)] = at[p];
    }
    if (__syncthreads_or(rotated)) {
      quiet = 0;
      /* Phase 2: B = [a_{p_i p_j} a_{p_i q_j}; a_{q_i p_j} a_{q_i q_j}]
       * becomes J_i^T B J_j. No two blocks share an entry. */
      for (int e = tid; e < D::off_blocks; e += kThreads) {
        const int ij = sm.off[e], i = ij >> 8, j = ij & 0xff;
        int pi, qi, pj, qj;
        pair_at(at, i, pi, qi);
        pair_at(at, j, pj, qj);
        const Pair2<T> ri = sm.rot[i], rj = sm.rot[j];
        const int e00 = D::packed(pi, pj), e01 = D::packed(pi, qj), e10 = D::packed(qi, pj),
                  e11 = D::packed(qi, qj);
        T x00 = sm.a[e00], x01 = sm.a[e01], x10 = sm.a[e10], x11 = sm.a[e11];
        transform_pair<false>(ri.c, ri.s, x00, x10); /* rows p_i, q_i */
        transform_pair<false>(ri.c, ri.s, x01, x11);
        transform_pair<false>(rj.c, rj.s, x00, x01); /* columns p_j, q_j */
        transform_pair<false>(rj.c, rj.s, x10, x11);
        sm.a[e00] = x00;
        sm.a[e01] = x01;
        sm.a[e10] = x10;
        sm.a[e11] = x11;
      }
      if constexpr (WANT_V && VREG) { /* V J on this thread's pairs hQ .. hQ + Q - 1 */
#pragma unroll
        for (int k = 0; k < Q; ++k) {
          const Pair2<T> r = sm.rot[h * Q + k];
          transform_pair<false>(r.c, r.s, v[2 * k], v[2 * k + 1]);
        }
      } else if constexpr (WANT_V) { /* V J by index: a warp's lanes take consecutive rows */
        const int r = tid % kRows;
        for (int m = tid / kRows; m < D::pairs; m += kThreads / kRows) {
          const Pair2<T> rm = sm.rot[m];
          int p, q;
          pair_at(at, m, p, q);
          if (r < NP) transform_pair<false>(rm.c, rm.s, sm.vt[p][r], sm.vt[q][r]);
        }
      }
      if constexpr (WANT_V && VREG) ring_shift<Q>(v, h);
      __syncthreads();
    } else {
      ++quiet;
      if constexpr (WANT_V && VREG) ring_shift<Q>(v, h);
      /* A quiet step: converged for good once every off-diagonal entry is
       * <= eps (the test's floor), or after a whole quiet sweep. A NaN
       * entry is not small: its pair must come round first, which carries
       * it to the diagonal and so to the outputs and the flags. */
      bool big = false;
      for (int e = tid; e < NP * NP; e += kThreads) {
        const int x = e / NP, y = e % NP;
        big = big || (x < y && !(fabs(sm.a[D::packed(x, y)]) <= eps));
      }
      converged = !__syncthreads_or(big) || quiet >= D::steps;
      if (converged) {
        ++step; /* this step's moves are done */
        break;
      }
    }
  }

  /* Eigenvalues (A's diagonal, by index); V from the registers into shared
   * memory by index (the index map after `step` steps). */
  const bool failed = !converged;
  if (tid < NP) sm.lambda[tid] = ldexp(sm.a[D::packed(tid, tid)], ex);
  if constexpr (WANT_V && VREG)
    if (row < NP) {
      const uint8_t *at = sm.idx[step & 1];
#pragma unroll
      for (int j = 0; j < 2 * Q; ++j) sm.vt[at[2 * h * Q + j]][row] = v[j];
    }
  __syncthreads();
  /* Ascending, ties by index, NaN last; NaN for a failure. */
  bool ok = !failed;
  if (tid < n) {
    const T lam = sm.lambda[tid];
    int rank = 0;
    for (int j = 0; j < n; ++j) rank += before(sm.lambda[j], j, lam, tid);
    sm.rank[tid] = rank;
    put(W + b * n + rank, failed ? quiet_nan<T>() : lam);
    ok = ok && finite_as<S>(lam);
  }
  if constexpr (WANT_V) {
    __syncthreads();
    /* Vectors: warp w stores columns w, w + 8, ..., each with its sign
     * fixed (largest-magnitude entry positive, the first on ties, as the
     * CPU scans), at column rank[x]. */
    for (int x = warp; x < n; x += kWarps) {
      const T u0 = lane < n ? sm.vt[x][lane] : T(0),
              u1 = lane + 32 < n ? sm.vt[x][lane + 32] : T(0);
      const T m0 = lane < n && !isnan(u0) ? fabs(u0) : T(-1),
              m1 = lane + 32 < n && !isnan(u1) ? fabs(u1) : T(-1);
      T best = m1 > m0 ? m1 : m0;
      int where = m1 > m0 ? lane + 32 : lane;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const T ob = __shfl_xor_sync(kFullMask, best, o);
        const int ow = __shfl_xor_sync(kFullMask, where, o);
        if (ob > best || (ob == best && ow < where)) best = ob, where = ow;
      }
      const T sign = failed ? quiet_nan<T>() : best >= 0 && sm.vt[x][where] < 0 ? T(-1) : T(1);
      S *col = V + b * nn + (int64_t)sm.rank[x] * n;
      if (lane < n) {
        put(col + lane, sign * u0);
        ok = ok && finite_as<S>(sign * u0);
      }
      if (lane + 32 < n) {
        put(col + lane + 32, sign * u1);
        ok = ok && finite_as<S>(sign * u1);
      }
    }
  }
  const bool any_bad = __syncthreads_or(!ok);
  if (tid == 0) {
    info[b] = failed ? 1 : 0;
    if (flags) flags[b] = any_bad ? 2 : 0;
  }
}

template <typename S, typename T, int NP, bool WANT_V>
cudaError_t launch_np(const S *a, int uplo, int n, int64_t batch, S *w, S *v, int *info, int *flags,
                      cudaStream_t stream) {
  constexpr size_t smem = sizeof(BlockSmem<T, NP>);
  /* double needs more than the 48 KiB a kernel gets without asking (set
   * on every call: the setting belongs to the current device) */
  cudaError_t err = cudaFuncSetAttribute(eigh_jacobi_block_kernel<S, T, NP, WANT_V>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (err != cudaSuccess) return err;
  const int64_t nn = (int64_t)n * n;
  for (int64_t b = 0; b < batch; b += INT32_MAX) { /* the grid's limit */
    const unsigned count = (unsigned)(batch - b < INT32_MAX ? batch - b : INT32_MAX);
    eigh_jacobi_block_kernel<S, T, NP, WANT_V><<<count, kThreads, smem, stream>>>(
        a + b * nn, uplo, n, w + b * n, WANT_V ? v + b * nn : nullptr, info + b,
        flags ? flags + b : nullptr);
  }
  return cudaGetLastError();
}

template <typename S, typename T, bool WANT_V>
cudaError_t launch_order(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                         int *flags, cudaStream_t stream) {
  const S *a = static_cast<const S *>(A);
  S *w = static_cast<S *>(W), *v = static_cast<S *>(V);
  if (n <= 40) return launch_np<S, T, 40, WANT_V>(a, uplo, n, batch, w, v, info, flags, stream);
  if (n <= 48) return launch_np<S, T, 48, WANT_V>(a, uplo, n, batch, w, v, info, flags, stream);
  if (n <= 56) return launch_np<S, T, 56, WANT_V>(a, uplo, n, batch, w, v, info, flags, stream);
  return launch_np<S, T, 64, WANT_V>(a, uplo, n, batch, w, v, info, flags, stream);
}

template <typename S, typename T>
cudaError_t launch_block(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                         int *flags, cudaStream_t stream) {
  return V ? launch_order<S, T, true>(A, uplo, n, batch, W, V, info, flags, stream)
           : launch_order<S, T, false>(A, uplo, n, batch, W, V, info, flags, stream);
}

} /* namespace */

cudaError_t eigh_jacobi_block(int dtype, const void *A, int uplo, int n, int64_t batch, void *W,
                              void *V, int *info, int *flags, cudaStream_t stream) {
  if (dtype == kF32)
    return launch_block<float, float>(A, uplo, n, batch, W, V, info, flags, stream);
  if (dtype == kF64)
    return launch_block<double, double>(A, uplo, n, batch, W, V, info, flags, stream);
  return launch_block<bf16, float>(A, uplo, n, batch, W, V, info, flags, stream);
}

} /* namespace gstat_cu */
