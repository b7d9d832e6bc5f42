/*
 * gstat linear algebra: batched symmetric eigendecomposition, Cholesky
 * factorization and triangular / Cholesky solves.
 *
 * Conventions common to every function here:
 * - Arguments are gstat_matrix descriptors (see core.h); inputs are read only,
 *   outputs are caller-owned and written only inside their declared shape.
 * - The compute precision is float64 when the input matrix is GSTAT_F64 and
 *   float32 otherwise (GSTAT_BF16 input is widened to float32). Each output is
 *   converted to the dtype its own descriptor declares (bf16: nearest even).
 * - `info` is an optional caller array of `batch` entries (NULL to skip), set
 *   to 0 for every element that succeeded and to the element's failure code
 *   otherwise (documented per function). When any element fails the call
 *   returns the matching status, the other elements are still computed, and
 *   the failed element's outputs are filled with NaN.
 * - Argument errors (GSTAT_EINVAL, GSTAT_EUNSUPPORTED, GSTAT_ENOTFINITE,
 *   GSTAT_ENOMEM before the work started) leave every output and info
 *   untouched; gstat_ctx_last_error() names the argument or batch element.
 * - An output may be the very same descriptor as the input it is computed
 *   from (in place: same data, dtype and strides); any other overlap between
 *   arguments is GSTAT_EINVAL.
 * - Workspace is cached in the context: repeating a call of the same shape
 *   allocates nothing after the first call.
 * - batch = 0 or n = 0 succeeds without touching memory.
 * - With a progress callback in the context options, the CPU backend runs a
 *   batch in slices and reports after each ("eigh", done/total items); a
 *   callback that asks to stop ends the call with GSTAT_ECANCELED (outputs
 *   and info then partially written).
 */
#ifndef GSTAT_LINALG_H
#define GSTAT_LINALG_H

#include "gstat/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which triangle of a symmetric input is read, or which factor is stored. */
typedef enum gstat_uplo { GSTAT_LOWER = 0, GSTAT_UPPER = 1 } gstat_uplo;

/* op(T) = T or T^T in triangular solves. */
typedef enum gstat_trans { GSTAT_NO_TRANS = 0, GSTAT_TRANS = 1 } gstat_trans;

/* Whether a triangular matrix has an implicit unit diagonal. */
typedef enum gstat_diag { GSTAT_NON_UNIT = 0, GSTAT_UNIT = 1 } gstat_diag;

/*
 * Eigenvalues, and optionally eigenvectors, of a batch of symmetric matrices.
 *
 * A     batch x n x n; only the `uplo` triangle is read (the other may hold
 *       anything, NaN included).
 * w     batch x n x 1 eigenvalues, ascending.
 * V     NULL for eigenvalues only, or batch x n x n: column j holds the unit
 *       eigenvector of w[j]. Its sign is fixed: the entry of largest magnitude
 *       is positive (the first such entry on ties). V may be A itself.
 * info  optional; info[b] > 0 when element b did not converge.
 *
 * Precision: float64 and float32 compute in their own type and bfloat16 in
 * float32, except on the CUDA backend: the tridiagonal eigenproblems of its
 * own solvers (batches at 384 <= n <= 2048, and float32 vectors of order
 * 4096 to 8192) are solved in float64, and float32 above order 8192 (and
 * its eigenvalues alone from 4096) is solved in a float64 working copy
 * (cuSOLVER is faster there in double); results are rounded to the output
 * type.
 *
 * Statuses: GSTAT_OK; GSTAT_EINVAL; GSTAT_ENOTFINITE (check_finite on and a
 * NaN/Inf in the read triangle; the message names the element and position);
 * GSTAT_ENOCONV (an element did not converge); GSTAT_ENOMEM; GSTAT_EUNSUPPORTED
 * (e.g. device memory without a CUDA backend, n > INT32_MAX).
 */
GSTAT_API gstat_status gstat_eigh(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                                  gstat_matrix *w, gstat_matrix *V, int64_t *info);

/*
 * Cholesky factorization of a batch of symmetric positive definite matrices.
 *
 * A     batch x n x n; only the `uplo` triangle is read.
 * uplo  GSTAT_LOWER: A = L L^T, L written to the lower triangle of `F`;
 *       GSTAT_UPPER: A = U^T U, U written to the upper triangle.
 *       The opposite strict triangle of F is set to zero. F may be A itself.
 * info  optional; info[b] = k > 0 when the leading minor of order k of
 *       element b is not positive definite.
 *
 * Statuses: GSTAT_OK; GSTAT_ENOTPD (some element not positive definite; the
 * message names the first one and its minor order); GSTAT_EINVAL;
 * GSTAT_ENOTFINITE; GSTAT_ENOMEM; GSTAT_EUNSUPPORTED.
 */
GSTAT_API gstat_status gstat_cholesky(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                                      gstat_matrix *F, int64_t *info);

/*
 * Solve A X = B for a batch, given the Cholesky factor of A from
 * gstat_cholesky (only its `uplo` triangle is read).
 *
 * F     batch x n x n factor; uplo says which triangle holds it.
 * B     batch x n x nrhs right-hand sides.
 * X     batch x n x nrhs solutions; may be B itself.
 * info  optional; info[b] = k > 0 when F[b] has a zero at diagonal entry k
 *       (1-based), i.e. the factor is singular.
 *
 * Statuses: GSTAT_OK; GSTAT_ESINGULAR; GSTAT_EINVAL; GSTAT_ENOTFINITE;
 * GSTAT_ENOMEM; GSTAT_EUNSUPPORTED.
 */
GSTAT_API gstat_status gstat_cholesky_solve(gstat_ctx *ctx, const gstat_matrix *F, gstat_uplo uplo,
                                            const gstat_matrix *B, gstat_matrix *X, int64_t *info);

/*
 * Solve op(T) X = B for a batch of triangular matrices T.
 *
 * T     batch x n x n; only the `uplo` triangle is read (and not its diagonal
 *       when diag == GSTAT_UNIT).
 * B, X  batch x n x nrhs; X may be B itself.
 * info  optional; info[b] = k > 0 when T[b] has a zero at diagonal entry k.
 *
 * Statuses as gstat_cholesky_solve.
 */
GSTAT_API gstat_status gstat_triangular_solve(gstat_ctx *ctx, const gstat_matrix *T,
                                              gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                              const gstat_matrix *B, gstat_matrix *X,
                                              int64_t *info);

/*
 * gstat_eigh of CUDA device data enqueued on the context's CUDA stream
 * without synchronizing the host and without allocating: usable inside a
 * CUDA graph capture, and a call returns before the device has finished.
 * The input is not checked for NaN/Inf and failures are not reported by the
 * status: they stay on the device, in `info`.
 *
 * A, w, V  as gstat_eigh, all in the memory of the context's CUDA device and
 *          dense: A's elements contiguous (column- or row-major), w packed,
 *          V (not A) column-major and packed, one dtype for all three;
 *          order n <= 64 (the Jacobi kernels).
 * info     device memory, 2 x batch int32 (required): info[b] = 1 when
 *          element b did not converge (its outputs are NaN),
 *          info[batch + b] != 0 when its outputs are not all finite (a NaN or
 *          Inf in the input gives such outputs).
 *
 * Statuses: GSTAT_OK (enqueued); GSTAT_EINVAL; GSTAT_EUNSUPPORTED (host
 * data, n > 64, a layout or dtype mix this path does not take, no CUDA
 * backend, or a backend without this path: call gstat_eigh); GSTAT_EBACKEND
 * (the launch failed).
 */
GSTAT_API gstat_status gstat_eigh_async(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                                        gstat_matrix *w, gstat_matrix *V, int32_t *info);

/*
 * The gradient of a loss through eigh (torch.linalg's symmetric formula).
 * CUDA device data: enqueued like gstat_eigh_async (no host
 * synchronization, no allocation), order n <= 32. Host data: computed on
 * the CPU (three matrix products per element), any order:
 *   gA = V (diag(gw) + F o (V^T gV - gV^T V)) V^T,
 *   F_ij = 1 / (2 (w_j - w_i)), and 0 within a degenerate block
 *   (|w_j - w_i| <= n eps max|w|, the diagonal included); broadening b > 0
 *   replaces 1 / (w_j - w_i) by (w_j - w_i) / ((w_j - w_i)^2 + b).
 *
 * w, gw   batch x n x 1 eigenvalues (ascending) and their gradient; gw may be
 *         NULL (no eigenvalue term).
 * V, gV   batch x n x n eigenvectors (columns) and their gradient.
 * gA      batch x n x n, overlapping none of the inputs.
 * Any strides; one dtype, float32 or float64, in one memory.
 *
 * Statuses: GSTAT_OK (enqueued, or done for host data); GSTAT_EINVAL;
 * GSTAT_EUNSUPPORTED (bfloat16; device data with n > 32 or no CUDA backend
 * with this path); GSTAT_EBACKEND; host data also GSTAT_ENOMEM and
 * GSTAT_ECANCELED (the progress callback asked to stop).
 */
GSTAT_API gstat_status gstat_eigh_backward(gstat_ctx *ctx, const gstat_matrix *w,
                                           const gstat_matrix *V, const gstat_matrix *gw,
                                           const gstat_matrix *gV, double broadening,
                                           gstat_matrix *gA);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_LINALG_H */
