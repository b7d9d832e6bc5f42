/*
 * The scheduler: what statistics code (src/pca, src/graph, src/spectral)
 * calls to run a primitive, never a backend. For each call it picks the
 * backend (the data's memory, the context's backend, and under AUTO the
 * backends' cost estimates for host data), moves data between memories, and
 * applies one fallback policy for every statistic:
 * - a whole-call failure on the GPU (out of memory, a backend error, a
 *   primitive the backend lacks) reruns the call on the CPU, through host
 *   copies when the data lie in device memory;
 * - a co-moment whose result is not finite although the data are is
 *   recomputed on the CPU;
 * and records which backends ran (gstat_ctx_last_backends).
 */
#ifndef GSTAT_BACKEND_SCHED_H
#define GSTAT_BACKEND_SCHED_H

#include "core/internal.h"
#include "gstat/linalg.h"
#include "backend/rows_req.h"
#include "backend/moments_req.h"
#include "backend/spectral_req.h"
#include "backend/sparse_req.h"

/* Column means (p doubles) and co-moment (p x p doubles, column-major, both
 * triangles) of the rows of element b of X (host or device memory, n >= 1,
 * any strides and dtype), in X's compute type; NaN/Inf propagate. With M
 * NULL the co-moment goes into S instead (p x p, X's compute dtype, its
 * lower triangle at least, in X's memory: a chain that stays on the device). */
gstat_status gstat_i_sched_comoment(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, double *mean, double *M, const gstat_matrix *S);

/* ---- weighted and missing-value co-moments (backend.h's contracts) ---- */

/* Weighted mean (p) and co-moment (p x p, both triangles) of the rows of
 * element b of X (host or device) with keep[i] != 0 (keep NULL: all), row
 * weights w (NULL: 1; host doubles, the kept ones summing to > 0), in X's
 * compute type; about_zero: moments about 0. */
gstat_status gstat_i_sched_wcomoment(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                     int64_t b, const double *w, const unsigned char *keep,
                                     bool about_zero, double *mean, double *M);

/* keep[i] (host, n bytes) = row i of element b of X (host or device) has
 * no NaN; *inf_at = i p + j of the first infinite entry by (row, column),
 * or -1. */
gstat_status gstat_i_sched_nan_rows(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, unsigned char *keep, int64_t *inf_at);

/* Pairwise weights, sums and co-moments of element b of X (host or device;
 * NaN: missing; no Inf) in float64 (moments_req.h's gstat_i_pairwise_out),
 * row weights w and analytic weights aw host doubles or NULL. */
gstat_status gstat_i_sched_pairwise(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, const double *w, const double *aw,
                                    const gstat_i_pairwise_out *o);

/* Element b of Y (m x k, host or device memory, any dtype) = ((X_b - mean) /
 * scale) comp^T, column i times 1/sqrt(ev[i]) when ev is given (0 where ev
 * <= 0). X_b m x p in any memory; mean, scale (NULL: 1), comp (k x p
 * row-major) and ev (k) host doubles. */
gstat_status gstat_i_sched_project(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                                   const double *mean, const double *scale, const double *comp,
                                   const double *ev, int64_t k, gstat_matrix *Y);

/* The k nearest rows of every row of element b of X (host or device memory,
 * finite, any dtype and strides): nbr (n x k, host, each row sorted by
 * index) and squared distances d2 (host doubles); with include_self the row
 * itself is one of them beside k - 1 others; ties go to the smaller index
 * (backend.h's knn). */
gstat_status gstat_i_sched_knn(gstat_ctx *ctx, const char *fn, const gstat_matrix *X, int64_t b,
                               int64_t k, bool include_self, int64_t *nbr, double *d2);

/* gstat_i_sched_knn by a chosen method (a gstat_knn_algorithm): AUTO is
 * gstat_i_sched_knn; BRUTE runs where AUTO would, the CPU's GEMM search
 * there; TREE and NNDESCENT (approximate, seeded) run on the CPU, device
 * data through a host copy. */
gstat_status gstat_i_sched_knn_with(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, int64_t k, bool include_self, int algorithm,
                                    uint64_t seed, int64_t *nbr, double *d2);

/* Every eigenvalue of each matrix of A (host, dense column-major, compute
 * dtype, lower triangle read) into w (host, batch x m), and the eigenvectors
 * of the k largest into A's last k columns (ascending, the sign rule
 * applied; the rest of A is overwritten), on whichever backend gstat_eigh
 * would pick; element failures are GSTAT_ENOCONV. */
gstat_status gstat_i_sched_eigh_top(gstat_ctx *ctx, gstat_matrix *A, int64_t k, gstat_matrix *w);

/* The m[e] smallest eigenpairs of each matrix e of A (host, dense
 * column-major, compute dtype, lower triangle read, overwritten) into the
 * first m[e] entries of w's row e (ascending) and A's first m[e] columns, as
 * gstat_eigh leaves them there (the rest of A and w unspecified); info[e] !=
 * 0 and GSTAT_ENOCONV for failed elements. The backend picks the method
 * (a solver for a few pairs where it pays, else the full eigh). */
gstat_status gstat_i_sched_eigh_lowest(gstat_ctx *ctx, gstat_matrix *A, const int64_t *m,
                                       gstat_matrix *w, int64_t *info);

/* (name: the argument's, for messages.) A host view of M for a step that has no device primitive
 * yet: M itself when it lies on the host, else a dense host copy (same dtype) made through the
 * owning backend (with_data false: uninitialised, for an output). */
typedef struct gstat_i_staged {
  gstat_matrix m;
  void *mem;
  size_t bytes;
} gstat_i_staged;

gstat_status gstat_i_sched_stage(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *M, bool with_data, gstat_i_staged *h);
/* Copy a staged output back into M (nothing when M lies on the host). */
gstat_status gstat_i_sched_unstage(gstat_ctx *ctx, const char *fn, const char *name,
                                   const gstat_i_staged *h, const gstat_matrix *M);
/* Free what gstat_i_sched_stage allocated (h may be zeroed or unstaged). */
void gstat_i_sched_release(gstat_ctx *ctx, gstat_i_staged *h);

/* The dense column-major host buffer src (compute type dt, leading dimension
 * ld) into element b of M, wherever M lies, converted to M's dtype. */
gstat_status gstat_i_sched_store(gstat_ctx *ctx, const char *fn, const char *name, gstat_dtype dt,
                                 const void *src, int64_t ld, const gstat_matrix *M, int64_t b);

/* First non-finite entry of M (host or device memory): true and (*b, *i, *j)
 * set when there is one; *st is the status of staging M (GSTAT_OK). */
bool gstat_i_sched_find_nonfinite(gstat_ctx *ctx, const char *fn, const char *name,
                                  const gstat_matrix *M, int64_t *b, int64_t *i, int64_t *j,
                                  gstat_status *st);

/* src into dst (same shape; any dtypes, strides and memories). */
gstat_status gstat_i_sched_copy(gstat_ctx *ctx, const char *fn, const char *name,
                                const gstat_matrix *src, gstat_matrix *dst);

/* bytes of the memory `like` lies in (device memory only), kept by its
 * backend and valid until the next call: a chain's intermediate results.
 * GSTAT_EUNSUPPORTED (no message) where there is none. */
gstat_status gstat_i_sched_device_memory(gstat_ctx *ctx, const char *fn, const gstat_matrix *like,
                                         size_t bytes, void **mem);

/* Whether a chain on device data should keep its batch x m x m symmetric
 * intermediate there for an eigh, rather than take it to the host: where
 * gstat_eigh would run such a matrix of host memory on the GPU too (small
 * ones are faster on the CPU). */
bool gstat_i_sched_eigh_stays_on_device(gstat_ctx *ctx, gstat_dtype dt, int64_t batch, int64_t m);

/* S(i, j) /= d[i] d[j] for each p x p matrix of S (dense column-major,
 * compute dtype, host or device memory); d host doubles, batch x p. */
gstat_status gstat_i_sched_scale_sym(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                     const double *d);
/* out[b] (host) = the sum of squares of the strict lower triangle of each
 * p x p element of S (as scale_sym's), in double. */
gstat_status gstat_i_sched_offdiag_sumsq(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                         double *out);
/* S_b = a[b] S_b + c[b] I (as scale_sym's S), read from the lower triangle,
 * both triangles written; a and c host doubles (batch). */
gstat_status gstat_i_sched_sym_affine(gstat_ctx *ctx, const char *fn, const gstat_matrix *S,
                                      const double *a, const double *c);

/* ---- dense primitives on descriptors ---- */

/* For each element b of C: C_b = alpha op(A_b) op(B_b) + beta C_b (backend.h's
 * gemm: one compute dtype, F32 or F64; A or B of batch 1 shared by every
 * element; beta 0 does not read C). All three lie on the host (the CPU runs
 * it) or all in device memory (the device's backend, else the CPU on host
 * copies). */
gstat_status gstat_i_sched_gemm(gstat_ctx *ctx, const char *fn, gstat_trans ta, gstat_trans tb,
                                double alpha, const gstat_matrix *A, const gstat_matrix *B,
                                double beta, const gstat_matrix *C);

/* The lower triangle of each element of C = op(A_b) op(A_b)^T (trans
 * GSTAT_NO_TRANS: A_b A_b^T; GSTAT_TRANS: A_b^T A_b), where A and C lie (C
 * dense column-major, the compute dtype); C's strict upper triangle is left
 * unspecified. Half a GEMM's work where the backend has the primitive,
 * else the full product by gstat_i_sched_gemm (its fallback included). */
gstat_status gstat_i_sched_syrk_lower(gstat_ctx *ctx, const char *fn, gstat_trans trans,
                                      const gstat_matrix *A, const gstat_matrix *C);

/* The columns of each element of A (rows >= cols, F32 or F64, host or device
 * memory) replaced by an orthonormal basis of their span (Householder QR,
 * Q formed), where A lies; the same fallback as gstat_i_sched_gemm. */
gstat_status gstat_i_sched_orthonormalize(gstat_ctx *ctx, const char *fn, const gstat_matrix *A);
/* ---- row-wise reductions and the Cholesky factor (Mahalanobis, shrinkage) ---- */

/* The rows primitive (backend.h's gstat_i_rows_req: centred, scaled rows,
 * optionally solved with L or multiplied by Q, reduced to d_i and their
 * sums): X, L, Q and d in one memory, host or device. */
gstat_status gstat_i_sched_rows(gstat_ctx *ctx, const char *fn, const gstat_i_rows_req *r);

/* The lower Cholesky factors of A into F (same batch, one memory, host or
 * device; F may be A; its strict upper triangle zeroed): gstat_cholesky's
 * backend choice (host data the CPU keeps: LAPACK's potrf per element in
 * F's dtype, when F is dense), a whole-call GPU failure on device data
 * rerun on the CPU through host copies, recorded in last_backends. Elements
 * that are not positive definite are left in info (GSTAT_OK); other
 * failures (GSTAT_ENOTFINITE, ...) are returned. */
gstat_status gstat_i_sched_cholesky(gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                                    gstat_matrix *F, int64_t *info);
/* ---- graph primitives ---- */

/* Dense Laplacians and degrees (backend.h's laplacian): A (batch x n x n),
 * L (the same shape) and deg (batch x n x 1, or NULL) in any memory, any
 * dtype and strides; sym a gstat_symmetrize, kind a gstat_laplacian_kind.
 * On the device's backend when all three lie in its memory, else on the CPU
 * through host copies; a device failure, or an invalid weight the device
 * leaves to the CPU to name, reruns on the CPU. Nothing is written on
 * failure. */
gstat_status gstat_i_sched_laplacian(gstat_ctx *ctx, const char *fn, const gstat_matrix *A, int sym,
                                     bool drop_loops, int kind, const gstat_matrix *L,
                                     const gstat_matrix *deg);

/* The batch spectral engine's steps (backend.h's sc_laplacians and
 * sc_assign, spectral_req.h) on the backend whose memory holds r->A (r->V):
 * GSTAT_EUNSUPPORTED where that backend lacks the step or declines it. */
gstat_status gstat_i_sched_sc_laplacians(gstat_ctx *ctx, const gstat_i_sc_lap_req *r);
gstat_status gstat_i_sched_sc_assign(gstat_ctx *ctx, const gstat_i_sc_assign_req *r);

/* ---- k-means of one large embedding ---- */

/* backend.h's kmeans on the rows of E (n x dim float64, row-major dense,
 * host or device memory): on the device for device rows, for host rows
 * where the context or AUTO's cost model takes it there (large n), else on
 * the CPU (its runs spread over the threads); a device failure reruns on the
 * CPU. GSTAT_ECANCELED when opt->tick stopped it. */
gstat_status gstat_i_sched_kmeans(gstat_ctx *ctx, const char *fn, const gstat_matrix *E,
                                  const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                                  int64_t *iterations);

/* ---- the sparse eigensolver's steps (sparse_req.h) ---- */

/* Z = g Z + a X + b Y per column, where the blocks lie (all on the host, or
 * all in device memory: the device's backend, else the CPU on host copies). */
gstat_status gstat_i_sched_lincomb(gstat_ctx *ctx, const char *fn, const gstat_i_lincomb_req *r);
/* out[c] (host) = X[:, c] . Y[:, c], where X and Y lie (as lincomb). */
gstat_status gstat_i_sched_dots(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                const gstat_matrix *Y, double *out);

/* A Laplacian's action planned on a backend: `where` (location and device;
 * no data) is the memory its blocks must lie in. */
typedef struct gstat_i_sched_lap {
  const struct gstat_i_backend_ops *ops; /* the backend that holds the plan */
  void *state, *plan;
  int64_t n;
  gstat_matrix where;
} gstat_i_sched_lap;

/* Plans A's Laplacian (sparse_req.h) on the GPU when the context asks for
 * CUDA and the module has the step; GSTAT_EUNSUPPORTED (no message) where
 * the operator stays on the host (AUTO included, until its crossover is
 * measured), or a failure of the plan that the host cannot help. */
gstat_status gstat_i_sched_csr_lap_plan(gstat_ctx *ctx, const char *fn, const gstat_i_csr_lap *A,
                                        gstat_i_sched_lap *out);
/* The planned operator as a graph/sparse_eigs.h gstat_i_apply_fn (plan: the
 * gstat_i_sched_lap): X and Y n x m column-major in its memory. */
gstat_status gstat_i_sched_csr_lap_apply(gstat_ctx *ctx, void *plan, int64_t n, int64_t m,
                                         const double *X, double *Y);
void gstat_i_sched_csr_lap_release(gstat_i_sched_lap *p);

#endif /* GSTAT_BACKEND_SCHED_H */
