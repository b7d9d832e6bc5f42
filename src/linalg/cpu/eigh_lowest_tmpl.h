/* The m smallest eigenpairs (see eigh_lowest.h): part of cpu_ops_tmpl.h (T,
 * SFX, LP and FN as there; it uses normalize_signs). */

/* Scratch, in order: reduction (eigh_small), d, e, w, the stebz/stein work
 * (5 n), Z (n x m), then the integers: iblock, isplit (n each), iwork (3 n),
 * ifail (m). */
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
  T *lw = (T *)(ws + o[3]), *Z = (T *)(ws + o[4]);
  lapack_int *iblock = (lapack_int *)(ws + o[5]), *isplit = iblock + n, *iw = isplit + n;
  lapack_int *ifail = iw + 3 * n, found = 0, nsplit = 0;
  int se = 0;
  lapack_int info = FN(gstat_i_tridiag_small)(n, a, lda, d, e, &se, work) != 0 ? (lapack_int)n : 0;
  /* bisection for the m smallest, ordered by split-off block as stein wants */
  if (info == 0)
    info = LP(stebz_work)('I', 'B', (lapack_int)n, 0, 0, 1, (lapack_int)m, 0, d, e, &found, &nsplit,
                          wall, iblock, isplit, lw, iw);
  if (info == 0 && found != m) info = (lapack_int)n;
  if (info == 0)
    info = LP(stein_work)(LAPACK_COL_MAJOR, (lapack_int)n, d, e, found, wall, iblock, isplit, Z,
                          (lapack_int)n, lw, iw, ifail);
  if (info != 0) {
    for (int64_t j = 0; j < m; j++) {
      w[j] = NAN;
      for (int64_t i = 0; i < n; i++) a[i + j * lda] = NAN;
    }
    return info > 0 ? (int)info : (int)n;
  }
  FN(gstat_i_tridiag_small_apply_q)(n, work, m, Z, n);
  /* ascending across blocks (a selection sort: m is small), back to a's scale */
  for (int64_t j = 0; j < m; j++) {
    int64_t best = j;
    for (int64_t i = j + 1; i < m; i++)
      if (wall[i] < wall[best]) best = i;
    w[j] = (T)ldexp((double)wall[best], -se);
    memcpy(a + j * lda, Z + best * n, sizeof(T) * (size_t)n);
    if (best != j) { /* j's pair moves into best's place */
      wall[best] = wall[j];
      memcpy(Z + best * n, Z + j * n, sizeof(T) * (size_t)n);
    }
  }
  FN(normalize_signs)(a, n, m, lda);
  return 0;
}
