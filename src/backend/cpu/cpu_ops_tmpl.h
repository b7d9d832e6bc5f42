/* Per-element CPU routines, instantiated per compute type by cpu_ops.c with
 * T (float/double), SFX (f32/f64) and LP(x) (LAPACKE_s##x / LAPACKE_d##x). */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

/* Fix the sign of each of the `cols` eigenvectors (length n): largest-magnitude
 * entry positive, the first one on ties (DESIGN.md), so every backend returns
 * the same vectors. */
static void FN(normalize_signs)(T *v, int64_t n, int64_t cols, int64_t ld) {
  for (int64_t j = 0; j < cols; j++) {
    T *c = v + j * ld;
    int64_t at = FN(gstat_i_first_abs_max)(c, n);
    if (at < n && c[at] < 0)
      for (int64_t i = 0; i < n; i++) c[i] = -c[i];
  }
}

/* Zero the strict upper triangle (a factor written as a full matrix). */
static void FN(zero_upper)(T *a, int64_t n, int64_t ld) {
  for (int64_t j = 1; j < n; j++)
    for (int64_t i = 0; i < j; i++) a[i + j * ld] = 0;
}

/* ---- eigh ---- */

static int64_t FN(eigh_one)(const gstat_i_cpu_job *job, int64_t b, char *ws) {
  int64_t n = job->n;
  T *a = (T *)ws;
  T *w = (T *)(ws + gstat_i_align64(sizeof(T) * (size_t)(n * n)));
  char *kw = (char *)w + gstat_i_align64(sizeof(T) * (size_t)n);
  int want = job->out != NULL;
  FN(gstat_i_pack_lower)(job->A, b, job->uplo, a, n);
  int info = job->small ? FN(gstat_i_eigh_small)(n, a, n, w, want, kw)
                        : FN(gstat_i_eigh_lapack)(
                              n, a, n, w, want, (T *)kw,
                              (int *)(kw + gstat_i_align64(sizeof(T) * (size_t)job->lwork)));
  if (info != 0) {
    gstat_i_fill_nan(job->w, b);
    if (want) gstat_i_fill_nan(job->out, b);
    return info;
  }
  FN(gstat_i_unpack_full)(w, n, job->w, b);
  if (want) {
    FN(normalize_signs)(a, n, n, n);
    FN(gstat_i_unpack_full)(a, n, job->out, b);
  }
  return 0;
}

bool FN(gstat_i_cpu_eigh_setup)(gstat_i_cpu_job *job) {
  int64_t n = job->n;
  int want = job->out != NULL;
  size_t kernel;
  job->small = n <= FN(eigh_small_max);
  if (job->small) {
    kernel = gstat_i_eigh_small_workspace(n, want, sizeof(T));
  } else {
    gstat_i_eigh_lapack_ws q = gstat_i_eigh_lapack_workspace(n, want, sizeof(T));
    job->lwork = q.work_elems;
    job->liwork = q.iwork_elems;
    kernel =
        gstat_i_align64(sizeof(T) * (size_t)q.work_elems) + sizeof(int) * (size_t)q.iwork_elems;
  }
  size_t mat;
  if (!gstat_i_mul_size((size_t)n * sizeof(T), (size_t)n, &mat)) return false;
  job->per_thread =
      gstat_i_align64(mat) + gstat_i_align64(sizeof(T) * (size_t)n) + gstat_i_align64(kernel);
  job->one = FN(eigh_one);
  return true;
}

/* ---- Cholesky ---- */

static int64_t FN(chol_one)(const gstat_i_cpu_job *job, int64_t b, char *ws) {
  int64_t n = job->n;
  T *a = (T *)ws;
  FN(gstat_i_pack_lower)(job->A, b, job->uplo, a, n);
  int info = job->small
                 ? FN(gstat_i_chol_small)(n, a, n)
                 : (int)LP(potrf_work)(LAPACK_COL_MAJOR, 'L', (lapack_int)n, a, (lapack_int)n);
  if (info != 0) {
    gstat_i_fill_nan(job->out, b);
    return info;
  }
  FN(zero_upper)(a, n, n);
  if (job->uplo == GSTAT_LOWER) {
    FN(gstat_i_unpack_full)(a, n, job->out, b);
  } else {
    gstat_matrix t = gstat_i_transposed(job->out);
    FN(gstat_i_unpack_full)(a, n, &t, b);
  }
  return 0;
}

/* LANES matrices b0, b0+1, ... interleaved (chol_lanes.h), factored
 * together; only for inputs and outputs of the compute type. */
static void FN(chol_group)(const gstat_i_cpu_job *job, int64_t b0, char *ws, int64_t *info) {
  const gstat_matrix *A = job->A;
  int64_t n = job->n, bs = A->batch_stride;
  int64_t rs = job->uplo == GSTAT_LOWER ? A->row_stride : A->col_stride;
  int64_t cs = job->uplo == GSTAT_LOWER ? A->col_stride : A->row_stride;
  T *a = (T *)ws;
  const T *src = (const T *)A->data + b0 * bs;
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = j; i < n; i++) {
      T *d = a + (i + j * n) * LANES;
      const T *s = src + i * rs + j * cs;
      for (int64_t l = 0; l < LANES; l++) d[l] = s[l * bs];
    }
  FN(gstat_i_chol_lanes)(n, a, info + b0);
  /* L(i, j) into out(i, j), or U = L^T into out(j, i) */
  gstat_matrix o = job->uplo == GSTAT_LOWER ? *job->out : gstat_i_transposed(job->out);
  for (int64_t l = 0; l < LANES; l++) {
    if (info[b0 + l] != 0) {
      gstat_i_fill_nan(job->out, b0 + l);
      continue;
    }
    T *d = (T *)o.data + (b0 + l) * o.batch_stride;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++)
        d[i * o.row_stride + j * o.col_stride] = j <= i ? a[(i + j * n) * LANES + l] : 0;
  }
}

bool FN(gstat_i_cpu_chol_setup)(gstat_i_cpu_job *job) {
  size_t mat;
  if (!gstat_i_mul_size((size_t)job->n * sizeof(T), (size_t)job->n, &mat)) return false;
  job->small = job->n <= FN(chol_small_max);
  job->per_thread = gstat_i_align64(mat);
  job->one = FN(chol_one);
  if (job->n <= FN(chol_lanes_max) && job->A->dtype == NATIVE && job->out->dtype == NATIVE) {
    job->group = FN(chol_group);
    job->lanes = LANES;
    job->per_thread = gstat_i_align64(mat * LANES);
  }
  return true;
}

/* ---- solves: both pack the triangle as a lower one and B as a dense block ---- */

static bool FN(solve_workspace)(gstat_i_cpu_job *job) {
  size_t mat, rhs;
  if (!gstat_i_mul_size((size_t)job->n * sizeof(T), (size_t)job->n, &mat) ||
      !gstat_i_mul_size((size_t)job->n * sizeof(T), (size_t)job->B->cols, &rhs))
    return false;
  job->per_thread = gstat_i_align64(mat) + gstat_i_align64(rhs);
  return true;
}

/* 1-based index of the first zero on the diagonal, 0 when none. */
static int64_t FN(zero_diagonal)(const T *l, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (l[i + i * n] == 0) return i + 1;
  return 0;
}

static int64_t FN(cholsolve_one)(const gstat_i_cpu_job *job, int64_t b, char *ws) {
  int64_t n = job->n, nrhs = job->B->cols;
  T *l = (T *)ws;
  T *x = (T *)(ws + gstat_i_align64(sizeof(T) * (size_t)(n * n)));
  FN(gstat_i_pack_lower)(job->A, b, job->uplo, l, n);
  int64_t zero = FN(zero_diagonal)(l, n);
  if (zero) {
    gstat_i_fill_nan(job->out, b);
    return zero;
  }
  FN(gstat_i_pack_full)(job->B, b, x, n);
  LP(potrs_work)
  (LAPACK_COL_MAJOR, 'L', (lapack_int)n, (lapack_int)nrhs, l, (lapack_int)n, x, (lapack_int)n);
  FN(gstat_i_unpack_full)(x, n, job->out, b);
  return 0;
}

bool FN(gstat_i_cpu_cholsolve_setup)(gstat_i_cpu_job *job) {
  job->one = FN(cholsolve_one);
  return FN(solve_workspace)(job);
}

static int64_t FN(trsolve_one)(const gstat_i_cpu_job *job, int64_t b, char *ws) {
  int64_t n = job->n, nrhs = job->B->cols;
  T *t = (T *)ws;
  T *x = (T *)(ws + gstat_i_align64(sizeof(T) * (size_t)(n * n)));
  FN(gstat_i_pack_lower)(job->A, b, job->uplo, t, n);
  if (job->diag == GSTAT_NON_UNIT) {
    int64_t zero = FN(zero_diagonal)(t, n);
    if (zero) {
      gstat_i_fill_nan(job->out, b);
      return zero;
    }
  }
  /* An upper T was packed as its transpose, so the operation flips. */
  int flip = (job->trans == GSTAT_TRANS) != (job->uplo == GSTAT_UPPER);
  FN(gstat_i_pack_full)(job->B, b, x, n);
  LP(trtrs_work)
  (LAPACK_COL_MAJOR, 'L', flip ? 'T' : 'N', job->diag == GSTAT_UNIT ? 'U' : 'N', (lapack_int)n,
   (lapack_int)nrhs, t, (lapack_int)n, x, (lapack_int)n);
  FN(gstat_i_unpack_full)(x, n, job->out, b);
  return 0;
}

bool FN(gstat_i_cpu_trsolve_setup)(gstat_i_cpu_job *job) {
  job->one = FN(trsolve_one);
  return FN(solve_workspace)(job);
}

/* ---- the gradient through eigh: V (diag(gw) + F o (V^T gV - gV^T V)) V^T ---- */

/* inner := F o (M - M^T) with gw on the diagonal (gstat_eigh_backward's F:
 * 1 / (2 (w_j - w_i)), broadened by b > 0, zero within a degenerate block). */
static void FN(backward_inner)(T *inner, const T *m, const T *w, const T *gw, int64_t n,
                               double broadening) {
  double wmax = 0;
  for (int64_t k = 0; k < n; k++) wmax = fmax(wmax, fabs((double)w[k]));
  const double tol = (double)n * EPSILON * wmax;
  /* F is antisymmetric and so is M - M^T: inner is symmetric, one pair at a time */
  for (int64_t j = 0; j < n; j++) {
    inner[j + j * n] = gw ? gw[j] : 0;
    for (int64_t i = 0; i < j; i++) {
      const double gap = (double)w[j] - (double)w[i];
      const double f = fabs(gap) <= tol ? 0.0
                       : broadening > 0 ? gap / (2 * (gap * gap + broadening))
                                        : 0.5 / gap;
      inner[i + j * n] = inner[j + i * n] = (T)(((double)m[i + j * n] - m[j + i * n]) * f);
    }
  }
}

static int64_t FN(eigh_backward_one)(const gstat_i_cpu_job *job, int64_t b, char *ws) {
  const int64_t n = job->n;
  const size_t mat = gstat_i_align64(sizeof(T) * (size_t)(n * n));
  /* g holds gV, then the weighted inner matrix, then gA */
  T *v = (T *)ws, *g = (T *)(ws + mat), *m = (T *)(ws + 2 * mat);
  T *w = (T *)(ws + 3 * mat), *gw = w + n;
  const int nn = (int)n;
  FN(gstat_i_pack_full)(job->A, b, v, n);
  FN(gstat_i_pack_full)(job->B, b, g, n);
  FN(gstat_i_pack_full)(job->vals, b, w, n);
  if (job->grad_vals) FN(gstat_i_pack_full)(job->grad_vals, b, gw, n);
  BLAS(gemm)(CblasColMajor, CblasTrans, CblasNoTrans, nn, nn, nn, 1, v, nn, g, nn, 0, m, nn);
  FN(backward_inner)(g, m, w, job->grad_vals ? gw : NULL, n, job->broadening);
  BLAS(gemm)(CblasColMajor, CblasNoTrans, CblasNoTrans, nn, nn, nn, 1, v, nn, g, nn, 0, m, nn);
  BLAS(gemm)(CblasColMajor, CblasNoTrans, CblasTrans, nn, nn, nn, 1, m, nn, v, nn, 0, g, nn);
  FN(gstat_i_unpack_full)(g, n, job->out, b);
  return 0;
}

bool FN(gstat_i_cpu_eigh_backward_setup)(gstat_i_cpu_job *job) {
  size_t mat;
  if (!gstat_i_mul_size((size_t)job->n * sizeof(T), (size_t)job->n, &mat)) return false;
  job->one = FN(eigh_backward_one);
  job->per_thread = 3 * gstat_i_align64(mat) + gstat_i_align64(2 * sizeof(T) * (size_t)job->n);
  job->flops = 6.0 * (double)job->n * (double)job->n * (double)job->n;
  return true;
}

#include "backend/cpu/eigh_lowest_tmpl.h"

#undef FN
#undef CAT
#undef CAT_
