/*
 * Dense BLAS-like building blocks for the statistics layers (src/pca,
 * src/graph, src/spectral), which must not call BLAS/LAPACK themselves.
 *
 * Host memory, column-major (BLAS convention), compute dtype GSTAT_F32
 * (float) or GSTAT_F64 (double); pointers are of that type. Arguments are
 * trusted (the caller validated shapes); sizes are int64_t and must fit a
 * BLAS int (checked: GSTAT_EUNSUPPORTED otherwise). BLAS may use the
 * context's threads. Today these run on the CPU backend; a GPU version would
 * plug in here.
 */
#ifndef GSTAT_BACKEND_DENSE_H
#define GSTAT_BACKEND_DENSE_H

#include "core/internal.h"
#include "gstat/linalg.h"

/* C (m x n) = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n. */
gstat_status gstat_i_gemm(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, gstat_trans tb, int64_t m,
                          int64_t n, int64_t k, double alpha, const void *A, int64_t lda,
                          const void *B, int64_t ldb, double beta, void *C, int64_t ldc);

/* C (n x n) = alpha op(A) op(A)^T + beta C with op(A) n x k (trans NO: A is
 * n x k; TRANS: A is k x n, i.e. C = alpha A^T A + beta C). Both triangles of
 * C are written (the result is symmetric). */
gstat_status gstat_i_syrk(gstat_ctx *ctx, gstat_dtype dt, gstat_trans trans, int64_t n, int64_t k,
                          double alpha, const void *A, int64_t lda, double beta, void *C,
                          int64_t ldc);
/* The same, the lower triangle only (the strict upper one is left as it was). */
gstat_status gstat_i_syrk_lower(gstat_ctx *ctx, gstat_dtype dt, gstat_trans trans, int64_t n,
                                int64_t k, double alpha, const void *A, int64_t lda, double beta,
                                void *C, int64_t ldc);

/* Replace the columns of A (m x n, m >= n) by an orthonormal basis of their
 * span (Householder QR, Q formed explicitly). `work` holds at least
 * gstat_i_orthonormalize_work(dt, m, n) elements of type dt (the caller owns
 * it, so repeated calls allocate nothing); 0 from the query means the sizes
 * exceed LAPACK's integer range. */
int64_t gstat_i_orthonormalize_work(gstat_dtype dt, int64_t m, int64_t n);
gstat_status gstat_i_orthonormalize(gstat_ctx *ctx, gstat_dtype dt, int64_t m, int64_t n, void *A,
                                    int64_t lda, void *work);

/* Element b of M (its rows x cols, any dtype and strides) into the dense
 * column-major buffer dst of compute type dt with leading dimension ld. */
void gstat_i_dense_load(const gstat_matrix *M, int64_t b, gstat_dtype dt, void *dst, int64_t ld);

/* The rows x cols buffer src (compute type dt, column-major, ld) into element
 * b of M, converted to M's dtype (bf16: nearest even). */
void gstat_i_dense_store(gstat_dtype dt, const void *src, int64_t ld, const gstat_matrix *M,
                         int64_t b);

/* Cholesky factorization in place of the n x n matrix A (lda): the lower
 * triangle is read and overwritten by L with A = L L^T (the strict upper
 * triangle is left alone). *info = 0, or k > 0 when the leading minor of
 * order k is not positive definite (a NaN counts as not positive). */
gstat_status gstat_i_potrf(gstat_ctx *ctx, gstat_dtype dt, int64_t n, void *A, int64_t lda,
                           int64_t *info);

/* Triangular solve with several right-hand sides, B (m x n, ldb) overwritten
 * by X: op(T) X = alpha B when right is false (T m x m), X op(T) = alpha B
 * when right is true (T n x n). Only the `uplo` triangle of T is read. */
gstat_status gstat_i_trsm(gstat_ctx *ctx, gstat_dtype dt, bool right, gstat_uplo uplo,
                          gstat_trans trans, gstat_diag diag, int64_t m, int64_t n, double alpha,
                          const void *T, int64_t ldt, void *B, int64_t ldb);

/* On the CPU: every eigenvalue of the symmetric n x n A (lower triangle read,
 * column-major, ld lda) into w (n, ascending), and the eigenvectors of the k
 * largest into A's last k columns (ascending, the sign rule applied; the rest
 * of A is overwritten). For k << n a fraction of a full eigh's cost (no
 * divide-and-conquer, k back-transformed vectors). Statuses: GSTAT_OK,
 * GSTAT_ENOCONV, GSTAT_ENOMEM, GSTAT_EBACKEND, GSTAT_EUNSUPPORTED. */
gstat_status gstat_i_eigh_top(gstat_ctx *ctx, gstat_dtype dt, int64_t n, void *A, int64_t lda,
                              int64_t k, void *w);

/* Whether gstat_eigh would run the host matrix A on the CPU backend (the
 * context's backend choice and AUTO's size rule, as the dispatch decides). */
bool gstat_i_eigh_runs_on_cpu(gstat_ctx *ctx, const gstat_matrix *A);

/* gstat_eigh for a statistics routine's own sub-problem: the same call, but
 * the context's progress callback hears only the outer routine (no nested
 * "eigh" reports to confuse a progress bar). */
gstat_status gstat_i_eigh(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo, gstat_matrix *w,
                          gstat_matrix *V, int64_t *info);

/* gstat_i_eigh of a small host matrix that a routine forms as a step of its
 * own (a projected problem: Ritz values, a randomized PCA's l x l Gram
 * matrix) on the CPU whatever the context's backend, like gstat_i_potrf:
 * the GPU's round trip costs more than the solve, once per iteration. Not
 * reported in last_backends (the context's choice applies to the data). */
gstat_status gstat_i_eigh_host(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *w, gstat_matrix *V, int64_t *info);

/* Threads for an OpenMP loop of our own (no BLAS inside) over `items`
 * independent pieces with `flops` arithmetic and `bytes` of memory traffic
 * in all: the CPU rules' count for that much one-thread work, at most the
 * context's threads and items, 1 inside a parallel region. Recorded in the
 * context's last_threads. */
int gstat_i_loop_threads(gstat_ctx *ctx, int64_t items, double flops, double bytes);

/* Largest n for which gstat_eigh gives the same bits for a matrix alone or
 * inside a batch (the backend's own kernel, no threaded BLAS); larger
 * matrices must be passed one per call when results have to match
 * one-at-a-time calls exactly (src/spectral's batches). */
int64_t gstat_i_eigh_batch_invariant_max(void);

/* y = alpha op(A) x + beta y, A m x n (lda), op(A) A or A^T. For a single
 * right-hand side: a GEMM with n = 1 packs all of A first (OpenBLAS 0.3.21). */
gstat_status gstat_i_gemv(gstat_ctx *ctx, gstat_dtype dt, gstat_trans ta, int64_t m, int64_t n,
                          double alpha, const void *A, int64_t lda, const void *x, double beta,
                          void *y);

/* ---- column statistics of dense column-major buffers (cpu/data_cpu.c) ---- */

/* Column means of the n x p column-major buffer (compute type ct, ld = n),
 * weighted when w (n entries, sum wsum > 0) is given. Accumulated in double
 * and corrected by a second pass over the residuals, so the mean is accurate
 * even when |mean| >> spread. */
void gstat_i_col_means(gstat_dtype ct, int64_t n, int64_t p, const void *buf, const double *w,
                       double wsum, double *mean);

/* Standard deviations (divisor n - 1) of the columns of a centered buffer. */
void gstat_i_col_sd(gstat_dtype ct, int64_t n, int64_t p, const void *buf, double *sd);

/* buf(:, j) = (buf(:, j) - mean[j]) / scale[j]; mean and/or scale may be NULL. */
void gstat_i_center_scale(gstat_dtype ct, int64_t n, int64_t p, void *buf, const double *mean,
                          const double *scale);

/* Multiply row i of buf by f[i] (e.g. sqrt of the weights). */
void gstat_i_scale_rows(gstat_dtype ct, int64_t n, int64_t p, void *buf, const double *f);

/* Set mean[j] to the value of column j of the n x p buffer (compute type ct,
 * ld n) when the column is constant, so that centering gives exact zeros
 * (variance exactly 0) instead of the rounding error of the mean. */
void gstat_i_exact_constant_means(gstat_dtype ct, int64_t n, int64_t p, const void *buf,
                                  double *mean);

#endif /* GSTAT_BACKEND_DENSE_H */
