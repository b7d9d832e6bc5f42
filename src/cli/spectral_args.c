/* Options and help of `gstat spectral` (see spectral_args.h). */
#include "spectral_args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "commands.h"

/* In pieces: C11 compilers need only take string literals of 4095 characters. */
static const char *const HELP[] = {
    "Usage: gstat spectral [OPTIONS] (-k N | --eigengap) FILE\n"
    "       gstat spectral --points [--affinity A] (-k N | --eigengap) FILE\n"
    "       gstat spectral --batch (-k N | --eigengap) FILE\n"
    "\n"
    "Spectral clustering (as scikit-learn's SpectralClustering: the smallest\n"
    "eigenvectors of a graph Laplacian, then k-means on them) of the graph given\n"
    "as an edge list in FILE, of the points of a CSV/TSV table (--points), or of\n"
    "every graph of a batch file (--batch). '-' reads standard input. Writes each\n"
    "node's cluster (0 .. k-1, numbered in order of first appearance) to standard\n"
    "output: CSV with a header (node,cluster; point,cluster; graph,node,cluster)\n"
    "or JSON.\n"
    "\n"
    "Input:\n"
    "      --points           FILE is a numeric CSV/TSV table, one point per row\n"
    "      --batch            FILE holds many graphs, one edge per line:\n"
    "                         graph_id src dst [weight]\n"
    "      --node-ids MODE    int (default): node ids are integers >= 0 and a graph\n"
    "                         has max id + 1 nodes (ids in no edge are isolated\n"
    "                         nodes; more than 65536 of those need --nodes);\n"
    "                         label: any names, numbered in order of first\n"
    "                         appearance (output shows the names)\n"
    "      --nodes N          int ids: every graph has N nodes (an id >= N is an\n"
    "                         error)\n"
    "      --header           the first line holds column names (skipped);\n"
    "                         --points: default detects a header\n"
    "  -d, --delimiter C      --points: field delimiter (default: detected)\n"
    "      --symmetrize MODE  how a_ij and a_ji combine: max (edge lists' default:\n"
    "                         each undirected edge may be listed once or both ways),\n"
    "                         mean (knn's default, scikit-learn's (A + A^T) / 2),\n"
    "                         sum, or check (the list must give both directions\n"
    "                         with equal weights)\n"
    "Affinity (--points):\n"
    "      --affinity A       rbf (default): exp(-gamma ||x - y||^2) between all\n"
    "                         points; knn: k nearest neighbours (weight 1, a point\n"
    "                         is its own first neighbour, as scikit-learn);\n"
    "                         mutual-knn: an edge when each is among the other's\n"
    "                         neighbours; epsilon: an edge when ||x - y|| <= eps\n"
    "      --gamma G          rbf: gamma > 0 (default 1, as SpectralClustering)\n"
    "      --neighbors N      knn, mutual-knn: neighbours per point (default 10)\n"
    "      --knn-algorithm A  knn, mutual-knn: auto (default), kd-tree or brute (all\n"
    "                         exact), or nndescent: approximate (recall >= 0.99 on\n"
    "                         blobs), seeded by --seed\n"
    "      --eps R            epsilon: the radius, > 0 (required)\n",
    "Clustering:\n"
    "  -k, --clusters N       number of clusters (for every graph of a batch)\n"
    "      --eigengap         choose k per graph by the largest gap between the\n"
    "                         Laplacian's smallest eigenvalues (never fewer than\n"
    "                         the graph's connected components)\n"
    "      --max-clusters M   --eigengap: largest k considered (default 10)\n"
    "      --laplacian L      rw (default: random walk, scikit-learn's), sym\n"
    "                         (symmetric normalized) or unnormalized (D - A)\n"
    "      --assign A         kmeans (default: k-means++, best of --n-init runs) or\n"
    "                         cluster-qr (Damle et al.: no randomness)\n"
    "      --n-init N         k-means restarts (default 10)\n"
    "      --seed N           seed of k-means++ (default 0)\n"
    "      --normalize-rows   scale embedding rows to unit length (Ng-Jordan-Weiss)\n"
    "      --drop-first       leave the first eigenvector out of the embedding\n"
    "Computation:\n"
    "      --backend B        auto (default), cpu, cuda\n"
    "      --threads N        CPU threads (default 0: OMP_NUM_THREADS or all cores)\n"
    "Output:\n"
    "  -o, --output FILE      write the labels to FILE instead of standard output\n"
    "      --embedding FILE   write the spectral embedding: one row per node, one\n"
    "                         column per eigenvector (not with --batch)\n"
    "      --eigenvalues FILE write the smallest Laplacian eigenvalues\n"
    "                         (with --batch: graph,index,eigenvalue)\n"
    "      --plot FILE.svg    draw the spectral embedding as an SVG scatter, coloured\n"
    "                         by cluster: its first two informative eigenvectors\n"
    "                         (the constant first one of a connected graph is\n"
    "                         skipped; one left: against the node number)\n"
    "                         (not with --batch)\n"
    "      --format F         csv (default) or json, for all of the above\n"
    "  -v, --verbose          report size, k, components, inertia, timing on stderr\n"
    "  -h, --help             show this help and exit\n"
    "\n",
    "Edge lists: one edge per line, src dst [weight], fields separated by commas\n"
    "or by spaces/tabs; '#' starts a comment; blank lines are skipped. Weights\n"
    "are decimal numbers >= 0 (default 1); every line has the same number of\n"
    "fields. Duplicate lines add up; self-loops are ignored. Graph ids (--batch)\n"
    "are names; a graph's lines need not be contiguous; output lists graphs in\n"
    "order of first appearance. A graph with more connected components than k\n"
    "is an error (no well-defined answer). An error in the input stops the run\n"
    "with FILE:LINE:COLUMN: reason (FILE:LINE: reason for a whole line).\n"
    "\n"
    "Exit status: 0 success, 1 bad input data or a failed computation, 2 bad\n"
    "command line.\n"
    "\n"
    "Examples:\n"
    "  gstat spectral -k 2 data/karate.edges\n"
    "  gstat spectral --node-ids label --eigengap --format json graph.tsv\n"
    "  gstat spectral --points --affinity knn --neighbors 10 -k 3 points.csv\n"
    "  gstat spectral --batch -k 2 --eigenvalues eig.csv graphs.txt > labels.csv\n",
};

void spectral_help(FILE *f) {
  for (size_t i = 0; i < sizeof HELP / sizeof HELP[0]; i++) fputs(HELP[i], f);
}

/* usage errors name this subcommand */
#define usage(...) cli_usage("spectral", __VA_ARGS__)

enum opt_id {
  O_POINTS,
  O_BATCH,
  O_NODE_IDS,
  O_NODES,
  O_HEADER,
  O_DELIM,
  O_SYM,
  O_AFFINITY,
  O_GAMMA,
  O_NEIGHBORS,
  O_KNN_ALGORITHM,
  O_EPS,
  O_K,
  O_EIGENGAP,
  O_MAX_CLUSTERS,
  O_LAPLACIAN,
  O_ASSIGN,
  O_N_INIT,
  O_SEED,
  O_NORMALIZE,
  O_DROP_FIRST,
  O_BACKEND,
  O_THREADS,
  O_OUTPUT,
  O_EMBEDDING,
  O_EIGENVALUES,
  O_PLOT,
  O_FORMAT,
  O_VERBOSE,
  O_HELP
};

typedef struct opt_spec {
  const char *name;
  char short_name;
  int takes_value;
  enum opt_id id;
} opt_spec;

static const opt_spec OPTS[] = {
    {"points", 0, 0, O_POINTS},
    {"batch", 0, 0, O_BATCH},
    {"node-ids", 0, 1, O_NODE_IDS},
    {"nodes", 0, 1, O_NODES},
    {"header", 0, 0, O_HEADER},
    {"delimiter", 'd', 1, O_DELIM},
    {"symmetrize", 0, 1, O_SYM},
    {"affinity", 0, 1, O_AFFINITY},
    {"gamma", 0, 1, O_GAMMA},
    {"neighbors", 0, 1, O_NEIGHBORS},
    {"knn-algorithm", 0, 1, O_KNN_ALGORITHM},
    {"eps", 0, 1, O_EPS},
    {"clusters", 'k', 1, O_K},
    {"eigengap", 0, 0, O_EIGENGAP},
    {"max-clusters", 0, 1, O_MAX_CLUSTERS},
    {"laplacian", 0, 1, O_LAPLACIAN},
    {"assign", 0, 1, O_ASSIGN},
    {"n-init", 0, 1, O_N_INIT},
    {"seed", 0, 1, O_SEED},
    {"normalize-rows", 0, 0, O_NORMALIZE},
    {"drop-first", 0, 0, O_DROP_FIRST},
    {"backend", 0, 1, O_BACKEND},
    {"threads", 0, 1, O_THREADS},
    {"output", 'o', 1, O_OUTPUT},
    {"embedding", 0, 1, O_EMBEDDING},
    {"eigenvalues", 0, 1, O_EIGENVALUES},
    {"plot", 0, 1, O_PLOT},
    {"format", 0, 1, O_FORMAT},
    {"verbose", 'v', 0, O_VERBOSE},
    {"help", 'h', 0, O_HELP},
};
#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

static int set_delimiter(spectral_args *a, const char *v) {
  return cli_delimiter("spectral", v, &a->delimiter);
}

/* Each apply_ part handles its options and answers NOT_MINE for the others. */
enum { NOT_MINE = -1 };

/* The input's kind and reading. */
static int apply_input(spectral_args *a, const opt_spec *o, const char *v, const char *shown) {
  int idx;
  static const char *const ids[] = {"int", "label"};
  static const char *const syms[] = {"check", "max", "mean", "sum"};
  switch (o->id) {
    case O_POINTS:
      if (a->kind == IN_BATCH) return usage("--points and --batch exclude each other");
      a->kind = IN_POINTS;
      return 0;
    case O_BATCH:
      if (a->kind == IN_POINTS) return usage("--points and --batch exclude each other");
      a->kind = IN_BATCH;
      return 0;
    case O_NODE_IDS:
      if (cli_pick("spectral", shown, v, ids, 2, &idx)) return CLI_EXIT_USAGE;
      a->ids = idx == 0 ? EDGE_IDS_INT : EDGE_IDS_LABEL;
      return 0;
    case O_NODES:
      if (cli_parse_i64(v, 1, EDGE_MAX_ID + 1, &a->nodes))
        return usage("%s: '%s' is not a node count from 1 to %lld", shown, v,
                     (long long)EDGE_MAX_ID + 1);
      return 0;
    case O_HEADER: a->header = 1; return 0;
    case O_DELIM: return set_delimiter(a, v);
    case O_SYM:
      if (cli_pick("spectral", shown, v, syms, 4, &idx)) return CLI_EXIT_USAGE;
      a->symmetrize = idx; /* the order of gstat_symmetrize */
      return 0;
    default: return NOT_MINE;
  }
}

/* The graph built from points. */
static int apply_graph(spectral_args *a, const opt_spec *o, const char *v, const char *shown) {
  int idx;
  static const char *const affs[] = {"rbf", "knn", "mutual-knn", "epsilon"};
  static const char *const knn_algs[] = {"auto", "kd-tree", "brute", "nndescent"};
  switch (o->id) {
    case O_AFFINITY:
      if (cli_pick("spectral", shown, v, affs, 4, &idx)) return CLI_EXIT_USAGE;
      a->affinity = (gstat_affinity_kind)idx;
      return 0;
    case O_GAMMA:
      if (cli_parse_positive(v, &a->gamma)) return usage("%s: '%s' is not a number > 0", shown, v);
      a->gamma_set = 1;
      return 0;
    case O_NEIGHBORS:
      if (cli_parse_i64(v, 1, INT64_C(1) << 31, &a->neighbors))
        return usage("%s: '%s' is not a positive whole number", shown, v);
      a->neighbors_set = 1;
      return 0;
    case O_KNN_ALGORITHM:
      if (cli_pick("spectral", shown, v, knn_algs, 4, &idx)) return CLI_EXIT_USAGE;
      a->knn_algorithm = (gstat_knn_algorithm)idx; /* the order of gstat_knn_algorithm */
      a->knn_algorithm_set = 1;
      return 0;
    case O_EPS:
      if (cli_parse_positive(v, &a->eps)) return usage("%s: '%s' is not a number > 0", shown, v);
      a->eps_set = 1;
      return 0;
    default: return NOT_MINE;
  }
}

/* The clustering itself. */
static int apply_clustering(spectral_args *a, const opt_spec *o, const char *v, const char *shown) {
  int idx;
  static const char *const laps[] = {"unnormalized", "sym", "rw"};
  static const char *const assigns[] = {"kmeans", "cluster-qr"};
  switch (o->id) {
    case O_K:
      if (cli_parse_i64(v, 1, INT64_MAX, &a->k))
        return usage("%s: '%s' is not a positive whole number", shown, v);
      return 0;
    case O_EIGENGAP: a->eigengap = 1; return 0;
    case O_MAX_CLUSTERS:
      if (cli_parse_i64(v, 1, INT64_C(1) << 31, &a->max_clusters))
        return usage("%s: '%s' is not a positive whole number", shown, v);
      return 0;
    case O_LAPLACIAN:
      if (cli_pick("spectral", shown, v, laps, 3, &idx)) return CLI_EXIT_USAGE;
      a->laplacian = idx == 0   ? GSTAT_LAPLACIAN_UNNORMALIZED
                     : idx == 1 ? GSTAT_LAPLACIAN_SYMMETRIC
                                : GSTAT_LAPLACIAN_RANDOM_WALK;
      return 0;
    case O_ASSIGN:
      if (cli_pick("spectral", shown, v, assigns, 2, &idx)) return CLI_EXIT_USAGE;
      a->assign = idx == 0 ? GSTAT_ASSIGN_KMEANS : GSTAT_ASSIGN_CLUSTER_QR;
      return 0;
    case O_N_INIT:
      if (cli_parse_i64(v, 1, GSTAT_SPECTRAL_MAX_N_INIT, &a->n_init))
        return usage("%s: '%s' is not a whole number from 1 to 100000", shown, v);
      return 0;
    case O_SEED:
      if (cli_parse_u64(v, &a->seed)) return usage("%s: '%s' is not a whole number >= 0", shown, v);
      return 0;
    case O_NORMALIZE: a->normalize_rows = 1; return 0;
    case O_DROP_FIRST: a->drop_first = 1; return 0;
    default: return NOT_MINE;
  }
}

/* Where it runs and what it writes. */
static int apply_run(spectral_args *a, const opt_spec *o, const char *v, const char *shown) {
  int64_t i64;
  int idx;
  static const char *const backends[] = {"auto", "cpu", "cuda"};
  static const char *const formats[] = {"csv", "json"};
  switch (o->id) {
    case O_BACKEND:
      if (cli_pick("spectral", shown, v, backends, 3, &idx)) return CLI_EXIT_USAGE;
      a->backend = idx == 0   ? GSTAT_BACKEND_AUTO
                   : idx == 1 ? GSTAT_BACKEND_CPU
                              : GSTAT_BACKEND_CUDA;
      return 0;
    case O_THREADS:
      if (cli_parse_i64(v, 0, 4096, &i64))
        return usage("%s: '%s' is not a thread count from 0 to 4096", shown, v);
      a->threads = (int)i64;
      return 0;
    case O_OUTPUT: a->output = v; return 0;
    case O_EMBEDDING: a->embedding = v; return 0;
    case O_EIGENVALUES: a->eigenvalues = v; return 0;
    case O_PLOT: a->plot = v; return 0;
    case O_FORMAT:
      if (cli_pick("spectral", shown, v, formats, 2, &idx)) return CLI_EXIT_USAGE;
      a->format = idx == 0 ? OUT_CSV : OUT_JSON;
      return 0;
    case O_VERBOSE: a->verbose = 1; return 0;
    case O_HELP: a->help = 1; return 0;
    default: return NOT_MINE;
  }
}

static int apply(spectral_args *a, const opt_spec *o, const char *v, const char *shown) {
  int r = apply_input(a, o, v, shown);
  if (r == NOT_MINE) r = apply_graph(a, o, v, shown);
  if (r == NOT_MINE) r = apply_clustering(a, o, v, shown);
  if (r == NOT_MINE) r = apply_run(a, o, v, shown);
  return r == NOT_MINE ? 0 : r;
}

/* Checks of option combinations after everything is parsed. */
static int check(spectral_args *a) {
  if (!a->input) return usage("no input FILE (use - for standard input)");
  if (a->k && a->eigengap) return usage("-k and --eigengap exclude each other");
  if (!a->k && !a->eigengap)
    return usage("give the number of clusters (-k N) or --eigengap to choose it");
  if (a->max_clusters && !a->eigengap) return usage("--max-clusters needs --eigengap");
  if (a->kind == IN_POINTS) {
    if (a->ids != EDGE_IDS_INT || a->nodes)
      return usage("--node-ids and --nodes are for edge lists, not --points");
    if (a->affinity == GSTAT_AFFINITY_EPSILON && !a->eps_set)
      return usage("--affinity epsilon needs --eps (the radius)");
    if (a->gamma_set && a->affinity != GSTAT_AFFINITY_RBF)
      return usage("--gamma is for --affinity rbf");
    if (a->eps_set && a->affinity != GSTAT_AFFINITY_EPSILON)
      return usage("--eps is for --affinity epsilon");
    if (a->neighbors_set && a->affinity != GSTAT_AFFINITY_KNN &&
        a->affinity != GSTAT_AFFINITY_MUTUAL_KNN)
      return usage("--neighbors is for --affinity knn or mutual-knn");
    if (a->knn_algorithm_set && a->affinity != GSTAT_AFFINITY_KNN &&
        a->affinity != GSTAT_AFFINITY_MUTUAL_KNN)
      return usage("--knn-algorithm is for --affinity knn or mutual-knn");
    if (a->symmetrize >= 0 && a->affinity != GSTAT_AFFINITY_KNN)
      return usage("--symmetrize with --points is for --affinity knn");
    if (a->symmetrize == GSTAT_SYM_CHECK) return usage("--affinity knn cannot --symmetrize check");
  } else {
    if (a->affinity != GSTAT_AFFINITY_RBF || a->gamma_set || a->neighbors_set || a->eps_set ||
        a->knn_algorithm_set)
      return usage("--affinity, --gamma, --neighbors, --knn-algorithm and --eps need --points");
    if (a->delimiter) return usage("--delimiter is for --points (edge lists split by themselves)");
    if (a->nodes && a->ids == EDGE_IDS_LABEL) return usage("--nodes is for --node-ids int");
  }
  if (a->kind == IN_BATCH && a->embedding)
    return usage("--embedding is for a single graph, not --batch");
  if (a->kind == IN_BATCH && a->plot) return usage("--plot is for a single graph, not --batch");
  int to_stdout =
      cli_is_stdout(a->embedding) + cli_is_stdout(a->eigenvalues) + cli_is_stdout(a->plot);
  if (to_stdout > 1 || (to_stdout && (!a->output || cli_is_stdout(a->output))))
    return usage("only one output can go to standard output (the labels unless -o names a file)");
  return 0;
}

int spectral_parse_args(int argc, char **argv, spectral_args *a) {
  memset(a, 0, sizeof *a);
  a->symmetrize = -1;
  a->laplacian = GSTAT_LAPLACIAN_RANDOM_WALK;
  a->gamma = 1.0;
  a->neighbors = 10;
  int only_operands = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const opt_spec *o = NULL;
    const char *value = NULL;
    char shown[64];
    if (!only_operands && strcmp(arg, "--") == 0) {
      only_operands = 1;
      continue;
    }
    if (!only_operands && arg[0] == '-' && arg[1] == '-') {
      const char *eq = strchr(arg + 2, '=');
      size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
      for (size_t j = 0; j < N_OPTS; j++)
        if (strlen(OPTS[j].name) == len && strncmp(OPTS[j].name, arg + 2, len) == 0) o = &OPTS[j];
      if (!o) return usage("unknown option '%.*s'", (int)len + 2, arg);
      snprintf(shown, sizeof shown, "--%s", o->name);
      if (eq && !o->takes_value) return usage("option '%s' takes no value", shown);
      if (eq) value = eq + 1;
    } else if (!only_operands && arg[0] == '-' && arg[1] != '\0') {
      for (size_t j = 0; j < N_OPTS; j++)
        if (OPTS[j].short_name && OPTS[j].short_name == arg[1]) o = &OPTS[j];
      if (!o) return usage("unknown option '-%c'", arg[1]);
      snprintf(shown, sizeof shown, "-%c", o->short_name);
      if (arg[2] != '\0') {
        if (!o->takes_value) return usage("unknown option '%s' (options are not combined)", arg);
        value = arg + 2; /* -k3 */
      }
    } else {
      if (a->input) return usage("one input FILE only (got '%s' and '%s')", a->input, arg);
      a->input = arg;
      continue;
    }
    if (o->takes_value && !value) {
      if (i + 1 >= argc) return usage("option '%s' needs a value", shown);
      value = argv[++i];
    }
    int rc = apply(a, o, value, shown);
    if (rc) return rc;
    if (a->help) return 0;
  }
  return check(a);
}
