/*
 * Batched symmetric eigensolver for 8 < n <= 16: parallel cyclic Jacobi
 * with a whole pair of columns per lane.
 *
 * Why. The warp kernel (eigh_jacobi.cu) gives each lane one column, so both
 * lanes of a pair compute the same rotation and only one of them is used.
 * Here a group of P = N/2 lanes owns one matrix (G = 32/P matrices a
 * warp), and lane l owns the pair at positions (2l, 2l + 1) of the same
 * circle schedule (Ring):
 *   - ca[], cb[]: A's columns at positions 2l and 2l + 1 (indices p, q),
 *     rows in position order, with the exact diagonal entries dp, dq beside
 *     them;
 *   - v0[], v1[]: rows 2l and 2l + 1 of V, columns in position order.
 * Every lane computes a rotation that is used. The column rotation is local;
 * the row rotations and V's columns need every pair's (c, s) (shared memory,
 * one __syncwarp a step), on static register pairs as in the warp kernel.
 * Between steps the columns move to their next positions by shuffles (two
 * a word, and selects for the circle's ends: lane 0 sends its second column
 * and keeps its first; lane P - 1 moves its first column to its second).
 * Padding, scaling, convergence test and outputs are the warp kernel's.
 *
 * Float compute only (float32, bfloat16): faster than the warp kernel for
 * float, slower for double, so double stays on the warp kernel (with double,
 * 248 registers a thread, 2 blocks an SM). The variants tried (columns
 * through shared memory, capped registers, the staging stride N + 2) did
 * not beat the kernels kept (bench/README.md, "Measurements moved from code
 * comments"). (The double versions, with the warp kernel's scaled columns,
 * are not kept here; the shared-memory one is on the branch
 * experiment/jacobi-pairs.)
 */
#include "jacobi_common.cuh"

namespace gstat_cu {
namespace {

constexpr int kPairWarpsPerBlock = 4;

/* A pair's rotation as published: (c, s) */
template <typename T>
struct alignas(2 * sizeof(T)) Coeffs {
  T x, y;
};

template <typename T, int N>
struct PairSmem {
  static constexpr int P = N / 2, G = 32 / P;
  /* [group][column][row]: the input's rows, then the eigenvectors (an odd
   * stride, N + 1, spreads a column's rows over the banks) */
  T stage[G][N][N + 1];
  Coeffs<T> rot[2][G][P]; /* double-buffered by step parity */
};

/* The circle's move for one word of a column pair (and for the diagonal
 * entries that travel with the columns): the new first comes
 * from the left neighbour's first (lane 1: lane 0's second; lane 0 keeps
 * its own), the new second from the right neighbour's second (lane P - 1:
 * its own first). */
template <typename T>
__device__ __forceinline__ void move_pair(T &a, T &b, int from_left, int from_right, bool first,
                                          bool last) {
  const T ra = __shfl_sync(kFullMask, first ? b : a, from_left);
  const T rb = __shfl_sync(kFullMask, b, from_right);
  b = last ? a : rb;
  a = first ? a : ra;
}

/* The lane's columns and what travels with them. */
template <typename T, int N>
struct PairState {
  T ca[N], cb[N];
  T dp, dq; /* exact diagonal entries */
};

/* One parallel step; returns whether this lane's pair rotated. */
template <typename T, int N, bool WANT_V>
__device__ __forceinline__ bool pair_step(PairState<T, N> &s, T (&v0)[N], T (&v1)[N], int l,
                                          bool first, bool last, int from_left, int from_right,
                                          Coeffs<T> *rots) {
  static_assert(!Prec<T>::scaled, "float compute only (see the top)");
  constexpr int P = N / 2;
  const T off = pick_odd(s.ca, 2 * l); /* A(q, p) */
  Rotation<T> r;
  const bool rotated = jacobi_rotation(s.dp, s.dq, off, r);
  rots[l] = Coeffs<T>{r.c, r.s};
  /* A J on this lane's two columns */
#pragma unroll
  for (int i = 0; i < N; ++i) transform_pair<false>(r.c, r.s, s.ca[i], s.cb[i]);
  s.dp -= r.delta;
  s.dq += r.delta;
  __syncwarp();
  /* J^T (A J) on the rows, V J on the columns; the own 2x2 block cleared */
#pragma unroll
  for (int m = 0; m < P; ++m) {
    const Coeffs<T> k = rots[m];
    transform_pair<false>(k.x, k.y, s.ca[2 * m], s.ca[2 * m + 1]);
    transform_pair<false>(k.x, k.y, s.cb[2 * m], s.cb[2 * m + 1]);
    const bool own = m == l;
    clear_if(s.ca[2 * m], own);
    clear_if(s.ca[2 * m + 1], own);
    clear_if(s.cb[2 * m], own);
    clear_if(s.cb[2 * m + 1], own);
    if constexpr (WANT_V) {
      transform_pair<false>(k.x, k.y, v0[2 * m], v0[2 * m + 1]);
      transform_pair<false>(k.x, k.y, v1[2 * m], v1[2 * m + 1]);
    }
  }
  /* next step's positions: rows by renaming registers, columns across lanes */
  ring_advance(s.ca);
  ring_advance(s.cb);
  if constexpr (WANT_V) {
    ring_advance(v0);
    ring_advance(v1);
  }
#pragma unroll
  for (int i = 0; i < N; ++i) move_pair(s.ca[i], s.cb[i], from_left, from_right, first, last);
  move_pair(s.dp, s.dq, from_left, from_right, first, last);
  return rotated;
}

template <typename S, typename T, int N, bool WANT_V>
__global__ void __launch_bounds__(32 * kPairWarpsPerBlock, 1)
    eigh_jacobi_pairs_kernel(const S *__restrict__ A, int uplo, int n, int64_t batch,
                             S *__restrict__ W, S *__restrict__ V, int *__restrict__ info,
                             int *__restrict__ flags) {
  constexpr int P = N / 2, G = 32 / P;
  __shared__ PairSmem<T, N> smem[kPairWarpsPerBlock];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / P, l = lane % P, gbase = g * P;
  const int64_t b0 = ((int64_t)blockIdx.x * kPairWarpsPerBlock + warp) * G;
  if (b0 >= batch) return; /* whole warp idle */
  const int64_t b = b0 + g;
  const bool live = b < batch;
  PairSmem<T, N> &sm = smem[warp];
  T(&st)[N][N + 1] = sm.stage[g];
  const int64_t nn = (int64_t)n * n;
  const int p0 = 2 * l, q0 = 2 * l + 1; /* this lane's positions */

  /* Load rows p0 and q0 into shared memory (st[j][r] = A(r, j)), then take
   * columns p0 and q0, mirroring the uplo triangle. */
  if (live)
    for (int r = p0; r <= q0 && r < n; ++r)
      for (int j = 0; j < n; ++j) st[j][r] = widen(A[b * nn + r + (int64_t)j * n]);
  __syncwarp();
  PairState<T, N> s;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const bool in_a = uplo == 0 ? i >= p0 : i <= p0, in_b = uplo == 0 ? i >= q0 : i <= q0;
    s.ca[i] = live && i < n && p0 < n ? (in_a ? st[p0][i] : st[i][p0]) : T(0);
    s.cb[i] = live && i < n && q0 < n ? (in_b ? st[q0][i] : st[i][q0]) : T(0);
  }
  __syncwarp(); /* st is reused for the vectors */

  /* Scale by a power of two so that max|a_ij| is in [0.5, 1). */
  T amax = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) amax = fmax(amax, fmax(fabs(s.ca[i]), fabs(s.cb[i])));
#pragma unroll
  for (int o = P / 2; o > 0; o >>= 1) amax = fmax(amax, __shfl_xor_sync(kFullMask, amax, o));
  int e = 0;
  if (amax > 0 && isfinite(amax)) frexp(amax, &e);
  s.dp = s.dq = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    s.ca[i] = ldexp(s.ca[i], -e);
    s.cb[i] = ldexp(s.cb[i], -e);
    s.dp = i == p0 ? s.ca[i] : s.dp;
    s.dq = i == q0 ? s.cb[i] : s.dq;
  }

  T v0[N], v1[N]; /* unused (and optimized away) without WANT_V */
  if constexpr (WANT_V) {
#pragma unroll
    for (int j = 0; j < N; ++j) {
      v0[j] = j == p0 ? T(1) : T(0);
      v1[j] = j == q0 ? T(1) : T(0);
    }
  }

  const bool first = l == 0, last = l == P - 1;
  const int from_left = gbase + (first ? 0 : l - 1), from_right = gbase + (last ? l : l + 1);
  const unsigned gmask = (unsigned)(((1ull << P) - 1) << gbase);
  int t = 0;     /* steps taken, modulo N - 1 */
  int quiet = 0; /* consecutive steps without a rotation in this group */
  bool converged = false;
  static_assert(kMaxSweeps * (N - 1) % 2 == 0, "whole iterations");
  for (int step = 0; step < kMaxSweeps * (N - 1); step += 2) {
    bool rotated =
        pair_step<T, N, WANT_V>(s, v0, v1, l, first, last, from_left, from_right, sm.rot[0][g]);
    rotated =
        pair_step<T, N, WANT_V>(s, v0, v1, l, first, last, from_left, from_right, sm.rot[1][g]) ||
        rotated;
    t = t + 2 >= N - 1 ? t + 2 - (N - 1) : t + 2;
    /* convergence as in the warp kernel */
    quiet = (__ballot_sync(kFullMask, rotated) & gmask) ? 0 : quiet + 2;
    if (__any_sync(kFullMask, quiet > 0 && !converged)) {
      bool small = true;
      const T bound = Prec<T>::eps;
#pragma unroll
      for (int i = 0; i < N; ++i)
        small &= ((i == p0) | (fabs(s.ca[i]) <= bound)) & ((i == q0) | (fabs(s.cb[i]) <= bound));
      const unsigned big = __ballot_sync(kFullMask, !small);
      converged = converged || (big & gmask) == 0;
    }
    converged = converged || quiet >= N - 1;
    if (__all_sync(kFullMask, converged)) break;
  }

  /* Eigenvalues of the indices at positions p0 and q0, ranked ascending. */
  const T lp = ldexp(s.dp, e), lq = ldexp(s.dq, e);
  const int xp = Ring<N>::index_at(p0, t), xq = Ring<N>::index_at(q0, t);
  int rank_p = 0, rank_q = 0;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const T op = __shfl_sync(kFullMask, lp, gbase + j), oq = __shfl_sync(kFullMask, lq, gbase + j);
    const int yp = Ring<N>::index_at(2 * j, t), yq = Ring<N>::index_at(2 * j + 1, t);
    rank_p += (yp < n && before(op, yp, lp, xp)) + (yq < n && before(oq, yq, lp, xp));
    rank_q += (yp < n && before(op, yp, lq, xq)) + (yq < n && before(oq, yq, lq, xq));
  }
  const bool failed = !converged;
  if (live && xp < n) put(W + b * n + rank_p, failed ? quiet_nan<T>() : lp);
  if (live && xq < n) put(W + b * n + rank_q, failed ? quiet_nan<T>() : lq);
  bool ok = !failed && (xp >= n || finite_as<S>(lp)) && (xq >= n || finite_as<S>(lq));

  if constexpr (WANT_V) {
    /* V = U D: the column at position j is U's column times its scale.
     * Through shared memory: st[position][row], then this lane's two
     * columns, signed (first entry of largest magnitude positive, as the
     * CPU), to st[rank][row], then rows p0 and q0 stored. */
#pragma unroll
    for (int j = 0; j < N; ++j) {
      st[j][p0] = v0[j];
      st[j][q0] = v1[j];
    }
    __syncwarp();
    T colp[N], colq[N];
    T bp = -1, bq = -1, vp = 0, vq = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      colp[i] = st[p0][i];
      colq[i] = st[q0][i];
      if (i < n && fabs(colp[i]) > bp) bp = fabs(colp[i]), vp = colp[i];
      if (i < n && fabs(colq[i]) > bq) bq = fabs(colq[i]), vq = colq[i];
    }
    const T sgp = failed ? quiet_nan<T>() : vp < 0 ? T(-1) : T(1);
    const T sgq = failed ? quiet_nan<T>() : vq < 0 ? T(-1) : T(1);
    __syncwarp();
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (xp < n) st[rank_p][i] = sgp * colp[i];
      if (xq < n) st[rank_q][i] = sgq * colq[i];
    }
    __syncwarp();
    S *Vb = V + b * nn;
    if (live)
      for (int r = p0; r <= q0 && r < n; ++r)
        for (int j = 0; j < n; ++j) {
          put(Vb + r + (int64_t)j * n, st[j][r]);
          ok = ok && finite_as<S>(st[j][r]);
        }
  }
  const bool group_ok = (__ballot_sync(kFullMask, !ok) & gmask) == 0;
  if (live && l == 0) {
    info[b] = failed ? 1 : 0;
    if (flags) flags[b] = group_ok ? 0 : 2;
  }
}

} /* namespace */

template <typename S>
void launch_jacobi_pairs(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                         int *flags, cudaStream_t stream) {
  using T = float;
  constexpr int N = 16;
  launch_over_batch<S>(
      V ? eigh_jacobi_pairs_kernel<S, T, N, true> : eigh_jacobi_pairs_kernel<S, T, N, false>,
      kPairWarpsPerBlock * PairSmem<T, N>::G, 32 * kPairWarpsPerBlock, A, uplo, n, batch, W, V,
      info, flags, stream);
}

template void launch_jacobi_pairs<float>(const void *, int, int, int64_t, void *, void *, int *,
                                         int *, cudaStream_t);
template void launch_jacobi_pairs<bf16>(const void *, int, int, int64_t, void *, void *, int *,
                                        int *, cudaStream_t);

} /* namespace gstat_cu */
