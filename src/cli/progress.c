/* Progress line on a terminal's stderr (see progress.h). */
#define _POSIX_C_SOURCE 200809L

#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void progress_init(progress *pr, const char *label, int64_t total_bytes) {
  pr->enabled = isatty(STDERR_FILENO);
  pr->shown = 0;
  pr->start = pr->last = pr->enabled ? now() : 0;
  pr->label = label;
  pr->total = total_bytes;
}

void progress_update(void *user, int64_t bytes) {
  progress *pr = user;
  if (!pr || !pr->enabled) return;
  double t = now();
  if (t - pr->start < 1.0 || t - pr->last < 0.25) return; /* quiet for short inputs */
  pr->last = t;
  pr->shown = 1;
  double mb = (double)bytes / 1048576.0, rate = mb / (t - pr->start);
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
  if (pr) pr->shown = 0;
}
