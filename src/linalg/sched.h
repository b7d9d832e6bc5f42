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
#ifndef GSTAT_LINALG_SCHED_H
#define GSTAT_LINALG_SCHED_H

#include "core/internal.h"

/* Column means (p doubles) and co-moment (p x p doubles, column-major, both
 * triangles) of the rows of element b of X (host or device memory, n >= 1,
 * any strides and dtype), in X's compute type; NaN/Inf propagate. With M
 * NULL the co-moment goes into S instead (p x p, X's compute dtype, its
 * lower triangle at least, in X's memory: a chain that stays on the device). */
gstat_status gstat_i_sched_comoment(gstat_ctx *ctx, const char *fn, const gstat_matrix *X,
                                    int64_t b, double *mean, double *M, const gstat_matrix *S);

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

#endif /* GSTAT_LINALG_SCHED_H */
