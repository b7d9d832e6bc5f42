/*
 * The laplacian primitive on the device (backend.h): each chunk of graphs
 * gathered as dense float64 (kernels/laplacian_kernels.cu), its degrees and
 * validation, then the Laplacian in place, scattered into the caller's L and
 * deg (any dtype and strides). Every chunk is validated before any output is
 * written (a batch larger than one chunk is read twice); an invalid weight is
 * left to the CPU's rerun to name (GSTAT_EUNSUPPORTED).
 */
#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/laplacian_kernels.h"

static double unit_roundoff(gstat_dtype dt) {
  return dt == GSTAT_F64 ? 2.220446049250313e-16 : dt == GSTAT_F32 ? 1.1920929e-7 : 7.8125e-3;
}

/* Chunk [b0, b0 + nb) gathered into W and validated (degrees into D). */
static gstat_status load_check(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                               const gstat_matrix *A, int64_t b0, int64_t nb, int sym,
                               int drop_loops, double *W, double *D, int *flag, bool *bad) {
  int64_t n = A->rows;
  GSTAT_CU_TRY(gstat_cu_load(s, ctx, fn, A, b0, nb, GSTAT_F64, W, NULL));
  cudaError_t e = cudaMemsetAsync(flag, 0, sizeof(int), s->stream);
  if (e == cudaSuccess)
    e = gstat_cu_lap_degrees(W, nb, n, sym, drop_loops, unit_roundoff(A->dtype), D, flag,
                             s->stream);
  int h = 0;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, flag, sizeof h, cudaMemcpyDeviceToHost, s->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) return gstat_cu_fail(ctx, fn, "Laplacian degrees", e);
  *bad = h != 0;
  return GSTAT_OK;
}

gstat_status gstat_cu_laplacian(void *state, gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                                int sym, int drop_loops, int kind, const gstat_matrix *L,
                                const gstat_matrix *deg) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int64_t batch = A->batch, n = A->rows;
  if (batch == 0 || n == 0) return GSTAT_OK;
  size_t per = (size_t)(n * n + n) * sizeof(double);
  int64_t chunk = gstat_cu_chunk(s, batch, per);
  if (chunk > 65535) chunk = 65535; /* the kernels' grid */
  double *W = gstat_cu_buffer(s, ctx, CU_MAT, (size_t)chunk * (size_t)(n * n) * sizeof(double));
  double *D = gstat_cu_buffer(s, ctx, CU_SUMS, (size_t)(chunk * n) * sizeof(double) + 64);
  if (!W || !D) return GSTAT_ENOMEM;
  int *flag = (int *)(D + chunk * n);
  bool bad = false;
  for (int64_t b0 = 0; chunk < batch && b0 < batch && !bad; b0 += chunk) /* all, before writing */
    GSTAT_CU_TRY(load_check(s, ctx, fn, A, b0, batch - b0 < chunk ? batch - b0 : chunk, sym,
                            drop_loops, W, D, flag, &bad));
  for (int64_t b0 = 0; b0 < batch && !bad; b0 += chunk) {
    int64_t nb = batch - b0 < chunk ? batch - b0 : chunk;
    GSTAT_CU_TRY(load_check(s, ctx, fn, A, b0, nb, sym, drop_loops, W, D, flag, &bad));
    if (bad) break;
    cudaError_t e = gstat_cu_lap_fill(W, nb, n, sym, drop_loops, kind, D, s->stream);
    if (e != cudaSuccess) return gstat_cu_fail(ctx, fn, "Laplacian kernel", e);
    GSTAT_CU_TRY(gstat_cu_store(s, ctx, fn, W, GSTAT_F64, L, b0, nb, NULL));
    if (deg) GSTAT_CU_TRY(gstat_cu_store(s, ctx, fn, D, GSTAT_F64, deg, b0, nb, NULL));
  }
  if (bad)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "%s: a graph has an invalid weight (the CPU names it)", fn);
  cudaError_t e = cudaStreamSynchronize(s->stream);
  return e == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, fn, "Laplacian", e);
}
