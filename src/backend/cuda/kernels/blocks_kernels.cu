/* Block kernels of the sparse eigensolver (blocks_kernels.h). */
#include "backend/cuda/kernels/blocks_kernels.h"

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

__global__ void dots_kernel(int64_t n, const double *X, int64_t ldx, const double *Y, int64_t ldy,
                            double *out) {
  __shared__ double part[THREADS];
  int c = blockIdx.x;
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += THREADS) acc += X[i + c * ldx] * Y[i + c * ldy];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) { /* a fixed tree: the same sum every call */
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[c] = part[0];
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
                                     const double *Y, int64_t ldy, double *out,
                                     cudaStream_t stream) {
  if (m <= 0) return cudaSuccess;
  dots_kernel<<<(unsigned)m, THREADS, 0, stream>>>(n, X, ldx, Y, ldy, out);
  return cudaGetLastError();
}

extern "C" cudaError_t gstat_cu_diag_times(int64_t n, int64_t m, const double *p, const double *X,
                                           int64_t ldx, double *Y, int64_t ldy,
                                           cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaSuccess;
  diag_times_kernel<<<dim3(row_blocks(n), (unsigned)m), THREADS, 0, stream>>>(n, p, X, ldx, Y, ldy);
  return cudaGetLastError();
}
