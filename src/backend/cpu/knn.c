/*
 * Exact k nearest neighbours of host data on the CPU (backend.h's knn
 * primitive): a k-d tree for few dimensions, whose cost grows like n log n
 * on clustered data, and blocked GEMM distances with a bounded heap per row
 * otherwise (the crossover: primitives_cpu.c's rules, bench/README.md).
 * Both keep the k best by (exact float64 squared distance, row index), so
 * ties go to the smaller index (the GEMM's rounded distances only choose the
 * candidates, under a proven error bound), and neither holds more than a
 * block of distances.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/matrix.h"
#include "backend/cpu/knn.h"
#include "backend/dense.h"

/* ---- the k best of a row: a max-heap by (distance, index) ---- */

typedef struct best_k {
  double *d;
  int64_t *j;
  int64_t size, cap;
} best_k;

static inline bool worse(double da, int64_t ja, double db, int64_t jb) {
  return da > db || (da == db && ja > jb);
}

static inline bool full(const best_k *h) {
  return h->size == h->cap;
}

static void swap_at(best_k *h, int64_t a, int64_t b) {
  double td = h->d[a];
  int64_t tj = h->j[a];
  h->d[a] = h->d[b];
  h->j[a] = h->j[b];
  h->d[b] = td;
  h->j[b] = tj;
}

static void sift_down(best_k *h, int64_t at) {
  for (;;) {
    int64_t l = 2 * at + 1, r = l + 1, top = at;
    if (l < h->size && worse(h->d[l], h->j[l], h->d[top], h->j[top])) top = l;
    if (r < h->size && worse(h->d[r], h->j[r], h->d[top], h->j[top])) top = r;
    if (top == at) return;
    swap_at(h, at, top);
    at = top;
  }
}

/* Keep (d, j) if it is among the best cap seen so far. */
static inline void offer(best_k *h, double d, int64_t j) {
  if (h->size < h->cap) {
    int64_t at = h->size++;
    h->d[at] = d;
    h->j[at] = j;
    while (at > 0) {
      int64_t up = (at - 1) / 2;
      if (!worse(h->d[at], h->j[at], h->d[up], h->j[up])) break;
      swap_at(h, at, up);
      at = up;
    }
  } else if (worse(h->d[0], h->j[0], d, j)) {
    h->d[0] = d;
    h->j[0] = j;
    sift_down(h, 0);
  }
}

/* Row i's k slots: the point itself first when include_self, then the best
 * others; finally sorted by index (heapsort: k may be as large as n). */
static best_k row_slots(int64_t i, int64_t k, bool include_self, int64_t *nbr, double *d2) {
  int64_t skip = include_self ? 1 : 0;
  if (include_self) {
    nbr[i * k] = i;
    d2[i * k] = 0.0;
  }
  best_k h = {d2 + i * k + skip, nbr + i * k + skip, 0, k - skip};
  return h;
}

/* Entry `at` of the first `size` sifted down a max-heap by index. */
static void sift_down_by_index(best_k *h, int64_t at, int64_t size) {
  for (;;) {
    int64_t l = 2 * at + 1, r = l + 1, top = at;
    if (l < size && h->j[l] > h->j[top]) top = l;
    if (r < size && h->j[r] > h->j[top]) top = r;
    if (top == at) return;
    swap_at(h, at, top);
    at = top;
  }
}

/* Heapsort by index (indices are distinct): k may be as large as n. */
static void sort_row_by_index(int64_t *j, double *d, int64_t k) {
  best_k h = {d, j, k, k};
  for (int64_t at = k / 2 - 1; at >= 0; at--) sift_down_by_index(&h, at, k);
  for (int64_t end = k - 1; end > 0; end--) {
    swap_at(&h, 0, end);
    sift_down_by_index(&h, 0, end);
  }
}

/* ---- the k-d tree ---- */

enum { KD_LEAF = 32 };

/* Median splits along the widest coordinate; a query descends to the nearer
 * child first and bounds the farther one by its distance to the cut planes
 * crossed, updated per node in O(1) (Arya and Mount's incremental distance). */
typedef struct kd_tree {
  int64_t n, p, ld;
  double *pts;       /* p x ld column-major: the points in tree order (ld = n + KD_LEAF) */
  float *pts32;      /* the same less their mean, in float32 (the leaf filter) */
  double scale;      /* pts32's power-of-two scale */
  double slack;      /* a bound on the distance error of pts32's rounding, scaled */
  int64_t *row;      /* tree position -> row of X */
  int64_t *lo, *hi;  /* a node's positions [lo, hi) */
  int64_t *right;    /* its right child (the left one is node + 1); -1 at a leaf */
  int64_t *min_row;  /* the smallest row in its subtree: ties' pruning */
  int64_t *cut;      /* the coordinate it splits */
  double *left_max;  /* the largest value of it in the left child ... */
  double *right_min; /* ... and the smallest in the right one */
} kd_tree;

typedef struct kd_build {
  kd_tree *t;
  double *R; /* n x p row-major, permuted in place with t->row */
  int64_t next;
} kd_build;

static inline bool key_less(const kd_build *b, int64_t s, int64_t u, int64_t c) {
  double x = b->R[s * b->t->p + c], y = b->R[u * b->t->p + c];
  return x < y || (x == y && b->t->row[s] < b->t->row[u]);
}

static void swap_points(kd_build *b, int64_t s, int64_t u) {
  int64_t p = b->t->p, tr = b->t->row[s];
  b->t->row[s] = b->t->row[u];
  b->t->row[u] = tr;
  for (int64_t c = 0; c < p; c++) {
    double tv = b->R[s * p + c];
    b->R[s * p + c] = b->R[u * p + c];
    b->R[u * p + c] = tv;
  }
}

/* Positions [lo, hi) reordered so that position mid holds the point of rank
 * mid - lo by (coordinate c, row), smaller ones before it (quickselect). */
static void select_median(kd_build *b, int64_t lo, int64_t hi, int64_t mid, int64_t c) {
  while (hi - lo > 1) {
    int64_t m = lo + (hi - lo) / 2; /* median of three as the pivot, moved to hi - 1 */
    if (key_less(b, m, lo, c)) swap_points(b, m, lo);
    if (key_less(b, hi - 1, lo, c)) swap_points(b, hi - 1, lo);
    if (key_less(b, m, hi - 1, c)) swap_points(b, m, hi - 1);
    int64_t store = lo;
    for (int64_t s = lo; s < hi - 1; s++)
      if (key_less(b, s, hi - 1, c)) swap_points(b, s, store++);
    swap_points(b, store, hi - 1);
    if (store == mid) return;
    if (mid < store)
      hi = store;
    else
      lo = store + 1;
  }
}

/* The coordinate of widest spread over positions [lo, hi). */
static int64_t widest_coordinate(const kd_build *b, int64_t lo, int64_t hi) {
  int64_t p = b->t->p, widest = 0;
  double lower[GSTAT_I_KNN_TREE_MAX_DIMS], upper[GSTAT_I_KNN_TREE_MAX_DIMS], most = -1;
  for (int64_t c = 0; c < p; c++) lower[c] = upper[c] = b->R[lo * p + c];
  for (int64_t s = lo + 1; s < hi; s++)
    for (int64_t c = 0; c < p; c++) {
      lower[c] = fmin(lower[c], b->R[s * p + c]);
      upper[c] = fmax(upper[c], b->R[s * p + c]);
    }
  for (int64_t c = 0; c < p; c++)
    if (upper[c] - lower[c] > most) {
      most = upper[c] - lower[c];
      widest = c;
    }
  return widest;
}

static int64_t build_node(kd_build *b, int64_t lo, int64_t hi) {
  kd_tree *t = b->t;
  int64_t id = b->next++, p = t->p;
  t->lo[id] = lo;
  t->hi[id] = hi;
  t->right[id] = -1;
  if (hi - lo <= KD_LEAF) { /* depth <= log2(n / 16) */
    int64_t least = t->row[lo];
    for (int64_t s = lo + 1; s < hi; s++) least = t->row[s] < least ? t->row[s] : least;
    t->min_row[id] = least;
    return id;
  }
  int64_t c = widest_coordinate(b, lo, hi), mid = lo + (hi - lo) / 2;
  select_median(b, lo, hi, mid, c);
  double lmax = b->R[lo * p + c], rmin = b->R[mid * p + c];
  for (int64_t s = lo + 1; s < mid; s++) lmax = fmax(lmax, b->R[s * p + c]);
  t->cut[id] = c;
  t->left_max[id] = lmax;
  t->right_min[id] = rmin;
  int64_t l = build_node(b, lo, mid);
  t->right[id] = build_node(b, mid, hi);
  t->min_row[id] =
      t->min_row[l] < t->min_row[t->right[id]] ? t->min_row[l] : t->min_row[t->right[id]];
  return id;
}

/* Whether no point of the subtree, at least bd away, can enter h. bd
 * carries the rounding of its updates: shaded down before comparing. */
static inline bool pruned(const kd_tree *t, const best_k *h, int64_t node, double bd) {
  if (!full(h)) return false;
  bd *= 1 - 1e-9;
  return bd > h->d[0] || (bd == h->d[0] && t->min_row[node] > h->j[0]);
}

/* The bit mask of the points at positions lo, lo + 1, ... (KD_LEAF of them:
 * a fixed count keeps the accumulators in registers; pts32 has KD_LEAF
 * padding columns, and bits past the leaf are dropped by the caller) whose
 * float32 squared distance from q is at most bound: a filter at twice the
 * float64 rate, whose survivors are measured again in float64. */
GSTAT_I_CLONES static uint32_t leaf_filter(const float *pts32, int64_t ld, int64_t p, int64_t lo,
                                           const float *q, float bound) {
  float a[KD_LEAF] = {0};
  for (int64_t c = 0; c < p; c++) {
    const float *col = pts32 + c * ld + lo;
    float qc = q[c];
    for (int s = 0; s < KD_LEAF; s++) {
      float g = col[s] - qc;
      a[s] += g * g;
    }
  }
  uint32_t mask = 0;
  for (int s = 0; s < KD_LEAF; s++) mask |= (uint32_t)(a[s] <= bound) << s;
  return mask;
}

typedef struct kd_search {
  const kd_tree *t;
  best_k *h;
  int64_t self;
  double q[GSTAT_I_KNN_TREE_MAX_DIMS];
  float q32[GSTAT_I_KNN_TREE_MAX_DIMS];
  double off[GSTAT_I_KNN_TREE_MAX_DIMS]; /* squared distance to the cut planes crossed, per axis */
} kd_search;

/* A float32 bound (scaled) that no point within float64 squared distance d
 * of q exceeds: the float32 copy's rounding (t->slack, absolute) and its
 * arithmetic's (relative, p + 2 roundings of 2^-24) widen it. */
static inline float filter_bound(const kd_tree *t, double d) {
  if (isinf(d)) return INFINITY;
  double r = (sqrt(d) * t->scale + t->slack) * (1 + 1e-5);
  return (float)(r * r * (1 + 1e-6));
}

static void scan_leaf(kd_search *s, int64_t node) {
  const kd_tree *t = s->t;
  best_k *h = s->h;
  int64_t lo = t->lo[node], m = t->hi[node] - lo, p = t->p;
  uint32_t mask =
      leaf_filter(t->pts32, t->ld, p, lo, s->q32, filter_bound(t, full(h) ? h->d[0] : INFINITY));
  mask &= m < 32 ? ((uint32_t)1 << m) - 1 : ~(uint32_t)0;
  while (mask) {
    int a = __builtin_ctz(mask);
    mask &= mask - 1;
    int64_t j = t->row[lo + a];
    double d = 0;
    for (int64_t c = 0; c < p; c++) {
      double g = t->pts[c * t->ld + lo + a] - s->q[c];
      d += g * g;
    }
    if (j != s->self && (!full(h) || worse(h->d[0], h->j[0], d, j))) offer(h, d, j);
  }
}

/* The subtree of node, rd (a lower bound of its distance from q) known not
 * to be pruned. */
static void search_node(kd_search *s, int64_t node, double rd) {
  const kd_tree *t = s->t;
  int64_t r = t->right[node];
  if (r < 0) {
    scan_leaf(s, node);
    return;
  }
  int64_t c = t->cut[node];
  double below = s->q[c] - t->left_max[node], above = s->q[c] - t->right_min[node];
  bool left_first = below + above <= 0; /* a tie: the smaller rows first (the tie rule) */
  int64_t near = left_first ? node + 1 : r, far = left_first ? r : node + 1;
  double crossed = left_first ? above * above : below * below;
  search_node(s, near, rd);
  double was = s->off[c], rf = rd + crossed - was;
  if (pruned(t, s->h, far, rf)) return;
  s->off[c] = crossed;
  search_node(s, far, rf);
  s->off[c] = was;
}

/* The best others of the point at tree position at, into h. */
static void kd_query(const kd_tree *t, int64_t at, best_k *h) {
  kd_search s = {.t = t, .h = h, .self = t->row[at]};
  for (int64_t c = 0; c < t->p; c++) {
    s.q[c] = t->pts[c * t->ld + at];
    s.q32[c] = t->pts32[c * t->ld + at];
    s.off[c] = 0.0;
  }
  search_node(&s, 0, 0.0);
}

/* pts and pts32 from the tree-ordered rows R (n x p row-major). The float32
 * copy is centred and scaled by a power of two to magnitudes near 1 (no
 * overflow or underflow whatever the data's range; its rounding follows
 * their spread, not their offset). A coordinate then rounds by at most
 * 2^-24 of its magnitude and the centring by a few 2^-53 of the offset's,
 * so a difference vector moves by at most t->slack (scaled units). */
static void fill_points(kd_tree *t, const double *R) {
  int64_t n = t->n, p = t->p, ld = t->ld;
  double mean[GSTAT_I_KNN_TREE_MAX_DIMS], spread = 0, largest = 0, radius = 0;
  for (int64_t c = 0; c < p; c++) {
    double m = 0;
    for (int64_t s = 0; s < n; s++) m += R[s * p + c] / (double)n;
    mean[c] = m;
    for (int64_t s = 0; s < n; s++) {
      spread = fmax(spread, fabs(R[s * p + c] - m));
      largest = fmax(largest, fabs(R[s * p + c]));
    }
  }
  int e = 0;
  if (spread > 0) frexp(spread, &e);
  t->scale = ldexp(1.0, -e);
  for (int64_t c = 0; c < p; c++)
    for (int64_t s = 0; s < ld; s++) {
      double v = s < n ? R[s * p + c] : 0.0;
      t->pts[c * ld + s] = v;
      t->pts32[c * ld + s] = s < n ? (float)((v - mean[c]) * t->scale) : 0.0f;
    }
  for (int64_t s = 0; s < n; s++) {
    double r = 0;
    for (int64_t c = 0; c < p; c++) r += (double)t->pts32[c * ld + s] * t->pts32[c * ld + s];
    radius = fmax(radius, r);
  }
  t->slack = 0x1p-22 * sqrt(radius) + 0x1p-49 * sqrt((double)p) * largest * t->scale;
}

/* The tree of element b of X: one allocation, *mem / *bytes for kd_free. */
static gstat_status kd_make(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, kd_tree *t,
                            void **mem, size_t *bytes) {
  int64_t n = X->rows, p = X->cols, cap = 2 * (n / (KD_LEAF / 2) + 1) + 1;
  gstat_i_ws_plan pl = {0, true};
  size_t o_pts = gstat_i_ws_take(&pl, (n + KD_LEAF) * p, sizeof(double));
  size_t o_pts32 = gstat_i_ws_take(&pl, (n + KD_LEAF) * p, sizeof(float));
  size_t o_r = gstat_i_ws_take(&pl, n * p, sizeof(double));
  size_t o_row = gstat_i_ws_take(&pl, n, sizeof(int64_t));
  size_t o_nodes = gstat_i_ws_take(&pl, 5 * cap, sizeof(int64_t));
  size_t o_cuts = gstat_i_ws_take(&pl, 2 * cap, sizeof(double));
  char *w = pl.ok ? gstat_i_alloc(ctx, pl.size) : NULL;
  if (!w)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "knn: cannot allocate the k-d tree of %lld points",
                        (long long)n);
  *mem = w;
  *bytes = pl.size;
  *t = (kd_tree){.n = n,
                 .p = p,
                 .ld = n + KD_LEAF,
                 .pts = (double *)(w + o_pts),
                 .pts32 = (float *)(w + o_pts32),
                 .row = (int64_t *)(w + o_row)};
  t->lo = (int64_t *)(w + o_nodes);
  t->hi = t->lo + cap;
  t->right = t->hi + cap;
  t->min_row = t->right + cap;
  t->cut = t->min_row + cap;
  t->left_max = (double *)(w + o_cuts);
  t->right_min = t->left_max + cap;
  kd_build bd = {t, (double *)(w + o_r), 0};
  gstat_matrix xt = *X; /* X_b transposed: loads as n x p row-major */
  xt.rows = X->cols;
  xt.cols = X->rows;
  xt.row_stride = X->col_stride;
  xt.col_stride = X->row_stride;
  gstat_i_dense_load(&xt, b, GSTAT_F64, bd.R, p);
  for (int64_t s = 0; s < n; s++) t->row[s] = s;
  build_node(&bd, 0, n);
  fill_points(t, bd.R);
  return GSTAT_OK;
}

gstat_status gstat_i_knn_tree(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                              bool include_self, int64_t *nbr, double *d2) {
  if (X->cols > GSTAT_I_KNN_TREE_MAX_DIMS)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "knn: the tree takes at most %d dimensions",
                        GSTAT_I_KNN_TREE_MAX_DIMS);
  kd_tree t;
  void *mem = NULL;
  size_t bytes = 0;
  gstat_status st = kd_make(ctx, X, b, &t, &mem, &bytes);
  if (st != GSTAT_OK) return st;
  const int64_t chunk = 16384; /* queries between progress reports */
  for (int64_t s0 = 0; s0 < t.n && st == GSTAT_OK; s0 += chunk) {
    int64_t s1 = s0 + chunk < t.n ? s0 + chunk : t.n;
#pragma omp parallel for num_threads(ctx->num_threads) schedule(dynamic, 64) if (s1 - s0 > 256)
    for (int64_t s = s0; s < s1; s++) { /* queries in tree order: neighbours share the cache */
      int64_t i = t.row[s];
      best_k h = row_slots(i, k, include_self, nbr, d2);
      if (h.cap > 0) kd_query(&t, s, &h);
      sort_row_by_index(nbr + i * k, d2 + i * k, k);
    }
    st = gstat_i_progress(ctx, "knn", s1, t.n);
  }
  gstat_i_free(ctx, mem, bytes);
  return st;
}

/* ---- blocked GEMM distances ---- */

/* c and eta of the GEMM distances' error bound |a_ij - e_ij| <= c (|x_i|^2 +
 * |x_j|^2) + eta, e_ij the exact distance below: the dot product's gamma_p
 * of |x_i| |x_j| (any summation order), the norms' gamma_p each, a's two
 * roundings, the exact distance's own gamma_{p+2} in double (e <= 2 (|x_i|^2
 * + |x_j|^2)), underflow (eta), all doubled for the bound's own rounding.
 * The CUDA module's knn_bound is the same (with its copy's rounding). */
static void gemm_bound(gstat_dtype dt, int64_t p, double *c, double *eta) {
  double u = dt == GSTAT_F64 ? 0x1p-53 : 0x1p-24;
  *c = 2 * ((double)(2 * p + 10) * u * 1.01 + (double)(2 * p + 8) * 0x1p-53);
  *eta = 2 * (double)(2 * p + 8) * (dt == GSTAT_F64 ? 0x1p-1074 : 0x1p-149);
}

/* The squared distance of rows i and j from the coordinates: differences
 * in double, squared and summed in column order (the k-d tree's value). */
static double exact_d2(gstat_dtype dt, const void *x, int64_t n, int64_t p, int64_t i, int64_t j) {
  double s = 0;
  for (int64_t c = 0; c < p; c++) {
    double g = dt == GSTAT_F64
                   ? ((const double *)x)[i + c * n] - ((const double *)x)[j + c * n]
                   : (double)((const float *)x)[i + c * n] - ((const float *)x)[j + c * n];
    s += g * g;
  }
  return s;
}

/* a = ||x_i||^2 + ||x_j||^2 - 2 x_i.x_j (clipped at 0, in dt) and its bound. */
static inline void approx_at(gstat_dtype dt, const void *sq, const void *dot, int64_t i, int64_t j,
                             double c, double eta, double *a, double *bound) {
  double v, s;
  if (dt == GSTAT_F64) {
    const double *q = sq;
    s = q[i] + q[j];
    v = s - 2 * ((const double *)dot)[j];
  } else {
    const float *q = sq;
    float f = q[i] + q[j] - 2 * ((const float *)dot)[j];
    s = (double)q[i] + q[j];
    v = f;
  }
  *a = v > 0 ? v : 0.0;
  *bound = c * s + eta;
}

/* Row i's best others, exactly by (exact distance, index), from its block
 * of dot products: the kp-th smallest a + bound is at least the kp-th exact
 * distance, so only the j whose a - bound is not above it can be among the
 * best; those are measured exactly. (A NaN bound, from overflowing norms,
 * keeps j.) */
static void select_from_dots(gstat_dtype dt, const void *sq, const void *dot, const void *x,
                             int64_t n, int64_t p, int64_t i, double c, double eta, best_k *h) {
  if (h->cap == 0) return;
  double a, bound;
  for (int64_t j = 0; j < n; j++) {
    approx_at(dt, sq, dot, i, j, c, eta, &a, &bound);
    if (j != i && (!full(h) || worse(h->d[0], h->j[0], a + bound, j))) offer(h, a + bound, j);
  }
  double top = h->d[0];
  h->size = 0;
  for (int64_t j = 0; j < n; j++) {
    approx_at(dt, sq, dot, i, j, c, eta, &a, &bound);
    if (j == i || a - bound > top) continue;
    double e = exact_d2(dt, x, n, p, i, j);
    if (!full(h) || worse(h->d[0], h->j[0], e, j)) offer(h, e, j);
  }
}

static void squared_norms(gstat_dtype dt, const void *x, int64_t n, int64_t p, void *sq) {
  for (int64_t i = 0; i < n; i++) {
    if (dt == GSTAT_F64) {
      const double *v = x;
      double s = 0;
      for (int64_t c = 0; c < p; c++) s += v[i + c * n] * v[i + c * n];
      ((double *)sq)[i] = s;
    } else {
      const float *v = x;
      float s = 0;
      for (int64_t c = 0; c < p; c++) s += v[i + c * n] * v[i + c * n];
      ((float *)sq)[i] = s;
    }
  }
}

/* Float32 data take float32 GEMM distances (twice the rate) to choose the
 * candidates; the answer is exact either way. */
gstat_status gstat_i_knn_gemm(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                              bool include_self, int64_t *nbr, double *d2) {
  int64_t n = X->rows, p = X->cols;
  gstat_dtype dt = X->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  size_t es = gstat_dtype_size(dt);
  int64_t rows = n > 0 ? ((int64_t)1 << 22) / n : 1; /* ~32 MiB of float64 dot products */
  rows = rows < 1 ? 1 : rows > n ? n : rows;
  gstat_i_ws_plan pl = {0, true};
  size_t o_x = gstat_i_ws_take(&pl, n * p, es);
  size_t o_sq = gstat_i_ws_take(&pl, n, es);
  size_t o_block = gstat_i_ws_take(&pl, n * rows, es);
  char *w = pl.ok ? gstat_i_alloc(ctx, pl.size) : NULL;
  if (!w)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "knn: cannot allocate the distances of %lld points",
                        (long long)n);
  char *x = w + o_x, *sq = w + o_sq, *block = w + o_block;
  gstat_i_dense_load(X, b, dt, x, n);
  squared_norms(dt, x, n, p, sq);
  double c, eta;
  gemm_bound(dt, p, &c, &eta);
  gstat_status st = GSTAT_OK;
  for (int64_t r0 = 0; r0 < n && st == GSTAT_OK; r0 += rows) {
    int64_t nb = n - r0 < rows ? n - r0 : rows;
    /* column r of the block: x_j . x_{r0+r} for every j */
    st = gstat_i_gemm(ctx, dt, GSTAT_NO_TRANS, GSTAT_TRANS, n, nb, p, 1.0, x, n,
                      x + (size_t)r0 * es, n, 0.0, block, n);
    if (st != GSTAT_OK) break;
#pragma omp parallel for num_threads(ctx->num_threads) schedule(dynamic, 8) if (nb * n > 100000)
    for (int64_t r = 0; r < nb; r++) {
      int64_t i = r0 + r;
      best_k h = row_slots(i, k, include_self, nbr, d2);
      select_from_dots(dt, sq, block + (size_t)(r * n) * es, x, n, p, i, c, eta, &h);
      sort_row_by_index(nbr + i * k, d2 + i * k, k);
    }
    st = gstat_i_progress(ctx, "knn", r0 + nb, n);
  }
  gstat_i_free(ctx, w, pl.size);
  return st;
}
