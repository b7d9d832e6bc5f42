/*
 * Column means and co-moment of host data in one pass over memory (see
 * comoment.h). Each thread takes a contiguous range of rows and works
 * through it in cache-sized blocks: pack the block column-major in the
 * compute type, take its exact two-pass mean, centre it, syrk; then merge the
 * block into the thread's running (count, mean, M) in double with Chan et
 * al.'s update. The threads' results merge in row order. Every product is of
 * centred data (the stability of the two-pass method), but X is read once,
 * where load + means + centring + syrk over the whole matrix read and wrote
 * it four to five times.
 */
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "linalg/cpu/blas_threads.h"
#include "linalg/dense.h"
#include "pca/comoment.h"
#include "pca/data.h"

/* Values per block: about 512 KiB of doubles, so a block stays in L2 while it
 * is packed, averaged, centred and multiplied. */
#define BLOCK_VALUES ((int64_t)1 << 16)

typedef struct running {
  double n;
  double *mean, *M; /* p, p x p (lower triangle, column-major) */
} running;

/* a <- a merged with a block of nb rows, mean mb and co-moment Sb - nb d d^T
 * (Sb in the compute type ct, lower triangle, ld p; d NULL for 0: see
 * center_rows); delta is p scratch doubles. */
static void merge_block(int64_t p, running *a, double nb, const double *mb, const void *Sb,
                        gstat_dtype ct, const double *d, double *delta) {
  double n = a->n + nb, f = nb / n, g = a->n * nb / n;
  for (int64_t i = 0; i < p; i++) {
    delta[i] = mb[i] - a->mean[i];
    a->mean[i] += delta[i] * f;
  }
  for (int64_t j = 0; j < p; j++) {
    double *mc = a->M + j * p, dj = d ? nb * d[j] : 0.0;
    if (ct == GSTAT_F64) {
      const double *s = (const double *)Sb + j * p;
      for (int64_t i = j; i < p; i++)
        mc[i] += s[i] + g * delta[i] * delta[j] - (d ? dj * d[i] : 0.0);
    } else {
      const float *s = (const float *)Sb + j * p;
      for (int64_t i = j; i < p; i++)
        mc[i] += (double)s[i] + g * delta[i] * delta[j] - (d ? dj * d[i] : 0.0);
    }
  }
  a->n = n;
}

/* Rows of a block (row-major, ld elements apart, already in the compute
 * type) minus m1 into x (p x rows column-major: the rows, unmoved), with no
 * transposition: pass 1 sums the columns (and finds constant ones, whose m1
 * is their value, so they centre to exact zeros); pass 2, on the cached
 * block, writes x and sums its residues. mb = m1 + d is the block mean; the
 * co-moment about m1 exceeds the block's by rows d d^T (d is rounding-sized).
 * sum and same are p scratch entries. */
#define DEFINE_CENTER_ROWS(T, SFX)                                                            \
  __attribute__((target_clones("avx512f", "avx2", "default"))) static void center_rows_##SFX( \
      const T *restrict X, int64_t ld, int64_t rows, int64_t p, T *restrict x,                \
      double *restrict sum, unsigned char *restrict same, double *restrict mb,                \
      double *restrict d) {                                                                   \
    const T *x0 = X;                                                                          \
    for (int64_t j = 0; j < p; j++) {                                                         \
      sum[j] = 0;                                                                             \
      same[j] = 1;                                                                            \
      d[j] = 0;                                                                               \
    }                                                                                         \
    for (int64_t r = 0; r < rows; r++) {                                                      \
      const T *row = X + r * ld;                                                              \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) {                                   \
        sum[j] += (double)row[j];                                                             \
        same[j] &= row[j] == x0[j];                                                           \
      }                                                                                       \
    }                                                                                         \
    for (int64_t j = 0; j < p; j++) mb[j] = same[j] ? (double)x0[j] : sum[j] / (double)rows;  \
    for (int64_t r = 0; r < rows; r++) {                                                      \
      const T *row = X + r * ld;                                                              \
      T *out = x + r * p;                                                                     \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) {                                   \
        double v = (double)row[j] - mb[j]; /* residues summed unrounded (float data) */       \
        out[j] = (T)v;                                                                        \
        d[j] += v;                                                                            \
      }                                                                                       \
    }                                                                                         \
    for (int64_t j = 0; j < p; j++) {                                                         \
      d[j] /= (double)rows;                                                                   \
      mb[j] += d[j];                                                                          \
    }                                                                                         \
  }

DEFINE_CENTER_ROWS(double, f64)
DEFINE_CENTER_ROWS(float, f32)

/* a <- a merged with b (both running states in double). */
static void merge_running(int64_t p, running *a, const running *b, double *delta) {
  if (b->n == 0) return;
  if (a->n == 0) {
    a->n = b->n;
    memcpy(a->mean, b->mean, sizeof(double) * (size_t)p);
    memcpy(a->M, b->M, sizeof(double) * (size_t)(p * p));
    return;
  }
  merge_block(p, a, b->n, b->mean, b->M, GSTAT_F64, NULL, delta);
}

gstat_status gstat_i_comoment(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, gstat_dtype ct,
                              double *mean, void *S, int64_t lds) {
  int64_t n = X->rows, p = X->cols;
  size_t es = gstat_dtype_size(ct);
  int64_t block = BLOCK_VALUES / p;
  /* syrk needs a long enough k, and each block's merge and co-moment cost
   * O(p^2) memory traffic: at least 256 rows, and p / 2 for wide data */
  if (block < 256) block = 256;
  if (block < p / 2) block = p / 2;
  if (block > n) block = n;
  int64_t blocks = (n + block - 1) / block;
  int nt = gstat_i_cpu_batch_threads(ctx, blocks);
  /* per thread: block buffer, block co-moment, block mean, delta, running mean and M */
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, block * p, es);
  size_t o_s = gstat_i_ws_take(&pl, p * p, es);
  size_t o_mb = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_rm = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_rM = gstat_i_ws_take(&pl, p * p, sizeof(double));
  size_t o_sum = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_dd = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_same = gstat_i_ws_take(&pl, p, 1);
  size_t per = (pl.size + 63) / 64 * 64, total;
  if (!pl.ok || !gstat_i_mul_size(per, (size_t)nt, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: workspace size overflows");
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %zu bytes", total);
  gstat_matrix Xb = *X; /* element b alone */
  Xb.data = gstat_i_elem(X, b, 0, 0);
  Xb.batch = 1;
  size_t xes = gstat_dtype_size(X->dtype);
  /* rows contiguous and already in the compute type: centred without transposing */
  bool rows_ready = X->col_stride == 1 && X->dtype == ct && X->row_stride >= p;

#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    char *w = ws + per * (size_t)t;
    void *x = w + o_x, *Sb = w + o_s;
    double *mb = (double *)(w + o_mb), *delta = (double *)(w + o_d);
    double *sum = (double *)(w + o_sum), *dd = (double *)(w + o_dd);
    unsigned char *same = (unsigned char *)(w + o_same);
    running r = {0, (double *)(w + o_rm), (double *)(w + o_rM)};
    memset(r.mean, 0, sizeof(double) * (size_t)p);
    memset(r.M, 0, sizeof(double) * (size_t)(p * p));
    /* contiguous block ranges, so the merge below keeps row order */
    int64_t lo = blocks * t / nt, hi = blocks * (t + 1) / nt;
    for (int64_t k = lo; k < hi; k++) {
      int64_t r0 = k * block, rows = n - r0 < block ? n - r0 : block;
      const char *src = (char *)Xb.data + (size_t)(r0 * X->row_stride) * xes;
      /* with several threads, BLAS runs on the calling one (NULL: no thread
       * setting from inside the region); alone, with the context's threads */
      gstat_ctx *bctx = nt > 1 ? NULL : ctx;
      if (rows_ready) {
        if (ct == GSTAT_F64)
          center_rows_f64((const double *)src, X->row_stride, rows, p, x, sum, same, mb, dd);
        else
          center_rows_f32((const float *)src, X->row_stride, rows, p, x, sum, same, mb, dd);
        gstat_i_syrk_lower(bctx, ct, GSTAT_NO_TRANS, p, rows, 1.0, x, p, 0.0, Sb, p);
        merge_block(p, &r, (double)rows, mb, Sb, ct, dd, delta);
      } else { /* other layouts and dtypes: packed column-major, then centred */
        gstat_matrix part = Xb;
        part.rows = rows;
        part.data = (void *)src;
        gstat_i_dense_load(&part, 0, ct, x, rows);
        gstat_i_col_means(ct, rows, p, x, NULL, 0, mb);
        gstat_i_exact_constant_means(ct, rows, p, x, mb);
        gstat_i_center_scale(ct, rows, p, x, mb, NULL);
        gstat_i_syrk_lower(bctx, ct, GSTAT_TRANS, p, rows, 1.0, x, rows, 0.0, Sb, p);
        merge_block(p, &r, (double)rows, mb, Sb, ct, NULL, delta);
      }
    }
#pragma omp barrier
#pragma omp single
    {
      running all = {0, (double *)(ws + o_rm), (double *)(ws + o_rM)}; /* thread 0's state */
      for (int u = 0; u < nt; u++) {
        char *wu = ws + per * (size_t)u;
        int64_t first = blocks * u / nt * block, end = blocks * (u + 1) / nt * block;
        if (end > n) end = n;
        running ru = {(double)(end > first ? end - first : 0), (double *)(wu + o_rm),
                      (double *)(wu + o_rM)};
        if (u == 0)
          all.n = ru.n;
        else
          merge_running(p, &all, &ru, (double *)(ws + o_d));
      }
      for (int64_t j = 0; j < p; j++) {
        mean[j] = all.mean[j];
        for (int64_t i = j; i < p; i++) {
          double v = all.M[i + j * p];
          if (ct == GSTAT_F64) {
            ((double *)S)[i + j * lds] = ((double *)S)[j + i * lds] = v;
          } else {
            ((float *)S)[i + j * lds] = ((float *)S)[j + i * lds] = (float)v;
          }
        }
      }
    }
  }
  ctx->last_backends |= GSTAT_RAN_CPU;
  return GSTAT_OK;
}
