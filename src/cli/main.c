/* The gstat command-line tool: subcommand dispatch, --help and --version. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "commands.h"
#include "gstat/core.h"
#ifdef GSTAT_CLI_MPI
#include "pca_mpi.h"
#endif

#ifndef GSTAT_CLI_VERSION
#define GSTAT_CLI_VERSION "unknown"
#endif

static void help(FILE *f) {
  fputs(
      "Usage: gstat COMMAND [OPTIONS] [ARGS]\n"
      "       gstat --help | --version\n"
      "\n"
      "Statistics on the command line with the gstat library (batched eigh and\n"
      "Cholesky on the CPU or an NVIDIA GPU).\n"
      "\n"
      "Commands:\n"
      "  pca       principal component analysis of a CSV/TSV table\n"
      "  spectral  spectral clustering of a graph (edge list), of points (CSV/TSV)\n"
      "            or of a batch of many graphs\n"
      "  help      show the help of a command ('gstat help pca')\n"
      "\n"
      "Options:\n"
      "  -h, --help     show this help and exit\n"
      "  -V, --version  show the version of the tool and of libgstat, and exit\n"
      "\n"
      "Run 'gstat COMMAND --help' for the options of a command.\n"
      "Exit status: 0 success, 1 bad input data or a failed computation, 2 bad command line.\n"
      "\n"
      "Examples:\n"
      "  gstat pca data.csv\n"
      "  gstat pca -k 2 --scale --scores scores.csv --plot pca.svg data.csv\n"
      "  gstat spectral -k 2 data/karate.edges\n",
      f);
}

static int usage_error(const char *fmt, const char *arg) {
  fputs("gstat: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'gstat --help' for more information.\n", stderr);
  return CLI_EXIT_USAGE;
}

static int print_and_flush(void (*fn)(FILE *)) {
  fn(stdout);
  return fflush(stdout) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

static void version(FILE *f) {
  const char *policy = getenv("OMP_WAIT_POLICY");
  fprintf(f, "gstat %s (libgstat %s)\nOpenMP waits: %s\n", GSTAT_CLI_VERSION,
          gstat_version_string(), policy && *policy ? policy : "the runtime's default");
}

/* OpenMP threads that spin at the end of a parallel region starve when other
 * processes hold the cores (bench/README.md, "Threads on a shared machine"),
 * and libgomp reads OMP_WAIT_POLICY when it loads, before main: unless the
 * user chose a policy, the tool runs itself again with the passive one (the
 * Python package sets it before loading gstat). */
static void prefer_passive_waits(char **argv) {
  const char *policy = getenv("OMP_WAIT_POLICY");
  if (!policy) {
    if (setenv("OMP_WAIT_POLICY", "passive", 1) == 0) execv("/proc/self/exe", argv);
    unsetenv("OMP_WAIT_POLICY"); /* no exec: the runtime keeps its default */
    return;
  }
  if (!strcasecmp(policy, "passive")) gstat_set_passive_waits(1);
}

int main(int argc, char **argv) {
  prefer_passive_waits(argv);
  if (argc < 2) {
    help(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) return print_and_flush(help);
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) return print_and_flush(version);
  if (!strcmp(cmd, "pca")) {
    for (int i = 2; i < argc; i++) { /* --distributed: the MPI path (mpirun -np N gstat pca ...) */
      if (strcmp(argv[i], "--distributed")) continue;
#ifdef GSTAT_CLI_MPI
      return pca_mpi_main(argc - 1, argv + 1);
#else
      return usage_error("%s: this gstat was built without MPI", "--distributed");
#endif
    }
    return pca_main(argc - 1, argv + 1);
  }
  if (!strcmp(cmd, "spectral")) return spectral_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "help")) {
    if (argc == 2) return print_and_flush(help);
    if (!strcmp(argv[2], "pca")) return print_and_flush(pca_help);
    if (!strcmp(argv[2], "spectral")) return print_and_flush(spectral_help);
    return usage_error("no command '%s'", argv[2]);
  }
  if (cmd[0] == '-') return usage_error("unknown option '%s'", cmd);
  return usage_error("unknown command '%s'", cmd);
}
