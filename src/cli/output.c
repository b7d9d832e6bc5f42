/* CSV / JSON / text-table writers of PCA results (see output.h). */
#include "output.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void out_format_double(char *buf, size_t cap, double v) {
  for (int prec = 15; prec < 17; prec++) { /* short when exact, else 17 digits always are */
    snprintf(buf, cap, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
  snprintf(buf, cap, "%.17g", v);
}

void out_component_name(char *buf, size_t cap, int64_t i) {
  snprintf(buf, cap, "PC%lld", (long long)i + 1);
}

static void csv_num(FILE *f, double v) {
  char b[40];
  if (isnan(v) || isinf(v)) {
    fputs("NA", f);
    return;
  }
  out_format_double(b, sizeof b, v);
  fputs(b, f);
}

static void json_num(FILE *f, double v) {
  char b[40];
  if (isnan(v) || isinf(v)) {
    fputs("null", f); /* JSON has no NaN */
    return;
  }
  out_format_double(b, sizeof b, v);
  fputs(b, f);
}

/* A CSV field, quoted only when it must be. */
static void csv_str(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r\t;") && s[0] != ' ') {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c == '\n')
      fputs("\\n", f);
    else if (c == '\t')
      fputs("\\t", f);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f); /* input names were checked to be UTF-8 */
  }
  fputc('"', f);
}

static void json_array(FILE *f, const double *v, int64_t n) {
  fputc('[', f);
  for (int64_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    json_num(f, v[i]);
  }
  fputc(']', f);
}

static void json_str_array(FILE *f, const char *const *s, int64_t n) {
  fputc('[', f);
  for (int64_t i = 0; i < n; i++) {
    if (i) fputs(", ", f);
    json_str(f, s[i]);
  }
  fputc(']', f);
}

static int finish(FILE *f) {
  return ferror(f) ? -1 : 0;
}

/* ---- summary ---------------------------------------------------------------------- */

/* One notation for a whole column, as R's format() and numpy's printing pick
 * it: fixed notation with the decimals that show the smallest value to
 * SUMMARY_DIGITS significant digits, the same for every row so that the
 * decimal points line up; scientific notation for every row when that is
 * narrower (a column from 4e5 down to 1e-4). %g instead switched notation
 * and decimals row by row (99201.8 above 0.918974). */
#define SUMMARY_DIGITS 6

typedef struct column_format {
  int scientific, decimals;
} column_format;

static column_format pick_column_format(const double *v, int64_t n) {
  int lo = INT32_MAX, hi = INT32_MIN, neg = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(v[i]) || v[i] == 0) continue;
    char b[40]; /* the exponent as printed: rounding may carry into the next power */
    snprintf(b, sizeof b, "%.*e", SUMMARY_DIGITS - 1, fabs(v[i]));
    int e = atoi(strchr(b, 'e') + 1);
    if (e < lo) lo = e;
    if (e > hi) hi = e;
    neg |= v[i] < 0;
  }
  column_format cf = {0, 0};
  if (lo > hi) return cf; /* only zeros (or nothing finite) */
  int decimals = SUMMARY_DIGITS - 1 - lo > 0 ? SUMMARY_DIGITS - 1 - lo : 0;
  int fixed = neg + (hi >= 0 ? hi + 1 : 1) + (decimals ? 1 + decimals : 0);
  int exp_digits = (hi >= 100 || lo <= -100) ? 3 : 2;
  int sci = neg + 1 + 1 + (SUMMARY_DIGITS - 1) + 2 + exp_digits;
  cf.scientific = fixed > sci;
  cf.decimals = cf.scientific ? SUMMARY_DIGITS - 1 : decimals;
  return cf;
}

static void format_cell(char *b, size_t cap, double v, column_format cf) {
  if (!isfinite(v))
    snprintf(b, cap, "%s", isnan(v) ? "NaN" : v > 0 ? "Inf" : "-Inf");
  else
    snprintf(b, cap, cf.scientific ? "%.*e" : "%.*f", cf.decimals, v);
}

static int summary_text(FILE *f, const out_summary *s) {
  const gstat_pca_result *r = s->res;
  int64_t k = r->n_components;
  static const char *head[4] = {"component", "variance", "ratio", "cumulative"};
  size_t w[4];
  for (int c = 0; c < 4; c++) w[c] = strlen(head[c]);
  char(*cells)[4][40] = calloc((size_t)(k > 0 ? k : 1), sizeof *cells);
  if (!cells) return -1;
  double cum = 0;
  /* ratios lie in [0, 1]: six decimals (a fixed column) say them all */
  column_format var = pick_column_format(r->explained_variance, k), ratio = {0, 6};
  for (int64_t i = 0; i < k; i++) {
    cum += r->explained_variance_ratio[i];
    out_component_name(cells[i][0], sizeof cells[i][0], i);
    format_cell(cells[i][1], sizeof cells[i][1], r->explained_variance[i], var);
    format_cell(cells[i][2], sizeof cells[i][2], r->explained_variance_ratio[i], ratio);
    format_cell(cells[i][3], sizeof cells[i][3], cum, ratio);
    for (int c = 0; c < 4; c++) {
      size_t l = strlen(cells[i][c]);
      if (l > w[c]) w[c] = l;
    }
  }
  /* first column left-aligned, numbers right-aligned, two spaces between */
  fprintf(f, "%-*s  %*s  %*s  %*s\n", (int)w[0], head[0], (int)w[1], head[1], (int)w[2], head[2],
          (int)w[3], head[3]);
  for (int64_t i = 0; i < k; i++) {
    fprintf(f, "%-*s  %*s  %*s  %*s\n", (int)w[0], cells[i][0], (int)w[1], cells[i][1], (int)w[2],
            cells[i][2], (int)w[3], cells[i][3]);
  }
  free(cells);
  return finish(f);
}

static int summary_csv(FILE *f, const out_summary *s) {
  const gstat_pca_result *r = s->res;
  double cum = 0;
  char name[32];
  fputs("component,variance,ratio,cumulative,singular_value\n", f);
  for (int64_t i = 0; i < r->n_components; i++) {
    cum += r->explained_variance_ratio[i];
    out_component_name(name, sizeof name, i);
    fprintf(f, "%s,", name);
    csv_num(f, r->explained_variance[i]);
    fputc(',', f);
    csv_num(f, r->explained_variance_ratio[i]);
    fputc(',', f);
    csv_num(f, cum);
    fputc(',', f);
    csv_num(f, r->singular_values[i]);
    fputc('\n', f);
  }
  return finish(f);
}

static int summary_json(FILE *f, const out_summary *s) {
  const gstat_pca_result *r = s->res;
  int64_t k = r->n_components, p = r->n_features;
  double *cum = malloc(sizeof(double) * (size_t)(k > 0 ? k : 1));
  if (!cum) return -1;
  double c = 0;
  for (int64_t i = 0; i < k; i++) cum[i] = c += r->explained_variance_ratio[i];
  fputs("{\n  \"input\": ", f);
  json_str(f, s->input);
  fprintf(f,
          ",\n  \"rows_read\": %lld,\n  \"rows_dropped\": %lld,\n  \"n_samples\": %lld,\n"
          "  \"n_features\": %lld,\n  \"n_components\": %lld,\n",
          (long long)s->rows_read, (long long)s->rows_dropped, (long long)r->n_samples,
          (long long)p, (long long)k);
  fputs("  \"method\": ", f);
  json_str(f, s->method);
  fputs(",\n  \"backend\": ", f);
  json_str(f, s->backend);
  fprintf(f,
          ",\n  \"streamed\": %s,\n  \"centered\": %s,\n  \"scaled\": %s,\n  \"whitened\": %s,\n",
          s->streamed ? "true" : "false", s->centered ? "true" : "false",
          s->scaled ? "true" : "false", s->whitened ? "true" : "false");
  fputs("  \"features\": ", f);
  json_str_array(f, s->features, p);
  fputs(",\n  \"explained_variance\": ", f);
  json_array(f, r->explained_variance, k);
  fputs(",\n  \"explained_variance_ratio\": ", f);
  json_array(f, r->explained_variance_ratio, k);
  fputs(",\n  \"cumulative_variance_ratio\": ", f);
  json_array(f, cum, k);
  fputs(",\n  \"singular_values\": ", f);
  json_array(f, r->singular_values, k);
  fputs(",\n  \"noise_variance\": ", f);
  json_num(f, r->noise_variance[0]);
  fputs(",\n  \"total_variance\": ", f);
  json_num(f, r->total_variance[0]);
  fputs(",\n  \"center\": ", f);
  json_array(f, r->mean, p);
  fputs(",\n  \"scale\": ", f);
  json_array(f, r->scale, p);
  fputs("\n}\n", f);
  free(cum);
  return finish(f);
}

int out_write_summary(FILE *f, out_format fmt, const out_summary *s) {
  switch (fmt) {
    case OUT_CSV: return summary_csv(f, s);
    case OUT_JSON: return summary_json(f, s);
    default: return summary_text(f, s);
  }
}

/* ---- components ---------------------------------------------------------------------- */

int out_write_components(FILE *f, out_format fmt, const gstat_pca_result *r,
                         const char *const *features) {
  int64_t k = r->n_components, p = r->n_features;
  char name[32];
  if (fmt == OUT_JSON) {
    fputs("{\n  \"features\": ", f);
    json_str_array(f, features, p);
    fputs(",\n  \"components\": [", f);
    for (int64_t i = 0; i < k; i++) {
      fputs(i ? ",\n    " : "\n    ", f);
      json_array(f, r->components + i * p, p);
    }
    fputs(k ? "\n  ]\n}\n" : "]\n}\n", f);
    return finish(f);
  }
  /* one row per component, one column per feature (as sklearn's components_) */
  fputs("component", f);
  for (int64_t j = 0; j < p; j++) {
    fputc(',', f);
    csv_str(f, features[j]);
  }
  fputc('\n', f);
  for (int64_t i = 0; i < k; i++) {
    out_component_name(name, sizeof name, i);
    fputs(name, f);
    for (int64_t j = 0; j < p; j++) {
      fputc(',', f);
      csv_num(f, r->components[i * p + j]);
    }
    fputc('\n', f);
  }
  return finish(f);
}

/* ---- scores ---------------------------------------------------------------------------- */

int out_scores_begin(out_scores *w, FILE *f, out_format fmt, int64_t k) {
  char name[32];
  w->f = f;
  w->fmt = fmt;
  w->k = k;
  w->rows = 0;
  if (fmt == OUT_JSON) {
    fputs("{\n  \"columns\": [", f);
    for (int64_t i = 0; i < k; i++) {
      out_component_name(name, sizeof name, i);
      fprintf(f, "%s\"%s\"", i ? ", " : "", name);
    }
    fputs("],\n  \"scores\": [", f);
  } else {
    for (int64_t i = 0; i < k; i++) {
      out_component_name(name, sizeof name, i);
      fprintf(f, "%s%s", i ? "," : "", name);
    }
    fputc('\n', f);
  }
  return finish(f);
}

int out_scores_rows(out_scores *w, const double *kept, int64_t m, const unsigned char *missing) {
  FILE *f = w->f;
  int json = w->fmt == OUT_JSON;
  for (int64_t r = 0; r < m; r++) {
    const double *row = NULL;
    if (!missing || !missing[r]) {
      row = kept;
      kept += w->k;
    }
    if (json) fputs(w->rows ? ",\n    [" : "\n    [", f);
    for (int64_t i = 0; i < w->k; i++) {
      if (i) fputs(json ? ", " : ",", f);
      if (json)
        json_num(f, row ? row[i] : NAN);
      else
        csv_num(f, row ? row[i] : NAN);
    }
    fputs(json ? "]" : "\n", f);
    w->rows++;
  }
  return finish(f);
}

int out_scores_end(out_scores *w) {
  if (w->fmt == OUT_JSON) fputs(w->rows ? "\n  ]\n}\n" : "]\n}\n", w->f);
  return finish(w->f);
}

/* ---- shared by other commands' writers ------------------------------------------- */

void out_csv_num(FILE *f, double v) {
  csv_num(f, v);
}
void out_json_num(FILE *f, double v) {
  json_num(f, v);
}
void out_csv_str(FILE *f, const char *s) {
  csv_str(f, s);
}
void out_json_str(FILE *f, const char *s) {
  json_str(f, s);
}
