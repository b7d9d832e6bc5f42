/*
 * Merging the ranks' covariance accumulators.
 *
 * Why exported states and not an Allreduce of sums: the state holds what the
 * library's Chan et al. merge needs (weight, shifted mean, co-moment, skipped
 * rows, NaN flags), so the tested merge runs unchanged and the merged
 * accumulator feeds every single-process function (covariance, correlation,
 * PCA with scaling or whitening). The tree below fixes the merge order
 * (rank 0 <- 1, 0 <- 2..3, 0 <- 4..7, ...: rows stay in rank order), so the
 * result does not depend on message timing, and one state is then broadcast,
 * so every rank holds the same bits. Volume: log2(size) states of ~p^2
 * doubles on the critical path, as an Allreduce of the co-moment.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* acc <- the state in buf (an exact replacement, the same on every rank). */
static gstat_status replace(gstat_ctx *ctx, gstat_cov_accum *acc, const double *buf) {
  gstat_cov_accum_reset(acc);
  return gstat_cov_accum_merge_state(ctx, acc, buf);
}

gstat_status gstat_mpi_i_reduce(gstat_mpi *m, gstat_ctx *ctx, gstat_cov_accum *acc, int root) {
  size_t S = gstat_cov_accum_state_size(gstat_cov_accum_dim(acc));
  double *mine = calloc(S, sizeof(double)), *buf = calloc(S, sizeof(double));
  gstat_status st = GSTAT_OK;
  int changed = 0;
  if (!mine || !buf) {
    st = gstat_mpi_i_fail(m, GSTAT_ENOMEM,
                          "cov_accum_reduce: cannot allocate 2 states of %zu doubles", S);
  } else if ((st = gstat_cov_accum_export(acc, mine)) != GSTAT_OK) {
    st = gstat_mpi_i_fail(m, st, "cov_accum_reduce: cannot export the accumulator");
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) goto done;

  /* binomial tree to rank 0; a failed merge still sends/receives, so no rank waits */
  int rc = MPI_SUCCESS;
  for (int step = 1; step < m->size && rc == MPI_SUCCESS; step <<= 1) {
    if (m->rank & step) {
      if (gstat_cov_accum_export(acc, buf) != GSTAT_OK) memset(buf, 0, S * sizeof(double));
      rc = gstat_mpi_i_send(m, buf, S, m->rank - step);
      break;
    }
    if (m->rank + step < m->size) {
      rc = gstat_mpi_i_recv(m, buf, S, m->rank + step);
      if (rc == MPI_SUCCESS && st == GSTAT_OK) {
        changed = 1;
        st = gstat_cov_accum_merge_state(ctx, acc, buf);
        if (st != GSTAT_OK) gstat_mpi_i_lib_fail(m, ctx, st, "cov_accum_reduce: merge");
      }
    }
  }
  if (rc != MPI_SUCCESS)
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "cov_accum_reduce: MPI error %d", rc);
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) goto done;

  /* hand the merged state to the receiver(s) */
  if (m->rank == 0) st = gstat_cov_accum_export(acc, buf);
  if (root == GSTAT_MPI_ALL_RANKS) {
    rc = gstat_mpi_i_bcast(m, buf, S, 0);
  } else if (root != 0) {
    if (m->rank == 0) rc = gstat_mpi_i_send(m, buf, S, root);
    if (m->rank == root) rc = gstat_mpi_i_recv(m, buf, S, 0);
  }
  if (rc != MPI_SUCCESS) {
    st = gstat_mpi_i_fail(m, GSTAT_EBACKEND, "cov_accum_reduce: MPI error %d", rc);
  } else if (st == GSTAT_OK && gstat_mpi_i_receives(m, root)) {
    changed = 1;
    if ((st = replace(ctx, acc, buf)) != GSTAT_OK)
      gstat_mpi_i_lib_fail(m, ctx, st, "cov_accum_reduce: merge");
  } else if (changed) {
    changed = 0; /* not a receiver: give the caller its own data back */
    if ((st = replace(ctx, acc, mine)) != GSTAT_OK)
      gstat_mpi_i_lib_fail(m, ctx, st, "cov_accum_reduce: restore");
  }
  st = gstat_mpi_i_agree(m, st);
done:
  if (st != GSTAT_OK && changed && mine) replace(ctx, acc, mine); /* failed: acc as it was */
  free(mine);
  free(buf);
  return st;
}

gstat_status gstat_mpi_cov_accum_reduce(gstat_mpi *m, gstat_ctx *ctx, gstat_cov_accum *acc,
                                        int root) {
  if (!m) return GSTAT_EINVAL;
  gstat_status st = GSTAT_OK;
  m->msg[0] = '\0';
  if (!ctx || !acc) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL, "cov_accum_reduce: %s is NULL", ctx ? "acc" : "ctx");
  } else if (!gstat_mpi_i_root_ok(m, root)) {
    st = gstat_mpi_i_fail(m, GSTAT_EINVAL,
                          "cov_accum_reduce: root=%d is not a rank of %d or "
                          "GSTAT_MPI_ALL_RANKS",
                          root, m->size);
  }
  st = gstat_mpi_i_agree(m, st);
  if (st != GSTAT_OK) return st;
  st = gstat_mpi_i_same_p(m, gstat_cov_accum_dim(acc), "cov_accum_reduce");
  if (st != GSTAT_OK) return st;
  return gstat_mpi_i_reduce(m, ctx, acc, root);
}
