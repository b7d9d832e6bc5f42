/* Command line of `gstat spectral`: the options, their parsing and the help text. */
#ifndef GSTAT_CLI_SPECTRAL_ARGS_H
#define GSTAT_CLI_SPECTRAL_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "edge_reader.h"
#include "gstat/core.h"
#include "gstat/graph.h"
#include "gstat/spectral.h"
#include "output.h"

typedef enum spectral_input { IN_EDGES = 0, IN_POINTS = 1, IN_BATCH = 2 } spectral_input;

typedef struct spectral_args {
  const char *input; /* "-" = standard input */
  spectral_input kind;
  /* input */
  edge_ids ids;
  int64_t nodes; /* 0 = max id + 1 */
  int header;
  char delimiter; /* points: 0 = detect */
  int symmetrize; /* -1 = the input's default (edges: max, knn: mean) */
  /* affinity (points) */
  gstat_affinity_kind affinity;
  double gamma;
  int64_t neighbors;
  double eps;
  int gamma_set, neighbors_set, eps_set;
  gstat_knn_algorithm knn_algorithm; /* knn kinds: exact (AUTO) unless asked */
  int knn_algorithm_set;
  /* clustering */
  int64_t k; /* 0 with eigengap */
  int eigengap;
  int64_t max_clusters; /* 0 = the library's default */
  gstat_laplacian_kind laplacian;
  gstat_assign_labels assign;
  int64_t n_init;
  uint64_t seed;
  int normalize_rows, drop_first;
  /* computation */
  gstat_backend backend;
  int threads;
  /* output */
  const char *output, *embedding, *eigenvalues; /* NULL = not written (output: stdout) */
  const char *plot;                             /* SVG of the embedding, NULL = none */
  out_format format;
  int verbose;
  int help;
} spectral_args;

/* Parse argv[1..argc-1]. Returns 0, or prints a usage error on stderr and
 * returns CLI_EXIT_USAGE. a->help set: print the help and stop. */
int spectral_parse_args(int argc, char **argv, spectral_args *a);

#endif /* GSTAT_CLI_SPECTRAL_ARGS_H */
