/* See openblas_core.h for why this exists. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/openblas_core.h"

static pthread_once_t fix_once = PTHREAD_ONCE_INIT;

typedef char *(*corename_fn)(void);
typedef void (*void_fn)(void);

static void *sym(const char *name) {
  return dlsym(RTLD_DEFAULT, name);
}

/* The best OpenBLAS core this CPU and OS can run, or NULL for "no better". */
static const char *better_core(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

static void fix(void) {
  const char *keep = getenv("GSTAT_OPENBLAS_CORETYPE");
  if ((keep && strcmp(keep, "keep") == 0) || getenv("OPENBLAS_CORETYPE")) return;
  corename_fn corename;
  void_fn quit, init;
  *(void **)&corename = sym("openblas_get_corename");
  *(void **)&quit = sym("gotoblas_dynamic_quit");
  *(void **)&init = sym("gotoblas_dynamic_init");
  if (!corename || !quit || !init) return; /* not a DYNAMIC_ARCH OpenBLAS */
  const char *now = corename();
  const char *want = better_core();
  if (!now || !want || strcmp(now, "Prescott") != 0) return;
  setenv("OPENBLAS_CORETYPE", want, 1);
  quit();
  init(); /* reads OPENBLAS_CORETYPE; re-initializes the kernel parameters */
  unsetenv("OPENBLAS_CORETYPE");
}

void gstat_i_openblas_fix_core(void) {
  pthread_once(&fix_once, fix);
}
