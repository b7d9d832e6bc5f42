/* Block kernels of the sparse eigensolver (blocks_kernels.h). */
#include "backend/cuda/kernels/blocks_kernels.h"
#include "backend/cuda/kernels/common.cuh"

namespace {

constexpr int THREADS = 256;

struct coefficients {
  double g[GSTAT_CU_LINCOMB_COLS], a[GSTAT_CU_LINCOMB_COLS], b[GSTAT_CU_LINCOMB_COLS];
};

/* grid: (row blocks, columns) */
__global__ void lincomb_kernel(int64_t n, double *Z, int64_t ldz, const double *X, int64_t ldx,
                               const double *Y, int64_t ldy, bool keep, coefficients k) {
  int c = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double v = keep ? k.g[c] * Z[i + c * ldz] : 0.0;
    if (X) v += k.a[c] * X[i + c * ldx];
    if (Y) v += k.b[c] * Y[i + c * ldy];
    Z[i + c * ldz] = v;
  }
}

/* Part b of column c: rows [b chunk, (b + 1) chunk) summed by a fixed tree
 * into part[c * parts + b]; a second launch sums the parts the same way.
 * parts and chunk depend on n only: the same sum every call. */
__global__ void dots_parts_kernel(int64_t n, int64_t chunk, const double *X, int64_t ldx,
                                  const double *Y, int64_t ldy, double *part) {
  __shared__ double red[THREADS];
  const int c = blockIdx.y;
  const int64_t lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  double acc = 0;
  for (int64_t i = lo + threadIdx.x; i < hi; i += THREADS) acc += X[i + c * ldx] * Y[i + c * ldy];
  const double sum = gstat_cu::block_tree_sum<THREADS>(acc, red);
  if (threadIdx.x == 0) part[(int64_t)c * gridDim.x + blockIdx.x] = sum;
}

__global__ void dots_finish_kernel(int parts, const double *part, double *out) {
  __shared__ double red[THREADS];
  const int c = blockIdx.x;
  double acc = 0;
  for (int i = threadIdx.x; i < parts; i += THREADS) acc += part[(int64_t)c * parts + i];
  const double sum = gstat_cu::block_tree_sum<THREADS>(acc, red);
  if (threadIdx.x == 0) out[c] = sum;
}

/* Parts per column: enough blocks to fill the device for one column, each
 * at least 8 rows a thread. */
int64_t dots_parts(int64_t n) {
  const int64_t per = 8 * (int64_t)THREADS, parts = (n + per - 1) / per;
  return parts < 1 ? 1 : parts > GSTAT_CU_DOTS_PARTS ? GSTAT_CU_DOTS_PARTS : parts;
}

__global__ void diag_times_kernel(int64_t n, const double *p, const double *X, int64_t ldx,
                                  double *Y, int64_t ldy) {
  int c = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    Y[i + c * ldy] = p[i] * X[i + c * ldx];
}

unsigned row_blocks(int64_t n) {
  int64_t blocks = (n + THREADS - 1) / THREADS;
  return (unsigned)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

/* Y = diag(p) X - A X on row-major n x m blocks (ld m), A in CSR: G lanes
 * per row, lane c owning column c (+ G, ...). The group loads G of the
 * row's stored entries at a time (one coalesced read) and passes them
 * around by shuffles; each (row, column) sums in one lane in stored order,
 * so the result is the same every call. */
template <typename I, int G>
__global__ void __launch_bounds__(THREADS)
    csr_rows_kernel(int64_t n, int m, const I *__restrict__ off, const I *__restrict__ idx,
                    const double *__restrict__ val, const double *__restrict__ p,
                    const double *__restrict__ X, double *__restrict__ Y) {
  const int lane = threadIdx.x % G;
  const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) / G;
  if (row >= n) return; /* whole groups leave together */
  const unsigned mask = G == 32 ? 0xffffffffu : ((1u << G) - 1) << (threadIdx.x % 32 / G * G);
  const int64_t e0 = off[row], e1 = off[row + 1];
  for (int c0 = 0; c0 < m; c0 += G) {
    const int c = c0 + lane;
    double acc = 0;
    for (int64_t e = e0; e < e1; e += G) {
      const int cnt = e1 - e < G ? (int)(e1 - e) : G;
      const int64_t jl = lane < cnt ? (int64_t)idx[e + lane] : 0;
      const double vl = lane < cnt ? val[e + lane] : 0.0;
      for (int t = 0; t < cnt; ++t) {
        const int64_t j = __shfl_sync(mask, jl, t, G);
        const double v = __shfl_sync(mask, vl, t, G);
        if (c < m) acc += v * X[j * m + c];
      }
    }
    if (c < m) Y[row * m + c] = p[row] * X[row * m + c] - acc;
  }
}

template <typename I, int G>
void launch_csr_rows(int64_t n, int m, const void *off, const void *idx, const double *val,
                     const double *p, const double *X, double *Y, cudaStream_t stream) {
  const int64_t blocks = (n * G + THREADS - 1) / THREADS;
  csr_rows_kernel<I, G><<<(unsigned)blocks, THREADS, 0, stream>>>(
      n, m, static_cast<const I *>(off), static_cast<const I *>(idx), val, p, X, Y);
}

template <typename I>
void csr_rows(int64_t n, int m, const void *off, const void *idx, const double *val,
              const double *p, const double *X, double *Y, cudaStream_t stream) {
  if (m <= 4)
    launch_csr_rows<I, 4>(n, m, off, idx, val, p, X, Y, stream);
  else if (m <= 8)
    launch_csr_rows<I, 8>(n, m, off, idx, val, p, X, Y, stream);
  else if (m <= 16)
    launch_csr_rows<I, 16>(n, m, off, idx, val, p, X, Y, stream);
  else
    launch_csr_rows<I, 32>(n, m, off, idx, val, p, X, Y, stream);
}

}  // namespace

extern "C" cudaError_t gstat_cu_lincomb(int64_t n, int64_t m, double *Z, int64_t ldz,
                                        const double *X, int64_t ldx, const double *Y, int64_t ldy,
                                        const double *g, const double *a, const double *b,
                                        cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  if (m > GSTAT_CU_LINCOMB_COLS) return cudaErrorInvalidValue;
  coefficients k;
  for (int64_t c = 0; c < m; c++) {
    k.g[c] = g ? g[c] : 0.0;
    k.a[c] = X ? a[c] : 0.0;
    k.b[c] = Y ? b[c] : 0.0;
  }
  lincomb_kernel<<<dim3(row_blocks(n), (unsigned)m), THREADS, 0, stream>>>(n, Z, ldz, X, ldx, Y,
                                                                           ldy, g != nullptr, k);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_dots(int64_t n, int64_t m, const double *X, int64_t ldx,
                                     const double *Y, int64_t ldy, double *out, double *scratch,
                                     cudaStream_t stream) {
  if (m <= 0) return cudaSuccess;
  if (m > 65535) return cudaErrorInvalidValue;
  const int64_t parts = dots_parts(n), chunk = (n + parts - 1) / parts;
  dots_parts_kernel<<<dim3((unsigned)parts, (unsigned)m), THREADS, 0, stream>>>(
      n, chunk > 0 ? chunk : 1, X, ldx, Y, ldy, scratch);
  dots_finish_kernel<<<(unsigned)m, THREADS, 0, stream>>>((int)parts, scratch, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_diag_times(int64_t n, int64_t m, const double *p, const double *X,
                                           int64_t ldx, double *Y, int64_t ldy,
                                           cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  diag_times_kernel<<<dim3(row_blocks(n), (unsigned)m), THREADS, 0, stream>>>(n, p, X, ldx, Y, ldy);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_csr_rows(int64_t n, int64_t m, int narrow, const void *off,
                                         const void *idx, const double *val, const double *p,
                                         const double *X, double *Y, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  if (m > INT32_MAX || n > INT64_MAX / 32) return cudaErrorInvalidValue;
  if (narrow)
    csr_rows<int32_t>(n, (int)m, off, idx, val, p, X, Y, stream);
  else
    csr_rows<int64_t>(n, (int)m, off, idx, val, p, X, Y, stream);
  return cudaGetLastError();
}
