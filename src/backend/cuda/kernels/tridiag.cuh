/* What the tridiagonal kernels share (tridiag_eig.cu, tridiag_clusters.cu):
 * T's d and e in shared memory, its split at negligible off-diagonals into
 * blocks, and which block holds a row. Internal to these .cu files. */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_TRIDIAG_CUH
#define GSTAT_BACKEND_CUDA_KERNELS_TRIDIAG_CUH

#include "common.cuh"

namespace gstat_cu {

/* d and e of matrix b into shared memory as double: dd[n], ee[n] (e) and,
 * when e2 is not NULL, e2[n] (e^2). */
template <typename T>
__device__ void load_tridiag(const T *d, const T *e, int n, double *dd, double *e2, double *ee) {
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    dd[k] = (double)d[k];
    double x = k < n - 1 ? (double)e[k] : 0.0;
    if (e2) e2[k] = x * x;
    if (ee) ee[k] = x;
  }
  __syncthreads();
}

/* Off-diagonals at or below this many units of T's rounding (of its
 * dtype) times ||T|| are set to zero: T splits into blocks solved apart.
 * Zeroing them moves T by at most twice that in norm, far inside the
 * reduction's own backward error (about n units); a matrix with repeated
 * eigenvalues (diagonal, block structured, rank-deficient) reduces to such
 * blocks, whose equal eigenvalues then need no gap between them. */
template <typename T>
__device__ double split_tol(double tnorm) {
  return 8.0 * (sizeof(T) == 4 ? (double)FLT_EPSILON : DBL_EPSILON) * tnorm;
}

/* Zero e (ee and, when not NULL, e2) where negligible; the block then syncs. */
__device__ inline void split_tridiag(double *e2, double *ee, int n, double tol) {
  for (int k = threadIdx.x; k < n - 1; k += blockDim.x)
    if (fabs(ee[k]) <= tol) {
      ee[k] = 0;
      if (e2) e2[k] = 0;
    }
  __syncthreads();
}

/* The block [lo, hi] of the split T that holds row i. Slot i (0 <= i < n)
 * stands for eigenvalue i - lo of that block: a block of m rows has m
 * eigenvalues, so the slots cover every block's once. */
__device__ inline void block_of(const double *ee, int n, int i, int &lo, int &hi) {
  lo = i;
  hi = i;
  while (lo > 0 && ee[lo - 1] != 0) lo--;
  while (hi < n - 1 && ee[hi] != 0) hi++;
}

/* Per-slot bits twisted_vectors writes (links, a byte per slot) and
 * per-matrix bits in flags. */
enum : unsigned char {
  kLinkNext = 1, /* slot: its gap to the next slot of its block is not above the tolerance */
};
enum : int {
  kFlagCluster = 1,   /* matrix: some slots are linked (a cluster) */
  kFlagNonfinite = 2, /* matrix: a value or vector is not finite */
  kFlagFailed = 4,    /* matrix: the cluster step could not give its vectors */
};

} /* namespace gstat_cu */

#endif /* GSTAT_BACKEND_CUDA_KERNELS_TRIDIAG_CUH */
