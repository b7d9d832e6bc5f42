/* Streaming numeric CSV/TSV reader with line/column tracking (see csv_reader.h). */
#define _POSIX_C_SOURCE 200809L

#include "csv_reader.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE 65536
/* A record longer than this is refused instead of growing without bound on a
 * binary file that holds no newline. */
#define MAX_RECORD ((size_t)256 << 20)
#define ERR_SIZE 1024

typedef struct field {
  size_t start;  /* offset of the field's first byte in rec (for locations) */
  size_t cstart; /* content: inside the quotes, or trimmed of blanks */
  size_t clen;
  int quoted;
  int escaped; /* quoted content holding "" pairs */
} field;

enum value_kind { VAL_NUMBER, VAL_MISSING, VAL_INF, VAL_RANGE, VAL_TEXT };

struct csv_reader {
  FILE *in;
  char *name;
  csv_config cfg;
  unsigned char *blk;
  size_t blk_len, blk_pos;
  int eof;
  int64_t bytes;
  char *rec; /* current record: its physical lines joined by '\n' */
  size_t rec_len, rec_cap;
  int64_t line_no;  /* physical lines read so far */
  int64_t rec_line; /* line of the current record's first line */
  field *f;
  size_t nf, fcap;
  char *scratch; /* unescaped field text */
  size_t scratch_cap;
  char *num; /* NUL-terminated copy of a number for strtod */
  size_t num_cap;
  char delim;
  int64_t p;
  int has_header;
  int64_t first_line;    /* line of the first record (header or data) */
  int64_t first_unnamed; /* 1-based column with an empty header name, 0 if none */
  char **names;
  int64_t label_j;   /* physical column of cfg.label_column, -1 if none */
  char **data_names; /* names without the label column (names when none) */
  int pending;       /* rec holds a parsed data record not returned yet */
  int64_t rows, rows_missing, first_missing_line;
  int failed;
  char err[ERR_SIZE];
};

/* ---- messages ------------------------------------------------------------------ */

static void fail_lc(csv_reader *r, int64_t line, int64_t col, const char *fmt, ...) {
  int n =
      snprintf(r->err, sizeof r->err, "%s:%lld:%lld: ", r->name, (long long)line, (long long)col);
  if (n < 0 || (size_t)n >= sizeof r->err) n = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
  va_end(ap);
  r->failed = 1;
}

/* Line and column (in characters) of byte offset pos of the current record. */
static void locate(const csv_reader *r, size_t pos, int64_t *line, int64_t *col) {
  int64_t l = r->rec_line;
  size_t ls = 0;
  for (size_t i = 0; i < pos && i < r->rec_len; i++) {
    if (r->rec[i] == '\n') {
      l++;
      ls = i + 1;
    }
  }
  int64_t c = 1;
  for (size_t i = ls; i < pos && i < r->rec_len; i++) {
    if (((unsigned char)r->rec[i] & 0xC0) != 0x80) c++; /* count UTF-8 lead bytes only */
  }
  *line = l;
  *col = c;
}

#define FAIL_AT(r, pos, ...)           \
  do {                                 \
    int64_t l_, c_;                    \
    locate((r), (pos), &l_, &c_);      \
    fail_lc((r), l_, c_, __VA_ARGS__); \
  } while (0)

/* Quote a field for a message: at most 40 characters, control bytes escaped. */
static void show_text(char *dst, size_t cap, const char *s, size_t n) {
  size_t o = 0, chars = 0, i = 0;
  dst[o++] = '"';
  while (i < n && o + 8 < cap) {
    unsigned char c = (unsigned char)s[i];
    if ((c & 0xC0) != 0x80 && ++chars > 40) break;
    if (c < 0x20 || c == 0x7F) {
      o += (size_t)snprintf(dst + o, cap - o, "\\x%02X", c);
    } else if (c == '"' || c == '\\') {
      dst[o++] = '\\';
      dst[o++] = (char)c;
    } else {
      dst[o++] = (char)c;
    }
    i++;
  }
  /* never cut a multi-byte character in half */
  while (i < n && o > 1 && ((unsigned char)s[i] & 0xC0) == 0x80) {
    o--;
    i--;
  }
  dst[o++] = '"';
  if (i < n && o + 4 < cap) {
    memcpy(dst + o, "...", 3);
    o += 3;
  }
  dst[o] = '\0';
}

/* ---- raw input ------------------------------------------------------------------ */

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *nb = realloc(*buf, c * elem);
  if (!nb) return -1;
  *buf = nb;
  *cap = c;
  return 0;
}

static int refill(csv_reader *r) { /* 1: data, 0: end of input, -1: error */
  if (r->eof) return 0;
  size_t n = fread(r->blk, 1, BLOCK_SIZE, r->in);
  if (n == 0) {
    if (ferror(r->in)) {
      snprintf(r->err, sizeof r->err, "%s: read error: %s", r->name, strerror(errno));
      r->failed = 1;
      return -1;
    }
    r->eof = 1;
    return 0;
  }
  if (r->cfg.tee && fwrite(r->blk, 1, n, r->cfg.tee) != n) {
    snprintf(r->err, sizeof r->err, "%s: cannot write the temporary copy of the input: %s", r->name,
             strerror(errno));
    r->failed = 1;
    return -1;
  }
  r->blk_len = n;
  r->blk_pos = 0;
  r->bytes += (int64_t)n;
  if (r->cfg.progress) r->cfg.progress(r->cfg.progress_user, r->bytes);
  return 1;
}

/* Offset of the first NUL or invalid UTF-8 byte in s[0, n), or n. */
static size_t bad_byte(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    if (c < 0x80) {
      if (c == 0) return i;
      i++;
      continue;
    }
    size_t len;
    if (c >= 0xC2 && c <= 0xDF)
      len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4;
    else
      return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
    }
    /* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
    if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
        (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F)) {
      return i;
    }
    i += len;
  }
  return n;
}

/* Read one physical line into rec (appended after a '\n' when `append`).
 * 1: a line, 0: end of input, -1: error. */
static int read_line(csv_reader *r, int append) {
  if (!append) r->rec_len = 0;
  size_t base = r->rec_len;
  if (append) {
    if (grow((void **)&r->rec, &r->rec_cap, r->rec_len + 2, 1)) goto nomem;
    r->rec[r->rec_len++] = '\n';
  }
  size_t start = r->rec_len;
  int got = 0;
  for (;;) {
    if (r->blk_pos == r->blk_len) {
      int rc = refill(r);
      if (rc < 0) return -1;
      if (rc == 0) break;
    }
    unsigned char *b = r->blk + r->blk_pos;
    size_t avail = r->blk_len - r->blk_pos;
    unsigned char *nl = memchr(b, '\n', avail);
    size_t take = nl ? (size_t)(nl - b) : avail;
    if (r->rec_len + take > MAX_RECORD) {
      fail_lc(r, r->line_no + 1, 1, "line longer than %zu MiB (is this a text file?)",
              MAX_RECORD >> 20);
      return -1;
    }
    if (grow((void **)&r->rec, &r->rec_cap, r->rec_len + take + 1, 1)) goto nomem;
    memcpy(r->rec + r->rec_len, b, take);
    r->rec_len += take;
    r->blk_pos += take;
    got = 1;
    if (nl) {
      r->blk_pos++;
      break;
    }
  }
  if (!got) {
    r->rec_len = base;
    return 0;
  }
  r->line_no++;
  if (r->rec_len > start && r->rec[r->rec_len - 1] == '\r') r->rec_len--;
  if (r->line_no == 1 && r->rec_len - start >= 3 &&
      memcmp(r->rec + start, "\xEF\xBB\xBF", 3) == 0) {
    memmove(r->rec + start, r->rec + start + 3, r->rec_len - start - 3);
    r->rec_len -= 3;
  }
  size_t bad = start + bad_byte((const unsigned char *)r->rec + start, r->rec_len - start);
  if (bad < r->rec_len) {
    int64_t col = 1;
    for (size_t i = start; i < bad; i++) col += (((unsigned char)r->rec[i] & 0xC0) != 0x80);
    unsigned char c = (unsigned char)r->rec[bad];
    if (c == 0) {
      fail_lc(r, r->line_no, col, "NUL byte: this looks like a binary file, not CSV/TSV text");
    } else {
      fail_lc(r, r->line_no, col, "invalid UTF-8 (byte 0x%02X): a binary file or not UTF-8 text",
              c);
    }
    return -1;
  }
  r->rec[r->rec_len] = '\0';
  return 1;
nomem:
  snprintf(r->err, sizeof r->err, "%s: out of memory reading line %lld", r->name,
           (long long)r->line_no + 1);
  r->failed = 1;
  return -1;
}

/* ---- records and fields ------------------------------------------------------------ */

static int is_blank(const csv_reader *r, char c) {
  return (c == ' ' || c == '\t') && c != r->delim;
}

static void detect_delimiter(csv_reader *r) {
  size_t tabs = 0, commas = 0, semis = 0;
  int quoted = 0;
  for (size_t i = 0; i < r->rec_len; i++) {
    char c = r->rec[i];
    if (c == '"')
      quoted = !quoted;
    else if (!quoted && c == '\t')
      tabs++;
    else if (!quoted && c == ',')
      commas++;
    else if (!quoted && c == ';')
      semis++;
  }
  /* no candidate at all: a single column (any delimiter splits nothing) */
  r->delim = tabs ? '\t' : commas ? ',' : semis ? ';' : ',';
}

/* Split the record in rec into fields, reading continuation lines while a
 * quoted field is open. 0 or -1. */
static int split_fields(csv_reader *r) {
  size_t pos = 0;
  r->nf = 0;
  for (;;) {
    if (grow((void **)&r->f, &r->fcap, r->nf + 1, sizeof(field))) {
      snprintf(r->err, sizeof r->err, "%s: out of memory", r->name);
      r->failed = 1;
      return -1;
    }
    field *f = &r->f[r->nf];
    f->start = pos;
    f->escaped = 0;
    f->quoted = 0;
    while (pos < r->rec_len && is_blank(r, r->rec[pos])) pos++;
    if (pos < r->rec_len && r->rec[pos] == '"') {
      size_t open = pos++;
      f->quoted = 1;
      f->cstart = pos;
      for (;;) {
        if (pos >= r->rec_len) { /* the quote spans a line break */
          int rc = read_line(r, 1);
          if (rc < 0) return -1;
          if (rc == 0) {
            FAIL_AT(r, open, "unterminated quoted field (the quote opened here is never closed)");
            return -1;
          }
          continue;
        }
        if (r->rec[pos] == '"') {
          if (pos + 1 < r->rec_len && r->rec[pos + 1] == '"') {
            f->escaped = 1;
            pos += 2;
            continue;
          }
          break;
        }
        pos++;
      }
      f->clen = pos - f->cstart;
      pos++;
      while (pos < r->rec_len && is_blank(r, r->rec[pos])) pos++;
      if (pos < r->rec_len && r->rec[pos] != r->delim) {
        FAIL_AT(r, pos, "unexpected character after a closing quote (expected the delimiter)");
        return -1;
      }
    } else {
      f->cstart = pos;
      while (pos < r->rec_len && r->rec[pos] != r->delim) pos++;
      size_t end = pos;
      while (end > f->cstart && is_blank(r, r->rec[end - 1])) end--;
      f->clen = end - f->cstart;
    }
    r->nf++;
    if (pos < r->rec_len) { /* at a delimiter: another field follows (maybe empty) */
      pos++;
      continue;
    }
    return 0;
  }
}

/* Next non-blank record, split into fields: 1, 0 at end of input, -1 error. */
static int next_record(csv_reader *r) {
  for (;;) {
    int rc = read_line(r, 0);
    if (rc <= 0) return rc;
    size_t i = 0;
    while (i < r->rec_len && r->rec[i] == ' ') i++;
    if (i < r->rec_len) break;
  }
  r->rec_line = r->line_no;
  if (!r->delim) detect_delimiter(r);
  return split_fields(r) ? -1 : 1;
}

/* Text of field i (quotes removed, "" unescaped); valid until the next call. */
static const char *field_text(csv_reader *r, size_t i, size_t *len) {
  const field *f = &r->f[i];
  *len = f->clen;
  if (!f->escaped) return r->rec + f->cstart;
  if (grow((void **)&r->scratch, &r->scratch_cap, f->clen + 1, 1)) return NULL;
  size_t o = 0;
  for (size_t k = 0; k < f->clen; k++) {
    char c = r->rec[f->cstart + k];
    r->scratch[o++] = c;
    if (c == '"') k++; /* skip the second quote of a pair */
  }
  *len = o;
  return r->scratch;
}

static int ieq(const char *s, size_t n, const char *word) {
  size_t m = strlen(word);
  if (n != m) return 0;
  for (size_t i = 0; i < n; i++) {
    char a = s[i], b = word[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* Classify a field's text; a number is stored in *v. Strict decimal syntax:
 * strtod alone would also take hex floats, "infinity" and trailing junk. */
static enum value_kind classify(csv_reader *r, const char *s, size_t n, double *v) {
  while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  if (n == 0 || ieq(s, n, "na") || ieq(s, n, "n/a") || ieq(s, n, "nan")) return VAL_MISSING;
  size_t i = 0, digits = 0;
  if (s[i] == '+' || s[i] == '-') i++;
  if (ieq(s + i, n - i, "inf") || ieq(s + i, n - i, "infinity")) return VAL_INF;
  while (i < n && is_digit(s[i])) i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && is_digit(s[i])) i++, digits++;
  }
  if (digits == 0) return VAL_TEXT;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t ed = 0;
    while (i < n && is_digit(s[i])) i++, ed++;
    if (ed == 0) return VAL_TEXT;
  }
  if (i != n) return VAL_TEXT;
  if (grow((void **)&r->num, &r->num_cap, n + 1, 1)) return VAL_TEXT;
  memcpy(r->num, s, n);
  r->num[n] = '\0';
  errno = 0;
  *v = strtod(r->num, NULL); /* the CLI never calls setlocale: '.' is the decimal point */
  if (errno == ERANGE && isinf(*v)) return VAL_RANGE;
  return VAL_NUMBER;
}

/* ---- public ------------------------------------------------------------------------ */

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int set_names(csv_reader *r, int from_header) {
  r->names = calloc((size_t)r->p, sizeof(char *));
  if (!r->names) return -1;
  for (int64_t j = 0; j < r->p; j++) {
    size_t n = 0;
    const char *t = from_header ? field_text(r, (size_t)j, &n) : NULL;
    if (t && n > 0) {
      r->names[j] = dup_n(t, n);
    } else {
      if (from_header && !r->first_unnamed) r->first_unnamed = j + 1;
      char buf[32];
      snprintf(buf, sizeof buf, "x%lld", (long long)j + 1);
      r->names[j] = dup_n(buf, strlen(buf));
    }
    if (!r->names[j]) return -1;
  }
  return 0;
}

/* cfg.label_column to a physical column: a header name first, else a
 * 1-based number. The data names are then the others. 0, or -1 (r->err). */
static int find_label_column(csv_reader *r) {
  const char *want = r->cfg.label_column;
  r->label_j = -1;
  r->data_names = r->names;
  if (!want) return 0;
  for (int64_t j = 0; j < r->p && r->label_j < 0; j++)
    if (r->has_header && strcmp(r->names[j], want) == 0) r->label_j = j;
  char *end = NULL;
  long long num = strtoll(want, &end, 10);
  if (r->label_j < 0 && *want && end && *end == '\0' && num >= 1 && num <= r->p)
    r->label_j = (int64_t)num - 1;
  if (r->label_j < 0) {
    int at = snprintf(r->err, sizeof r->err, "%s: no column '%s' to colour by: the columns are ",
                      r->name, want);
    for (int64_t j = 0; j < r->p && at > 0 && (size_t)at < sizeof r->err; j++)
      at += snprintf(r->err + at, sizeof r->err - (size_t)at, "%s%s", j ? ", " : "", r->names[j]);
    if (!r->has_header && at > 0 && (size_t)at < sizeof r->err)
      snprintf(r->err + at, sizeof r->err - (size_t)at, " (no header: give a number 1..%lld)",
               (long long)r->p);
    return -1;
  }
  if (r->p < 2) {
    snprintf(r->err, sizeof r->err, "%s: the colour column '%s' is the only column: no data left",
             r->name, want);
    return -1;
  }
  r->data_names = calloc((size_t)r->p, sizeof(char *));
  if (!r->data_names) {
    r->data_names = r->names;
    snprintf(r->err, sizeof r->err, "%s: out of memory", r->name);
    return -1;
  }
  for (int64_t j = 0, o = 0; j < r->p; j++)
    if (j != r->label_j) r->data_names[o++] = r->names[j];
  return 0;
}

int csv_open(csv_reader **out, FILE *in, const char *name, const csv_config *cfg, char *err,
             size_t errlen) {
  *out = NULL;
  csv_reader *r = calloc(1, sizeof *r);
  if (!r || !(r->blk = malloc(BLOCK_SIZE)) || !(r->name = dup_n(name, strlen(name)))) {
    snprintf(err, errlen, "%s: out of memory", name);
    csv_close(r);
    return -1;
  }
  r->in = in;
  r->cfg = *cfg;
  r->delim = cfg->delimiter;
  int rc = next_record(r);
  if (rc == 0) {
    if (r->line_no == 0)
      fail_lc(r, 1, 1, "empty input: no rows at all");
    else
      fail_lc(r, r->line_no, 1, "no rows: the input holds only blank lines");
  }
  if (rc <= 0) goto fail;
  r->p = (int64_t)r->nf;
  r->first_line = r->rec_line;
  int header = cfg->header == CSV_HEADER_YES;
  if (cfg->header == CSV_HEADER_AUTO) { /* a header: no number in it, and some text */
    int numbers = 0, texts = 0;
    for (size_t j = 0; j < r->nf; j++) {
      size_t n;
      double v;
      const char *t = field_text(r, j, &n);
      enum value_kind k = t ? classify(r, t, n, &v) : VAL_TEXT;
      numbers += (k == VAL_NUMBER || k == VAL_RANGE);
      texts += (k == VAL_TEXT || k == VAL_INF);
    }
    header = numbers == 0 && texts > 0;
  }
  r->has_header = header;
  r->pending = !header;
  if (set_names(r, header)) {
    snprintf(r->err, sizeof r->err, "%s: out of memory", r->name);
    goto fail;
  }
  if (find_label_column(r)) goto fail;
  *out = r;
  return 0;
fail:
  snprintf(err, errlen, "%s", r->err);
  csv_close(r);
  return -1;
}

void csv_close(csv_reader *r) {
  if (!r) return;
  if (r->names) {
    for (int64_t j = 0; j < r->p; j++) free(r->names[j]);
  }
  if (r->data_names != r->names) free(r->data_names);
  free(r->names);
  free(r->blk);
  free(r->name);
  free(r->rec);
  free(r->f);
  free(r->scratch);
  free(r->num);
  free(r);
}

int64_t csv_columns(const csv_reader *r) {
  return r->p - (r->label_j >= 0);
}
const char *csv_column_name(const csv_reader *r, int64_t j) {
  return r->data_names[j];
}
const char *csv_label_name(const csv_reader *r) {
  return r->label_j >= 0 ? r->names[r->label_j] : NULL;
}
const char *const *csv_column_names(const csv_reader *r) {
  return (const char *const *)r->data_names;
}
int csv_has_header(const csv_reader *r) {
  return r->has_header;
}
char csv_delimiter(const csv_reader *r) {
  return r->delim;
}
const char *csv_error(const csv_reader *r) {
  return r->err;
}
int64_t csv_rows(const csv_reader *r) {
  return r->rows;
}
int64_t csv_rows_missing(const csv_reader *r) {
  return r->rows_missing;
}
int64_t csv_first_missing_line(const csv_reader *r) {
  return r->first_missing_line;
}
int64_t csv_first_unnamed_column(const csv_reader *r) {
  return r->first_unnamed;
}
int64_t csv_bytes(const csv_reader *r) {
  return r->bytes;
}

/* Convert the current record into row; 0 or -1. */
static int convert_record(csv_reader *r, double *row, int *has_missing) {
  if ((int64_t)r->nf != r->p) {
    size_t pos = r->rec_len; /* too few: point just past the end of the record */
    if ((int64_t)r->nf > r->p) pos = r->f[r->p].start; /* too many: at the first extra */
    FAIL_AT(r, pos, "expected %lld field%s (as in line %lld), found %zu", (long long)r->p,
            r->p == 1 ? "" : "s", (long long)r->first_line, r->nf);
    return -1;
  }
  *has_missing = 0;
  for (int64_t j = 0, o = 0; j < r->p; j++) {
    size_t n;
    const char *t = field_text(r, (size_t)j, &n);
    double v = 0;
    char shown[256];
    if (!t) {
      snprintf(r->err, sizeof r->err, "%s: out of memory", r->name);
      r->failed = 1;
      return -1;
    }
    if (j == r->label_j) { /* not data: its text to the caller */
      if (r->cfg.label) r->cfg.label(r->cfg.label_user, r->rows, t, n);
      continue;
    }
    size_t at = r->f[j].cstart - (size_t)r->f[j].quoted; /* at the opening quote if any */
    switch (classify(r, t, n, &v)) {
      case VAL_NUMBER: row[o++] = v; break;
      case VAL_MISSING:
        if (r->cfg.missing_is_error) {
          show_text(shown, sizeof shown, t, n);
          FAIL_AT(r, at, "missing value %s in column %lld (%s); --missing complete drops such rows",
                  n ? shown : "(empty field)", (long long)j + 1, r->names[j]);
          return -1;
        }
        row[o++] = NAN;
        *has_missing = 1;
        break;
      case VAL_INF:
        show_text(shown, sizeof shown, t, n);
        FAIL_AT(r, at, "infinite value %s in column %lld (%s) is not allowed", shown,
                (long long)j + 1, r->names[j]);
        return -1;
      case VAL_RANGE:
        show_text(shown, sizeof shown, t, n);
        FAIL_AT(r, at, "number %s in column %lld (%s) is out of range for a double", shown,
                (long long)j + 1, r->names[j]);
        return -1;
      case VAL_TEXT:
        show_text(shown, sizeof shown, t, n);
        FAIL_AT(r, at, "not a number: %s in column %lld (%s)%s", shown, (long long)j + 1,
                r->names[j],
                (r->rec_line == r->first_line && !r->has_header)
                    ? "; if this line is a header, pass --header"
                    : "");
        return -1;
    }
  }
  return 0;
}

int csv_read_rows(csv_reader *r, double *rows, int64_t max_rows, int64_t *got,
                  unsigned char *missing) {
  *got = 0;
  if (r->failed) return -1;
  while (*got < max_rows) {
    if (!r->pending) {
      int rc = next_record(r);
      if (rc < 0) return -1;
      if (rc == 0) {
        if (r->rows == 0) {
          fail_lc(r, r->first_line, 1, "only a header line, no data rows");
          return -1;
        }
        break;
      }
    }
    r->pending = 0;
    int has_missing;
    if (convert_record(r, rows + *got * csv_columns(r), &has_missing)) return -1;
    if (has_missing) {
      if (r->rows_missing++ == 0) r->first_missing_line = r->rec_line;
    }
    if (missing) missing[*got] = (unsigned char)has_missing;
    r->rows++;
    (*got)++;
  }
  return 0;
}
