/*
 * Scores of host data without a centred copy of it: threaded over row
 * blocks, each block is centred (and scaled) into a cache-sized buffer and
 * multiplied by the components there. X is read once; products are of
 * centred data, so |mean| >> spread loses nothing (unlike X V^T - mean V^T).
 */
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "linalg/cpu/blas_threads.h"
#include "linalg/dense.h"
#include "pca/data.h"
#include "pca/project.h"

#define BLOCK_VALUES ((int64_t)1 << 16) /* ~512 KiB of doubles per block */

/* Rows (row-major, ld apart, compute type) minus mean, divided by scale, into
 * x (p x rows column-major: the rows unmoved). */
#define DEFINE_CENTER_ROWS(T, SFX)                                                            \
  __attribute__((target_clones("avx512f", "avx2", "default"))) static void center_rows_##SFX( \
      const T *restrict X, int64_t ld, int64_t rows, int64_t p, const double *restrict mean,  \
      const double *restrict inv, T *restrict x) {                                            \
    for (int64_t r = 0; r < rows; r++) {                                                      \
      const T *row = X + r * ld;                                                              \
      T *out = x + r * p;                                                                     \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) out[j] =                            \
          (T)(((double)row[j] - mean[j]) * inv[j]);                                           \
    }                                                                                         \
  }

DEFINE_CENTER_ROWS(double, f64)
DEFINE_CENTER_ROWS(float, f32)

gstat_status gstat_i_pca_project(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct,
                                 const double *mean, const double *scale, const double *comp,
                                 int64_t k, double *out) {
  int64_t n = X->rows, p = X->cols;
  size_t es = gstat_dtype_size(ct);
  int64_t block = BLOCK_VALUES / p;
  if (block < 64) block = 64;
  if (block > n) block = n;
  int64_t blocks = (n + block - 1) / block;
  int nt = gstat_i_cpu_batch_threads(ctx, blocks);
  /* shared: components (ct) and 1/scale; per thread: block and its scores (ct) */
  gstat_i_ws_plan pl = {0, true};
  size_t o_v = gstat_i_ws_take(&pl, k * p, es);
  size_t o_inv = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t shared = (pl.size + 63) / 64 * 64;
  gstat_i_ws_plan tp = {0, true};
  size_t o_x = gstat_i_ws_take(&tp, block * p, es);
  size_t o_z = gstat_i_ws_take(&tp, ct == GSTAT_F64 ? 0 : block * k, es);
  size_t per = (tp.size + 63) / 64 * 64, total;
  if (!pl.ok || !tp.ok || !gstat_i_mul_size(per, (size_t)nt, &total) ||
      !gstat_i_add_size(total, shared, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: workspace size overflows");
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %zu bytes", total);
  void *V = ws + o_v; /* components k x p row-major = p x k column-major */
  double *inv = (double *)(ws + o_inv);
  for (int64_t i = 0; i < k * p; i++) {
    if (ct == GSTAT_F64)
      ((double *)V)[i] = comp[i];
    else
      ((float *)V)[i] = (float)comp[i];
  }
  for (int64_t j = 0; j < p; j++) inv[j] = scale ? 1.0 / scale[j] : 1.0;
  const char *base = gstat_i_elem(X, b, 0, 0);
  size_t xes = gstat_dtype_size(X->dtype);
  bool rows_ready = X->col_stride == 1 && X->dtype == ct && X->row_stride >= p;

#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    char *w = ws + shared + per * (size_t)t;
    void *x = w + o_x, *z = w + o_z;
    gstat_ctx *bctx = nt > 1 ? NULL : ctx; /* see comoment.c */
    int64_t lo = blocks * t / nt, hi = blocks * (t + 1) / nt;
    for (int64_t kb = lo; kb < hi; kb++) {
      int64_t r0 = kb * block, rows = n - r0 < block ? n - r0 : block;
      const char *src = base + (size_t)(r0 * X->row_stride) * xes;
      double *o = out + r0 * k;
      if (ct == GSTAT_F64) z = o; /* float64: the scores land in place */
      /* z (k x rows column-major = the block's scores row-major) = V^T x */
      if (rows_ready) {
        if (ct == GSTAT_F64)
          center_rows_f64((const double *)src, X->row_stride, rows, p, mean, inv, x);
        else
          center_rows_f32((const float *)src, X->row_stride, rows, p, mean, inv, x);
        gstat_i_gemm(bctx, ct, GSTAT_TRANS, GSTAT_NO_TRANS, k, rows, p, 1.0, V, p, x, p, 0.0, z, k);
      } else {
        gstat_matrix part = *X;
        part.data = (void *)src;
        part.batch = 1;
        part.rows = rows;
        gstat_i_dense_load(&part, 0, ct, x, rows);
        gstat_i_center_scale(ct, rows, p, x, mean, scale);
        gstat_i_gemm(bctx, ct, GSTAT_TRANS, GSTAT_TRANS, k, rows, p, 1.0, V, p, x, rows, 0.0, z, k);
      }
      if (ct != GSTAT_F64)
        for (int64_t i = 0; i < rows * k; i++) o[i] = (double)((float *)z)[i];
    }
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
  return GSTAT_OK;
}
