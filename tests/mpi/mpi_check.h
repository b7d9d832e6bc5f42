/* Checks shared by the MPI test programs: a failure counter per rank (one
 * output per rank, no test framework under mpirun), data that are the same on
 * every rank, and "the same status and message on every rank". */
#ifndef GSTAT_TESTS_MPI_CHECK_H
#define GSTAT_TESTS_MPI_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gstat/mpi.h"

static int rank, size, failures;

#define CHECK(c)                                                                           \
  do {                                                                                     \
    if (!(c)) {                                                                            \
      fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed\n", rank, __FILE__, __LINE__, #c); \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

static uint64_t rng = 88172645463325252ull;
static double uniform(void) { /* xorshift64: the same data on every rank */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

/* max |a - b| <= tol * max |b| (or tol when b is all zeros) */
static void close_rel(const double *a, const double *b, int64_t n, double tol, const char *what) {
  double scale = 0, err = 0;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
  for (int64_t i = 0; i < n; i++) err = fmax(err, fabs(a[i] - b[i]));
  if (!(err <= tol * (scale > 0 ? scale : 1))) {
    fprintf(stderr, "rank %d: %s: max error %g, scale %g\n", rank, what, err, scale);
    failures++;
  }
}

/* The same status and message on every rank. */
static void same_everywhere(gstat_mpi *m, gstat_status st, gstat_status want) {
  char msg[600] = {0};
  CHECK(st == want);
  if (st != want)
    fprintf(stderr, "rank %d: status %d, expected %d: %s\n", rank, (int)st, (int)want,
            gstat_mpi_last_error(m));
  snprintf(msg, sizeof msg, "%s", gstat_mpi_last_error(m));
  char root_msg[600];
  memcpy(root_msg, msg, sizeof msg);
  MPI_Bcast(root_msg, (int)sizeof root_msg, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(strcmp(msg, root_msg) == 0);
  if (want != GSTAT_OK) CHECK(msg[0] != '\0');
  if (rank == 0 && want != GSTAT_OK) printf("  agreed error: %s\n", msg);
}

#endif /* GSTAT_TESTS_MPI_CHECK_H */
