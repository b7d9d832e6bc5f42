/* Packing between descriptors and dense column-major compute buffers. */
#include <math.h>

#include "backend/cpu/pack.h"

#define T float
#define SFX f32
#define NATIVE GSTAT_F32
#include "backend/cpu/pack_tmpl.h"
#undef T
#undef SFX
#undef NATIVE

#define T double
#define SFX f64
#define NATIVE GSTAT_F64
#include "backend/cpu/pack_tmpl.h"
#undef T
#undef SFX
#undef NATIVE

void gstat_i_fill_nan(const gstat_matrix *M, int64_t b) {
  int64_t o = b * M->batch_stride;
  for (int64_t j = 0; j < M->cols; j++)
    for (int64_t i = 0; i < M->rows; i++)
      store_f64(M->data, M->dtype, o + i * M->row_stride + j * M->col_stride, NAN);
}
