/* The CPU backend's statistics primitives (primitives_cpu.c), for its ops
 * table in backend_cpu.c; their contracts are backend.h's. */
#ifndef GSTAT_BACKEND_CPU_PRIMITIVES_CPU_H
#define GSTAT_BACKEND_CPU_PRIMITIVES_CPU_H

#include "backend/backend.h"

gstat_status gstat_i_cpu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  double *mean, double *M, const gstat_matrix *S);
gstat_status gstat_i_cpu_scale_sym(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                   const double *d);
gstat_status gstat_i_cpu_offdiag_sumsq(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                       double *out);
gstat_status gstat_i_cpu_sym_affine(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                    const double *a, const double *c);
gstat_status gstat_i_cpu_project(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                 const double *mean, const double *scale, const double *comp,
                                 const double *ev, int64_t k, gstat_matrix *Y);
gstat_status gstat_i_cpu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                                  gstat_matrix *w);
gstat_status gstat_i_cpu_copy(void *state, gstat_ctx *ctx, const gstat_matrix *src,
                              gstat_matrix *dst);
gstat_status gstat_i_cpu_knn(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             int64_t k, bool include_self, int64_t *nbr, double *d2);
gstat_status gstat_i_cpu_eigh_lowest(void *state, gstat_ctx *ctx, gstat_matrix *A, const int64_t *m,
                                     gstat_matrix *w, int64_t *info);
/* backend.h's weighted and missing-value co-moments on host data (moments_cpu.c). */
gstat_status gstat_i_cpu_wcomoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                   const double *w, const unsigned char *keep, bool about_zero,
                                   double *mean, double *M);
gstat_status gstat_i_cpu_nan_rows(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  unsigned char *keep, int64_t *inf_at);
gstat_status gstat_i_cpu_pairwise(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  const double *w, const double *aw, const gstat_i_pairwise_out *o);
double gstat_i_cpu_host_cost(void *state, const gstat_ctx *ctx, const gstat_i_work *w);

/* AUTO's floors (the rules table): whether host work of `cpu_seconds` on
 * the CPU, or a host eigh/Cholesky/solve of batch x n x n, stays on the CPU
 * whatever the GPU's estimate. */
bool gstat_i_cpu_keeps_host_work(double cpu_seconds);
bool gstat_i_cpu_keeps_host_linalg(int64_t batch, int64_t n);

/* The rules' thread count for a parallel step of `items` independent pieces
 * and `seconds` of one-thread work: one thread per rules.thread_seconds of
 * work, at most `limit` and `items`, at least 1. */
int gstat_i_cpu_rule_threads(int limit, int64_t items, double seconds);

/* One-thread seconds of `flops` in BLAS-3 (syrk/gemm) or in our per-matrix
 * kernels, at the rules' rates. */
double gstat_i_cpu_seconds(gstat_dtype dt, double flops, bool blas3);

/* The work by which to thread BLAS under a LAPACK routine of `total`
 * one-thread seconds whose smallest parallel BLAS call has `smallest_step`:
 * total, or 0 (one thread) when waits are passive (gstat_set_passive_waits)
 * and that call is too small to be worth a wake-up. */
double gstat_i_cpu_blas_step_seconds(double total, double smallest_step);

/* One-thread seconds of a loop of our own with `flops` arithmetic and
 * `bytes` of memory traffic (whichever bounds it). */
double gstat_i_cpu_loop_seconds(double flops, double bytes);

/* Slices of a batch of `seconds` one-thread work that reports progress. */
int64_t gstat_i_cpu_slices(double seconds);

/* The dense primitives on descriptors (gemm_cpu.c). */
gstat_status gstat_i_cpu_gemm(void *state, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb,
                              double alpha, const gstat_matrix *A, const gstat_matrix *B,
                              double beta, const gstat_matrix *C);
gstat_status gstat_i_cpu_orthonormalize(void *state, gstat_ctx *ctx, const gstat_matrix *A);
gstat_status gstat_i_cpu_syrk_lower(void *state, gstat_ctx *ctx, gstat_trans trans,
                                    const gstat_matrix *A, const gstat_matrix *C);
/* backend.h's laplacian on host memory (laplacian_cpu.c). */
gstat_status gstat_i_cpu_laplacian(void *state, gstat_ctx *ctx, const char *fn,
                                   const gstat_matrix *A, int sym, int drop_loops, int kind,
                                   const gstat_matrix *L, const gstat_matrix *deg);
/* backend.h's sc_laplacians and sc_assign on host memory (spectral_cpu.c). */
gstat_status gstat_i_cpu_sc_laplacians(void *state, gstat_ctx *ctx, const gstat_i_sc_lap_req *r);
gstat_status gstat_i_cpu_sc_assign(void *state, gstat_ctx *ctx, const gstat_i_sc_assign_req *r);
gstat_status gstat_i_cpu_kmeans(void *state, gstat_ctx *ctx, const gstat_matrix *E,
                                const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                                int64_t *iterations);
gstat_status gstat_i_cpu_lincomb(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r);
gstat_status gstat_i_cpu_dots(void *state, gstat_ctx *ctx, const gstat_matrix *X,
                              const gstat_matrix *Y, double *out);

/* Element 0 of host X searched by a gstat_knn_algorithm other than AUTO:
 * TREE (GSTAT_EINVAL above its dimensions), BRUTE (GEMM distances) or
 * NNDESCENT (approximate, seeded); the knn primitive's outputs. */
gstat_status gstat_i_cpu_knn_method(gstat_ctx *ctx, const gstat_matrix *X, int64_t k,
                                    bool include_self, int algorithm, uint64_t seed, int64_t *nbr,
                                    double *d2);

#endif /* GSTAT_BACKEND_CPU_PRIMITIVES_CPU_H */
