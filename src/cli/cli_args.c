/* Option-value parsing shared by the subcommands (see cli_args.h). */
#include "cli_args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

static void hint(const char *cmd) {
  fprintf(stderr, "\nTry 'gstat %s --help' for more information.\n", cmd);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "gstat %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  hint(cmd);
  return CLI_EXIT_USAGE;
}

int cli_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "gstat %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_EXIT_FAILURE;
}

int cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (*s < '0' || *s > '9') return -1; /* strtoull would accept "-1" */
  unsigned long long v = strtoull(s, &end, 10);
  if (*end != '\0' || errno) return -1;
  *out = v;
  return 0;
}

int cli_parse_positive(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*s == '\0' || *end != '\0' || errno || !(v > 0) || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_pick(const char *cmd, const char *opt, const char *v, const char *const *names, int n,
             int *out) {
  for (int i = 0; i < n; i++) {
    if (strcmp(v, names[i]) == 0) {
      *out = i;
      return 0;
    }
  }
  fprintf(stderr, "gstat %s: %s: '%s' is not one of", cmd, opt, v);
  for (int i = 0; i < n; i++) fprintf(stderr, " %s%s", names[i], i + 1 < n ? "," : "");
  hint(cmd);
  return CLI_EXIT_USAGE;
}

int cli_delimiter(const char *cmd, const char *v, char *out) {
  static const struct {
    const char *name;
    char c;
  } named[] = {{"tab", '\t'}, {"\\t", '\t'}, {"comma", ','}, {"semicolon", ';'}, {"space", ' '}};
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
    if (strcmp(v, named[i].name) == 0) {
      *out = named[i].c;
      return 0;
    }
  }
  /* one printable ASCII character that cannot be part of a number or a quote */
  if (strlen(v) != 1 || v[0] < 0x20 || v[0] > 0x7E || strchr("\"0123456789.+-eE", v[0]))
    return cli_usage(cmd,
                     "--delimiter: '%s' is not a usable delimiter (one character such as ',' or "
                     "';', or tab, comma, semicolon, space)",
                     v);
  *out = v[0];
  return 0;
}

int cli_is_stdout(const char *path) {
  return path && strcmp(path, "-") == 0;
}
