/* Progress line on a terminal's stderr (see progress.h). */
#define _POSIX_C_SOURCE 200809L

#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds a step runs before its line shows: 1, or GSTAT_CLI_PROGRESS_AFTER
 * (the tests' 0 shows it at once). */
static double delay(void) {
  const char *e = getenv("GSTAT_CLI_PROGRESS_AFTER");
  char *end = NULL;
  double d = e ? strtod(e, &end) : 1.0;
  return e && end != e && d >= 0 ? d : 1.0;
}

void progress_init(progress *pr, const char *label, int64_t total_bytes) {
  pr->enabled = isatty(STDERR_FILENO);
  pr->shown = 0;
  pr->start = pr->enabled ? now() : 0;
  pr->last = -1e300; /* the first report past the delay shows */
  pr->label = label;
  pr->total = total_bytes;
  pr->library = 0;
  pr->after = delay();
}

/* Past the delay and a quarter second after the last line (no flicker). */
static int due(progress *pr, double *t) {
  *t = now();
  if (*t - pr->start < pr->after || *t - pr->last < 0.25) return 0;
  pr->last = *t;
  pr->shown = 1;
  return 1;
}

void progress_update(void *user, int64_t bytes) {
  progress *pr = user;
  double t;
  if (!pr || !pr->enabled || pr->library || !due(pr, &t)) return; /* quiet for short inputs */
  double mb = (double)bytes / 1048576.0, rate = t > pr->start ? mb / (t - pr->start) : 0;
  if (pr->total > 0) {
    fprintf(stderr, "\r\033[K%s: %.0f of %.0f MB (%.0f%%), %.0f MB/s", pr->label, mb,
            (double)pr->total / 1048576.0, 100.0 * (double)bytes / (double)pr->total, rate);
  } else {
    fprintf(stderr, "\r\033[K%s: %.0f MB, %.0f MB/s", pr->label, mb, rate);
  }
  fflush(stderr);
}

void progress_done(progress *pr) {
  if (pr && pr->shown) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
  }
  if (pr) pr->shown = pr->library = 0;
}

void progress_stage(progress *pr, const char *label) {
  progress_init(pr, label, 0);
  pr->library = 1;
}

int progress_library(int64_t done, int64_t total, const char *what, void *user) {
  progress *pr = user;
  double t;
  if (!pr || !pr->enabled || !pr->library || total <= 0 || !due(pr, &t)) return 0;
  /* the library's own name of the step: "knn", "sparse_eigs", "spectral_batch: graphs";
   * an iterative solver's total is its iteration limit, rarely reached, so no percentage */
  if (!what) what = "";
  if (strstr(what, "sparse_eigs") || strstr(what, "iterations"))
    fprintf(stderr, "\r\033[K%s: %s, iteration %lld (at most %lld), %.1f s", pr->label, what,
            (long long)done, (long long)total, t - pr->start);
  else
    fprintf(stderr, "\r\033[K%s: %s %lld of %lld (%.0f%%), %.1f s", pr->label, what,
            (long long)done, (long long)total, 100.0 * (double)done / (double)total, t - pr->start);
  fflush(stderr);
  return 0;
}
