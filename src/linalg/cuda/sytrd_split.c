/* One float32 matrix: cuSOLVER's reduction, our tridiagonal step, cuSOLVER's back-transformation.
 */
#include "linalg/cuda/sytrd_split.h"

#include "linalg/cuda/kernels/kernels.h"

/* The device workspace, in bytes from its start (256-byte aligned parts). */
typedef struct {
  size_t d, e, tau, x, wd, norms, sigma, zt, u, flags, dinfo, lwork, solver_work, total;
} layout;

static size_t part(size_t *at, size_t bytes) {
  size_t here = *at;
  *at += (bytes + 255) & ~(size_t)255;
  return here;
}

static layout device_layout(int64_t n, int lwork) {
  layout l;
  size_t at = 0, n2 = (size_t)(n * n);
  l.d = part(&at, (size_t)n * sizeof(float));
  l.e = part(&at, (size_t)n * sizeof(float));
  l.tau = part(&at, (size_t)n * sizeof(float));
  l.x = part(&at, n2 * sizeof(float)); /* the eigenvectors, back-transformed */
  l.wd = part(&at, (size_t)n * sizeof(double));
  l.norms = part(&at, 2 * sizeof(double));
  l.sigma = part(&at, sizeof(double));
  l.zt = part(&at, n2 * sizeof(double)); /* tridiagonal eigenvectors */
  l.u = part(&at, n2 * sizeof(double));  /* their bottom-up factors */
  l.flags = part(&at, 2 * sizeof(int));
  l.dinfo = part(&at, sizeof(int));
  l.lwork = (size_t)lwork;
  l.solver_work = part(&at, (size_t)lwork * sizeof(float));
  l.total = at;
  return l;
}

/* cuSOLVER's workspace (floats) for sytrd and ormtr of order n, or -1.
 * The queries read no data; every pointer is a (dummy) device address. */
static int solver_lwork(cusolverDnHandle_t h, int64_t n, const float *a) {
  int n32 = (int)n, l1 = 0, l2 = 0;
  if (cusolverDnSsytrd_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n32, a, n32, a, a, a, &l1) !=
          CUSOLVER_STATUS_SUCCESS ||
      cusolverDnSormtr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n32,
                                  n32, a, n32, a, a, n32, &l2) != CUSOLVER_STATUS_SUCCESS)
    return -1;
  return l1 > l2 ? l1 : l2;
}

int gstat_cu_sytrd_split_fits(int64_t n) {
  return n >= 2 && n <= GSTAT_CU_TRIDIAG_MAX_N;
}

size_t gstat_cu_sytrd_split_bytes(cusolverDnHandle_t solver, int64_t n, const float *a) {
  int lwork = solver_lwork(solver, n, a);
  return lwork < 0 ? 0 : device_layout(n, lwork).total;
}

#define STEP(call, name)                 \
  do {                                   \
    if ((err = (call)) != cudaSuccess) { \
      *what = (name);                    \
      return err;                        \
    }                                    \
  } while (0)
#define SOLVER(call, name)                   \
  do {                                       \
    if ((call) != CUSOLVER_STATUS_SUCCESS) { \
      *what = (name);                        \
      return cudaErrorUnknown;               \
    }                                        \
  } while (0)

cudaError_t gstat_cu_sytrd_split(const gstat_cu_sytrd_split_args *a, int *degenerate,
                                 const char **what) {
  const int64_t n = a->n;
  const int n32 = (int)n;
  *degenerate = 0;
  int lwork = gstat_cu_sytrd_split_fits(n) ? solver_lwork(a->solver, n, a->a) : -1;
  if (lwork < 0 || !a->host_flag) {
    *what = "arguments";
    return cudaErrorInvalidValue;
  }
  layout l = device_layout(n, lwork);
  char *base = a->work;
  float *d = (float *)(base + l.d), *e = (float *)(base + l.e), *tau = (float *)(base + l.tau);
  float *X = (float *)(base + l.x), *work = (float *)(base + l.solver_work);
  double *wd = (double *)(base + l.wd), *norms = (double *)(base + l.norms),
         *sigma = (double *)(base + l.sigma);
  int *flags = (int *)(base + l.flags), *dinfo = (int *)(base + l.dinfo);
  cudaError_t err;
  SOLVER(cusolverDnSetStream(a->solver, a->stream), "cuSOLVER stream");
  STEP(cudaMemsetAsync(a->info, 0, sizeof(int), a->stream), "clearing info");
  STEP(cudaMemsetAsync(flags, 0, 2 * sizeof(int), a->stream), "clearing flags");
  /* LAPACK's scaling of extreme magnitudes, which sytrd alone lacks */
  STEP(gstat_cu_sytrd_scale(1, a->a, n, 1, norms, sigma, a->stream),
       "scaling"); /* norms: scratch */
  SOLVER(cusolverDnSsytrd(a->solver, CUBLAS_FILL_MODE_LOWER, n32, a->a, n32, d, e, tau, work, lwork,
                          dinfo),
         "cusolverDnSsytrd");
  STEP(gstat_cu_tridiag_values(1, d, e, n, 1, sigma, wd, a->w, norms, a->info, a->stream),
       "bisection");
  STEP(gstat_cu_tridiag_vectors(1, d, e, n, 1, wd, norms, a->gap_tol, (double *)(base + l.zt),
                                (double *)(base + l.u), X, flags, a->stream),
       "tridiagonal eigenvectors");
  STEP(cudaMemcpyAsync(a->host_flag, flags + 1, sizeof(int), cudaMemcpyDeviceToHost, a->stream),
       "degenerate check");
  STEP(cudaStreamSynchronize(a->stream), "tridiagonal eigenvectors");
  if (*a->host_flag) {
    *degenerate = 1;
    return cudaSuccess;
  }
  SOLVER(cusolverDnSormtr(a->solver, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n32,
                          n32, a->a, n32, tau, X, n32, work, lwork, dinfo),
         "cusolverDnSormtr");
  STEP(cudaMemcpyAsync(a->a, X, (size_t)(n * n) * sizeof(float), cudaMemcpyDeviceToDevice,
                       a->stream),
       "copying the vectors");
  return cudaSuccess;
}
