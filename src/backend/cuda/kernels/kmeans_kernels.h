/* k-means kernels for one large embedding (kmeans_kernels.cu), driven by
 * src/backend/cuda/kmeans_cuda.c: X is n x dim float64, row-major, on the
 * device; blocks of GSTAT_CU_KM_THREADS points; asynchronous on `stream`.
 * Per point the arithmetic is spectral/assign_impl.h's (no FMA), so only
 * the sums' order differs from the CPU's. */
#ifndef GSTAT_BACKEND_CUDA_KMEANS_KERNELS_H
#define GSTAT_BACKEND_CUDA_KMEANS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GSTAT_CU_KM_THREADS 256

/* out[i] = ||x_i - c||^2, or its minimum with closest[i] (closest not NULL);
 * block_sums[b] = the sum over block b's points (a fixed tree). */
cudaError_t gstat_cu_km_dist(const double *X, int64_t n, int64_t dim, const double *c,
                             const double *closest, double *out, double *block_sums,
                             cudaStream_t stream);

/* Each point's nearest centre (centers k x dim; ties: the lower index) into
 * lab and its squared distance into dist, block sums of those into
 * block_sums; *changed set to 1 where a label changes (track). Needs k dim
 * doubles of shared memory. */
cudaError_t gstat_cu_km_assign(const double *X, int64_t n, int64_t dim, const double *centers,
                               int64_t k, int64_t *lab, double *dist, double *block_sums,
                               int *changed, int track, cudaStream_t stream);

/* partial[b (k (dim + 1)) + c (dim + 1) + a]: over block b's points of
 * cluster c, in order, the sum of coordinate a (a < dim) or the count
 * (a = dim). Needs GSTAT_CU_KM_THREADS (dim + 1) doubles of shared memory. */
cudaError_t gstat_cu_km_partial(const double *X, int64_t n, int64_t dim, const int64_t *lab,
                                int64_t k, double *partial, cudaStream_t stream);

/* out[c] = sum over b < count, in order, of in[b width + c], c < width. */
cudaError_t gstat_cu_km_sum(const double *in, int64_t count, int64_t width, double *out,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_KMEANS_KERNELS_H */
