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
#ifndef GSTAT_LINALG_CPU_BLAS_THREADS_H
#define GSTAT_LINALG_CPU_BLAS_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/internal.h"

/* True when the loaded BLAS is OpenBLAS with its pthreads server (unsafe to
 * call from parallel OpenMP threads). Other BLAS are taken as safe. */
bool gstat_i_blas_threads_conflict_with_openmp(void);

/* Threads for the loop over `batch` matrices: 1 means run the matrices one
 * by one and let BLAS use the context's threads. */
int gstat_i_cpu_batch_threads(const gstat_ctx *ctx, int64_t batch);

#endif /* GSTAT_LINALG_CPU_BLAS_THREADS_H */
