/*
 * The backend's eigh_top on device data: every eigenvalue of one dense
 * symmetric float32 matrix and the eigenvectors of its k largest (PCA's k
 * components of p), by sytrd_split.c's path (cuSOLVER's reduction, our
 * tridiagonal step, cuSOLVER's back-transformation) in its top-k mode: the
 * step's vectors and the back-transformation for those k columns only,
 * where the full eigh computes and back-transforms all of them
 * (bench/README.md, "Top-k eigenpairs on the device"). It runs on a copy,
 * so that where the step cannot serve the top k (eigenvalue gaps too small
 * for its vectors, a non-finite T) the caller's A is untouched and the
 * scheduler runs the full eigh.
 */
#include <stdint.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/sytrd_split.h"

/* Where this path runs instead of the full eigh: one float32 matrix of
 * order min_n up to the split path's limit, k <= n / min_ratio (ormtr's
 * work grows with k; a batch goes to the full eigh's batched or threaded
 * paths). From 4096 the full eigh runs the same reduction and step for
 * every vector; below, cuSOLVER's whole solver was faster. Float64 not
 * measured: the full eigh. bench/README.md, "Top-k eigenpairs on the
 * device". */
static const struct { int64_t min_n, min_ratio; } top_rules = {4096, 4};

/* Relative eigenvalue gap below which the twisted vectors of two wanted
 * values are not trusted (as the full eigh's split path). */
static const double top_gap = 1e-8;

/* Whether the path takes A (dense, device) and w for k pairs. */
static bool top_fits(const gstat_matrix *A, const gstat_matrix *w, int64_t k) {
  const int64_t n = A->rows;
  return A->dtype == GSTAT_F32 && A->batch == 1 && A->cols == n && n >= top_rules.min_n &&
         gstat_cu_sytrd_split_fits(n) && k >= 1 && k * top_rules.min_ratio <= n &&
         A->row_stride == 1 && A->col_stride == n && A->location == GSTAT_CUDA &&
         w->location == GSTAT_CUDA && w->dtype == A->dtype && w->batch == 1 && w->rows == n &&
         w->cols == 1 && w->row_stride == 1;
}

gstat_status gstat_cu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                               gstat_matrix *w) {
  gstat_cu_state *s = state;
  if (!top_fits(A, w, k)) return GSTAT_EUNSUPPORTED; /* the full eigh: no message */
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "eigh: simulated device out of memory");
  cudaSetDevice(s->device);
  const int64_t n = A->rows;
  const size_t mat = (size_t)(n * n) * sizeof(float), head = (mat + 255) & ~(size_t)255;
  size_t split = gstat_cu_sytrd_split_bytes(s->solver, n, A->data);
  if (split == 0)
    return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "eigh: cuSOLVER's workspace query failed");
  /* the copy, its info, then the split path's workspace */
  char *base = gstat_cu_buffer(s, ctx, CU_WORK, head + 256 + split);
  int *host_flag = gstat_cu_host_buffer(s, ctx, &s->host_info, 2 * sizeof(int));
  if (!base || !host_flag) return GSTAT_ENOMEM;
  float *copy = (float *)base;
  gstat_cu_sytrd_split_args a = {.n = n,
                                 .a = copy,
                                 .k = k,
                                 .w = w->data,
                                 .info = (int *)(base + head),
                                 .work = base + head + 256,
                                 .host_flag = host_flag,
                                 .gap_tol = top_gap,
                                 .clusters = gstat_cu_own_clusters(s),
                                 .stream = s->stream,
                                 .solver = s->solver};
  const char *what = "copying A";
  int degenerate = 0;
  s->own_tridiag_chunks++;
  cudaError_t err = cudaMemcpyAsync(copy, A->data, mat, cudaMemcpyDeviceToDevice, s->stream);
  if (err == cudaSuccess) err = gstat_cu_sytrd_split(&a, &degenerate, &what);
  s->own_tridiag_degenerate += err == cudaSuccess && degenerate;
  if (err == cudaSuccess && degenerate) return GSTAT_EUNSUPPORTED; /* A untouched */
  const size_t skip = (size_t)((n - k) * n);
  if (err == cudaSuccess &&
      (err = cudaMemcpyAsync((float *)A->data + skip, copy + skip, (size_t)(k * n) * sizeof(float),
                             cudaMemcpyDeviceToDevice, s->stream)) != cudaSuccess)
    what = "copying the vectors";
  if (err == cudaSuccess &&
      (err = gstat_cu_fix_sign_cols(1, (float *)A->data + skip, n, k, s->stream)) != cudaSuccess)
    what = "the sign rule";
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "eigh", what, err);
}
