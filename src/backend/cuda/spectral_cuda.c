/*
 * Batch spectral clustering of dense graphs that lie on the device (the
 * backend table's spectral_dense): per chunk of graphs, the Laplacians with
 * degrees and components (one kernel), this module's batched eigh in place,
 * then the assignment (one thread per graph running the CPU engine's code,
 * src/spectral/assign_impl.h); only labels, eigenvalues and per-graph
 * numbers come back to the host.
 *
 * Device bytes per graph of N nodes: the Laplacian (N^2 in the compute type,
 * also the eigenvectors), eigenvalues, degrees, labels (8 N), and the
 * assignment's scratch (about 2 N m doubles, m the eigenpairs kept).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "spectral/assign_impl.h"

#define TRY_CU(expr, what)                                                        \
  do {                                                                            \
    cudaError_t e_ = (expr);                                                      \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "spectral_batch", what, e_); \
  } while (0)

/* Device layout of one chunk of nb graphs (offsets in bytes into CU_SC). */
typedef struct chunk_layout {
  size_t L, W, deg, meta, comps, labels, eig, out, inertia, scratch, bad, total;
  int64_t per; /* scratch doubles per graph */
} chunk_layout;

static size_t take(size_t *at, size_t bytes) {
  size_t o = (*at + 255) / 256 * 256;
  *at = o + bytes;
  return o;
}

static chunk_layout layout(int64_t nb, int64_t N, int64_t mmax, size_t es) {
  chunk_layout c;
  size_t at = 0, g = (size_t)nb;
  c.per = 2 * N * mmax + 2 * mmax * mmax + 6 * N + 2 * mmax + 8;
  c.L = take(&at, g * (size_t)(N * N) * es);
  c.W = take(&at, g * (size_t)N * es);
  c.deg = take(&at, g * (size_t)N * 8);
  c.meta = take(&at, g * 3 * 8);
  c.comps = take(&at, g * 8);
  c.labels = take(&at, g * (size_t)N * 8);
  c.eig = take(&at, g * (size_t)mmax * 8);
  c.out = take(&at, g * 3 * 8);
  c.inertia = take(&at, g * 8);
  c.scratch = take(&at, g * (size_t)c.per * 8);
  c.bad = take(&at, sizeof(int));
  c.total = at;
  return c;
}

/* Host bytes of a chunk's results: meta in, then labels, eig, out, inertia, comps back. */
static size_t host_bytes(int64_t nb, int64_t N, int64_t mmax) {
  return (size_t)nb * 8 * (size_t)(3 + N + mmax + 3 + 1 + 1) + 64;
}

static gstat_status run_chunk(gstat_cu_state *s, gstat_ctx *ctx, const gstat_i_sc_device_req *r,
                              int64_t b0, int64_t nb, int64_t mmax, int cdt, char *d,
                              const chunk_layout *c, int64_t *h) {
  const gstat_matrix *A = r->A;
  int64_t N = A->rows;
  size_t ae = gstat_cu_dtype_bytes(A->dtype);
  int64_t *hm = h; /* sizes, k, eigh info */
  for (int64_t g = 0; g < nb; g++) {
    hm[g] = r->sizes[b0 + g];
    hm[nb + g] = r->k[b0 + g];
  }
  TRY_CU(cudaMemcpyAsync(d + c->meta, hm, (size_t)(2 * nb) * 8, cudaMemcpyHostToDevice, s->stream),
         "sizes");
  TRY_CU(cudaMemsetAsync(d + c->bad, 0, sizeof(int), s->stream), "flag");
  const char *a = (const char *)A->data + (size_t)(b0 * A->batch_stride) * ae;
  TRY_CU(gstat_cu_sc_laplacian(a, A->dtype, nb, N, A->batch_stride, A->row_stride, A->col_stride,
                               (const int64_t *)(d + c->meta), r->symmetrize,
                               r->self_loops == GSTAT_LOOPS_DROP, r->opt.laplacian, d + c->L, cdt,
                               (double *)(d + c->deg), (int64_t *)(d + c->comps),
                               (int *)(d + c->bad), s->stream),
         "Laplacian kernel");
  int bad = 0;
  TRY_CU(cudaMemcpyAsync(&bad, d + c->bad, sizeof bad, cudaMemcpyDeviceToHost, s->stream), "flag");
  TRY_CU(cudaStreamSynchronize(s->stream), "Laplacians");
  if (bad) /* the host engine finds the entry and writes the message */
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "spectral_batch: a graph has an invalid weight (host check)");
  gstat_matrix Lm = {d + c->L, (gstat_dtype)cdt, GSTAT_CUDA, s->device, nb, N, N, N * N, 1, N};
  gstat_matrix Wm = {d + c->W, (gstat_dtype)cdt, GSTAT_CUDA, s->device, nb, N, 1, N, 1, N};
  int64_t *info = hm + 2 * nb;
  gstat_status st = gstat_cu_eigh(s, ctx, &Lm, GSTAT_LOWER, &Wm, &Lm, info);
  if (st != GSTAT_OK) return st;
  for (int64_t g = 0; g < nb; g++)
    if (info[g] == GSTAT_I_INFO_RETRY) /* the host engine recomputes the whole batch */
      return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                                 "spectral_batch: graph %lld's eigen decomposition is to be "
                                 "recomputed on the host",
                                 (long long)(b0 + g));
  TRY_CU(cudaMemcpyAsync(d + c->meta + (size_t)(2 * nb) * 8, info, (size_t)nb * 8,
                         cudaMemcpyHostToDevice, s->stream),
         "info");
  TRY_CU(gstat_cu_sc_assign(&r->opt, nb, N, cdt, d + c->L, d + c->W, (double *)(d + c->deg),
                            (const int64_t *)(d + c->meta), (const int64_t *)(d + c->comps), mmax,
                            (double *)(d + c->scratch), c->per, (int64_t *)(d + c->labels),
                            (double *)(d + c->eig), (int64_t *)(d + c->out),
                            (double *)(d + c->inertia), s->stream),
         "assignment kernel");
  /* results back: labels, eig, out, inertia, comps (contiguous in the layout order) */
  int64_t *hl = hm + 3 * nb, *he = hl + nb * N, *ho = he + nb * mmax, *hi = ho + 3 * nb,
          *hc = hi + nb;
  TRY_CU(
      cudaMemcpyAsync(hl, d + c->labels, (size_t)(nb * N) * 8, cudaMemcpyDeviceToHost, s->stream),
      "labels");
  TRY_CU(
      cudaMemcpyAsync(he, d + c->eig, (size_t)(nb * mmax) * 8, cudaMemcpyDeviceToHost, s->stream),
      "eigenvalues");
  TRY_CU(cudaMemcpyAsync(ho, d + c->out, (size_t)(3 * nb) * 8, cudaMemcpyDeviceToHost, s->stream),
         "results");
  TRY_CU(cudaMemcpyAsync(hi, d + c->inertia, (size_t)nb * 8, cudaMemcpyDeviceToHost, s->stream),
         "inertia");
  TRY_CU(cudaMemcpyAsync(hc, d + c->comps, (size_t)nb * 8, cudaMemcpyDeviceToHost, s->stream),
         "components");
  TRY_CU(cudaStreamSynchronize(s->stream), "assignment");
  for (int64_t g = 0; g < nb; g++) {
    int64_t G = b0 + g, n = r->sizes[G];
    memcpy(r->labels + r->node0[G], hl + g * N, sizeof(int64_t) * (size_t)n);
    if (r->eigenvalues)
      memcpy(r->eigenvalues + r->eig0[G], (double *)he + g * mmax,
             sizeof(double) * (size_t)(r->eig0[G + 1] - r->eig0[G]));
    r->k_used[G] = ho[3 * g];
    r->iters[G] = ho[3 * g + 1];
    r->why[G] = ho[3 * g + 2];
    memcpy(&r->inertia[G], (double *)hi + g, sizeof(double));
    r->comps[G] = hc[g];
  }
  return GSTAT_OK;
}

gstat_status gstat_cu_spectral_dense(void *state, gstat_ctx *ctx, const gstat_i_sc_device_req *r) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  const gstat_matrix *A = r->A;
  int64_t count = A->batch, N = A->rows;
  if (A->dtype != GSTAT_F32 && A->dtype != GSTAT_F64)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "spectral_batch: the GPU path takes float32 or float64 graphs");
  if (N > GSTAT_CU_SC_MAX_N)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "spectral_batch: graphs of more than %d nodes run on the host",
                               GSTAT_CU_SC_MAX_N);
  if (r->opt.assign == GSTAT_ASSIGN_CLUSTER_QR)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "spectral_batch: cluster-QR runs on the host");
  if (count == 0 || N == 0) return GSTAT_OK;
  int cdt = gstat_cu_compute_dtype(A->dtype);
  int64_t mmax = 1;
  for (int64_t g = 0; g < count; g++) {
    int64_t m = gstat_i_sc_eig_count_impl(&r->opt, r->sizes[g], r->k[g]);
    if (m > mmax) mmax = m;
  }
  size_t es = gstat_cu_dtype_bytes(cdt);
  chunk_layout one = layout(1, N, mmax, es);
  /* the eigh's own buffers take about as much again */
  int64_t chunk = gstat_cu_chunk(s, count, 2 * one.total);
  for (int64_t b0 = 0; b0 < count;) {
    int64_t nb = count - b0 < chunk ? count - b0 : chunk;
    chunk_layout c = layout(nb, N, mmax, es);
    char *d = gstat_cu_buffer(s, ctx, CU_SC, c.total);
    int64_t *h = gstat_cu_host_buffer(s, ctx, &s->host_sc, host_bytes(nb, N, mmax));
    gstat_status st = d && h ? run_chunk(s, ctx, r, b0, nb, mmax, cdt, d, &c, h) : GSTAT_ENOMEM;
    if (st == GSTAT_ENOMEM && chunk > 1 && gstat_cu_fault_now() != FAULT_OOM) {
      chunk = (chunk + 1) / 2; /* smaller chunks, then the host (the caller) */
      continue;
    }
    if (st != GSTAT_OK) return st;
    b0 += nb;
  }
  return GSTAT_OK;
}
