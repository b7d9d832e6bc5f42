/* Subcommands of the gstat tool: each takes its own argv (argv[0] = the
 * subcommand name) and returns the process exit status. */
#ifndef GSTAT_CLI_COMMANDS_H
#define GSTAT_CLI_COMMANDS_H

#include <stdio.h>

/* Exit statuses shared by all subcommands. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAILURE 1 /* bad input data, a failed computation, I/O */
#define CLI_EXIT_USAGE 2   /* bad command line */

int pca_main(int argc, char **argv);
void pca_help(FILE *f);
int spectral_main(int argc, char **argv);
void spectral_help(FILE *f);

#endif /* GSTAT_CLI_COMMANDS_H */
