/* Body of pack.c, instantiated once per compute type: T and SFX are defined
 * by the includer (float/f32, double/f64). */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)

static inline T CAT(load, SFX)(const void *base, gstat_dtype dtype, int64_t off) {
  switch (dtype) {
    case GSTAT_F32: return (T)((const float *)base)[off];
    case GSTAT_F64: return (T)((const double *)base)[off];
    case GSTAT_BF16: return (T)gstat_bf16_to_f32(((const uint16_t *)base)[off]);
  }
  return (T)0;
}

static inline void CAT(store, SFX)(void *base, gstat_dtype dtype, int64_t off, T v) {
  switch (dtype) {
    case GSTAT_F32: ((float *)base)[off] = (float)v; break;
    case GSTAT_F64: ((double *)base)[off] = (double)v; break;
    case GSTAT_BF16: ((uint16_t *)base)[off] = gstat_f32_to_bf16((float)v); break;
  }
}

void CAT(gstat_i_pack_lower, SFX)(const gstat_matrix *A, int64_t b, gstat_uplo uplo, T *dst,
                                  int64_t ld) {
  const void *base = A->data;
  int64_t n = A->rows, o = b * A->batch_stride;
  /* reading the upper triangle as a lower one is reading the transpose */
  int64_t rs = uplo == GSTAT_LOWER ? A->row_stride : A->col_stride;
  int64_t cs = uplo == GSTAT_LOWER ? A->col_stride : A->row_stride;
  if (A->dtype == NATIVE) { /* no conversion: plain typed loops */
    const T *src = (const T *)base + o;
    if (rs <= cs) {
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = j; i < n; i++) dst[i + j * ld] = src[i * rs + j * cs];
    } else if (cs == 1) { /* row-major: transpose 8 x 8 tiles (fixed trip counts vectorize) */
      int64_t nb = n / 8 * 8;
      for (int64_t jb = 0; jb < nb; jb += 8)
        for (int64_t ib = jb; ib < nb; ib += 8)
          for (int64_t j = 0; j < 8; j++)
            for (int64_t i = 0; i < 8; i++)
              dst[ib + i + (jb + j) * ld] = src[(ib + i) * rs + jb + j];
      for (int64_t i = nb; i < n; i++) /* the rows below the last full tile */
        for (int64_t j = 0; j <= i; j++) dst[i + j * ld] = src[i * rs + j];
    } else { /* walk the source in its own order */
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) dst[i + j * ld] = src[i * rs + j * cs];
    }
    return;
  }
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = j; i < n; i++)
      dst[i + j * ld] = CAT(load, SFX)(base, A->dtype, o + i * rs + j * cs);
}

void CAT(gstat_i_pack_full, SFX)(const gstat_matrix *M, int64_t b, T *dst, int64_t ld) {
  int64_t o = b * M->batch_stride;
  int64_t rows = M->rows, cols = M->cols, rs = M->row_stride, cs = M->col_stride;
  if (M->dtype == NATIVE && (rows <= 1 || rs == 1)) { /* column-major already: copy columns */
    const T *src = (const T *)M->data + o;
    for (int64_t j = 0; j < cols; j++)
      for (int64_t i = 0; i < rows; i++) dst[i + j * ld] = src[i + j * cs];
    return;
  }
  if (M->dtype == NATIVE && cs == 1) { /* row-major (numpy, data matrices): 8 x 8 tiles */
    const T *src = (const T *)M->data + o;
    int64_t rb = rows / 8 * 8, cb = cols / 8 * 8;
    for (int64_t ib = 0; ib < rb; ib += 8)
      for (int64_t jb = 0; jb < cb; jb += 8)
        for (int64_t j = 0; j < 8; j++)
          for (int64_t i = 0; i < 8; i++) dst[ib + i + (jb + j) * ld] = src[(ib + i) * rs + jb + j];
    for (int64_t i = 0; i < rows; i++) /* the right and bottom edges */
      for (int64_t j = i < rb ? cb : 0; j < cols; j++) dst[i + j * ld] = src[i * rs + j];
    return;
  }
  for (int64_t j = 0; j < M->cols; j++)
    for (int64_t i = 0; i < M->rows; i++)
      dst[i + j * ld] =
          CAT(load, SFX)(M->data, M->dtype, o + i * M->row_stride + j * M->col_stride);
}

void CAT(gstat_i_unpack_full, SFX)(const T *src, int64_t ld, const gstat_matrix *M, int64_t b) {
  int64_t o = b * M->batch_stride;
  if (M->dtype == NATIVE) { /* no conversion: plain typed loops in the destination's order */
    T *dst = (T *)M->data + o;
    int64_t rs = M->row_stride, cs = M->col_stride;
    if (M->rows > 1 && M->cols > 1 && rs > cs && cs == 1) { /* row-major: 8 x 8 tiles */
      int64_t rb = M->rows / 8 * 8, cb = M->cols / 8 * 8;
      for (int64_t ib = 0; ib < rb; ib += 8)
        for (int64_t jb = 0; jb < cb; jb += 8)
          for (int64_t i = 0; i < 8; i++)
            for (int64_t j = 0; j < 8; j++)
              dst[(ib + i) * rs + jb + j] = src[ib + i + (jb + j) * ld];
      for (int64_t i = 0; i < M->rows; i++) /* the right and bottom edges */
        for (int64_t j = i < rb ? cb : 0; j < M->cols; j++) dst[i * rs + j] = src[i + j * ld];
    } else if (M->rows > 1 && M->cols > 1 && rs > cs) {
      for (int64_t i = 0; i < M->rows; i++)
        for (int64_t j = 0; j < M->cols; j++) dst[i * rs + j * cs] = src[i + j * ld];
    } else {
      for (int64_t j = 0; j < M->cols; j++)
        for (int64_t i = 0; i < M->rows; i++) dst[i * rs + j * cs] = src[i + j * ld];
    }
    return;
  }
  if (M->rows > 1 && M->row_stride != 1) {
    /* row-major-like destination: walk it in its own order */
    for (int64_t i = 0; i < M->rows; i++)
      for (int64_t j = 0; j < M->cols; j++) CAT(store, SFX)
    (M->data, M->dtype, o + i * M->row_stride + j * M->col_stride, src[i + j * ld]);
    return;
  }
  for (int64_t j = 0; j < M->cols; j++)
    for (int64_t i = 0; i < M->rows; i++) CAT(store, SFX)
  (M->data, M->dtype, o + i * M->row_stride + j * M->col_stride, src[i + j * ld]);
}

#undef CAT
#undef CAT_
