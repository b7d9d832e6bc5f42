/* The tridiagonal step both eigensolver drivers run (tridiag_step.h). */
#include "backend/cuda/tridiag_step.h"

#include <stdint.h>
#include <stdlib.h>

#include "backend/cuda/kernels/kernels.h"

/* kernels/tridiag.cuh's per-matrix flags */
enum { FLAG_CLUSTER = 1, FLAG_NONFINITE = 2, FLAG_FAILED = 4 };

gstat_cu_tridiag_parts gstat_cu_tridiag_parts_at(size_t *at, int64_t n, int64_t nb, int want) {
  gstat_cu_tridiag_parts p;
  size_t v = want ? 1 : 0, n2 = (size_t)(n * n) * (size_t)nb;
  p.wd = gstat_cu_ws_part(at, (size_t)(n * nb) * sizeof(double));
  p.norms = gstat_cu_ws_part(at, (size_t)(2 * nb) * sizeof(double));
  p.sigma = gstat_cu_ws_part(at, (size_t)nb * sizeof(double));
  p.zt = gstat_cu_ws_part(at, v * n2 * sizeof(double));
  p.u = gstat_cu_ws_part(at, v * n2 * sizeof(double));
  p.flags = gstat_cu_ws_part(at, v * (size_t)(nb + 1) * sizeof(int));
  p.links = gstat_cu_ws_part(at, v * (size_t)(n * nb));
  p.idx = gstat_cu_ws_part(at, v * (size_t)nb * sizeof(int));
  p.perm = gstat_cu_ws_part(at, (size_t)(n * nb) * sizeof(int));
  int64_t cap = want ? (n / 2) * nb : 0;
  p.wide_cap = cap < INT32_MAX ? (int)cap : INT32_MAX;
  p.wide = gstat_cu_ws_part(at, (size_t)p.wide_cap * sizeof(gstat_cu_wide_cluster));
  p.wide_count = gstat_cu_ws_part(at, v * sizeof(int));
  return p;
}

/* Whether a launch error is the device refusing the cluster kernel's
 * shape (shared memory, grid), or the wide path's host list that could not
 * be allocated, rather than a fault: those matrices can still go to the
 * other solver. */
static int launch_refused(cudaError_t err) {
  return err == cudaErrorInvalidValue || err == cudaErrorInvalidConfiguration ||
         err == cudaErrorLaunchOutOfResources || err == cudaErrorMemoryAllocation;
}

/* The wide path over the clusters check_cluster_work listed: their
 * number and largest shapes read back, then the kernels in chunks of the
 * grid's limit. X (n x n doubles per matrix in float64) is the Gram
 * matrices' scratch: the vectors go there only at the end. */
static cudaError_t run_wide(const gstat_cu_tridiag_step_args *a) {
  char *base = a->base;
  const gstat_cu_wide_cluster *dl = (const gstat_cu_wide_cluster *)(base + a->parts.wide);
  int count = 0;
  cudaError_t err = cudaMemcpyAsync(&count, base + a->parts.wide_count, sizeof count,
                                    cudaMemcpyDeviceToHost, a->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(a->stream);
  if (count > a->parts.wide_cap) count = a->parts.wide_cap; /* those beyond: flagged */
  if (err != cudaSuccess || count <= 0) return err;
  gstat_cu_wide_cluster *hl = malloc(sizeof *hl * (size_t)count);
  if (!hl) return cudaErrorMemoryAllocation;
  err = cudaMemcpyAsync(hl, dl, sizeof *hl * (size_t)count, cudaMemcpyDeviceToHost, a->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(a->stream);
  for (int at = 0; at < count && err == cudaSuccess; at += 65535) {
    const int part = count - at < 65535 ? count - at : 65535;
    int max_c = 2, max_m = 2;
    for (int j = at; j < at + part; j++) {
      max_c = hl[j].c > max_c ? hl[j].c : max_c;
      max_m = hl[j].m > max_m ? hl[j].m : max_m;
    }
    err = gstat_cu_tridiag_wide(
        (const double *)a->d, (const double *)a->e, a->n, (const double *)(base + a->parts.wd),
        (const double *)(base + a->parts.norms), dl + at, part, max_c, max_m,
        (double *)(base + a->parts.zt), (double *)(base + a->parts.u), (double *)a->X,
        (int *)(base + a->parts.flags), a->stream);
  }
  free(hl);
  return err;
}

/* The cluster kernel over the k matrices list[0..k-1]; host_flag[b] gets
 * their flags back (FLAG_FAILED for all when the launch was refused). */
static cudaError_t run_clusters(const gstat_cu_tridiag_step_args *a, const int *list, int64_t k) {
  char *base = a->base;
  int *h = a->host_flag, *flags = (int *)(base + a->parts.flags);
  int *idx = (int *)(base + a->parts.idx);
  const int wide = a->clusters.wide && a->cdt == 2 && a->X && !a->clusters.fail;
  int *wide_count = (int *)(base + a->parts.wide_count);
  /* from pageable memory: the copy is staged before the call returns */
  cudaError_t err =
      cudaMemcpyAsync(idx, list, sizeof(int) * (size_t)k, cudaMemcpyHostToDevice, a->stream);
  if (err == cudaSuccess && wide) err = cudaMemsetAsync(wide_count, 0, sizeof(int), a->stream);
  if (err != cudaSuccess) return err;
  err = gstat_cu_tridiag_clusters(
      a->cdt, a->d, a->e, a->n, (const double *)(base + a->parts.wd),
      (const double *)(base + a->parts.norms), (const unsigned char *)(base + a->parts.links), idx,
      k, a->clusters.fail, a->clusters.max_work, (double *)(base + a->parts.zt),
      (double *)(base + a->parts.u), flags,
      wide ? (gstat_cu_wide_cluster *)(base + a->parts.wide) : NULL, a->parts.wide_cap, wide_count,
      a->stream);
  if (err == cudaSuccess && wide) err = run_wide(a);
  if (launch_refused(err)) {
    (void)cudaGetLastError();
    for (int64_t j = 0; j < k; j++) h[list[j]] |= FLAG_FAILED;
    return cudaSuccess;
  }
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(h, flags, sizeof(int) * (size_t)a->nb, cudaMemcpyDeviceToHost, a->stream);
  return err == cudaSuccess ? cudaStreamSynchronize(a->stream) : err;
}

/* The matrices whose only trouble is clusters get the cluster step; then
 * host_flag[b] says which matrices still need another solver. */
static cudaError_t cluster_step(const gstat_cu_tridiag_step_args *a, const char **what) {
  int *h = a->host_flag;
  int *list = a->clusters.run ? malloc(sizeof(int) * (size_t)a->nb) : NULL;
  if (a->clusters.run && !list) {
    *what = "cluster list";
    return cudaErrorMemoryAllocation;
  }
  int64_t k = 0;
  for (int64_t b = 0; b < a->nb && a->clusters.run; b++)
    if (h[b] == FLAG_CLUSTER) list[k++] = (int)b;
  cudaError_t err = k > 0 ? run_clusters(a, list, k) : cudaSuccess;
  free(list);
  if (err != cudaSuccess) {
    *what = "cluster step";
    return err;
  }
  int64_t served = 0;
  h[a->nb] = 0;
  for (int64_t b = 0; b < a->nb; b++) {
    const int ok = a->clusters.run && h[b] == FLAG_CLUSTER;
    served += ok;
    h[b] = h[b] != 0 && !ok;
    h[a->nb] |= h[b];
  }
  if (a->clusters.clustered) *a->clusters.clustered += served;
  return cudaSuccess;
}

cudaError_t gstat_cu_tridiag_step(const gstat_cu_tridiag_step_args *a, int *degenerate,
                                  const char **what) {
  char *base = a->base;
  double *wd = (double *)(base + a->parts.wd), *norms = (double *)(base + a->parts.norms);
  double *zt = (double *)(base + a->parts.zt);
  const double *sigma = (const double *)(base + a->parts.sigma);
  int *flags = (int *)(base + a->parts.flags), *perm = (int *)(base + a->parts.perm);
  cudaError_t err;
  *degenerate = 0;
  GSTAT_CU_STEP(cudaMemsetAsync(a->info, 0, sizeof(int) * (size_t)a->nb, a->stream),
                "clearing info");
  GSTAT_CU_STEP(gstat_cu_tridiag_values(a->cdt, a->d, a->e, a->n, a->nb, sigma, wd, a->w, norms,
                                        a->info, perm, a->stream),
                "bisection");
  if (!a->X) return cudaSuccess;
  GSTAT_CU_STEP(cudaMemsetAsync(flags, 0, sizeof(int) * (size_t)(a->nb + 1), a->stream),
                "clearing flags");
  GSTAT_CU_STEP(
      gstat_cu_tridiag_vectors(a->cdt, a->d, a->e, a->n, a->nb, wd, norms, a->gap_tol, perm,
                               a->first_rank, zt, (double *)(base + a->parts.u),
                               (unsigned char *)(base + a->parts.links), flags, a->stream),
      "tridiagonal eigenvectors");
  /* flags[nb] (set with any flags[b]) says whether to look further */
  GSTAT_CU_STEP(cudaMemcpyAsync(a->host_flag, flags, sizeof(int) * (size_t)(a->nb + 1),
                                cudaMemcpyDeviceToHost, a->stream),
                "degenerate check");
  GSTAT_CU_STEP(cudaStreamSynchronize(a->stream), "tridiagonal eigenvectors");
  if (a->host_flag[a->nb] && (err = cluster_step(a, what)) != cudaSuccess) return err;
  *degenerate = a->host_flag[a->nb] != 0;
  GSTAT_CU_STEP(gstat_cu_tridiag_transpose(a->cdt, zt, a->n, a->nb, perm, a->X, a->stream),
                "ordering the vectors");
  return cudaSuccess;
}
