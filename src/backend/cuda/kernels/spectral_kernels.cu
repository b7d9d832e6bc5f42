/* Batch spectral clustering of dense graphs on the device (spectral_cuda.c
 * drives them): Laplacians with components (a block per graph), then the
 * per-graph assignment (a thread per graph) by the very code the CPU engine
 * runs (src/spectral/assign_impl.h). Compiled without FMA contraction, as the
 * CPU build, so degrees, Laplacians and k-means decisions round the same. */
#include "common.cuh"
#include "graph/weights_impl.h"
#include "spectral/assign_impl.h"

namespace gstat_cu {
namespace {

constexpr int kLapThreads = 256;

template <typename TI>
struct adjacency {
  const TI *a;
  int64_t rs, cs;
  int sym, drop_loops;
  __device__ double lo(int64_t i, int64_t j) const {
    return (double)a[i * rs + j * cs];
  }
  /* symmetrized entry (i, j), 0 on the diagonal under DROP */
  __device__ double at(int64_t i, int64_t j) const {
    if (i == j) return drop_loops ? 0.0 : lo(i, i);
    return i > j ? gstat_i_sym_pair(sym, lo(i, j), lo(j, i))
                 : gstat_i_sym_pair(sym, lo(j, i), lo(i, j));
  }
};

/* One block per graph: validation (finite weights >= 0, CHECK's symmetry
 * tolerance: *bad = 1 otherwise), degrees (column sums, in row order as the
 * CPU), components by min-label propagation, then the Laplacian (the CPU's
 * formulas and operation order; SYMMETRIC for both normalized kinds) into L,
 * padded past the graph's n to N with a decoupled diagonal `pad` above the
 * spectrum (so the eigenvectors of the real block come first). */
template <typename TI, typename TL>
__global__ void __launch_bounds__(kLapThreads)
    laplacian_kernel(const TI *__restrict__ A, int64_t N, int64_t bs, int64_t rs, int64_t cs,
                     const int64_t *__restrict__ sizes, int sym, int drop_loops, int kind,
                     double eps, TL *__restrict__ L, double *__restrict__ deg,
                     int64_t *__restrict__ comps, int *__restrict__ bad) {
  extern __shared__ int lab[]; /* N */
  __shared__ double maxdeg;
  const int64_t g = blockIdx.x, n = sizes[g];
  adjacency<TI> adj = {A + g * bs, rs, cs, sym, drop_loops};
  double *d = deg + g * N;
  TL *Lg = L + g * N * N;
  int badness = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
      double lo = adj.lo(i, j), up = adj.lo(j, i);
      if (!(lo >= 0 && lo <= DBL_MAX && up >= 0 && up <= DBL_MAX)) badness = 1;
      if (sym == GSTAT_SYM_CHECK && !gstat_i_sym_agree(lo, up, eps)) badness = 1;
      s += adj.at(i, j);
    }
    d[j] = s;
    lab[j] = (int)j;
  }
  if (threadIdx.x == 0) maxdeg = 0;
  if (__syncthreads_or(badness)) {
    if (threadIdx.x == 0) atomicOr(bad, 1);
    return;
  }
  if (threadIdx.x == 0)
    for (int64_t j = 0; j < n; j++) maxdeg = d[j] > maxdeg ? d[j] : maxdeg;
  /* components: every node takes its neighbours' smallest label until none moves */
  for (;;) {
    int moved = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      int m = lab[i];
      for (int64_t j = 0; j < n; j++)
        if (j != i && lab[j] < m && adj.at(i, j) > 0) m = lab[j];
      if (m < lab[i]) {
        lab[i] = m;
        moved = 1;
      }
    }
    if (!__syncthreads_or(moved)) break;
  }
  if (threadIdx.x == 0) { /* the loop's last barrier made every label final */
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) c += lab[i] == (int)i;
    comps[g] = c;
  }
  const double pad = kind == GSTAT_LAPLACIAN_UNNORMALIZED ? 2 * maxdeg + 1 : 3.0;
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
    TL *col = Lg + j * N;
    if (j >= n) {
      for (int64_t i = 0; i < N; i++) col[i] = (TL)(i == j ? pad : 0.0);
      continue;
    }
    double dj = d[j];
    for (int64_t i = 0; i < N; i++) {
      double v = 0;
      if (i < n) /* SYMMETRIC for both normalized kinds (the embedding's) */
        v = gstat_i_laplacian_entry(
            kind == GSTAT_LAPLACIAN_UNNORMALIZED ? kind : GSTAT_LAPLACIAN_SYMMETRIC, adj.at(i, j),
            i == j, d[i], dj);
      col[i] = (TL)v;
    }
  }
}

/* One thread per graph: the CPU engine's assignment (assign_impl.h) from the
 * first m eigenpairs, in double. meta: sizes, k, eigh info, per graph. */
template <typename TV>
__global__ void assign_kernel(gstat_spectral_options o, int64_t count, int64_t N,
                              const TV *__restrict__ V, const TV *__restrict__ W,
                              const double *__restrict__ deg, const int64_t *__restrict__ meta,
                              const int64_t *__restrict__ comps, int64_t mmax,
                              double *__restrict__ scratch, int64_t per,
                              int64_t *__restrict__ labels, double *__restrict__ eig,
                              int64_t *__restrict__ out, double *__restrict__ inertia) {
  const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= count) return;
  const int64_t n = meta[g], k = meta[count + g], info = meta[2 * count + g];
  gstat_i_sc_rec r = {};
  r.comps = comps[g];
  const int64_t m = gstat_i_sc_eig_count_impl(&o, n, k);
  double *Vd = scratch + g * per, *wd = Vd + n * mmax, *E = wd + mmax, *work = E + n * mmax;
  const TV *Vg = V + g * N * N, *Wg = W + g * N;
  for (int64_t c = 0; c < m; c++) {
    wd[c] = (double)Wg[c];
    for (int64_t i = 0; i < n; i++) Vd[i + c * n] = (double)Vg[i + c * N];
  }
  gstat_i_sc_assign_graph(&o, n, k, info, Vd, wd, deg + g * N, &r, labels + g * N, eig + g * mmax,
                          E, work);
  int64_t *o3 = out + 3 * g;
  o3[0] = r.k, o3[1] = r.iters, o3[2] = r.why;
  inertia[g] = r.inertia;
}

}  // namespace
}  // namespace gstat_cu

using namespace gstat_cu;

extern "C" cudaError_t gstat_cu_sc_laplacian(const void *A, int a_dtype, int64_t count, int64_t N,
                                             int64_t bs, int64_t rs, int64_t cs,
                                             const int64_t *sizes, int sym, int drop_loops,
                                             int kind, void *L, int l_dtype, double *deg,
                                             int64_t *comps, int *bad, cudaStream_t stream) {
  if (count < 0 || N < 0 || N > GSTAT_CU_SC_MAX_N || (a_dtype != kF32 && a_dtype != kF64) ||
      (l_dtype != kF32 && l_dtype != kF64))
    return cudaErrorInvalidValue;
  if (count == 0 || N == 0) return cudaSuccess;
  size_t smem = sizeof(int) * (size_t)N;
  dim3 grid((unsigned)count);
#define LAUNCH(TI, TL, EPS)                                      \
  laplacian_kernel<TI, TL><<<grid, kLapThreads, smem, stream>>>( \
      (const TI *)A, N, bs, rs, cs, sizes, sym, drop_loops, kind, EPS, (TL *)L, deg, comps, bad)
  if (a_dtype == kF64 && l_dtype == kF64)
    LAUNCH(double, double, 2.220446049250313e-16);
  else if (a_dtype == kF64)
    LAUNCH(double, float, 2.220446049250313e-16);
  else if (l_dtype == kF64)
    LAUNCH(float, double, 1.1920929e-7);
  else
    LAUNCH(float, float, 1.1920929e-7);
#undef LAUNCH
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_sc_assign(const gstat_spectral_options *o, int64_t count, int64_t N,
                                          int dtype, const void *V, const void *W,
                                          const double *deg, const int64_t *meta,
                                          const int64_t *comps, int64_t mmax, double *scratch,
                                          int64_t per, int64_t *labels, double *eig, int64_t *out,
                                          double *inertia, cudaStream_t stream) {
  if (!o || count < 0 || N < 0 || (dtype != kF32 && dtype != kF64)) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const int threads = 64;
  dim3 grid((unsigned)((count + threads - 1) / threads));
  if (dtype == kF64)
    assign_kernel<double><<<grid, threads, 0, stream>>>(*o, count, N, (const double *)V,
                                                        (const double *)W, deg, meta, comps, mmax,
                                                        scratch, per, labels, eig, out, inertia);
  else
    assign_kernel<float><<<grid, threads, 0, stream>>>(*o, count, N, (const float *)V,
                                                       (const float *)W, deg, meta, comps, mmax,
                                                       scratch, per, labels, eig, out, inertia);
  return cudaGetLastError();
}
