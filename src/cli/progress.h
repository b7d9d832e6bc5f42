/*
 * A one-line progress report on stderr while reading a long input, and while
 * the library works (kNN searches, eigensolver iterations, batches: the
 * context's progress callback). Shown only when stderr is a terminal, and
 * only once the step has taken more than a second (GSTAT_CLI_PROGRESS_AFTER
 * seconds, for tests), so short runs and redirected stderr never see it.
 */
#ifndef GSTAT_CLI_PROGRESS_H
#define GSTAT_CLI_PROGRESS_H

#include <stdint.h>

typedef struct progress {
  int enabled, shown;
  double start, last; /* seconds (monotonic clock) */
  const char *label;  /* e.g. "reading data.csv" */
  int64_t total;      /* input size in bytes, 0 if unknown (a pipe) */
  int library;        /* progress_stage: report the library's callback */
  double after;       /* seconds before the line shows */
} progress;

void progress_init(progress *pr, const char *label, int64_t total_bytes);
/* Callback for csv_config.progress: user is the progress. */
void progress_update(void *user, int64_t bytes);
/* Erase the line if it was shown. */
void progress_done(progress *pr);

/* Start a computing step: from now the library's reports show under label
 * (e.g. "gstat spectral: data.csv"), until progress_done. */
void progress_stage(progress *pr, const char *label);
/* gstat_ctx_options.progress: user is the progress; never cancels. */
int progress_library(int64_t done, int64_t total, const char *what, void *user);

#endif /* GSTAT_CLI_PROGRESS_H */
