/*
 * The CPU backend's centred projection (scores of host data) without a
 * centred copy of it: threaded over row blocks, each block is centred (and
 * scaled) into a cache-sized buffer and multiplied by the components there.
 * X is read once; products are of centred data, so |mean| >> spread loses
 * nothing (unlike X V^T - mean V^T).
 */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "core/clones.h"
#include "core/matrix.h"
#include "backend/backend.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/cpu/comoment.h"
#include "backend/dense.h"

#define BLOCK_VALUES ((int64_t)1 << 16) /* ~512 KiB of doubles per block */

/* Rows (row-major, ld apart, compute type) minus mean, times inv, into x
 * (p x rows column-major: the rows unmoved); x may be X when ld == p.
 * Named apart from comoment.c's center_rows: clang 14 gives a static
 * target_clones function a global resolver, so equal names clash at link. */
#define DEFINE_CENTER_ROWS(T, SFX)                                                          \
  GSTAT_I_CLONES static void proj_center_rows_##SFX(const T *X, int64_t ld, int64_t rows,   \
                                                    int64_t p, const double *restrict mean, \
                                                    const double *restrict inv, T *x) {     \
    for (int64_t r = 0; r < rows; r++) {                                                    \
      const T *row = X + r * ld;                                                            \
      T *out = x + r * p;                                                                   \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) out[j] =                          \
          (T)(((double)row[j] - mean[j]) * inv[j]);                                         \
    }                                                                                       \
  }

DEFINE_CENTER_ROWS(double, f64)
DEFINE_CENTER_ROWS(float, f32)

/* Rows [r0, r0 + rows) of element b of M, as a descriptor of their own. */
static gstat_matrix row_range(const gstat_matrix *M, int64_t b, int64_t r0, int64_t rows) {
  gstat_matrix part = *M;
  part.data = gstat_i_elem(M, b, r0, 0);
  part.batch = 1;
  part.rows = rows;
  return part;
}

/* V (p x k column-major, compute type) = comp^T, column i times 1/sqrt(ev[i]). */
static void load_components(gstat_dtype ct, const double *comp, const double *ev, int64_t k,
                            int64_t p, void *V) {
  for (int64_t i = 0; i < k; i++) {
    double f = 1.0;
    if (ev) f = ev[i] > 0 ? 1.0 / sqrt(ev[i]) : 0.0;
    for (int64_t j = 0; j < p; j++) {
      double v = comp[i * p + j] * f;
      if (ct == GSTAT_F64)
        ((double *)V)[j + i * p] = v;
      else
        ((float *)V)[j + i * p] = (float)v;
    }
  }
}

gstat_status gstat_i_project(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, const double *mean,
                             const double *scale, const double *comp, const double *ev, int64_t k,
                             gstat_matrix *Y) {
  int64_t n = X->rows, p = X->cols;
  if (n == 0 || k == 0) return GSTAT_OK;
  gstat_dtype ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  size_t es = gstat_dtype_size(ct);
  int64_t block = BLOCK_VALUES / p;
  if (block < 64) block = 64;
  if (block > n) block = n;
  int64_t blocks = (n + block - 1) / block;
  int nt = gstat_i_cpu_batch_threads(
      ctx, blocks, gstat_i_cpu_seconds(ct, 2.0 * (double)n * (double)p * (double)(k + 1), true));
  /* float64 scores land in place when Y is dense row-major float64 */
  bool direct = ct == GSTAT_F64 && Y->dtype == GSTAT_F64 && Y->col_stride == 1 &&
                (n <= 1 || Y->row_stride == k);
  /* shared: components (ct) and 1/scale; per thread: block and its scores (ct) */
  gstat_i_ws_plan pl = {0, true};
  size_t o_v = gstat_i_ws_take(&pl, k * p, es);
  size_t o_inv = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t shared = (pl.size + 63) / 64 * 64;
  gstat_i_ws_plan tp = {0, true};
  size_t o_x = gstat_i_ws_take(&tp, block * p, es);
  size_t o_z = gstat_i_ws_take(&tp, direct ? 0 : block * k, es);
  size_t per = (tp.size + 63) / 64 * 64, total;
  if (!pl.ok || !tp.ok || !gstat_i_mul_size(per, (size_t)nt, &total) ||
      !gstat_i_add_size(total, shared, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "project: workspace size overflows");
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "project: cannot allocate %zu bytes", total);
  void *V = ws + o_v;
  double *inv = (double *)(ws + o_inv);
  load_components(ct, comp, ev, k, p, V);
  for (int64_t j = 0; j < p; j++) inv[j] = scale ? 1.0 / scale[j] : 1.0;
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
      gstat_matrix part = row_range(X, b, r0, rows);
      const void *src = part.data, *xr = x;
      int64_t ld = X->row_stride;
      if (!rows_ready) { /* packed as rows in the compute type first */
        gstat_matrix t = gstat_i_transposed(&part);
        gstat_i_dense_load(&t, 0, ct, x, p);
        src = x;
        ld = p;
      }
      if (ct == GSTAT_F64)
        proj_center_rows_f64((const double *)src, ld, rows, p, mean, inv, (double *)x);
      else
        proj_center_rows_f32((const float *)src, ld, rows, p, mean, inv, (float *)x);
      /* z (k x rows column-major = the block's scores row-major) = V^T x */
      if (direct) z = gstat_i_elem(Y, b, r0, 0);
      gstat_i_gemm(bctx, ct, GSTAT_TRANS, GSTAT_NO_TRANS, k, rows, p, 1.0, V, p, xr, p, 0.0, z, k);
      if (!direct) {
        gstat_matrix yt = row_range(Y, b, r0, rows);
        yt = gstat_i_transposed(&yt);
        gstat_i_dense_store(ct, z, k, &yt, 0);
      }
    }
  }
  return GSTAT_OK;
}
