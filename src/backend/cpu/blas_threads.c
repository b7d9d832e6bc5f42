/* Detect the BLAS threading model once per process (see blas_threads.h). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <pthread.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend/cpu/blas_threads.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool conflict; /* written once under probe_once, then only read */

static void probe(void) {
  /* openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP */
  int (*get_parallel)(void);
  void *sym = dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  *(void **)&get_parallel = sym;
  conflict = get_parallel != NULL && get_parallel() == 1;
}

bool gstat_i_blas_threads_conflict_with_openmp(void) {
  pthread_once(&probe_once, probe);
  return conflict;
}

int gstat_i_cpu_batch_threads(gstat_ctx *ctx, int64_t items, double seconds) {
  int nt = 1;
  /* inside the caller's parallel region (or ours, nested) one thread: a team
   * per outer thread would oversubscribe the cores */
  if (items >= 2 && ctx->num_threads >= 2 && !gstat_i_blas_threads_conflict_with_openmp() &&
      !gstat_i_in_parallel())
    nt = gstat_i_cpu_rule_threads(ctx->num_threads, items, seconds);
  gstat_i_note_threads(ctx, nt);
  return nt;
}

int gstat_i_loop_threads(gstat_ctx *ctx, int64_t items, double flops, double bytes) {
  int nt = 1;
  if (items >= 2 && ctx->num_threads >= 2 && !gstat_i_in_parallel())
    nt = gstat_i_cpu_rule_threads(ctx->num_threads, items, gstat_i_cpu_loop_seconds(flops, bytes));
  gstat_i_note_threads(ctx, nt);
  return nt;
}

int gstat_i_cpu_blas_threads(gstat_ctx *ctx, double seconds) {
  int nt =
      gstat_i_in_parallel() ? 1 : gstat_i_cpu_rule_threads(ctx->num_threads, INT64_MAX, seconds);
  gstat_i_note_threads(ctx, nt);
  return nt;
}

bool gstat_i_in_parallel(void) {
#ifdef _OPENMP
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}
