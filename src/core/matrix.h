/* Descriptor checks shared by every entry point (internal). */
#ifndef GSTAT_CORE_MATRIX_H
#define GSTAT_CORE_MATRIX_H

#include <stdbool.h>

#include "core/internal.h"

/* Validate one descriptor: data, dtype, location, extents >= 0, strides >= 1
 * where the extent is > 1, no two elements at one address, byte span fits.
 * `fn` and `name` go into the message ("eigh: A.col_stride=0 must be >= 1"). */
gstat_status gstat_i_check_matrix(gstat_ctx *ctx, const char *fn, const char *name,
                                  const gstat_matrix *m);

/* gstat_i_check_matrix, and the shape batch x rows x cols (NULL refused). */
gstat_status gstat_i_check_shape(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *m, int64_t batch, int64_t rows, int64_t cols);

/* Same data, dtype, location and strides (an in-place output). */
bool gstat_i_same_view(const gstat_matrix *a, const gstat_matrix *b);

/* Whether the byte spans of two (checked) descriptors intersect. */
bool gstat_i_overlap(const gstat_matrix *a, const gstat_matrix *b);

/* Refuse overlap of out with in unless out is the same view as in (when
 * in-place is allowed). */
gstat_status gstat_i_check_alias(gstat_ctx *ctx, const char *fn, const char *out_name,
                                 const gstat_matrix *out, const char *in_name,
                                 const gstat_matrix *in, bool in_place_ok);

/* Pointer to element (b, i, j). */
static inline void *gstat_i_elem(const gstat_matrix *m, int64_t b, int64_t i, int64_t j) {
  return (char *)m->data + (size_t)(b * m->batch_stride + i * m->row_stride + j * m->col_stride) *
                               gstat_dtype_size(m->dtype);
}

/* Elements b .. b + count - 1 of m as a batch of their own (no data move). */
static inline gstat_matrix gstat_i_batch_part(const gstat_matrix *m, int64_t b, int64_t count) {
  gstat_matrix e = *m;
  e.data = (char *)m->data + (size_t)(b * m->batch_stride) * gstat_dtype_size(m->dtype);
  e.batch = count;
  return e;
}

/* Which part of a matrix a check reads. */
typedef enum gstat_i_tri {
  GSTAT_I_TRI_FULL,
  GSTAT_I_TRI_LOWER,
  GSTAT_I_TRI_UPPER,
  GSTAT_I_TRI_STRICT_LOWER,
  GSTAT_I_TRI_STRICT_UPPER
} gstat_i_tri;

/* First non-finite entry of part `tri` of a host batch: true and (*b, *i, *j)
 * set when one exists. */
bool gstat_i_find_nonfinite(const gstat_matrix *m, gstat_i_tri tri, int64_t *b, int64_t *i,
                            int64_t *j);

#endif /* GSTAT_CORE_MATRIX_H */
