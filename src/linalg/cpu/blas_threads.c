/* Detect the BLAS threading model once per process (see blas_threads.h). */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <pthread.h>

#include "linalg/cpu/blas_threads.h"

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

int gstat_i_cpu_batch_threads(const gstat_ctx *ctx, int64_t batch) {
  if (batch < 2 || ctx->num_threads < 2 || gstat_i_blas_threads_conflict_with_openmp()) return 1;
  return batch < ctx->num_threads ? (int)batch : ctx->num_threads;
}
