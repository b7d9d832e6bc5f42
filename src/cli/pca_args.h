/* Command line of `gstat pca`: the options, their parsing and the help text. */
#ifndef GSTAT_CLI_PCA_ARGS_H
#define GSTAT_CLI_PCA_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "csv_reader.h"
#include "gstat/pca.h"
#include "output.h"

typedef struct pca_args {
  const char *input; /* "-" = standard input */
  /* model */
  int64_t k; /* 0 = all */
  double variance;
  int center, scale, whiten;
  gstat_pca_method method;
  uint64_t seed;
  /* computation */
  gstat_backend backend;
  int threads;
  int64_t max_memory; /* bytes of data the auto method may hold */
  int64_t chunk_rows; /* 0 = about 4 MiB per chunk */
  /* input */
  char delimiter; /* 0 = detect */
  csv_header_mode header;
  int missing_error;
  /* output */
  const char *output, *components, *scores, *plot; /* NULL = not written */
  const char *color_by; /* --plot points coloured by this column (not data), NULL = none */
  out_format format;
  int verbose;
  int help;
} pca_args;

/* Parse argv[1..argc-1]. Returns 0, or prints a usage error on stderr and
 * returns CLI_EXIT_USAGE. a->help set: print the help and stop. */
int pca_parse_args(int argc, char **argv, pca_args *a);

#endif /* GSTAT_CLI_PCA_ARGS_H */
