/*
 * The distributed eigensolver under mpirun with 1 to 4 ranks (process grids
 * 1 x 1, 1 x 2, 1 x 3, 2 x 2):
 * gstat_mpi_eigh with ScaLAPACK against gstat_eigh (orders below the grid,
 * not multiples of the block size, both triangles, in place, strided
 * outputs, every root), gstat_mpi_pca with SCALAPACK against LOCAL (k by
 * count and by variance fraction, scaling, no centering), and bad input on
 * one rank (the same status and message on every rank, no hang).
 *
 * Built without ScaLAPACK (a compile-time branch), it checks that asking for
 * SCALAPACK is GSTAT_EUNSUPPORTED on every rank and that the LOCAL path still
 * works, then exits 77: ctest reports the test skipped, not passed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gstat/gstat.h"
#include "gstat/mpi.h"
#include "mpi_check.h"

#define SKIPPED 77

/* A p x p symmetric matrix (column-major, the same on every rank): random
 * entries plus a diagonal ramp, so the eigenvalues are apart and the
 * eigenvectors well defined. */
static void make_sym(int64_t p, double *A) {
  for (int64_t j = 0; j < p; j++)
    for (int64_t i = j; i < p; i++) A[i + j * p] = A[j + i * p] = 2 * uniform() - 1;
  for (int64_t i = 0; i < p; i++) A[i + i * p] += 0.5 * (double)i;
}

/* gstat_eigh on this rank: the reference. */
static void reference(gstat_ctx *ctx, int64_t p, const double *A, double *w, double *V) {
  gstat_matrix Am = gstat_matrix_col_major((void *)A, GSTAT_F64, 1, p, p);
  gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
  gstat_matrix Vm = gstat_matrix_col_major(V, GSTAT_F64, 1, p, p);
  CHECK(gstat_eigh(ctx, &Am, GSTAT_LOWER, &Wm, &Vm, NULL) == GSTAT_OK);
}

/* The local path of gstat_mpi_eigh is gstat_eigh itself: the same bits. */
static void test_local(gstat_mpi *m, gstat_ctx *ctx) {
  const int64_t p = 70;
  double *A = malloc(sizeof(double) * p * p), *V = malloc(sizeof(double) * p * p),
         *Vr = malloc(sizeof(double) * p * p), w[70], wr[70];
  make_sym(p, A);
  reference(ctx, p, A, wr, Vr);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_LOCAL, 0) == GSTAT_OK);
  for (int root = -1; root < size; root++) {
    int recv = root == GSTAT_MPI_ALL_RANKS || root == rank;
    gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, p, p);
    gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
    gstat_matrix Vm = gstat_matrix_row_major(V, GSTAT_F64, 1, p, p);
    memset(V, 0, sizeof(double) * p * p);
    gstat_status st = gstat_mpi_eigh(m, ctx, recv ? &Am : NULL, GSTAT_LOWER, root,
                                     recv ? &Wm : NULL, recv ? &Vm : NULL);
    same_everywhere(m, st, GSTAT_OK);
    if (recv) {
      CHECK(memcmp(w, wr, sizeof(double) * p) == 0);
      for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < p; j++) CHECK(V[i * p + j] == Vr[i + j * p]);
    }
  }
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 0) == GSTAT_OK);
  free(A);
  free(V);
  free(Vr);
}

#if GSTAT_TEST_WITH_SCALAPACK

/* gstat_mpi_eigh with ScaLAPACK equals gstat_eigh: values to 1e-10 relative,
 * vectors to 1e-8 (both with the library's sign rule). */
static void test_eigh(gstat_mpi *m, gstat_ctx *ctx) {
  static const int64_t ps[] = {1, 2, 5, 64, 130, 203};
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) == GSTAT_OK);
  for (size_t t = 0; t < sizeof ps / sizeof ps[0]; t++) {
    int64_t p = ps[t];
    size_t pp = (size_t)(p * p);
    double *A = malloc(sizeof(double) * pp), *B = malloc(sizeof(double) * pp),
           *V = malloc(sizeof(double) * pp), *Vr = malloc(sizeof(double) * pp),
           *Vt = malloc(sizeof(double) * pp), *w = malloc(sizeof(double) * (size_t)p),
           *wr = malloc(sizeof(double) * (size_t)p);
    make_sym(p, A);
    reference(ctx, p, A, wr, Vr);
    for (int variant = 0; variant < 4; variant++) {
      /* 0: lower, col-major V; 1: upper with NaN below, row-major V;
       * 2: in place (V = A's copy B); 3: eigenvalues only */
      int root = variant == 0 ? GSTAT_MPI_ALL_RANKS : (variant + (int)t) % size;
      if (variant == 3) root = GSTAT_MPI_ALL_RANKS;
      int recv = root == GSTAT_MPI_ALL_RANKS || root == rank;
      memcpy(B, A, sizeof(double) * pp);
      gstat_uplo uplo = variant == 1 ? GSTAT_UPPER : GSTAT_LOWER;
      if (variant == 1)
        for (int64_t j = 0; j < p; j++)
          for (int64_t i = j + 1; i < p; i++) B[i + j * p] = NAN;
      for (size_t i = 0; i < pp; i++) V[i] = -7;
      for (int64_t i = 0; i < p; i++) w[i] = -7;
      gstat_matrix Bm = gstat_matrix_col_major(B, GSTAT_F64, 1, p, p);
      gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
      gstat_matrix Vm = variant == 1 ? gstat_matrix_row_major(V, GSTAT_F64, 1, p, p)
                                     : gstat_matrix_col_major(V, GSTAT_F64, 1, p, p);
      gstat_matrix *out = variant == 2 ? &Bm : variant == 3 ? NULL : &Vm;
      gstat_status st = gstat_mpi_eigh(m, ctx, recv ? &Bm : NULL, uplo, root, recv ? &Wm : NULL,
                                       recv ? out : NULL);
      same_everywhere(m, st, GSTAT_OK);
      if (!recv) continue;
      char what[64];
      snprintf(what, sizeof what, "eigenvalues p=%lld variant %d", (long long)p, variant);
      close_rel(w, wr, p, 1e-10, what);
      if (variant == 3) {
        for (size_t i = 0; i < pp; i++) CHECK(V[i] == -7); /* not written */
        continue;
      }
      const double *got = variant == 2 ? B : V;
      for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < p; j++)
          Vt[i + j * p] = variant == 1 ? got[i * p + j] : got[i + j * p];
      snprintf(what, sizeof what, "eigenvectors p=%lld variant %d", (long long)p, variant);
      close_rel(Vt, Vr, (int64_t)pp, 1e-8, what);
    }
    free(A);
    free(B);
    free(V);
    free(Vr);
    free(Vt);
    free(w);
    free(wr);
  }
  /* p = 0 succeeds without touching anything */
  double dummy = 3;
  gstat_matrix Z = gstat_matrix_col_major(&dummy, GSTAT_F64, 1, 0, 0);
  gstat_matrix Wz = gstat_vector_batch(&dummy, GSTAT_F64, 1, 0);
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Z, GSTAT_LOWER, GSTAT_MPI_ALL_RANKS, &Wz, &Z),
                  GSTAT_OK);
  CHECK(dummy == 3);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 0) == GSTAT_OK);
}

/* Rows of rank r: uneven, rank 1 (when there is one) holds none. */
static void split(int64_t n, int r, int64_t *lo, int64_t *hi) {
  int64_t w[8], tot = 0, acc = 0;
  for (int i = 0; i < size; i++) tot += w[i] = (i == 1 ? 0 : i + 2);
  for (int i = 0; i < r; i++) acc += w[i];
  *lo = n * acc / tot;
  *hi = n * (acc + w[r]) / tot;
}

static void same_result(const gstat_pca_result *a, const gstat_pca_result *b, const char *what) {
  CHECK(a->n_components == b->n_components && a->n_features == b->n_features &&
        a->n_samples == b->n_samples && a->method == b->method);
  if (a->n_components != b->n_components) return;
  int64_t k = a->n_components, p = a->n_features;
  char w[96];
  snprintf(w, sizeof w, "%s: components", what);
  close_rel(a->components, b->components, k * p, 1e-10, w);
  snprintf(w, sizeof w, "%s: explained_variance", what);
  close_rel(a->explained_variance, b->explained_variance, k, 1e-10, w);
  snprintf(w, sizeof w, "%s: ratio", what);
  close_rel(a->explained_variance_ratio, b->explained_variance_ratio, k, 1e-10, w);
  snprintf(w, sizeof w, "%s: singular_values", what);
  close_rel(a->singular_values, b->singular_values, k, 1e-10, w);
  snprintf(w, sizeof w, "%s: mean", what);
  close_rel(a->mean, b->mean, p, 1e-10, w);
  snprintf(w, sizeof w, "%s: scale", what);
  close_rel(a->scale, b->scale, p, 1e-10, w);
  snprintf(w, sizeof w, "%s: noise_variance", what);
  close_rel(a->noise_variance, b->noise_variance, 1, 1e-10, w);
  snprintf(w, sizeof w, "%s: total_variance", what);
  close_rel(a->total_variance, b->total_variance, 1, 1e-10, w);
}

/* gstat_mpi_pca with SCALAPACK gives LOCAL's result. */
static void test_pca(gstat_mpi *m, gstat_ctx *ctx) {
  enum { N = 400, P = 150 };
  double *X = malloc(sizeof(double) * N * P);
  for (int64_t i = 0; i < N; i++) {
    double common = uniform();
    for (int64_t j = 0; j < P; j++)
      X[i * P + j] = 100 + (1 + 0.05 * (double)j) * uniform() + 0.3 * common * (double)(j % 7);
  }
  int64_t lo, hi;
  split(N, rank, &lo, &hi);
  gstat_matrix Xl = gstat_matrix_row_major(X + lo * P, GSTAT_F64, 1, hi - lo, P);
  for (int variant = 0; variant < 4; variant++) {
    gstat_pca_options o;
    gstat_pca_options_init(&o);
    if (variant == 0) o.n_components = 5;
    if (variant == 1) o.variance_fraction = 0.9;
    if (variant == 2) o.scale = 1, o.n_components = 12;
    if (variant == 3) o.center = 0, o.variance_fraction = 0.5;
    int root = variant % 2 ? size - 1 : GSTAT_MPI_ALL_RANKS;
    int recv = root == GSTAT_MPI_ALL_RANKS || root == rank;
    gstat_pca_result *loc = NULL, *scl = NULL;
    CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_LOCAL, 0) == GSTAT_OK);
    same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, &o, root, &loc), GSTAT_OK);
    CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) == GSTAT_OK);
    same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, &o, root, recv ? &scl : NULL), GSTAT_OK);
    if (recv && loc && scl) {
      char what[32];
      snprintf(what, sizeof what, "pca variant %d", variant);
      same_result(scl, loc, what);
      if (rank == 0 && variant == 1)
        printf("  pca: k = %lld for a variance fraction of 0.9\n", (long long)scl->n_components);
    }
    CHECK(!recv || scl);
    gstat_pca_result_free(loc);
    gstat_pca_result_free(scl);
  }
  /* AUTO with a crossover below p picks ScaLAPACK on > 1 rank: the same result */
  gstat_pca_result *a = NULL, *b = NULL;
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_LOCAL, 0) == GSTAT_OK);
  same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, NULL, GSTAT_MPI_ALL_RANKS, &a), GSTAT_OK);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 100) == GSTAT_OK);
  same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, NULL, GSTAT_MPI_ALL_RANKS, &b), GSTAT_OK);
  if (a && b) same_result(b, a, "pca AUTO");
  gstat_pca_result_free(a);
  gstat_pca_result_free(b);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 0) == GSTAT_OK);
  free(X);
}

/* Bad input on one rank: the same status and message on every rank. */
static void test_bad_input(gstat_mpi *m, gstat_ctx *ctx) {
  const int64_t p = 90;
  double *A = malloc(sizeof(double) * p * p), *V = malloc(sizeof(double) * p * p), w[90];
  float Af[4] = {1, 0, 0, 1};
  make_sym(p, A);
  gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, p, p);
  gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
  gstat_matrix Vm = gstat_matrix_col_major(V, GSTAT_F64, 1, p, p);
  int last = size - 1;
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) == GSTAT_OK);
  /* NaN in the last rank's copy */
  if (rank == last) A[p - 1] = NAN;
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, GSTAT_MPI_ALL_RANKS, &Wm, &Vm),
                  GSTAT_ENOTFINITE);
  make_sym(p, A);
  /* no w on the receiving rank */
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, last, NULL, &Vm), GSTAT_EINVAL);
  /* the ranks disagree on the order */
  gstat_matrix Asmall = gstat_matrix_col_major(A, GSTAT_F64, 1, p - 1, p - 1);
  same_everywhere(m,
                  gstat_mpi_eigh(m, ctx, rank == last && size > 1 ? &Asmall : &Am, GSTAT_LOWER,
                                 GSTAT_MPI_ALL_RANKS, &Wm, &Vm),
                  size > 1 ? GSTAT_EINVAL : GSTAT_OK);
  /* float32 on root */
  gstat_matrix A32 = gstat_matrix_col_major(Af, GSTAT_F32, 1, 2, 2);
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &A32, GSTAT_LOWER, last, &Wm, NULL),
                  GSTAT_EUNSUPPORTED);
  /* V whose strides make elements share an address */
  gstat_matrix Vbad = Vm;
  Vbad.col_stride = 1;
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, 0, &Wm, &Vbad), GSTAT_EINVAL);
  /* the ranks choose different solvers */
  if (rank == 0) CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_LOCAL, 0) == GSTAT_OK);
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, GSTAT_MPI_ALL_RANKS, &Wm, &Vm),
                  size > 1 ? GSTAT_EINVAL : GSTAT_OK);
  CHECK(gstat_mpi_set_eigensolver(m, (gstat_mpi_eigensolver)9, 0) == GSTAT_EINVAL);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) == GSTAT_OK);

  /* PCA: a constant column with scaling fails on the receiving rank before
   * its eigen step, while the others wait for it there */
  enum { N = 60, P = 80 };
  double *X = malloc(sizeof(double) * N * P);
  for (int64_t i = 0; i < N * P; i++) X[i] = uniform();
  for (int64_t i = 0; i < N; i++) X[i * P + 3] = 2.5;
  int64_t lo = N * rank / size, hi = N * (rank + 1) / size;
  gstat_matrix Xl = gstat_matrix_row_major(X + lo * P, GSTAT_F64, 1, hi - lo, P);
  gstat_pca_options o;
  gstat_pca_options_init(&o);
  o.scale = 1;
  gstat_pca_result *res = NULL;
  for (int root = -1; root < size; root++)
    same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, &o, root, &res), GSTAT_EINVAL);
  /* NaN on the last rank */
  o.scale = 0;
  if (rank == last) X[lo * P] = NAN;
  same_everywhere(m, gstat_mpi_pca(m, ctx, &Xl, &o, 0, &res), GSTAT_ENOTFINITE);
  gstat_pca_result_free(res);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 0) == GSTAT_OK);
  free(X);
  free(A);
  free(V);
}

#else /* built without ScaLAPACK */

/* Asking for SCALAPACK is refused, on every rank, and stays refused. */
static void test_not_built(gstat_mpi *m, gstat_ctx *ctx) {
  const int64_t p = 20;
  double A[400], V[400], w[20];
  make_sym(p, A);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) == GSTAT_EUNSUPPORTED);
  CHECK(strstr(gstat_mpi_last_error(m), "ScaLAPACK") != NULL);
  gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, p, p);
  gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
  gstat_matrix Vm = gstat_matrix_col_major(V, GSTAT_F64, 1, p, p);
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, GSTAT_MPI_ALL_RANKS, &Wm, &Vm),
                  GSTAT_EUNSUPPORTED);
  double X[40 * 20];
  for (int i = 0; i < 40 * 20; i++) X[i] = uniform();
  gstat_matrix Xm = gstat_matrix_row_major(X, GSTAT_F64, 1, 40, 20);
  gstat_pca_result *res = NULL;
  same_everywhere(m, gstat_mpi_pca(m, ctx, &Xm, NULL, GSTAT_MPI_ALL_RANKS, &res),
                  GSTAT_EUNSUPPORTED);
  gstat_pca_result_free(res);
  /* AUTO never picks it: the local solver's result */
  double wr[20], Vr[400];
  reference(ctx, p, A, wr, Vr);
  CHECK(gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_AUTO, 1) == GSTAT_OK);
  same_everywhere(m, gstat_mpi_eigh(m, ctx, &Am, GSTAT_LOWER, GSTAT_MPI_ALL_RANKS, &Wm, &Vm),
                  GSTAT_OK);
  close_rel(w, wr, p, 0, "AUTO eigenvalues");
  close_rel(V, Vr, p * p, 0, "AUTO eigenvectors");
}

#endif

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = 1;
  gstat_ctx *ctx = NULL;
  gstat_mpi *m = NULL;
  CHECK(gstat_ctx_create(&ctx, &co) == GSTAT_OK);
  CHECK(gstat_mpi_create(MPI_COMM_WORLD, &m) == GSTAT_OK);
  CHECK(gstat_mpi_has_scalapack() == GSTAT_TEST_WITH_SCALAPACK);
  if (size > 8) {
    if (rank == 0) fprintf(stderr, "test_mpi_eigh: at most 8 ranks\n");
    failures++;
  } else {
    test_local(m, ctx);
#if GSTAT_TEST_WITH_SCALAPACK
    test_eigh(m, ctx);
    test_pca(m, ctx);
    test_bad_input(m, ctx);
#else
    test_not_built(m, ctx);
#endif
  }
  gstat_mpi_destroy(m);
  gstat_ctx_destroy(ctx);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int skip = !GSTAT_TEST_WITH_SCALAPACK && total == 0;
  if (rank == 0)
    printf("test_mpi_eigh: %d ranks, %d failed checks%s\n", size, total,
           skip ? "; SKIPPED: gstat_mpi built without ScaLAPACK (only the refusal and the "
                  "local path were checked)"
                : "");
  MPI_Finalize();
  return total ? 1 : skip ? SKIPPED : 0;
}
