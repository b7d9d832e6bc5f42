/*
 * A one-line progress report on stderr while reading a long input. Shown only
 * when stderr is a terminal, and only once the input has taken more than a
 * second, so short runs and redirected stderr never see it.
 */
#ifndef GSTAT_CLI_PROGRESS_H
#define GSTAT_CLI_PROGRESS_H

#include <stdint.h>

typedef struct progress {
  int enabled, shown;
  double start, last; /* seconds (monotonic clock) */
  const char *label;  /* e.g. "reading data.csv" */
  int64_t total;      /* input size in bytes, 0 if unknown (a pipe) */
} progress;

void progress_init(progress *pr, const char *label, int64_t total_bytes);
/* Callback for csv_config.progress: user is the progress. */
void progress_update(void *user, int64_t bytes);
/* Erase the line if it was shown. */
void progress_done(progress *pr);

#endif /* GSTAT_CLI_PROGRESS_H */
