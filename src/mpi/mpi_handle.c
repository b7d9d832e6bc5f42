/* The gstat_mpi handle and the collective status agreement. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

#define PIECE ((size_t)1 << 30) /* doubles per message piece: counts are ints */
#define TAG_STATE 7101

gstat_status gstat_mpi_create(MPI_Comm comm, gstat_mpi **out) {
  int init = 0;
  if (!out) return GSTAT_EINVAL;
  *out = NULL;
  if (MPI_Initialized(&init) != MPI_SUCCESS || !init || comm == MPI_COMM_NULL) return GSTAT_EINVAL;
  gstat_mpi *m = calloc(1, sizeof *m);
  if (!m) return GSTAT_ENOMEM;
  if (MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS) {
    free(m);
    return GSTAT_EBACKEND;
  }
  /* an MPI failure becomes GSTAT_EBACKEND instead of aborting the job */
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(m->comm, &m->rank);
  MPI_Comm_size(m->comm, &m->size);
  m->eigensolver = GSTAT_MPI_EIGEN_AUTO;
  m->auto_min_p = GSTAT_MPI_SCALAPACK_MIN_P;
  m->blacs_sys = m->blacs_ctxt = -1;
  *out = m;
  return GSTAT_OK;
}

void gstat_mpi_destroy(gstat_mpi *m) {
  if (!m) return;
  gstat_mpi_i_eigh_release(m);
  MPI_Comm_free(&m->comm);
  free(m);
}

int gstat_mpi_rank(const gstat_mpi *m) {
  return m ? m->rank : -1;
}

int gstat_mpi_size(const gstat_mpi *m) {
  return m ? m->size : 0;
}

const char *gstat_mpi_last_error(const gstat_mpi *m) {
  return m ? m->msg : "";
}

gstat_status gstat_mpi_i_fail(gstat_mpi *m, gstat_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->msg, sizeof m->msg, fmt, ap);
  va_end(ap);
  return st;
}

gstat_status gstat_mpi_i_lib_fail(gstat_mpi *m, gstat_ctx *ctx, gstat_status st, const char *what) {
  const char *e = ctx ? gstat_ctx_last_error(ctx) : "";
  if (e && *e) return gstat_mpi_i_fail(m, st, "%s", e);
  return gstat_mpi_i_fail(m, st, "%s: %s", what, gstat_status_string(st));
}

gstat_status gstat_mpi_i_agree(gstat_mpi *m, gstat_status st) {
  /* first failing rank = MIN over (failed ? rank : size) */
  int mine = st != GSTAT_OK ? m->rank : m->size, first = m->size;
  if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, m->comm) != MPI_SUCCESS) {
    snprintf(m->msg, sizeof m->msg, "rank %d: MPI_Allreduce failed", m->rank);
    return GSTAT_EBACKEND;
  }
  if (first == m->size) {
    m->msg[0] = '\0';
    return GSTAT_OK;
  }
  struct {
    int status;
    char msg[GSTAT_MPI_MSG];
  } box;
  memset(&box, 0, sizeof box);
  if (m->rank == first) {
    box.status = (int)st;
    snprintf(box.msg, sizeof box.msg, "rank %d: %.480s", first, m->msg);
  }
  if (MPI_Bcast(&box, (int)sizeof box, MPI_BYTE, first, m->comm) != MPI_SUCCESS) {
    snprintf(m->msg, sizeof m->msg, "rank %d: MPI_Bcast of the error of rank %d failed", m->rank,
             first);
    return GSTAT_EBACKEND;
  }
  box.msg[sizeof box.msg - 1] = '\0';
  memcpy(m->msg, box.msg, sizeof m->msg);
  return (gstat_status)box.status;
}

int gstat_mpi_i_minmax(gstat_mpi *m, int64_t v, int64_t *lo, int64_t *hi) {
  int64_t in[2] = {v, v == INT64_MIN ? INT64_MAX : -v}, res[2];
  int rc = MPI_Allreduce(in, res, 2, MPI_INT64_T, MPI_MIN, m->comm);
  *lo = res[0];
  *hi = -res[1];
  return rc;
}

int gstat_mpi_i_send(gstat_mpi *m, const double *buf, size_t n, int dest) {
  int rc = MPI_SUCCESS;
  for (size_t o = 0; o < n && rc == MPI_SUCCESS; o += PIECE) {
    size_t c = n - o < PIECE ? n - o : PIECE;
    rc = MPI_Send(buf + o, (int)c, MPI_DOUBLE, dest, TAG_STATE, m->comm);
  }
  return rc;
}

int gstat_mpi_i_recv(gstat_mpi *m, double *buf, size_t n, int src) {
  int rc = MPI_SUCCESS;
  for (size_t o = 0; o < n && rc == MPI_SUCCESS; o += PIECE) {
    size_t c = n - o < PIECE ? n - o : PIECE;
    rc = MPI_Recv(buf + o, (int)c, MPI_DOUBLE, src, TAG_STATE, m->comm, MPI_STATUS_IGNORE);
  }
  return rc;
}

int gstat_mpi_i_bcast(gstat_mpi *m, double *buf, size_t n, int root) {
  int rc = MPI_SUCCESS;
  for (size_t o = 0; o < n && rc == MPI_SUCCESS; o += PIECE) {
    size_t c = n - o < PIECE ? n - o : PIECE;
    rc = MPI_Bcast(buf + o, (int)c, MPI_DOUBLE, root, m->comm);
  }
  return rc;
}

int gstat_mpi_i_root_ok(const gstat_mpi *m, int root) {
  return root == GSTAT_MPI_ALL_RANKS || (root >= 0 && root < m->size);
}

int gstat_mpi_i_receives(const gstat_mpi *m, int root) {
  return root == GSTAT_MPI_ALL_RANKS || root == m->rank;
}

gstat_status gstat_mpi_i_same_p(gstat_mpi *m, int64_t p, const char *fn) {
  int64_t lo, hi;
  if (gstat_mpi_i_minmax(m, p, &lo, &hi) != MPI_SUCCESS)
    return gstat_mpi_i_fail(m, GSTAT_EBACKEND, "%s: MPI_Allreduce failed", fn);
  if (lo != hi) {
    return gstat_mpi_i_fail(m, GSTAT_EINVAL,
                            "%s: the ranks disagree on the number of columns p (from %lld to %lld)",
                            fn, (long long)lo, (long long)hi);
  }
  m->msg[0] = '\0';
  return GSTAT_OK;
}
