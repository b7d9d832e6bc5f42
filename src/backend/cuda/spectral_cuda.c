/*
 * The batch spectral engine's two steps on the device (backend.h's
 * sc_laplacians and sc_assign, spectral_req.h; src/spectral/spectral_device.c
 * runs them around the batched eigh): the padded Laplacians with degrees and
 * components (a block per graph), and the assignment (a thread per graph
 * running the CPU's code, src/spectral/assign_impl.h). Only per-graph
 * numbers cross to the host.
 *
 * sc_assign's device bytes per graph of N nodes with at most m pairs used:
 * labels (8 N), eigenvalues (8 m), results, and the scratch of
 * gstat_i_sc_assign_scratch (about 3 N m doubles).
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"

#define TRY_CU(expr, what)                                                        \
  do {                                                                            \
    cudaError_t e_ = (expr);                                                      \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "spectral_batch", what, e_); \
  } while (0)

static gstat_status decline(gstat_ctx *ctx, const char *why) {
  return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "spectral_batch: %s", why);
}

/* Dense column-major F32/F64 elements, packed (what the engine passes). */
static bool packed(const gstat_matrix *M) {
  return (M->dtype == GSTAT_F32 || M->dtype == GSTAT_F64) && M->row_stride == 1 &&
         M->col_stride == M->rows && (M->batch <= 1 || M->batch_stride == M->rows * M->cols);
}

static size_t take(size_t *at, size_t bytes) {
  size_t o = (*at + 255) / 256 * 256;
  *at = o + bytes;
  return o;
}

gstat_status gstat_cu_sc_laplacians_op(void *state, gstat_ctx *ctx, const gstat_i_sc_lap_req *r) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  const gstat_matrix *A = r->A;
  int64_t count = A->batch, N = A->rows;
  if (A->dtype != GSTAT_F32 && A->dtype != GSTAT_F64)
    return decline(ctx, "the device takes float32 or float64 graphs");
  if (N > GSTAT_CU_SC_MAX_N) return decline(ctx, "graphs of more than 1024 nodes run on the host");
  if (!packed(r->L) || !packed(r->deg) || r->deg->dtype != GSTAT_F64)
    return decline(ctx, "Laplacians and degrees are packed F32/F64 and F64");
  if (count == 0 || N == 0) return GSTAT_OK;
  size_t at = 0, sizes = take(&at, 8 * (size_t)count), comps = take(&at, 8 * (size_t)count);
  size_t bad = take(&at, sizeof(int));
  char *d = gstat_cu_buffer(s, ctx, CU_SC, at);
  int64_t *h = gstat_cu_host_buffer(s, ctx, &s->host_sc, 8 * (size_t)(2 * count + 1));
  if (!d || !h) return GSTAT_ENOMEM;
  memcpy(h, r->sizes, 8 * (size_t)count);
  TRY_CU(cudaMemcpyAsync(d + sizes, h, 8 * (size_t)count, cudaMemcpyHostToDevice, s->stream),
         "sizes");
  TRY_CU(cudaMemsetAsync(d + bad, 0, sizeof(int), s->stream), "flag");
  TRY_CU(gstat_cu_sc_laplacian(A->data, A->dtype, count, N, A->batch_stride, A->row_stride,
                               A->col_stride, (const int64_t *)(d + sizes), r->sym, r->drop_loops,
                               r->kind, r->L->data, r->L->dtype, r->deg->data,
                               (int64_t *)(d + comps), (int *)(d + bad), s->stream),
         "Laplacian kernel");
  int64_t *hc = h + count;
  int *hb = (int *)(h + 2 * count);
  *hb = 0;
  TRY_CU(cudaMemcpyAsync(hc, d + comps, 8 * (size_t)count, cudaMemcpyDeviceToHost, s->stream),
         "components");
  TRY_CU(cudaMemcpyAsync(hb, d + bad, sizeof(int), cudaMemcpyDeviceToHost, s->stream), "flag");
  TRY_CU(cudaStreamSynchronize(s->stream), "Laplacians");
  if (*hb) /* the host engine names the entry, or skips the graph in a batch */
    return decline(ctx, "a graph has an invalid weight (host check)");
  memcpy(r->comps, hc, 8 * (size_t)count);
  return GSTAT_OK;
}

/* Device layout of sc_assign (byte offsets into CU_SC). */
typedef struct assign_layout {
  size_t meta, comps, labels, eig, out, inertia, scratch, total;
} assign_layout;

static assign_layout assign_at(int64_t count, int64_t N, int64_t mmax, int64_t per) {
  assign_layout c;
  size_t at = 0, g = (size_t)count;
  c.meta = take(&at, g * 3 * 8); /* sizes, k, info */
  c.comps = take(&at, g * 8);
  c.labels = take(&at, g * (size_t)N * 8);
  c.eig = take(&at, g * (size_t)mmax * 8);
  c.out = take(&at, g * 3 * 8); /* k used, iterations, why */
  c.inertia = take(&at, g * 8);
  c.scratch = take(&at, g * (size_t)per * 8);
  c.total = at;
  return c;
}

/* The device's results (host copy h: labels, eig, out, inertia) into r. */
static void scatter(const gstat_i_sc_assign_req *r, int64_t N, int64_t mmax, const int64_t *h) {
  int64_t count = r->V->batch;
  const int64_t *hl = h, *ho = hl + count * N + count * mmax;
  const double *he = (const double *)(hl + count * N), *hi = (const double *)(ho + 3 * count);
  for (int64_t g = 0; g < count; g++) {
    memcpy(r->labels + r->node0[g], hl + g * N, sizeof(int64_t) * (size_t)r->sizes[g]);
    if (r->eigenvalues)
      memcpy(r->eigenvalues + r->eig0[g], he + g * mmax,
             sizeof(double) * (size_t)(r->eig0[g + 1] - r->eig0[g]));
    r->k_used[g] = ho[3 * g];
    r->iters[g] = ho[3 * g + 1];
    r->why[g] = ho[3 * g + 2];
    r->inertia[g] = hi[g];
  }
}

gstat_status gstat_cu_sc_assign_op(void *state, gstat_ctx *ctx, const gstat_i_sc_assign_req *r) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (!packed(r->V) || !packed(r->W) || !packed(r->deg) || r->V->dtype != r->W->dtype)
    return decline(ctx, "eigenpairs are packed F32/F64");
  int64_t count = r->V->batch, N = r->V->rows;
  if (count == 0 || N == 0) return GSTAT_OK;
  int64_t mmax = gstat_i_sc_assign_pairs(r), per = gstat_i_sc_assign_scratch(N, mmax);
  assign_layout c = assign_at(count, N, mmax, per);
  size_t back = (size_t)(count * (N + mmax + 4)) * 8; /* labels, eig, out, inertia */
  char *d = gstat_cu_buffer(s, ctx, CU_SC, c.total);
  int64_t *h = gstat_cu_host_buffer(s, ctx, &s->host_sc, back + 8 * (size_t)(4 * count));
  if (!d || !h) return GSTAT_ENOMEM;
  int64_t *hm = h + back / 8; /* sizes, k, info, comps */
  memcpy(hm, r->sizes, 8 * (size_t)count);
  memcpy(hm + count, r->k, 8 * (size_t)count);
  memcpy(hm + 2 * count, r->info, 8 * (size_t)count);
  memcpy(hm + 3 * count, r->comps, 8 * (size_t)count);
  TRY_CU(cudaMemcpyAsync(d + c.meta, hm, 24 * (size_t)count, cudaMemcpyHostToDevice, s->stream),
         "sizes");
  TRY_CU(cudaMemcpyAsync(d + c.comps, hm + 3 * count, 8 * (size_t)count, cudaMemcpyHostToDevice,
                         s->stream),
         "components");
  TRY_CU(gstat_cu_sc_assign(&r->opt, count, N, r->V->dtype, r->V->data, r->W->data, r->deg->data,
                            (const int64_t *)(d + c.meta), (const int64_t *)(d + c.comps), mmax,
                            (double *)(d + c.scratch), per, (int64_t *)(d + c.labels),
                            (double *)(d + c.eig), (int64_t *)(d + c.out),
                            (double *)(d + c.inertia), s->stream),
         "assignment kernel");
  /* labels, eig, out, inertia lie in this order in the layout: one copy each */
  size_t lb = (size_t)(count * N) * 8, eb = (size_t)(count * mmax) * 8;
  char *hb = (char *)h;
  TRY_CU(cudaMemcpyAsync(hb, d + c.labels, lb, cudaMemcpyDeviceToHost, s->stream), "labels");
  TRY_CU(cudaMemcpyAsync(hb + lb, d + c.eig, eb, cudaMemcpyDeviceToHost, s->stream), "eigenvalues");
  TRY_CU(cudaMemcpyAsync(hb + lb + eb, d + c.out, 24 * (size_t)count, cudaMemcpyDeviceToHost,
                         s->stream),
         "results");
  TRY_CU(cudaMemcpyAsync(hb + lb + eb + 24 * (size_t)count, d + c.inertia, 8 * (size_t)count,
                         cudaMemcpyDeviceToHost, s->stream),
         "inertia");
  TRY_CU(cudaStreamSynchronize(s->stream), "assignment");
  scatter(r, N, mmax, h);
  return GSTAT_OK;
}
