/* The m smallest eigenpairs (see eigh_lowest.h): part of cpu_ops_tmpl.h (T,
 * SFX, LP and FN as there; it uses normalize_signs). */

/* A second Gram-Schmidt pass over each cluster of the m ascending
 * eigenvalues w (neighbours closer than stein's own 1e-3 ||T||_1): stein
 * orthogonalizes a cluster's vectors once, which left them up to 55 n ulp
 * apart in clusters of 16 and more equal eigenvalues (the Laplacian of a
 * graph with many components); twice is enough. Vectors of different split
 * blocks have disjoint supports, so including them changes nothing. */
static void FN(reorthogonalize_clusters)(int64_t n, const T *d, const T *e, int64_t m, const T *w,
                                         T *Z) {
  T norm = 0;
  for (int64_t i = 0; i < n; i++) {
    T r = (T)fabs((double)d[i]) + (i > 0 ? (T)fabs((double)e[i - 1]) : 0) +
          (i + 1 < n ? (T)fabs((double)e[i]) : 0);
    if (r > norm) norm = r;
  }
  const T tol = (T)1e-3 * norm;
  for (int64_t first = 0, j = 1; j < m; j++) {
    if (w[j] - w[j - 1] > tol) {
      first = j;
      continue;
    }
    T *zj = Z + j * n;
    for (int64_t k = first; k < j; k++) {
      const T *zk = Z + k * n;
      T dot = 0;
      for (int64_t i = 0; i < n; i++) dot += zk[i] * zj[i];
      for (int64_t i = 0; i < n; i++) zj[i] -= dot * zk[i];
    }
    T nrm = 0;
    for (int64_t i = 0; i < n; i++) nrm += zj[i] * zj[i];
    nrm = (T)sqrt((double)nrm);
    if (nrm > 0)
      for (int64_t i = 0; i < n; i++) zj[i] /= nrm;
  }
}

/* Eigenpairs il..iu (1-based, ascending order) of the tridiagonal (d, e):
 * bisection for the values, inverse iteration for the vectors (LAPACK stebz +
 * stein, without LAPACKE's input scans), sorted ascending across split blocks
 * (stebz groups them by block) into w (n entries of room) and the columns of
 * Z (n x (iu - il + 1), ld n), clusters orthogonalized once more (above).
 * work: 5 n; iwork: 5 n + iu - il + 1. Returns
 * LAPACK's info, or n + 1 when bisection found another count. */
int FN(gstat_i_tridiag_select)(int64_t n, const T *d, const T *e, int64_t il, int64_t iu, T *w,
                               T *Z, T *work, int *iwork) {
  lapack_int m = (lapack_int)(iu - il + 1), found = 0, nsplit = 0;
  lapack_int *iblock = iwork, *isplit = iblock + n, *iw = isplit + n, *ifail = iw + 3 * n;
  lapack_int info = LP(stebz_work)('I', 'B', (lapack_int)n, 0, 0, (lapack_int)il, (lapack_int)iu, 0,
                                   d, e, &found, &nsplit, w, iblock, isplit, work, iw);
  if (info == 0 && found != m) info = (lapack_int)n + 1;
  if (info == 0)
    info = LP(stein_work)(LAPACK_COL_MAJOR, (lapack_int)n, d, e, m, w, iblock, isplit, Z,
                          (lapack_int)n, work, iw, ifail);
  for (lapack_int j = 0; info == 0 && j < m; j++) { /* a selection sort: m is small */
    lapack_int best = j;
    for (lapack_int i = j + 1; i < m; i++)
      if (w[i] < w[best]) best = i;
    if (best == j) continue;
    T t = w[j];
    w[j] = w[best], w[best] = t;
    for (int64_t i = 0; i < n; i++) {
      t = Z[i + j * n];
      Z[i + j * n] = Z[i + best * n], Z[i + best * n] = t;
    }
  }
  if (info == 0) FN(reorthogonalize_clusters)(n, d, e, m, w, Z);
  return (int)info;
}

/* Scratch, in order: reduction (eigh_small), d, e, w, the stebz/stein work
 * (5 n), Z (n x m), then the integers of gstat_i_tridiag_select (5 n + m). */
static size_t FN(lowest_offsets)(int64_t n, int64_t m, size_t *o) {
  size_t at = gstat_i_align64(gstat_i_eigh_small_workspace(n, 1, sizeof(T)));
  const int64_t counts[] = {n, n, n, 5 * n, n * m};
  for (int i = 0; i < 5; i++) {
    o[i] = at;
    at += gstat_i_align64(sizeof(T) * (size_t)counts[i]);
  }
  o[5] = at;
  return at + gstat_i_align64(sizeof(lapack_int) * (size_t)(5 * n + m));
}

/* A failed solve: the m values and vectors NaN; returns info. */
static int FN(lowest_failed)(int64_t n, T *a, int64_t lda, int64_t m, T *w, int info) {
  for (int64_t j = 0; j < m; j++) {
    w[j] = NAN;
    for (int64_t i = 0; i < n; i++) a[i + j * lda] = NAN;
  }
  return info;
}

int FN(gstat_i_eigh_lowest)(int64_t n, T *a, int64_t lda, int64_t m, T *w, void *work) {
  if (n == 1) {
    w[0] = a[0];
    a[0] = 1;
    return 0;
  }
  size_t o[6];
  (void)FN(lowest_offsets)(n, m, o);
  char *ws = work;
  T *d = (T *)(ws + o[0]), *e = (T *)(ws + o[1]), *wall = (T *)(ws + o[2]);
  if (2 * m > n) {
    /* half the pairs or more: the full solver costs about the same, and
     * inverse iteration in one large cluster of equal eigenvalues leaves
     * residuals of 35 n ulp after the reorthogonalization (its scratch is
     * the start of ours, wall holds its n values) */
    int full = FN(gstat_i_eigh_small)(n, a, lda, wall, 1, work);
    if (full != 0) return FN(lowest_failed)(n, a, lda, m, w, full);
    memcpy(w, wall, sizeof(T) * (size_t)m);
    FN(normalize_signs)(a, n, m, lda);
    return 0;
  }
  T *lw = (T *)(ws + o[3]), *Z = (T *)(ws + o[4]);
  int se = 0;
  int info = FN(gstat_i_tridiag_small)(n, a, lda, d, e, &se, work) != 0 ? (int)n : 0;
  if (info == 0)
    info = FN(gstat_i_tridiag_select)(n, d, e, 1, m, wall, Z, lw, (int *)(void *)(ws + o[5]));
  if (info != 0) return FN(lowest_failed)(n, a, lda, m, w, info > 0 ? info : (int)n);
  FN(gstat_i_tridiag_small_apply_q)(n, work, m, Z, n);
  for (int64_t j = 0; j < m; j++) { /* back to a's scale */
    w[j] = (T)ldexp((double)wall[j], -se);
    memcpy(a + j * lda, Z + j * n, sizeof(T) * (size_t)n);
  }
  FN(normalize_signs)(a, n, m, lda);
  return 0;
}
