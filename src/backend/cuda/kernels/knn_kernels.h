/* The CUDA backend's exact k-nearest-neighbour kernels (knn_kernels.cu),
 * driven by src/backend/cuda/knn_cuda.c; kernels.h's conventions (dtype codes
 * 1 float32, 2 float64; asynchronous on `stream`; device pointers). X is the
 * n x p element, dense column-major in the compute type; its values are the
 * caller's exactly (float32 holds bfloat16 exactly). */
#ifndef GSTAT_BACKEND_CUDA_KNN_KERNELS_H
#define GSTAT_BACKEND_CUDA_KNN_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest candidate list per row that gstat_cu_knn_exact sorts in shared
 * memory (a power of two). */
#define GSTAT_CU_KNN_MAX_CAP 2048

/* Y = (X - column means) * 2^-e with 2^e the largest deviation's binade
 * (magnitudes below 1: no overflow or underflow in the squares), rounded
 * once to dtype; sq[i] = ||Y_i||^2 in dtype. stats: 2p + 1 doubles of
 * scratch. */
cudaError_t gstat_cu_knn_center(int dtype, const void *x, void *y, void *sq, int64_t n, int64_t p,
                                double *stats, cudaStream_t stream);

/* For rows r0 .. r0 + rb - 1: dots holds n x rb (column r: Y_j . Y_{r0+r}).
 * With a_j = max(sq_i + sq_j - 2 dot, 0) and B_j = c (sq_i + sq_j) + eta (a
 * bound of |a_j - exact distance|, in the scaled units), T = an upper bound of the kp-th
 * smallest a_j + B_j over j != i; the j != i with a_j - B_j <= T go to
 * cand[r * cap ...] (any order), their number to count[r] (> cap: the row
 * overflowed and cand holds only cap of them). kp >= 1. */
cudaError_t gstat_cu_knn_select(int dtype, const void *dots, const void *sq, int64_t n, int64_t r0,
                                int64_t rb, int64_t kp, double c, double eta, int cap, int *cand,
                                int *count, cudaStream_t stream);

/* Largest p and kp gstat_cu_knn_fused_select takes (its tile of the points
 * in shared memory, its per-thread list). */
#define GSTAT_CU_KNN_FUSED_MAX_P 32
#define GSTAT_CU_KNN_FUSED_MAX_KP 64

/* Candidates for rows r0 .. r0 + rb - 1 straight from the centred copy y
 * (n x p, column-major) and sq, in one pass over the points: no n x rb block
 * of dot products (each dot product formed in registers, rounded as the GEMM
 * rounds, under the same bound). The list holds every j != i with a_j - B_j
 * at or below the final kp-th smallest a_j + B_j (a unclamped), and possibly
 * a few more (under an earlier, larger threshold); count[r] > cap: the row
 * overflowed. y and sq finite. p <=
 * GSTAT_CU_KNN_FUSED_MAX_P, kp <= GSTAT_CU_KNN_FUSED_MAX_KP. */
cudaError_t gstat_cu_knn_fused_select(int dtype, const void *y, const void *sq, int64_t n,
                                      int64_t p, int64_t r0, int64_t rb, int64_t kp, double c,
                                      double eta, int cap, int *cand, int *count,
                                      cudaStream_t stream);

/* Each row r with count[r] <= cap: the exact squared distances (double, the
 * coordinates' differences squared and summed in order, as the CPU does) of
 * its candidates, the best kp by (distance, index), with r0 + r itself first
 * when include_self, then sorted by index into nbr/d2 [r * k ...] (k = kp +
 * include_self). overflow[r] = 1 for a row whose list overflowed (its output
 * is not written), else 0. cap: a power of two <= GSTAT_CU_KNN_MAX_CAP. */
cudaError_t gstat_cu_knn_exact(int dtype, const void *x, int64_t n, int64_t p, int64_t r0,
                               int64_t rb, int64_t kp, int include_self, int cap, const int *cand,
                               const int *count, int64_t *nbr, double *d2, int *overflow,
                               cudaStream_t stream);

/* For the g rows listed in rows: keys[q * n + j] = the exact squared
 * distance of rows[q] to j, vals[q * n + j] = j, offsets[q] = q n (g + 1 of
 * them); g * n <= INT32_MAX. */
cudaError_t gstat_cu_knn_all_distances(int dtype, const void *x, int64_t n, int64_t p,
                                       const int *rows, int64_t g, double *keys, int *vals,
                                       int *offsets, cudaStream_t stream);

/* Each segment [offsets[q], offsets[q + 1]) of (keys, vals) sorted by key,
 * stably (equal distances keep the index order), into keys_out / vals_out.
 * temp NULL: *temp_bytes gets the scratch size needed, nothing runs. */
cudaError_t gstat_cu_knn_sort_segments(const double *keys, const int *vals, double *keys_out,
                                       int *vals_out, int64_t g, int64_t n, const int *offsets,
                                       void *temp, size_t *temp_bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_KNN_KERNELS_H */
