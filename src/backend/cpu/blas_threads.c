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
/* written once under probe_once, then only read */
static bool conflict;
static void (*pthreads_set)(int); /* a pthreads OpenBLAS's thread count */
static int (*pthreads_get)(void);

static void probe(void) {
  /* openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP */
  int (*get_parallel)(void);
  *(void **)&get_parallel = dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  conflict = get_parallel != NULL && get_parallel() == 1;
  if (!conflict) return;
  *(void **)&pthreads_set = dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  *(void **)&pthreads_get = dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  if (!pthreads_set || !pthreads_get) pthreads_set = NULL, pthreads_get = NULL;
}

gstat_i_blas_threads_saved gstat_i_blas_threads_enter(int nt) {
  gstat_i_blas_threads_saved s = {0, 0};
  pthread_once(&probe_once, probe);
#ifdef _OPENMP
  s.omp = omp_get_max_threads();
  omp_set_num_threads(nt);
#endif
  /* a pthreads OpenBLAS reads no OpenMP setting: left alone, it threads
   * every call on all cores, against the caller's own threads */
  if (pthreads_get && !gstat_i_in_parallel()) { /* one count for the process: not per thread */
    s.openblas = pthreads_get();
    if (s.openblas != nt) pthreads_set(nt);
  }
  return s;
}

void gstat_i_blas_threads_leave(gstat_i_blas_threads_saved s) {
#ifdef _OPENMP
  if (s.omp > 0) omp_set_num_threads(s.omp);
#endif
  if (pthreads_get && s.openblas > 0 && pthreads_get() != s.openblas) pthreads_set(s.openblas);
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
