/* The CPU backend's statistics primitives (primitives_cpu.c), for its ops
 * table in backend_cpu.c; their contracts are backend.h's. */
#ifndef GSTAT_LINALG_CPU_PRIMITIVES_CPU_H
#define GSTAT_LINALG_CPU_PRIMITIVES_CPU_H

#include "linalg/backend.h"

gstat_status gstat_i_cpu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  double *mean, double *M, const gstat_matrix *S);
gstat_status gstat_i_cpu_scale_sym(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                   const double *d);
gstat_status gstat_i_cpu_project(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                 const double *mean, const double *scale, const double *comp,
                                 const double *ev, int64_t k, gstat_matrix *Y);
gstat_status gstat_i_cpu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                                  gstat_matrix *w);
gstat_status gstat_i_cpu_copy(void *state, gstat_ctx *ctx, const gstat_matrix *src,
                              gstat_matrix *dst);
gstat_status gstat_i_cpu_knn(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                             int64_t k, bool include_self, int64_t *nbr, double *d2);
double gstat_i_cpu_host_cost(void *state, const gstat_ctx *ctx, const gstat_i_work *w);

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

/* Element 0 of host X searched by a gstat_knn_algorithm other than AUTO:
 * TREE (GSTAT_EINVAL above its dimensions), BRUTE (GEMM distances) or
 * NNDESCENT (approximate, seeded); the knn primitive's outputs. */
gstat_status gstat_i_cpu_knn_method(gstat_ctx *ctx, const gstat_matrix *X, int64_t k,
                                    bool include_self, int algorithm, uint64_t seed, int64_t *nbr,
                                    double *d2);

#endif /* GSTAT_LINALG_CPU_PRIMITIVES_CPU_H */
