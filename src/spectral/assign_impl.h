/*
 * The per-graph steps of spectral clustering that the CPU engine and the CUDA
 * module share, inline for host and device code (GSTAT_HD): embedding,
 * eigengap, k-means (greedy k-means++ seeding with 2 + ln k candidates per
 * centre, as scikit-learn; Lloyd iterations with scikit-learn's stopping rule:
 * centre shift <= tol * mean column variance, or labels unchanged; empty
 * clusters moved to the points farthest from their centres; best inertia of
 * n_init runs), renumbering and inertia. Serial and deterministic for a seed:
 * a graph gets the same labels from either backend, up to the rounding of its
 * eigenvectors. The library's entry points are in spectral_internal.h.
 */
#ifndef GSTAT_SPECTRAL_ASSIGN_IMPL_H
#define GSTAT_SPECTRAL_ASSIGN_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/hostdevice.h"
#include "core/rng_impl.h"
#include "spectral/cluster_qr_impl.h"
#include "graph/weights_impl.h"
#include "gstat/spectral.h"

/* Called on the host before each Lloyd iteration with (done, total)
 * iterations of all runs; false stops k-means (cancellation). */
typedef bool (*gstat_i_km_tick)(void *arg, int64_t done, int64_t total);

typedef struct gstat_i_kmeans_opt {
  int64_t k, n_init, max_iter;
  double tol;
  uint64_t seed;
  gstat_i_km_tick tick; /* NULL: none (batches, the device) */
  void *tick_arg;
} gstat_i_kmeans_opt;

/* Doubles of scratch the k-means needs. */
GSTAT_HD static inline size_t gstat_i_kmeans_scratch_impl(int64_t n, int64_t dim, int64_t k) {
  return (size_t)(2 * k * dim + 6 * n + k + 8);
}

GSTAT_HD static inline double gstat_i_sc_dist2(const double *a, const double *b, int64_t dim) {
  double s = 0;
  for (int64_t c = 0; c < dim; c++) {
    double t = a[c] - b[c];
    s += t * t;
  }
  return s;
}

typedef struct gstat_i_km {
  const double *X;
  int64_t n, dim, k;
  double *centers, *next, *closest, *trial, *best_trial, *dist, *count;
  int64_t *lab;
} gstat_i_km;

/* Index whose cumulative weight first exceeds r (the last positive one on rounding). */
GSTAT_HD static inline int64_t gstat_i_km_pick(const double *w, int64_t n, double r) {
  double acc = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++) {
    if (w[i] > 0) last = i;
    acc += w[i];
    if (acc > r) return i;
  }
  return last;
}

/* gstat_i_km_pick for many targets over the same weights: the running sums
 * once (each bitwise the walk's total at that index; sums may be w itself;
 * returns the walk's fallback, the last index of a positive weight), then a
 * bisection per target for the first total above it (totals never
 * decrease). */
GSTAT_HD static inline int64_t gstat_i_km_running_sums(const double *w, int64_t n, double *sums) {
  double acc = 0;
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++) {
    if (w[i] > 0) last = i;
    sums[i] = acc += w[i];
  }
  return last;
}

GSTAT_HD static inline int64_t gstat_i_km_pick_sorted(const double *sums, int64_t n, int64_t last,
                                                      double r) {
  if (n == 0 || !(sums[n - 1] > r)) return last;
  int64_t lo = 0, hi = n - 1; /* the answer lies in [lo, hi] */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (sums[mid] > r)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

GSTAT_HD static inline void gstat_i_km_seed(gstat_i_km *m, uint64_t *rng) {
  int64_t n = m->n, dim = m->dim;
  int64_t trials = 2 + (int64_t)log((double)m->k);
  int64_t first = (int64_t)(gstat_i_xoshiro_uniform(rng) * (double)n);
  memcpy(m->centers, m->X + first * dim, sizeof(double) * (size_t)dim);
  double pot = 0;
  for (int64_t i = 0; i < n; i++)
    pot += m->closest[i] = gstat_i_sc_dist2(m->X + i * dim, m->centers, dim);
  for (int64_t c = 1; c < m->k; c++) {
    double best_pot = INFINITY;
    int64_t best = 0;
    for (int64_t t = 0; t < trials; t++) {
      int64_t cand = pot > 0 ? gstat_i_km_pick(m->closest, n, gstat_i_xoshiro_uniform(rng) * pot)
                             : (int64_t)(gstat_i_xoshiro_uniform(rng) * (double)n);
      double p = 0;
      for (int64_t i = 0; i < n; i++) {
        double d = gstat_i_sc_dist2(m->X + i * dim, m->X + cand * dim, dim);
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
GSTAT_HD static inline double gstat_i_km_assign(gstat_i_km *m) {
  double total = 0;
  for (int64_t i = 0; i < m->n; i++) {
    const double *x = m->X + i * m->dim;
    int64_t arg = 0;
    double best = gstat_i_sc_dist2(x, m->centers, m->dim);
    for (int64_t c = 1; c < m->k; c++) {
      double d = gstat_i_sc_dist2(x, m->centers + c * m->dim, m->dim);
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

/* The point farthest from its centre not taken yet (dist >= 0; the first
 * on ties, point 0 when none is left), marked taken: an empty cluster's new
 * centre. */
GSTAT_HD static inline int64_t gstat_i_km_take_farthest(double *dist, int64_t n) {
  int64_t far = -1;
  for (int64_t i = 0; i < n; i++)
    if (dist[i] >= 0 && (far < 0 || dist[i] > dist[far])) far = i;
  if (far < 0) far = 0;
  dist[far] = -1;
  return far;
}

/* The squared shift between two sets of centres (kd values each). */
GSTAT_HD static inline double gstat_i_km_shift(const double *next, const double *centers,
                                               int64_t kd) {
  double shift = 0;
  for (int64_t c = 0; c < kd; c++) {
    double t = next[c] - centers[c];
    shift += t * t;
  }
  return shift;
}

/* New centres; empty clusters take the farthest points. Returns the shift. */
GSTAT_HD static inline double gstat_i_km_update(gstat_i_km *m) {
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
    int64_t far = gstat_i_km_take_farthest(m->dist, m->n);
    memcpy(m->next + c * dim, m->X + far * dim, sizeof(double) * (size_t)dim);
  }
  double shift = gstat_i_km_shift(m->next, m->centers, k * dim);
  double *t = m->centers;
  m->centers = m->next;
  m->next = t;
  return shift;
}

/* Whether two labelings are equal (memcmp, which device code lacks). */
GSTAT_HD static inline bool gstat_i_km_same(const int64_t *a, const int64_t *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* The run's state over scratch (gstat_i_kmeans_scratch_impl doubles). */
GSTAT_HD static inline gstat_i_km gstat_i_km_over(const double *X, int64_t n, int64_t dim,
                                                  int64_t k, double *scratch) {
  gstat_i_km m = {X, n, dim, k, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  double *s = scratch;
  m.centers = s, s += k * dim;
  m.next = s, s += k * dim;
  m.closest = s, s += n;
  m.trial = s, s += n;
  m.best_trial = s, s += n;
  m.dist = s, s += n;
  m.count = s, s += k;
  m.lab = (int64_t *)s;
  return m;
}

/* Lloyd's stopping shift: tol relative to the data's spread, as scikit-learn's. */
GSTAT_HD static inline double gstat_i_km_tol(const double *X, int64_t n, int64_t dim, double tol) {
  double var = 0;
  for (int64_t a = 0; a < dim; a++) {
    double mean = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) mean += X[i * dim + a];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) ss += (X[i * dim + a] - mean) * (X[i * dim + a] - mean);
    var += ss / (double)n;
  }
  return dim > 0 ? tol * var / (double)dim : 0;
}

/* Run r (its own seed): labels in m->lab, Lloyd updates in *iters; returns
 * the inertia, or sets *stopped when opt->tick stopped it (tick: whether
 * this caller reports). */
GSTAT_HD static inline double gstat_i_km_run(gstat_i_km *m, const gstat_i_kmeans_opt *opt,
                                             int64_t r, double tol, bool tick, int64_t *iters,
                                             bool *stopped) {
  uint64_t rng[4];
  gstat_i_xoshiro_seed(rng, opt->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(r + 1)));
  gstat_i_km_seed(m, rng);
  int64_t it = 0;                      /* Lloyd updates done */
  int64_t *prev = (int64_t *)m->trial; /* trial is free after seeding */
  *stopped = false;
  while (it < opt->max_iter) {
#ifndef __CUDA_ARCH__
    if (tick && opt->tick &&
        !opt->tick(opt->tick_arg, r * opt->max_iter + it, opt->n_init * opt->max_iter)) {
      *stopped = true;
      return NAN;
    }
#else
    (void)tick;
#endif
    if (it > 0) memcpy(prev, m->lab, sizeof(int64_t) * (size_t)m->n);
    gstat_i_km_assign(m);
    if (it > 0 && gstat_i_km_same(prev, m->lab, m->n)) break; /* strict */
    it++;
    if (gstat_i_km_update(m) <= tol) break;
  }
  *iters = it;
  return gstat_i_km_assign(m);
}

/* Whether run r's inertia replaces the best so far: the first run always
 * counts (an embedding whose squared distances overflow, degrees near
 * underflow, has an infinite or NaN inertia, and labels must be written all
 * the same), a later one when strictly smaller. */
GSTAT_HD static inline bool gstat_i_km_better(int64_t r, double total, double best) {
  return r == 0 || total < best;
}

/* Returns false when opt->tick stopped it (labels then incomplete). */
GSTAT_HD static inline bool gstat_i_kmeans_impl(const double *X, int64_t n, int64_t dim,
                                                const gstat_i_kmeans_opt *opt, int64_t *labels,
                                                double *inertia, int64_t *iterations,
                                                double *scratch) {
  gstat_i_km m = gstat_i_km_over(X, n, dim, opt->k, scratch);
  double tol = gstat_i_km_tol(X, n, dim, opt->tol), best = INFINITY;
  *iterations = 0;
  for (int64_t r = 0; r < opt->n_init; r++) {
    int64_t it = 0;
    bool stopped = false;
    double total = gstat_i_km_run(&m, opt, r, tol, true, &it, &stopped);
    if (stopped) return false;
    if (gstat_i_km_better(r, total, best)) {
      best = total;
      memcpy(labels, m.lab, sizeof(int64_t) * (size_t)n);
      *iterations = it;
    }
  }
  *inertia = best;
  return true;
}

GSTAT_HD static inline void gstat_i_relabel_impl(int64_t *labels, int64_t n, int64_t k,
                                                 int64_t *map) {
  for (int64_t c = 0; c < k; c++) map[c] = -1;
  int64_t next = 0;
  for (int64_t i = 0; i < n; i++) {
    if (map[labels[i]] < 0) map[labels[i]] = next++;
    labels[i] = map[labels[i]];
  }
}

GSTAT_HD static inline double gstat_i_inertia_impl(const double *X, int64_t n, int64_t dim,
                                                   const int64_t *labels, int64_t k,
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
  for (int64_t i = 0; i < n; i++)
    total += gstat_i_sc_dist2(X + i * dim, mean + labels[i] * dim, dim);
  return total;
}

GSTAT_HD static inline void gstat_i_embedding_impl(int64_t n, const double *V, int64_t ldv,
                                                   int64_t first, int64_t dim, const double *d,
                                                   bool normalize_rows, double *E) {
  for (int64_t c = 0; c < dim; c++) {
    const double *v = V + (first + c) * ldv;
    int64_t arg = 0;
    double big = -1;
    for (int64_t i = 0; i < n; i++) {
      double x = d ? v[i] * gstat_i_inv_sqrt_degree(d[i]) : v[i];
      E[i * dim + c] = x;
      if (fabs(x) > big) {
        big = fabs(x);
        arg = i;
      }
    }
    if (n > 0 && E[arg * dim + c] < 0)
      for (int64_t i = 0; i < n; i++) E[i * dim + c] = -E[i * dim + c];
  }
  if (!normalize_rows) return;
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < dim; c++) s += E[i * dim + c] * E[i * dim + c];
    if (s > 0) {
      s = 1.0 / sqrt(s);
      for (int64_t c = 0; c < dim; c++) E[i * dim + c] *= s;
    }
  }
}

GSTAT_HD static inline int64_t gstat_i_eigengap_impl(const double *w, int64_t kmax) {
  int64_t best = 1;
  double gap = -INFINITY;
  for (int64_t k = 1; k <= kmax; k++)
    if (w[k] - w[k - 1] > gap) {
      gap = w[k] - w[k - 1];
      best = k;
    }
  return best;
}

/* Why a graph failed on its own (WHY_NONFINITE: a batch graph with NaN/Inf
 * weights, skipped rather than failing the whole batch). */
enum {
  WHY_OK = 0,
  WHY_SPLIT,
  WHY_REJECT,
  WHY_TOO_MANY,
  WHY_EIGH,
  WHY_QR,
  WHY_NONFINITE,
  WHY_CANCELED
};

/* The per-graph record: k used, components, k-means iterations, failure,
 * embedding columns, whether it was processed, inertia; the k-means tick of
 * a single graph (progress and cancellation, host only). */
/* A host k-means over all n_init runs with gstat_i_kmeans_impl's contract
 * and result (arg: the tick's argument, the context). */
typedef bool (*gstat_i_km_runs)(void *arg, const double *X, int64_t n, int64_t dim,
                                const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                                int64_t *iterations, double *scratch);

typedef struct gstat_i_sc_rec {
  int64_t k, comps, iters, why, dim, done;
  double inertia;
  gstat_i_km_tick tick;
  void *tick_arg;
  gstat_i_km_runs runs; /* host only, NULL: gstat_i_kmeans_impl (one graph: runs in parallel) */
} gstat_i_sc_rec;

/* Embedding columns for k clusters. */
GSTAT_HD static inline int64_t gstat_i_sc_dim(const gstat_spectral_options *o, int64_t k) {
  return o->n_components > 0 ? o->n_components : k;
}

/* Eigenvalues the engine keeps for a graph of n nodes asking for k (0: eigengap). */
GSTAT_HD static inline int64_t gstat_i_sc_eig_count_impl(const gstat_spectral_options *o, int64_t n,
                                                         int64_t k) {
  if (n == 0) return 0;
  int64_t drop = o->drop_first != 0;
  int64_t m = k > 0 ? gstat_i_sc_dim(o, k) + drop
                    : (o->max_clusters + 1 > o->n_components + drop ? o->max_clusters + 1
                                                                    : o->n_components + drop);
  return m < n ? m : n;
}

/* Doubles of work gstat_i_sc_assign_impl needs for n nodes, dim embedding
 * columns and k clusters: the larger of k-means', cluster-QR's (dim = k) and
 * the inertia's. */
GSTAT_HD static inline size_t gstat_i_sc_assign_work_impl(int64_t n, int64_t dim, int64_t k) {
  size_t km = gstat_i_kmeans_scratch_impl(n, dim, k), qr = gstat_i_cluster_qr_scratch_impl(n, dim);
  size_t inert = (size_t)(k * (dim + 1) + k), w = km > qr ? km : qr;
  return w > inert ? w : inert;
}

/* Why a graph with comps connected components fails before its eigh, when
 * asking for k clusters (0: eigengap), or WHY_OK. */
GSTAT_HD static inline int64_t gstat_i_sc_components_rule(const gstat_spectral_options *o,
                                                          int64_t k, int64_t comps) {
  if (o->disconnected == GSTAT_DISCONNECTED_REJECT && comps > 1) return WHY_REJECT;
  if (k > 0 && comps > k && o->disconnected != GSTAT_DISCONNECTED_PROCEED) return WHY_SPLIT;
  return WHY_OK;
}

/*
 * From the smallest eigenpairs (V: n x ?, column-major, ld n; w ascending,
 * gstat_i_sc_eig_count_impl of them) and degrees d to labels: eigenvalues
 * into eig_out (or not, NULL), eigengap k when k = 0, embedding into E (n x
 * dim, row-major), then unless embed_only: k-means or cluster-QR (o->assign),
 * renumbering, inertia. r->comps and r->why come from the caller. work:
 * gstat_i_sc_assign_work_impl(n, dim, k) doubles.
 */
GSTAT_HD static inline void gstat_i_sc_assign_impl(const gstat_spectral_options *o, int64_t n,
                                                   int64_t k, const double *V, const double *w,
                                                   const double *d, gstat_i_sc_rec *r,
                                                   int64_t *labels, double *eig_out, double *E,
                                                   bool embed_only, double *work) {
  int64_t drop = o->drop_first != 0;
  int64_t neig = gstat_i_sc_eig_count_impl(o, n, k);
  r->done = 1;
  if (eig_out)
    for (int64_t i = 0; i < neig; i++) eig_out[i] = w[i];
  if (r->why != WHY_OK) return;
  if (k == 0) {
    int64_t kmax = o->max_clusters < n - drop ? o->max_clusters : n - drop;
    if (kmax > neig - 1) kmax = neig - 1;
    k = gstat_i_eigengap_impl(w, kmax);
    if (k < r->comps) { /* never fewer clusters than components */
      if (r->comps > kmax) {
        r->why = WHY_TOO_MANY;
        return;
      }
      k = r->comps;
    }
  }
  r->k = k;
  int64_t dim = gstat_i_sc_dim(o, k);
  r->dim = dim;
  gstat_i_embedding_impl(n, V, n, drop, dim, o->laplacian == GSTAT_LAPLACIAN_RANDOM_WALK ? d : NULL,
                         o->normalize_rows != 0, E);
  if (embed_only) return;
  if (k == n) { /* every node its own cluster */
    for (int64_t i = 0; i < n; i++) labels[i] = i;
  } else if (o->assign == GSTAT_ASSIGN_CLUSTER_QR) {
    if (!gstat_i_cluster_qr_impl(E, n, k, labels, work)) {
      r->why = WHY_QR;
      return;
    }
  } else {
    gstat_i_kmeans_opt ko = {k, o->n_init, o->max_iter, o->tol, o->seed, r->tick, r->tick_arg};
    double inertia;
    bool done;
#ifndef __CUDA_ARCH__
    done = r->runs ? r->runs(r->tick_arg, E, n, dim, &ko, labels, &inertia, &r->iters, work)
                   : gstat_i_kmeans_impl(E, n, dim, &ko, labels, &inertia, &r->iters, work);
#else
    done = gstat_i_kmeans_impl(E, n, dim, &ko, labels, &inertia, &r->iters, work);
#endif
    if (!done) {
      r->why = WHY_CANCELED;
      return;
    }
  }
  gstat_i_relabel_impl(labels, n, k, (int64_t *)work);
  r->inertia = gstat_i_inertia_impl(E, n, dim, labels, k, work);
}

/* One graph of a padded batch (the backends' sc_assign): its failure before
 * the eigh (components, info != 0 from the eigh), then the assignment from
 * the first m = gstat_i_sc_eig_count_impl pairs (Vd n x m, wd m, doubles);
 * labels -1 for a graph that failed. E: n x m, work: the k-means scratch. */
GSTAT_HD static inline void gstat_i_sc_assign_graph(const gstat_spectral_options *o, int64_t n,
                                                    int64_t k, int64_t info, const double *Vd,
                                                    const double *wd, const double *d,
                                                    gstat_i_sc_rec *r, int64_t *labels,
                                                    double *eig_out, double *E, double *work) {
  if (n == 0) return; /* k 0, no labels */
  r->why = gstat_i_sc_components_rule(o, k, r->comps);
  if (info != 0 && r->why == WHY_OK) r->why = WHY_EIGH;
  gstat_i_sc_assign_impl(o, n, k, Vd, wd, d, r, labels, eig_out, E, false, work);
  if (r->why != WHY_OK)
    for (int64_t i = 0; i < n; i++) labels[i] = -1;
}

#endif /* GSTAT_SPECTRAL_ASSIGN_IMPL_H */
