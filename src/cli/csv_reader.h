/*
 * Streaming reader of numeric CSV/TSV: reads data rows in chunks of caller-
 * chosen size, so a file larger than memory can be passed through once or
 * twice. Every error carries "file:line:column: reason" (line and column
 * 1-based, column counted in characters of the physical line).
 *
 * Accepted input: UTF-8 text (a leading BOM is skipped), LF or CRLF line
 * ends, one record per line, fields separated by one delimiter character,
 * optional RFC 4180 quotes (a quoted field may hold the delimiter, "" for a
 * quote, and line breaks). Blank lines (empty or spaces only) are skipped.
 * Numbers are decimal (C locale: '.' is the decimal point, optional
 * exponent). Missing values: an empty field, NA, N/A or NaN (any case).
 */
#ifndef GSTAT_CLI_CSV_READER_H
#define GSTAT_CLI_CSV_READER_H

#include <stdint.h>
#include <stdio.h>

typedef enum csv_header_mode {
  CSV_HEADER_AUTO = -1, /* a first row without any number (and some text) is a header */
  CSV_HEADER_NO = 0,
  CSV_HEADER_YES = 1
} csv_header_mode;

typedef struct csv_config {
  char delimiter; /* 0: detect from the first line (tab, else comma, else semicolon) */
  csv_header_mode header;
  int missing_is_error; /* nonzero: a missing value is an error at its location */
  /* Called after each block read with the bytes consumed so far (may be NULL). */
  void (*progress)(void *user, int64_t bytes);
  void *progress_user;
  FILE *tee; /* non-NULL: every byte read is copied there (spooling stdin) */
  /* A column that is not data (e.g. --color-by species): its header name,
   * or its 1-based number. It is left out of the rows and the column names,
   * and label(user, row, text, n) gets its text for every data row (row
   * counted from 0 over all data rows). NULL: every column is data. */
  const char *label_column;
  void (*label)(void *user, int64_t row, const char *text, size_t n);
  void *label_user;
} csv_config;

typedef struct csv_reader csv_reader;

/* Start reading `in` (which the reader does not close); `name` is used in
 * messages. Reads the first record to learn the delimiter, the header and
 * the number of columns. Returns 0, or -1 with a message in err (and *out
 * NULL). */
int csv_open(csv_reader **out, FILE *in, const char *name, const csv_config *cfg, char *err,
             size_t errlen);

void csv_close(csv_reader *r);

/* Data columns (the label column is not one). */
int64_t csv_columns(const csv_reader *r);
/* Header name of column j, or "x<j+1>" without a header (or for an empty name). */
const char *csv_column_name(const csv_reader *r, int64_t j);
const char *const *csv_column_names(const csv_reader *r);
/* Name of cfg.label_column (as csv_column_name names columns), NULL if none. */
const char *csv_label_name(const csv_reader *r);
int csv_has_header(const csv_reader *r);
char csv_delimiter(const csv_reader *r);

/*
 * Read up to max_rows data rows into rows (row-major, csv_columns values per
 * row, NaN for a missing value). missing (optional) gets 1 for a row holding
 * a missing value, else 0. *got is 0 at the end of the input. Returns 0, or
 * -1 with the message in csv_error() (errors are sticky). An input with no
 * data row at all (only a header) is an error.
 */
int csv_read_rows(csv_reader *r, double *rows, int64_t max_rows, int64_t *got,
                  unsigned char *missing);

const char *csv_error(const csv_reader *r);

int64_t csv_rows(const csv_reader *r);               /* data rows returned so far */
int64_t csv_rows_missing(const csv_reader *r);       /* of them, rows with a missing value */
int64_t csv_first_missing_line(const csv_reader *r); /* line of the first such row, 0 if none */
int64_t csv_bytes(const csv_reader *r);              /* bytes consumed from the input */
/* 1-based index of the first column whose header name is empty (0 if none):
 * often a row index written by pandas or R rather than a variable. */
int64_t csv_first_unnamed_column(const csv_reader *r);

#endif /* GSTAT_CLI_CSV_READER_H */
