/*
 * The CPU backend's rows primitive (backend.h, gstat_i_rows_req): threaded
 * over blocks of rows, each loaded into a cache-sized column-major buffer,
 * centred and scaled there, solved with L (trsm on the block) or multiplied
 * by Q (GEMM on the block), and reduced in double; X is read once and no
 * n x p copy is made (one trsm over a centred copy read and wrote it three
 * more times: bench/README.md, "Mahalanobis after the rows fix"). The sums are
 * added in block order, so the result does not depend on the thread count.
 */
#include <omp.h>
#include <stdbool.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/cpu/rows_cpu.h"
#include "backend/dense.h"

#define BLOCK_VALUES ((int64_t)1 << 16) /* ~512 KiB of doubles per block */

/* Rows [r0, r0 + rows) of element b of M, as a descriptor of their own. */
static gstat_matrix rows_of(const gstat_matrix *M, int64_t b, int64_t r0, int64_t rows) {
  gstat_matrix part = *M;
  part.data = gstat_i_elem(M, b, r0, 0);
  part.batch = 1;
  part.rows = rows;
  return part;
}

/* u (rows x p, column-major, ld) = (u - center) * inv, in place. */
static void center_block(gstat_dtype ct, int64_t rows, int64_t p, void *u, int64_t ld,
                         const double *center, const double *inv) {
  for (int64_t j = 0; j < p; j++) {
    double c = center ? center[j] : 0.0, f = inv[j];
    if (ct == GSTAT_F64) {
      double *col = (double *)u + j * ld;
      for (int64_t i = 0; i < rows; i++) col[i] = (col[i] - c) * f;
    } else {
      float *col = (float *)u + j * ld;
      for (int64_t i = 0; i < rows; i++) col[i] = (float)(((double)col[i] - c) * f);
    }
  }
}

/* d[i] = sum_j u_ij v_ij (u ld ldu; v ld rows, NULL: u), in double. */
static void reduce_block(gstat_dtype ct, int64_t rows, int64_t p, const void *u, int64_t ldu,
                         const void *v, double *d) {
  int64_t ldv = v ? rows : ldu;
  if (!v) v = u;
  for (int64_t i = 0; i < rows; i++) d[i] = 0.0;
  for (int64_t j = 0; j < p; j++) {
    if (ct == GSTAT_F64) {
      const double *a = (const double *)u + j * ldu, *b = (const double *)v + j * ldv;
      for (int64_t i = 0; i < rows; i++) d[i] += a[i] * b[i];
    } else {
      const float *a = (const float *)u + j * ldu, *b = (const float *)v + j * ldv;
      for (int64_t i = 0; i < rows; i++) d[i] += (double)a[i] * (double)b[i];
    }
  }
}

/* The p x p matrix of L or Q, dense in the compute type; Q's lower triangle
 * mirrored, for a plain GEMM. */
static void load_matrix(gstat_dtype ct, const gstat_matrix *T, bool mirror, void *t) {
  int64_t p = T->rows;
  gstat_i_dense_load(T, 0, ct, t, p);
  if (!mirror) return;
  size_t es = gstat_dtype_size(ct);
  for (int64_t j = 1; j < p; j++)
    for (int64_t i = 0; i < j; i++)
      memcpy((char *)t + (size_t)(i + j * p) * es, (char *)t + (size_t)(j + i * p) * es, es);
}

typedef struct {
  const gstat_i_rows_req *r;
  gstat_dtype ct;
  int64_t n, p, block, blocks;
  const void *t;        /* L or Q, dense (NULL: neither) */
  const double *center; /* the request's, or center_vec as doubles */
  const double *inv;    /* 1 / scale */
  double *bsum;         /* 2 per block */
} rows_job;

/* d for rows [r0, r0 + rows) through one thread's buffers (u, v: block x
 * p); bctx NULL inside a parallel region (see comoment.c). */
static void block_d(const rows_job *job, int64_t r0, int64_t rows, gstat_ctx *bctx, void *u,
                    void *v, double *d) {
  const gstat_i_rows_req *r = job->r;
  int64_t p = job->p;
  gstat_matrix part = rows_of(r->X, r->b, r0, rows);
  gstat_i_dense_load(&part, 0, job->ct, u, rows);
  if (job->center || r->scale) center_block(job->ct, rows, p, u, rows, job->center, job->inv);
  /* sizes were checked against the BLAS range: these cannot fail */
  if (r->L)
    (void)gstat_i_trsm(bctx, job->ct, true, GSTAT_LOWER, GSTAT_TRANS, GSTAT_NON_UNIT, rows, p, 1.0,
                       job->t, p, u, rows);
  else if (r->Q)
    (void)gstat_i_gemm(bctx, job->ct, GSTAT_NO_TRANS, GSTAT_NO_TRANS, rows, p, p, 1.0, u, rows,
                       job->t, p, 0.0, v, rows);
  reduce_block(job->ct, rows, p, u, rows, r->Q ? v : NULL, d);
}

/* Block kb of the job: its d, stored where asked, and its two sums. */
static void run_block(const rows_job *job, int64_t kb, gstat_ctx *bctx, void *u, void *v,
                      double *d) {
  const gstat_i_rows_req *r = job->r;
  int64_t r0 = kb * job->block, rows = job->n - r0 < job->block ? job->n - r0 : job->block;
  block_d(job, r0, rows, bctx, u, v, d);
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < rows; i++) {
    s1 += d[i];
    s2 += d[i] * d[i];
  }
  job->bsum[2 * kb] = s1;
  job->bsum[2 * kb + 1] = s2;
  if (r->d) {
    gstat_matrix dpart = rows_of(r->d, 0, r0, rows);
    gstat_i_dense_store(GSTAT_F64, d, rows, &dpart, 0);
  }
}

/* Every block on nt threads, a contiguous slice each (handing blocks out one
 * at a time cost Ledoit-Wolf more CPU even on one thread: bench/README.md). */
static void run_all_blocks(const rows_job *job, int nt, gstat_ctx *ctx, char *ws, size_t per,
                           size_t o_u, size_t o_v, size_t o_d) {
#pragma omp parallel num_threads(nt)
  {
    char *w = ws + per * (size_t)omp_get_thread_num();
#pragma omp for schedule(static)
    for (int64_t kb = 0; kb < job->blocks; kb++)
      run_block(job, kb, nt > 1 ? NULL : ctx, w + o_u, w + o_v, (double *)(w + o_d));
  }
}

gstat_status gstat_i_cpu_rows(void *state, gstat_ctx *ctx, const gstat_i_rows_req *r) {
  (void)state;
  const gstat_matrix *X = r->X, *T = r->L ? r->L : r->Q;
  int64_t n = X->rows, p = X->cols;
  if (r->sums) r->sums[0] = r->sums[1] = 0.0;
  if (n == 0) return GSTAT_OK;
  if (n > INT32_MAX || p > INT32_MAX)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "rows: X exceeds the BLAS integer range");
  rows_job job = {.r = r, .ct = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32, .n = n, .p = p};
  size_t es = gstat_dtype_size(job.ct);
  /* with L or Q, taller blocks: BLAS-3 on a block runs at its full rate only
   * when the block is large against the p x p matrix it reads (a trsm's
   * block stays within L2: 1 MiB in float32) */
  int64_t tall = r->Q ? 16 : r->L ? 4 : 1;
  int64_t block = tall * BLOCK_VALUES / (p > 0 ? p : 1), least = T ? 256 : 64;
  if (block < least) block = least;
  job.block = block < n ? block : n;
  job.blocks = (n + job.block - 1) / job.block;
  double flops = (double)n * (double)p * (T ? 2.0 * (double)p : 3.0);
  double seconds =
      T ? gstat_i_cpu_seconds(job.ct, flops, true)
        : gstat_i_cpu_loop_seconds(flops, (double)(n * p) * (double)gstat_dtype_size(X->dtype));
  int nt = gstat_i_cpu_batch_threads(ctx, job.blocks, seconds);
  /* shared: L or Q (dense, ct), 1/scale, per-block sums; per thread: the
   * block, its product, its d */
  gstat_i_ws_plan pl = {0, true};
  size_t o_t = gstat_i_ws_take(&pl, T ? p * p : 0, es);
  size_t o_inv = gstat_i_ws_take(&pl, p, sizeof(double));
  size_t o_c = gstat_i_ws_take(&pl, r->center_vec ? p : 0, sizeof(double));
  size_t o_bsum = gstat_i_ws_take(&pl, 2 * job.blocks, sizeof(double));
  size_t shared = (pl.size + 63) / 64 * 64;
  gstat_i_ws_plan tp = {0, true};
  size_t o_u = gstat_i_ws_take(&tp, job.block * p, es);
  size_t o_v = gstat_i_ws_take(&tp, r->Q ? job.block * p : 0, es);
  size_t o_d = gstat_i_ws_take(&tp, job.block, sizeof(double));
  size_t per = (tp.size + 63) / 64 * 64, total;
  if (!pl.ok || !tp.ok || !gstat_i_mul_size(per, (size_t)nt, &total) ||
      !gstat_i_add_size(total, shared, &total))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "rows: workspace size overflows");
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA_AUX, total);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "rows: cannot allocate %zu bytes", total);
  double *inv = (double *)(ws + o_inv);
  for (int64_t j = 0; j < p; j++) inv[j] = r->scale ? 1.0 / r->scale[j] : 1.0;
  if (T) load_matrix(job.ct, T, r->Q != NULL, ws + o_t);
  job.t = T ? ws + o_t : NULL;
  job.inv = inv;
  job.center = r->center;
  if (r->center_vec) { /* p x 1 or 1 x p: either way p values in order */
    gstat_i_dense_load(r->center_vec, 0, GSTAT_F64, ws + o_c, r->center_vec->rows);
    job.center = (const double *)(ws + o_c);
  }
  job.bsum = (double *)(ws + o_bsum);
  run_all_blocks(&job, nt, ctx, ws + shared, per, o_u, o_v, o_d);
  if (r->sums)
    for (int64_t kb = 0; kb < job.blocks; kb++) {
      r->sums[0] += job.bsum[2 * kb];
      r->sums[1] += job.bsum[2 * kb + 1];
    }
  return GSTAT_OK;
}
