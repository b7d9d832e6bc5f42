/* The strided batched matrix descriptor: constructors, checks, overlap. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/matrix.h"

size_t gstat_dtype_size(gstat_dtype dtype) {
  switch (dtype) {
    case GSTAT_F32: return 4;
    case GSTAT_F64: return 8;
    case GSTAT_BF16: return 2;
  }
  return 0;
}

float gstat_bf16_to_f32(uint16_t x) {
  uint32_t u = (uint32_t)x << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t gstat_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
  return (uint16_t)(u >> 16);
}

static gstat_matrix make(void *data, gstat_dtype dtype, int64_t batch, int64_t rows, int64_t cols,
                         int64_t rs, int64_t cs) {
  gstat_matrix m;
  memset(&m, 0, sizeof m);
  m.data = data;
  m.dtype = dtype;
  m.location = GSTAT_HOST;
  m.batch = batch;
  m.rows = rows;
  m.cols = cols;
  m.batch_stride = rows * cols;
  m.row_stride = rs;
  m.col_stride = cs;
  return m;
}

gstat_matrix gstat_matrix_row_major(void *data, gstat_dtype dtype, int64_t batch, int64_t rows,
                                    int64_t cols) {
  return make(data, dtype, batch, rows, cols, cols, 1);
}

gstat_matrix gstat_matrix_col_major(void *data, gstat_dtype dtype, int64_t batch, int64_t rows,
                                    int64_t cols) {
  return make(data, dtype, batch, rows, cols, 1, rows);
}

gstat_matrix gstat_vector_batch(void *data, gstat_dtype dtype, int64_t batch, int64_t n) {
  return make(data, dtype, batch, n, 1, 1, n);
}

/* Offset (in elements) of the last element, or -1 on overflow. */
static int64_t last_offset(const gstat_matrix *m) {
  int64_t ext[3] = {m->batch, m->rows, m->cols};
  int64_t str[3] = {m->batch_stride, m->row_stride, m->col_stride};
  int64_t off = 0;
  for (int d = 0; d < 3; d++) {
    if (ext[d] <= 1) continue;
    int64_t t;
    if (__builtin_mul_overflow(ext[d] - 1, str[d], &t) || __builtin_add_overflow(off, t, &off))
      return -1;
  }
  return off;
}

static bool is_empty(const gstat_matrix *m) {
  return m->batch == 0 || m->rows == 0 || m->cols == 0;
}

gstat_status gstat_i_check_matrix(gstat_ctx *ctx, const char *fn, const char *name,
                                  const gstat_matrix *m) {
  if (!m) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, name);
  size_t es = gstat_dtype_size(m->dtype);
  if (es == 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s.dtype=%d is not a gstat_dtype", fn, name,
                        (int)m->dtype);
  if (m->location != GSTAT_HOST && m->location != GSTAT_CUDA)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s.location=%d is not a gstat_location", fn, name,
                        (int)m->location);
  const char *dim_name[3] = {"batch", "rows", "cols"};
  const char *stride_name[3] = {"batch_stride", "row_stride", "col_stride"};
  int64_t ext[3] = {m->batch, m->rows, m->cols};
  int64_t str[3] = {m->batch_stride, m->row_stride, m->col_stride};
  for (int d = 0; d < 3; d++)
    if (ext[d] < 0)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s.%s=%lld must be >= 0", fn, name, dim_name[d],
                          (long long)ext[d]);
  if (is_empty(m)) return GSTAT_OK;
  if (!m->data) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s.data is NULL", fn, name);
  for (int d = 0; d < 3; d++)
    if (ext[d] > 1 && str[d] < 1)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s.%s=%lld must be >= 1", fn, name,
                          stride_name[d], (long long)str[d]);
  int64_t last = last_offset(m);
  int64_t bytes;
  if (last < 0 || __builtin_add_overflow(last, 1, &bytes) ||
      __builtin_mul_overflow(bytes, (int64_t)es, &bytes) || (uint64_t)bytes > (uint64_t)PTRDIFF_MAX)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: %s spans more bytes than fit in memory", fn, name);

  /* No two elements at one address: with the dimensions ordered by stride,
   * each stride must step past everything the smaller ones reach. */
  int idx[3] = {0, 1, 2};
  for (int a = 0; a < 3; a++)
    for (int b = a + 1; b < 3; b++)
      if (str[idx[b]] < str[idx[a]]) {
        int t = idx[a];
        idx[a] = idx[b];
        idx[b] = t;
      }
  int64_t reach = 0; /* offset of the farthest element of the inner dims */
  for (int k = 0; k < 3; k++) {
    int d = idx[k];
    if (ext[d] <= 1) continue;
    if (str[d] <= reach)
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %s strides overlap: %s=%lld does not step past the other "
                          "dimensions (elements would share memory)",
                          fn, name, stride_name[d], (long long)str[d]);
    reach += (ext[d] - 1) * str[d]; /* no overflow: bounded by last_offset */
  }
  return GSTAT_OK;
}

bool gstat_i_same_view(const gstat_matrix *a, const gstat_matrix *b) {
  return a->data == b->data && a->dtype == b->dtype && a->location == b->location &&
         a->device == b->device && a->batch == b->batch && a->rows == b->rows &&
         a->cols == b->cols && (a->batch <= 1 || a->batch_stride == b->batch_stride) &&
         (a->rows <= 1 || a->row_stride == b->row_stride) &&
         (a->cols <= 1 || a->col_stride == b->col_stride);
}

bool gstat_i_overlap(const gstat_matrix *a, const gstat_matrix *b) {
  if (is_empty(a) || is_empty(b)) return false;
  if (a->location != b->location || (a->location == GSTAT_CUDA && a->device != b->device))
    return false;
  uintptr_t a0 = (uintptr_t)a->data, b0 = (uintptr_t)b->data;
  uintptr_t a1 = a0 + (uintptr_t)(last_offset(a) + 1) * gstat_dtype_size(a->dtype);
  uintptr_t b1 = b0 + (uintptr_t)(last_offset(b) + 1) * gstat_dtype_size(b->dtype);
  return a0 < b1 && b0 < a1;
}

gstat_status gstat_i_check_alias(gstat_ctx *ctx, const char *fn, const char *out_name,
                                 const gstat_matrix *out, const char *in_name,
                                 const gstat_matrix *in, bool in_place_ok) {
  if (!out || !in || !gstat_i_overlap(out, in)) return GSTAT_OK;
  if (in_place_ok && gstat_i_same_view(out, in)) return GSTAT_OK;
  return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s overlaps %s%s", fn, out_name, in_name,
                      in_place_ok ? " (only an identical view is allowed, for in-place use)" : "");
}

/* Index of the first non-finite of `count` values `step` bytes apart, or -1. */
static int64_t first_nonfinite(const char *p, ptrdiff_t step, int64_t count, gstat_dtype dtype) {
  switch (dtype) {
    case GSTAT_F32:
      for (int64_t k = 0; k < count; k++, p += step)
        if (!isfinite(*(const float *)p)) return k;
      return -1;
    case GSTAT_F64:
      for (int64_t k = 0; k < count; k++, p += step)
        if (!isfinite(*(const double *)p)) return k;
      return -1;
    case GSTAT_BF16:
      for (int64_t k = 0; k < count; k++, p += step)
        if ((*(const uint16_t *)p & 0x7f80u) == 0x7f80u) return k;
      return -1;
  }
  return -1;
}

bool gstat_i_find_nonfinite(const gstat_matrix *m, gstat_i_tri tri, int64_t *bo, int64_t *io,
                            int64_t *jo) {
  /* Walk in memory order: the outer loop over the dimension with the larger
   * stride. `lo`/`hi` bound the inner index given the outer one. */
  /* The stride of a dimension of extent 1 is ignored by the checks and may
   * hold anything (INT64_MIN included): it is never multiplied. */
  int64_t rs = m->rows > 1 ? m->row_stride : 0, cs = m->cols > 1 ? m->col_stride : 0;
  int64_t bs = m->batch > 1 ? m->batch_stride : 0;
  bool rows_outer = m->rows > 1 && m->cols > 1 && rs > cs;
  int64_t outer_n = rows_outer ? m->rows : m->cols, inner_n = rows_outer ? m->cols : m->rows;
  size_t es = gstat_dtype_size(m->dtype);
  ptrdiff_t outer_step = (ptrdiff_t)((rows_outer ? rs : cs) * (int64_t)es);
  ptrdiff_t inner_step = (ptrdiff_t)((rows_outer ? cs : rs) * (int64_t)es);
  for (int64_t b = 0; b < m->batch; b++) {
    const char *base = (const char *)m->data + (size_t)(b * bs) * es;
    for (int64_t o = 0; o < outer_n; o++) {
      /* in (i, j) terms: lower is i >= j, upper is i <= j */
      int64_t lo = 0, hi = inner_n;
      bool lower_part = tri == GSTAT_I_TRI_LOWER || tri == GSTAT_I_TRI_STRICT_LOWER;
      bool strict = tri == GSTAT_I_TRI_STRICT_LOWER || tri == GSTAT_I_TRI_STRICT_UPPER;
      if (tri != GSTAT_I_TRI_FULL) {
        /* inner index k is i when columns are outer (o = j), j when rows are outer (o = i) */
        bool k_ge_o = lower_part != rows_outer; /* lower with columns outer: i >= j */
        if (k_ge_o)
          lo = o + (strict ? 1 : 0);
        else
          hi = o + (strict ? 0 : 1) < inner_n ? o + (strict ? 0 : 1) : inner_n;
      }
      if (lo >= hi) continue;
      int64_t k =
          first_nonfinite(base + o * outer_step + lo * inner_step, inner_step, hi - lo, m->dtype);
      if (k >= 0) {
        *bo = b;
        *io = rows_outer ? o : lo + k;
        *jo = rows_outer ? lo + k : o;
        return true;
      }
    }
  }
  return false;
}

gstat_status gstat_i_check_shape(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *m, int64_t batch, int64_t rows, int64_t cols) {
  if (!m) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s is NULL", fn, name);
  gstat_status st = gstat_i_check_matrix(ctx, fn, name, m);
  if (st != GSTAT_OK) return st;
  if (m->batch != batch || m->rows != rows || m->cols != cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: %s is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x %" PRId64,
                        fn, name, m->batch, m->rows, m->cols, batch, rows, cols);
  return GSTAT_OK;
}
