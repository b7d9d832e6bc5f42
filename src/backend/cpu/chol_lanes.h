/*
 * Cholesky of many small matrices at once, one matrix per SIMD lane.
 *
 * For n up to a few dozen, a single factorization is too short to fill
 * vector registers (a column of 32 floats is two AVX-512 registers, and most
 * loops are shorter), so we interleave GSTAT_I_LANES matrices: element (i, j)
 * of lane l lives at a[(i + j * n) * LANES + l]. Every operation is then a
 * full-width vector operation over the lanes, whatever n is.
 */
#ifndef GSTAT_BACKEND_CPU_CHOL_LANES_H
#define GSTAT_BACKEND_CPU_CHOL_LANES_H

#include <stdint.h>

#define GSTAT_I_LANES_F32 16
#define GSTAT_I_LANES_F64 8

/* Factor the lower triangles in place (A = L L^T per lane); the strict upper
 * triangles are not read or written. info[l] = 0, or the order of the first
 * leading minor of lane l that is not positive definite (that lane's values
 * are then NaN from that column on; the other lanes are unaffected). */
void gstat_i_chol_lanes_f32(int64_t n, float *a, int64_t *info);
void gstat_i_chol_lanes_f64(int64_t n, double *a, int64_t *info);

#endif /* GSTAT_BACKEND_CPU_CHOL_LANES_H */
