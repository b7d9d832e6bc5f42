/*
 * Stage 2 of the two-stage float64 eigensolver: a symmetric band matrix
 * (half-bandwidth b <= 64, lower) reduced to tridiagonal form by bulge
 * chasing on the GPU, and the back-transformation by its reflectors.
 *
 * Band storage: A(i, j), 0 <= i - j < 2b, at ab[(i - j) + j * 2b] (the
 * rows past b hold the bulges while they are chased). Sweep j (0 <= j <
 * n - 2) annihilates column j below its subdiagonal and chases the bulge
 * down in steps k = 0, 1, ...; the reflector of (j, k) acts on rows
 * j + 1 + k b ... (at most b of them), its vector (v[0] = 1) stored at
 * vs[(j * steps + k) * b], zero-padded, its tau at taus[j * steps + k].
 * steps = gstat_cu_sb2st_steps(n, b).
 */
#ifndef GSTAT_LINALG_CUDA_KERNELS_SB2ST_H
#define GSTAT_LINALG_CUDA_KERNELS_SB2ST_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest number of steps of one sweep (the reflector slots per sweep). */
int64_t gstat_cu_sb2st_steps(int64_t n, int64_t b);

/* Copy the band of the dense lower a (n x n, ld lda) into ab (2b x n),
 * zeroing the bulge rows. */
cudaError_t gstat_cu_sb2st_load(const double *a, int64_t lda, int64_t n, int64_t b, double *ab,
                                cudaStream_t st);

/* Reduce ab to tridiagonal form in place (every sweep, pipelined over the
 * GPU's blocks: one cooperative launch); d (n) and e (n - 1) receive T.
 * progress: n ints of device scratch. */
cudaError_t gstat_cu_sb2st_reduce(double *ab, int64_t n, int64_t b, double *vs, double *taus,
                                  int *progress, double *d, double *e, cudaStream_t st);

/* Z <- Q2 Z, Q2 the product of the reduction's reflectors, by a plan for
 * order n and band b that groups the reflectors of L sweeps (1 <= L <= 64)
 * into one block reflector (device buffers: the groups' V and Y, a padded
 * copy of Z, the batched gemms' pointers). NULL when out of memory or the
 * arguments are out of range. */
typedef struct gstat_cu_sb2st_q2 gstat_cu_sb2st_q2;
gstat_cu_sb2st_q2 *gstat_cu_sb2st_q2_plan(int64_t n, int64_t b, int64_t L);
void gstat_cu_sb2st_q2_free(gstat_cu_sb2st_q2 *p);
/* Z (n x n, ld n) in place; blas is set to stream st. */
cudaError_t gstat_cu_sb2st_q2_apply(gstat_cu_sb2st_q2 *p, cublasHandle_t blas, const double *vs,
                                    const double *taus, double *z, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif
