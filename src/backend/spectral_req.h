/*
 * The requests of the batch spectral engine's two backend steps
 * (sc_laplacians, sc_assign in backend.h), shared by the backends and by
 * src/spectral/spectral_device.c, which calls them through the scheduler
 * (sched.h) and includes no backend header.
 */
#ifndef GSTAT_BACKEND_SPECTRAL_REQ_H
#define GSTAT_BACKEND_SPECTRAL_REQ_H

#include "core/internal.h"
#include "gstat/spectral.h"
#include "spectral/assign_impl.h"

/* Graphs padded to one order N: graph g is the leading sizes[g] x sizes[g]
 * block of element g of A. Its Laplacian goes into L's element g, padded
 * past sizes[g] with a decoupled diagonal above the spectrum (3 for the
 * normalized kind, 2 max degree + 1 for the unnormalized), so a full eigh of
 * L gives the graph's eigenpairs first. */
typedef struct gstat_i_sc_lap_req {
  const gstat_matrix *A;   /* count x N x N adjacencies, any dtype and strides */
  const int64_t *sizes;    /* host, count: nodes of graph g (<= N) */
  int sym, drop_loops;     /* gstat_symmetrize; the diagonal zeroed */
  int kind;                /* GSTAT_LAPLACIAN_UNNORMALIZED or _SYMMETRIC */
  const gstat_matrix *L;   /* count x N x N, dense column-major, F32 or F64, A's memory */
  const gstat_matrix *deg; /* count x N x 1 F64, dense, A's memory: the degrees */
  int64_t *comps;          /* host out, count: connected components of graph g */
} gstat_i_sc_lap_req;

/* From the ascending eigenpairs of those Laplacians, each graph's assignment
 * (src/spectral/assign_impl.h: eigengap, embedding, k-means, renumbering,
 * inertia). A graph with info[g] != 0, or that its components rule out
 * (opt.disconnected), fails on its own: labels -1 and why[g] says why. */
typedef struct gstat_i_sc_assign_req {
  const gstat_matrix *V;   /* as L above: the eigenvectors, in place */
  const gstat_matrix *W;   /* count x N x 1, V's dtype and memory: the eigenvalues */
  const gstat_matrix *deg; /* as sc_laplacians wrote it */
  const int64_t *sizes, *k, *info, *comps; /* host, count each (k 0: by the eigengap) */
  gstat_spectral_options opt;              /* validated, defaults applied */
  const int64_t *node0;          /* host, count + 1: graph g's labels at labels[node0[g] ...] */
  const int64_t *eig0;           /* host, count + 1: its eigenvalues at eigenvalues[eig0[g] ...] */
  int64_t *labels;               /* host out, node0[count] */
  double *eigenvalues;           /* host out, eig0[count], or NULL */
  int64_t *k_used, *iters, *why; /* host out, count each (why: WHY_* of assign_impl.h) */
  double *inertia;               /* host out, count */
} gstat_i_sc_assign_req;

/* The most eigenpairs any graph of an sc_assign request uses (>= 1). */
static inline int64_t gstat_i_sc_assign_pairs(const gstat_i_sc_assign_req *r) {
  int64_t mmax = 1;
  for (int64_t g = 0; g < r->V->batch; g++) {
    int64_t m = gstat_i_sc_eig_count_impl(&r->opt, r->sizes[g], r->k[g]);
    if (m > mmax) mmax = m;
  }
  return mmax;
}

/* Doubles of scratch one graph's assignment needs with at most mmax pairs
 * of N nodes: its pairs in double (N mmax + mmax), the embedding (N mmax)
 * and k-means' or cluster-QR's work (k, dim <= mmax). */
static inline int64_t gstat_i_sc_assign_scratch(int64_t N, int64_t mmax) {
  return 2 * N * mmax + mmax + (int64_t)gstat_i_sc_assign_work_impl(N, mmax, mmax) + 8;
}

#endif /* GSTAT_BACKEND_SPECTRAL_REQ_H */
