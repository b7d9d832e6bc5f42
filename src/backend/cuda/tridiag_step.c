/* The tridiagonal step both eigensolver drivers run (tridiag_step.h). */
#include "backend/cuda/tridiag_step.h"

#include "backend/cuda/kernels/kernels.h"

gstat_cu_tridiag_parts gstat_cu_tridiag_parts_at(size_t *at, int64_t n, int64_t nb, int want) {
  gstat_cu_tridiag_parts p;
  size_t v = want ? 1 : 0, n2 = (size_t)(n * n) * (size_t)nb;
  p.wd = gstat_cu_ws_part(at, (size_t)(n * nb) * sizeof(double));
  p.norms = gstat_cu_ws_part(at, (size_t)(2 * nb) * sizeof(double));
  p.sigma = gstat_cu_ws_part(at, (size_t)nb * sizeof(double));
  p.zt = gstat_cu_ws_part(at, v * n2 * sizeof(double));
  p.u = gstat_cu_ws_part(at, v * n2 * sizeof(double));
  p.flags = gstat_cu_ws_part(at, v * (size_t)(nb + 1) * sizeof(int));
  return p;
}

cudaError_t gstat_cu_tridiag_step(const gstat_cu_tridiag_step_args *a, int *degenerate,
                                  const char **what) {
  char *base = a->base;
  double *wd = (double *)(base + a->parts.wd), *norms = (double *)(base + a->parts.norms);
  const double *sigma = (const double *)(base + a->parts.sigma);
  int *flags = (int *)(base + a->parts.flags);
  cudaError_t err;
  *degenerate = 0;
  GSTAT_CU_STEP(cudaMemsetAsync(a->info, 0, sizeof(int) * (size_t)a->nb, a->stream),
                "clearing info");
  GSTAT_CU_STEP(gstat_cu_tridiag_values(a->cdt, a->d, a->e, a->n, a->nb, sigma, wd, a->w, norms,
                                        a->info, a->stream),
                "bisection");
  if (!a->X) return cudaSuccess;
  GSTAT_CU_STEP(cudaMemsetAsync(flags, 0, sizeof(int) * (size_t)(a->nb + 1), a->stream),
                "clearing flags");
  GSTAT_CU_STEP(gstat_cu_tridiag_vectors(a->cdt, a->d, a->e, a->n, a->nb, wd, norms, a->gap_tol,
                                         (double *)(base + a->parts.zt),
                                         (double *)(base + a->parts.u), a->X, flags, a->stream),
                "tridiagonal eigenvectors");
  /* flags[nb] is set with any flags[b]: one int to read */
  GSTAT_CU_STEP(
      cudaMemcpyAsync(a->host_flag, flags + a->nb, sizeof(int), cudaMemcpyDeviceToHost, a->stream),
      "degenerate check");
  GSTAT_CU_STEP(cudaStreamSynchronize(a->stream), "tridiagonal eigenvectors");
  *degenerate = *a->host_flag != 0;
  return cudaSuccess;
}
