/*
 * Moving one batch element between a caller's descriptor (any dtype, any
 * strides) and a dense column-major buffer in the compute type (float or
 * double) that LAPACK and our kernels work on. Conversions happen here, so
 * bf16 is widened on the way in and rounded to nearest even on the way out.
 */
#ifndef GSTAT_BACKEND_CPU_PACK_H
#define GSTAT_BACKEND_CPU_PACK_H

#include "core/matrix.h"
#include "gstat/linalg.h"

/* dst(i, j), i >= j, of an n x n column-major buffer with leading dimension
 * ld = the `uplo` triangle of element b of A, as a lower triangle. The strict
 * upper triangle of dst is not written. */
void gstat_i_pack_lower_f32(const gstat_matrix *A, int64_t b, gstat_uplo uplo, float *dst,
                            int64_t ld);
void gstat_i_pack_lower_f64(const gstat_matrix *A, int64_t b, gstat_uplo uplo, double *dst,
                            int64_t ld);

/* The whole rows x cols element b of M into dst (column-major, ld). */
void gstat_i_pack_full_f32(const gstat_matrix *M, int64_t b, float *dst, int64_t ld);
void gstat_i_pack_full_f64(const gstat_matrix *M, int64_t b, double *dst, int64_t ld);

/* The rows x cols buffer src (column-major, ld) into element b of M. */
void gstat_i_unpack_full_f32(const float *src, int64_t ld, const gstat_matrix *M, int64_t b);
void gstat_i_unpack_full_f64(const double *src, int64_t ld, const gstat_matrix *M, int64_t b);

/* Fill element b of M with NaN (a failed element's output). */
void gstat_i_fill_nan(const gstat_matrix *M, int64_t b);

#endif /* GSTAT_BACKEND_CPU_PACK_H */
