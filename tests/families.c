/* The solver test families: see families.h. */
#include "families.h"

#include <float.h>
#include <math.h>
#include <string.h>

const tf_family tf_families[] = {
    {"zero", TF_ZERO, TF_UNIT},
    {"identity", TF_IDENTITY, TF_UNIT},
    {"diag-even", TF_DIAG_EVEN, TF_UNIT},
    {"diag-geometric", TF_DIAG_GEOMETRIC, TF_UNIT},
    {"diag-clustered", TF_DIAG_CLUSTERED, TF_UNIT},
    {"diag-even-big", TF_DIAG_EVEN, TF_BIG},
    {"diag-geometric-big", TF_DIAG_GEOMETRIC, TF_BIG},
    {"diag-clustered-big", TF_DIAG_CLUSTERED, TF_BIG},
    {"diag-even-small", TF_DIAG_EVEN, TF_SMALL},
    {"diag-geometric-small", TF_DIAG_GEOMETRIC, TF_SMALL},
    {"diag-clustered-small", TF_DIAG_CLUSTERED, TF_SMALL},
    {"dense-even", TF_DENSE_EVEN, TF_UNIT},
    {"dense-geometric", TF_DENSE_GEOMETRIC, TF_UNIT},
    {"dense-clustered", TF_DENSE_CLUSTERED, TF_UNIT},
    {"dense-ulp-cluster", TF_DENSE_ULP_CLUSTER, TF_UNIT},
    {"random", TF_RANDOM, TF_UNIT},
    {"random-big", TF_RANDOM, TF_BIG},
    {"random-small", TF_RANDOM, TF_SMALL},
    {"banded", TF_BANDED, TF_UNIT},
    {"rank-deficient", TF_RANK_DEFICIENT, TF_UNIT},
    {"near-rank-deficient", TF_NEAR_RANK_DEFICIENT, TF_UNIT},
    {"repeated", TF_REPEATED, TF_UNIT},
    {"graded", TF_GRADED, TF_UNIT},
};
const int tf_nfamilies = (int)(sizeof tf_families / sizeof tf_families[0]);

double tf_ulp(gstat_dtype dt) {
  return dt == GSTAT_F64 ? DBL_EPSILON : dt == GSTAT_F32 ? FLT_EPSILON : 0x1p-7;
}

int tf_definiteness(int64_t n, const double *d, gstat_dtype dt) {
  if (n == 0) return 1;
  double lo = INFINITY, top = 0;
  for (int64_t i = 0; i < n; i++) lo = fmin(lo, d[i]), top = fmax(top, fabs(d[i]));
  if (top == 0 || lo <= -0.25 * top) return -1;
  return lo > 32 * (double)n * tf_ulp(dt) * top ? 1 : 0;
}

static int64_t below(tu_rng *r, int64_t k) {
  return (int64_t)(tu_uniform(r) * (double)k);
}

static double random_sign(tu_rng *r) {
  return tu_uniform(r) < 0.5 ? -1 : 1;
}

/* Even, geometric or clustered from 1 down to ulp (t = i / (n - 1)). */
static void planted_spectrum(tf_kind kind, int64_t n, double ulp, double *d) {
  int64_t clusters = (n + 7) / 8;
  for (int64_t i = 0; i < n; i++) {
    double t = n > 1 ? (double)i / (double)(n - 1) : 0;
    if (kind == TF_DIAG_EVEN || kind == TF_DENSE_EVEN) d[i] = 1 - t * (1 - ulp);
    if (kind == TF_DIAG_GEOMETRIC || kind == TF_DENSE_GEOMETRIC) d[i] = pow(ulp, t);
    if (kind == TF_DIAG_CLUSTERED || kind == TF_DENSE_CLUSTERED) {
      /* cluster c: centre ulp^(c / (clusters - 1)), relative gaps 10^-(5 + c) down to ulp */
      int64_t c = i / 8, j = i % 8;
      double centre = clusters > 1 ? pow(ulp, (double)c / (double)(clusters - 1)) : 1;
      d[i] = centre * (1 + (double)j * fmax(pow(10, -5 - (double)c), ulp));
    }
    if (kind == TF_DENSE_ULP_CLUSTER) d[i] = i == 0 ? 1 : ulp;
  }
}

/* a = diag(d), d shuffled first so that the order is the solver's to find. */
static void diagonal(tu_rng *r, int64_t n, double *d, double *a) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = below(r, i + 1);
    double t = d[i];
    d[i] = d[j];
    d[j] = t;
  }
  for (int64_t i = 0; i < n; i++) a[i + i * n] = d[i];
}

/* Random symmetric with entries uniform(-1, 1) within `half` of the diagonal. */
static void random_band(tu_rng *r, int64_t n, int64_t half, double *a) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = j; i < n && i <= j + half; i++)
      a[i + j * n] = a[j + i * n] = 2 * tu_uniform(r) - 1;
}

/* The spectrum of a rotated kind (rank-deficient, repeated, graded's base). */
static void other_spectrum(tu_rng *r, tf_kind kind, int64_t n, double *d) {
  const double values[3] = {random_sign(r), 0.5 * random_sign(r), 1e-3 * random_sign(r)};
  for (int64_t i = 0; i < n; i++) {
    if (kind == TF_RANK_DEFICIENT || kind == TF_NEAR_RANK_DEFICIENT)
      d[i] = i < 3 * n / 4 ? 0.1 + 0.9 * tu_uniform(r) : kind == TF_RANK_DEFICIENT ? 0 : 1e-6;
    if (kind == TF_REPEATED) d[i] = values[below(r, 3)];
    if (kind == TF_GRADED) d[i] = 0.5 + 0.5 * tu_uniform(r);
  }
}

/* The unscaled element; returns what is known of it. */
static tf_info generate(tu_rng *r, tf_kind kind, int64_t n, double ulp, gstat_dtype dt, double *a,
                        double *d) {
  tf_info info = {true, 0};
  memset(a, 0, sizeof(double) * (size_t)(n * n));
  switch (kind) {
    case TF_ZERO:
    case TF_IDENTITY:
      for (int64_t i = 0; i < n; i++) a[i + i * n] = d[i] = kind == TF_IDENTITY;
      break;
    case TF_DIAG_EVEN:
    case TF_DIAG_GEOMETRIC:
    case TF_DIAG_CLUSTERED:
      planted_spectrum(kind, n, ulp, d);
      diagonal(r, n, d, a);
      info.definite = 1; /* positive, and a diagonal stays so when rounded */
      return info;
    case TF_DENSE_EVEN:
    case TF_DENSE_GEOMETRIC:
    case TF_DENSE_CLUSTERED:
    case TF_DENSE_ULP_CLUSTER:
      planted_spectrum(kind, n, ulp, d);
      for (int64_t i = 0; i < n; i++) d[i] *= random_sign(r);
      tu_planted(r, n, d, a);
      break;
    case TF_RANDOM:
    case TF_BANDED:
      random_band(r, n, kind == TF_RANDOM ? n : n / 16 > 1 ? n / 16 : 1, a);
      info.spectrum_known = false;
      return info;
    default:
      other_spectrum(r, kind, n, d);
      tu_planted(r, n, d, a);
      if (kind != TF_GRADED) break;
      /* D A D keeps A's inertia, and its rounding is A's relative rounding
       * seen through D: A's spectrum still says whether it is definite */
      tu_grade(n, 1e4, a);
      info.spectrum_known = false;
      break;
  }
  info.definite = tf_definiteness(n, d, dt);
  return info;
}

tf_info tf_generate_kind(tu_rng *r, tf_kind kind, tf_scale scale, int64_t n, double ulp,
                         gstat_dtype dt, double *a, double *d) {
  tf_info info = generate(r, kind, n, ulp, dt, a, d);
  bool f64 = dt == GSTAT_F64;
  double s = scale == TF_BIG     ? 0.5 * sqrt(f64 ? DBL_MAX : (double)FLT_MAX)
             : scale == TF_SMALL ? 2 * sqrt(f64 ? DBL_MIN : (double)FLT_MIN)
                                 : 1;
  if (s != 1) {
    for (int64_t k = 0; k < n * n; k++) a[k] *= s;
    for (int64_t i = 0; i < n; i++) d[i] *= s;
  }
  return info;
}

tf_info tf_generate(tu_rng *r, const tf_family *f, int64_t n, gstat_dtype dt, double *a,
                    double *d) {
  return tf_generate_kind(r, f->kind, f->scale, n, dt == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON, dt,
                          a, d);
}
