/*
 * The distributed symmetric eigensolver: gstat_mpi_eigh, the eigensolver
 * choice, and the ScaLAPACK path (pdsyevd on a block-cyclic matrix over a
 * near-square grid of all ranks) that gstat_mpi_pca uses as well.
 *
 * Data movement of the ScaLAPACK path: the rank holding A packs each rank's
 * block-cyclic share and sends it (p^2 doubles in all; with A on every rank,
 * each packs its own share and nothing moves); pdsyevd leaves the
 * eigenvectors distributed and rank 0 broadcasts the eigenvalues; signs are
 * fixed in place (three Allreduces of p numbers); then the shares go to the
 * receiving rank(s). Per rank: two shares (~2 p^2 / size doubles) plus
 * pdsyevd's workspace (~2 p^2 / size), and one share of scratch on the rank
 * that sends or gathers. ScaLAPACK counts in 32-bit integers, so a rank's
 * workspace must stay below 2^31 doubles: p = 40000 needs at least 2 ranks,
 * p = 100000 at least 10.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

#ifdef GSTAT_HAVE_SCALAPACK
#include "scalapack.h"
#define HAVE_SCALAPACK 1
#else
#define HAVE_SCALAPACK 0
#endif

#define CHUNK ((size_t)1 << 20) /* doubles per broadcast piece of a LOCAL result */

int gstat_mpi_has_scalapack(void) {
  return HAVE_SCALAPACK;
}

static gstat_status not_built(gstat_mpi *m, const char *fn) {
  return gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED,
                          "%s: the ScaLAPACK eigensolver was asked for, but this gstat_mpi was "
                          "built without ScaLAPACK (install libscalapack-openmpi-dev and "
                          "configure with -DGSTAT_WITH_SCALAPACK=ON)",
                          fn);
}

gstat_status gstat_mpi_set_eigensolver(gstat_mpi *m, gstat_mpi_eigensolver e, int64_t auto_min_p) {
  if (!m) return GSTAT_EINVAL;
  m->msg[0] = '\0';
  if (e != GSTAT_MPI_EIGEN_AUTO && e != GSTAT_MPI_EIGEN_LOCAL && e != GSTAT_MPI_EIGEN_SCALAPACK)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "set_eigensolver: e=%d is not a gstat_mpi_eigensolver",
                            (int)e);
  m->eigensolver = e;
  m->auto_min_p = auto_min_p > 0 ? auto_min_p : GSTAT_MPI_SCALAPACK_MIN_P;
  /* kept even when not built: later calls then fail instead of running LOCAL */
  if (e == GSTAT_MPI_EIGEN_SCALAPACK && !HAVE_SCALAPACK) return not_built(m, "set_eigensolver");
  return GSTAT_OK;
}

gstat_status gstat_mpi_i_pick_eigensolver(gstat_mpi *m, int64_t p, const char *fn,
                                          gstat_mpi_eigensolver *out) {
  gstat_mpi_eigensolver e = m->eigensolver;
  gstat_status st = GSTAT_OK;
  if (e == GSTAT_MPI_EIGEN_SCALAPACK && !HAVE_SCALAPACK) {
    st = not_built(m, fn);
  } else if (e == GSTAT_MPI_EIGEN_AUTO) {
    e = HAVE_SCALAPACK && m->size > 1 && p >= m->auto_min_p ? GSTAT_MPI_EIGEN_SCALAPACK
                                                            : GSTAT_MPI_EIGEN_LOCAL;
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  int64_t lo, hi;
  if (gstat_mpi_i_minmax(m, (int64_t)e, &lo, &hi) != MPI_SUCCESS)
    return gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: MPI_Allreduce failed", fn);
  if (lo != hi)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: the ranks' eigensolver settings pick different solvers for "
                            "p = %lld (gstat_mpi_set_eigensolver needs the same arguments on "
                            "every rank)",
                            fn, (long long)p);
  *out = e;
  return GSTAT_OK;
}

/* ---- descriptors (float64, batch 1, host) ---- */

static double *at(const gstat_matrix *X, int64_t i, int64_t j) {
  return (double *)X->data + i * X->row_stride + j * X->col_stride;
}

static gstat_status check_f64(gstat_mpi *m, const gstat_matrix *X, int64_t rows, int64_t cols,
                              const char *name, const char *fn) {
  if (!X) return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: %s is NULL on a receiving rank", fn, name);
  if (X->batch != 1 || X->rows != rows || X->cols != cols)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: %s is %lld x %lld x %lld; 1 x %lld x %lld is needed", fn, name,
                            (long long)X->batch, (long long)X->rows, (long long)X->cols,
                            (long long)rows, (long long)cols);
  if (X->location != GSTAT_HOST)
    return gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED, "%s: %s must be in host memory", fn, name);
  if (X->dtype != GSTAT_F64)
    return gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED,
                            "%s: %s.dtype=%d; the distributed eigensolver takes GSTAT_F64 only", fn,
                            name, (int)X->dtype);
  int64_t rs = rows > 1 ? X->row_stride : 1, cs = cols > 1 ? X->col_stride : 1;
  if (rs < 1 || cs < 1)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: %s.row_stride=%lld, col_stride=%lld must be >= 1",
                            fn, name, (long long)X->row_stride, (long long)X->col_stride);
  /* outputs must not write two elements to one address: the larger stride
   * has to step over a whole run of the smaller one */
  int64_t small = rs < cs ? rs : cs, big = rs < cs ? cs : rs, run = rs < cs ? rows : cols;
  if (rows > 1 && cols > 1 && big < small * run)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: the strides of %s make elements share an address",
                            fn, name);
  if (rows > 0 && cols > 0 && !X->data)
    return gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: %s.data is NULL", fn, name);
  return GSTAT_OK;
}

/* ---- LOCAL: gstat_eigh on one rank ---- */

/* Rank src's p x q matrix X to every rank, in column pieces of ~CHUNK doubles. */
static gstat_status bcast_matrix(gstat_mpi *m, gstat_matrix *X, int src, const char *fn) {
  int64_t r = X->rows, c = X->cols, per = r > 0 ? (int64_t)CHUNK / r : c;
  if (per < 1) per = 1;
  if (per > c) per = c;
  double *buf = malloc(sizeof(double) * (size_t)(r * per > 0 ? r * per : 1));
  gstat_status st = buf ? GSTAT_OK
                        : gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: cannot allocate %lld doubles", fn,
                                           (long long)(r * per));
  st = gstat_mpi_i_agree(m, st);
  int rc = MPI_SUCCESS;
  for (int64_t j0 = 0; st == GSTAT_OK && j0 < c && rc == MPI_SUCCESS; j0 += per) {
    int64_t nc = per < c - j0 ? per : c - j0;
    if (m->rank == src)
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < r; i++) buf[i + j * r] = *at(X, i, j0 + j);
    rc = gstat_mpi_i_bcast(m, buf, (size_t)(r * nc), src);
    if (m->rank != src && rc == MPI_SUCCESS)
      for (int64_t j = 0; j < nc; j++)
        for (int64_t i = 0; i < r; i++) *at(X, i, j0 + j) = buf[i + j * r];
  }
  free(buf);
  if (st != GSTAT_OK) return st;
  if (rc != MPI_SUCCESS)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: MPI_Bcast failed (%d)", fn, rc);
  return gstat_mpi_i_agree(m, st);
}

static gstat_status local_eigh(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               int root, gstat_matrix *w, gstat_matrix *V, const char *fn) {
  int src = root == GSTAT_MPI_ALL_RANKS ? 0 : root;
  gstat_status st = GSTAT_OK;
  if (m->rank == src) {
    st = gstat_eigh(ctx, A, uplo, w, V, NULL);
    if (st != GSTAT_OK) gstat_mpi_i_lib_fail(m, ctx, st, fn);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK || root != GSTAT_MPI_ALL_RANKS) return st;
  /* every rank gets rank 0's bits */
  st = bcast_matrix(m, w, src, fn);
  if (st == GSTAT_OK && V) st = bcast_matrix(m, V, src, fn);
  return st;
}

gstat_status gstat_mpi_eigh(gstat_mpi *m, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                            int root, gstat_matrix *w, gstat_matrix *V) {
  static const char fn[] = "mpi_eigh";
  if (!m) return GSTAT_EINVAL;
  m->msg[0] = '\0';
  int recv = gstat_mpi_i_receives(m, root) != 0; /* the receiving ranks also hold A */
  gstat_status st = GSTAT_OK;
  if (!ctx) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: ctx is NULL", fn);
  } else if (!gstat_mpi_i_root_ok(m, root)) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: root=%d is not a rank of %d or GSTAT_MPI_ALL_RANKS",
                          fn, root, m->size);
  } else if (uplo != GSTAT_LOWER && uplo != GSTAT_UPPER) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: uplo=%d is not a gstat_uplo", fn, (int)uplo);
  } else if (recv && !A) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: A is NULL on a rank that holds it", fn);
  } else if (recv && (A->rows != A->cols || A->rows < 0)) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "%s: A is %lld x %lld; a square matrix is needed", fn,
                          (long long)A->rows, (long long)A->cols);
  } else if (recv) {
    st = check_f64(m, A, A->rows, A->rows, "A", fn);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;

  /* the order: root's, or the same on every rank; and V on all receivers or none */
  int64_t p = recv ? A->rows : 0, lo, hi, vlo = 0, vhi = 0;
  int rc;
  if (root == GSTAT_MPI_ALL_RANKS) {
    rc = gstat_mpi_i_minmax(m, p, &lo, &hi);
    if (rc == MPI_SUCCESS) rc = gstat_mpi_i_minmax(m, V != NULL, &vlo, &vhi);
    if (rc == MPI_SUCCESS && lo != hi)
      st = gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: the ranks disagree on the order of A (%lld to %lld)", fn,
                            (long long)lo, (long long)hi);
    else if (rc == MPI_SUCCESS && vlo != vhi)
      st = gstat_mpi_i_fail(
          m, GSTAT_EINVAL, "%s: with GSTAT_MPI_ALL_RANKS, V must be given on every rank or on none",
          fn);
  } else {
    int64_t pv[2] = {p, V != NULL};
    rc = MPI_Bcast(pv, 2, MPI_INT64_T, root, m->comm);
    p = pv[0];
    vlo = pv[1];
  }
  if (rc != MPI_SUCCESS) st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: MPI error %d", fn, rc);
  if (st != GSTAT_OK) return st; /* the same on every rank */

  if (recv) {
    st = check_f64(m, w, p, 1, "w", fn);
    if (st == GSTAT_OK && V) st = check_f64(m, V, p, p, "V", fn);
    /* NaN/Inf would make pdsyevd's result (and the local one) meaningless */
    for (int64_t j = 0; j < p && st == GSTAT_OK; j++)
      for (int64_t i = uplo == GSTAT_LOWER ? j : 0; i < (uplo == GSTAT_LOWER ? p : j + 1); i++)
        if (!isfinite(*at(A, i, j))) {
          st = gstat_mpi_i_fail(m, GSTAT_ENOTFINITE, "%s: A[%lld, %lld] = %g is not finite", fn,
                                (long long)i, (long long)j, *at(A, i, j));
          break;
        }
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK || p == 0) return st;
  gstat_mpi_eigensolver e;
  if ((st = gstat_mpi_i_pick_eigensolver(m, p, fn, &e)) != GSTAT_OK) return st;
  if (e == GSTAT_MPI_EIGEN_LOCAL) return local_eigh(m, ctx, A, uplo, root, w, V, fn);
  return gstat_mpi_i_scalapack_eigh(m, p, recv ? A : NULL, uplo, root, w, V, vlo != 0, fn);
}

#ifdef GSTAT_HAVE_SCALAPACK

#define NB 64 /* block size: ScaLAPACK's usual; pdsyevd wants square blocks */

/* Rows (or columns) of an n-vector that process `iproc` of `nprocs` holds in
 * blocks of nb dealt from process 0 (ScaLAPACK's NUMROC, in 64 bits). */
static int64_t numroc(int64_t n, int64_t nb, int iproc, int nprocs) {
  int64_t blocks = n / nb, num = blocks / nprocs * nb, extra = blocks % nprocs;
  if (iproc < extra) num += nb;
  if (iproc == extra) num += n % nb;
  return num;
}

/* Element (i, j) of the symmetric matrix whose `uplo` triangle A holds. */
static double sym(const gstat_matrix *A, gstat_uplo uplo, int64_t i, int64_t j) {
  int swap = uplo == GSTAT_LOWER ? i < j : i > j;
  return swap ? *at(A, j, i) : *at(A, i, j);
}

/* Global index of local index l on process `iproc` of `nprocs`. */
static int64_t l2g(int64_t l, int iproc, int nprocs) {
  return (l / NB * nprocs + iproc) * NB + l % NB;
}

/* The lower triangle of A's share of process (pr, pc), column-major with
 * leading dimension locr (pdsyevd is called with 'L' and reads no more). */
static void pack(const gstat_matrix *A, gstat_uplo uplo, int pr, int pc, int nprow, int npcol,
                 int64_t locr, int64_t locc, double *buf) {
  for (int64_t lj = 0; lj < locc; lj++) {
    int64_t gj = l2g(lj, pc, npcol);
    for (int64_t li = 0; li < locr; li++) {
      int64_t gi = l2g(li, pr, nprow);
      buf[li + lj * locr] = gi >= gj ? sym(A, uplo, gi, gj) : 0;
    }
  }
}

static void unpack(const double *buf, int pr, int pc, int nprow, int npcol, int64_t locr,
                   int64_t locc, gstat_matrix *V) {
  for (int64_t lj = 0; lj < locc; lj++) {
    int64_t gj = l2g(lj, pc, npcol);
    for (int64_t li = 0; li < locr; li++) *at(V, l2g(li, pr, nprow), gj) = buf[li + lj * locr];
  }
}

/* Collective: make (once per handle) the nprow x npcol grid of all ranks,
 * nprow the largest divisor of size up to sqrt(size). */
static gstat_status make_grid(gstat_mpi *m, const char *fn) {
  if (m->blacs_ctxt >= 0) return GSTAT_OK;
  int r = (int)sqrt((double)m->size);
  while (r > 1 && m->size % r) r--;
  m->nprow = r;
  m->npcol = m->size / r;
  m->blacs_sys = Csys2blacs_handle(m->comm); /* gstat's private duplicate, not the caller's */
  int ctxt = m->blacs_sys, nr = -1, nc = -1, myr = -1, myc = -1;
  Cblacs_gridinit(&ctxt, "R", m->nprow, m->npcol);
  m->blacs_ctxt = ctxt;
  if (ctxt >= 0) Cblacs_gridinfo(ctxt, &nr, &nc, &myr, &myc);
  gstat_status st = GSTAT_OK;
  /* pack/unpack assume rank = row * npcol + column */
  if (nr != m->nprow || nc != m->npcol || myr != m->rank / m->npcol || myc != m->rank % m->npcol)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND,
                          "%s: BLACS put rank %d at (%d, %d) of a %d x %d grid; expected (%d, %d) "
                          "of %d x %d",
                          fn, m->rank, myr, myc, nr, nc, m->rank / m->npcol, m->rank % m->npcol,
                          m->nprow, m->npcol);
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) gstat_mpi_i_eigh_release(m);
  return st;
}

void gstat_mpi_i_eigh_release(gstat_mpi *m) {
  if (m->blacs_ctxt >= 0) Cblacs_gridexit(m->blacs_ctxt);
  if (m->blacs_sys >= 0) Cfree_blacs_system_handle(m->blacs_sys);
  m->blacs_ctxt = m->blacs_sys = -1;
}

/* Bytes of fix_signs' workspace. */
#define SIGN_WS(p) ((size_t)(p) * (2 * sizeof(double) + 2 * sizeof(int64_t) + 2 * sizeof(int)))

/* Collective: the library's sign rule on the distributed eigenvectors: in
 * each column the entry of largest magnitude (the first one on ties) becomes
 * positive. Returns an MPI error code. */
static int fix_signs(gstat_mpi *m, int64_t p, double *Z, int64_t locr, int64_t locc, int myr,
                     int myc, void *ws) {
  double *best = ws, *gbest = best + p;
  int64_t *first = (int64_t *)(gbest + p), *gfirst = first + p;
  int *flip = (int *)(gfirst + p), *gflip = flip + p, rc;
  for (int64_t j = 0; j < p; j++) best[j] = 0, flip[j] = 0;
  for (int64_t lj = 0; lj < locc; lj++) {
    int64_t gj = l2g(lj, myc, m->npcol);
    for (int64_t li = 0; li < locr; li++) best[gj] = fmax(best[gj], fabs(Z[li + lj * locr]));
  }
  rc = MPI_Allreduce(best, gbest, (int)p, MPI_DOUBLE, MPI_MAX, m->comm);
  if (rc != MPI_SUCCESS) return rc;
  for (int64_t j = 0; j < p; j++) first[j] = p;
  for (int64_t lj = 0; lj < locc; lj++) {
    int64_t gj = l2g(lj, myc, m->npcol);
    for (int64_t li = 0; li < locr; li++) /* global rows ascend with li */
      if (fabs(Z[li + lj * locr]) == gbest[gj]) {
        first[gj] = l2g(li, myr, m->nprow);
        break;
      }
  }
  rc = MPI_Allreduce(first, gfirst, (int)p, MPI_INT64_T, MPI_MIN, m->comm);
  if (rc != MPI_SUCCESS) return rc;
  for (int64_t lj = 0; lj < locc; lj++) {
    int64_t gj = l2g(lj, myc, m->npcol);
    for (int64_t li = 0; li < locr; li++)
      if (l2g(li, myr, m->nprow) == gfirst[gj]) flip[gj] = Z[li + lj * locr] < 0;
  }
  rc = MPI_Allreduce(flip, gflip, (int)p, MPI_INT, MPI_MAX, m->comm);
  if (rc != MPI_SUCCESS) return rc;
  for (int64_t lj = 0; lj < locc; lj++)
    if (gflip[l2g(lj, myc, m->npcol)])
      for (int64_t li = 0; li < locr; li++) Z[li + lj * locr] = -Z[li + lj * locr];
  return MPI_SUCCESS;
}

/* This rank's part of one distributed solve: the process grid's shape
 * and this rank's place, its shares of A and Z (locr x locc, block-cyclic),
 * the eigenvalues, pdsyevd's workspace and the scratch of the rank that
 * scatters or gathers. */
typedef struct scalapack_solve {
  int64_t p, locr, locc, maxshare;
  int nprow, npcol, myr, myc;
  double *Aloc, *Zloc, *W, *work, *scratch;
  int *iwork;
  void *sign_ws;
  int desc[9], lwork, liwork;
} scalapack_solve;

static void release_solve(scalapack_solve *s) {
  free(s->Aloc);
  free(s->Zloc);
  free(s->W);
  free(s->work);
  free(s->iwork);
  free(s->scratch);
  free(s->sign_ws);
}

/* The grid's shape and this rank's shares (sends: it scatters or gathers). */
static gstat_status allocate_shares(gstat_mpi *m, scalapack_solve *s, bool sends, const char *fn) {
  const int64_t p = s->p;
  s->nprow = m->nprow, s->npcol = m->npcol;
  s->myr = m->rank / s->npcol, s->myc = m->rank % s->npcol;
  s->locr = numroc(p, NB, s->myr, s->nprow), s->locc = numroc(p, NB, s->myc, s->npcol);
  /* the largest share, for the scratch of the rank that scatters or gathers */
  s->maxshare = numroc(p, NB, 0, s->nprow) * numroc(p, NB, 0, s->npcol);
  /* a bound on pdsyevd's workspace (below), which ScaLAPACK counts in ints */
  const int64_t bound = 2 * s->maxshare + (s->locr + s->locc + 4 * NB) * NB + 16 * p;
  if (bound > INT_MAX)
    return gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED,
                            "%s: p = %lld on %d ranks needs about %lld doubles of ScaLAPACK "
                            "workspace per rank, beyond its 32-bit counts: use more ranks",
                            fn, (long long)p, m->size, (long long)bound);
  size_t share = (size_t)(s->locr * s->locc > 0 ? s->locr * s->locc : 1);
  s->Aloc = malloc(share * sizeof(double));
  s->Zloc = malloc(share * sizeof(double));
  s->W = malloc((size_t)p * sizeof(double));
  s->sign_ws = malloc(SIGN_WS(p));
  if (sends) s->scratch = malloc((size_t)(s->maxshare > 0 ? s->maxshare : 1) * sizeof(double));
  if (!s->Aloc || !s->Zloc || !s->W || !s->sign_ws || (sends && !s->scratch))
    return gstat_mpi_i_fail(m, GSTAT_ENOMEM, "%s: cannot allocate this rank's share (%lld doubles)",
                            fn, (long long)(2 * s->locr * s->locc + s->maxshare));
  return GSTAT_OK;
}

/* pdsyevd's workspace after its query (collective: every rank calls it),
 * raised where the query is short. */
static gstat_status pdsyevd_workspace(gstat_mpi *m, scalapack_solve *s, const char *fn) {
  const int64_t p = s->p, locr = s->locr, locc = s->locc;
  int n = (int)p, one = 1, info = 0, lwork = -1, liwork = -1, iwq = 0;
  double wq = 0;
  pdsyevd_("V", "L", &n, s->Aloc, &one, &one, s->desc, s->W, s->Zloc, &one, &one, s->desc, &wq,
           &lwork, &iwq, &liwork, &info, 1, 1);
  if (info != 0)
    return gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: pdsyevd workspace query: info = %d", fn, info);
  /* The query can be short: pdsyevd hands pdstedc and pdormtr its
   * workspace minus 2p; pdstedc's pdlasrt may need max(p, locr (NB + locc))
   * (Reference-ScaLAPACK issue 74) and pdormtr max(NB (NB - 1) / 2,
   * (locr + locc) NB) + NB^2, and pdsyevd ignores pdormtr's failure. */
  int64_t lw = (int64_t)wq, srt = locr * (NB + locc), orm = (locr + locc) * NB;
  if (srt < p) srt = p;
  if (orm < NB * (NB - 1) / 2) orm = NB * (NB - 1) / 2;
  orm += NB * NB;
  if (lw < 2 * p + srt) lw = 2 * p + srt;
  if (lw < 2 * p + orm) lw = 2 * p + orm;
  int64_t liw = iwq > 7 * p + 8 * s->npcol + 2 ? iwq : 7 * p + 8 * s->npcol + 2;
  if (lw > INT_MAX || liw > INT_MAX)
    return gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED,
                            "%s: pdsyevd needs %lld doubles of workspace, beyond its 32-bit "
                            "counts: use more ranks",
                            fn, (long long)lw);
  s->lwork = (int)lw;
  s->liwork = (int)liw;
  s->work = malloc((size_t)lw * sizeof(double));
  s->iwork = malloc((size_t)liw * sizeof(int));
  if (!s->work || !s->iwork)
    return gstat_mpi_i_fail(m, GSTAT_ENOMEM,
                            "%s: cannot allocate pdsyevd's workspace (%lld doubles)", fn,
                            (long long)lw);
  return GSTAT_OK;
}

/* A's shares: from root, or each rank its own share of its copy. Returns
 * an MPI error code. */
static int distribute(gstat_mpi *m, scalapack_solve *s, const gstat_matrix *A, gstat_uplo uplo,
                      int root) {
  const int64_t p = s->p;
  int rc = MPI_SUCCESS;
  if (root == GSTAT_MPI_ALL_RANKS) {
    pack(A, uplo, s->myr, s->myc, s->nprow, s->npcol, s->locr, s->locc, s->Aloc);
  } else if (m->rank == root) {
    for (int q = 0; q < m->size && rc == MPI_SUCCESS; q++) {
      int qr = q / s->npcol, qc = q % s->npcol;
      int64_t qlr = numroc(p, NB, qr, s->nprow), qlc = numroc(p, NB, qc, s->npcol);
      pack(A, uplo, qr, qc, s->nprow, s->npcol, qlr, qlc, q == root ? s->Aloc : s->scratch);
      if (q != root) rc = gstat_mpi_i_send(m, s->scratch, (size_t)(qlr * qlc), q);
    }
  } else {
    rc = gstat_mpi_i_recv(m, s->Aloc, (size_t)(s->locr * s->locc), root);
  }
  return rc;
}

/* The solve itself (collective), then the eigenvalues from rank 0 and the
 * sign rule on the distributed eigenvectors. */
static gstat_status solve_distributed(gstat_mpi *m, scalapack_solve *s, const char *fn) {
  int n = (int)s->p, one = 1, info = 0;
  pdsyevd_("V", "L", &n, s->Aloc, &one, &one, s->desc, s->W, s->Zloc, &one, &one, s->desc, s->work,
           &s->lwork, s->iwork, &s->liwork, &info, 1, 1);
  gstat_status st = GSTAT_OK;
  if (info < 0)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: pdsyevd: argument %d had an illegal value", fn,
                          -info);
  else if (info > 0)
    st = gstat_mpi_i_fail(m, GSTAT_ENOCONV,
                          "%s: pdsyevd did not converge (info = %d: eigenvalue %d, in rows and "
                          "columns %d of the tridiagonal problem)",
                          fn, info, info / (n + 1), info % (n + 1));
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  /* for p <= NB pdstedc solves on process (0, 0) alone and leaves the
   * other ranks' W holding the tridiagonal's diagonal: take rank 0's */
  int rc = MPI_Bcast(s->W, n, MPI_DOUBLE, 0, m->comm);
  if (rc == MPI_SUCCESS)
    rc = fix_signs(m, s->p, s->Zloc, s->locr, s->locc, s->myr, s->myc, s->sign_ws);
  if (rc != MPI_SUCCESS)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND,
                          "%s: fixing the eigenvector signs failed (MPI error %d)", fn, rc);
  return gstat_mpi_i_agree(m, st);
}

/* Results to the receiving rank(s): W is on every rank, the shares move.
 * Returns an MPI error code. */
static int gather(gstat_mpi *m, scalapack_solve *s, int root, int vectors, gstat_matrix *w,
                  gstat_matrix *V) {
  const int64_t p = s->p;
  int rc = MPI_SUCCESS;
  if (gstat_mpi_i_receives(m, root))
    for (int64_t i = 0; i < p; i++) *at(w, i, 0) = s->W[i];
  if (root == GSTAT_MPI_ALL_RANKS) {
    for (int q = 0; q < m->size && rc == MPI_SUCCESS && vectors; q++) {
      int qr = q / s->npcol, qc = q % s->npcol;
      int64_t qlr = numroc(p, NB, qr, s->nprow), qlc = numroc(p, NB, qc, s->npcol);
      double *buf = q == m->rank ? s->Zloc : s->scratch;
      rc = gstat_mpi_i_bcast(m, buf, (size_t)(qlr * qlc), q);
      if (rc == MPI_SUCCESS) unpack(buf, qr, qc, s->nprow, s->npcol, qlr, qlc, V);
    }
  } else if (m->rank == root) {
    for (int q = 0; q < m->size && rc == MPI_SUCCESS && vectors; q++) {
      int qr = q / s->npcol, qc = q % s->npcol;
      int64_t qlr = numroc(p, NB, qr, s->nprow), qlc = numroc(p, NB, qc, s->npcol);
      if (q != root) rc = gstat_mpi_i_recv(m, s->scratch, (size_t)(qlr * qlc), q);
      if (rc == MPI_SUCCESS)
        unpack(q == root ? s->Zloc : s->scratch, qr, qc, s->nprow, s->npcol, qlr, qlc, V);
    }
  } else if (vectors) {
    rc = gstat_mpi_i_send(m, s->Zloc, (size_t)(s->locr * s->locc), root);
  }
  return rc;
}

gstat_status gstat_mpi_i_scalapack_eigh(gstat_mpi *m, int64_t p, const gstat_matrix *A,
                                        gstat_uplo uplo, int root, gstat_matrix *w, gstat_matrix *V,
                                        int vectors, const char *fn) {
  scalapack_solve s = {.p = p};
  gstat_status st = GSTAT_OK;
  if (p > INT_MAX / 8) /* ScaLAPACK's 32-bit sizes (liwork = 7p + ...) */
    st = gstat_mpi_i_fail(m, GSTAT_EUNSUPPORTED, "%s: p = %lld is too large for ScaLAPACK", fn,
                          (long long)p);
  st = gstat_mpi_i_agree(m, st);
  if (st == GSTAT_OK) st = make_grid(m, fn);
  if (st != GSTAT_OK) return st;
  bool sends = root == GSTAT_MPI_ALL_RANKS ? vectors : m->rank == root;
  st = gstat_mpi_i_agree(m, allocate_shares(m, &s, sends, fn));
  if (st != GSTAT_OK) goto done;
  int n = (int)p, nb = NB, zero = 0, lld = s.locr > 1 ? (int)s.locr : 1, info = 0;
  descinit_(s.desc, &n, &n, &nb, &nb, &zero, &zero, &m->blacs_ctxt, &lld, &info);
  if (info != 0) st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: descinit: info = %d", fn, info);
  st = gstat_mpi_i_agree(m, st); /* the query is collective: all ranks or none */
  if (st == GSTAT_OK) st = gstat_mpi_i_agree(m, pdsyevd_workspace(m, &s, fn));
  if (st != GSTAT_OK) goto done;
  int rc = distribute(m, &s, A, uplo, root);
  if (rc != MPI_SUCCESS)
    st =
        gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: sending A's shares failed (MPI error %d)", fn, rc);
  st = gstat_mpi_i_agree(m, st);
  if (st == GSTAT_OK) st = solve_distributed(m, &s, fn);
  if (st != GSTAT_OK) goto done;
  rc = gather(m, &s, root, vectors, w, V);
  if (rc != MPI_SUCCESS)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: gathering the eigenvectors failed (MPI error %d)",
                          fn, rc);
  st = gstat_mpi_i_agree(m, st);
done:
  release_solve(&s);
  return st;
}

#else /* no ScaLAPACK: gstat_mpi_i_pick_eigensolver never picks it */

gstat_status gstat_mpi_i_scalapack_eigh(gstat_mpi *m, int64_t p, const gstat_matrix *A,
                                        gstat_uplo uplo, int root, gstat_matrix *w, gstat_matrix *V,
                                        int vectors, const char *fn) {
  (void)p, (void)A, (void)uplo, (void)root, (void)w, (void)V, (void)vectors;
  return gstat_mpi_i_agree(m, not_built(m, fn));
}

void gstat_mpi_i_eigh_release(gstat_mpi *m) {
  (void)m;
}

#endif
