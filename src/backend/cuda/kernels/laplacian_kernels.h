/* The CUDA backend's dense Laplacian kernels (laplacian_kernels.cu), driven
 * by src/backend/cuda/laplacian_cuda.c: A is a batch of nb dense column-major
 * n x n float64 adjacencies (the caller's values gathered), asynchronous on
 * `stream`. The per-entry rules are graph/weights_impl.h's, shared with the
 * batch spectral engine's Laplacian kernel (spectral_kernels.cu). */
#ifndef GSTAT_BACKEND_CUDA_LAPLACIAN_KERNELS_H
#define GSTAT_BACKEND_CUDA_LAPLACIAN_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* deg[g n + j] = sum over i (in order) of the symmetrized a_ij (sym: a
 * gstat_symmetrize; the diagonal 0 when drop_loops); *bad = 1 when an
 * entry is not a finite weight >= 0, or (CHECK) a pair disagrees beyond the
 * tolerance of unit roundoff eps. Writes nothing else. */
cudaError_t gstat_cu_lap_degrees(const double *A, int64_t nb, int64_t n, int sym, int drop_loops,
                                 double eps, double *deg, int *bad, cudaStream_t stream);

/* A <- its Laplacian of `kind` (gstat_laplacian_kind) in place, each pair
 * (i, j), (j, i) by one thread from the symmetrized weight and deg. */
cudaError_t gstat_cu_lap_fill(double *A, int64_t nb, int64_t n, int sym, int drop_loops, int kind,
                              const double *deg, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_LAPLACIAN_KERNELS_H */
