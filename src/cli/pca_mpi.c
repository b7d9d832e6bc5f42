/*
 * `mpirun -np N gstat pca --distributed FILE`: every rank reads its own byte
 * range of FILE (cut at line starts; the header only in rank 0's part),
 * accumulates its rows, the accumulators merge (gstat_mpi_cov_accum_reduce),
 * and rank 0 fits (covariance-eigh from the merged accumulator) and writes
 * the same summary and components as a single `gstat pca FILE`.
 * Limits: a regular file (no stdin), no line breaks inside quoted fields, no
 * --scores/--plot, method auto or covariance.
 */
#define _GNU_SOURCE /* fopencookie: a FILE that ends at the range's end */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mpi.h>

#include "commands.h"
#include "csv_reader.h"
#include "gstat/mpi.h"
#include "output.h"
#include "pca_args.h"
#include "pca_mpi.h"

#define CHUNK_ROWS 4096

typedef struct range_file {
  FILE *f;
  int64_t left; /* bytes of the range not yet read */
} range_file;

static ssize_t range_read(void *cookie, char *buf, size_t size) {
  range_file *r = cookie;
  size_t n = (int64_t)size < r->left ? size : (size_t)r->left;
  n = fread(buf, 1, n, r->f);
  r->left -= (int64_t)n;
  return (ssize_t)n;
}

static int range_close(void *cookie) {
  (void)cookie;
  return 0;
}

/* First line start at or after pos, within [lo, size]. */
static int64_t line_start(FILE *f, int64_t pos, int64_t lo, int64_t size) {
  if (pos <= lo) return lo;
  if (pos >= size) return size;
  if (fseeko(f, (off_t)(pos - 1), SEEK_SET)) return size;
  int c;
  while ((c = getc(f)) != EOF && c != '\n') pos++;
  return c == EOF ? size : pos;
}

static int only_blank(FILE *f, int64_t from, int64_t to) {
  if (fseeko(f, (off_t)from, SEEK_SET)) return 1;
  for (int64_t i = from; i < to; i++) {
    int c = getc(f);
    if (c == EOF) return 1;
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return 0;
  }
  return 1;
}

/* This rank's rows of [start, end) into acc; 0 or an exit status (message printed). */
static int read_range(const char *path, int64_t start, int64_t end, char delim, int64_t p,
                      int missing_error, gstat_ctx *ctx, gstat_cov_accum *acc, int64_t *rows,
                      int64_t *dropped) {
  char name[1200], err[1400];
  int rc = CLI_EXIT_FAILURE;
  FILE *f = fopen(path, "rb"), *in = NULL;
  csv_reader *rd = NULL;
  double *chunk = malloc(sizeof(double) * (size_t)(CHUNK_ROWS * p));
  unsigned char *miss = malloc(CHUNK_ROWS);
  *rows = *dropped = 0;
  if (!f || !chunk || !miss) {
    fprintf(stderr, "gstat pca: %s: %s\n", path, f ? "out of memory" : strerror(errno));
    goto done;
  }
  if (start >= end || only_blank(f, start, end)) {
    rc = 0; /* a rank without rows adds nothing */
    goto done;
  }
  range_file rf = {f, end - start};
  cookie_io_functions_t io = {range_read, NULL, NULL, range_close};
  if (fseeko(f, (off_t)start, SEEK_SET) || !(in = fopencookie(&rf, "r", io))) {
    fprintf(stderr, "gstat pca: %s: cannot read bytes %lld-%lld\n", path, (long long)start,
            (long long)end);
    goto done;
  }
  /* line numbers in messages count from the start of this range */
  snprintf(name, sizeof name, "%s[bytes %lld-%lld]", path, (long long)start, (long long)end);
  csv_config cfg = {delim, CSV_HEADER_NO, missing_error, NULL, NULL, NULL, NULL, NULL, NULL};
  if (csv_open(&rd, in, name, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    goto done;
  }
  if (csv_columns(rd) != p) {
    fprintf(stderr, "gstat pca: %s: %lld columns where the header has %lld\n", name,
            (long long)csv_columns(rd), (long long)p);
    goto done;
  }
  for (;;) {
    int64_t got = 0, kept = 0;
    if (csv_read_rows(rd, chunk, CHUNK_ROWS, &got, miss)) {
      fprintf(stderr, "%s\n", csv_error(rd));
      goto done;
    }
    if (got == 0) break;
    for (int64_t i = 0; i < got; i++) { /* the accumulator skips rows with NaN (COMPLETE) */
      kept += !miss[i];
    }
    gstat_matrix X = gstat_matrix_row_major(chunk, GSTAT_F64, 1, got, p);
    gstat_status st = gstat_cov_accum_add(ctx, acc, &X, NULL);
    if (st != GSTAT_OK) {
      fprintf(stderr, "gstat pca: %s: %s\n", name, gstat_ctx_last_error(ctx));
      goto done;
    }
    (void)kept;
  }
  *rows = csv_rows(rd);
  *dropped = csv_rows_missing(rd);
  rc = 0;
done:
  csv_close(rd);
  if (in) fclose(in);
  if (f) fclose(f);
  free(chunk);
  free(miss);
  return rc;
}

/* Rank 0: fit and write, as the single-process command does. */
static int fit_and_write(const pca_args *a, gstat_ctx *ctx, gstat_cov_accum *acc, csv_reader *hd,
                         int64_t rows, int64_t dropped) {
  int64_t p = csv_columns(hd), n_fit = rows - dropped, kmax = n_fit < p ? n_fit : p;
  if (n_fit == 0) {
    fprintf(stderr, "gstat pca: %s: no row without missing values\n", a->input);
    return CLI_EXIT_FAILURE;
  }
  if (a->k > kmax) {
    fprintf(stderr, "gstat pca: %s: -k %lld is more than min(rows, columns) = %lld\n", a->input,
            (long long)a->k, (long long)kmax);
    return CLI_EXIT_FAILURE;
  }
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.n_components = a->k;
  o.variance_fraction = a->variance;
  o.center = a->center;
  o.scale = a->scale;
  o.whiten = a->whiten;
  o.method = GSTAT_PCA_COVARIANCE_EIGH;
  o.compute_scores = 0;
  gstat_pca_result *res = NULL;
  int rc = CLI_EXIT_FAILURE;
  if (gstat_pca_from_accum(ctx, acc, &o, &res) != GSTAT_OK) {
    fprintf(stderr, "gstat pca: %s: %s\n", a->input, gstat_ctx_last_error(ctx));
    goto done;
  }
  const char *const *names = csv_column_names(hd);
  if (a->components) {
    FILE *f = strcmp(a->components, "-") ? fopen(a->components, "w") : stdout;
    int bad = !f || out_write_components(f, a->format == OUT_JSON ? OUT_JSON : OUT_CSV, res, names);
    if (f && f != stdout) bad |= fclose(f) != 0;
    if (bad) {
      fprintf(stderr, "gstat pca: cannot write the components to %s\n", a->components);
      goto done;
    }
  }
  const char *sum =
      a->output ? a->output : (a->components && !strcmp(a->components, "-") ? NULL : "-");
  if (sum) {
    out_summary s = {a->input,
                     res,
                     names,
                     rows,
                     dropped,
                     "covariance",
                     gstat_ctx_last_backend_name(ctx),
                     1,
                     a->center,
                     a->scale,
                     a->whiten};
    FILE *f = strcmp(sum, "-") ? fopen(sum, "w") : stdout;
    int bad = !f || out_write_summary(f, a->format, &s);
    bad |= f == stdout ? fflush(f) != 0 : (f && fclose(f) != 0);
    if (bad) {
      fprintf(stderr, "gstat pca: cannot write the summary to %s\n", sum);
      goto done;
    }
  }
  rc = 0;
done:
  gstat_pca_result_free(res);
  return rc;
}

/* Rank 0 reads the header: {ok, delimiter, p, first data byte, file size}. */
static void read_header(const pca_args *a, csv_reader **hd, FILE **hf, int64_t info[5]) {
  char err[1400];
  struct stat st;
  csv_config cfg = {a->delimiter, a->header, a->missing_error, NULL, NULL, NULL, NULL, NULL, NULL};
  if (stat(a->input, &st) || !S_ISREG(st.st_mode) || !(*hf = fopen(a->input, "rb"))) {
    fprintf(stderr, "gstat pca: --distributed needs a regular file: cannot open %s\n", a->input);
    return;
  }
  if (csv_open(hd, *hf, a->input, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return;
  }
  info[1] = csv_delimiter(*hd);
  info[2] = csv_columns(*hd);
  info[4] = (int64_t)st.st_size;
  info[3] = csv_has_header(*hd) ? line_start(*hf, 1, 0, info[4]) : 0;
  info[0] = 1;
}

int pca_mpi_main(int argc, char **argv) {
  int rank = 0, size = 1, rc = 0, any = 0;
  pca_args a;
  gstat_ctx *ctx = NULL;
  gstat_mpi *m = NULL;
  gstat_cov_accum *acc = NULL;
  csv_reader *hd = NULL;
  FILE *hf = NULL;
  int64_t info[5] = {0, 0, 0, 0, 0}, rows = 0, dropped = 0;
  /* drop --distributed; the rest is the ordinary pca command line */
  char **args = malloc(sizeof(char *) * (size_t)(argc + 1));
  if (!args) return CLI_EXIT_FAILURE;
  int n = 0;
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "--distributed")) args[n++] = argv[i];
  args[n] = NULL;
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* every rank parses the same line, so all reach the same verdict */
  rc = pca_parse_args(n, args, &a);
  if (rc || a.help) {
    if (a.help && rank == 0) pca_help(stdout);
    goto done;
  }
  if (a.scores || a.plot || !strcmp(a.input, "-") ||
      (a.method != GSTAT_PCA_AUTO && a.method != GSTAT_PCA_COVARIANCE_EIGH)) {
    if (rank == 0)
      fprintf(stderr,
              "gstat pca: --distributed reads a file (not stdin), fits by the covariance method "
              "and writes the summary and components (no --scores or --plot)\n");
    rc = CLI_EXIT_USAGE;
    goto done;
  }
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.backend = a.backend;
  co.num_threads = a.threads;
  if (rank == 0) read_header(&a, &hd, &hf, info);
  MPI_Bcast(info, 5, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (!info[0]) {
    rc = CLI_EXIT_FAILURE;
    goto done;
  }
  int local = 0;
  if (gstat_ctx_create(&ctx, &co) != GSTAT_OK || gstat_mpi_create(MPI_COMM_WORLD, &m) != GSTAT_OK ||
      gstat_cov_accum_create(ctx, info[2], GSTAT_MISSING_COMPLETE, &acc) != GSTAT_OK) {
    fprintf(stderr, "gstat pca: rank %d: cannot set up the context\n", rank);
    local = CLI_EXIT_FAILURE;
  } else {
    /* byte range of the data part, cut at line starts (neighbours agree on each cut) */
    int64_t lo = info[3], len = info[4] - lo;
    FILE *f = fopen(a.input, "rb");
    int64_t s = f ? line_start(f, lo + (int64_t)((double)len * rank / size), lo, info[4]) : 0;
    int64_t e = f ? line_start(f, lo + (int64_t)((double)len * (rank + 1) / size), lo, info[4]) : 0;
    if (rank == size - 1) e = info[4];
    if (f) fclose(f);
    local = f ? read_range(a.input, s, e, (char)info[1], info[2], a.missing_error, ctx, acc, &rows,
                           &dropped)
              : CLI_EXIT_FAILURE;
  }
  MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any) {
    rc = any;
    goto done;
  }
  if (gstat_mpi_cov_accum_reduce(m, ctx, acc, 0) != GSTAT_OK) {
    if (rank == 0) fprintf(stderr, "gstat pca: %s: %s\n", a.input, gstat_mpi_last_error(m));
    rc = CLI_EXIT_FAILURE;
    goto done;
  }
  int64_t counts[2] = {rows, dropped}, total[2] = {0, 0};
  MPI_Reduce(counts, total, 2, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total[1] > 0)
      fprintf(stderr,
              "gstat pca: %s: %lld of %lld data rows hold missing values and are left out of the "
              "fit\n",
              a.input, (long long)total[1], (long long)total[0]);
    rc = fit_and_write(&a, ctx, acc, hd, total[0], total[1]);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD); /* one exit status for the whole job */
done:
  csv_close(hd);
  if (hf) fclose(hf);
  gstat_cov_accum_destroy(acc);
  gstat_mpi_destroy(m);
  gstat_ctx_destroy(ctx);
  free(args);
  MPI_Finalize();
  return rc;
}
