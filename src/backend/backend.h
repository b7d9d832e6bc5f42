/*
 * The backend interface: a table of functions plus an opaque state pointer.
 * src/backend/dispatch.c validates every argument, then hands the call to a
 * backend through this table; backends never see invalid input.
 *
 * Contract for every function:
 * - descriptors are checked (shapes agree, strides sane, aliasing legal);
 * - `info` is never NULL and has `batch` entries: the backend sets each to 0
 *   or to the element's failure code, and fills a failed element's outputs
 *   with NaN;
 * - it returns GSTAT_OK when every element was attempted (element failures
 *   are reported through info only), or a whole-call failure (GSTAT_ENOMEM,
 *   GSTAT_EBACKEND, GSTAT_EUNSUPPORTED) after which the dispatcher may retry
 *   on another backend; on such a failure the context message says why.
 *
 * A loadable backend (the CUDA module) exports one function that fills a
 * gstat_i_backend for a given API version; bump the version whenever this
 * table changes.
 */
#ifndef GSTAT_BACKEND_BACKEND_H
#define GSTAT_BACKEND_BACKEND_H

#include "core/internal.h"
#include "gstat/linalg.h"
#include "gstat/spectral.h"
#include "backend/rows_req.h"
#include "backend/moments_req.h"
#include "backend/spectral_req.h"
#include "backend/sparse_req.h"

#define GSTAT_I_BACKEND_API_VERSION 19

/* The primitives a cost model compares (host_cost). */
typedef enum {
  GSTAT_I_PRIM_COMOMENT,
  GSTAT_I_PRIM_PROJECT,
  GSTAT_I_PRIM_KNN,
  GSTAT_I_PRIM_ROWS,
  GSTAT_I_PRIM_WCOMOMENT,
  GSTAT_I_PRIM_NAN_ROWS,
  GSTAT_I_PRIM_PAIRWISE,
  GSTAT_I_PRIM_KMEANS,
  GSTAT_I_PRIM_CSR_LAP /* a host graph's sparse solve (n nodes, p stored entries): host_cost
                          >= 0 where AUTO plans its Laplacian on this backend */
} gstat_i_prim;

/* One primitive call's shape: element count (KMEANS: its runs), rows,
 * columns, k (PROJECT's components, KNN's neighbours, KMEANS's clusters),
 * the data's dtype. */
typedef struct gstat_i_work {
  gstat_i_prim op;
  gstat_dtype dtype;
  int64_t batch, n, p, k;
} gstat_i_work;

typedef struct gstat_i_backend_ops {
  int api_version;
  const char *name;
  unsigned ran_flag; /* GSTAT_RAN_* bit this backend sets */

  gstat_status (*eigh)(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                       gstat_matrix *w, gstat_matrix *V, int64_t *info);
  gstat_status (*cholesky)(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                           gstat_matrix *F, int64_t *info);
  gstat_status (*cholesky_solve)(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                 gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                 int64_t *info);
  gstat_status (*triangular_solve)(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                   gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                   const gstat_matrix *B, gstat_matrix *X, int64_t *info);
  void (*destroy)(void *state);
  /* Device allocations made so far (NULL for the CPU backend). */
  int64_t (*device_allocations)(void *state);
  /* The counters of gstat_ctx_device_stats (optional): at most stats_size
   * bytes of them (the caller's sizeof gstat_device_stats), so that a core
   * and a module built against different versions of the struct never
   * write past it. */
  void (*device_stats)(void *state, gstat_device_stats *stats, size_t stats_size);

  /* Copy src into dst (same batch, rows and cols; any dtypes, strides and
   * locations, host or this backend's device), converting the dtype (bf16:
   * nearest even). The scheduler moves data between memories with it. */
  gstat_status (*copy)(void *state, gstat_ctx *ctx, const gstat_matrix *src, gstat_matrix *dst);

  /* Whether the last eigh, cholesky, cholesky_solve or triangular_solve on
   * this state, called with this info and batch, set every info to 0 (as it
   * found out anyway: a large batch's info then need not be scanned again).
   * false when unsure. Resets what it answers from. Optional (NULL: the
   * dispatcher scans). */
  bool (*info_clean)(void *state, const int64_t *info, int64_t batch);

  /* ---- statistics primitives (src/backend/sched.c runs them) ---- */

  /* Fused co-moment: column means (host, p doubles) and M = sum_i (x_i -
   * mean)(x_i - mean)^T (host, p x p doubles, both triangles, column-major)
   * of the rows of element b of X (n >= 1 rows, any strides and dtype, in the
   * host's memory or this backend's: a backend that takes host rows moves
   * them itself), in X's compute type; NaN/Inf propagate (the caller decides).
   * With M NULL the co-moment goes instead into S (p x p in X's compute dtype,
   * at least its lower triangle; S lies in X's memory), so that a chain of
   * primitives on device data keeps it there. Optional. */
  gstat_status (*comoment)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                           double *mean, double *M, const gstat_matrix *S);
  /* Centred projection: element b of Y (m x k; any dtype and strides; the
   * host's memory or this backend's) = ((X_b - mean) / scale) comp^T, column i
   * divided by sqrt(ev[i]) when ev is not NULL (whitening; 0 where ev <= 0).
   * X_b is m x p (host or this backend's memory); mean (p), scale (p, NULL: 1),
   * comp (k x p row-major) and ev (k) are host doubles. Optional. */
  gstat_status (*project)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                          const double *mean, const double *scale, const double *comp,
                          const double *ev, int64_t k, gstat_matrix *Y);
  /* Every eigenvalue of each dense column-major matrix of A (its lower
   * triangle, compute dtype, the host's memory or this backend's, w in the
   * same) into w (ascending), and the eigenvectors of the k largest into A's
   * last k columns (the sign rule applied; the rest of A is overwritten).
   * GSTAT_EUNSUPPORTED (A untouched) where the full eigh is the faster or
   * the only plan. Optional (NULL: the scheduler runs the full eigh). */
  gstat_status (*eigh_top)(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                           gstat_matrix *w);
  /* S(i, j) /= d[i] d[j] for each p x p matrix of S (this backend's memory,
   * dense column-major, compute dtype), d host doubles (batch x p).
   * Optional. */
  gstat_status (*scale_sym)(void *state, gstat_ctx *ctx, const gstat_matrix *S, const double *d);
  /* Memory of this backend for a statistic's chain of primitives (bytes),
   * kept by the state and valid until the next workspace call on it.
   * Optional (NULL for the CPU: statistics use host workspace). */
  void *(*workspace)(void *state, gstat_ctx *ctx, size_t bytes);
  /* The first NaN/Inf of M (this backend's memory) as the index b * rows *
   * cols + i * cols + j into *first, or -1 when there is none. Optional
   * (NULL: the scheduler scans a host copy). */
  gstat_status (*find_nonfinite)(void *state, gstat_ctx *ctx, const gstat_matrix *M,
                                 int64_t *first);
  /* The k nearest rows (Euclidean) of every row i of element b of X (n x p,
   * finite; any dtype and strides; the host's memory or this backend's):
   * nbr[i * k ...] (host, sorted by index) and their squared distances d2
   * (host doubles). With include_self, i is one of its own k (distance 0)
   * beside k - 1 others; the others are the best by (distance, index), so
   * ties go to the smaller index. 1 <= k, k - include_self <= n - 1.
   * Optional. */
  gstat_status (*knn)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                      bool include_self, int64_t *nbr, double *d2);
  /* Estimated seconds for primitive `op` on host data of this shape run here
   * (moving the data included), from the backend's rules table; < 0 when it
   * does not run it. The scheduler's cost model under GSTAT_BACKEND_AUTO.
   * Optional (NULL: never chosen for host data under AUTO). */
  double (*host_cost)(void *state, const gstat_ctx *ctx, const gstat_i_work *w);

  /* The m[e] smallest eigenpairs of each n x n matrix e of A (host, dense
   * column-major, compute dtype, lower triangle read, A overwritten): the
   * eigenvalues ascending in the first m[e] entries of w's row e, their
   * vectors (the sign rule applied) in A's first m[e] columns, where a full
   * eigh would leave them (the rest unspecified); info[e] != 0 for a failed
   * element, GSTAT_ENOCONV then. GSTAT_EUNSUPPORTED (no message, A
   * unchanged) where the full eigh is the faster plan. Optional. */
  gstat_status (*eigh_lowest)(void *state, gstat_ctx *ctx, gstat_matrix *A, const int64_t *m,
                              gstat_matrix *w, int64_t *info);
  /* ---- dense primitives on descriptors (src/backend/sched.c runs them) ---- */

  /* For each element b of C: C_b = alpha op(A_b) op(B_b) + beta C_b, op(A_b)
   * C->rows x k, op(B_b) k x C->cols. A, B and C share one dtype (F32 or F64,
   * the compute dtype) and lie together in this backend's memory (the CPU:
   * the host); A or B of batch 1 serves every element; C overlaps neither.
   * Each element has a unit row or column stride (gemm_view.h); beta 0 does
   * not read C. GSTAT_EUNSUPPORTED (with a message) for what the backend
   * does not take: the scheduler then runs the CPU's on host copies.
   * Optional. */
  gstat_status (*gemm)(void *state, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb, double alpha,
                       const gstat_matrix *A, const gstat_matrix *B, double beta,
                       const gstat_matrix *C);
  /* Replace the columns of each element of A (rows >= cols, F32 or F64, this
   * backend's memory) by an orthonormal basis of their span: Householder QR
   * with Q formed (LAPACK's geqrf + orgqr convention). GSTAT_EUNSUPPORTED as
   * for gemm. Optional. */
  gstat_status (*orthonormalize)(void *state, gstat_ctx *ctx, const gstat_matrix *A);
  /* The lower triangle of each element of C = op(A_b) op(A_b)^T (trans
   * GSTAT_NO_TRANS: A_b A_b^T; GSTAT_TRANS: A_b^T A_b), C dense
   * column-major, A and C sharing the compute dtype and this backend's
   * memory; C's strict upper triangle is left unspecified. GSTAT_EUNSUPPORTED
   * without a message for a layout it does not take: the scheduler then
   * runs gemm. Optional. */
  gstat_status (*syrk_lower)(void *state, gstat_ctx *ctx, gstat_trans trans, const gstat_matrix *A,
                             const gstat_matrix *C);
  /* ---- row-wise reductions (Mahalanobis, shrinkage) ---- */

  /* The rows primitive (gstat_i_rows_req): X, L, Q and d in one memory, the
   * host's or this backend's (the scheduler moves them), any dtypes and
   * strides (L and Q are used in X's compute dtype). Optional (NULL: the CPU
   * through host copies). */
  gstat_status (*rows)(void *state, gstat_ctx *ctx, const gstat_i_rows_req *r);
  /* ---- weighted and missing-value co-moments (covariance; moments_req.h) ---- */

  /* The co-moment of a subset of the rows of element b of X (n x p, any
   * dtype and strides, the host's memory or this backend's), weighted: mean
   * (host, p) = sum w_i x_i / sum w_i and M (host, p x p doubles, both
   * triangles) = sum w_i (x_i - mean)(x_i - mean)^T over the rows i with
   * keep[i] != 0, in X's compute type. w (n host doubles, >= 0; NULL: 1) and
   * keep (n host bytes; NULL: every row) are the caller's; the kept rows
   * have weight > 0 in all. A left-out row's NaN does not count; a kept
   * row's NaN/Inf propagates. A constant column's mean is its value
   * exactly. about_zero: the moments about 0 (mean 0, NaN for a column with
   * a NaN). Optional (NULL: the CPU through host copies). */
  gstat_status (*wcomoment)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                            const double *w, const unsigned char *keep, bool about_zero,
                            double *mean, double *M);
  /* keep[i] (host, n bytes) = row i of element b of X (any memory, dtype and
   * strides) has no NaN; *inf_at = i p + j of an infinite x_ij (the
   * smallest such index), or -1. Optional. */
  gstat_status (*nan_rows)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                           unsigned char *keep, int64_t *inf_at);
  /* Pairwise co-moments (R's use = "pairwise.complete.obs") of element b of
   * X (any memory, dtype and strides; NaN: missing; no Inf), computed in
   * float64, with row weights w (n host doubles; NULL: 1) and analytic
   * weights aw (for o->WA; NULL when o->WA is NULL): moments_req.h.
   * Optional. */
  gstat_status (*pairwise)(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                           const double *w, const double *aw, const gstat_i_pairwise_out *o);
  /* ---- graph primitives (src/graph, src/spectral; the scheduler runs them) ---- */

  /* Dense Laplacians and degree scaling: each n x n element of A (this
   * backend's memory; any dtype and strides) validated (weights finite and
   * >= 0; with sym == GSTAT_SYM_CHECK, pairs that agree to A's dtype's
   * tolerance), symmetrized by sym (gstat_symmetrize), its diagonal dropped
   * when drop_loops, and its Laplacian of `kind` (gstat_laplacian_kind) in
   * double written into L (batch x n x n, same memory, any dtype and
   * strides; L may be A itself) and the degrees into deg (batch x n x 1,
   * same memory, or NULL). Nothing is written unless every element is
   * valid: an invalid one is GSTAT_EINVAL / GSTAT_ENOTFINITE naming it (fn:
   * the caller's name for messages), or GSTAT_EUNSUPPORTED from a backend
   * that leaves naming it to the CPU's rerun. Optional. */
  gstat_status (*laplacian)(void *state, gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                            int sym, int drop_loops, int kind, const gstat_matrix *L,
                            const gstat_matrix *deg);

  /* eigh of device data (batch >= 1, n >= 0) enqueued on the backend's
   * stream with no host synchronization and no allocation, so that it can
   * be captured in a CUDA graph; info: 2 x batch int32 in device memory
   * (gstat_eigh_async says what they mean). GSTAT_EUNSUPPORTED with a
   * message when these arguments cannot run that way. Optional. */
  gstat_status (*eigh_async)(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                             gstat_matrix *w, gstat_matrix *V, int32_t *info);
  /* gstat_eigh_backward on this backend's memory (checked descriptors, batch
   * >= 1, n >= 1), enqueued like eigh_async. GSTAT_EUNSUPPORTED with a
   * message for an order or dtype it does not take. Optional. */
  gstat_status (*eigh_backward)(void *state, gstat_ctx *ctx, const gstat_matrix *w,
                                const gstat_matrix *V, const gstat_matrix *gw,
                                const gstat_matrix *gV, double broadening, gstat_matrix *gA);
  /* The batch spectral engine's steps (spectral_req.h), A, L, deg, V, W in
   * this backend's memory, every graph's numbers in host arrays. sc_laplacians
   * validates every graph; GSTAT_EUNSUPPORTED (L and deg then unspecified)
   * for an invalid weight, which the host engine then names or skips, and
   * for what the backend does not take (dtype, size). sc_assign
   * is GSTAT_OK once every graph was attempted (each graph's own failure in
   * why[g]); GSTAT_EUNSUPPORTED for cluster-QR where the backend has no
   * LAPACK. Either failing sends the batch to the host engine. Optional. */
  gstat_status (*sc_laplacians)(void *state, gstat_ctx *ctx, const gstat_i_sc_lap_req *r);
  gstat_status (*sc_assign)(void *state, gstat_ctx *ctx, const gstat_i_sc_assign_req *r);
  /* ---- block steps of the sparse eigensolver (sparse_req.h) ---- */

  /* Z = g Z + a X + b Y per column (gstat_i_lincomb_req), in this backend's
   * memory. Optional (NULL: the CPU through host copies). */
  gstat_status (*lincomb)(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r);
  /* out[c] (host, m doubles) = X[:, c] . Y[:, c] for n x m float64 blocks
   * with unit row stride in this backend's memory, summed in an order that
   * depends only on n (the same result every call). Optional. */
  gstat_status (*dots)(void *state, gstat_ctx *ctx, const gstat_matrix *X, const gstat_matrix *Y,
                       double *out);
  /* A Laplacian's action planned in this backend's memory (sparse_req.h's
   * gstat_i_csr_lap: the graph copied once, kept by the plan), applied to
   * n x m float64 blocks X, Y (unit row stride, this backend's memory, not
   * overlapping) by csr_lap_apply, freed by csr_lap_release. Optional
   * (NULL: the operator stays on the host). */
  gstat_status (*csr_lap_plan)(void *state, gstat_ctx *ctx, const gstat_i_csr_lap *A, void **plan);
  gstat_status (*csr_lap_apply)(void *state, gstat_ctx *ctx, void *plan, const gstat_matrix *X,
                                const gstat_matrix *Y);
  void (*csr_lap_release)(void *state, void *plan);
  /* The best of opt->n_init k-means runs (spectral/assign_impl.h: its
   * seeds, k-means++ seeding, Lloyd's stopping rules, the serial choice of
   * the best run) on the rows of E (n x dim float64, row-major dense, the
   * host's memory or this backend's: a backend that takes host rows moves
   * them itself): labels (host, n), *inertia and *iterations of the best
   * run. A backend's sums may round differently from the CPU's serial ones.
   * opt->tick, when set, is called between runs (host threads only);
   * GSTAT_ECANCELED when it stops. Optional. */
  gstat_status (*kmeans)(void *state, gstat_ctx *ctx, const gstat_matrix *E,
                         const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                         int64_t *iterations);
  /* ---- symmetric matrices kept where they were formed (shrinkage) ---- */

  /* out[b] (host) = the sum of S_ij^2 over the strict lower triangle of
   * each p x p element b of S (this backend's memory, dense column-major,
   * compute dtype), in double, in an order that depends only on p.
   * Optional (NULL: the CPU on a host copy). */
  gstat_status (*offdiag_sumsq)(void *state, gstat_ctx *ctx, const gstat_matrix *S, double *out);
  /* S_b = a[b] S_b + c[b] I for each element b of S (as offdiag_sumsq's),
   * from its lower triangle into both, in double rounded once; a and c host
   * doubles. Optional (NULL: the CPU on a host copy). */
  gstat_status (*sym_affine)(void *state, gstat_ctx *ctx, const gstat_matrix *S, const double *a,
                             const double *c);
} gstat_i_backend_ops;

typedef struct gstat_i_backend {
  const gstat_i_backend_ops *ops;
  void *state;
} gstat_i_backend;

/* The CPU backend, always built in (stateless: its workspace is the ctx's). */
extern const gstat_i_backend_ops gstat_i_cpu_backend_ops;

/* The transposed view of a descriptor (no data moves): a backend reads an
 * upper triangle as a lower one, or writes L through it to store U = L^T. */
static inline gstat_matrix gstat_i_transposed(const gstat_matrix *m) {
  gstat_matrix t = *m;
  t.rows = m->cols;
  t.cols = m->rows;
  t.row_stride = m->col_stride;
  t.col_stride = m->row_stride;
  return t;
}

/* info value a backend sets for an element it could not compute reliably
 * (solver error, NaN/Inf output): the dispatcher recomputes it elsewhere. */
#define GSTAT_I_INFO_RETRY (-1)

/* ---- loadable modules (the CUDA backend) ---- */

/* What libgstat offers a module: it never links against libgstat, so the
 * same module serves the shared and the static library. */
typedef struct gstat_i_host_services {
  int api_version;
  gstat_status (*fail)(gstat_ctx *ctx, gstat_status status, const char *fmt, ...);
  int (*check_finite)(const gstat_ctx *ctx); /* the context's option */
  const gstat_i_backend_ops *cpu;
} gstat_i_host_services;

typedef struct gstat_i_module {
  int api_version;
  const gstat_i_backend_ops *ops;
  /* Per-context state on CUDA device `device`; GSTAT_EUNSUPPORTED (with a
   * message) when there is no usable device. */
  gstat_status (*create)(gstat_ctx *ctx, int device, void **state);
  /* Use the caller's stream (NULL: the state's own). */
  gstat_status (*set_stream)(void *state, void *stream);
} gstat_i_module;

/* The one symbol a module exports. */
#define GSTAT_I_MODULE_ENTRY "gstat_cuda_module_v1"
typedef const gstat_i_module *(*gstat_i_module_entry_fn)(const gstat_i_host_services *host);

/* This context's CUDA backend, loading the module and creating the state on
 * first use; GSTAT_EUNSUPPORTED with a message when there is none. */
gstat_status gstat_i_cuda_backend(gstat_ctx *ctx, gstat_i_backend *out);

#endif /* GSTAT_BACKEND_BACKEND_H */
