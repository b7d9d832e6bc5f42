/*
 * Stage 2 of the two-stage float64 eigensolver (two_stage.c): a symmetric
 * band matrix (half-bandwidth GSTAT_CU_SB2ST_BAND, lower) reduced to
 * tridiagonal form by bulge chasing on the GPU, and the back-transformation
 * by its reflectors.
 *
 * Band storage: A(i, j), 0 <= i - j < 2b, at ab[(i - j) + j * 2b] (the
 * rows past b hold the bulges while they are chased). Sweep j (0 <= j <
 * n - 2) annihilates column j below its subdiagonal and chases the bulge
 * down in steps k = 0, 1, ...; the reflector of (j, k) acts on rows
 * j + 1 + k b ... (at most b of them), its vector (v[0] = 1) stored at
 * vs[(j * steps + k) * b], zero-padded, its tau at taus[j * steps + k].
 * steps = gstat_cu_sb2st_steps(n). Every call is asynchronous on its
 * stream and returns the first CUDA error (cudaErrorUnknown for a cuBLAS
 * failure).
 */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_SB2ST_H
#define GSTAT_BACKEND_CUDA_KERNELS_SB2ST_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "backend/cuda/tridiag_step.h" /* gstat_cu_ws_part */

#define GSTAT_CU_SB2ST_BAND 32  /* b: the band's half-width */
#define GSTAT_CU_SB2ST_GROUP 32 /* L: sweeps per block reflector of Q2 */

/* The largest number of steps of one sweep (the reflector slots per sweep). */
int64_t gstat_cu_sb2st_steps(int64_t n);

/* Copy the band of the dense lower a (n x n, ld lda) into ab (2b x n),
 * zeroing the bulge rows. */
cudaError_t gstat_cu_sb2st_load(const double *a, int64_t lda, int64_t n, double *ab,
                                cudaStream_t st);

/* The blocks the reduction of order n runs on, of a GPU of `sms` SMs. */
int64_t gstat_cu_sb2st_blocks(int64_t n, int sms);

/* Reduce ab to tridiagonal form in place (every sweep, pipelined over the
 * GPU's blocks: one cooperative launch, one block per SM at most); d (n)
 * and e (n - 1) receive T. vs: n * steps * b doubles, taus: n * steps.
 * progress: n ints, zero on entry (cleared by the caller, before anything
 * waits on them); sweep j's is INT_MAX once it has finished. */
cudaError_t gstat_cu_sb2st_reduce(double *ab, int64_t n, double *vs, double *taus, int *progress,
                                  double *d, double *e, cudaStream_t st);

/* Q2's device scratch, byte offsets in a workspace: the groups' indices
 * and gemm pointers, their V and Y, and one wave's W. */
typedef struct {
  int64_t groups;
  size_t gj, gk, ptr, vy, w;
} gstat_cu_sb2st_q2_parts;

/* Carve Q2's parts for order n from offset *at. */
gstat_cu_sb2st_q2_parts gstat_cu_sb2st_q2_parts_at(size_t *at, int64_t n);

/* The columns past n that gstat_cu_sb2st_q2_right's M needs. */
int64_t gstat_cu_sb2st_q2_pad(void);

/* M <- M Q2 (M: n x (n + pad), ld n; its first n columns hold the data,
 * the pad columns are its scratch), Q2 the product of the reduction's
 * reflectors: the reflectors of L sweeps at one step form one block
 * reflector; the groups go in wavefronts of two batched gemms. progress:
 * the reduction's counters, when it may still run on another stream (each
 * wavefront then waits on the device for the sweeps it needs), or NULL;
 * the wavefronts that may run beside it target sm_limit SMs (0: all).
 * base: the workspace the parts were carved from; blas is set to st (and
 * its SM target back to 0). */
cudaError_t gstat_cu_sb2st_q2_right(char *base, const gstat_cu_sb2st_q2_parts *p, int64_t n,
                                    cublasHandle_t blas, const double *vs, const double *taus,
                                    const int *progress, int sm_limit, double *m, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_KERNELS_SB2ST_H */
