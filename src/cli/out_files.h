/* Output files of one subcommand run: "-" is standard output; the files the
 * run creates are remembered and removed again after a failure (never a file
 * that existed before, let alone a device such as /dev/full). */
#ifndef GSTAT_CLI_OUT_FILES_H
#define GSTAT_CLI_OUT_FILES_H

#include <stdio.h>
#include <sys/stat.h>

#define CLI_MAX_OUTPUTS 8

typedef struct cli_outputs {
  const char *cmd; /* subcommand name for messages */
  const char *created[CLI_MAX_OUTPUTS];
  int n_created;
} cli_outputs;

/* Whether path names the same file as the input (input NULL: stdin). */
int cli_same_file(const struct stat *input, const char *path);

/* Open path for writing ("-": stdout), or print why and return NULL. */
FILE *cli_open_output(cli_outputs *o, const char *path, const char *what);

/* Close (or flush stdout); CLI_EXIT_FAILURE with a message when anything
 * failed, including !wrote_ok; else 0. */
int cli_close_output(const cli_outputs *o, FILE *f, const char *path, const char *what,
                     int wrote_ok);

/* Remove the files this run created (after a failure). */
void cli_remove_created(cli_outputs *o);

#endif /* GSTAT_CLI_OUT_FILES_H */
