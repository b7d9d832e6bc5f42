/* Option-value parsing shared by the subcommands. Every failing helper prints
 * "gstat CMD: ..." and the --help hint on stderr and returns CLI_EXIT_USAGE. */
#ifndef GSTAT_CLI_CLI_ARGS_H
#define GSTAT_CLI_CLI_ARGS_H

#include <stdint.h>

/* A usage error of subcommand `cmd` (printf-style message). */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A run-time failure of subcommand `cmd` (bad data, I/O): prints
 * "gstat CMD: message" and returns CLI_EXIT_FAILURE. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Whole-string numbers: 0 on success, -1 when s is not one (no message). */
int cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int cli_parse_u64(const char *s, uint64_t *out);
int cli_parse_positive(const char *s, double *out); /* finite and > 0 */

/* Index of v among names[0..n), or a usage error naming the choices. */
int cli_pick(const char *cmd, const char *opt, const char *v, const char *const *names, int n,
             int *out);

/* A --delimiter value: tab, comma, semicolon, space, or one printable
 * character that cannot be part of a number or a quote. */
int cli_delimiter(const char *cmd, const char *v, char *out);

/* Whether an output path means standard output ("-"). */
int cli_is_stdout(const char *path);

#endif /* GSTAT_CLI_CLI_ARGS_H */
