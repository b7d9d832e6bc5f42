/*
 * The CPU backend's dense primitives on descriptors (backend.h: gemm,
 * orthonormalize), over the BLAS/LAPACK wrappers of dense_cpu.c: an element
 * with a unit stride goes to BLAS as it lies, others through a dense copy.
 */
#include <string.h>

#include "core/matrix.h"
#include "backend/backend.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"
#include "backend/gemm_view.h"

/* Element b of m, or element 0 when m has batch 1 (shared by every element). */
static gstat_matrix element(const gstat_matrix *m, int64_t b) {
  gstat_matrix e = *m;
  e.data = gstat_i_elem(m, m->batch == 1 ? 0 : b, 0, 0);
  e.batch = 1;
  return e;
}

/* A dense column-major copy of an element BLAS cannot take as it lies. */
typedef struct dense_tmp {
  gstat_matrix m;
  void *mem;
  size_t bytes;
} dense_tmp;

static gstat_status make_dense(gstat_ctx *ctx, const gstat_matrix *e, bool load, dense_tmp *t) {
  memset(t, 0, sizeof *t);
  t->m = *e;
  if (gstat_i_blas_view_of(e).ok) return GSTAT_OK;
  size_t count = (size_t)(e->rows * e->cols), es = gstat_dtype_size(e->dtype);
  t->bytes = count > 0 ? count * es : 1;
  t->mem = gstat_i_alloc(ctx, t->bytes);
  if (!t->mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "gemm: cannot allocate %zu bytes", t->bytes);
  t->m = gstat_matrix_col_major(t->mem, e->dtype, 1, e->rows, e->cols);
  if (load) gstat_i_dense_load(e, 0, e->dtype, t->mem, e->rows > 0 ? e->rows : 1);
  return GSTAT_OK;
}

static void drop_dense(gstat_ctx *ctx, dense_tmp *t) {
  if (t->mem) gstat_i_free(ctx, t->mem, t->bytes);
  t->mem = NULL;
}

static gstat_status gemm_one(gstat_ctx *ctx, gstat_trans ta, gstat_trans tb, double alpha,
                             const gstat_matrix *A, const gstat_matrix *B, double beta,
                             const gstat_matrix *C) {
  dense_tmp a, b, c;
  memset(&b, 0, sizeof b);
  memset(&c, 0, sizeof c);
  gstat_status st = make_dense(ctx, A, true, &a);
  if (st == GSTAT_OK) st = make_dense(ctx, B, true, &b);
  if (st == GSTAT_OK) st = make_dense(ctx, C, beta != 0, &c);
  if (st == GSTAT_OK) {
    gstat_i_gemm_plan p = gstat_i_gemm_plan_of(ta, tb, &a.m, &b.m, &c.m);
    const void *first = p.swap ? b.m.data : a.m.data, *second = p.swap ? a.m.data : b.m.data;
    st = gstat_i_gemm(ctx, C->dtype, p.t1, p.t2, p.m, p.n, p.k, alpha, first, p.ld1, second, p.ld2,
                      beta, c.m.data, p.ldc);
  }
  if (st == GSTAT_OK && c.mem) gstat_i_dense_store(C->dtype, c.mem, C->rows, C, 0);
  drop_dense(ctx, &c);
  drop_dense(ctx, &b);
  drop_dense(ctx, &a);
  return st;
}

gstat_status gstat_i_cpu_gemm(void *state, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb,
                              double alpha, const gstat_matrix *A, const gstat_matrix *B,
                              double beta, const gstat_matrix *C) {
  (void)state;
  if (C->dtype != GSTAT_F32 && C->dtype != GSTAT_F64)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "gemm: the compute dtype is float32 or float64");
  for (int64_t b = 0; b < C->batch; b++) {
    gstat_matrix a = element(A, b), bm = element(B, b), c = element(C, b);
    gstat_status st = gemm_one(ctx, ta, tb, alpha, &a, &bm, beta, &c);
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}

/* Whether element 0 of M lies column-major with its own leading dimension
 * (ld; a single column counts as such). */
static bool col_major(const gstat_matrix *M, int64_t *ld) {
  *ld = M->cols > 1 ? M->col_stride : M->rows;
  return M->row_stride == 1 || M->rows == 1;
}

gstat_status gstat_i_cpu_syrk_lower(void *state, gstat_ctx *ctx, gstat_trans trans,
                                    const gstat_matrix *A, const gstat_matrix *C) {
  (void)state;
  int64_t lda, ldc;
  if ((C->dtype != GSTAT_F32 && C->dtype != GSTAT_F64) || A->dtype != C->dtype ||
      !col_major(A, &lda) || !col_major(C, &ldc) || lda < 1 || ldc < 1)
    return GSTAT_EUNSUPPORTED; /* the scheduler's gemm */
  int64_t n = C->rows, k = trans == GSTAT_TRANS ? A->rows : A->cols;
  for (int64_t b = 0; b < C->batch; b++) {
    gstat_status st = gstat_i_syrk_lower(ctx, C->dtype, trans, n, k, 1.0,
                                         gstat_i_elem(A, A->batch == 1 ? 0 : b, 0, 0), lda, 0.0,
                                         gstat_i_elem(C, b, 0, 0), ldc);
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}

gstat_status gstat_i_cpu_orthonormalize(void *state, gstat_ctx *ctx, const gstat_matrix *A) {
  (void)state;
  gstat_dtype dt = A->dtype;
  int64_t m = A->rows, n = A->cols;
  if (dt != GSTAT_F32 && dt != GSTAT_F64)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "qr: the compute dtype is float32 or float64");
  if (m == 0 || n == 0) return GSTAT_OK;
  int64_t work = gstat_i_orthonormalize_work(dt, m, n);
  if (work == 0)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "qr: dimensions exceed LAPACK's integer range");
  /* LAPACK's work and, for an element without unit row stride, a dense copy */
  bool direct = A->row_stride == 1 || m == 1;
  size_t es = gstat_dtype_size(dt), wbytes = (size_t)work * es;
  size_t cbytes = direct ? 0 : (size_t)(m * n) * es;
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_CPU, wbytes + cbytes);
  if (!ws) return gstat_i_fail(ctx, GSTAT_ENOMEM, "qr: cannot allocate %zu bytes", wbytes + cbytes);
  for (int64_t b = 0; b < A->batch; b++) {
    gstat_status st;
    if (direct) {
      int64_t ld = n > 1 ? A->col_stride : m;
      st = gstat_i_orthonormalize(ctx, dt, m, n, gstat_i_elem(A, b, 0, 0), ld, ws);
    } else {
      gstat_i_dense_load(A, b, dt, ws + wbytes, m);
      st = gstat_i_orthonormalize(ctx, dt, m, n, ws + wbytes, m, ws);
      if (st == GSTAT_OK) gstat_i_dense_store(dt, ws + wbytes, m, A, b);
    }
    if (st != GSTAT_OK) return st;
  }
  return GSTAT_OK;
}
