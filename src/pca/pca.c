/*
 * gstat_pca: prepare the data (center, scale), then one of
 * - COVARIANCE_EIGH: eigh of the p x p co-moment Xc^T Xc, batched;
 * - GRAM_EIGH: eigh of the n x n Gram matrix Xc Xc^T, batched; components
 *   V = Xc^T U / sigma;
 * - RANDOMIZED: pca_randomized.c;
 * then fill the result (variances, ratios, noise variance, signs, scores).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "gstat/linalg.h"
#include "backend/dense.h"
#include "backend/sched.h"
#include "pca/accum.h"
#include "pca/data.h"
#include "pca/pca_internal.h"

#define TRY(expr)                  \
  do {                             \
    gstat_status s_ = (expr);      \
    if (s_ != GSTAT_OK) return s_; \
  } while (0)

void gstat_pca_options_init(gstat_pca_options *opt) {
  if (!opt) return;
  memset(opt, 0, sizeof *opt);
  opt->center = 1;
  opt->method = GSTAT_PCA_AUTO;
  opt->oversamples = 10;
  opt->power_iterations = -1;
  opt->compute_scores = 1;
}

/* Everything one fit works on; buffers point into the GSTAT_WS_PCA workspace. */
typedef struct fit {
  const char *fn;
  gstat_pca_options opt;
  gstat_pca_method method;
  gstat_dtype ct;            /* compute type */
  size_t esz;                /* its size */
  int64_t batch, n, p, r, m; /* r = min(n, p); m = order of the eigenproblem */
  int64_t kmax;              /* largest k the workspace was sized for */
  double dof;                /* divisor of the variances: n - 1 (weight - 1 from an accumulator) */
  char *data;                /* batch x (n x p) centered, scaled data, or NULL */
  char *S;                   /* batch x (m x m): co-moment or Gram; then eigenvectors */
  char *w;                   /* batch x m eigenvalues, ascending */
  char *T;                   /* p x kmax: V^T for GRAM, a compute-type copy of V */
  char *Z;                   /* n x kmax scores in the compute type */
  double *mean, *scale;      /* batch x p */
  const gstat_matrix *src;   /* X of a co-moment fit (host or device): scores projected from it */
  gstat_pca_eigh_fn eigh;    /* caller's eigensolver (batch 1, F64), or NULL: gstat_eigh */
  void *eigh_user;
  /* device data (GRAM, RANDOMIZED): everything large stays in device memory */
  bool dev, eigh_on_device; /* the latter: no host copy of the Gram matrices */
  gstat_i_dev_prep dp;
  gstat_matrix dX;         /* the centred, scaled data: dp.Xc or dp.Xs */
  gstat_matrix dG, dw, dT; /* GRAM: Gram matrices, eigenvalues, Xc^T U of one dataset */
  gstat_matrix dY, dZ;     /* RANDOMIZED: the sketches */
} fit;

static double get(const fit *f, const char *base, int64_t i) {
  return f->ct == GSTAT_F64 ? ((const double *)base)[i] : (double)((const float *)base)[i];
}

static void set(const fit *f, char *base, int64_t i, double v) {
  if (f->ct == GSTAT_F64)
    ((double *)base)[i] = v;
  else
    ((float *)base)[i] = (float)v;
}

static char *data_of(const fit *f, int64_t b) {
  return f->data + (size_t)(b * f->n * f->p) * f->esz;
}
static char *S_of(const fit *f, int64_t b) {
  return f->S + (size_t)(b * f->m * f->m) * f->esz;
}

/* i-th largest eigenvalue of element b, clipped at 0 (rounding can make the
 * zero eigenvalues of a semidefinite matrix slightly negative). */
static double lambda(const fit *f, int64_t b, int64_t i) {
  double v = get(f, f->w, b * f->m + f->m - 1 - i);
  return v > 0 ? v : 0;
}

static gstat_status check_options(gstat_ctx *ctx, const char *fn, const gstat_pca_options *o) {
  if (o->n_components < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.n_components=%lld must be >= 0", fn,
                        (long long)o->n_components);
  if (!(o->variance_fraction >= 0 && o->variance_fraction < 1))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.variance_fraction=%g must be in [0, 1)", fn,
                        o->variance_fraction);
  if (o->variance_fraction > 0 && o->n_components > 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: set either opt.n_components or opt.variance_fraction, not both", fn);
  if (o->method < GSTAT_PCA_AUTO || o->method > GSTAT_PCA_RANDOMIZED)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.method=%d is not a gstat_pca_method", fn,
                        (int)o->method);
  if (o->variance_fraction > 0 && o->method == GSTAT_PCA_RANDOMIZED)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: opt.variance_fraction needs an exact method, not RANDOMIZED", fn);
  if (o->oversamples < 0)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.oversamples=%lld must be >= 0", fn,
                        (long long)o->oversamples);
  if (o->power_iterations < -1 || o->power_iterations > GSTAT_PCA_MAX_POWER_ITERATIONS)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: opt.power_iterations=%lld must be -1 (automatic) or in [0, %d]", fn,
                        (long long)o->power_iterations, GSTAT_PCA_MAX_POWER_ITERATIONS);
  return GSTAT_OK;
}

static gstat_pca_method resolve_method(const gstat_pca_options *o, int64_t n, int64_t p) {
  if (o->method != GSTAT_PCA_AUTO) return o->method;
  int64_t r = n < p ? n : p;
  if (o->n_components > 0 && o->n_components < r / 10 && r > 1000) return GSTAT_PCA_RANDOMIZED;
  return p <= n ? GSTAT_PCA_COVARIANCE_EIGH : GSTAT_PCA_GRAM_EIGH;
}

/* Carve the workspace: data, S, w, T, Z in the compute type, then mean and
 * scale in double. With data == false (from an accumulator) only S, w, T. */
static gstat_status carve(gstat_ctx *ctx, fit *f, bool with_data) {
  bool no_S = f->method == GSTAT_PCA_RANDOMIZED || f->eigh_on_device; /* no host eigh */
  size_t sizes[7] = {with_data ? (size_t)(f->batch * f->n * f->p) * f->esz : 0,
                     no_S ? 0 : (size_t)(f->batch * f->m) * (size_t)f->m * f->esz,
                     f->method == GSTAT_PCA_RANDOMIZED ? 0 : (size_t)(f->batch * f->m) * f->esz,
                     (size_t)(f->p * f->kmax) * f->esz,
                     with_data ? (size_t)(f->n * f->kmax) * f->esz : 0,
                     (size_t)(f->batch * f->p) * sizeof(double),
                     (size_t)(f->batch * f->p) * sizeof(double)};
  size_t total = 0, off[7];
  for (int i = 0; i < 7; i++) {
    off[i] = total;
    size_t padded = (sizes[i] + 63) / 64 * 64;
    if (padded < sizes[i] || !gstat_i_add_size(total, padded, &total))
      return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: workspace size overflows", f->fn);
  }
  char *ws = gstat_i_workspace(ctx, GSTAT_WS_PCA, total);
  if (!ws)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes of workspace", f->fn,
                        total);
  f->data = with_data ? ws + off[0] : NULL;
  f->S = ws + off[1];
  f->w = ws + off[2];
  f->T = ws + off[3];
  f->Z = ws + off[4];
  f->mean = (double *)(ws + off[5]);
  f->scale = (double *)(ws + off[6]);
  return GSTAT_OK;
}

/* Column j of dataset b cannot be scaled to unit variance. */
static gstat_status constant_column(gstat_ctx *ctx, const fit *f, int64_t b, int64_t j) {
  if (f->n < 2)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: scaling needs at least 2 rows (dataset %lld, column %lld)", f->fn,
                        (long long)b, (long long)j);
  return gstat_i_fail(ctx, GSTAT_EINVAL,
                      "%s: column %lld of dataset %lld is constant: it cannot be scaled to unit "
                      "variance",
                      f->fn, (long long)j, (long long)b);
}

/* Load, center and scale every dataset into f->data. */
static gstat_status prepare_data(gstat_ctx *ctx, fit *f, const gstat_matrix *X) {
  for (int64_t b = 0; b < f->batch; b++) {
    char *d = data_of(f, b);
    double *mean = f->mean + b * f->p, *scale = f->scale + b * f->p;
    gstat_i_dense_load(X, b, f->ct, d, f->n);
    if (f->opt.center)
      gstat_i_col_means(f->ct, f->n, f->p, d, NULL, 0, mean);
    else
      for (int64_t j = 0; j < f->p; j++) mean[j] = 0;
    gstat_i_center_scale(f->ct, f->n, f->p, d, f->opt.center ? mean : NULL, NULL);
    if (f->opt.scale) {
      gstat_i_col_sd(f->ct, f->n, f->p, d, scale);
      for (int64_t j = 0; j < f->p; j++)
        if (!(scale[j] > 0)) return constant_column(ctx, f, b, j);
      gstat_i_center_scale(f->ct, f->n, f->p, d, NULL, scale);
    } else {
      for (int64_t j = 0; j < f->p; j++) scale[j] = 1;
    }
  }
  return GSTAT_OK;
}

/* The batched eigh of A in place (eigenvalues into w): for k components
 * every eigenvalue (the totals and the noise variance need them) but only k
 * eigenvectors where a backend offers that (the scheduler decides). */
static gstat_status eigen_step(gstat_ctx *ctx, const fit *f, gstat_matrix *A, gstat_matrix *w) {
  int64_t k = f->opt.n_components;
  if (k > 0 && k < A->rows) return gstat_i_sched_eigh_top(ctx, A, k, w);
  return gstat_i_eigh(ctx, A, GSTAT_LOWER, w, A, NULL);
}

/* Co-moment or Gram matrices of every dataset, then one batched eigh. */
static gstat_status decompose(gstat_ctx *ctx, fit *f, bool build) {
  if (build)
    for (int64_t b = 0; b < f->batch; b++) {
      if (f->method == GSTAT_PCA_COVARIANCE_EIGH)
        TRY(gstat_i_syrk(ctx, f->ct, GSTAT_TRANS, f->p, f->n, 1.0, data_of(f, b), f->n, 0.0,
                         S_of(f, b), f->m));
      else
        TRY(gstat_i_syrk(ctx, f->ct, GSTAT_NO_TRANS, f->n, f->p, 1.0, data_of(f, b), f->n, 0.0,
                         S_of(f, b), f->m));
    }
  if (f->eigh) {
    gstat_status st = f->eigh(ctx, f->m, (double *)f->S, (double *)f->w, f->eigh_user);
    if (st != GSTAT_OK)
      return gstat_i_fail(ctx, st, "%s: the eigensolver callback failed (%s)", f->fn,
                          gstat_status_string(st));
    return GSTAT_OK;
  }
  gstat_matrix A = gstat_matrix_col_major(f->S, f->ct, f->batch, f->m, f->m);
  gstat_matrix w = gstat_vector_batch(f->w, f->ct, f->batch, f->m);
  return eigen_step(ctx, f, &A, &w);
}

/* k from the options and, for a variance fraction, the spectra: the
 * smallest k whose cumulative ratio exceeds it (scikit-learn's rule); for a
 * batch, the largest over the datasets. */
static int64_t choose_k(const fit *f) {
  if (f->opt.n_components > 0) return f->opt.n_components;
  if (!(f->opt.variance_fraction > 0)) return f->r;
  int64_t k = 1;
  for (int64_t b = 0; b < f->batch; b++) {
    double total = 0, cum = 0;
    for (int64_t i = 0; i < f->r; i++) total += lambda(f, b, i);
    if (!(total > 0)) continue;
    int64_t kb = f->r;
    for (int64_t i = 0; i < f->r; i++) {
      cum += lambda(f, b, i) / total;
      if (cum > f->opt.variance_fraction) {
        kb = i + 1;
        break;
      }
    }
    if (kb > k) k = kb;
  }
  return k;
}

static gstat_status fill_scores(gstat_ctx *ctx, const fit *f, gstat_pca_result *res, int64_t b);

/* Variances, ratios and singular values of dataset b. On entry
 * explained_variance[b*k + i] holds lambda_i, the sum of squares of the data
 * along component i (descending); total_ss is the sum over all directions and
 * noise_ss over the r - k discarded ones. */
static void fill_variances(const fit *f, gstat_pca_result *res, int64_t b, double total_ss,
                           double noise_ss) {
  int64_t k = res->n_components;
  double denom = f->dof > 0 ? f->dof : 1.0;
  double total = total_ss / denom;
  double *ev = res->explained_variance + b * k;
  for (int64_t i = 0; i < k; i++) {
    double lam = ev[i];
    ev[i] = lam / denom;
    /* no variance at all: 0 / 0, as scikit-learn and R's summary(prcomp) */
    res->explained_variance_ratio[b * k + i] = total > 0 ? ev[i] / total : NAN;
    res->singular_values[b * k + i] = sqrt(lam);
  }
  res->noise_variance[b] = k < f->r && noise_ss > 0 ? noise_ss / denom / (double)(f->r - k) : 0;
  res->total_variance[b] = total;
}

/* Mean, scale, signs and scores of dataset b: the common tail of every method. */
static gstat_status finish_dataset(gstat_ctx *ctx, const fit *f, gstat_pca_result *r, int64_t b) {
  int64_t k = r->n_components;
  gstat_i_pca_fix_signs(r->components + b * k * f->p, k, f->p);
  memcpy(r->mean + b * f->p, f->mean + b * f->p, (size_t)f->p * sizeof(double));
  memcpy(r->scale + b * f->p, f->scale + b * f->p, (size_t)f->p * sizeof(double));
  return r->scores ? fill_scores(ctx, f, r, b) : GSTAT_OK;
}

/* Element b of a device batch, as a batch of its own. */
static gstat_matrix dev_element(const fit *f, const gstat_matrix *m, int64_t b) {
  gstat_matrix e = *m;
  e.data = (char *)m->data + (size_t)(b * m->batch_stride) * f->esz;
  e.batch = 1;
  return e;
}

/* GRAM of device data: f->T (host, p x k) = Xc_b^T U_k, U_k the last k
 * columns of the device's eigenvectors. */
static gstat_status gram_T_device(gstat_ctx *ctx, const fit *f, int64_t b, int64_t k) {
  int64_t n = f->n;
  gstat_matrix Xb = dev_element(f, &f->dX, b), U = dev_element(f, &f->dG, b), T = f->dT;
  U.data = (char *)U.data + (size_t)((n - k) * n) * f->esz;
  U.cols = k;
  T.cols = k;
  TRY(gstat_i_sched_gemm(ctx, f->fn, GSTAT_TRANS, GSTAT_NO_TRANS, 1.0, &Xb, &U, 0.0, &T));
  gstat_matrix hT = gstat_matrix_col_major(f->T, f->ct, 1, f->p, k);
  return gstat_i_sched_copy(ctx, f->fn, "T", &T, &hT);
}

/* Components of dataset b (rows of res->components) from the eigenvectors. */
static gstat_status fill_components(gstat_ctx *ctx, const fit *f, gstat_pca_result *res, int64_t b,
                                    const double *lam) {
  int64_t k = res->n_components, p = f->p, m = f->m;
  double *comp = res->components + b * k * p;
  const char *S = S_of(f, b);
  if (f->method == GSTAT_PCA_COVARIANCE_EIGH) {
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < p; j++) comp[i * p + j] = get(f, S, j + (m - 1 - i) * m);
    return GSTAT_OK;
  }
  /* GRAM: T (p x k) = Xc^T U_k, the top k eigenvectors being the last k
   * (contiguous) columns of S in ascending order. */
  if (f->dev)
    TRY(gram_T_device(ctx, f, b, k));
  else
    TRY(gstat_i_gemm(ctx, f->ct, GSTAT_TRANS, GSTAT_NO_TRANS, p, k, f->n, 1.0, data_of(f, b), f->n,
                     S + (size_t)((m - k) * m) * f->esz, m, 0.0, f->T, p));
  double eps = f->ct == GSTAT_F64 ? DBL_EPSILON : FLT_EPSILON;
  double tiny = lam[0] * (double)(f->n > p ? f->n : p) * eps;
  for (int64_t i = 0; i < k; i++) {
    double *row = comp + i * p;
    for (int64_t j = 0; j < p; j++) row[j] = get(f, f->T, j + (k - 1 - i) * p);
    double nrm = gstat_i_pca_norm(row, p);
    if (lam[i] > tiny && nrm > 0)
      for (int64_t j = 0; j < p; j++) row[j] /= nrm; /* = 1/sigma up to rounding */
    else
      gstat_i_pca_complete_row(comp, i, p);
  }
  /* Xc^T u / sigma loses orthogonality like eps * (sigma_1 / sigma_i)^2: the
   * larger components are the accurate ones, so orthogonalize each row
   * against those before it. */
  return gstat_i_pca_orthonormalize_rows(ctx, comp, k, p);
}

/* scores (n x k) = Xc V^T, whitened when asked, into res->scores. */
static gstat_status fill_scores(gstat_ctx *ctx, const fit *f, gstat_pca_result *res, int64_t b) {
  int64_t k = res->n_components, p = f->p, n = f->n;
  const double *comp = res->components + b * k * p;
  double *out = res->scores + b * n * k;
  if (f->src) {
    gstat_matrix Y = gstat_matrix_row_major(res->scores, GSTAT_F64, f->batch, n, k);
    TRY(gstat_i_sched_project(ctx, f->fn, f->src, b, f->mean + b * p,
                              f->opt.scale ? f->scale + b * p : NULL, comp, NULL, k, &Y));
  } else {
    const void *V = comp; /* k x p row-major is p x k column-major */
    if (f->ct != GSTAT_F64) {
      for (int64_t i = 0; i < k * p; i++) set(f, f->T, i, comp[i]);
      V = f->T;
    }
    TRY(gstat_i_gemm(ctx, f->ct, GSTAT_NO_TRANS, GSTAT_NO_TRANS, n, k, p, 1.0, data_of(f, b), n, V,
                     p, 0.0, f->Z, n));
    for (int64_t i = 0; i < k; i++)
      for (int64_t row = 0; row < n; row++) out[row * k + i] = get(f, f->Z, row + i * n);
  }
  if (f->opt.whiten)
    for (int64_t i = 0; i < k; i++) {
      double ev = res->explained_variance[b * k + i];
      double factor = ev > 0 ? 1.0 / sqrt(ev) : 0.0;
      for (int64_t row = 0; row < n; row++) out[row * k + i] *= factor;
    }
  return GSTAT_OK;
}

/* Everything after the eigen decompositions, for the exact methods. */
static gstat_status finish_exact(gstat_ctx *ctx, fit *f, gstat_pca_result **res) {
  int64_t k = choose_k(f);
  bool scores = (f->data || f->src) && f->opt.compute_scores;
  TRY(gstat_i_pca_result_prepare(ctx, f->fn, res, f->batch, f->n, f->p, k, scores));
  gstat_pca_result *r = *res;
  r->method = f->method;
  r->whiten = f->opt.whiten != 0;
  for (int64_t b = 0; b < f->batch; b++) {
    double total_ss = 0, noise_ss = 0;
    double *lam = r->explained_variance + b * k;
    for (int64_t i = 0; i < f->r; i++) {
      double l = lambda(f, b, i);
      total_ss += l;
      if (i < k)
        lam[i] = l;
      else
        noise_ss += l;
    }
    TRY(fill_components(ctx, f, r, b, lam));
    fill_variances(f, r, b, total_ss, noise_ss);
    TRY(finish_dataset(ctx, f, r, b));
    TRY(gstat_i_progress(ctx, f->fn, b + 1, f->batch));
  }
  return GSTAT_OK;
}

/* RANDOMIZED: random vectors in the sketch; oversamples beyond min(n, p) -
 * k add nothing: the sketch spans the range. */
static int64_t sketch_size(const fit *f, int64_t k) {
  return f->opt.oversamples >= f->r - k ? f->r : k + f->opt.oversamples;
}

/* The sum of squares of dataset b's centred device data. */
static gstat_status device_total_ss(gstat_ctx *ctx, const fit *f, int64_t b, double *total) {
  size_t bytes = sizeof(double) * (size_t)f->p;
  double *ss = gstat_i_alloc(ctx, bytes);
  if (!ss) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", f->fn, bytes);
  gstat_matrix Xb = dev_element(f, &f->dX, b), vb = dev_element(f, &f->dp.vec, b);
  gstat_status st = gstat_i_dev_sumsq(ctx, f->fn, &Xb, &vb, ss);
  *total = 0;
  for (int64_t j = 0; j < f->p; j++) *total += ss[j];
  gstat_i_free(ctx, ss, bytes);
  return st;
}

/* RANDOMIZED: per dataset, the top k singular triplets of Xc. */
static gstat_status fit_randomized(gstat_ctx *ctx, fit *f, int64_t k, gstat_pca_result **res) {
  TRY(gstat_i_pca_result_prepare(ctx, f->fn, res, f->batch, f->n, f->p, k,
                                 f->opt.compute_scores != 0));
  gstat_pca_result *r = *res;
  r->method = f->method;
  r->whiten = f->opt.whiten != 0;
  int64_t l = sketch_size(f, k);
  int64_t q = f->opt.power_iterations;
  if (q < 0) q = (double)k < 0.1 * (double)f->r ? 7 : 4;
  for (int64_t b = 0; b < f->batch; b++) {
    double *sigma = r->singular_values + b * k, *lam = r->explained_variance + b * k;
    gstat_matrix Xb = f->dev ? dev_element(f, &f->dX, b)
                             : gstat_matrix_col_major(data_of(f, b), f->ct, 1, f->n, f->p);
    TRY(gstat_i_pca_randomized(ctx, &Xb, f->dev ? &f->dY : NULL, f->dev ? &f->dZ : NULL, k, l, q,
                               f->opt.seed, sigma, r->components + b * k * f->p));
    double total_ss = 0, kept_ss = 0;
    if (f->dev) {
      TRY(device_total_ss(ctx, f, b, &total_ss));
    } else {
      const char *d = data_of(f, b);
      for (int64_t i = 0; i < f->n * f->p; i++) total_ss += get(f, d, i) * get(f, d, i);
    }
    for (int64_t i = 0; i < k; i++) {
      lam[i] = sigma[i] * sigma[i];
      kept_ss += lam[i];
    }
    fill_variances(f, r, b, total_ss, total_ss - kept_ss);
    TRY(finish_dataset(ctx, f, r, b));
    TRY(gstat_i_progress(ctx, f->fn, b + 1, f->batch));
  }
  return GSTAT_OK;
}

/* The exact covariance-eigh fit from co-moments (f->S) and means (f->mean)
 * of every dataset, each of `weight` rows: moments about 0 when not
 * centering, the columns' deviations when scaling, then the eigen
 * decompositions and the result. */
static gstat_status fit_from_moments(gstat_ctx *ctx, fit *f, double weight,
                                     gstat_pca_result **res) {
  int64_t p = f->p;
  for (int64_t b = 0; b < f->batch; b++) {
    char *S = S_of(f, b);
    double *mean = f->mean + b * p, *scale = f->scale + b * p;
    if (!f->opt.center) {
      for (int64_t j = 0; j < p; j++)
        for (int64_t i = 0; i < p; i++)
          set(f, S, i + j * p, get(f, S, i + j * p) + weight * mean[i] * mean[j]);
      for (int64_t j = 0; j < p; j++) mean[j] = 0;
    }
    for (int64_t j = 0; j < p; j++) {
      scale[j] = 1;
      if (!f->opt.scale) continue;
      scale[j] = f->dof > 0 ? sqrt(get(f, S, j + j * p) / f->dof) : 0;
      if (!(scale[j] > 0)) return constant_column(ctx, f, b, j);
    }
    if (f->opt.scale)
      for (int64_t j = 0; j < p; j++)
        for (int64_t i = 0; i < p; i++)
          set(f, S, i + j * p, get(f, S, i + j * p) / (scale[i] * scale[j]));
  }
  TRY(decompose(ctx, f, false));
  return finish_exact(ctx, f, res);
}

/* A NaN or Inf showed in the moments (finite false): name it in X. */
static gstat_status check_moments(gstat_ctx *ctx, const fit *f, const gstat_matrix *X,
                                  bool finite) {
  int64_t b0, i0, j0;
  gstat_status st = GSTAT_OK;
  if (!finite && gstat_i_sched_find_nonfinite(ctx, f->fn, "X", X, &b0, &i0, &j0, &st))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                        "pca: X[%lld] row %lld column %lld is NaN or Inf (PCA takes no missing "
                        "values)",
                        (long long)b0, (long long)i0, (long long)j0);
  return st;
}

/* The covariance fit of centred device data as a chain that stays there: the
 * co-moments into device memory, their diagonals (the deviations) to the
 * host, the scaling and the batched eigh on the device; only the
 * eigenvectors and eigenvalues come back. GSTAT_EUNSUPPORTED (no message)
 * when the device offers no memory for the chain. */
static gstat_status fit_device_chain(gstat_ctx *ctx, fit *f, const gstat_matrix *X,
                                     gstat_pca_result **res) {
  int64_t p = f->p, nb = f->batch;
  size_t sbytes, wbytes;
  if (!gstat_i_mul_size((size_t)(nb * p), (size_t)p * f->esz, &sbytes) ||
      !gstat_i_mul_size((size_t)(nb * p), f->esz, &wbytes))
    return GSTAT_EUNSUPPORTED; /* no room for the chain: step by step */
  void *dev;
  gstat_status st = gstat_i_sched_device_memory(ctx, f->fn, X, sbytes + wbytes + 64, &dev);
  if (st != GSTAT_OK) return st;
  TRY(carve(ctx, f, false));
  gstat_matrix S = gstat_matrix_col_major(dev, f->ct, nb, p, p);
  gstat_matrix w = gstat_vector_batch((char *)dev + (sbytes + 63) / 64 * 64, f->ct, nb, p);
  S.location = w.location = X->location;
  S.device = w.device = X->device;
  for (int64_t b = 0; b < nb; b++) {
    gstat_matrix Sb = S;
    Sb.data = (char *)dev + (size_t)(b * p * p) * f->esz;
    Sb.batch = 1;
    TRY(gstat_i_sched_comoment(ctx, f->fn, X, b, f->mean + b * p, NULL, &Sb));
  }
  gstat_matrix diag = S, sd = gstat_vector_batch(f->scale, GSTAT_F64, nb, p);
  diag.cols = 1;
  diag.row_stride = p + 1;
  TRY(gstat_i_sched_copy(ctx, f->fn, "S", &diag, &sd));
  bool finite = true;
  for (int64_t i = 0; i < nb * p; i++) finite &= isfinite(f->mean[i]) && isfinite(f->scale[i]);
  TRY(check_moments(ctx, f, X, finite));
  if (!finite) /* not explained by X: the device's fault; the caller goes step by step */
    return gstat_i_fail(ctx, GSTAT_EBACKEND, "pca: the device's co-moment is not finite");
  for (int64_t b = 0; b < nb; b++)
    for (int64_t j = 0; j < p; j++) {
      double *sc = f->scale + b * p + j;
      *sc = f->opt.scale ? (f->dof > 0 ? sqrt(*sc / f->dof) : 0) : 1;
      if (!(*sc > 0)) return constant_column(ctx, f, b, j);
    }
  if (f->opt.scale) TRY(gstat_i_sched_scale_sym(ctx, f->fn, &S, f->scale));
  TRY(eigen_step(ctx, f, &S, &w));
  gstat_matrix hS = gstat_matrix_col_major(f->S, f->ct, nb, p, p);
  gstat_matrix hw = gstat_vector_batch(f->w, f->ct, nb, p);
  int64_t k = f->opt.n_components;
  if (k > 0 && k < p) { /* only the top k eigenvectors are asked for (and computed) */
    size_t off = (size_t)((p - k) * p) * f->esz;
    hS.data = (char *)hS.data + off;
    S.data = (char *)S.data + off;
    hS.cols = S.cols = k;
  }
  TRY(gstat_i_sched_copy(ctx, f->fn, "S", &S, &hS));
  TRY(gstat_i_sched_copy(ctx, f->fn, "w", &w, &hw));
  f->src = X;
  return finish_exact(ctx, f, res);
}

/* COVARIANCE_EIGH: means and co-moments by the scheduler's fused co-moment
 * (host or device data, no centred copy of X); scores, when asked, by its
 * centred projection over X. A NaN or Inf shows up in the means; only then
 * is X scanned to name it. */
static gstat_status fit_one_pass(gstat_ctx *ctx, fit *f, const gstat_matrix *X,
                                 gstat_pca_result **res) {
  if (X->location != GSTAT_HOST && f->opt.center && !f->eigh &&
      gstat_i_sched_eigh_stays_on_device(ctx, f->ct, f->batch, f->p)) {
    gstat_status st = fit_device_chain(ctx, f, X, res);
    /* no device memory for the chain, or a device failure in it: step by
     * step below, where each primitive falls back by itself */
    if (st != GSTAT_EUNSUPPORTED && st != GSTAT_ENOMEM && st != GSTAT_EBACKEND) return st;
    ctx->last_error[0] = '\0';
  }
  TRY(carve(ctx, f, false));
  size_t pp = (size_t)(f->p * f->p) * sizeof(double);
  double *M = gstat_i_workspace(ctx, GSTAT_WS_COV, pp);
  if (!M) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", f->fn, pp);
  for (int64_t b = 0; b < f->batch; b++) {
    double *mean = f->mean + b * f->p;
    char *S = S_of(f, b);
    TRY(gstat_i_sched_comoment(ctx, f->fn, X, b, mean, M, NULL));
    bool finite = true;
    for (int64_t j = 0; j < f->p; j++) finite &= isfinite(mean[j]) && isfinite(M[j + j * f->p]);
    for (int64_t i = 0; i < f->p * f->p; i++) set(f, S, i, M[i]);
    TRY(check_moments(ctx, f, X, finite));
  }
  f->src = X;
  return fit_from_moments(ctx, f, (double)f->n, res);
}

/* The other methods on host data: a centred (scaled) copy, then the Gram
 * matrix or the randomized range finder. */
static gstat_status fit_from_copy(gstat_ctx *ctx, fit *f, const gstat_matrix *X, int64_t k,
                                  gstat_pca_result **res) {
  int64_t b0, i0, j0;
  if (gstat_i_find_nonfinite(X, GSTAT_I_TRI_FULL, &b0, &i0, &j0))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                        "pca: X[%lld] row %lld column %lld is NaN or Inf (PCA takes no missing "
                        "values)",
                        (long long)b0, (long long)i0, (long long)j0);
  TRY(carve(ctx, f, true));
  TRY(prepare_data(ctx, f, X));
  if (f->method == GSTAT_PCA_RANDOMIZED) return fit_randomized(ctx, f, k, res);
  TRY(decompose(ctx, f, true));
  return finish_exact(ctx, f, res);
}

/* The device buffers of GRAM or RANDOMIZED (k components) in r: a sizing
 * pass when r has no base yet, else the matrices themselves. */
static void device_layout(fit *f, int64_t k, gstat_i_dev_region *r) {
  int64_t nb = f->batch, n = f->n, p = f->p;
  f->dp.Xc = gstat_i_dev_take(r, f->ct, nb, n, p);
  f->dp.Xs = gstat_i_dev_take(r, f->ct, f->opt.scale ? nb : 0, n, p);
  f->dp.ones = gstat_i_dev_take(r, f->ct, 1, n, 1);
  f->dp.vec = gstat_i_dev_take(r, f->ct, nb, 1, p);
  if (f->method == GSTAT_PCA_GRAM_EIGH) {
    f->dG = gstat_i_dev_take(r, f->ct, nb, n, n);
    f->dw = gstat_i_dev_take(r, f->ct, nb, n, 1);
    f->dT = gstat_i_dev_take(r, f->ct, 1, p, f->kmax);
  } else {
    f->dY = gstat_i_dev_take(r, f->ct, 1, n, sketch_size(f, k));
    f->dZ = gstat_i_dev_take(r, f->ct, 1, p, sketch_size(f, k));
  }
}

/* GRAM of the device's centred data: the Gram matrices' lower triangles,
 * their eigh where gstat_eigh would run them (small ones on the host, whose
 * top eigenvectors then go back), the eigenvalues to the host. */
static gstat_status gram_device(gstat_ctx *ctx, fit *f) {
  int64_t nb = f->batch, n = f->n;
  gstat_matrix hS = gstat_matrix_col_major(f->S, f->ct, nb, n, n);
  gstat_matrix hw = gstat_vector_batch(f->w, f->ct, nb, n);
  TRY(gstat_i_sched_syrk_lower(ctx, f->fn, GSTAT_NO_TRANS, &f->dX, &f->dG)); /* eigh reads it */
  if (f->eigh_on_device) {
    TRY(eigen_step(ctx, f, &f->dG, &f->dw));
    return gstat_i_sched_copy(ctx, f->fn, "w", &f->dw, &hw);
  }
  TRY(gstat_i_sched_copy(ctx, f->fn, "S", &f->dG, &hS));
  TRY(eigen_step(ctx, f, &hS, &hw));
  gstat_matrix hu = hS, du = f->dG; /* the top kmax eigenvectors */
  size_t off = (size_t)((n - f->kmax) * n) * f->esz;
  hu.data = (char *)hS.data + off;
  du.data = (char *)f->dG.data + off;
  hu.cols = du.cols = f->kmax;
  return gstat_i_sched_copy(ctx, f->fn, "U", &hu, &du);
}

/* GRAM and RANDOMIZED of device data, every large step on the device: the
 * centred (scaled) copy, the Gram matrices or the sketches; the scores by
 * the centred projection over X. GSTAT_EUNSUPPORTED, GSTAT_ENOMEM or
 * GSTAT_EBACKEND from the device: the caller works on a host copy instead. */
static gstat_status fit_on_device(gstat_ctx *ctx, fit *f, const gstat_matrix *X, int64_t k,
                                  gstat_pca_result **res) {
  int64_t b0, i0, j0;
  gstat_status st = GSTAT_OK;
  if (gstat_i_sched_find_nonfinite(ctx, f->fn, "X", X, &b0, &i0, &j0, &st))
    return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                        "pca: X[%lld] row %lld column %lld is NaN or Inf (PCA takes no missing "
                        "values)",
                        (long long)b0, (long long)i0, (long long)j0);
  TRY(st);
  gstat_i_dev_region reg = {NULL, 0, X->location, X->device};
  device_layout(f, k, &reg);
  TRY(gstat_i_dev_region_open(ctx, f->fn, X, &reg));
  device_layout(f, k, &reg);
  f->eigh_on_device = f->method == GSTAT_PCA_GRAM_EIGH &&
                      gstat_i_sched_eigh_stays_on_device(ctx, f->ct, f->batch, f->n);
  TRY(carve(ctx, f, false));
  size_t hbytes = sizeof(double) * (size_t)(f->batch * f->p);
  double *h = gstat_i_alloc(ctx, hbytes ? hbytes : 1);
  if (!h) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes", f->fn, hbytes);
  int64_t bad;
  st = gstat_i_dev_prepare(ctx, f->fn, X, &f->dp, f->opt.center, f->opt.scale, f->mean, f->scale, h,
                           &bad);
  gstat_i_free(ctx, h, hbytes ? hbytes : 1);
  TRY(st);
  if (bad >= 0) return constant_column(ctx, f, bad / f->p, bad % f->p);
  f->dX = f->opt.scale ? f->dp.Xs : f->dp.Xc;
  f->dev = true;
  f->src = X;
  if (f->method == GSTAT_PCA_RANDOMIZED) return fit_randomized(ctx, f, k, res);
  TRY(gram_device(ctx, f));
  return finish_exact(ctx, f, res);
}

gstat_status gstat_pca(gstat_ctx *ctx, const gstat_matrix *X, const gstat_pca_options *opt,
                       gstat_pca_result **res) {
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  fit f = {.fn = "pca"};
  if (opt)
    f.opt = *opt;
  else
    gstat_pca_options_init(&f.opt);
  if (!X) return gstat_i_fail(ctx, GSTAT_EINVAL, "pca: X is NULL");
  if (!res) return gstat_i_fail(ctx, GSTAT_EINVAL, "pca: res is NULL");
  TRY(check_options(ctx, f.fn, &f.opt));
  TRY(gstat_i_check_matrix(ctx, f.fn, "X", X));
  if (X->rows < 1 || X->cols < 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "pca: X is %lld x %lld; PCA needs n >= 1 and p >= 1",
                        (long long)X->rows, (long long)X->cols);
  f.batch = X->batch;
  f.n = X->rows;
  f.p = X->cols;
  f.r = f.n < f.p ? f.n : f.p;
  if (f.opt.n_components > f.r)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "pca: opt.n_components=%lld exceeds min(n, p) = %lld",
                        (long long)f.opt.n_components, (long long)f.r);
  f.method = resolve_method(&f.opt, f.n, f.p);
  f.dof = (double)(f.n - 1);
  f.ct = gstat_i_compute_dtype(X->dtype);
  f.esz = gstat_dtype_size(f.ct);
  f.m = f.method == GSTAT_PCA_GRAM_EIGH ? f.n : f.p;
  int64_t k = f.opt.n_components > 0 ? f.opt.n_components : f.r;
  f.kmax = f.opt.variance_fraction > 0 ? f.r : k;
  if (f.batch == 0) return gstat_i_pca_result_prepare(ctx, f.fn, res, 0, f.n, f.p, k, false);
  /* device data: AUTO takes an exact method by the shape, as on the host
   * (RANDOMIZED only when asked: the device's co-moment is cheap) */
  if (X->location != GSTAT_HOST && f.method == GSTAT_PCA_RANDOMIZED &&
      f.opt.method == GSTAT_PCA_AUTO) {
    f.method = f.p <= f.n ? GSTAT_PCA_COVARIANCE_EIGH : GSTAT_PCA_GRAM_EIGH;
    f.m = f.method == GSTAT_PCA_GRAM_EIGH ? f.n : f.p;
  }
  if (f.method == GSTAT_PCA_COVARIANCE_EIGH) return fit_one_pass(ctx, &f, X, res);
  if (X->location == GSTAT_HOST) return fit_from_copy(ctx, &f, X, k, res);
  gstat_status dst = fit_on_device(ctx, &f, X, k, res);
  if (dst != GSTAT_EUNSUPPORTED && dst != GSTAT_ENOMEM && dst != GSTAT_EBACKEND) return dst;
  ctx->last_error[0] = '\0';
  f.dev = f.eigh_on_device = false;
  f.src = NULL;
  gstat_i_staged hx; /* no device memory for the chain: on a host copy */
  TRY(gstat_i_sched_stage(ctx, f.fn, "X", X, true, &hx));
  gstat_status st = fit_from_copy(ctx, &f, &hx.m, k, res);
  gstat_i_sched_release(ctx, &hx);
  return st;
}

gstat_status gstat_pca_from_accum(gstat_ctx *ctx, const gstat_cov_accum *acc,
                                  const gstat_pca_options *opt, gstat_pca_result **res) {
  return gstat_pca_from_accum_eigh(ctx, acc, opt, NULL, NULL, res);
}

gstat_status gstat_pca_from_accum_eigh(gstat_ctx *ctx, const gstat_cov_accum *acc,
                                       const gstat_pca_options *opt, gstat_pca_eigh_fn eigh,
                                       void *user, gstat_pca_result **res) {
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  fit f = {.fn = "pca_from_accum", .eigh = eigh, .eigh_user = user};
  if (opt)
    f.opt = *opt;
  else
    gstat_pca_options_init(&f.opt);
  if (!acc) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: acc is NULL", f.fn);
  if (!res) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: res is NULL", f.fn);
  TRY(check_options(ctx, f.fn, &f.opt));
  if (f.opt.method != GSTAT_PCA_AUTO && f.opt.method != GSTAT_PCA_COVARIANCE_EIGH)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: an accumulator supports only the COVARIANCE_EIGH method", f.fn);
  if (acc->rows < 1)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: the accumulator holds no rows", f.fn);
  f.batch = 1;
  f.n = acc->rows;
  f.p = acc->p;
  f.m = f.p;
  f.r = f.n < f.p ? f.n : f.p;
  f.dof = acc->weight - 1;
  f.method = GSTAT_PCA_COVARIANCE_EIGH;
  f.ct = GSTAT_F64;
  f.esz = sizeof(double);
  if (f.opt.n_components > f.r)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: opt.n_components=%lld exceeds min(n, p) = %lld",
                        f.fn, (long long)f.opt.n_components, (long long)f.r);
  f.kmax = f.opt.n_components > 0 ? f.opt.n_components : f.r;
  f.opt.compute_scores = 0;
  const double *mean = gstat_i_cov_accum_mean(acc), *M = gstat_i_cov_accum_comoment(acc);
  for (int64_t i = 0; i < f.p * f.p; i++)
    if (!isfinite(M[i]))
      return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                          "%s: the accumulated co-moment holds NaN/Inf (missing values seen in "
                          "GSTAT_MISSING_EVERYTHING mode?)",
                          f.fn);
  TRY(carve(ctx, &f, false));
  memcpy(f.S, M, sizeof(double) * (size_t)(f.p * f.p));
  memcpy(f.mean, mean, sizeof(double) * (size_t)f.p);
  return fit_from_moments(ctx, &f, acc->weight, res);
}
