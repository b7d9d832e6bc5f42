/* SVG scree plot + score scatter, written by hand (see svg_plot.h). */
#include "svg_plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1000
#define HEIGHT 470
#define MAX_BARS 50
#define HIST_BINS 24
#define COLOR_BAR "#4c72b0"
#define COLOR_LINE "#dd8452"

typedef struct axis {
  double lo, hi, step; /* data range, a whole number of steps */
  double p0, p1;       /* pixel coordinates of lo and hi */
} axis;

typedef struct panel {
  double left, right, top, bottom; /* plot area in pixels */
} panel;

void svg_write_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&apos;", f); break;
      default:
        /* control characters are not allowed in XML 1.0 text */
        if ((unsigned char)*s >= 0x20 || *s == '\t')
          fputc(*s, f);
        else
          fputc('?', f);
    }
  }
}

static double nice_step(double raw) {
  double mag = pow(10.0, floor(log10(raw)));
  double r = raw / mag;
  return (r < 1.5 ? 1.0 : r < 3.0 ? 2.0 : r < 7.0 ? 5.0 : 10.0) * mag;
}

/* An axis over [lo, hi] with about `ticks` round steps. */
static void axis_fit(axis *a, double lo, double hi, int ticks, double p0, double p1) {
  if (!(hi > lo)) { /* one value (or none): widen around it */
    double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1.0;
    if (!isfinite(d)) d = 1.0;
    lo -= d;
    hi += d;
  }
  a->step = nice_step((hi - lo) / ticks);
  a->lo = floor(lo / a->step) * a->step;
  a->hi = ceil(hi / a->step) * a->step;
  a->p0 = p0;
  a->p1 = p1;
}

static double axis_map(const axis *a, double v) {
  return a->p0 + (v - a->lo) / (a->hi - a->lo) * (a->p1 - a->p0);
}

static int axis_ticks(const axis *a) {
  return (int)floor((a->hi - a->lo) / a->step + 0.5);
}

static double axis_tick(const axis *a, int i) {
  double v = a->lo + i * a->step;
  return fabs(v) < a->step * 1e-9 ? 0.0 : v; /* no "-0" or 1e-17 labels */
}

static void text(FILE *f, double x, double y, const char *anchor, const char *extra,
                 const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor, extra ? " " : "",
          extra ? extra : "");
  svg_write_escaped(f, s);
  fputs("</text>\n", f);
}

static void frame(FILE *f, const panel *pn) {
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
          "stroke=\"#333\"/>\n",
          pn->left, pn->top, pn->right - pn->left, pn->bottom - pn->top);
}

/* Horizontal axis ticks + labels at the bottom, with light vertical grid lines. */
static void x_axis(FILE *f, const panel *pn, const axis *a, const char *label) {
  char b[64];
  for (int i = 0; i <= axis_ticks(a); i++) {
    double v = axis_tick(a, i), x = axis_map(a, v);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", x,
            pn->top, x, pn->bottom);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x,
            pn->bottom, x, pn->bottom + 5);
    snprintf(b, sizeof b, "%g", v);
    text(f, x, pn->bottom + 18, "middle", NULL, b);
  }
  text(f, (pn->left + pn->right) / 2, pn->bottom + 42, "middle", NULL, label);
}

static void y_axis(FILE *f, const panel *pn, const axis *a, const char *label) {
  char b[64];
  for (int i = 0; i <= axis_ticks(a); i++) {
    double v = axis_tick(a, i), y = axis_map(a, v);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
            pn->left, y, pn->right, y);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
            pn->left - 5, y, pn->left, y);
    snprintf(b, sizeof b, "%g", v);
    text(f, pn->left - 8, y + 4, "end", NULL, b);
  }
  double cx = pn->left - 50, cy = (pn->top + pn->bottom) / 2;
  char rot[64];
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", cx, cy);
  text(f, cx, cy, "middle", rot, label);
}

static double finite_or_zero(double v) {
  return isfinite(v) ? v : 0.0;
}

static void scree(FILE *f, const svg_pca_plot *d, const panel *pn) {
  int64_t m = d->k < MAX_BARS ? d->k : MAX_BARS;
  char b[128];
  axis ya;
  axis_fit(&ya, 0.0, 1.0, 5, pn->bottom, pn->top);
  if (m < d->k) {
    snprintf(b, sizeof b, "Scree plot (first %lld of %lld components)", (long long)m,
             (long long)d->k);
  } else {
    snprintf(b, sizeof b, "Scree plot (%lld component%s)", (long long)d->k, d->k == 1 ? "" : "s");
  }
  text(f, (pn->left + pn->right) / 2, pn->top - 26, "middle", "font-weight=\"bold\"", b);
  y_axis(f, pn, &ya, "explained variance ratio");
  double band = (pn->right - pn->left) / (double)(m > 0 ? m : 1);
  int every = (int)((m + 19) / 20); /* at most ~20 tick labels */
  double cum = 0;
  fputs("<g>\n", f);
  for (int64_t i = 0; i < m; i++) {
    double r = finite_or_zero(d->ratio[i]);
    double y = axis_map(&ya, r < 0 ? 0 : r > 1 ? 1 : r);
    fprintf(f,
            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" COLOR_BAR
            "\"><title>PC%lld: %.4g</title></rect>\n",
            pn->left + band * (i + 0.15), y, band * 0.7, pn->bottom - y, (long long)i + 1, r);
    double cx = pn->left + band * (i + 0.5);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", cx,
            pn->bottom, cx, pn->bottom + 5);
    if (i % every == 0) {
      snprintf(b, sizeof b, "%lld", (long long)i + 1);
      text(f, cx, pn->bottom + 18, "middle", NULL, b);
    }
  }
  fputs("</g>\n<polyline fill=\"none\" stroke=\"" COLOR_LINE "\" stroke-width=\"2\" points=\"", f);
  for (int64_t i = 0; i < m; i++) {
    cum += finite_or_zero(d->ratio[i]);
    fprintf(f, "%s%.2f,%.2f", i ? " " : "", pn->left + band * (i + 0.5),
            axis_map(&ya, cum > 1 ? 1 : cum));
  }
  fputs("\"/>\n", f);
  cum = 0;
  for (int64_t i = 0; i < m; i++) {
    cum += finite_or_zero(d->ratio[i]);
    fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\" fill=\"" COLOR_LINE "\"/>\n",
            pn->left + band * (i + 0.5), axis_map(&ya, cum > 1 ? 1 : cum));
  }
  text(f, (pn->left + pn->right) / 2, pn->bottom + 42, "middle", NULL, "principal component");
  frame(f, pn);
  /* legend above the plot area, where no bar or line can be */
  double lx = (pn->left + pn->right) / 2 - 75, ly = pn->top - 16;
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"" COLOR_BAR "\"/>\n",
          lx, ly);
  text(f, lx + 20, ly + 9, "start", NULL, "ratio");
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" COLOR_LINE
          "\" stroke-width=\"2\"/>\n",
          lx + 70, ly + 5, lx + 90, ly + 5);
  text(f, lx + 96, ly + 9, "start", NULL, "cumulative");
}

static void range_of(const double *v, int64_t n, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(v[i])) continue;
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
  if (*lo > *hi) *lo = *hi = 0;
}

static void percent_label(char *b, size_t cap, const svg_pca_plot *d, int i) {
  if (d->k > i && isfinite(d->ratio[i])) {
    snprintf(b, cap, "PC%d score (%.1f%% of variance)", i + 1, 100.0 * d->ratio[i]);
  } else {
    snprintf(b, cap, "PC%d score", i + 1);
  }
}

static void sample_note(FILE *f, const svg_pca_plot *d, const panel *pn, const char *what) {
  char b[160];
  if (d->n_points < d->n_score_rows) {
    snprintf(b, sizeof b, "%s: %lld of %lld rows shown (evenly spaced sample)", what,
             (long long)d->n_points, (long long)d->n_score_rows);
  } else {
    snprintf(b, sizeof b, "%s: %lld rows", what, (long long)d->n_points);
  }
  text(f, (pn->left + pn->right) / 2, pn->top - 8, "middle", "font-size=\"11\"", b);
}

/* Tableau's 10 colours (matplotlib's default cycle): distinct, and known to
 * users of the tools they would otherwise plot with. Groups beyond 10 reuse
 * them. */
static const char *const PALETTE[10] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define COLOR_NONE "#b0b0b0"
#define LEGEND_MAX 12

static const char *group_color(const svg_groups *g, int64_t i) {
  if (!g->group) return COLOR_BAR;
  return g->group[i] < 0 ? COLOR_NONE : PALETTE[g->group[i] % 10];
}

/* The points, one <circle> each, with the group's colour and name (a
 * tooltip) when there are groups. y NULL: x against the point's index. */
static void points(FILE *f, const axis *xa, const axis *ya, const double *x, const double *y,
                   const int64_t *index, int64_t n, const svg_groups *g) {
  fprintf(f, "<g fill-opacity=\"%s\">\n", g->group ? "0.75" : "0.55");
  for (int64_t i = 0; i < n; i++) {
    double yv = y ? y[i] : x[i], xv = y ? x[i] : (double)(index ? index[i] : i);
    if (!isfinite(xv) || !isfinite(yv)) continue;
    fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"", axis_map(xa, xv),
            axis_map(ya, yv), group_color(g, i));
    if (g->group && g->group[i] >= 0 && g->names) {
      fputs("><title>", f);
      svg_write_escaped(f, g->names[g->group[i]]);
      fputs("</title></circle>\n", f);
    } else {
      fputs("/>\n", f);
    }
  }
  fputs("</g>\n", f);
}

/* The legend at the right of a panel: a swatch and the name per group. */
static void legend(FILE *f, const panel *pn, const svg_groups *g) {
  if (!g->group || g->count <= 0) return;
  double x = pn->right + 10, y = pn->top + 4;
  if (g->title) text(f, x, y + 9, "start", "font-weight=\"bold\"", g->title);
  int64_t shown = g->count < LEGEND_MAX ? g->count : LEGEND_MAX;
  for (int64_t i = 0; i < shown; i++) {
    y += 16;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x + 4, y + 5,
            PALETTE[i % 10]);
    text(f, x + 12, y + 9, "start", NULL, g->names ? g->names[i] : "");
  }
  if (shown < g->count) {
    char b[64];
    snprintf(b, sizeof b, "+ %lld more", (long long)(g->count - shown));
    text(f, x, y + 25, "start", NULL, b);
  }
}

static void scatter(FILE *f, const svg_pca_plot *d, const panel *pn) {
  double x0, x1, y0, y1;
  char lx[96], ly[96];
  range_of(d->pc1, d->n_points, &x0, &x1);
  range_of(d->pc2, d->n_points, &y0, &y1);
  axis xa, ya;
  axis_fit(&xa, x0, x1, 6, pn->left, pn->right);
  axis_fit(&ya, y0, y1, 6, pn->bottom, pn->top);
  text(f, (pn->left + pn->right) / 2, pn->top - 26, "middle", "font-weight=\"bold\"",
       "Scores: PC1 vs PC2");
  sample_note(f, d, pn, "points");
  percent_label(lx, sizeof lx, d, 0);
  percent_label(ly, sizeof ly, d, 1);
  x_axis(f, pn, &xa, lx);
  y_axis(f, pn, &ya, ly);
  points(f, &xa, &ya, d->pc1, d->pc2, NULL, d->n_points, &d->groups);
  frame(f, pn);
  legend(f, pn, &d->groups);
}

/* One component only: no second axis to scatter on, so show PC1's distribution. */
static void histogram(FILE *f, const svg_pca_plot *d, const panel *pn) {
  double x0, x1;
  char lx[96];
  int64_t count[HIST_BINS] = {0}, top = 1;
  range_of(d->pc1, d->n_points, &x0, &x1);
  axis xa, ya;
  axis_fit(&xa, x0, x1, 6, pn->left, pn->right);
  double w = (xa.hi - xa.lo) / HIST_BINS;
  for (int64_t i = 0; i < d->n_points; i++) {
    if (!isfinite(d->pc1[i])) continue;
    int b = (int)((d->pc1[i] - xa.lo) / w);
    b = b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS - 1 : b;
    if (++count[b] > top) top = count[b];
  }
  axis_fit(&ya, 0, (double)top, 5, pn->bottom, pn->top);
  if (ya.step < 1) { /* counts are whole numbers */
    ya.step = 1;
    ya.hi = ceil(ya.hi);
  }
  text(f, (pn->left + pn->right) / 2, pn->top - 26, "middle", "font-weight=\"bold\"",
       "PC1 scores (one component: no PC2 to scatter)");
  sample_note(f, d, pn, "histogram");
  percent_label(lx, sizeof lx, d, 0);
  x_axis(f, pn, &xa, lx);
  y_axis(f, pn, &ya, "rows");
  for (int b = 0; b < HIST_BINS; b++) {
    double xl = axis_map(&xa, xa.lo + b * w), xr = axis_map(&xa, xa.lo + (b + 1) * w);
    double y = axis_map(&ya, (double)count[b]);
    fprintf(f,
            "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"" COLOR_BAR
            "\" stroke=\"white\"/>\n",
            xl, y, xr - xl, pn->bottom - y);
  }
  frame(f, pn);
}

static void svg_begin(FILE *f, int width) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" "
          "font-size=\"12\">\n",
          width, HEIGHT, width, HEIGHT);
}

/* The document's start: the svg element, its <title> ("gstat COMMAND:
 * TITLE") and the white background. */
static void svg_head(FILE *f, int width, const char *command, const char *title) {
  svg_begin(f, width);
  fprintf(f, "<title>gstat %s: ", command);
  svg_write_escaped(f, title);
  fputs("</title>\n", f);
  fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, HEIGHT);
}

int svg_write_spectral_plot(FILE *f, const svg_spectral_plot *d) {
  const int width = 760;
  svg_head(f, width, "spectral", d->title);
  fprintf(f,
          "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" "
          "font-weight=\"bold\">Spectral embedding of ",
          width / 2.0 - 50);
  svg_write_escaped(f, d->title);
  fprintf(f, " (%lld nodes, %lld clusters)</text>\n", (long long)d->n_nodes, (long long)d->k);
  panel pn = {90, 610, 80, 400};
  double x0, x1, y0, y1;
  axis xa, ya;
  if (d->y) {
    range_of(d->x, d->n_points, &x0, &x1);
    range_of(d->y, d->n_points, &y0, &y1);
  } else { /* one informative eigenvector: against the node number */
    x0 = 0;
    x1 = d->n_nodes > 1 ? (double)(d->n_nodes - 1) : 1;
    range_of(d->x, d->n_points, &y0, &y1);
  }
  axis_fit(&xa, x0, x1, 6, pn.left, pn.right);
  axis_fit(&ya, y0, y1, 6, pn.bottom, pn.top);
  char note[128];
  if (d->n_points < d->n_nodes)
    snprintf(note, sizeof note, "%lld of %lld nodes shown (evenly spaced sample)",
             (long long)d->n_points, (long long)d->n_nodes);
  else
    snprintf(note, sizeof note, "%lld nodes, coloured by cluster", (long long)d->n_points);
  text(f, (pn.left + pn.right) / 2, pn.top - 8, "middle", "font-size=\"11\"", note);
  x_axis(f, &pn, &xa, d->y ? d->x_label : "node");
  y_axis(f, &pn, &ya, d->y ? d->y_label : d->x_label);
  points(f, &xa, &ya, d->x, d->y, d->node, d->n_points, &d->groups);
  frame(f, &pn);
  legend(f, &pn, &d->groups);
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}

int svg_write_pca_plot(FILE *f, const svg_pca_plot *d) {
  int width = WIDTH + (d->groups.group ? 140 : 0); /* room for the legend */
  svg_head(f, width, "pca", d->title);
  /* the title is written unformatted: truncating it could split a UTF-8 character */
  fprintf(f,
          "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" "
          "font-weight=\"bold\">PCA of ",
          WIDTH / 2.0);
  svg_write_escaped(f, d->title);
  fprintf(f, " (%lld rows x %lld columns)</text>\n", (long long)d->n_samples,
          (long long)d->n_features);
  panel left = {80, 480, 80, 400}, right = {580, 980, 80, 400};
  scree(f, d, &left);
  if (d->n_points > 0 && d->pc2) {
    scatter(f, d, &right);
  } else if (d->n_points > 0) {
    histogram(f, d, &right);
  } else {
    text(f, (right.left + right.right) / 2, (right.top + right.bottom) / 2, "middle", NULL,
         "no scores to plot");
  }
  fputs("</svg>\n", f);
  return ferror(f) ? -1 : 0;
}
