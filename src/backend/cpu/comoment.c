/*
 * The CPU backend's fused co-moment primitive: column means and co-moment of
 * host data in one pass over memory (see comoment.h). Each thread takes a contiguous range of rows
 * and works through it in cache-sized blocks: pack the block column-major in the compute type, take
 * its exact two-pass mean, centre it, syrk; then merge the block into the thread's running (count,
 * mean, M) in double with Chan et al.'s update. The threads' results merge in row order. Every
 * product is of centred data (the stability of the two-pass method), but X is read once, where load
 * + means + centring + syrk over the whole matrix read and wrote it four to five times.
 */
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "core/clones.h"
#include "core/matrix.h"
#include "backend/backend.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/cpu/comoment.h"
#include "backend/cpu/panel_syrk.h"
#include "backend/dense.h"

/* Values per block: about 512 KiB of doubles, so a block stays in L2 while it
 * is packed, averaged, centred and multiplied. */
#define BLOCK_VALUES ((int64_t)1 << 16)

typedef struct running {
  double n;
  double *mean, *M; /* p, p x p (lower triangle, column-major, ld ld) */
  int64_t ld;
} running;

/* a <- a merged with a block of nb rows, mean mb and co-moment Sb - nb d d^T
 * (Sb in the compute type ct, lower triangle, ld lds; d NULL for 0: see
 * center_rows); delta is p scratch doubles. */
static void merge_block(int64_t p, running *a, double nb, const double *mb, const void *Sb,
                        int64_t lds, gstat_dtype ct, const double *d, double *delta) {
  double n = a->n + nb, f = nb / n, g = a->n * nb / n;
  for (int64_t i = 0; i < p; i++) {
    delta[i] = mb[i] - a->mean[i];
    a->mean[i] += delta[i] * f;
  }
  for (int64_t j = 0; j < p; j++) {
    double *mc = a->M + j * a->ld, dj = d ? nb * d[j] : 0.0;
    if (ct == GSTAT_F64) {
      const double *s = (const double *)Sb + j * lds;
      for (int64_t i = j; i < p; i++)
        mc[i] += s[i] + g * delta[i] * delta[j] - (d ? dj * d[i] : 0.0);
    } else {
      const float *s = (const float *)Sb + j * lds;
      for (int64_t i = j; i < p; i++)
        mc[i] += (double)s[i] + g * delta[i] * delta[j] - (d ? dj * d[i] : 0.0);
    }
  }
  a->n = n;
}

/* Pass 1 over a block's rows (row-major, ld elements apart, already in the
 * compute type): mb = the column means, where constant columns get their
 * value exactly (so they centre to exact zeros): a column is constant when its
 * minimum equals its maximum and its sum is not NaN (a NaN leaves min and max
 * alone). sum, lo and hi are p scratch doubles each; min/max keep the loop a
 * plain vector loop (this pass reads the data from memory). */
#define DEFINE_BLOCK_MEAN(T, SFX)                                                     \
  GSTAT_I_CLONES static void block_mean_##SFX(                                        \
      const T *restrict X, int64_t ld, int64_t rows, int64_t p, double *restrict sum, \
      double *restrict lo, double *restrict hi, double *restrict mb) {                \
    for (int64_t j = 0; j < p; j++) {                                                 \
      sum[j] = 0;                                                                     \
      lo[j] = hi[j] = (double)X[j];                                                   \
    }                                                                                 \
    for (int64_t r = 0; r < rows; r++) {                                              \
      const T *row = X + r * ld;                                                      \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) {                           \
        double v = (double)row[j];                                                    \
        sum[j] += v;                                                                  \
        lo[j] = v < lo[j] ? v : lo[j];                                                \
        hi[j] = v > hi[j] ? v : hi[j];                                                \
      }                                                                               \
    }                                                                                 \
    for (int64_t j = 0; j < p; j++)                                                   \
      mb[j] = lo[j] == hi[j] && sum[j] == sum[j] ? lo[j] : sum[j] / (double)rows;     \
  }

/* The block's rows minus m1 (pass 1's mean) into x (p x rows column-major:
 * the rows, unmoved), with no transposition: pass 2, on the cached block,
 * writes x and sums its residues d. mb = m1 + d is the block mean; the
 * co-moment about m1 exceeds the block's by rows d d^T (d is rounding-sized). */
#define DEFINE_CENTER_ROWS(T, SFX, MS, XR)                                                 \
  GSTAT_I_CLONES static void center_rows_##SFX(                                            \
      const T *XR X, int64_t ld, int64_t rows, int64_t p, T *XR x, double *restrict sum,   \
      double *restrict lo, double *restrict hi, double *restrict mb, double *restrict d) { \
    block_mean_##MS(X, ld, rows, p, sum, lo, hi, mb);                                      \
    for (int64_t j = 0; j < p; j++) d[j] = 0;                                              \
    for (int64_t r = 0; r < rows; r++) {                                                   \
      const T *row = X + r * ld;                                                           \
      T *out = x + r * p;                                                                  \
      _Pragma("omp simd") for (int64_t j = 0; j < p; j++) {                                \
        double v = (double)row[j] - mb[j]; /* residues summed unrounded (float data) */    \
        out[j] = (T)v;                                                                     \
        d[j] += v;                                                                         \
      }                                                                                    \
    }                                                                                      \
    for (int64_t j = 0; j < p; j++) {                                                      \
      d[j] /= (double)rows;                                                                \
      mb[j] += d[j];                                                                       \
    }                                                                                      \
  }

DEFINE_BLOCK_MEAN(double, f64)
DEFINE_BLOCK_MEAN(float, f32)
DEFINE_CENTER_ROWS(double, f64, f64, restrict)
DEFINE_CENTER_ROWS(float, f32, f32, restrict)
/* in place (x == X, ld == p): rows packed from other layouts and dtypes */
DEFINE_CENTER_ROWS(double, f64_inplace, f64, )
DEFINE_CENTER_ROWS(float, f32_inplace, f32, )

/* As center_rows_f64, but into the panels of gstat_i_panel_syrk (np panels of
 * 8 columns, ps doubles apart; columns p..8 np - 1 are zero). The rounding-sized
 * d is only added to mb here: its d d^T term is ~eps^2 of the co-moment. */
GSTAT_I_CLONES static void center_panels_f64(const double *restrict X, int64_t ld, int64_t rows,
                                             int64_t p, int64_t np, double *restrict x, int64_t ps,
                                             double *restrict sum, double *restrict lo,
                                             double *restrict hi, double *restrict mb,
                                             double *restrict d) {
  block_mean_f64(X, ld, rows, p, sum, lo, hi, mb);
  int64_t full = p / 8; /* panels with 8 data columns */
  for (int64_t j = 0; j < p; j++) d[j] = 0;
  for (int64_t r = 0; r < rows; r++) {
    const double *row = X + r * ld;
    for (int64_t q = 0; q < full; q++) {
      double *out = x + q * ps + 8 * r;
      const double *in = row + 8 * q, *m = mb + 8 * q;
      double *dq = d + 8 * q;
      _Pragma("omp simd") for (int64_t c = 0; c < 8; c++) {
        double v = in[c] - m[c];
        out[c] = v;
        dq[c] += v;
      }
    }
    for (int64_t q = full; q < np; q++) { /* the last, partial panel */
      double *out = x + q * ps + 8 * r;
      for (int64_t c = 0; c < 8; c++) {
        int64_t j = 8 * q + c;
        double v = j < p ? row[j] - mb[j] : 0.0;
        out[c] = v;
        if (j < p) d[j] += v;
      }
    }
  }
  for (int64_t j = 0; j < p; j++) mb[j] += d[j] / (double)rows;
}

/* a <- a merged with b (both running states in double). */
static void merge_running(int64_t p, running *a, const running *b, double *delta) {
  if (b->n == 0) return;
  if (a->n == 0) {
    a->n = b->n;
    memcpy(a->mean, b->mean, sizeof(double) * (size_t)p);
    memcpy(a->M, b->M, sizeof(double) * (size_t)(p * b->ld));
    return;
  }
  merge_block(p, a, b->n, b->mean, b->M, b->ld, GSTAT_F64, NULL, delta);
}

/* Rows per block: the per-block merge and (BLAS) syrk want a long enough k
 * and cost O(p^2) memory traffic: about BLOCK_VALUES values, at least 256
 * rows and p / 2 for wide data. The panel kernel merges without a pass over
 * p x p: its blocks are sized for its caches instead (at most 1 MiB of panels
 * in L2, at most 512 rows so that one panel, 32 KiB, stays in L1). Data that
 * are not tall (gstat_i_comoment_pays) are one block: one syrk over the
 * centred rows, with the context's threads inside BLAS. */
static int64_t block_rows(int64_t n, int64_t p, bool panels) {
  if (!gstat_i_comoment_pays(n, p)) return n;
  int64_t block = BLOCK_VALUES / p;
  if (panels) {
    block = 2 * BLOCK_VALUES / p;
    if (block < 128) block = 128;
    if (block > 512) block = 512;
  } else {
    if (block < 256) block = 256;
    if (block < p / 2) block = p / 2;
  }
  return block > n ? n : block;
}

/* The panel route for one block: centre rows into panels, append the row
 * sqrt(g) (mb - mean) that is Chan et al.'s merge term g delta delta^T, and
 * add the panels' products straight into the running M (no block co-moment,
 * no merge pass); then move the running mean. */
static void add_block_panels(const double *X, int64_t ld, int64_t rows, int64_t p, running *r,
                             const void *next, size_t next_bytes, double *x, int64_t ps,
                             double *sum, double *lo, double *hi, double *mb, double *d) {
  int64_t np = (p + 7) / 8, k = rows;
  center_panels_f64(X, ld, rows, p, np, x, ps, sum, lo, hi, mb, d);
  double n = r->n + (double)rows;
  if (r->n > 0) {
    double g = sqrt(r->n * (double)rows / n);
    for (int64_t j = 0; j < 8 * np; j++)
      x[j / 8 * ps + 8 * rows + j % 8] = j < p ? g * (mb[j] - r->mean[j]) : 0.0;
    k++;
  }
  gstat_i_panel_syrk(k, np, x, ps, r->M, r->ld, next, next_bytes);
  for (int64_t j = 0; j < p; j++) r->mean[j] += (mb[j] - r->mean[j]) * ((double)rows / n);
  r->n = n;
}

/* A long reduction reports progress (Ctrl-C's path) from thread 0, the
 * caller's, after every `every` of its blocks k (the others keep pace: rows
 * done ~ (k + 1) nt block); a cancel stops each thread at its next block. */
typedef struct {
  int64_t every, nt, block, n;
  atomic_int stop;
  gstat_status st;
} block_reports;

static void report_block(gstat_ctx *ctx, block_reports *r, int64_t k) {
  if (r->every == 0 || (k + 1) % r->every != 0) return;
  int64_t done = (k + 1) * r->nt * r->block;
  gstat_status st = gstat_i_progress(ctx, "covariance: rows", done < r->n ? done : r->n, r->n);
  if (st == GSTAT_OK) return;
  r->st = st;
  atomic_store(&r->stop, 1);
}

/* A thread's buffers (its slice of the workspace) and running state. */
typedef struct thread_ws {
  void *x, *Sb;
  double *mb, *delta, *sum, *dd, *lo, *hi;
  running r;
} thread_ws;

/* One block of rows [r0, r0 + rows) of Xb (element b of X) into the
 * thread's running state, by the panel route, the rows route (rows
 * contiguous in the compute type) or through a packed copy. next_rows: the
 * thread's next block, prefetched on the panel route. bctx: the context
 * BLAS takes its threads from (NULL inside a parallel region). */
static void add_block(const gstat_matrix *X, const gstat_matrix *Xb, gstat_dtype ct, bool panels,
                      bool rows_ready, int64_t r0, int64_t rows, int64_t next_rows, int64_t ps,
                      gstat_ctx *bctx, thread_ws *t) {
  const int64_t p = X->cols;
  const size_t xes = gstat_dtype_size(X->dtype);
  const char *src = (char *)Xb->data + (size_t)(r0 * X->row_stride) * xes;
  if (panels) {
    size_t nbytes = next_rows ? (size_t)((next_rows - 1) * X->row_stride + p) * sizeof(double) : 0;
    add_block_panels((const double *)src, X->row_stride, rows, p, &t->r,
                     src + (size_t)(rows * X->row_stride) * xes, nbytes, t->x, ps, t->sum, t->lo,
                     t->hi, t->mb, t->dd);
    return;
  }
  if (rows_ready) {
    if (ct == GSTAT_F64)
      center_rows_f64((const double *)src, X->row_stride, rows, p, t->x, t->sum, t->lo, t->hi,
                      t->mb, t->dd);
    else
      center_rows_f32((const float *)src, X->row_stride, rows, p, t->x, t->sum, t->lo, t->hi, t->mb,
                      t->dd);
  } else { /* other layouts and dtypes: packed as rows in the compute type, then centred */
    gstat_matrix part = gstat_i_transposed(Xb);
    part.cols = rows;
    part.data = (void *)src;
    gstat_i_dense_load(&part, 0, ct, t->x, p);
    if (ct == GSTAT_F64)
      center_rows_f64_inplace(t->x, p, rows, p, t->x, t->sum, t->lo, t->hi, t->mb, t->dd);
    else
      center_rows_f32_inplace(t->x, p, rows, p, t->x, t->sum, t->lo, t->hi, t->mb, t->dd);
  }
  gstat_i_syrk_lower(bctx, ct, GSTAT_NO_TRANS, p, rows, 1.0, t->x, p, 0.0, t->Sb, p);
  merge_block(p, &t->r, (double)rows, t->mb, t->Sb, p, ct, t->dd, t->delta);
}

gstat_status gstat_i_comoment(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, double *mean,
                              double *M) {
  int64_t n = X->rows, p = X->cols;
  gstat_dtype ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  size_t es = gstat_dtype_size(ct);
  /* rows contiguous and already in the compute type: centred without transposing */
  bool rows_ready = X->col_stride == 1 && X->dtype == ct && X->row_stride >= p;
  bool panels = rows_ready && ct == GSTAT_F64 && gstat_i_panel_syrk_available() &&
                gstat_i_comoment_pays(n, p);
  int64_t block = block_rows(n, p, panels);
  int64_t blocks = (n + block - 1) / block;
  int64_t ldm = panels ? (p + 7) / 8 * 8 : p; /* ld of the running M */
  int64_t ps = 8 * (block + 1);               /* panel stride: rows + the merge row */
  double seconds = gstat_i_cpu_seconds(ct, (double)n * (double)p * (double)(p + 2), true);
  int nt = gstat_i_cpu_batch_threads(ctx, blocks, seconds);
  block_reports rep = {0, nt, block, n, 0, GSTAT_OK};
  if (ctx->opt.progress && ctx->progress_muted == 0) { /* the batch loop's slices */
    int64_t slices = gstat_i_cpu_slices(seconds), mine = blocks / nt;
    rep.every = slices > 1 && mine > 1 ? (mine + slices - 1) / slices : 0;
  }
  /* per thread: block buffer, block co-moment, block mean, delta, running mean and M */
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, panels ? ps * (ldm / 8) : block * p, es);
  size_t o_s = gstat_i_ws_take(&pl, panels ? 0 : p * p, es);
  size_t o_mb = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_d = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_rm = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_rM = gstat_i_ws_take(&pl, ldm * ldm, sizeof(double));
  size_t o_sum = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_dd = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_lohi = gstat_i_ws_take(&pl, 2 * p, sizeof(double));
  size_t per = (pl.size + 63) / 64 * 64, total;
  if (!pl.ok || !gstat_i_mul_size(per, (size_t)nt, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: workspace size overflows");
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "pca: cannot allocate %zu bytes", total);
  gstat_matrix Xb = *X; /* element b alone */
  Xb.data = gstat_i_elem(X, b, 0, 0);
  Xb.batch = 1;

#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    char *w = ws + per * (size_t)t;
    thread_ws tw = {w + o_x,
                    w + o_s,
                    (double *)(w + o_mb),
                    (double *)(w + o_d),
                    (double *)(w + o_sum),
                    (double *)(w + o_dd),
                    (double *)(w + o_lohi),
                    (double *)(w + o_lohi) + p,
                    {0, (double *)(w + o_rm), (double *)(w + o_rM), ldm}};
    memset(tw.r.mean, 0, sizeof(double) * (size_t)p);
    memset(tw.r.M, 0, sizeof(double) * (size_t)(ldm * ldm));
    /* contiguous block ranges, so the merge below keeps row order */
    int64_t first = blocks * t / nt, last = blocks * (t + 1) / nt;
    for (int64_t k = first; k < last && !atomic_load_explicit(&rep.stop, memory_order_relaxed);
         k++) {
      int64_t r0 = k * block, rows = n - r0 < block ? n - r0 : block;
      /* the thread's next block is prefetched while this one is multiplied */
      int64_t next = k + 1 < last ? (n - r0 - rows < block ? n - r0 - rows : block) : 0;
      /* with several threads, BLAS runs on the calling one (NULL: no thread
       * setting from inside the region); alone, with the context's threads */
      add_block(X, &Xb, ct, panels, rows_ready, r0, rows, next, ps, nt > 1 ? NULL : ctx, &tw);
      if (t == 0) report_block(ctx, &rep, k);
    }
#pragma omp barrier
#pragma omp single
    if (!atomic_load(&rep.stop)) {
      running all = {0, (double *)(ws + o_rm), (double *)(ws + o_rM), ldm}; /* thread 0's */
      for (int u = 0; u < nt; u++) {
        char *wu = ws + per * (size_t)u;
        int64_t first = blocks * u / nt * block, end = blocks * (u + 1) / nt * block;
        if (end > n) end = n;
        running ru = {(double)(end > first ? end - first : 0), (double *)(wu + o_rm),
                      (double *)(wu + o_rM), ldm};
        if (u == 0)
          all.n = ru.n;
        else
          merge_running(p, &all, &ru, (double *)(ws + o_d));
      }
      for (int64_t j = 0; j < p; j++) {
        mean[j] = all.mean[j];
        for (int64_t i = j; i < p; i++) M[i + j * p] = M[j + i * p] = all.M[i + j * ldm];
      }
    }
  }
  return rep.st;
}
