/*
 * Steps of the PCA routines on device data, written over the scheduler's
 * dense primitives (GEMM, copies) so that the data never leave the device:
 * a region of device memory carved into matrices, host vectors moved in and
 * out, and the centred (scaled) copy of X that Gram and randomized PCA work on.
 * Column sums and sums of squares are GEMMs with a column of ones or with
 * each column itself (batched over the columns).
 */
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/sched.h"
#include "pca/pca_internal.h"

#define TRY(expr)                  \
  do {                             \
    gstat_status s_ = (expr);      \
    if (s_ != GSTAT_OK) return s_; \
  } while (0)

gstat_matrix gstat_i_dev_take(gstat_i_dev_region *r, gstat_dtype dt, int64_t batch, int64_t rows,
                              int64_t cols) {
  size_t bytes = (size_t)(batch * rows * cols) * gstat_dtype_size(dt);
  gstat_matrix m =
      gstat_matrix_col_major(r->base ? r->base + r->used : NULL, dt, batch, rows, cols);
  m.location = r->location;
  m.device = r->device;
  r->used += (bytes + 255) / 256 * 256;
  return m;
}

gstat_status gstat_i_dev_region_open(gstat_ctx *ctx, const char *fn, const gstat_matrix *like,
                                     gstat_i_dev_region *r) {
  void *mem;
  gstat_status st = gstat_i_sched_device_memory(ctx, fn, like, r->used ? r->used : 1, &mem);
  if (st != GSTAT_OK) return st;
  r->base = mem;
  r->used = 0;
  return GSTAT_OK;
}

gstat_status gstat_i_dev_fill(gstat_ctx *ctx, const char *fn, const gstat_matrix *M, double v) {
  /* one host value read through zero strides: no host array of M's size */
  gstat_matrix src = gstat_matrix_col_major(&v, GSTAT_F64, M->batch, M->rows, M->cols);
  src.batch_stride = src.row_stride = src.col_stride = 0;
  return gstat_i_sched_copy(ctx, fn, "ones", &src, (gstat_matrix *)M);
}

gstat_status gstat_i_dev_put(gstat_ctx *ctx, const char *fn, const double *h,
                             const gstat_matrix *M) {
  gstat_matrix src = gstat_matrix_col_major((void *)h, GSTAT_F64, M->batch, M->rows, M->cols);
  return gstat_i_sched_copy(ctx, fn, "a vector", &src, (gstat_matrix *)M);
}

gstat_status gstat_i_dev_get(gstat_ctx *ctx, const char *fn, const gstat_matrix *M, double *h) {
  gstat_matrix dst = gstat_matrix_col_major(h, GSTAT_F64, M->batch, M->rows, M->cols);
  return gstat_i_sched_copy(ctx, fn, "a vector", M, &dst);
}

/* The columns of the dense nb x n x p Xc as nb * p elements of n x 1. */
static gstat_matrix columns(const gstat_matrix *Xc) {
  gstat_matrix c = *Xc;
  c.batch = Xc->batch * Xc->cols;
  c.cols = 1;
  c.col_stride = Xc->rows;
  c.batch_stride = Xc->rows;
  return c;
}

/* vec (nb x 1 x p) as nb * p elements of 1 x 1. */
static gstat_matrix scalars(const gstat_matrix *vec) {
  gstat_matrix s = gstat_matrix_col_major(vec->data, vec->dtype, vec->batch * vec->cols, 1, 1);
  s.batch_stride = 1;
  s.location = vec->location;
  s.device = vec->device;
  return s;
}

gstat_status gstat_i_dev_sumsq(gstat_ctx *ctx, const char *fn, const gstat_matrix *Xc,
                               const gstat_matrix *vec, double *ss) {
  gstat_matrix c = columns(Xc), s = scalars(vec);
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, &c, &c, 0.0, &s));
  return gstat_i_dev_get(ctx, fn, vec, ss);
}

/* mean += the column means of Xc (ones^T Xc / n), subtracted from Xc as
 * rounded to the compute type: one pass of the two-pass mean. */
static gstat_status center_pass(gstat_ctx *ctx, const char *fn, const gstat_i_dev_prep *d,
                                double *mean, double *h) {
  const gstat_matrix *Xc = &d->Xc;
  int64_t count = Xc->batch * Xc->cols;
  TRY(gstat_i_sched_gemm(ctx, fn, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, &d->ones, Xc, 0.0, &d->vec));
  TRY(gstat_i_dev_get(ctx, fn, &d->vec, h));
  for (int64_t e = 0; e < count; e++) {
    double m = h[e] / (double)Xc->rows;
    h[e] = Xc->dtype == GSTAT_F64 ? m : (double)(float)m; /* what the device subtracts */
    mean[e] += h[e];
  }
  TRY(gstat_i_dev_put(ctx, fn, h, &d->vec));
  return gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_NO_TRANS, -1.0, &d->ones, &d->vec, 1.0,
                            Xc);
}

gstat_status gstat_i_dev_prepare(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                 const gstat_i_dev_prep *d, bool center, bool scale, double *mean,
                                 double *sd, double *h, int64_t *constant) {
  int64_t count = d->Xc.batch * d->Xc.cols;
  *constant = -1;
  TRY(gstat_i_sched_copy(ctx, fn, "X", X, (gstat_matrix *)&d->Xc));
  for (int64_t e = 0; e < count; e++) {
    mean[e] = 0;
    sd[e] = 1;
  }
  if (center) {
    TRY(gstat_i_dev_fill(ctx, fn, &d->ones, 1.0));
    /* twice: the second pass takes out what the first one's rounding left */
    TRY(center_pass(ctx, fn, d, mean, h));
    TRY(center_pass(ctx, fn, d, mean, h));
  }
  if (!scale) return GSTAT_OK;
  int64_t n = d->Xc.rows;
  TRY(gstat_i_dev_sumsq(ctx, fn, &d->Xc, &d->vec, sd));
  for (int64_t e = 0; e < count; e++) {
    sd[e] = n > 1 ? sqrt(sd[e] / (double)(n - 1)) : NAN;
    if (!(sd[e] > 0)) {
      *constant = e;
      return GSTAT_OK;
    }
  }
  /* Xs = Xc diag(1 / sd): each column times its factor, one batched GEMM */
  for (int64_t e = 0; e < count; e++) h[e] = 1.0 / sd[e];
  TRY(gstat_i_dev_put(ctx, fn, h, &d->vec));
  gstat_matrix a = columns(&d->Xc), c = columns(&d->Xs), s = scalars(&d->vec);
  return gstat_i_sched_gemm(ctx, fn, GSTAT_NO_TRANS, GSTAT_NO_TRANS, 1.0, &a, &s, 0.0, &c);
}
