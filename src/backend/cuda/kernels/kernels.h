/*
 * Device kernels of the CUDA backend, behind a plain C interface.
 *
 * Every launcher is asynchronous on `stream` and returns the cudaError_t of
 * cudaGetLastError() after its launch(es), cudaErrorInvalidValue for bad
 * arguments (unknown dtype, negative size, n over a kernel's limit, NULL
 * pointer with work to do), and cudaSuccess without launching when there is
 * nothing to do. Pointers are device pointers.
 *
 * Dtype codes are gstat_dtype's: 1 float32, 2 float64, 3 bfloat16 stored as
 * uint16. Computation happens in float (float32, bfloat16) or double.
 *
 * A batched strided descriptor (batch, rows, cols, bs, rs, cs) places element
 * (b, i, j) at base + b*bs + i*rs + j*cs, strides counted in elements. A
 * "dense column-major batch" places it at base + b*rows*cols + i + j*rows.
 */
#ifndef GSTAT_BACKEND_CUDA_KERNELS_H
#define GSTAT_BACKEND_CUDA_KERNELS_H

#include <stdint.h>

#include <cuda_runtime.h>

#include "gstat/spectral.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GSTAT_CU_JACOBI_MAX_N 64 /* gstat_cu_eigh_jacobi: n <= this */
#define GSTAT_CU_CHOL_MAX_N 64   /* gstat_cu_cholesky_small: n <= this */
#define GSTAT_CU_CHOL_BLOCK 32   /* gstat_cu_cholesky_block: kb <= this */

/* Strided (any dtype) -> dense column-major batch in dst_dtype (1 or 2). */
cudaError_t gstat_cu_gather(const void *src, int src_dtype, int64_t batch, int64_t rows,
                            int64_t cols, int64_t bs, int64_t rs, int64_t cs, void *dst,
                            int dst_dtype, cudaStream_t stream);

/* Dense column-major batch in src_dtype (1 or 2) -> strided dst (any dtype).
 * bfloat16 output rounds to nearest even (NaN stays NaN, as the CPU does);
 * float64 -> bfloat16 goes through float32, as the CPU path does. */
cudaError_t gstat_cu_scatter(const void *src, int src_dtype, int64_t batch, int64_t rows,
                             int64_t cols, void *dst, int dst_dtype, int64_t bs, int64_t rs,
                             int64_t cs, cudaStream_t stream);

/* Symmetric eigensolver for n <= 64 (cyclic Jacobi: a warp per matrix up
 * to n = 32, for float32 and bf16 with 8 < n <= 16 a pair of columns per
 * lane, a block per matrix above). dtype 1, 2 or 3 (bf16
 * A, W and V, computed in float, stored rounded to nearest even); A, V dense
 * column-major batches (stride n*n), W dense (stride n). Only the uplo
 * triangle (0 lower, 1 upper) of A is read. W ascends; column j of V is the
 * unit eigenvector of W[j], its largest-magnitude entry positive (first on
 * ties). V may be NULL (values only). info[b] = 0 on convergence, else 1
 * and element b's W and V are NaN. flags (NULL: not written) gets, as
 * gstat_cu_finish_eigh would, flags[b] = 2 when element b failed or stored a
 * NaN/Inf, else 0: this path needs no finishing pass and no cleared flags. */
cudaError_t gstat_cu_eigh_jacobi(int dtype, const void *A, int uplo, int64_t n, int64_t batch,
                                 void *W, void *V, int *info, int *flags, cudaStream_t stream);

/* Flip each column of the dense column-major batch V (dtype 1 or 2) so that
 * its largest-magnitude entry is positive (first on ties; NaNs are skipped). */
cudaError_t gstat_cu_fix_signs(int dtype, void *V, int64_t n, int64_t batch, cudaStream_t stream);
/* The same for ncols columns of length n, side by side. */
cudaError_t gstat_cu_fix_sign_cols(int dtype, void *V, int64_t n, int64_t ncols,
                                   cudaStream_t stream);

/* Scan the strided descriptor for NaN/Inf inside the `tri` part (0 full,
 * 1 lower i>=j, 2 upper i<=j, 3 strict lower, 4 strict upper). atomicMin's
 * b*rows*cols + i*cols + j (row-major numbering) of every non-finite entry
 * into *first, which the caller sets to ULLONG_MAX beforehand. */
cudaError_t gstat_cu_find_nonfinite(int dtype, const void *A, int tri, int64_t batch, int64_t rows,
                                    int64_t cols, int64_t bs, int64_t rs, int64_t cs,
                                    unsigned long long *first, cudaStream_t stream);

/* For each element b of the dense column-major batch A (n x n, n <= 4096,
 * dtype 1, 2 or 3) with a NaN/Inf in its read triangle (upper != 0: i <= j,
 * else i >= j): flags[b] = 2 and its values in W (packed, n per element) and
 * vectors in V (dense, NULL: none) NaN. Other elements are left as they are. */
cudaError_t gstat_cu_flag_nonfinite(int dtype, const void *A, int upper, int64_t n, int64_t batch,
                                    void *W, void *V, int *flags, cudaStream_t stream);

/* The backward of eigh (eigh_backward.cu): strided batches of dtype 1 or 2,
 * n <= GSTAT_CU_EIGH_BWD_MAX_N; gw may be NULL (no eigenvalue gradient). */
#define GSTAT_CU_EIGH_BWD_MAX_N 32
typedef struct gstat_cu_bwd_args {
  int dtype;
  int64_t n, batch;
  const void *w, *gw; /* batch x n: element (b, i) at b * bs + i * s */
  int64_t w_bs, w_s, gw_bs, gw_s;
  const void *v, *gv; /* batch x n x n: (b, i, j) at b * bs + i * rs + j * cs */
  int64_t v_bs, v_rs, v_cs, gv_bs, gv_rs, gv_cs;
  void *out; /* batch x n x n, not overlapping the inputs */
  int64_t out_bs, out_rs, out_cs;
  double broadening; /* >= 0 */
} gstat_cu_bwd_args;
cudaError_t gstat_cu_eigh_backward(const gstat_cu_bwd_args *a, cudaStream_t stream);

/* In-place Cholesky A = L L^T of a dense column-major batch (dtype 1 or 2),
 * n <= 64: reads and writes the lower triangle, zeroes the strict upper one.
 * info[b] = 0, or the order of the first leading minor that is not positive
 * definite (then all of element b is written as NaN). */
cudaError_t gstat_cu_cholesky_small(int dtype, void *A, int64_t n, int64_t batch, int *info,
                                    cudaStream_t stream);
/* gstat_cu_cholesky_small reading A and writing the factor to F (F == A:
 * in place) without a copy first. guard (NULL: none): a deferred
 * finiteness scan's first index; unless it is ULLONG_MAX nothing is written
 * (neither F nor info). any (NULL: none) becomes 1 when an element fails
 * (the caller zeroes it first). */
cudaError_t gstat_cu_cholesky_small_to(int dtype, const void *A, void *F, int64_t n, int64_t batch,
                                       int *info, const unsigned long long *guard, unsigned *any,
                                       cudaStream_t stream);

/* One step of a blocked Cholesky (lower) of a batch (dtype 1/2): element b
 * is at A + b * stride (elements, column-major, leading dimension lda), and
 * A points at its diagonal block (first_col, first_col), kb <= 32 columns
 * wide with m rows below. Factors that block in place (as
 * gstat_cu_cholesky_small; on failure the block becomes NaN and info[b]
 * becomes first_col + its failing column, unless info[b] was set already:
 * the caller zeroes info first) and solves the m rows below it against the
 * factor (A21 := A21 L11^-T). The trailing update A22 -= A21 A21^T is the
 * caller's (a strided batched GEMM). */
cudaError_t gstat_cu_cholesky_block(int dtype, void *A, int64_t kb, int64_t m, int64_t lda,
                                    int64_t stride, int64_t batch, int64_t first_col, int *info,
                                    cudaStream_t stream);

/* Post-processing of a solved eigh batch in one pass (dtype 1 or 2; V dense
 * column-major batch or NULL for values only, w dense n per element):
 * elements with info[b] != 0 get NaN values and vectors and flags[b] |= 2;
 * the others get their vector signs fixed (as gstat_cu_fix_signs) and flags[b] |= 2 when a value or
 * vector entry is NaN/Inf. The caller zeroes flags first. */
/* Each matrix's n values ascending, V's columns (n x n, dense; NULL: none)
 * moved with them. */
cudaError_t gstat_cu_sort_eigenpairs(int dtype, void *V, void *w, int64_t n, int64_t batch,
                                     cudaStream_t stream);

cudaError_t gstat_cu_finish_eigh(int dtype, void *V, void *w, int64_t n, int64_t batch,
                                 const int *info, int *flags, cudaStream_t stream);

/* ---- batched tridiagonal reduction (sytrd_batched.cu), the steps that
 * sytrd_eigh.c drives; dtype 1 or 2, A a dense column-major batch ---- */

#define GSTAT_CU_SYTRD_PANEL 32   /* columns per panel (and reflectors per block) */
#define GSTAT_CU_SYTRD_MAX_N 2048 /* order limit of the column and product steps */

/* Elements of the per-matrix vectors `vec` for a batch: d, e, tau and y (n
 * each per matrix, in that order, each a dense batch) and the dots
 * (2 * GSTAT_CU_SYTRD_PANEL per matrix). */
size_t gstat_cu_sytrd_vec_elems(int64_t n, int64_t batch);

/* Scale each matrix's lower triangle as LAPACK's syevd does when its
 * largest magnitude is outside [sqrt(safmin/eps), sqrt(eps/safmin)]: the
 * factor into sigma[b] (double; 1 when not scaled). amax: batch doubles of
 * scratch. n <= GSTAT_CU_TRIDIAG_MAX_N, batch <= 65535. */
cudaError_t gstat_cu_sytrd_scale(int dtype, void *A, int64_t n, int64_t batch, double *amax,
                                 double *sigma, cudaStream_t stream);

/* For the cuSOLVER paths (any n and batch): the same trigger, but each
 * matrix out of range is scaled by a power of two that brings its largest
 * magnitude (of the lower, or with upper != 0 the upper, triangle) into
 * [1, 2); sigma[b] as above. gstat_cu_unscale_values divides each
 * matrix's n values by sigma[b]. */
cudaError_t gstat_cu_scale_to_unit(int dtype, void *A, int64_t n, int64_t batch, int upper,
                                   double *amax, double *sigma, cudaStream_t stream);
cudaError_t gstat_cu_unscale_values(int dtype, void *w, int64_t n, int64_t batch,
                                    const double *sigma, cudaStream_t stream);

/* Copy each matrix's lower triangle onto its upper one (batch <= 65535). */
cudaError_t gstat_cu_sytrd_symmetrize(int dtype, void *A, int64_t n, int64_t batch,
                                      cudaStream_t stream);

/* One block per matrix. finish >= 0: completes w of column `finish` into
 * the panel buffer wpan (n x PANEL per matrix) from y and the dots of the
 * last product step. start >= 0: corrects column `start` by the panel's
 * earlier reflectors, records d, e and tau of it in vec and writes its
 * reflector into A's column (zeros to row start, 1 at row start + 1). Pass
 * -1 to skip either. */
cudaError_t gstat_cu_sytrd_column(int dtype, void *A, void *wpan, void *vec, int64_t n,
                                  int64_t batch, int64_t finish, int64_t start,
                                  cudaStream_t stream);

/* y = A22 v of column k (k < n - 1) and the dots of the panel's earlier
 * reflectors with v, into vec (batch <= 65535). */
cudaError_t gstat_cu_sytrd_symv(int dtype, void *A, void *wpan, void *vec, int64_t n, int64_t batch,
                                int64_t k, cudaStream_t stream);

/* The upper triangular factor T (nbw x nbw, column-major, stride nbw^2) of
 * nbw <= PANEL reflectors H_0 ... H_{nbw-1} = I - V T V^T (LAPACK's dlarft,
 * forward, columnwise) from G = V^T V (same layout) and tau (the block's
 * first, stride n per matrix). */
cudaError_t gstat_cu_larft(int dtype, const void *G, const void *tau, void *T, int64_t nbw,
                           int64_t n, int64_t batch, cudaStream_t stream);

/* ---- symmetric tridiagonal eigenproblems (tridiag_eig.cu), in double;
 * d and e (dtype 1 or 2) as gstat_cu_sytrd_column or cuSOLVER's sytrd
 * leave them, n per matrix; batch <= 65535, n <= GSTAT_CU_TRIDIAG_MAX_N ---- */

#define GSTAT_CU_TRIDIAG_MAX_N 8192 /* d, e and e^2 in shared memory: 192 KiB */

/* Eigenvalues by bisection (multisection in small batches) of T split at
 * negligible off-diagonals (8 units of its dtype's rounding times ||T||):
 * wd (double) by slot, slot i holding eigenvalue i - lo of the block [lo,
 * hi] of rows that holds row i; w (dtype, divided by sigma[b], the matrix's
 * scaling; sigma NULL: none) ascending, slot i's value at perm[b*n + i]. n
 * per matrix; norms[2b] = ||T|| (Gershgorin), norms[2b + 1] = the pivot
 * guard. info[b] = 1 (values NaN) when T is not finite; the caller zeroes
 * info. */
cudaError_t gstat_cu_tridiag_values(int dtype, const void *d, const void *e, int64_t n,
                                    int64_t batch, const double *sigma, double *wd, void *w,
                                    double *norms, int *info, int *perm, cudaStream_t stream);

/* Unit eigenvectors for gstat_cu_tridiag_values' wd and norms by twisted
 * factorizations on the same blocks, into Zt (double, n x n per matrix,
 * slot i's vector in column i, element (k, i) at k*n + i) through U (the
 * same shape, scratch), for the slots whose rank (gstat_cu_tridiag_values'
 * perm) is first_rank or more (0: all; the others' columns are left as
 * they were). links (a byte per slot): 1 where the gap to the next slot of
 * the block is not above gap_tol * ||T||: such vectors are not reliably
 * orthogonal. flags[b] |= 1 when matrix b has such a gap, |= 2 when a
 * value or vector is not finite; flags[batch] = 1 with either (the caller
 * zeroes the batch + 1 flags). */
cudaError_t gstat_cu_tridiag_vectors(int dtype, const void *d, const void *e, int64_t n,
                                     int64_t batch, const double *wd, const double *norms,
                                     double gap_tol, const int *perm, int64_t first_rank,
                                     double *Zt, double *U, unsigned char *links, int *flags,
                                     cudaStream_t stream);

/* A cluster for the wide path: matrix b, its first slot i, c slots, in the
 * block of rows lo .. lo + m - 1 of the split T. */
typedef struct {
  int b, i, c, lo, m;
} gstat_cu_wide_cluster;

/* tridiag_clusters.cu: for the k matrices idx (device ints), the vectors
 * of every cluster of linked slots (gstat_cu_tridiag_vectors' links) by
 * inverse iteration and Gram-Schmidt, in Zt's columns (U: scratch);
 * flags[idx[j]] |= 4 where a cluster's vectors fail their check or its
 * block order times its size squared exceeds max_work (the matrix is to
 * be solved another way), or everywhere when fail != 0. With wide (float64
 * only; room for wide_cap entries, *wide_count zeroed by the caller), a
 * cluster above max_work of at most 2048 slots is appended there instead,
 * for gstat_cu_tridiag_wide (*wide_count may pass wide_cap: those
 * matrices are flagged). */
cudaError_t gstat_cu_tridiag_clusters(int dtype, const void *d, const void *e, int64_t n,
                                      const double *wd, const double *norms,
                                      const unsigned char *links, const int *idx, int64_t k,
                                      int fail, double max_work, double *Zt, double *U, int *flags,
                                      gstat_cu_wide_cluster *wide, int wide_cap, int *wide_count,
                                      cudaStream_t stream);

/* The wide path (float64): the vectors of the count clusters of list
 * (device; count <= 65535; max_c, max_m their largest c and m) by two
 * passes of inverse iteration, each followed by shifted Cholesky QR and
 * Cholesky QR twice over many thread blocks, then cluster_vectors' check;
 * G: n x n doubles per matrix of scratch. flags[b] |= 4 where it fails. */
cudaError_t gstat_cu_tridiag_wide(const double *d, const double *e, int64_t n, const double *wd,
                                  const double *norms, const gstat_cu_wide_cluster *list, int count,
                                  int max_c, int max_m, double *Zt, double *U, double *G,
                                  int *flags, cudaStream_t stream);

/* X (dtype, dense column-major n x n per matrix) = Zt's vectors, slot i's
 * into column perm[b*n + i] (ascending values). */
cudaError_t gstat_cu_tridiag_transpose(int dtype, const double *Zt, int64_t n, int64_t batch,
                                       const int *perm, void *X, cudaStream_t stream);

/* The per-element hand-back of the lockstep solver (n <= GSTAT_CU_SYTRD_MAX_N,
 * k <= 65535; idx: k device ints, the matrices handed back). gather: the
 * j-th n x n of Tc (dense column-major) = the tridiagonal matrix idx[j] of
 * d and e. scatter: matrix idx[j] of X (dense n x n per matrix) = the j-th
 * n x n of Zc, and info[idx[j]] = info_c[j] where that is not 0. */
cudaError_t gstat_cu_tridiag_gather(int dtype, const void *d, const void *e, int64_t n,
                                    const int *idx, int64_t k, void *Tc, cudaStream_t stream);
cudaError_t gstat_cu_tridiag_scatter(int dtype, const void *Zc, const int *info_c, int64_t n,
                                     const int *idx, int64_t k, void *X, int *info,
                                     cudaStream_t stream);

/* graded_check.cu: *flag (device int) = 1 when in some of the batch's
 * dense column-major matrices (lower triangle stored, upper != 0: upper)
 * the largest magnitudes of the nonzero rows span more than `range`, else 0.
 * scratch: 16 bytes of device memory a matrix, 8-byte aligned. */
cudaError_t gstat_cu_graded_check(int dtype, const void *a, int64_t n, int64_t batch, int upper,
                                  double range, void *scratch, int *flag, cudaStream_t stream);

/* ---- PCA (pca_kernels.cu): dense data, row-major (element (i, j) at i*p + j) or
 * column-major (at i + j*n), dtype 1 or 2 ---- */

/* sums[j] += sum_i (x(i, j) - shift[j]) in double (shift may be NULL). With
 * y (same layout; y may be x: each value is read before the thread that
 * read it writes it): y(i, j) = x(i, j) - shift[j] rounded to the dtype
 * is written and sums gets the sum of those stored values. The caller zeroes
 * sums first. */
cudaError_t gstat_cu_col_sums(int dtype, const void *x, int64_t n, int64_t p, int row_major,
                              const double *shift, double *sums, void *y, cudaStream_t stream);

/* S(i, j) -= sums[i] sums[j] / n for i >= j (dense column-major p x p, in
 * double, rounded to the dtype). */
cudaError_t gstat_cu_sub_outer_lower(int dtype, void *S, int64_t p, const double *sums, int64_t n,
                                     cudaStream_t stream);

/* mean[j] = sums[j] / n when first, else mean[j] += sums[j] / n (IEEE
 * double division: the bits the host's loop gives). */
cudaError_t gstat_cu_mean_step(const double *sums, double *mean, int64_t n, int64_t p, int first,
                               cudaStream_t stream);

/* y = x - mean[column], same layout (y may be x). */
cudaError_t gstat_cu_center(int dtype, const void *x, void *y, int64_t n, int64_t p, int row_major,
                            const double *mean, cudaStream_t stream);

/* S(i, j) (column-major, leading dimension lds) = sum over r < R of the R
 * partial rows x cols column-major matrices stored one after another in P,
 * summed in double. */
cudaError_t gstat_cu_sum_partials(int dtype, const void *P, int64_t R, int64_t rows, int64_t cols,
                                  void *S, int64_t lds, cudaStream_t stream);

/* acc[e] += S[e] (count entries), in double. */
cudaError_t gstat_cu_add_to_double(int dtype, const void *S, int64_t count, double *acc,
                                   cudaStream_t stream);

/* S(i, j) /= sd[i] sd[j] for a dense column-major p x p S. */
cudaError_t gstat_cu_scale_sym(int dtype, void *S, int64_t p, const double *sd,
                               cudaStream_t stream);

/* *out = the sum of S(i, j)^2 over i > j of a dense column-major p x p S,
 * in double, in a fixed order; part: p doubles of scratch. */
cudaError_t gstat_cu_offdiag_sumsq(int dtype, const void *S, int64_t p, double *part, double *out,
                                   cudaStream_t stream);

/* S = a S + c I, read from the lower triangle of the dense column-major
 * p x p S, written to both. */
cudaError_t gstat_cu_sym_affine(int dtype, void *S, int64_t p, double a, double c,
                                cudaStream_t stream);

/* ---- batch spectral clustering of dense graphs (spectral_kernels.cu) ---- */

#define GSTAT_CU_SC_MAX_N 1024 /* nodes per graph (the components' labels in shared memory) */

/* One block per graph g of the strided batch A (a_dtype 1 or 2; graph g's
 * first sizes[g] <= N nodes): validation (sets *bad = 1 for a NaN/Inf or
 * negative weight, or asymmetry beyond CHECK's tolerance), symmetrization
 * (sym: gstat_symmetrize; drop_loops: zero diagonal), degrees deg (N per
 * graph, double), connected components comps, and the Laplacian of `kind`
 * (gstat_laplacian_kind; SYMMETRIC for RANDOM_WALK too) into L (dense
 * column-major N x N per graph, l_dtype), padded past sizes[g] with a
 * decoupled diagonal above the spectrum. */
cudaError_t gstat_cu_sc_laplacian(const void *A, int a_dtype, int64_t count, int64_t N, int64_t bs,
                                  int64_t rs, int64_t cs, const int64_t *sizes, int sym,
                                  int drop_loops, int kind, void *L, int l_dtype, double *deg,
                                  int64_t *comps, int *bad, cudaStream_t stream);

/* One thread per graph: from the eigenpairs (V dense column-major N x N, W N
 * per graph, dtype 1 or 2, ascending) the CPU engine's assignment
 * (src/spectral/assign_impl.h, options *o read on the host) into labels (N
 * per graph; -1 for a failed graph), eig (mmax per graph), out (k used,
 * k-means iterations, failure reason per graph) and inertia. meta (device):
 * sizes, k (0: eigengap) and eigh info, count each; comps from
 * gstat_cu_sc_laplacian. scratch: `per` doubles per graph, at least
 * 2 N mmax + 2 mmax^2 + 6 N + 2 mmax + 8. */
cudaError_t gstat_cu_sc_assign(const gstat_spectral_options *o, int64_t count, int64_t N, int dtype,
                               const void *V, const void *W, const double *deg, const int64_t *meta,
                               const int64_t *comps, int64_t mmax, double *scratch, int64_t per,
                               int64_t *labels, double *eig, int64_t *out, double *inertia,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_BACKEND_CUDA_KERNELS_H */
