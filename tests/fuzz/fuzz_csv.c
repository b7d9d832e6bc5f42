/*
 * The CLI's CSV/TSV reader (src/cli/csv_reader.c) on arbitrary bytes. Two
 * leading bytes choose the delimiter, header mode, missing-value policy and
 * chunk size; the rest is the file. Beyond "no crash, no leak, no UB": every
 * value is finite or NaN (missing), a row's missing flag says whether it
 * holds a NaN, the counters agree with the rows returned, and every error
 * message starts with "file:line".
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>

#include "cli/csv_reader.h"
#include "fuzz_input.h"

static const char name[] = "fuzz.csv";

static void check_error(const char *msg) {
  size_t k = strlen(name);
  FZ_CHECK(msg && strncmp(msg, name, k) == 0 && msg[k] == ':', "message '%s'", msg ? msg : "");
}

/* Reads every row in chunks of `chunk`; checks the properties above. */
static void read_all(csv_reader *r, int64_t chunk, int missing_is_error) {
  int64_t p = csv_columns(r), total = 0, with_missing = 0;
  FZ_CHECK(p >= 1, "p=%lld", (long long)p);
  for (int64_t j = 0; j < p; j++)
    FZ_CHECK(csv_column_name(r, j) != NULL, "column %lld", (long long)j);
  double *rows = malloc(sizeof(double) * (size_t)(chunk * p));
  unsigned char *missing = malloc((size_t)chunk);
  if (!rows || !missing) abort();
  for (;;) {
    int64_t got = -1;
    if (csv_read_rows(r, rows, chunk, &got, missing) != 0) {
      check_error(csv_error(r));
      /* the counters then include the rows of the failed chunk */
      FZ_CHECK(csv_rows(r) >= total, "csv_rows %lld < %lld", (long long)csv_rows(r),
               (long long)total);
      goto done;
    }
    FZ_CHECK(got >= 0 && got <= chunk, "got=%lld", (long long)got);
    if (got == 0) break;
    for (int64_t i = 0; i < got; i++) {
      int nan = 0;
      for (int64_t j = 0; j < p; j++) {
        double v = rows[i * p + j];
        FZ_CHECK(!isinf(v), "row %lld column %lld is infinite", (long long)i, (long long)j);
        nan |= isnan(v);
      }
      FZ_CHECK(nan == missing[i], "row flag %d, NaN present %d", missing[i], nan);
      FZ_CHECK(!(missing_is_error && nan), "a missing value passed under missing_is_error");
      with_missing += nan;
    }
    total += got;
  }
  FZ_CHECK(csv_rows(r) == total, "csv_rows %lld, returned %lld", (long long)csv_rows(r),
           (long long)total);
  FZ_CHECK(csv_rows_missing(r) == with_missing, "csv_rows_missing %lld, counted %lld",
           (long long)csv_rows_missing(r), (long long)with_missing);
  FZ_CHECK((with_missing > 0) == (csv_first_missing_line(r) > 0), "first missing line %lld",
           (long long)csv_first_missing_line(r));
done:
  free(rows);
  free(missing);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_input in = {data, size};
  uint8_t a = fz_u8(&in), b = fz_u8(&in);
  static const char delims[4] = {0, ',', '\t', ';'};
  csv_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.delimiter = delims[a & 3];
  cfg.header = (csv_header_mode)((int)((a >> 2) % 3) - 1);
  cfg.missing_is_error = (a >> 4) & 1;
  int64_t chunk = 1 + b % 7;
  /* fmemopen refuses an empty buffer on some C libraries: one byte then */
  static const uint8_t empty[1] = {'\n'};
  FILE *f = in.left ? fmemopen((void *)in.p, in.left, "rb") : fmemopen((void *)empty, 1, "rb");
  if (!f) return 0;
  char err[512] = "";
  csv_reader *r = NULL;
  if (csv_open(&r, f, name, &cfg, err, sizeof err) != 0) {
    FZ_CHECK(r == NULL, "csv_open failed but returned a reader");
    check_error(err);
  } else {
    read_all(r, chunk, cfg.missing_is_error);
    csv_close(r);
  }
  fclose(f);
  return 0;
}
