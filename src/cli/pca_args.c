/* Options and help of `gstat pca` (see pca_args.h). */
#include "pca_args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "commands.h"

/* In pieces: C11 compilers need only take string literals of 4095 characters. */
static const char *const HELP[] = {
    "Usage: gstat pca [OPTIONS] FILE\n"
    "\n"
    "Principal component analysis of the numeric table in FILE (CSV or TSV; '-'\n"
    "reads standard input): rows are observations, columns are variables. Prints\n"
    "the variance explained by each component as a table on standard output.\n"
    "\n"
    "Input:\n"
    "  -d, --delimiter C      field delimiter: one character, or tab, comma,\n"
    "                         semicolon, space (default: detected from the first\n"
    "                         line: tab if it has one, else comma, else semicolon)\n"
    "      --header           the first row holds column names\n"
    "      --no-header        the first row is data\n"
    "                         (default: a first row holding no number is a header)\n"
    "      --missing MODE     rows with a missing value (empty field, NA, N/A, NaN):\n"
    "                         complete (default): left out of the fit, NA scores,\n"
    "                           their number reported on stderr;\n"
    "                         error: stop at the first one (file:line:column)\n"
    "Model:\n"
    "  -k, --n-components N   number of components (default: all, min(rows, columns));\n"
    "                         --components names the output FILE below\n"
    "      --variance F       keep the fewest components whose cumulative explained\n"
    "                         variance ratio exceeds F, 0 < F < 1 (not with -k)\n"
    "      --center           subtract the column means (default)\n"
    "      --no-center        do not center the columns\n"
    "      --scale            divide each column by its standard deviation\n"
    "                         (PCA of the correlation matrix, as R's prcomp(scale.=TRUE))\n"
    "      --no-scale         do not scale (default)\n"
    "      --whiten           scale the scores to unit variance\n"
    "      --method M         auto (default), covariance, gram or randomized;\n"
    "                         see Methods below\n"
    "      --seed N           seed of the randomized method (default 0)\n"
    "Computation:\n"
    "      --backend B        auto (default: a GPU when usable and worth it), cpu, cuda\n"
    "      --threads N        CPU threads (default 0: OMP_NUM_THREADS or all cores)\n"
    "      --max-memory SIZE  the auto method reads inputs of up to SIZE bytes of\n"
    "                         data (8 per value) into memory and streams larger ones;\n"
    "                         suffix K, M or G (default 1G)\n"
    "      --chunk-rows N     rows read per chunk (default: about 4 MiB of values)\n",
    "Output:\n"
    "  -o, --output FILE      write the summary table to FILE instead of stdout\n"
    "      --components FILE  write the components: one row per component, one\n"
    "                         column per input column (sklearn's components_)\n"
    "      --scores FILE      write the scores: one row per data row of the input,\n"
    "                         one column per component\n"
    "      --format F         csv or json, for the summary and the files above\n"
    "                         (default: the summary as an aligned text table, the\n"
    "                         files as CSV)\n"
    "      --plot FILE.svg    draw a scree plot and the PC1/PC2 score scatter as SVG\n"
    "                         (at most 5000 points, evenly sampled; with one\n"
    "                         component, a histogram of the PC1 scores)\n"
    "      --color-by COLUMN  colour the --plot scatter by COLUMN (a header name,\n"
    "                         or a number from 1), e.g. a species or class column;\n"
    "                         it is a label, not data: left out of the PCA\n"
    "  -v, --verbose          report shape, method, backend and timing on stderr\n"
    "  -h, --help             show this help and exit\n"
    "An output FILE of '-' is standard output; the summary is then left out\n"
    "unless -o names a file for it.\n"
    "\n",
    "Methods:\n"
    "  covariance  eigendecomposition of the p x p covariance matrix. The input is\n"
    "              streamed in chunks, using O(chunk + p^2) memory, so inputs larger\n"
    "              than memory work. Scores and the plot take a second pass over the\n"
    "              file (standard input, a pipe or a FIFO is copied to a temporary\n"
    "              file for it, in $TMPDIR).\n"
    "  gram        eigendecomposition of the n x n Gram matrix, for p > n. Reads the\n"
    "              whole input into memory.\n"
    "  randomized  randomized range finder (Halko et al.) for k much smaller than\n"
    "              min(n, p); needs -k. Reads the whole input into memory.\n"
    "  auto        an input of up to --max-memory is read into memory and the\n"
    "              library chooses by shape (randomized when k < min(n, p)/10 and\n"
    "              min(n, p) > 1000, covariance when p <= n, else gram); a larger\n"
    "              input is streamed with the covariance method.\n"
    "\n"
    "Input format: UTF-8 text, one row per line (LF or CRLF), fields optionally in\n"
    "double quotes (\"\" for a quote inside); blank lines are skipped; numbers are\n"
    "decimal with '.' as the decimal point. An error in the input stops the run\n"
    "with FILE:LINE:COLUMN: reason on stderr.\n"
    "\n"
    "Environment: OMP_NUM_THREADS (CPU threads), GSTAT_CUDA_MODULE (path of the\n"
    "CUDA backend module), TMPDIR (temporary copy of standard input).\n"
    "\n"
    "Exit status: 0 success, 1 bad input data or a failed computation, 2 bad\n"
    "command line.\n"
    "\n"
    "Examples:\n"
    "  gstat pca data.csv\n"
    "  gstat pca -k 2 --scale --scores scores.csv --plot pca.svg data.csv\n"
    "  gstat pca --variance 0.95 --format json data.tsv > summary.json\n"
    "  gstat pca -k 3 --components - --format json data.csv\n"
    "  zcat big.csv.gz | gstat pca --method covariance -k 10 --scores scores.csv -\n",
};

void pca_help(FILE *f) {
  for (size_t i = 0; i < sizeof HELP / sizeof HELP[0]; i++) fputs(HELP[i], f);
}

/* usage errors name this subcommand */
#define usage(...) cli_usage("pca", __VA_ARGS__)

static int parse_size(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  double mult = 1;
  if (end == s || errno || !(v > 0)) return -1;
  if (*end == 'K' || *end == 'k')
    mult = 1024.0, end++;
  else if (*end == 'M' || *end == 'm')
    mult = 1048576.0, end++;
  else if (*end == 'G' || *end == 'g')
    mult = 1073741824.0, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end != '\0' || v * mult > 9.0e18) return -1;
  *out = (int64_t)(v * mult);
  return *out > 0 ? 0 : -1;
}

enum opt_id {
  O_DELIM,
  O_HEADER,
  O_NO_HEADER,
  O_MISSING,
  O_K,
  O_VARIANCE,
  O_CENTER,
  O_NO_CENTER,
  O_SCALE,
  O_NO_SCALE,
  O_WHITEN,
  O_METHOD,
  O_SEED,
  O_BACKEND,
  O_THREADS,
  O_MAX_MEMORY,
  O_CHUNK_ROWS,
  O_OUTPUT,
  O_COMPONENTS,
  O_SCORES,
  O_FORMAT,
  O_PLOT,
  O_COLOR_BY,
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
    {"delimiter", 'd', 1, O_DELIM},
    {"header", 0, 0, O_HEADER},
    {"no-header", 0, 0, O_NO_HEADER},
    {"missing", 0, 1, O_MISSING},
    {"n-components", 'k', 1, O_K},
    {"variance", 0, 1, O_VARIANCE},
    {"center", 0, 0, O_CENTER},
    {"no-center", 0, 0, O_NO_CENTER},
    {"scale", 0, 0, O_SCALE},
    {"no-scale", 0, 0, O_NO_SCALE},
    {"whiten", 0, 0, O_WHITEN},
    {"method", 0, 1, O_METHOD},
    {"seed", 0, 1, O_SEED},
    {"backend", 0, 1, O_BACKEND},
    {"threads", 0, 1, O_THREADS},
    {"max-memory", 0, 1, O_MAX_MEMORY},
    {"chunk-rows", 0, 1, O_CHUNK_ROWS},
    {"output", 'o', 1, O_OUTPUT},
    {"components", 0, 1, O_COMPONENTS},
    {"scores", 0, 1, O_SCORES},
    {"format", 0, 1, O_FORMAT},
    {"plot", 0, 1, O_PLOT},
    {"color-by", 0, 1, O_COLOR_BY},
    {"verbose", 'v', 0, O_VERBOSE},
    {"help", 'h', 0, O_HELP},
};
#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

static int set_delimiter(pca_args *a, const char *v) {
  return cli_delimiter("pca", v, &a->delimiter);
}

static int apply(pca_args *a, const opt_spec *o, const char *v, const char *shown) {
  int64_t i64;
  int idx;
  static const char *const methods[] = {"auto", "covariance", "gram", "randomized"};
  static const char *const backends[] = {"auto", "cpu", "cuda"};
  static const char *const formats[] = {"csv", "json"};
  static const char *const missing[] = {"complete", "error"};
  switch (o->id) {
    case O_DELIM: return set_delimiter(a, v);
    case O_HEADER: a->header = CSV_HEADER_YES; break;
    case O_NO_HEADER: a->header = CSV_HEADER_NO; break;
    case O_MISSING:
      if (cli_pick("pca", shown, v, missing, 2, &idx)) return CLI_EXIT_USAGE;
      a->missing_error = idx == 1;
      break;
    case O_K:
      if (cli_parse_i64(v, 1, INT64_MAX, &a->k)) {
        return usage("%s: '%s' is not a positive whole number", shown, v);
      }
      break;
    case O_VARIANCE: {
      char *end;
      errno = 0;
      a->variance = strtod(v, &end);
      if (*v == '\0' || *end != '\0' || errno || !(a->variance > 0 && a->variance < 1)) {
        return usage("%s: '%s' is not a fraction strictly between 0 and 1", shown, v);
      }
      break;
    }
    case O_CENTER: a->center = 1; break;
    case O_NO_CENTER: a->center = 0; break;
    case O_SCALE: a->scale = 1; break;
    case O_NO_SCALE: a->scale = 0; break;
    case O_WHITEN: a->whiten = 1; break;
    case O_METHOD:
      if (cli_pick("pca", shown, v, methods, 4, &idx)) return CLI_EXIT_USAGE;
      a->method = idx == 0   ? GSTAT_PCA_AUTO
                  : idx == 1 ? GSTAT_PCA_COVARIANCE_EIGH
                  : idx == 2 ? GSTAT_PCA_GRAM_EIGH
                             : GSTAT_PCA_RANDOMIZED;
      break;
    case O_SEED:
      if (cli_parse_u64(v, &a->seed)) return usage("%s: '%s' is not a whole number >= 0", shown, v);
      break;
    case O_BACKEND:
      if (cli_pick("pca", shown, v, backends, 3, &idx)) return CLI_EXIT_USAGE;
      a->backend = idx == 0   ? GSTAT_BACKEND_AUTO
                   : idx == 1 ? GSTAT_BACKEND_CPU
                              : GSTAT_BACKEND_CUDA;
      break;
    case O_THREADS:
      if (cli_parse_i64(v, 0, 4096, &i64)) {
        return usage("%s: '%s' is not a thread count from 0 to 4096", shown, v);
      }
      a->threads = (int)i64;
      break;
    case O_MAX_MEMORY:
      if (parse_size(v, &a->max_memory)) {
        return usage("%s: '%s' is not a size such as 512M or 2G", shown, v);
      }
      break;
    case O_CHUNK_ROWS:
      if (cli_parse_i64(v, 1, INT64_C(1) << 40, &a->chunk_rows)) {
        return usage("%s: '%s' is not a positive whole number", shown, v);
      }
      break;
    case O_OUTPUT: a->output = v; break;
    case O_COMPONENTS: {
      /* -k/--n-components is the count: a bare number here is almost surely that mistake */
      int64_t dummy;
      if (cli_parse_i64(v, 0, INT64_MAX, &dummy) == 0) {
        return usage(
            "--components takes an output FILE; for the number of components use "
            "-k %s (write ./%s for a file of that name)",
            v, v);
      }
      a->components = v;
      break;
    }
    case O_SCORES: a->scores = v; break;
    case O_FORMAT:
      if (cli_pick("pca", shown, v, formats, 2, &idx)) return CLI_EXIT_USAGE;
      a->format = idx == 0 ? OUT_CSV : OUT_JSON;
      break;
    case O_PLOT: a->plot = v; break;
    case O_COLOR_BY: a->color_by = v; break;
    case O_VERBOSE: a->verbose = 1; break;
    case O_HELP: a->help = 1; break;
  }
  return 0;
}

int pca_parse_args(int argc, char **argv, pca_args *a) {
  memset(a, 0, sizeof *a);
  a->center = 1;
  a->header = CSV_HEADER_AUTO;
  a->max_memory = INT64_C(1) << 30;
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
      for (size_t j = 0; j < N_OPTS; j++) {
        if (strlen(OPTS[j].name) == len && strncmp(OPTS[j].name, arg + 2, len) == 0) o = &OPTS[j];
      }
      if (!o) return usage("unknown option '%.*s'", (int)len + 2, arg);
      snprintf(shown, sizeof shown, "--%s", o->name);
      if (eq && !o->takes_value) return usage("option '%s' takes no value", shown);
      if (eq) value = eq + 1;
    } else if (!only_operands && arg[0] == '-' && arg[1] != '\0') {
      for (size_t j = 0; j < N_OPTS; j++) {
        if (OPTS[j].short_name && OPTS[j].short_name == arg[1]) o = &OPTS[j];
      }
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
  if (!a->input) return usage("no input FILE (use - for standard input)");
  if (a->k && a->variance > 0) return usage("-k and --variance exclude each other");
  if (a->variance > 0 && a->method == GSTAT_PCA_RANDOMIZED) {
    return usage("--variance needs an exact method (auto, covariance or gram), not randomized");
  }
  if (a->method == GSTAT_PCA_RANDOMIZED && a->k == 0) {
    return usage("--method randomized needs -k (the number of components)");
  }
  if (a->color_by && !a->plot)
    return usage("--color-by colours the --plot scatter: give --plot too");
  if (cli_is_stdout(a->components) + cli_is_stdout(a->scores) + cli_is_stdout(a->plot) > 1) {
    return usage("only one of --components, --scores and --plot can write to standard output");
  }
  if (cli_is_stdout(a->output) &&
      (cli_is_stdout(a->components) || cli_is_stdout(a->scores) || cli_is_stdout(a->plot))) {
    return usage("-o - and another output both write to standard output");
  }
  return 0;
}
