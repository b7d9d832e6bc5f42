/*
 * The PCA plot as a stand-alone SVG file: a scree plot (explained variance
 * ratio bars and the cumulative ratio as a line) on the left, the scores of
 * the first two components as a scatter on the right (with one component
 * only: a histogram of the PC1 scores instead).
 */
#ifndef GSTAT_CLI_SVG_PLOT_H
#define GSTAT_CLI_SVG_PLOT_H

#include <stdint.h>
#include <stdio.h>

/* Points coloured by group (a label column, clusters): group[i] is point
 * i's group, 0 .. count-1, or -1 for none (drawn grey); names[g] labels
 * group g in the legend. group NULL: one colour. */
typedef struct svg_groups {
  const int32_t *group;
  int64_t count;
  const char *const *names;
  const char *title; /* legend title, e.g. the column name */
} svg_groups;

typedef struct svg_pca_plot {
  const char *title; /* e.g. the input file name; escaped for XML */
  int64_t n_samples; /* rows the PCA was fitted on */
  int64_t n_features;
  int64_t k;           /* components */
  const double *ratio; /* explained variance ratio of each component */
  /* Score points (a sample of the rows when there are many): pc1[i], and
   * pc2[i] when k >= 2 (pc2 NULL otherwise). */
  int64_t n_points;
  const double *pc1, *pc2;
  int64_t n_score_rows; /* rows the points were sampled from */
  svg_groups groups;    /* --color-by: the label of each point */
} svg_pca_plot;

/* `gstat spectral --plot`: the spectral embedding of the nodes as a
 * scatter (x against y, or x against the node index when y is NULL),
 * coloured by cluster. */
typedef struct svg_spectral_plot {
  const char *title;
  int64_t n_nodes, k;
  int64_t n_points;    /* points drawn (a sample of the nodes when many) */
  const int64_t *node; /* node number of each point */
  const double *x, *y;
  const char *x_label, *y_label;
  svg_groups groups;
} svg_spectral_plot;

int svg_write_spectral_plot(FILE *f, const svg_spectral_plot *d);

/* Write the SVG document; 0, or -1 when writing failed. */
int svg_write_pca_plot(FILE *f, const svg_pca_plot *d);

/* XML text with &, <, >, " and ' escaped. */
void svg_write_escaped(FILE *f, const char *s);

#endif /* GSTAT_CLI_SVG_PLOT_H */
