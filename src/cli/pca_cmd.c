/*
 * `gstat pca`: read the table (in memory, or streamed through a covariance
 * accumulator), fit, and write the summary, components, scores and plot.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "commands.h"
#include "out_files.h"
#include "csv_reader.h"
#include "gstat/core.h"
#include "gstat/covariance.h"
#include "gstat/pca.h"
#include "output.h"
#include "pca_args.h"
#include "progress.h"
#include "svg_plot.h"

#define PLOT_POINTS 5000
/* --color-by: distinct labels kept apart; more (an id column, say) are grey */
#define MAX_LABELS 1000
#define CHUNK_BYTES ((int64_t)4 << 20)

typedef struct job {
  const pca_args *a;
  gstat_ctx *ctx;
  const char *name; /* the input as messages show it */
  FILE *in;
  int is_stdin;
  struct stat st; /* of the input file (not stdin) */
  FILE *spool;    /* copy of stdin for a second pass */
  csv_reader *rd;
  int64_t p;
  int64_t chunk_rows;
  /* in memory: all rows, and which hold a missing value */
  double *data;
  unsigned char *miss;
  int64_t n_rows, cap_rows;
  /* streamed */
  gstat_cov_accum *acc;
  int streamed;
  double *chunk;
  unsigned char *chunk_miss;
  double *chunk_scores;
  /* the fit */
  int64_t rows_read, rows_dropped, first_missing_line, n_fit;
  gstat_pca_result *res;
  char backend[32];
  /* sampled score points for the plot */
  double *pc1, *pc2;
  int64_t n_pts, pts_cap, stride, kept_seen;
  int32_t *pt_group; /* --color-by: the label of each sampled point */
  /* --color-by: each data row's label (index into label_names, -1 none), the
   * fitted rows' labels, the distinct labels in order of appearance */
  int32_t *row_label, *fit_label;
  int64_t n_row_labels, row_label_cap, n_fit_labels;
  char **label_names;
  int64_t n_labels;
  int label_oom, label_overflow;
  /* per-column range of the fitted rows: names a constant column for --scale */
  double *col_min, *col_max;
  cli_outputs out; /* output files created, removed again on failure */
  progress pr;
  char label[96];
} job;

/* failures name this subcommand */
#define fail(...) cli_fail("pca", __VA_ARGS__)

/* The library's message names the function; `what` is only needed without one. */
static int lib_fail(job *j, const char *what, gstat_status st) {
  const char *msg = j->ctx ? gstat_ctx_last_error(j->ctx) : "";
  if (msg && *msg) return fail("%s: %s", j->name, msg);
  return fail("%s: %s: %s", j->name, what, gstat_status_string(st));
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *method_name(gstat_pca_method m) {
  switch (m) {
    case GSTAT_PCA_COVARIANCE_EIGH: return "covariance";
    case GSTAT_PCA_GRAM_EIGH: return "gram";
    case GSTAT_PCA_RANDOMIZED: return "randomized";
    default: return "auto";
  }
}

/* ---- output files ---------------------------------------------------------------------- */

/* ---- --color-by labels ------------------------------------------------------------------ */

/* The label's index among those seen so far (a new one is added); -1 for an
 * empty or missing label and beyond MAX_LABELS distinct ones. */
static int32_t intern_label(job *j, const char *text, size_t n) {
  if (n == 0 ||
      (n == 2 && (text[0] == 'N' || text[0] == 'n') && (text[1] == 'A' || text[1] == 'a')))
    return -1;
  for (int64_t i = 0; i < j->n_labels; i++)
    if (strlen(j->label_names[i]) == n && memcmp(j->label_names[i], text, n) == 0)
      return (int32_t)i;
  if (j->n_labels == MAX_LABELS) {
    j->label_overflow = 1;
    return -1;
  }
  if (!j->label_names && !(j->label_names = calloc(MAX_LABELS, sizeof(char *)))) goto oom;
  char *s = malloc(n + 1);
  if (!s) goto oom;
  memcpy(s, text, n);
  s[n] = '\0';
  j->label_names[j->n_labels] = s;
  return (int32_t)j->n_labels++;
oom:
  j->label_oom = 1;
  return -1;
}

/* csv_config.label: row's label text. The second pass (scores of streamed
 * data) reads the rows again; their labels are known by then. */
static void on_label(void *user, int64_t row, const char *text, size_t n) {
  job *j = user;
  if (row < j->n_row_labels || j->label_oom) return;
  if (j->n_row_labels == j->row_label_cap) {
    int64_t cap = j->row_label_cap ? 2 * j->row_label_cap : 4096;
    int32_t *p = realloc(j->row_label, sizeof(int32_t) * (size_t)cap);
    if (!p) {
      j->label_oom = 1;
      return;
    }
    j->row_label = p;
    j->row_label_cap = cap;
  }
  j->row_label[j->n_row_labels++] = intern_label(j, text, n);
}

/* The labels of the rows just read (from data row `first`) that are fitted. */
static int keep_fit_labels(job *j, int64_t first, int64_t got, const unsigned char *miss) {
  if (!j->a->color_by || got == 0) return 0;
  if (j->label_oom) return fail("out of memory (--color-by labels)");
  int32_t *p = realloc(j->fit_label, sizeof(int32_t) * (size_t)(j->n_fit_labels + got));
  if (!p) return fail("out of memory (--color-by labels)");
  j->fit_label = p;
  for (int64_t i = 0; i < got; i++)
    if (!miss[i]) j->fit_label[j->n_fit_labels++] = j->row_label[first + i];
  return 0;
}

/* ---- pass 1: read the rows ------------------------------------------------------------ */

static int start_streaming(job *j) {
  gstat_status st = gstat_cov_accum_create(j->ctx, j->p, GSTAT_MISSING_COMPLETE, &j->acc);
  if (st != GSTAT_OK) return lib_fail(j, "covariance accumulator", st);
  j->chunk = malloc(sizeof(double) * (size_t)(j->chunk_rows * j->p));
  j->chunk_miss = malloc((size_t)j->chunk_rows);
  if (!j->chunk || !j->chunk_miss)
    return fail("out of memory (chunk of %lld rows)", (long long)j->chunk_rows);
  j->streamed = 1;
  return 0;
}

static int add_rows(job *j, double *rows, int64_t m) {
  if (m == 0) return 0;
  gstat_matrix X = gstat_matrix_row_major(rows, GSTAT_F64, 1, m, j->p);
  gstat_status st = gstat_cov_accum_add(j->ctx, j->acc, &X, NULL);
  return st == GSTAT_OK ? 0 : lib_fail(j, "accumulating the covariance", st);
}

/* Make room for up to chunk_rows more rows in memory; *room gets how many.
 * Returns 0, -1 when the auto method must switch to streaming (the data would
 * pass --max-memory), else an exit status. */
static int grow_data(job *j, int64_t *room) {
  int64_t row_bytes = 8 * j->p + 1;
  int limited = j->a->method == GSTAT_PCA_AUTO;
  int64_t limit = limited ? j->a->max_memory / row_bytes : INT64_MAX / row_bytes;
  int64_t want = j->chunk_rows < limit - j->n_rows ? j->chunk_rows : limit - j->n_rows;
  if (want <= 0) return -1;
  int64_t need = j->n_rows + want;
  *room = want;
  if (need <= j->cap_rows) return 0;
  int64_t cap = j->cap_rows < limit / 2 ? j->cap_rows * 2 : limit;
  if (cap < need) cap = need;
  if ((uint64_t)cap > SIZE_MAX / (uint64_t)row_bytes) goto nomem;
  double *d = realloc(j->data, sizeof(double) * (size_t)(cap * j->p));
  if (!d) goto nomem;
  j->data = d;
  unsigned char *m = realloc(j->miss, (size_t)cap);
  if (!m) goto nomem;
  j->miss = m;
  j->cap_rows = cap;
  return 0;
nomem:
  return fail(
      "%s: out of memory holding %lld rows x %lld columns; --method covariance streams "
      "the input instead",
      j->name, (long long)need, (long long)j->p);
}

static void track_range(job *j, const double *rows, const unsigned char *miss, int64_t m) {
  for (int64_t i = 0; i < m; i++) {
    if (miss[i]) continue;
    for (int64_t c = 0; c < j->p; c++) {
      double v = rows[i * j->p + c];
      if (v < j->col_min[c]) j->col_min[c] = v;
      if (v > j->col_max[c]) j->col_max[c] = v;
    }
  }
}

static int read_input(job *j) {
  const pca_args *a = j->a;
  char err[1200];
  csv_config cfg = {.delimiter = a->delimiter,
                    .header = a->header,
                    .missing_is_error = a->missing_error,
                    .progress = progress_update,
                    .progress_user = &j->pr,
                    .tee = j->spool,
                    .label_column = a->color_by,
                    .label = on_label,
                    .label_user = j};
  snprintf(j->label, sizeof j->label, "gstat pca: reading %s", j->name);
  progress_init(&j->pr, j->label, S_ISREG(j->st.st_mode) ? (int64_t)j->st.st_size : 0);
  if (csv_open(&j->rd, j->in, j->name, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return CLI_EXIT_FAILURE;
  }
  j->p = csv_columns(j->rd);
  if (csv_first_unnamed_column(j->rd)) {
    fprintf(stderr,
            "gstat pca: %s: warning: column %lld has no name in the header; if it is a row index "
            "(as pandas and R write), it is being used as data\n",
            j->name, (long long)csv_first_unnamed_column(j->rd));
  }
  j->chunk_rows = a->chunk_rows;
  if (!j->chunk_rows) j->chunk_rows = CHUNK_BYTES / (8 * j->p) > 0 ? CHUNK_BYTES / (8 * j->p) : 1;
  j->col_min = malloc(sizeof(double) * (size_t)j->p);
  j->col_max = malloc(sizeof(double) * (size_t)j->p);
  if (!j->col_min || !j->col_max) return fail("out of memory");
  for (int64_t c = 0; c < j->p; c++) j->col_min[c] = INFINITY, j->col_max[c] = -INFINITY;
  if (a->method == GSTAT_PCA_COVARIANCE_EIGH && start_streaming(j)) return CLI_EXIT_FAILURE;
  for (;;) {
    int64_t got = 0, room = 0;
    if (!j->streamed) {
      int rc = grow_data(j, &room);
      if (rc > 0) return rc;
      if (rc < 0) { /* auto: too large to hold, stream from here on */
        if (start_streaming(j)) return CLI_EXIT_FAILURE;
        if (add_rows(j, j->data, j->n_rows)) return CLI_EXIT_FAILURE;
        free(j->data);
        free(j->miss);
        j->data = NULL;
        j->miss = NULL;
        if (a->verbose) {
          fprintf(stderr, "gstat pca: %s: more than --max-memory, streaming (covariance method)\n",
                  j->name);
        }
        continue;
      }
      if (csv_read_rows(j->rd, j->data + j->n_rows * j->p, room, &got, j->miss + j->n_rows)) {
        break;
      }
      if (keep_fit_labels(j, j->n_rows, got, j->miss + j->n_rows)) return CLI_EXIT_FAILURE;
      track_range(j, j->data + j->n_rows * j->p, j->miss + j->n_rows, got);
      j->n_rows += got;
    } else {
      int64_t first = csv_rows(j->rd);
      if (csv_read_rows(j->rd, j->chunk, j->chunk_rows, &got, j->chunk_miss)) break;
      if (keep_fit_labels(j, first, got, j->chunk_miss)) return CLI_EXIT_FAILURE;
      track_range(j, j->chunk, j->chunk_miss, got);
      if (add_rows(j, j->chunk, got)) return CLI_EXIT_FAILURE;
    }
    if (got == 0) break;
  }
  progress_done(&j->pr);
  if (csv_error(j->rd)[0]) {
    fprintf(stderr, "%s\n", csv_error(j->rd));
    return CLI_EXIT_FAILURE;
  }
  j->rows_read = csv_rows(j->rd);
  j->rows_dropped = csv_rows_missing(j->rd);
  j->first_missing_line = csv_first_missing_line(j->rd);
  j->n_fit = j->rows_read - j->rows_dropped;
  return 0;
}

/* ---- the fit ---------------------------------------------------------------------------- */

/* Move the rows without a missing value to the front of data. */
static void compact(double *rows, const unsigned char *miss, int64_t m, int64_t p) {
  int64_t o = 0;
  for (int64_t i = 0; i < m; i++) {
    if (miss[i]) continue;
    if (o != i) memmove(rows + o * p, rows + i * p, sizeof(double) * (size_t)p);
    o++;
  }
}

static int fit(job *j, int want_scores) {
  const pca_args *a = j->a;
  if (j->n_fit == 0) {
    return fail(
        "%s: no row without missing values (all %lld data rows have one, the first on "
        "line %lld)",
        j->name, (long long)j->rows_read, (long long)j->first_missing_line);
  }
  for (int64_t c = 0; a->scale && c < j->p; c++) {
    if (j->col_min[c] == j->col_max[c]) {
      return fail(
          "%s: column %lld (%s) is constant (every fitted row holds %g): --scale cannot "
          "divide it by its standard deviation of 0",
          j->name, (long long)c + 1, csv_column_name(j->rd, c), j->col_min[c]);
    }
  }
  int64_t kmax = j->n_fit < j->p ? j->n_fit : j->p;
  if (a->k > kmax) {
    return fail("%s: -k %lld is more than min(rows, columns) = min(%lld, %lld) = %lld", j->name,
                (long long)a->k, (long long)j->n_fit, (long long)j->p, (long long)kmax);
  }
  gstat_pca_options opt;
  gstat_pca_options_init(&opt);
  opt.n_components = a->k;
  opt.variance_fraction = a->variance;
  opt.center = a->center;
  opt.scale = a->scale;
  opt.whiten = a->whiten;
  opt.method = a->method;
  opt.seed = a->seed;
  gstat_status st;
  if (j->streamed) {
    opt.method = GSTAT_PCA_COVARIANCE_EIGH;
    opt.compute_scores = 0;
    st = gstat_pca_from_accum(j->ctx, j->acc, &opt, &j->res);
  } else {
    compact(j->data, j->miss, j->n_rows, j->p);
    opt.compute_scores = want_scores;
    gstat_matrix X = gstat_matrix_row_major(j->data, GSTAT_F64, 1, j->n_fit, j->p);
    st = gstat_pca(j->ctx, &X, &opt, &j->res);
  }
  if (st != GSTAT_OK) return lib_fail(j, "PCA", st);
  snprintf(j->backend, sizeof j->backend, "%s", gstat_ctx_last_backend_name(j->ctx));
  return 0;
}

/* ---- scores ---------------------------------------------------------------------------------- */

/* Keep every stride-th fitted row's first two scores for the plot. */
static int sample_points(job *j, const double *s, int64_t m) {
  int64_t k = j->res->n_components;
  for (int64_t i = 0; i < m; i++, j->kept_seen++) {
    if (j->kept_seen % j->stride) continue;
    if (j->n_pts == j->pts_cap) return fail("internal error: plot sample overflow");
    j->pc1[j->n_pts] = s[i * k];
    j->pc2[j->n_pts] = k > 1 ? s[i * k + 1] : 0;
    j->pt_group[j->n_pts] = j->fit_label ? j->fit_label[j->kept_seen] : -1;
    j->n_pts++;
  }
  return 0;
}

/* Second pass over the input (the file again, or the spooled stdin). */
static int second_pass(job *j, out_scores *w) {
  const pca_args *a = j->a;
  FILE *in = NULL;
  csv_reader *rd = NULL;
  char err[1200];
  int rc = CLI_EXIT_FAILURE;
  int64_t k = j->res->n_components;
  if (j->spool) {
    if (fflush(j->spool) || fseek(j->spool, 0, SEEK_SET)) {
      return fail("%s: cannot read back the temporary copy: %s", j->name, strerror(errno));
    }
    in = j->spool;
  } else if (!(in = fopen(a->input, "rb"))) {
    return fail("cannot reopen %s for the second pass: %s", a->input, strerror(errno));
  }
  csv_config cfg = {csv_delimiter(j->rd),
                    csv_has_header(j->rd) ? CSV_HEADER_YES : CSV_HEADER_NO,
                    a->missing_error,
                    progress_update,
                    &j->pr,
                    NULL,
                    a->color_by,
                    on_label,
                    j};
  snprintf(j->label, sizeof j->label, "gstat pca: scores of %s", j->name);
  progress_init(&j->pr, j->label, S_ISREG(j->st.st_mode) ? (int64_t)j->st.st_size : 0);
  if (csv_open(&rd, in, j->name, &cfg, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    goto done;
  }
  if (csv_columns(rd) != j->p) goto changed;
  j->chunk_scores = malloc(sizeof(double) * (size_t)(j->chunk_rows * (k > 0 ? k : 1)));
  if (!j->chunk_scores) {
    fail("out of memory");
    goto done;
  }
  for (;;) {
    int64_t got = 0, kept = 0;
    if (csv_read_rows(rd, j->chunk, j->chunk_rows, &got, j->chunk_miss)) {
      fprintf(stderr, "%s\n", csv_error(rd));
      goto done;
    }
    if (got == 0) break;
    compact(j->chunk, j->chunk_miss, got, j->p);
    for (int64_t i = 0; i < got; i++) kept += !j->chunk_miss[i];
    if (kept > 0) {
      gstat_matrix X = gstat_matrix_row_major(j->chunk, GSTAT_F64, 1, kept, j->p);
      gstat_matrix S = gstat_matrix_row_major(j->chunk_scores, GSTAT_F64, 1, kept, k);
      gstat_status st = gstat_pca_transform(j->ctx, j->res, &X, &S);
      if (st != GSTAT_OK) {
        lib_fail(j, "scores", st);
        goto done;
      }
      if (j->pc1 && sample_points(j, j->chunk_scores, kept)) goto done;
    }
    if (w && out_scores_rows(w, j->chunk_scores, got, j->chunk_miss)) {
      rc = -1; /* the caller reports the write error */
      goto done;
    }
  }
  if (csv_rows(rd) != j->rows_read || csv_rows_missing(rd) != j->rows_dropped) goto changed;
  rc = 0;
  goto done;
changed:
  fail("%s changed while it was read (the second pass found other rows)", j->name);
done:
  progress_done(&j->pr);
  csv_close(rd);
  if (in && in != j->spool) fclose(in);
  return rc;
}

static int alloc_plot_sample(job *j) {
  j->stride = (j->n_fit + PLOT_POINTS - 1) / PLOT_POINTS;
  if (j->stride < 1) j->stride = 1;
  j->pts_cap = (j->n_fit + j->stride - 1) / j->stride;
  j->pc1 = malloc(sizeof(double) * (size_t)(j->pts_cap + 1));
  j->pc2 = malloc(sizeof(double) * (size_t)(j->pts_cap + 1));
  j->pt_group = malloc(sizeof(int32_t) * (size_t)(j->pts_cap + 1));
  return j->pc1 && j->pc2 && j->pt_group ? 0 : fail("out of memory");
}

static int write_scores_and_sample(job *j) {
  const pca_args *a = j->a;
  FILE *f = NULL;
  out_scores w;
  int rc = 0;
  if (j->res->n_components == 0) return 0;
  if (a->plot && alloc_plot_sample(j)) return CLI_EXIT_FAILURE;
  if (a->scores) {
    f = cli_open_output(&j->out, a->scores, "scores");
    if (!f) return CLI_EXIT_FAILURE;
    rc = out_scores_begin(&w, f, a->format == OUT_JSON ? OUT_JSON : OUT_CSV, j->res->n_components);
  }
  if (rc == 0) {
    if (j->streamed) {
      rc = second_pass(j, f ? &w : NULL);
      if (rc > 0) {
        if (f && f != stdout) fclose(f);
        return rc;
      }
    } else {
      if (f) rc = out_scores_rows(&w, j->res->scores, j->n_rows, j->miss);
      if (j->pc1 && rc == 0 && sample_points(j, j->res->scores, j->n_fit)) {
        if (f && f != stdout) fclose(f);
        return CLI_EXIT_FAILURE;
      }
    }
  }
  if (f) {
    if (rc == 0) rc = out_scores_end(&w);
    return cli_close_output(&j->out, f, a->scores, "scores", rc == 0);
  }
  return 0;
}

static int write_plot(job *j) {
  const pca_args *a = j->a;
  FILE *f = cli_open_output(&j->out, a->plot, "plot");
  if (!f) return CLI_EXIT_FAILURE;
  int64_t k = j->res->n_components;
  svg_pca_plot d = {j->name,
                    j->n_fit,
                    j->p,
                    k,
                    j->res->explained_variance_ratio,
                    j->n_pts,
                    j->pc1,
                    k >= 2 ? j->pc2 : NULL,
                    j->n_fit,
                    {a->color_by ? j->pt_group : NULL, j->n_labels,
                     (const char *const *)j->label_names, csv_label_name(j->rd)}};
  if (j->label_overflow) {
    fprintf(stderr,
            "gstat pca: --color-by %s: more than %d distinct labels; the points of the others "
            "are grey\n",
            a->color_by, MAX_LABELS);
  }
  if (k < 2) {
    fprintf(stderr,
            "gstat pca: --plot: only %lld component, so the plot shows a histogram of the "
            "PC1 scores instead of a PC1/PC2 scatter\n",
            (long long)k);
  }
  return cli_close_output(&j->out, f, a->plot, "plot", svg_write_pca_plot(f, &d) == 0);
}

static int write_results(job *j) {
  const pca_args *a = j->a;
  const char *const *names = csv_column_names(j->rd);
  int rc;
  if (a->components) {
    FILE *f = cli_open_output(&j->out, a->components, "components");
    if (!f) return CLI_EXIT_FAILURE;
    rc = out_write_components(f, a->format == OUT_JSON ? OUT_JSON : OUT_CSV, j->res, names);
    if (cli_close_output(&j->out, f, a->components, "components", rc == 0)) return CLI_EXIT_FAILURE;
  }
  if ((a->scores || a->plot) && (rc = write_scores_and_sample(j))) return rc;
  if (a->plot && write_plot(j)) return CLI_EXIT_FAILURE;
  /* the summary goes to stdout unless another output took it */
  const char *sum = a->output;
  if (!sum && !(a->components && !strcmp(a->components, "-")) &&
      !(a->scores && !strcmp(a->scores, "-")) && !(a->plot && !strcmp(a->plot, "-"))) {
    sum = "-";
  }
  if (sum) {
    out_summary s = {j->name,      j->res,          names,
                     j->rows_read, j->rows_dropped, method_name(j->res->method),
                     j->backend,   j->streamed,     a->center,
                     a->scale,     a->whiten};
    FILE *f = cli_open_output(&j->out, sum, "summary");
    if (!f) return CLI_EXIT_FAILURE;
    rc = out_write_summary(f, a->format, &s);
    if (cli_close_output(&j->out, f, sum, "summary", rc == 0)) return CLI_EXIT_FAILURE;
  }
  return 0;
}

/* ---- driver ------------------------------------------------------------------------------ */

/* An anonymous temporary file in $TMPDIR (tmpfile() ignores TMPDIR, and a
 * spool of a large input must be placeable on a big enough disk). */
static FILE *spool_create(void) {
  const char *dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  size_t n = strlen(dir) + sizeof "/gstat-spool-XXXXXX";
  char *path = malloc(n);
  FILE *f = NULL;
  if (!path) return NULL;
  snprintf(path, n, "%s/gstat-spool-XXXXXX", dir);
  int fd = mkstemp(path);
  if (fd >= 0) {
    unlink(path); /* gone from the directory; the space is freed at exit */
    f = fdopen(fd, "w+b");
    if (!f) close(fd);
  }
  free(path);
  return f;
}

static int open_input(job *j) {
  const pca_args *a = j->a;
  j->is_stdin = strcmp(a->input, "-") == 0;
  j->name = j->is_stdin ? "<stdin>" : a->input;
  if (j->is_stdin) {
    j->in = stdin;
  } else {
    if (stat(a->input, &j->st) != 0) return fail("cannot open %s: %s", a->input, strerror(errno));
    if (S_ISDIR(j->st.st_mode)) return fail("%s is a directory, not a CSV/TSV file", a->input);
    if (!(j->in = fopen(a->input, "rb"))) {
      return fail("cannot open %s: %s", a->input, strerror(errno));
    }
    const char *outs[4] = {a->output, a->components, a->scores, a->plot};
    for (int i = 0; i < 4; i++) {
      if (outs[i] && strcmp(outs[i], "-") && cli_same_file(j->is_stdin ? NULL : &j->st, outs[i])) {
        fprintf(stderr, "gstat pca: %s would overwrite the input file\n", outs[i]);
        return CLI_EXIT_USAGE;
      }
    }
  }
  /* stdin, a pipe or a FIFO (e.g. <(zcat data.csv.gz)) cannot be read twice:
   * keep a copy when the streamed method may need a second pass */
  int second = (a->scores || a->plot) && a->method != GSTAT_PCA_GRAM_EIGH &&
               a->method != GSTAT_PCA_RANDOMIZED;
  if (second && (j->is_stdin || !S_ISREG(j->st.st_mode)) && !(j->spool = spool_create())) {
    return fail(
        "cannot create a temporary file (in $TMPDIR, else /tmp) to keep a copy of %s for the "
        "scores: %s; write the data to a file and pass its name",
        j->name, strerror(errno));
  }
  return 0;
}

static int create_context(job *j) {
  gstat_ctx_options o;
  gstat_ctx_options_init(&o);
  o.backend = j->a->backend;
  o.num_threads = j->a->threads;
  o.progress = progress_library; /* shown on a terminal during a long fit */
  o.progress_user = &j->pr;
  gstat_status st = gstat_ctx_create(&j->ctx, &o);
  if (st != GSTAT_OK) {
    return fail("cannot set up the %s backend: %s%s",
                j->a->backend == GSTAT_BACKEND_CUDA  ? "cuda"
                : j->a->backend == GSTAT_BACKEND_CPU ? "cpu"
                                                     : "default",
                gstat_status_string(st),
                j->a->backend == GSTAT_BACKEND_CUDA
                    ? " (the CUDA module libgstat_cuda.so.0 and a GPU are needed; --backend auto "
                      "uses the CPU when they are missing)"
                    : "");
  }
  return 0;
}

static void job_free(job *j, int failed) {
  if (failed) {
    cli_remove_created(&j->out); /* no half-written files */
  }
  csv_close(j->rd);
  if (j->in && j->in != stdin) fclose(j->in);
  if (j->spool) fclose(j->spool);
  gstat_cov_accum_destroy(j->acc);
  gstat_pca_result_free(j->res);
  gstat_ctx_destroy(j->ctx);
  free(j->data);
  free(j->miss);
  free(j->chunk);
  free(j->chunk_miss);
  free(j->chunk_scores);
  free(j->pc1);
  free(j->pc2);
  free(j->pt_group);
  free(j->row_label);
  free(j->fit_label);
  for (int64_t i = 0; i < j->n_labels; i++) free(j->label_names[i]);
  free(j->label_names);
  free(j->col_min);
  free(j->col_max);
}

int pca_main(int argc, char **argv) {
  pca_args a;
  job j;
  memset(&j, 0, sizeof j);
  j.out.cmd = "pca";
  int rc = pca_parse_args(argc, argv, &a);
  if (rc) return rc;
  if (a.help) {
    pca_help(stdout);
    return fflush(stdout) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
  }
  j.a = &a;
  double t0 = seconds();
  if ((rc = open_input(&j)) || (rc = create_context(&j)) || (rc = read_input(&j))) goto done;
  if (j.rows_dropped > 0) {
    fprintf(stderr,
            "gstat pca: %s: %lld of %lld data rows hold missing values (the first on line %lld) "
            "and are left out of the fit%s\n",
            j.name, (long long)j.rows_dropped, (long long)j.rows_read,
            (long long)j.first_missing_line, a.scores ? ", NA scores" : "");
  }
  double t1 = seconds();
  snprintf(j.label, sizeof j.label, "gstat pca: %s", j.name);
  progress_stage(&j.pr, j.label);
  rc = fit(&j, a.scores || a.plot);
  progress_done(&j.pr);
  if (rc) goto done;
  double t2 = seconds();
  if (a.verbose) {
    fprintf(stderr,
            "gstat pca: %s: %lld rows x %lld columns (%s-separated%s), %lld fitted; method %s, "
            "backend %s, %lld components; %s; read %.3f s, fit %.3f s\n",
            j.name, (long long)j.rows_read, (long long)j.p,
            csv_delimiter(j.rd) == '\t'  ? "tab"
            : csv_delimiter(j.rd) == ',' ? "comma"
            : csv_delimiter(j.rd) == ';' ? "semicolon"
                                         : "character",
            csv_has_header(j.rd) ? ", header" : ", no header", (long long)j.n_fit,
            method_name(j.res->method), j.backend, (long long)j.res->n_components,
            j.streamed ? "streamed" : "in memory", t1 - t0, t2 - t1);
  }
  rc = write_results(&j);
done:
  job_free(&j, rc != 0);
  return rc;
}
