/* One float32 matrix: cuSOLVER's reduction, our tridiagonal step, cuSOLVER's back-transformation.
 */
#include "backend/cuda/sytrd_split.h"

#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/tridiag_step.h"

/* The device workspace, in bytes from its start. */
typedef struct {
  size_t d, e, tau, x, dinfo, solver_work, total;
  gstat_cu_tridiag_parts tri;
} layout;

static layout device_layout(int64_t n, int lwork) {
  layout l;
  size_t at = 0;
  l.d = gstat_cu_ws_part(&at, (size_t)n * sizeof(float));
  l.e = gstat_cu_ws_part(&at, (size_t)n * sizeof(float));
  l.tau = gstat_cu_ws_part(&at, (size_t)n * sizeof(float));
  l.x = gstat_cu_ws_part(&at, (size_t)(n * n) * sizeof(float)); /* the eigenvectors */
  l.dinfo = gstat_cu_ws_part(&at, sizeof(int));
  l.solver_work = gstat_cu_ws_part(&at, (size_t)lwork * sizeof(float));
  l.tri = gstat_cu_tridiag_parts_at(&at, n, 1, 1);
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

#define SOLVER(call, name) GSTAT_CU_LIB_STEP(call, CUSOLVER_STATUS_SUCCESS, name)

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
  double *sigma = (double *)(base + l.tri.sigma), *scratch = (double *)(base + l.tri.norms);
  int *dinfo = (int *)(base + l.dinfo);
  cudaError_t err;
  SOLVER(cusolverDnSetStream(a->solver, a->stream), "cuSOLVER stream");
  /* LAPACK's scaling of extreme magnitudes, which sytrd alone lacks */
  GSTAT_CU_STEP(gstat_cu_sytrd_scale(1, a->a, n, 1, scratch, sigma, a->stream), "scaling");
  SOLVER(cusolverDnSsytrd(a->solver, CUBLAS_FILL_MODE_LOWER, n32, a->a, n32, d, e, tau, work, lwork,
                          dinfo),
         "cusolverDnSsytrd");
  gstat_cu_tridiag_step_args t = {.cdt = 1,
                                  .n = n,
                                  .nb = 1,
                                  .d = d,
                                  .e = e,
                                  .base = base,
                                  .parts = l.tri,
                                  .w = a->w,
                                  .info = a->info,
                                  .X = X,
                                  .first_rank = a->k > 0 ? n - a->k : 0,
                                  .gap_tol = a->gap_tol,
                                  .host_flag = a->host_flag,
                                  .clusters = a->clusters,
                                  .stream = a->stream};
  err = gstat_cu_tridiag_step(&t, degenerate, what);
  if (err != cudaSuccess || *degenerate) return err;
  /* the wanted columns: all, or the top k (ormtr's work is k columns) */
  const int64_t cols = a->k > 0 ? a->k : n, skip = (n - cols) * n;
  SOLVER(cusolverDnSormtr(a->solver, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n32,
                          (int)cols, a->a, n32, tau, X + skip, n32, work, lwork, dinfo),
         "cusolverDnSormtr");
  GSTAT_CU_STEP(cudaMemcpyAsync(a->a + skip, X + skip, (size_t)(cols * n) * sizeof(float),
                                cudaMemcpyDeviceToDevice, a->stream),
                "copying the vectors");
  return cudaSuccess;
}
