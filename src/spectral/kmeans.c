/* k-means: greedy k-means++ seeding (2 + ln k candidates per centre, as
 * scikit-learn), Lloyd iterations with scikit-learn's stopping rule (centre
 * shift <= tol * mean column variance, or labels unchanged), empty clusters
 * moved to the points farthest from their centres; best inertia of n_init
 * runs. Serial and deterministic for a seed. */
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "spectral/spectral_internal.h"

static double dist2(const double *a, const double *b, int64_t dim) {
  double s = 0;
  for (int64_t c = 0; c < dim; c++) {
    double t = a[c] - b[c];
    s += t * t;
  }
  return s;
}

size_t gstat_i_kmeans_scratch(int64_t n, int64_t dim, int64_t k) {
  return (size_t)(2 * k * dim + 6 * n + k + 8);
}

typedef struct km {
  const double *X;
  int64_t n, dim, k;
  double *centers, *next, *closest, *trial, *best_trial, *dist, *count;
  int64_t *lab;
} km;

/* Index whose cumulative weight first exceeds r (the last positive one on rounding). */
static int64_t pick(const double *w, int64_t n, double r) {
  double acc = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++) {
    if (w[i] > 0) last = i;
    acc += w[i];
    if (acc > r) return i;
  }
  return last;
}

static void seed_plus_plus(km *m, gstat_i_rng *rng) {
  int64_t n = m->n, dim = m->dim;
  int64_t trials = 2 + (int64_t)log((double)m->k);
  int64_t first = (int64_t)(gstat_i_rng_uniform(rng) * (double)n);
  memcpy(m->centers, m->X + first * dim, sizeof(double) * (size_t)dim);
  double pot = 0;
  for (int64_t i = 0; i < n; i++) pot += m->closest[i] = dist2(m->X + i * dim, m->centers, dim);
  for (int64_t c = 1; c < m->k; c++) {
    double best_pot = INFINITY;
    int64_t best = 0;
    for (int64_t t = 0; t < trials; t++) {
      int64_t cand = pot > 0 ? pick(m->closest, n, gstat_i_rng_uniform(rng) * pot)
                             : (int64_t)(gstat_i_rng_uniform(rng) * (double)n);
      double p = 0;
      for (int64_t i = 0; i < n; i++) {
        double d = dist2(m->X + i * dim, m->X + cand * dim, dim);
        m->trial[i] = d < m->closest[i] ? d : m->closest[i];
        p += m->trial[i];
      }
      if (p < best_pot) {
        best_pot = p;
        best = cand;
        double *t2 = m->best_trial;
        m->best_trial = m->trial;
        m->trial = t2;
      }
    }
    memcpy(m->centers + c * dim, m->X + best * dim, sizeof(double) * (size_t)dim);
    double *t2 = m->closest;
    m->closest = m->best_trial;
    m->best_trial = t2;
    pot = best_pot;
  }
}

/* Nearest centre of every point (ties: the lower index); returns the inertia. */
static double assign(km *m) {
  double total = 0;
  for (int64_t i = 0; i < m->n; i++) {
    const double *x = m->X + i * m->dim;
    int64_t arg = 0;
    double best = dist2(x, m->centers, m->dim);
    for (int64_t c = 1; c < m->k; c++) {
      double d = dist2(x, m->centers + c * m->dim, m->dim);
      if (d < best) {
        best = d;
        arg = c;
      }
    }
    m->lab[i] = arg;
    m->dist[i] = best;
    total += best;
  }
  return total;
}

/* New centres; empty clusters take the farthest points. Returns the shift. */
static double update(km *m) {
  int64_t dim = m->dim, k = m->k;
  memset(m->next, 0, sizeof(double) * (size_t)(k * dim));
  memset(m->count, 0, sizeof(double) * (size_t)k);
  for (int64_t i = 0; i < m->n; i++) {
    double *c = m->next + m->lab[i] * dim;
    for (int64_t a = 0; a < dim; a++) c[a] += m->X[i * dim + a];
    m->count[m->lab[i]] += 1;
  }
  for (int64_t c = 0; c < k; c++) {
    if (m->count[c] > 0) {
      for (int64_t a = 0; a < dim; a++) m->next[c * dim + a] /= m->count[c];
      continue;
    }
    int64_t far = -1;
    for (int64_t i = 0; i < m->n; i++)
      if (m->dist[i] >= 0 && (far < 0 || m->dist[i] > m->dist[far])) far = i;
    if (far < 0) far = 0;
    m->dist[far] = -1; /* taken */
    memcpy(m->next + c * dim, m->X + far * dim, sizeof(double) * (size_t)dim);
  }
  double shift = 0;
  for (int64_t c = 0; c < k * dim; c++) {
    double t = m->next[c] - m->centers[c];
    shift += t * t;
  }
  double *t = m->centers;
  m->centers = m->next;
  m->next = t;
  return shift;
}

void gstat_i_kmeans(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                    int64_t *labels, double *inertia, int64_t *iterations, double *scratch) {
  km m = {X, n, dim, opt->k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  double *s = scratch;
  m.centers = s, s += opt->k * dim;
  m.next = s, s += opt->k * dim;
  m.closest = s, s += n;
  m.trial = s, s += n;
  m.best_trial = s, s += n;
  m.dist = s, s += n;
  m.count = s, s += opt->k;
  m.lab = (int64_t *)s, s += n;
  /* the tolerance is relative to the data's spread, as scikit-learn's */
  double var = 0;
  for (int64_t a = 0; a < dim; a++) {
    double mean = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) mean += X[i * dim + a];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) ss += (X[i * dim + a] - mean) * (X[i * dim + a] - mean);
    var += ss / (double)n;
  }
  double tol = dim > 0 ? opt->tol * var / (double)dim : 0;
  double best = INFINITY;
  *iterations = 0;
  for (int64_t r = 0; r < opt->n_init; r++) {
    gstat_i_rng rng;
    gstat_i_rng_seed(&rng, opt->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(r + 1)));
    seed_plus_plus(&m, &rng);
    int64_t it = 0;                     /* Lloyd updates done */
    int64_t *prev = (int64_t *)m.trial; /* trial is free after seeding */
    while (it < opt->max_iter) {
      if (it > 0) memcpy(prev, m.lab, sizeof(int64_t) * (size_t)n);
      assign(&m);
      if (it > 0 && memcmp(prev, m.lab, sizeof(int64_t) * (size_t)n) == 0) break; /* strict */
      it++;
      if (update(&m) <= tol) break;
    }
    double total = assign(&m);
    if (total < best) {
      best = total;
      memcpy(labels, m.lab, sizeof(int64_t) * (size_t)n);
      *iterations = it;
    }
  }
  *inertia = best;
}

void gstat_i_relabel(int64_t *labels, int64_t n, int64_t k, int64_t *map) {
  for (int64_t c = 0; c < k; c++) map[c] = -1;
  int64_t next = 0;
  for (int64_t i = 0; i < n; i++) {
    if (map[labels[i]] < 0) map[labels[i]] = next++;
    labels[i] = map[labels[i]];
  }
}

double gstat_i_inertia(const double *X, int64_t n, int64_t dim, const int64_t *labels, int64_t k,
                       double *scratch) {
  double *mean = scratch, *count = scratch + k * dim;
  memset(scratch, 0, sizeof(double) * (size_t)(k * (dim + 1)));
  for (int64_t i = 0; i < n; i++) {
    for (int64_t a = 0; a < dim; a++) mean[labels[i] * dim + a] += X[i * dim + a];
    count[labels[i]] += 1;
  }
  for (int64_t c = 0; c < k; c++)
    for (int64_t a = 0; a < dim; a++)
      if (count[c] > 0) mean[c * dim + a] /= count[c];
  double total = 0;
  for (int64_t i = 0; i < n; i++) total += dist2(X + i * dim, mean + labels[i] * dim, dim);
  return total;
}
