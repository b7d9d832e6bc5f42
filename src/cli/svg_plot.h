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
} svg_pca_plot;

/* Write the SVG document; 0, or -1 when writing failed. */
int svg_write_pca_plot(FILE *f, const svg_pca_plot *d);

/* XML text with &, <, >, " and ' escaped. */
void svg_write_escaped(FILE *f, const char *s);

#endif /* GSTAT_CLI_SVG_PLOT_H */
