/*
 * Approximate k nearest neighbours on the CPU by NN-descent (Dong, Charikar
 * and Li, WWW 2011): a neighbour of a neighbour is likely a neighbour. Each
 * point keeps a bounded list (a max-heap by (distance, index)); every round
 * samples each list's new and old entries, adds the reverse ones, and
 * measures the pairs among each point's candidates ("local join"), offering
 * each pair to both lists. It stops when a round changes few entries. The
 * cost of a round grows like n L^2 p, against the exact search's n^2 p.
 *
 * Deterministic for a seed whatever the thread count: samples are chosen by
 * a hash of (seed, round, pair), a round's proposals are generated against
 * the lists as they stood before it (per block of points) and applied by
 * owner, and a bounded list keeps the best L distinct entries of what it is
 * offered whatever the order. Distances are computed in float32 for float32
 * and bfloat16 data; the final lists are measured in float64 as the exact
 * searches' (knn.c), so the primitive's contract holds except that a true
 * neighbour may be missed (bench/README.md, "Approximate kNN": the recall).
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/clones.h"
#include "core/matrix.h"
#include "core/rng_impl.h"
#include "backend/cpu/knn.h"
#include "backend/dense.h"

enum {
  LANES = 16,         /* a row padded to a multiple of this: the distance loop vectorizes */
  UPDATES = 1 << 21,  /* proposals held at once: a block of points joins between two applications */
  MAX_ROUNDS = 30,    /* a cap per stage; rounds stop earlier when few entries change */
  MAX_STAGES = 5,     /* list lengths tried (each 3/2 the last) until the recall check passes */
  CHECK_POINTS = 256, /* the recall check's sample ... */
  CHECK_PER_MILLE = 995, /* ... and the recall it asks (the estimate's error is ~0.002) */
  RP_TREES = 8,          /* random projection trees of the start */
  STOP_PER_MILLE = 1,    /* stop when a round changes at most n L / 1000 entries */
};

typedef struct nnd_update {
  int64_t a, b;
  double d;
} nnd_update;

typedef struct nnd {
  int64_t n, p, ld, L, M; /* points, dimensions, padded row, list length, sample size */
  bool f64;               /* compute in double (float64 data) or float */
  const void *x;          /* n x ld row-major, zero padded */
  double *d;              /* n x L: the lists' distances (a max-heap per row) ... */
  int64_t *j;             /* ... their points ... */
  uint8_t *flag;          /* ... and 1 new (not yet joined), 0 old, 2 entered this round */
  int64_t *cand;          /* n x 2M: the round's new then old candidates ... */
  uint64_t *prio;         /* ... their sample priorities ... */
  int64_t *ncand;         /* ... and counts (n x 2) */
  nnd_update *up;         /* block x per_point proposals of a block of points */
  int64_t *nup;           /* block: proposals per point */
  int64_t per_point;      /* the most proposals a point's join makes */
  int64_t block;          /* points joined between two applications */
  int64_t *perm;          /* RP_TREES x n: the trees' orders of the points ... */
  uint8_t *is_start;      /* ... and their leaves' starts */
  uint64_t seed;
} nnd;

/* ---- distances ---- */

GSTAT_I_CLONES static double dist_f32(const float *a, const float *b, int64_t ld) {
  float acc[LANES] = {0};
  for (int64_t c = 0; c < ld; c += LANES)
    for (int l = 0; l < LANES; l++) {
      float g = a[c + l] - b[c + l];
      acc[l] += g * g;
    }
  float s = 0;
  for (int l = 0; l < LANES; l++) s += acc[l];
  return s;
}

GSTAT_I_CLONES static double dist_f64(const double *a, const double *b, int64_t ld) {
  double acc[LANES] = {0};
  for (int64_t c = 0; c < ld; c += LANES)
    for (int l = 0; l < LANES; l++) {
      double g = a[c + l] - b[c + l];
      acc[l] += g * g;
    }
  double s = 0;
  for (int l = 0; l < LANES; l++) s += acc[l];
  return s;
}

/* Squared distances of rows a[0..3] to rows b[0..3] into out (4 x 4,
 * row-major): a register block, each row loaded once for four distances.
 * Every distance the lists hold comes from here, lane sums in one order,
 * so that d(a, b) == d(b, a) bitwise and a pair has one value whichever
 * block measures it (the lists' order independence needs it). */
typedef float nnd_vf __attribute__((vector_size(64)));  /* 16 lanes: GCC and clang vectors */
typedef double nnd_vd __attribute__((vector_size(64))); /* 8 lanes */

#define NND_ACC(r, q) acc[r * 4 + q] += (a##r - b##q) * (a##r - b##q)
#define GSTAT_I_NND_BLOCK(name, T, V, KL)                                                       \
  GSTAT_I_CLONES static void name(const T *x, int64_t ld, const int64_t *ia, const int64_t *ib, \
                                  double *out) {                                                \
    V acc[16];                                                                                  \
    memset(acc, 0, sizeof acc);                                                                 \
    const T *r0 = x + ia[0] * ld, *r1 = x + ia[1] * ld, *r2 = x + ia[2] * ld,                   \
            *r3 = x + ia[3] * ld, *s0 = x + ib[0] * ld, *s1 = x + ib[1] * ld,                   \
            *s2 = x + ib[2] * ld, *s3 = x + ib[3] * ld;                                         \
    for (int64_t c = 0; c < ld; c += KL) {                                                      \
      V a0, a1, a2, a3, b0, b1, b2, b3;                                                         \
      memcpy(&a0, r0 + c, sizeof a0), memcpy(&a1, r1 + c, sizeof a1);                           \
      memcpy(&a2, r2 + c, sizeof a2), memcpy(&a3, r3 + c, sizeof a3);                           \
      memcpy(&b0, s0 + c, sizeof b0), memcpy(&b1, s1 + c, sizeof b1);                           \
      memcpy(&b2, s2 + c, sizeof b2), memcpy(&b3, s3 + c, sizeof b3);                           \
      NND_ACC(0, 0), NND_ACC(0, 1), NND_ACC(0, 2), NND_ACC(0, 3);                               \
      NND_ACC(1, 0), NND_ACC(1, 1), NND_ACC(1, 2), NND_ACC(1, 3);                               \
      NND_ACC(2, 0), NND_ACC(2, 1), NND_ACC(2, 2), NND_ACC(2, 3);                               \
      NND_ACC(3, 0), NND_ACC(3, 1), NND_ACC(3, 2), NND_ACC(3, 3);                               \
    }                                                                                           \
    for (int e = 0; e < 16; e++) {                                                              \
      T sum = 0;                                                                                \
      for (int l = 0; l < KL; l++) sum += acc[e][l];                                            \
      out[e] = sum;                                                                             \
    }                                                                                           \
  }
GSTAT_I_NND_BLOCK(block_f32, float, nnd_vf, 16)
GSTAT_I_NND_BLOCK(block_f64, double, nnd_vd, 8)

static inline void block(const nnd *t, const int64_t *a, const int64_t *b, double *out) {
  if (t->f64)
    block_f64(t->x, t->ld, a, b, out);
  else
    block_f32(t->x, t->ld, a, b, out);
}

/* One pair through the block (the lists' distances all come from it). */
static double pair(const nnd *t, int64_t a, int64_t b) {
  int64_t ra[4] = {a, a, a, a}, rb[4] = {b, b, b, b};
  double out[16];
  block(t, ra, rb, out);
  return out[0];
}

/* The random projection trees' sides: not stored, so any rounding serves. */
static inline double dist(const nnd *t, int64_t a, int64_t b) {
  if (t->f64)
    return dist_f64((const double *)t->x + a * t->ld, (const double *)t->x + b * t->ld, t->ld);
  return dist_f32((const float *)t->x + a * t->ld, (const float *)t->x + b * t->ld, t->ld);
}

/* ---- a point's list: a max-heap by (distance, index) ---- */

static inline bool worse(double da, int64_t ja, double db, int64_t jb) {
  return da > db || (da == db && ja > jb);
}

static void sift_down(double *d, int64_t *j, uint8_t *f, int64_t size, int64_t at) {
  for (;;) {
    int64_t l = 2 * at + 1, r = l + 1, top = at;
    if (l < size && worse(d[l], j[l], d[top], j[top])) top = l;
    if (r < size && worse(d[r], j[r], d[top], j[top])) top = r;
    if (top == at) return;
    double td = d[at];
    int64_t tj = j[at];
    uint8_t tf = f[at];
    d[at] = d[top], j[at] = j[top], f[at] = f[top];
    d[top] = td, j[top] = tj, f[top] = tf;
    at = top;
  }
}

/* Whether (dd, jj) would enter row i's list (read-only: the join's filter). */
static inline bool improves(const nnd *t, int64_t i, double dd, int64_t jj) {
  return worse(t->d[i * t->L], t->j[i * t->L], dd, jj);
}

/* Offer (dd, jj) to row i's full list: it replaces the worst entry unless it
 * is no better or already listed. */
static void offer(nnd *t, int64_t i, double dd, int64_t jj) {
  double *d = t->d + i * t->L;
  int64_t *j = t->j + i * t->L;
  uint8_t *f = t->flag + i * t->L;
  if (jj == i || !worse(d[0], j[0], dd, jj)) return;
  for (int64_t s = 0; s < t->L; s++)
    if (j[s] == jj) return;
  d[0] = dd, j[0] = jj, f[0] = 2;
  sift_down(d, j, f, t->L, 0);
}

/* ---- the start: L distinct random others per point ---- */

/* Row i's list: its first m entries given, the rest distinct
 * random others, then made a heap. */
static void random_start(nnd *t, int64_t i, int64_t m) {
  uint64_t s[4];
  gstat_i_xoshiro_seed(s, t->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)) ^ (uint64_t)t->L);
  double *d = t->d + i * t->L;
  int64_t *j = t->j + i * t->L;
  uint8_t *f = t->flag + i * t->L;
  while (m < t->L) {
    int64_t c = (int64_t)(gstat_i_xoshiro_next(s) % (uint64_t)(t->n - 1));
    c += c >= i; /* skip the point itself */
    bool seen = false;
    for (int64_t r = 0; r < m && !seen; r++) seen = j[r] == c;
    if (seen) continue;
    j[m] = c, d[m] = pair(t, i, c), f[m] = 1;
    m++;
  }
  for (int64_t at = t->L / 2 - 1; at >= 0; at--) sift_down(d, j, f, t->L, at);
}

/* ---- a better start: leaves of random projection trees ---- */

/* Points whose coordinates agree with their positions' (perm) are split by
 * the hyperplane halfway between two of them chosen at random (Dasgupta and
 * Freund's random projection tree, as PyNNDescent starts), until a part
 * holds at most `leaf` points; the leaves' starts are marked in is_start.
 * A split that separates nothing (duplicates) halves the part instead. */
static void rp_split(const nnd *t, int64_t *perm, uint8_t *is_start, int64_t lo, int64_t hi,
                     int64_t leaf, uint64_t s[4]) {
  while (hi - lo > leaf) {
    int64_t m = hi - lo, a = perm[lo + (int64_t)(gstat_i_xoshiro_next(s) % (uint64_t)m)];
    int64_t b = perm[lo + (int64_t)(gstat_i_xoshiro_next(s) % (uint64_t)(m - 1))];
    if (b == a) b = perm[hi - 1];
    int64_t at = lo;
    for (int64_t r = lo; r < hi; r++) { /* closer to a than to b: the lower part */
      int64_t i = perm[r];
      if (dist(t, i, a) < dist(t, i, b)) {
        perm[r] = perm[at];
        perm[at++] = i;
      }
    }
    if (at == lo || at == hi) at = lo + m / 2;
    if (at - lo <= hi - at) { /* the smaller part recursively: a stack of O(log n) */
      rp_split(t, perm, is_start, lo, at, leaf, s);
      lo = at;
    } else {
      rp_split(t, perm, is_start, at, hi, leaf, s);
      hi = at;
    }
  }
  is_start[lo] = 1;
}

/* Every pair of a leaf offered to both lists (a leaf's points are its own:
 * leaves run in parallel), in blocks of 4 x 4 (the last block padded with
 * repeats of the leaf's last point, not offered). */
static void join_leaf(nnd *t, const int64_t *perm, int64_t lo, int64_t hi) {
  int64_t m = hi - lo;
  double out[16];
  for (int64_t r0 = 0; r0 < m; r0 += 4)
    for (int64_t q0 = r0; q0 < m; q0 += 4) {
      const int64_t *ra = perm + lo + r0, *rb = perm + lo + q0;
      int64_t pa[4], pb[4];
      for (int e = 0; e < 4; e++) {
        pa[e] = r0 + e < m ? ra[e] : perm[hi - 1];
        pb[e] = q0 + e < m ? rb[e] : perm[hi - 1];
      }
      block(t, pa, pb, out);
      for (int e = 0; e < 4; e++)
        for (int f = 0; f < 4; f++)
          if (r0 + e < q0 + f && q0 + f < m) {
            offer(t, pa[e], out[e * 4 + f], pb[f]);
            offer(t, pb[f], out[e * 4 + f], pa[e]);
          }
    }
}

/* The random start improved by the leaves of `trees` trees of leaf size
 * `leaf` (built in parallel, joined one tree after another); perm and
 * is_start: trees x n entries of scratch. */
static void rp_start(nnd *t, int threads, int trees, int64_t leaf, int64_t *perm,
                     uint8_t *is_start) {
  int64_t n = t->n;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int tree = 0; tree < trees; tree++) {
    uint64_t s[4];
    gstat_i_xoshiro_seed(s, t->seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(tree + 1)));
    int64_t *pm = perm + tree * n;
    uint8_t *st = is_start + tree * n;
    for (int64_t i = 0; i < n; i++) pm[i] = i, st[i] = 0;
    rp_split(t, pm, st, 0, n, leaf, s);
  }
  for (int tree = 0; tree < trees; tree++) {
    const int64_t *pm = perm + tree * n;
    const uint8_t *st = is_start + tree * n;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
    for (int64_t lo = 0; lo < n; lo++) {
      if (!st[lo]) continue;
      int64_t hi = lo + 1;
      while (hi < n && !st[hi]) hi++;
      join_leaf(t, pm, lo, hi);
    }
  }
}

/* ---- a round's candidates: a sample of M new and M old per point ---- */

/* The priority of pair {a, b} in a round: the M smallest are kept, so the
 * sample does not depend on the order of the offers. */
static inline uint64_t priority(uint64_t seed, int64_t round, int64_t a, int64_t b) {
  uint64_t lo = (uint64_t)(a < b ? a : b), hi = (uint64_t)(a < b ? b : a);
  uint64_t z =
      seed ^ (lo * 0xbf58476d1ce4e5b9ull) ^ (hi * 0x94d049bb133111ebull) ^ ((uint64_t)round << 40);
  return gstat_i_splitmix64(&z);
}

static inline bool later(uint64_t pa, int64_t ca, uint64_t pb, int64_t cb) {
  return pa > pb || (pa == pb && ca > cb);
}

static void sift_candidate(uint64_t *pp, int64_t *cn, int64_t size, int64_t at) {
  for (;;) {
    int64_t l = 2 * at + 1, r = l + 1, top = at;
    if (l < size && later(pp[l], cn[l], pp[top], cn[top])) top = l;
    if (r < size && later(pp[r], cn[r], pp[top], cn[top])) top = r;
    if (top == at) return;
    uint64_t tp = pp[at];
    int64_t tc = cn[at];
    pp[at] = pp[top], cn[at] = cn[top];
    pp[top] = tp, cn[top] = tc;
    at = top;
  }
}

/* Add c (priority pr) to list kind (0 new, 1 old) of i, keeping the M of
 * smallest (priority, point), distinct: a max-heap once full, so that most
 * offers cost one comparison. */
static void add_candidate(nnd *t, int64_t i, int kind, int64_t c, uint64_t pr) {
  int64_t M = t->M, *cn = t->cand + (i * 2 + kind) * M, *cnt = t->ncand + i * 2 + kind;
  uint64_t *pp = t->prio + (i * 2 + kind) * M;
  if (*cnt == M && !later(pp[0], cn[0], pr, c)) return;
  for (int64_t s = 0; s < *cnt; s++)
    if (cn[s] == c) return;
  if (*cnt < M) {
    cn[*cnt] = c, pp[*cnt] = pr;
    if (++*cnt == M)
      for (int64_t at = M / 2 - 1; at >= 0; at--) sift_candidate(pp, cn, M, at);
    return;
  }
  cn[0] = c, pp[0] = pr;
  sift_candidate(pp, cn, M, 0);
}

/* Every list's entries into the candidate lists of both its ends; thread
 * `own` of `owners` fills the lists of the points it owns (i % owners). */
static void gather_candidates(nnd *t, int64_t round, int own, int owners) {
  for (int64_t i = 0; i < t->n; i++)
    for (int64_t s = 0; s < t->L; s++) {
      int64_t c = t->j[i * t->L + s];
      bool mine = i % owners == own, theirs = c % owners == own;
      if (!mine && !theirs) continue; /* the hash only for the lists this thread fills */
      int kind = t->flag[i * t->L + s] ? 0 : 1;
      uint64_t pr = priority(t->seed, round, i, c);
      if (mine) add_candidate(t, i, kind, c, pr);
      if (theirs) add_candidate(t, c, kind, i, pr);
    }
}

/* Entries sampled as new candidates of their own row become old. */
static void age_sampled(nnd *t, int64_t i) {
  const int64_t *cn = t->cand + i * 2 * t->M;
  for (int64_t s = 0; s < t->L; s++) {
    if (!t->flag[i * t->L + s]) continue;
    for (int64_t r = 0; r < t->ncand[i * 2]; r++)
      if (cn[r] == t->j[i * t->L + s]) {
        t->flag[i * t->L + s] = 0;
        break;
      }
  }
}

/* ---- the local join ---- */

/* Point i's pairs: new x new and new x old candidates, measured in blocks
 * of 4 x 4 (lists padded with repeats, not proposed), the ones that would
 * improve either list (as they stand) into u. Returns their count. */
static int64_t join_point(const nnd *t, int64_t i, nnd_update *u) {
  const int64_t *cn = t->cand + i * 2 * t->M;
  int64_t nn = t->ncand[i * 2], no = t->ncand[i * 2 + 1], nc = nn + no, m = 0;
  int64_t all[2 * GSTAT_I_KNN_NND_MAX_LIST + 4]; /* new then old, padded */
  if (nn == 0) return 0;
  memcpy(all, cn, sizeof(int64_t) * (size_t)nn);
  memcpy(all + nn, cn + t->M, sizeof(int64_t) * (size_t)no);
  for (int64_t e = nc; e < nc + 4; e++) all[e] = all[nc - 1];
  int64_t rows[GSTAT_I_KNN_NND_MAX_LIST + 4];
  memcpy(rows, all, sizeof(int64_t) * (size_t)nn);
  for (int64_t e = nn; e < nn + 4; e++) rows[e] = all[nn - 1];
  double out[16];
  for (int64_t r0 = 0; r0 < nn; r0 += 4)
    for (int64_t q0 = r0 / 4 * 4; q0 < nc; q0 += 4) {
      block(t, rows + r0, all + q0, out);
      for (int e = 0; e < 4 && r0 + e < nn; e++)
        for (int f = 0; f < 4 && q0 + f < nc; f++) {
          int64_t a = rows[r0 + e], b = all[q0 + f];
          double dd = out[e * 4 + f];
          if (q0 + f <= r0 + e || a == b) continue; /* new x new once */
          if (improves(t, a, dd, b) || improves(t, b, dd, a)) u[m++] = (nnd_update){a, b, dd};
        }
    }
  return m;
}

/* One round: candidates, then local joins block by block, each block's
 * proposals applied by owner before the next block joins. Returns the
 * entries that changed. */
static int64_t round_once(nnd *t, int64_t round, int threads) {
  memset(t->ncand, 0, sizeof(int64_t) * (size_t)(2 * t->n));
#pragma omp parallel num_threads(threads)
  {
    int own = omp_get_thread_num(), owners = omp_get_num_threads();
    gather_candidates(t, round, own, owners);
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t i = 0; i < t->n; i++) age_sampled(t, i);
    for (int64_t i0 = 0; i0 < t->n; i0 += t->block) {
      int64_t nb = t->n - i0 < t->block ? t->n - i0 : t->block;
#pragma omp for schedule(dynamic, 16)
      for (int64_t r = 0; r < nb; r++) t->nup[r] = join_point(t, i0 + r, t->up + r * t->per_point);
      /* the implied barrier: every proposal is made before any list changes */
      for (int64_t r = 0; r < nb; r++)
        for (int64_t e = 0; e < t->nup[r]; e++) {
          const nnd_update *u = t->up + r * t->per_point + e;
          if (u->a % owners == own) offer(t, u->a, u->d, u->b);
          if (u->b % owners == own) offer(t, u->b, u->d, u->a);
        }
#pragma omp barrier
    }
  }
  int64_t changed = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : changed) schedule(static)
  for (int64_t e = 0; e < t->n * t->L; e++)
    if (t->flag[e] == 2) {
      t->flag[e] = 1;
      changed++;
    }
  return changed;
}

/* ---- the answer ---- */

/* Row i's k slots in the primitive's form (knn.c's exact searches): the
 * point itself first when include_self, then the best others of its list
 * by (float64 distance, index), all sorted by index. order: L scratch. */
static void emit_row(const nnd *t, int64_t i, int64_t k, bool include_self, int64_t *nbr,
                     double *d2, int64_t *order, double *e) {
  int64_t L = t->L, skip = include_self ? 1 : 0;
  for (int64_t s = 0; s < L; s++) { /* insertion sort by (exact distance, index) */
    int64_t c = t->j[i * L + s];
    double v = 0;
    for (int64_t a = 0; a < t->p; a++) {
      double g =
          t->f64
              ? ((const double *)t->x)[i * t->ld + a] - ((const double *)t->x)[c * t->ld + a]
              : (double)((const float *)t->x)[i * t->ld + a] - ((const float *)t->x)[c * t->ld + a];
      v += g * g;
    }
    int64_t at = s;
    while (at > 0 && worse(e[at - 1], order[at - 1], v, c)) {
      e[at] = e[at - 1], order[at] = order[at - 1];
      at--;
    }
    e[at] = v, order[at] = c;
  }
  int64_t *row = nbr + i * k;
  double *rd = d2 + i * k;
  if (include_self) row[0] = i, rd[0] = 0.0;
  for (int64_t s = 0; s < k - skip; s++) row[skip + s] = order[s], rd[skip + s] = e[s];
  for (int64_t s = 1; s < k; s++) { /* by index */
    int64_t c = row[s], at = s;
    double v = rd[s];
    while (at > 0 && row[at - 1] > c) {
      row[at] = row[at - 1], rd[at] = rd[at - 1];
      at--;
    }
    row[at] = c, rd[at] = v;
  }
}

/* ---- the recall check ---- */

/* Value v into the `others` smallest so far (best, ascending, *m held). */
static inline void keep_smallest(double *best, int64_t *m, int64_t others, double v) {
  if (*m == others && v >= best[*m - 1]) return;
  int64_t at = *m < others ? (*m)++ : *m - 1;
  while (at > 0 && best[at - 1] > v) best[at] = best[at - 1], at--;
  best[at] = v;
}

/* The fraction of the true `others` nearest (by the search's distances) of
 * a seeded sample of points that their lists hold: a brute-force scan of
 * CHECK_POINTS points, four at a time through the block, a small part of
 * the search's work. */
static double sample_recall(const nnd *t, int64_t others, int threads) {
  int64_t hits = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : hits) schedule(dynamic, 1)
  for (int64_t q0 = 0; q0 < CHECK_POINTS; q0 += 4) {
    int64_t qi[4], m[4] = {0, 0, 0, 0}, cb[4];
    double best[4][GSTAT_I_KNN_NND_MAX_LIST], out[16]; /* the `others` smallest, ascending */
    for (int e = 0; e < 4; e++) {
      uint64_t z = t->seed ^ (0xa0761d6478bd642full * (uint64_t)(q0 + e + 1));
      qi[e] = (int64_t)(gstat_i_splitmix64(&z) % (uint64_t)t->n);
    }
    for (int64_t c0 = 0; c0 < t->n; c0 += 4) {
      for (int f = 0; f < 4; f++) cb[f] = c0 + f < t->n ? c0 + f : t->n - 1;
      block(t, qi, cb, out);
      for (int e = 0; e < 4; e++)
        for (int f = 0; f < 4 && c0 + f < t->n; f++)
          if (cb[f] != qi[e]) keep_smallest(best[e], &m[e], others, out[e * 4 + f]);
    }
    for (int e = 0; e < 4; e++) {
      int64_t held = 0, i = qi[e];
      for (int64_t s = 0; s < t->L; s++) held += t->d[i * t->L + s] <= best[e][others - 1];
      hits += held < others ? held : others;
    }
  }
  return (double)hits / (double)(CHECK_POINTS * others);
}

/* ---- stages ---- */

/* The first list length for k others: longer lists than asked find the
 * true ones more often (bench/README.md, "Approximate kNN"). */
static int64_t list_length(int64_t others) {
  return others + (others < GSTAT_I_KNN_NND_EXTRA ? GSTAT_I_KNN_NND_EXTRA : others) / 2;
}

/* t's lists (length t->L) and their scratch: one allocation. */
static gstat_status nnd_alloc(gstat_ctx *ctx, nnd *t, void **mem, size_t *bytes) {
  int64_t n = t->n, L = t->L, M = t->M;
  t->per_point = M * (M - 1) / 2 + M * M;
  t->block = UPDATES / t->per_point < 16 ? 16 : UPDATES / t->per_point;
  gstat_i_ws_plan pl = {0, true};
  size_t o_d = gstat_i_ws_take(&pl, n * L, sizeof(double));
  size_t o_j = gstat_i_ws_take(&pl, n * L, sizeof(int64_t));
  size_t o_f = gstat_i_ws_take(&pl, n * L, 1);
  size_t o_c = gstat_i_ws_take(&pl, n * 2 * M, sizeof(int64_t));
  size_t o_p = gstat_i_ws_take(&pl, n * 2 * M, sizeof(uint64_t));
  size_t o_nc = gstat_i_ws_take(&pl, n * 2, sizeof(int64_t));
  size_t o_up = gstat_i_ws_take(&pl, t->block * t->per_point, sizeof(nnd_update));
  size_t o_nup = gstat_i_ws_take(&pl, t->block, sizeof(int64_t));
  size_t o_perm = gstat_i_ws_take(&pl, RP_TREES * n, sizeof(int64_t));
  size_t o_st = gstat_i_ws_take(&pl, RP_TREES * n, 1);
  char *w = pl.ok ? gstat_i_alloc(ctx, pl.size) : NULL;
  if (!w)
    return gstat_i_fail(ctx, GSTAT_ENOMEM,
                        "knn: cannot allocate the NN-descent lists of %lld points", (long long)n);
  t->d = (double *)(w + o_d);
  t->j = (int64_t *)(w + o_j);
  t->flag = (uint8_t *)(w + o_f);
  t->cand = (int64_t *)(w + o_c);
  t->prio = (uint64_t *)(w + o_p);
  t->ncand = (int64_t *)(w + o_nc);
  t->up = (nnd_update *)(w + o_up);
  t->nup = (int64_t *)(w + o_nup);
  t->perm = (int64_t *)(w + o_perm);
  t->is_start = (uint8_t *)(w + o_st);
  *mem = w;
  *bytes = pl.size;
  return GSTAT_OK;
}

/* Rounds until few entries change (or the cap); progress after each. */
static gstat_status descend(gstat_ctx *ctx, nnd *t, int threads, int64_t *rounds) {
  const int64_t total = MAX_STAGES * MAX_ROUNDS;
  gstat_status st = GSTAT_OK;
  for (int64_t round = 0; round < MAX_ROUNDS && st == GSTAT_OK; round++) {
    int64_t changed = round_once(t, round, threads);
    ++*rounds;
    st = gstat_i_progress(ctx, "knn", *rounds < total ? *rounds : total - 1, total);
    if (changed * 1000 <= STOP_PER_MILLE * t->n * t->L) break;
  }
  return st;
}

/* A stage's start: the last stage's lists (length below t->L; entries
 * already joined stay old) extended by random others, or for the first a
 * random start improved by the trees. */
static void start_lists(nnd *t, const nnd *last, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < t->n; i++) {
    int64_t m = last ? last->L : 0;
    if (last) {
      memcpy(t->d + i * t->L, last->d + i * m, sizeof(double) * (size_t)m);
      memcpy(t->j + i * t->L, last->j + i * m, sizeof(int64_t) * (size_t)m);
      memcpy(t->flag + i * t->L, last->flag + i * m, (size_t)m);
    }
    random_start(t, i, m);
  }
  if (!last) rp_start(t, threads, RP_TREES, t->L > 32 ? t->L : 32, t->perm, t->is_start);
}

/* Stages of NN-descent, each list 3/2 longer than the last, until the
 * recall check passes (or the longest list); t ends with the answer's
 * lists in *mem (gstat_i_free'd by the caller). */
static gstat_status stages(gstat_ctx *ctx, nnd *t, int64_t others, int64_t most, int threads,
                           void **mem, size_t *bytes) {
  nnd last = *t;
  void *last_mem = NULL;
  size_t last_bytes = 0;
  int64_t rounds = 0;
  gstat_status st = GSTAT_OK;
  for (int stage = 0; stage < MAX_STAGES; stage++) {
    *mem = NULL;
    st = nnd_alloc(ctx, t, mem, bytes);
    if (st == GSTAT_OK) start_lists(t, last_mem ? &last : NULL, threads);
    if (last_mem) gstat_i_free(ctx, last_mem, last_bytes);
    last_mem = NULL;
    if (st == GSTAT_OK) st = descend(ctx, t, threads, &rounds);
    if (st != GSTAT_OK) break;
    if (t->L >= most || stage + 1 == MAX_STAGES ||
        sample_recall(t, others, threads) * 1000 >= CHECK_PER_MILLE)
      break;
    last = *t, last_mem = *mem, last_bytes = *bytes;
    t->L = t->M = t->L * 3 / 2 < most ? t->L * 3 / 2 : most;
  }
  if (st != GSTAT_OK && *mem) gstat_i_free(ctx, *mem, *bytes);
  if (st == GSTAT_OK)
    st = gstat_i_progress(ctx, "knn", MAX_STAGES * MAX_ROUNDS, MAX_STAGES * MAX_ROUNDS);
  return st;
}

gstat_status gstat_i_knn_nndescent(gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                                   bool include_self, uint64_t seed, int64_t *nbr, double *d2) {
  int64_t n = X->rows, p = X->cols, others = k - (include_self ? 1 : 0);
  int64_t L = list_length(others), most = 4 * others > 64 ? 4 * others : 64;
  most = most < GSTAT_I_KNN_NND_MAX_LIST ? most : GSTAT_I_KNN_NND_MAX_LIST;
  most = most < (n - 1) / 2 ? most : (n - 1) / 2;
  if (others == 0 || L > most) /* few points, or long lists: the exact search is as fast */
    return gstat_i_knn_gemm(ctx, X, b, k, include_self, nbr, d2);
  nnd t = {.n = n,
           .p = p,
           .ld = (p + LANES - 1) / LANES * LANES,
           .L = L,
           .M = L,
           .f64 = X->dtype == GSTAT_F64,
           .seed = seed};
  if (t.ld == 0) t.ld = LANES;
  size_t es = t.f64 ? sizeof(double) : sizeof(float), xbytes;
  if (!gstat_i_mul_size((size_t)n, (size_t)t.ld * es, &xbytes))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "knn: the points' copy overflows");
  void *x = gstat_i_alloc(ctx, xbytes), *mem = NULL;
  if (!x) return gstat_i_fail(ctx, GSTAT_ENOMEM, "knn: cannot allocate %zu bytes", xbytes);
  memset(x, 0, xbytes);
  gstat_matrix xt = *X; /* X_b transposed: loads as n x p row-major */
  xt.rows = X->cols;
  xt.cols = X->rows;
  xt.row_stride = X->col_stride;
  xt.col_stride = X->row_stride;
  gstat_i_dense_load(&xt, b, t.f64 ? GSTAT_F64 : GSTAT_F32, x, t.ld);
  t.x = x;
  int threads = ctx->num_threads > 0 ? ctx->num_threads : 1;
  gstat_i_note_threads(ctx, threads);
  size_t bytes = 0;
  gstat_status st = stages(ctx, &t, others, most, threads, &mem, &bytes);
  if (st == GSTAT_OK) {
#pragma omp parallel num_threads(threads)
    {
      int64_t order[GSTAT_I_KNN_NND_MAX_LIST];
      double e[GSTAT_I_KNN_NND_MAX_LIST];
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; i++) emit_row(&t, i, k, include_self, nbr, d2, order, e);
    }
    gstat_i_free(ctx, mem, bytes);
  }
  gstat_i_free(ctx, x, xbytes);
  return st;
}
