/*
 * Batched symmetric eigensolver for n <= 32: parallel cyclic Jacobi.
 * (Float32 and bfloat16 with 8 < n <= 16 go to the pair-per-lane kernel,
 * eigh_jacobi_pairs.cu, which computes each rotation once and is faster:
 * bench/README.md, "Measurements moved from code comments".)
 *
 * Mapping. A group of N lanes (N = 4, 8, 16 or 32, the next power of two
 * >= n; 32/N groups per warp) owns one matrix, padded to N x N with zeros.
 * Padding never mixes with the matrix: its couplings are exactly 0, so its
 * rotations are exactly the identity.
 *   - lane L holds column L of A in registers a[0..N-1];
 *   - lane L holds row L of V in registers v[0..N-1].
 * Each step rotates N/2 disjoint pairs at once. The pairs come from the
 * round-robin "circle" schedule (class Ring below): indices sit at positions
 * 0..N-1, the pairs are the positions (2m, 2m+1), and between steps every
 * index but the one at position 0 moves one place along a fixed cycle of
 * positions. The registers of a[] (rows of A) and v[] (columns of V) are kept
 * in position order, so
 *   - the row rotations of A and the column rotations of V always act on the
 *     register pairs (2m, 2m+1): static register indices, no shuffles;
 *   - moving to the next step is a fixed register permutation (moves).
 * The column rotations of A (A J) need the partner's column: N shuffles. The
 * rotation of a pair is computed once, by the lane at the even position, and
 * published through shared memory (one __syncwarp a step); every lane reads
 * all N/2 rotations. Each lane keeps its diagonal entry a_LL in a register
 * of its own, updated exactly (Rutishauser: a_pp -= t a_pq, a_qq += t a_pq),
 * and the pair's 2x2 block in a[] is cleared (a_pq = 0, or below 2^-1042
 * for double, see clear_if). The stale diagonal copy left in a[] only ever
 * feeds that block, so only the off-diagonal a_pq is picked out of a[].
 *
 * Cost per step, N = 32, float, with vectors (sm_90 SASS of the loop, 829
 * instructions per two-step iteration): ~210 FP32 instructions (A columns
 * N mul + N fma, A rows and V columns 2N each: 6N = 192, plus the
 * rotation), 33 shuffles, 17 shared loads, ~47 selects to pick a_pq out of
 * a[] (N/2 - 1) and to clear the own 2x2 block (N), and the rest (~110)
 * for indices, predicates, votes and control: ~415 warp instructions for
 * 9 N^2 = 9.2 kflop. Double: 842 per iteration (fewer FP instructions with
 * scaled columns, two per shuffle and per picking select). One sweep is
 * N - 1 = 31 steps.
 * Measured sweeps (the last partial one confirms convergence) for random matrices: 5.9 (float) /
 * 6.9 (double) at n = 32, 5.2 / 6.1 at n = 16; graded spectra 1 .. eps take
 * 7.8 / 11.6 at n = 32, clustered ones ~1.
 *
 * Latency. Each step is a chain pick -> shuffle -> rotation -> shared memory
 * -> updates, and 1024 matrices give an H200 only 2 warps per scheduler to
 * hide it. So the loop is built to be one straight run of code: two steps an
 * iteration with one convergence vote, the rotation branch-free with two
 * reciprocal square roots in a row (no division, no library call), the
 * schedule read from a table. Double uses scaled columns (Scale below: one
 * FMA per entry instead of a multiply and an FMA) and seeds its reciprocal
 * square roots with the double-precision approximation (no conversions in
 * the chain). Each lane keeps a_LL in its own register (nothing to pick or
 * set for it); the reciprocal square roots take one second-order correction
 * (Prec); only the owners publish the rotations, by predicated stores
 * (publish_if); negations are integer sign flips and the own coefficient is
 * read by address. The double kernel is limited by fixed-latency
 * dependencies and the FP64 pipe, not by shared memory or shuffles. What each
 * change gained, and what did not pay (register caps, coefficients formed
 * early, smaller blocks): bench/README.md, "Measurements moved from code
 * comments".
 *
 * Convergence. The matrix is first scaled by 2^-e (exact), 2^e >= max|a_ij|
 * > 2^(e-1), which keeps the rotation arithmetic clear of over/underflow.
 * The pair (p, q) is rotated only if
 *   |a_pq| > max(eps * sqrt|a_pp a_qq|, eps)       (scaled matrix)
 * Demmel-Veselic's relative test, with a floor of eps * max|a_ij| that is
 * harmless to the backward error (LAPACK's ratios) and stops rank-deficient
 * or graded matrices from chasing rounding noise below it. A group has
 * converged once no pair can pass the test: after N - 1 consecutive steps
 * without a rotation (every pair visited), or earlier when a quiet step finds
 * every off-diagonal entry <= eps. A warp stops when all its groups have
 * converged, or after kMaxSweeps sweeps (info = 1).
 */
#include "jacobi_common.cuh"

namespace gstat_cu {
namespace {

constexpr int kWarpsPerBlock = 4;

/* What a step publishes per pair (shared memory). Every lane's row and
 * column updates read (x, y) of every pair, loaded as one vector: the
 * rotation's (c, s), or with scaled columns (Scale) the coefficients
 * (alpha, beta). The pair's own two lanes also read delta, c and 1 / c. */
template <typename T>
struct alignas(16) Published {
  T x, y, delta, c, rc;
};

/* Eigenvector L is column L of V, whose entries the lanes hold (lane i has
 * V[i, index_at(j, t)] in v[j], to be multiplied by lane L's scale): transpose
 * it through shared memory, fix its sign, put it at column `rank`, store coalesced (Vb == NULL:
 * store nothing; failed: store NaN). Returns whether this lane stored only finite values. */
template <typename S, typename T, int N>
__device__ __forceinline__ bool store_vectors(const T (&v)[N], T scale, int t, T (&st)[N][N + 1],
                                              int n, int L, int rank, bool failed,
                                              S *__restrict__ Vb) {
#pragma unroll
  for (int j = 0; j < N; ++j) st[Ring<N>::index_at(j, t)][L] = v[j];
  __syncwarp();
  T col[N];
  T best = -1, bestval = 0; /* first entry of largest magnitude, as the CPU scans */
#pragma unroll
  for (int i = 0; i < N; ++i) {
    col[i] = st[L][i] * scale;
    if (i < n && fabs(col[i]) > best) {
      best = fabs(col[i]);
      bestval = col[i];
    }
  }
  const T sign = failed ? quiet_nan<T>() : bestval < 0 ? T(-1) : T(1);
  __syncwarp();
  if (L < n)
#pragma unroll
    for (int i = 0; i < N; ++i) st[rank][i] = sign * col[i];
  __syncwarp();
  bool ok = true;
  if (Vb && L < n)
    for (int j = 0; j < n; ++j) {
      put(Vb + L + (int64_t)j * n, st[j][L]);
      ok = ok && finite_as<S>(st[j][L]);
    }
  return ok;
}

/* *dst = v where p, as predicated shared-memory stores: no branch splits the
 * step (an `if` compiles to one), and the lanes that do not publish store
 * nothing. (They once stored to one sink slot instead, whose stores
 * conflicted: bench/README.md, "Measurements moved from code comments".) */
__device__ __forceinline__ void publish_if(bool p, Published<double> *dst,
                                           const Published<double> &v) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile(
      "{.reg .pred q; setp.ne.u32 q, %0, 0;\n\t"
      "@q st.shared.v2.f64 [%1], {%2, %3};\n\t"
      "@q st.shared.v2.f64 [%1+16], {%4, %5};\n\t"
      "@q st.shared.f64 [%1+32], %6;}" ::"r"((unsigned)p),
      "r"(a), "d"(v.x), "d"(v.y), "d"(v.delta), "d"(v.c), "d"(v.rc)
      : "memory");
}
__device__ __forceinline__ void publish_if(bool p, Published<float> *dst,
                                           const Published<float> &v) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile(
      "{.reg .pred q; setp.ne.u32 q, %0, 0;\n\t"
      "@q st.shared.v4.f32 [%1], {%2, %3, %4, %5};\n\t"
      "@q st.shared.f32 [%1+16], %6;}" ::"r"((unsigned)p),
      "r"(a), "f"(v.x), "f"(v.y), "f"(v.delta), "f"(v.c), "f"(v.rc)
      : "memory");
}

/* The schedule as a table, so that a step finds its position and partner
 * with one shared-memory load (the index arithmetic of Ring compiles to
 * branches, which would cut the unrolled steps into pieces): at[t][L] =
 * (position of index L) << 8 | (index at the neighbouring position) after t
 * steps. Filled once per block. */
template <int N>
struct Schedule {
  uint16_t at[N - 1][N];
  __device__ void fill() {
    for (int e = threadIdx.x; e < (N - 1) * N; e += blockDim.x) {
      const int t = e / N, x = e % N, pos = Ring<N>::position_of(x, t);
      at[t][x] = (uint16_t)(pos << 8 | Ring<N>::index_at(pos ^ 1, t));
    }
  }
};

/* Scaled columns (double only). A rotation costs 4 flops per entry pair in
 * A's rows, A's columns and V's columns, a multiply and an FMA each. Keeping
 * A = D B D and V = U D with D = diag(sigma) instead, and giving both of a
 * pair's indices the factor c (sigma_p, sigma_q *= c), leaves on B and U the
 * transform [1 beta; -alpha 1] with alpha = t sigma_q / sigma_p and
 * beta = t sigma_p / sigma_q: one FMA per entry (the "fast rotations" of
 * Golub & Van Loan 5.1.13, errors within a factor sqrt 2 of the plain ones).
 * The rotation itself is still computed from A's true entries. sigma only
 * shrinks, by c >= 1/sqrt 2 per rotation, so after the at most 20 * 31 steps
 * sigma^2 >= 2^-620 and |B| <= 2^620: in double's range without ever
 * rescaling, not in float's. Lane L keeps sigma_L and 1/sigma_L. */
template <typename T>
struct Scale {
  T sig = 1, isig = 1;
};

/* One parallel step: every group rotates its N/2 pairs. diag is A's
 * diagonal entry a_LL, kept in a register of its own and updated by the
 * exact formula (Rutishauser's a_pp -= t a_pq, a_qq += t a_pq): the stale
 * copy in a[] only feeds the pair's own block, which is cleared, so nothing
 * is selected or set for it. k is
 * the position of this lane's index L, t the step modulo N - 1, partner the
 * lane holding L's partner; all three advance to the next step (from sched).
 * rots: this step's slots (the two steps of a loop iteration use different
 * ones, so one __syncwarp a step suffices). Returns whether this lane
 * computed a rotation. */
template <typename T, int N, bool WANT_V>
__device__ __forceinline__ bool jacobi_step(T (&a)[N], T (&v)[N], T &diag, Scale<T> &sc, int &k,
                                            int &t, int &partner, int L, int gbase,
                                            const Schedule<N> &sched, Published<T> *rots) {
  constexpr bool scaled = Prec<T>::scaled;
  const bool top = (k & 1) == 0; /* (p, q) = (L, partner); only top lanes rotate */
  const T pdiag = __shfl_sync(kFullMask, diag, partner);
  T off = pick_odd(a, k), psig = 1, pisig = 1; /* a_PL at top lanes (B's entry when scaled) */
  if constexpr (scaled) {
    psig = __shfl_sync(kFullMask, sc.sig, partner);
    pisig = __shfl_sync(kFullMask, sc.isig, partner);
    off *= sc.sig * psig;
  }
  /* The partner's column, fetched before the rotation math so that the
   * shuffles overlap its latency. */
  T y[N];
#pragma unroll
  for (int i = 0; i < N; ++i) y[i] = __shfl_sync(kFullMask, a[i], partner);
  const int mine = k >> 1; /* my pair's slot */
  Rotation<T> r;
  const bool rotated = jacobi_rotation(diag, pdiag, off, r) && top; /* bottom lanes: unused */
  /* the sigma ratios are ready before t: one multiply after it */
  const T cx = scaled ? r.t * (psig * sc.isig) : r.c, cy = scaled ? r.t * (sc.sig * pisig) : r.s;
  publish_if(top, &rots[mine], Published<T>{cx, cy, r.delta, r.c, r.rc});
  __syncwarp();
  /* A J: column p' = c col_p - s col_q, column q' = s col_p + c col_q
   * (scaled: col_p - alpha col_q and col_q + beta col_p); the diagonal
   * a_pp -= delta, a_qq += delta. The top lane's coefficient is read by
   * address and both negations are integer sign flips: no select, and no
   * double-precision add queued with the rotation's arithmetic. */
  const int sign = top ? INT32_MIN : 0;
  const Published<T> &own = rots[mine];
  const T coef = with_sign_flipped(scaled && top ? own.x : own.y, sign);
  if constexpr (scaled) {
#pragma unroll
    for (int i = 0; i < N; ++i) a[i] = fma(coef, y[i], a[i]);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) a[i] = fma(own.x, a[i], coef * y[i]);
  }
  diag += with_sign_flipped(own.delta, sign);
  if constexpr (scaled) {
    sc.sig *= own.c;
    /* 1/sigma by a Newton step from the old one times 1/c: to an ulp every
     * step. (Only multiplying by 1/c drifts by an ulp a step, and alpha and
     * beta would then disagree on sigma: rotations orthogonal to 1e-12.) */
    sc.isig *= own.rc;
    sc.isig = fma(sc.isig, fma(-sc.sig, sc.isig, T(1)), sc.isig);
  }
  /* J^T (A J) on the rows, V J on the columns: the same 2x2 transforms. The
   * pair's own block is cleared: its off-diagonal entry becomes 0 (see
   * clear_if), so rounding noise cannot keep a converged pair rotating, and
   * the stale diagonal copy with it, which saves a select. */
#pragma unroll
  for (int m = 0; m < N / 2; ++m) {
    const T x = rots[m].x, y = rots[m].y;
    transform_pair<scaled>(x, y, a[2 * m], a[2 * m + 1]);
    clear_if(a[2 * m], m == mine);
    clear_if(a[2 * m + 1], m == mine);
    if constexpr (WANT_V) transform_pair<scaled>(x, y, v[2 * m], v[2 * m + 1]);
  }
  ring_advance(a);
  if constexpr (WANT_V) ring_advance(v);
  t = t == N - 2 ? 0 : t + 1;
  const unsigned next = sched.at[t][L];
  k = (int)(next >> 8);
  partner = gbase + (int)(next & 0xffu);
  return rotated;
}

template <typename T, int N>
struct WarpSmem {
  static_assert((N & (N - 1)) == 0, "groups tile a warp; pick_odd halves N");
  T stage[32 / N][N][N + 1]; /* [group][col][row]: one matrix, padded ld */
  /* per pair, double-buffered by step parity */
  Published<T> rot[2][32 / N][N / 2];
};

/* S: the storage type of A, W and V (bf16 is read and written as such, the
 * work is in float); T: the compute type. */
template <typename S, typename T, int N, bool WANT_V>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, 1)
    eigh_jacobi_kernel(const S *__restrict__ A, int uplo, int n, int64_t batch, S *__restrict__ W,
                       S *__restrict__ V, int *__restrict__ info, int *__restrict__ flags) {
  constexpr int G = 32 / N;
  __shared__ WarpSmem<T, N> smem[kWarpsPerBlock];
  __shared__ Schedule<N> sched;
  sched.fill();
  __syncthreads(); /* before any warp leaves */

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / N, L = lane % N, gbase = g * N;
  const int64_t b0 = ((int64_t)blockIdx.x * kWarpsPerBlock + warp) * G;
  if (b0 >= batch) return; /* whole warp idle */
  const int64_t b = b0 + g;
  const bool live = b < batch; /* dead groups run on zeros and store nothing */
  WarpSmem<T, N> &sm = smem[warp];
  T(&st)[N][N + 1] = sm.stage[g];
  const int64_t nn = (int64_t)n * n;

  /* Load: coalesced column reads into shared memory, then lane L takes column
   * L, mirroring the uplo triangle (the other one is never used). */
  if (live && L < n)
    for (int j = 0; j < n; ++j) st[j][L] = widen(A[b * nn + L + (int64_t)j * n]);
  __syncwarp();
  T a[N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const bool stored = uplo == 0 ? i >= L : i <= L; /* (i, L) lies in the read triangle */
    a[i] = live && i < n && L < n ? (stored ? st[L][i] : st[i][L]) : T(0);
  }

  /* Scale by a power of two so that max|a_ij| is in [0.5, 1). */
  T amax = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) amax = fmax(amax, fabs(a[i]));
#pragma unroll
  for (int o = N / 2; o > 0; o >>= 1) amax = fmax(amax, __shfl_xor_sync(kFullMask, amax, o));
  int e = 0;
  if (amax > 0 && isfinite(amax)) frexp(amax, &e);
#pragma unroll
  for (int i = 0; i < N; ++i) a[i] = ldexp(a[i], -e);

  T diag = a[0]; /* a_LL: a[L], picked with a static index */
#pragma unroll
  for (int i = 1; i < N; ++i) diag = i == L ? a[i] : diag;

  T v[N]; /* unused (and optimized away) without WANT_V */
  if constexpr (WANT_V) {
#pragma unroll
    for (int j = 0; j < N; ++j) v[j] = j == L ? T(1) : T(0);
  }

  const unsigned gmask = (unsigned)(((1ull << N) - 1) << gbase);
  int k = L; /* position of index L */
  int t = 0; /* steps taken, modulo the schedule's period N - 1 */
  int partner = gbase + (int)(sched.at[0][L] & 0xffu);
  Scale<T> sc;   /* stays 1 unless Prec<T>::scaled */
  int quiet = 0; /* consecutive steps without a rotation in this group */
  bool converged = false;
  /* Two steps an iteration, convergence checked after both: one straight
   * run of code for the scheduler, half the votes and loop control. */
  static_assert(kMaxSweeps * (N - 1) % 2 == 0, "whole iterations");
  for (int step = 0; step < kMaxSweeps * (N - 1); step += 2) {
    bool rotated =
        jacobi_step<T, N, WANT_V>(a, v, diag, sc, k, t, partner, L, gbase, sched, sm.rot[0][g]);
    rotated =
        jacobi_step<T, N, WANT_V>(a, v, diag, sc, k, t, partner, L, gbase, sched, sm.rot[1][g]) ||
        rotated;
    /* Converged: no pair can pass the test any more, so the matrix stops
     * changing. Any N - 1 consecutive steps visit every pair once, so N - 1
     * quiet steps prove it; a quiet iteration also checks the cheaper
     * sufficient condition "every off-diagonal entry <= eps" (the test's
     * floor), which usually saves that last confirming sweep. */
    quiet = (__ballot_sync(kFullMask, rotated) & gmask) ? 0 : quiet + 2;
    if (__any_sync(kFullMask, quiet > 0 && !converged)) {
      bool small = true;
      const T bound = Prec<T>::eps * sc.isig; /* |a_i| sigma <= eps */
#pragma unroll
      for (int i = 0; i < N; ++i) small &= (i == k) | (fabs(a[i]) <= bound);
      const unsigned big = __ballot_sync(kFullMask, !small);
      converged = converged || (big & gmask) == 0;
    }
    converged = converged || quiet >= N - 1;
    if (__all_sync(kFullMask, converged)) break;
  }

  const T lambda = ldexp(diag, e); /* eigenvalue L */
  int rank = 0;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const T other = __shfl_sync(kFullMask, lambda, gbase + j);
    rank += j < n && before(other, j, lambda, L);
  }
  /* An element that did not converge is stored as NaN. */
  const bool failed = !converged;
  if (live && L < n) put(W + b * n + rank, failed ? quiet_nan<T>() : lambda);
  bool ok = !failed && (L >= n || finite_as<S>(lambda));
  if constexpr (WANT_V)
    ok =
        store_vectors<S, T, N>(v, sc.sig, t, st, n, L, rank, failed, live ? V + b * nn : nullptr) &&
        ok;
  const bool group_ok = (__ballot_sync(kFullMask, !ok) & gmask) == 0;
  if (live && L == 0) {
    info[b] = failed ? 1 : 0;
    if (flags) flags[b] = group_ok ? 0 : 2;
  }
}

template <typename S, typename T, int N>
void launch_jacobi(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                   int *flags, cudaStream_t stream) {
  launch_over_batch<S>(V ? eigh_jacobi_kernel<S, T, N, true> : eigh_jacobi_kernel<S, T, N, false>,
                       kWarpsPerBlock * (32 / N), 32 * kWarpsPerBlock, A, uplo, n, batch, W, V,
                       info, flags, stream);
}

template <typename S, typename T>
void launch_jacobi_n(const void *A, int uplo, int n, int64_t batch, void *W, void *V, int *info,
                     int *flags, cudaStream_t stream) {
  if (n <= 4)
    launch_jacobi<S, T, 4>(A, uplo, n, batch, W, V, info, flags, stream);
  else if (n <= 8)
    launch_jacobi<S, T, 8>(A, uplo, n, batch, W, V, info, flags, stream);
  else if (n <= 16) {
    if constexpr (Prec<T>::scaled) /* double: the pair kernel was slower */
      launch_jacobi<S, T, 16>(A, uplo, n, batch, W, V, info, flags, stream);
    else /* each rotation computed once (eigh_jacobi_pairs.cu) */
      launch_jacobi_pairs<S>(A, uplo, n, batch, W, V, info, flags, stream);
  } else
    launch_jacobi<S, T, 32>(A, uplo, n, batch, W, V, info, flags, stream);
}

} /* namespace */
} /* namespace gstat_cu */

extern "C" cudaError_t gstat_cu_eigh_jacobi(int dtype, const void *A, int uplo, int64_t n,
                                            int64_t batch, void *W, void *V, int *info, int *flags,
                                            cudaStream_t stream) {
  using namespace gstat_cu;
  if (!valid_dtype(dtype) || (uplo != 0 && uplo != 1) || n < 0 || n > GSTAT_CU_JACOBI_MAX_N ||
      batch < 0)
    return cudaErrorInvalidValue;
  if (n == 0 || batch == 0) return cudaSuccess;
  if (!A || !W || !info) return cudaErrorInvalidValue;
  if (n > 32) return eigh_jacobi_block(dtype, A, uplo, (int)n, batch, W, V, info, flags, stream);
  if (dtype == kF32)
    launch_jacobi_n<float, float>(A, uplo, (int)n, batch, W, V, info, flags, stream);
  else if (dtype == kF64)
    launch_jacobi_n<double, double>(A, uplo, (int)n, batch, W, V, info, flags, stream);
  else
    launch_jacobi_n<bf16, float>(A, uplo, (int)n, batch, W, V, info, flags, stream);
  return cudaGetLastError();
}
