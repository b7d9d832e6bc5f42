/* k-means kernels (kmeans_kernels.h); built with --fmad=false, as the CPU
 * computes each distance. */
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kmeans_kernels.h"
#include "spectral/assign_impl.h"

namespace {

constexpr int T = GSTAT_CU_KM_THREADS;

__global__ void dist_kernel(const double *X, int64_t n, int64_t dim, const double *c,
                            const double *closest, double *out, double *block_sums) {
  __shared__ double part[T];
  int64_t i = blockIdx.x * (int64_t)T + threadIdx.x;
  double d = 0;
  if (i < n) {
    d = gstat_i_sc_dist2(X + i * dim, c, dim);
    if (closest && !(d < closest[i])) d = closest[i];
    out[i] = d;
  }
  double s = gstat_cu::block_tree_sum<T>(d, part);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = s;
}

__global__ void assign_kernel(const double *X, int64_t n, int64_t dim, const double *centers,
                              int64_t k, int64_t *lab, double *dist, double *block_sums,
                              int *changed, int track) {
  extern __shared__ double cs[];
  __shared__ double part[T];
  for (int64_t t = threadIdx.x; t < k * dim; t += T) cs[t] = centers[t];
  __syncthreads();
  int64_t i = blockIdx.x * (int64_t)T + threadIdx.x;
  double best = 0;
  if (i < n) {
    const double *x = X + i * dim;
    int64_t arg = 0;
    best = gstat_i_sc_dist2(x, cs, dim);
    for (int64_t c = 1; c < k; c++) {
      double d = gstat_i_sc_dist2(x, cs + c * dim, dim);
      if (d < best) {
        best = d;
        arg = c;
      }
    }
    if (track && lab[i] != arg) *changed = 1;
    lab[i] = arg;
    dist[i] = best;
  }
  double s = gstat_cu::block_tree_sum<T>(best, part);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = s;
}

__global__ void partial_kernel(const double *X, int64_t n, int64_t dim, const int64_t *lab,
                               int64_t k, double *partial) {
  extern __shared__ double xs[]; /* T x dim points, then T labels */
  int64_t *ls = (int64_t *)(xs + T * dim);
  int64_t i0 = blockIdx.x * (int64_t)T, pts = n - i0 < T ? n - i0 : T;
  for (int64_t t = threadIdx.x; t < pts * dim; t += T) xs[t] = X[i0 * dim + t];
  if (threadIdx.x < pts) ls[threadIdx.x] = lab[i0 + threadIdx.x];
  __syncthreads();
  int64_t width = k * (dim + 1);
  for (int64_t t = threadIdx.x; t < width; t += T) {
    int64_t c = t / (dim + 1), a = t % (dim + 1);
    double acc = 0;
    for (int64_t p = 0; p < pts; p++)
      if (ls[p] == c) acc += a < dim ? xs[p * dim + a] : 1.0;
    partial[blockIdx.x * width + t] = acc;
  }
}

__global__ void sum_kernel(const double *in, int64_t count, int64_t width, double *out) {
  int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= width) return;
  double acc = 0;
  for (int64_t b = 0; b < count; b++) acc += in[b * width + c];
  out[c] = acc;
}

unsigned blocks_of(int64_t n) {
  return (unsigned)((n + T - 1) / T);
}

}  // namespace

extern "C" cudaError_t gstat_cu_km_dist(const double *X, int64_t n, int64_t dim, const double *c,
                                        const double *closest, double *out, double *block_sums,
                                        cudaStream_t stream) {
  dist_kernel<<<blocks_of(n), T, 0, stream>>>(X, n, dim, c, closest, out, block_sums);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_km_assign(const double *X, int64_t n, int64_t dim,
                                          const double *centers, int64_t k, int64_t *lab,
                                          double *dist, double *block_sums, int *changed, int track,
                                          cudaStream_t stream) {
  size_t shared = sizeof(double) * (size_t)(k * dim);
  assign_kernel<<<blocks_of(n), T, shared, stream>>>(X, n, dim, centers, k, lab, dist, block_sums,
                                                     changed, track);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_km_partial(const double *X, int64_t n, int64_t dim,
                                           const int64_t *lab, int64_t k, double *partial,
                                           cudaStream_t stream) {
  size_t shared = sizeof(double) * (size_t)(T * dim) + sizeof(int64_t) * T;
  partial_kernel<<<blocks_of(n), T, shared, stream>>>(X, n, dim, lab, k, partial);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_km_sum(const double *in, int64_t count, int64_t width, double *out,
                                       cudaStream_t stream) {
  sum_kernel<<<(unsigned)((width + 127) / 128), 128, 0, stream>>>(in, count, width, out);
  return cudaGetLastError();
}
