/*
 * The local eigensolver on one rank against the ScaLAPACK one on all ranks,
 * for one symmetric p x p float64 matrix per order on the command line:
 *
 *   mpirun -np N bench_mpi_eigh [--reps R] [--local-threads T] p1 p2 ...
 *
 * local      gstat_eigh on rank 0 with a context of T threads (default 1),
 *            while the other ranks sleep;
 * scalapack  gstat_mpi_eigh with GSTAT_MPI_EIGEN_SCALAPACK, A on rank 0 and
 *            the results back there: distribution, pdsyevd, sign fix and
 *            gather, timed from a barrier to the slowest rank's return.
 * Best of R runs (default 3), in ms; ratio = local / scalapack (> 1: the
 * ScaLAPACK path is faster). The last two columns check that both agree.
 * pdsyevd's BLAS threads follow OPENBLAS_NUM_THREADS / OMP_NUM_THREADS:
 * set them to 1 with one rank per core.
 */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gstat/gstat.h"
#include "gstat/mpi.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void) { /* xorshift64: the same matrix on every rank */
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) * 0x1p-53;
}

/* The other ranks wait for rank 0 without spinning (a blocking MPI call
 * polls a core, and on a small machine that core may be rank 0's sibling). */
static void idle_wait(int rank) {
  MPI_Request req;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done && rank != 0) nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
}

static int usage(int rank) {
  if (rank == 0)
    fprintf(stderr, "usage: mpirun -np N bench_mpi_eigh [--reps R] [--local-threads T] p...\n");
  return 2;
}

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : "unset";
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, reps = 3, threads = 1, rc = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int64_t *ps = calloc((size_t)argc, sizeof(int64_t));
  for (int i = 1; i < argc && rc == 0; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--local-threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if ((ps[np] = atoll(argv[i])) > 0)
      np++;
    else
      rc = usage(rank);
  }
  if (rc == 0 && (np == 0 || reps < 1 || threads < 1)) rc = usage(rank);
  if (rc == 0 && !gstat_mpi_has_scalapack()) {
    if (rank == 0) fprintf(stderr, "bench_mpi_eigh: gstat_mpi was built without ScaLAPACK\n");
    rc = 1;
  }
  gstat_ctx *ctx = NULL;
  gstat_mpi *m = NULL;
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = threads;
  co.backend = GSTAT_BACKEND_CPU;
  if (rc == 0 && (gstat_ctx_create(&ctx, &co) != GSTAT_OK ||
                  gstat_mpi_create(MPI_COMM_WORLD, &m) != GSTAT_OK ||
                  gstat_mpi_set_eigensolver(m, GSTAT_MPI_EIGEN_SCALAPACK, 0) != GSTAT_OK))
    rc = 1;
  if (rc == 0 && rank == 0) {
    printf(
        "# local: gstat_eigh on rank 0, %d thread(s); scalapack: pdsyevd on %d rank(s); "
        "OPENBLAS_NUM_THREADS=%s OMP_NUM_THREADS=%s; f64, best of %d, ms\n",
        threads, size, env("OPENBLAS_NUM_THREADS"), env("OMP_NUM_THREADS"), reps);
    printf(
        "| p | ranks | local ms | scalapack ms | ratio local/scalapack | max rel dw | max dV |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (int t = 0; t < np && rc == 0; t++) {
    int64_t p = ps[t];
    size_t pp = (size_t)(p * p);
    double *A = malloc(sizeof(double) * pp), *V = malloc(sizeof(double) * pp),
           *Vs = malloc(sizeof(double) * pp), *w = malloc(sizeof(double) * (size_t)p),
           *ws = malloc(sizeof(double) * (size_t)p);
    if (!A || !V || !Vs || !w || !ws) {
      fprintf(stderr, "rank %d: out of memory at p = %lld\n", rank, (long long)p);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int64_t j = 0; j < p; j++)
      for (int64_t i = j; i < p; i++) A[i + j * p] = A[j + i * p] = 2 * uniform() - 1;
    gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, p, p);
    gstat_matrix Wm = gstat_vector_batch(w, GSTAT_F64, 1, p);
    gstat_matrix Vm = gstat_matrix_col_major(V, GSTAT_F64, 1, p, p);
    gstat_matrix Wsm = gstat_vector_batch(ws, GSTAT_F64, 1, p);
    gstat_matrix Vsm = gstat_matrix_col_major(Vs, GSTAT_F64, 1, p, p);
    double best_local = INFINITY, best_scl = INFINITY;
    for (int r = 0; r < reps && rc == 0; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        double t0 = MPI_Wtime();
        if (gstat_eigh(ctx, &Am, GSTAT_LOWER, &Wm, &Vm, NULL) != GSTAT_OK) rc = 1;
        best_local = fmin(best_local, MPI_Wtime() - t0);
      }
      idle_wait(rank);
      MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int r = 0; r < reps && rc == 0; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime(), dt, slowest;
      gstat_status st = gstat_mpi_eigh(m, ctx, rank == 0 ? &Am : NULL, GSTAT_LOWER, 0,
                                       rank == 0 ? &Wsm : NULL, rank == 0 ? &Vsm : NULL);
      dt = MPI_Wtime() - t0;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      best_scl = fmin(best_scl, slowest);
      if (st != GSTAT_OK) {
        if (rank == 0) fprintf(stderr, "gstat_mpi_eigh: %s\n", gstat_mpi_last_error(m));
        rc = 1;
      }
    }
    if (rc == 0 && rank == 0) {
      double dw = 0, dv = 0, wmax = 0;
      for (int64_t i = 0; i < p; i++) {
        wmax = fmax(wmax, fabs(w[i]));
        dw = fmax(dw, fabs(w[i] - ws[i]));
      }
      for (size_t i = 0; i < pp; i++) dv = fmax(dv, fabs(V[i] - Vs[i]));
      printf("| %lld | %d | %.1f | %.1f | %.2f | %.1e | %.1e |\n", (long long)p, size,
             1e3 * best_local, 1e3 * best_scl, best_local / best_scl, dw / wmax, dv);
      fflush(stdout);
    }
    free(A);
    free(V);
    free(Vs);
    free(w);
    free(ws);
  }
  gstat_mpi_destroy(m);
  gstat_ctx_destroy(ctx);
  free(ps);
  MPI_Finalize();
  return rc;
}
