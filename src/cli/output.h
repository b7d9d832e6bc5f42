/*
 * Writers of the PCA results: the explained-variance summary (aligned text
 * table, CSV or JSON), the components, and the scores (streamed chunk by
 * chunk). Numbers in CSV/JSON are written with the fewest digits that read
 * back to the same double; NaN is "NA" in CSV and null in JSON.
 */
#ifndef GSTAT_CLI_OUTPUT_H
#define GSTAT_CLI_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "gstat/pca.h"

typedef enum out_format {
  OUT_DEFAULT = 0, /* summary: aligned text table; components/scores: CSV */
  OUT_CSV = 1,
  OUT_JSON = 2
} out_format;

/* What the summary reports besides the result itself. */
typedef struct out_summary {
  const char *input;
  const gstat_pca_result *res;
  const char *const *features; /* res->n_features names */
  int64_t rows_read, rows_dropped;
  const char *method;  /* "covariance", "gram", "randomized" */
  const char *backend; /* "cpu", "cuda", ... */
  int streamed, centered, scaled, whitened;
} out_summary;

/* Each returns 0, or -1 when writing failed (errno set by stdio). */
int out_write_summary(FILE *f, out_format fmt, const out_summary *s);
int out_write_components(FILE *f, out_format fmt, const gstat_pca_result *res,
                         const char *const *features);

/* "PC<i+1>" */
void out_component_name(char *buf, size_t cap, int64_t i);

/* Scores written as they are computed: begin, rows..., end. */
typedef struct out_scores {
  FILE *f;
  out_format fmt;
  int64_t k;
  int64_t rows; /* rows written so far */
} out_scores;

int out_scores_begin(out_scores *w, FILE *f, out_format fmt, int64_t k);
/* Write m rows: a row with missing[i] set gets NA/null scores; the others
 * take the next row of `kept` (m_kept x k, row-major) in order. */
int out_scores_rows(out_scores *w, const double *kept, int64_t m, const unsigned char *missing);
int out_scores_end(out_scores *w);

/* Shortest "%.Ng" form of v that reads back exactly ("NA"-free: caller handles NaN). */
void out_format_double(char *buf, size_t cap, double v);

/* Single values, as the writers above spell them (NaN: NA / null; strings
 * quoted when needed / JSON-escaped, given valid UTF-8). */
void out_csv_num(FILE *f, double v);
void out_json_num(FILE *f, double v);
void out_csv_str(FILE *f, const char *s);
void out_json_str(FILE *f, const char *s);

#endif /* GSTAT_CLI_OUTPUT_H */
