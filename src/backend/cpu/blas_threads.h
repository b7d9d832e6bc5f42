/*
 * BLAS threading policy of the CPU backend.
 *
 * Batches run over matrices in an OpenMP loop with single-threaded BLAS in
 * each iteration; a batch too small to fill the threads runs one matrix at a
 * time with threaded BLAS. The hazard: an OpenBLAS built with its own pthreads
 * server, called from inside an OpenMP region, starts its own threads from
 * every OpenMP thread (oversubscription, and crashes in some versions). An
 * OpenMP build of OpenBLAS instead runs single-threaded inside an active
 * parallel region, which is what we want. So we ask OpenBLAS which threading
 * it was built with, and never open a parallel region around a pthreads build.
 */
#ifndef GSTAT_BACKEND_CPU_BLAS_THREADS_H
#define GSTAT_BACKEND_CPU_BLAS_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

/* True when the loaded BLAS is OpenBLAS with its pthreads server (unsafe to
 * call from parallel OpenMP threads). Other BLAS are taken as safe. */
bool gstat_i_blas_threads_conflict_with_openmp(void);

/* Threads for a parallel loop over `items` pieces of `seconds` one-thread
 * work in all (the rules of primitives_cpu.c): 1 for small work, inside a
 * parallel region, or with a pthreads OpenBLAS (then BLAS may thread each
 * piece itself). Noted in the context (gstat_ctx_last_threads). */
int gstat_i_cpu_batch_threads(gstat_ctx *ctx, int64_t items, double seconds);

/* Threads for BLAS/LAPACK called outside our loops on `seconds` of work:
 * the same rules, 1 inside a parallel region; noted in the context. */
int gstat_i_cpu_blas_threads(gstat_ctx *ctx, double seconds);

/* What gstat_i_blas_threads_enter replaced (0: nothing). */
typedef struct gstat_i_blas_threads_saved {
  int omp, openblas;
} gstat_i_blas_threads_saved;

/* BLAS calls that follow on this thread use nt threads: OpenMP's setting
 * (which an OpenMP OpenBLAS reads) and, for a pthreads OpenBLAS, its own
 * process-wide count; _leave restores both. */
gstat_i_blas_threads_saved gstat_i_blas_threads_enter(int nt);
void gstat_i_blas_threads_leave(gstat_i_blas_threads_saved s);

/* Whether the calling thread is inside an active OpenMP parallel region. */
bool gstat_i_in_parallel(void);

#endif /* GSTAT_BACKEND_CPU_BLAS_THREADS_H */
