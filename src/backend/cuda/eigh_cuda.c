/*
 * eigh on the GPU, dispatched by matrix order (one table, measured on the
 * H200; bench/README.md has the numbers):
 *   n <= 32          our Jacobi kernel (kernels/, a warp per matrix; in
 *                    float compute with 8 < n <= 16 a pair of columns per
 *                    lane), one launch for the batch
 *   32 < n <= 64     our Jacobi kernel (a block per matrix) for a single
 *                    matrix or a batch large enough to hide its per-step
 *                    latency (jacobi_rules); both Jacobi kernels read and
 *                    write bf16 device data as bf16
 *   160 <= n <= 2048 our lockstep solver (sytrd_eigh.c: the batch reduced
 *   and batches      to tridiagonal form in lockstep, bisection and twisted
 *   of 4 or more     factorizations in double, cuBLAS back-transformation;
 *   (float from 257; lockstep_rules); clusters of close eigenvalues get the
 *   2 or more below  cluster step, matrices whose clusters it cannot serve
 *   384)             go back to cuSOLVER
 *   otherwise        cusolverDnXsyevBatched, chunked so n*n*chunk <= INT32_MAX,
 *                    replayed from a CUDA graph where cuSOLVER allows capture
 *                    (large batches as parallel branches, graph_branches),
 *                    in the caller's device arrays where the graph allows
 *   large n, few     cusolverDnXsyevd per matrix (uses_loop), spread over
 *   matrices         side streams, each fed by its own host thread (Xsyevd
 *                    blocks it)
 *   float32 vectors, cuSOLVER's reduction and back-transformation around
 *   4096..8192       our tridiagonal step, matrix by matrix (sytrd_split.c);
 *                    float32 beyond (or degenerate) in a float64 copy
 *                    (f32_in_f64_min_n)
 *   float64 vectors, our two-stage reduction (two_stage.c), matrix by
 *   4096..8192       matrix; degenerate, or without room for its
 *                    workspace, Xsyevd (two_stage_min_n)
 * Any batch size runs: the batch is cut into chunks that fit device memory,
 * halved again when an allocation fails.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/sytrd_eigh.h"
#include "backend/cuda/sytrd_split.h"
#include "backend/cuda/two_stage.h"

/* When the Jacobi kernels run: up to max_n, for a chunk of at least
 * min_batch matrices (float, double; bf16 computes in float) or of one.
 * Above n = 32 a block solves a matrix in a chain of dependent steps, so
 * only large batches hide that latency against XsyevBatched
 * (bench/README.md, "The CUDA eigh rules' measurements"). */
static const struct {
  int64_t max_n, min_batch_f32, min_batch_f64;
} jacobi_rules[] = {
    {32, 1, 1}, /* the warp kernel */
    {40, 1, 1}, /* the block kernel from here on */
    {44, 1, 256}, {52, 32, 256}, {GSTAT_CU_JACOBI_MAX_N, 128, 256},
};

/* Whether a chunk of nb matrices of order n runs our Jacobi kernel. */
static bool uses_jacobi(int64_t n, int cdt, int64_t nb) {
  for (size_t i = 0; i < sizeof jacobi_rules / sizeof jacobi_rules[0]; i++)
    if (n <= jacobi_rules[i].max_n)
      return nb == 1 || nb >= (cdt == GSTAT_F64 ? jacobi_rules[i].min_batch_f64
                                                : jacobi_rules[i].min_batch_f32);
  return false;
}

/* When a chunk runs one Xsyevd per matrix (threaded, syevd_loop) instead
 * of XsyevBatched: from n = 512 the batched routine takes about as long
 * for a few matrices as for many, while the loop grows with the batch
 * (bench/README.md, "The CUDA eigh rules' measurements"). */
static const struct {
  int64_t min_n, min_batch, max_batch; /* from order min_n, these batches loop */
} loop_rules[] = {
    {4096, 1, INT64_MAX},
    {2048, 1, 9},
    {1024, 1, 8},
    {512, 2, 6},
};

/* cuSOLVER's float32 Xsyevd is slow in its tridiagonal stage from n = 4096
 * (its reduction is not): float32 from f32_in_f64_min_n to
 * GSTAT_CU_TRIDIAG_MAX_N runs cuSOLVER's reduction and back-transformation
 * around our tridiagonal step (sytrd_split.c); float64 keeps Xsyevd there.
 * Above GSTAT_CU_TRIDIAG_MAX_N, or when that step finds the matrix
 * degenerate, float32 solves in a float64 working copy (rounded back).
 * bench/README.md, "The CUDA eigh rules' measurements". */
static const int64_t f32_in_f64_min_n = 4096;

/* Float64 with vectors from this order up to GSTAT_CU_TRIDIAG_MAX_N runs
 * the two-stage reduction (two_stage.c) instead of Xsyevd, whose one-stage
 * Dsytrd is a chain of latency-bound column steps (bench/README.md, "The
 * CUDA eigh rules' measurements"; below 4096 not measured). */
static const int64_t two_stage_min_n = 4096;

/* Whether a chunk of nb matrices of order n runs as one Xsyevd per matrix. */
static bool uses_loop(int64_t n, int64_t nb) {
  for (size_t i = 0; i < sizeof loop_rules / sizeof loop_rules[0]; i++)
    if (n >= loop_rules[i].min_n)
      return nb >= loop_rules[i].min_batch && nb <= loop_rules[i].max_batch;
  return false;
}

/* When a chunk runs our lockstep solver (sytrd_eigh.c: the batch reduced
 * in lockstep, the tridiagonal problems by bisection and twisted
 * factorizations) instead of cuSOLVER: orders min_n..max_n, batches from
 * min_batch (float, double; bf16 computes in float), values and vectors.
 * Its time grows with the batch from a lower start than XsyevBatched's,
 * which hardly grows; from n = 257 XsyevBatched is several times slower
 * than at 256 (bench/README.md, "The CUDA eigh rules' measurements"). A
 * batch whose eigenvalue gaps are too small for twisted factorizations
 * (lockstep_gap) gets the cluster step or goes back to cuSOLVER. */
static const struct {
  int64_t min_n, max_n, min_batch_f32, min_batch_f64;
} lockstep_rules[] = {
    {160, 256, INT64_MAX, 4}, /* float loses at 256 */
    {257, 383, 2, 2},
    {384, 2047, 4, 4},
    {2048, GSTAT_CU_SYTRD_MAX_N, 4, 8},
};

/* Relative eigenvalue gap (of ||T||) below which the twisted vectors are
 * not trusted: their orthogonality is about 1e-16 ||T|| / gap in double.
 * Float32 output needs far less (n * 1e-7 times LAPACK's 60), and a
 * float32 matrix with repeated eigenvalues reduces to a T whose copies
 * stay near its own rounding apart or split off, so it keeps the lockstep
 * path (bench/README.md, "The CUDA eigh rules' measurements"). */
static const double lockstep_gap = 1e-8, lockstep_gap_f32 = 5e-12;

/* The largest cluster work m c^2 (block order m of the split tridiagonal,
 * c slots) the cluster step takes on; a matrix with a larger cluster goes
 * back to cuSOLVER. A thread block per cluster works through its columns
 * one at a time, so large clusters leave the GPU idle (bench/README.md,
 * "The cluster step's bound"). */
static const double cluster_max_work = 1048576.0; /* 2^20 */

static cudaDataType cuda_type(int cdt) {
  return cdt == GSTAT_F64 ? CUDA_R_64F : CUDA_R_32F;
}

typedef struct {
  gstat_cu_state *s;
  gstat_ctx *ctx;
  int64_t n;
  int cdt;
  bool want;
  cublasFillMode_t fill;
  cusolverEigMode_t jobz;
  bool jacobi;         /* decided for the whole batch: a halved chunk keeps the path
                        * that needs no workspace */
  bool no_own_tridiag; /* our tridiagonal step found the chunk degenerate */
} eigh_run;

/* The compute type of eigh of order n: the input's (gstat_cu_compute_dtype)
 * except float32 from f32_in_f64_min_n, which computes in float64 unless
 * its vectors come from sytrd_split.c (split_vectors). */
static int compute_dtype(gstat_dtype in, int64_t n, bool split_vectors) {
  return in == GSTAT_F32 && n >= f32_in_f64_min_n && !split_vectors ? GSTAT_F64
                                                                    : gstat_cu_compute_dtype(in);
}

/* Whether a chunk of float32 matrices runs sytrd_split.c, one by one. */
static bool uses_split(const eigh_run *r) {
  return r->cdt == GSTAT_F32 && !r->jacobi && !r->no_own_tridiag && r->n >= f32_in_f64_min_n &&
         gstat_cu_sytrd_split_fits(r->n);
}

/* Whether a chunk of float64 matrices runs two_stage.c, one by one. */
static bool uses_two_stage(const eigh_run *r) {
  return r->cdt == GSTAT_F64 && r->want && !r->jacobi && !r->no_own_tridiag &&
         r->n >= two_stage_min_n && gstat_cu_two_stage_fits(r->n) &&
         r->s->cooperative; /* its bulge chasing is one cooperative launch */
}

/* Whether a chunk of nb matrices runs our lockstep solver. */
static bool uses_lockstep(const eigh_run *r, int64_t nb) {
  if (r->jacobi || r->no_own_tridiag || !gstat_cu_sytrd_eigh_fits(r->n) || nb > 65535) return false;
  for (size_t i = 0; i < sizeof lockstep_rules / sizeof lockstep_rules[0]; i++)
    if (r->n >= lockstep_rules[i].min_n && r->n <= lockstep_rules[i].max_n)
      return nb >= (r->cdt == GSTAT_F64 ? lockstep_rules[i].min_batch_f64
                                        : lockstep_rules[i].min_batch_f32);
  return false;
}

static cusolverStatus_t call_syev_batched(const eigh_run *r, cusolverDnHandle_t h, void *dA,
                                          void *dW, int *dInfo, int64_t nb, void *dwork,
                                          size_t dev_bytes, void *hwork, size_t host_bytes) {
  cudaDataType t = cuda_type(r->cdt);
  return cusolverDnXsyevBatched(h, r->s->params, r->jobz, r->fill, r->n, t, dA, r->n, t, dW, t,
                                dwork, dev_bytes, hwork, host_bytes, dInfo, nb);
}

/* Parallel branches of the batched solver's graph: the batch cut in parts,
 * each captured on a stream of its own, so that one part's small kernels run
 * while another's wait; small batches lose (bench/README.md, "The CUDA
 * eigh rules' measurements"). */
static int graph_branches(const eigh_run *r, int64_t nb) {
  if (nb < 64 || nb * r->n < 16384) return 1;
  return r->cdt == GSTAT_F64 && nb >= 256 ? 4 : 2;
}

static bool same_shape(const gstat_cu_graph *c, const eigh_run *r, int64_t nb, int parts) {
  return c->used && c->n == r->n && c->nb == nb && c->parts == parts && c->cdt == r->cdt &&
         c->jobz == (int)r->jobz && c->fill == (int)r->fill;
}

/* Whether entry c was captured on the buffers (and workspace sizes) of key. */
static bool same_buffers(const gstat_cu_graph *c, const gstat_cu_graph *key) {
  return c->a == key->a && c->w == key->w && c->info == key->info && c->work == key->work &&
         c->hwork == key->hwork && c->dev_bytes == key->dev_bytes &&
         c->host_bytes == key->host_bytes;
}

/* Whether the batched solver may run in the caller's buffers a and w (NULL:
 * the context's): yes unless graphs of this shape are cached on other
 * buffers only. A graph is keyed by its buffers, so a caller whose buffers
 * change from call to call would pay a capture every call; such a shape
 * runs in the context's buffers instead, at the cost of a copy. A shape
 * whose capture cuSOLVER refused has no graph: any buffers do. */
static bool may_use_caller_buffers(const eigh_run *r, int64_t nb, const void *a, const void *w) {
  int parts = graph_branches(r, nb);
  bool shape_cached = false;
  for (int g = 0; g < GSTAT_CU_GRAPHS; g++) {
    const gstat_cu_graph *c = &r->s->graphs[g];
    if (!same_shape(c, r, nb, parts)) continue;
    if (!c->exec || ((!a || c->a == a) && (!w || c->w == w))) return true;
    shape_cached = true;
  }
  return !shape_cached;
}

/* The key's batch captured as its parts, in parallel branches of one graph
 * (capture[0] forks to the others and joins them); NULL when cuSOLVER
 * refuses capture (n = 1024 does). Nothing runs now. */
static cudaGraphExec_t capture(const eigh_run *r, const gstat_cu_graph *key) {
  gstat_cu_state *s = r->s;
  size_t es = gstat_cu_dtype_bytes(r->cdt);
  int64_t per = (key->nb + key->parts - 1) / key->parts;
  cudaStream_t origin = s->capture[0];
  if (cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  bool ok = cudaEventRecord(s->capture_ev[0], origin) == cudaSuccess;
  int forked = 1;
  for (; ok && forked < key->parts; forked++)
    ok = cudaStreamWaitEvent(s->capture[forked], s->capture_ev[0], 0) == cudaSuccess;
  for (int k = 0; ok && k < key->parts; k++) {
    int64_t b0 = k * per, nb = key->nb - b0 < per ? key->nb - b0 : per;
    ok =
        call_syev_batched(r, s->capture_solver[k], (char *)key->a + (size_t)(b0 * r->n * r->n) * es,
                          (char *)key->w + (size_t)(b0 * r->n) * es, (int *)key->info + b0, nb,
                          (char *)key->work + key->dev_bytes * (size_t)k, key->dev_bytes,
                          (char *)key->hwork + key->host_bytes * (size_t)k,
                          key->host_bytes) == CUSOLVER_STATUS_SUCCESS;
  }
  /* every forked branch joins, even after a failure: an unjoined branch
   * would leave its stream capturing */
  for (int k = 1; k < forked; k++)
    if (cudaEventRecord(s->capture_ev[k], s->capture[k]) != cudaSuccess ||
        cudaStreamWaitEvent(origin, s->capture_ev[k], 0) != cudaSuccess)
      ok = false;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (cudaStreamEndCapture(origin, &graph) != cudaSuccess || !graph) ok = false;
  if (ok && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = NULL;
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError(); /* a refused capture leaves no error behind */
  return ok ? exec : NULL;
}

/* The batched solver replayed from a CUDA graph: at mid n it is bound by
 * launching its many small kernels one after another (bench/README.md,
 * "The CUDA eigh rules' measurements"). A graph is captured once
 * per key (shape, branches and buffers) and replayed after. When cuSOLVER
 * refuses capture the entry (exec NULL) stands for the shape, whatever the
 * buffers, and its calls run directly. */
static gstat_cu_graph *graph_for(const eigh_run *r, const gstat_cu_graph *key) {
  gstat_cu_state *s = r->s;
  gstat_cu_graph *old = &s->graphs[0];
  for (int g = 0; g < GSTAT_CU_GRAPHS; g++) {
    gstat_cu_graph *c = &s->graphs[g];
    if (same_shape(c, r, key->nb, key->parts) && (!c->exec || same_buffers(c, key))) {
      c->stamp = ++s->graph_clock;
      return c;
    }
    if (!c->used || (old->used && c->stamp < old->stamp)) old = c;
  }
  if (old->exec) cudaGraphExecDestroy(old->exec);
  *old = *key;
  old->used = true;
  old->stamp = ++s->graph_clock;
  old->exec = capture(r, old);
  if (old->exec)
    s->graph_captures++;
  else
    s->graph_refusals++;
  return old;
}

/* The cuSOLVER path's workspace for one chunk, planned and grown once: its
 * slices (one per graph branch or side stream) and, on the batched path,
 * the size of one direct call on the whole chunk (when cuSOLVER refuses the
 * capture); one buffer holds the larger. */
typedef struct {
  char *dev, *host;             /* the context's CU_WORK and host_work */
  size_t dev_slice, host_slice; /* bytes per slice, rounded up */
  int slices;
  size_t dev_whole, host_whole; /* batched: one call on the whole chunk */
} solver_ws;

static void round_up(size_t *dev, size_t *host) {
  *dev = (*dev + 255) & ~(size_t)255;
  *host = (*host + 63) & ~(size_t)63;
}

/* XsyevBatched's workspace for nb matrices: into dev, host. */
static gstat_status syev_batched_bytes(const eigh_run *r, void *dA, void *dW, int64_t nb,
                                       size_t *dev, size_t *host) {
  cudaDataType t = cuda_type(r->cdt);
  cusolverStatus_t st = cusolverDnXsyevBatched_bufferSize(
      r->s->solver, r->s->params, r->jobz, r->fill, r->n, t, dA, r->n, t, dW, t, dev, host, nb);
  if (st != CUSOLVER_STATUS_SUCCESS)
    return gstat_cu_solver_fail(r->ctx, "eigh", "XsyevBatched_bufferSize", st);
  round_up(dev, host);
  return GSTAT_OK;
}

/* The workspace of the chunk's cuSOLVER path (loop: Xsyevd per matrix over
 * the side streams; else XsyevBatched in graph_branches parts), grown before
 * anything is written to the caller's arrays: an out-of-memory return must
 * leave them untouched, and a halved retry must find an in-place A
 * unsolved. Growing it for the larger of the two batched sizes also keeps a
 * refused shape's workspace pointer from moving. Some cuSOLVER versions read
 * the workspace before writing it: a fresh buffer is cleared (clearing it
 * on every call would cost a pass over it). */
static gstat_status plan_workspace_in(const eigh_run *r, void *dA, void *dW, int64_t nb, bool loop,
                                      gstat_cu_role role, solver_ws *ws) {
  gstat_status st;
  if (loop) {
    cudaDataType t = cuda_type(r->cdt);
    cusolverStatus_t cs =
        cusolverDnXsyevd_bufferSize(r->s->solver, r->s->params, r->jobz, r->fill, r->n, t, dA, r->n,
                                    t, dW, t, &ws->dev_slice, &ws->host_slice);
    if (cs != CUSOLVER_STATUS_SUCCESS)
      return gstat_cu_solver_fail(r->ctx, "eigh", "Xsyevd_bufferSize", cs);
    round_up(&ws->dev_slice, &ws->host_slice);
    ws->slices = nb < GSTAT_CU_STREAMS ? (int)nb : GSTAT_CU_STREAMS;
    ws->dev_whole = ws->host_whole = 0;
  } else {
    ws->slices = graph_branches(r, nb);
    int64_t per = (nb + ws->slices - 1) / ws->slices;
    if ((st = syev_batched_bytes(r, dA, dW, per, &ws->dev_slice, &ws->host_slice)) != GSTAT_OK)
      return st;
    ws->dev_whole = ws->dev_slice, ws->host_whole = ws->host_slice;
    if (ws->slices > 1 &&
        (st = syev_batched_bytes(r, dA, dW, nb, &ws->dev_whole, &ws->host_whole)) != GSTAT_OK)
      return st;
  }
  size_t dev = ws->dev_slice * (size_t)ws->slices, host = ws->host_slice * (size_t)ws->slices;
  if (ws->dev_whole > dev) dev = ws->dev_whole;
  if (ws->host_whole > host) host = ws->host_whole;
  int64_t before = r->s->device_allocations;
  ws->dev = gstat_cu_buffer(r->s, r->ctx, role, dev);
  ws->host = gstat_cu_host_buffer(r->s, r->ctx, &r->s->host_work, host);
  if (!ws->dev || !ws->host) return GSTAT_ENOMEM;
  cudaError_t err = r->s->device_allocations != before
                        ? cudaMemsetAsync(ws->dev, 0, dev, r->s->stream)
                        : cudaSuccess;
  return err == cudaSuccess ? GSTAT_OK
                            : gstat_cu_fail(r->ctx, "eigh", "clearing the workspace", err);
}

static gstat_status plan_workspace(const eigh_run *r, void *dA, void *dW, int64_t nb, bool loop,
                                   solver_ws *ws) {
  return plan_workspace_in(r, dA, dW, nb, loop, CU_WORK, ws);
}

/* The batched solver on the `nb` matrices in dA: its graph (ws->slices
 * branches) when cuSOLVER allows capture, else one direct call. */
static gstat_status syev_batched(const eigh_run *r, void *dA, void *dW, int *dInfo, int64_t nb,
                                 const solver_ws *ws) {
  gstat_cu_graph key = {.n = r->n,
                        .nb = nb,
                        .parts = ws->slices,
                        .cdt = r->cdt,
                        .jobz = (int)r->jobz,
                        .fill = (int)r->fill,
                        .a = dA,
                        .w = dW,
                        .info = dInfo,
                        .work = ws->dev,
                        .hwork = ws->host,
                        .dev_bytes = ws->dev_slice,
                        .host_bytes = ws->host_slice};
  gstat_cu_graph *g = graph_for(r, &key);
  if (g->exec) {
    cudaError_t err = cudaGraphLaunch(g->exec, r->s->stream);
    if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", "XsyevBatched graph", err);
    r->s->graph_launches++;
    return GSTAT_OK;
  }
  cusolverStatus_t cs = call_syev_batched(r, r->s->solver, dA, dW, dInfo, nb, ws->dev,
                                          ws->dev_whole, ws->host, ws->host_whole);
  return cs == CUSOLVER_STATUS_SUCCESS ? GSTAT_OK
                                       : gstat_cu_solver_fail(r->ctx, "eigh", "XsyevBatched", cs);
}

/* One Xsyevd per matrix, round-robin over the side streams (a workspace
 * slice each), each stream driven by its own host thread: Xsyevd returns
 * only when its matrix is solved, so streams fed from one thread run one
 * after another (bench/README.md, "The CUDA eigh rules' measurements"). */
static gstat_status syevd_loop(const eigh_run *r, void *dA, void *dW, int *dInfo, int64_t nb,
                               const solver_ws *ws) {
  gstat_cu_state *s = r->s;
  cudaDataType t = cuda_type(r->cdt);
  size_t es = gstat_cu_dtype_bytes(r->cdt);
  int streams = ws->slices;
  cudaError_t err = cudaEventRecord(s->ev[GSTAT_CU_STREAMS], s->stream);
  for (int k = 0; k < streams && err == cudaSuccess; k++)
    err = cudaStreamWaitEvent(s->side[k], s->ev[GSTAT_CU_STREAMS], 0);
  if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", "ordering streams", err);
  cusolverStatus_t failed[GSTAT_CU_STREAMS];
  /* the calling thread drives stream 0 (one stream: no other thread) */
#pragma omp parallel for num_threads(streams) schedule(static, 1) if (streams > 1)
  for (int k = 0; k < streams; k++) {
    cusolverStatus_t st = cudaSetDevice(s->device) == cudaSuccess
                              ? CUSOLVER_STATUS_SUCCESS
                              : CUSOLVER_STATUS_EXECUTION_FAILED;
    for (int64_t b = k; b < nb && st == CUSOLVER_STATUS_SUCCESS; b += streams)
      st = cusolverDnXsyevd(s->side_solver[k], s->side_params[k], r->jobz, r->fill, r->n, t,
                            (char *)dA + (size_t)(b * r->n * r->n) * es, r->n, t,
                            (char *)dW + (size_t)(b * r->n) * es, t,
                            ws->dev + ws->dev_slice * (size_t)k, ws->dev_slice,
                            ws->host + ws->host_slice * (size_t)k, ws->host_slice, dInfo + b);
    failed[k] = st;
  }
  for (int k = 0; k < streams && err == cudaSuccess; k++) {
    err = cudaEventRecord(s->ev[k], s->side[k]);
    if (err == cudaSuccess) err = cudaStreamWaitEvent(s->stream, s->ev[k], 0);
  }
  for (int k = 0; k < streams; k++)
    if (failed[k] != CUSOLVER_STATUS_SUCCESS)
      return gstat_cu_solver_fail(r->ctx, "eigh", "Xsyevd", failed[k]);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(r->ctx, "eigh", "joining streams", err);
}

/* The lockstep solver's hand-back (gstat_cu_sytrd_eigh_args.solve_dense):
 * the k tridiagonal matrices it gathered, by the path cuSOLVER would take
 * for k matrices of the order (the threaded Xsyevd loop of loop_rules, else
 * XsyevBatched through the graphs of syev_batched). Its workspace is CU_RHS
 * (the lockstep path's own is CU_WORK, which must not move); st keeps a
 * cuSOLVER failure's status. */
typedef struct {
  const eigh_run *r;
  gstat_status st;
} hand_back_ctx;

static cudaError_t solve_handed_back(void *p, void *T, void *wk, int *info, int64_t k,
                                     const char **what) {
  hand_back_ctx *h = p;
  eigh_run r = *h->r;
  r.fill = CUBLAS_FILL_MODE_LOWER;
  r.jobz = CUSOLVER_EIG_MODE_VECTOR;
  solver_ws ws;
  bool loop = uses_loop(r.n, k);
  h->st = plan_workspace_in(&r, T, wk, k, loop, CU_RHS, &ws);
  if (h->st == GSTAT_ENOMEM && gstat_cu_fault_now() != FAULT_OOM) {
    *what = "hand-back workspace";
    return cudaErrorMemoryAllocation; /* the whole chunk goes back instead */
  }
  if (h->st == GSTAT_OK)
    h->st = loop ? syevd_loop(&r, T, wk, info, k, &ws) : syev_batched(&r, T, wk, info, k, &ws);
  if (h->st == GSTAT_OK) return cudaSuccess;
  *what = "hand-back";
  return cudaErrorUnknown;
}

/* The cluster step's settings and counter for our tridiagonal step.
 * GSTAT_CUDA_CLUSTER_STEP=0 turns it off (every clustered matrix goes back
 * to cuSOLVER, as before the step existed); k in 2..40 bounds a cluster's
 * work at 2^k instead of the rule (to measure the rule); anything else
 * keeps the default. GSTAT_CUDA_CLUSTER_WIDE=1 (an experiment, off until a
 * GPU run decides; bench/README.md): float64 clusters above the bound go
 * to the wide path instead of cuSOLVER. */
gstat_cu_clusters gstat_cu_own_clusters(gstat_cu_state *s) {
  const char *on = getenv("GSTAT_CUDA_CLUSTER_STEP"), *wide = getenv("GSTAT_CUDA_CLUSTER_WIDE");
  char *end = NULL;
  const long given = on ? strtol(on, &end, 10) : 1;
  const int k = on && end != on && *end == '\0' && given >= 0 && given <= 40 ? (int)given : 1;
  gstat_cu_clusters c = {.run = k >= 1,
                         .fail = gstat_cu_fault_now() == FAULT_CLUSTERS,
                         .max_work = k >= 2 ? ldexp(1.0, k) : cluster_max_work,
                         .wide = wide && strcmp(wide, "1") == 0,
                         .clustered = &s->own_tridiag_clustered};
  return c;
}

/* Our lockstep solver on the chunk's nb matrices in dA (lower triangles;
 * overwritten with the vectors) into dW. Matrices with eigenvalue gaps too
 * small for their vectors are handed back to cuSOLVER in one batched call
 * (solve_handed_back); *degenerate when that had no room: dA then holds
 * reflectors and the whole chunk must be solved again. */
static gstat_status lockstep(const eigh_run *r, void *dA, void *dW, int *dInfo, int64_t nb,
                             void *work, bool *degenerate) {
  gstat_cu_state *s = r->s;
  hand_back_ctx h = {r, GSTAT_OK};
  int64_t handed = 0;
  gstat_cu_sytrd_eigh_args a = {.cdt = r->cdt,
                                .n = r->n,
                                .nb = nb,
                                .want = r->want,
                                .a = dA,
                                .w = dW,
                                .info = dInfo,
                                .work = work,
                                .host_flag = s->host_info.ptr,
                                .gap_tol = r->cdt == GSTAT_F32 ? lockstep_gap_f32 : lockstep_gap,
                                .stream = s->stream,
                                .blas = s->blas,
                                .solve_dense = r->want ? solve_handed_back : NULL,
                                .solve_ctx = &h,
                                .handed_back = &handed,
                                .clusters = gstat_cu_own_clusters(s)};
  const char *what = "";
  int deg = 0;
  cudaError_t err = gstat_cu_sytrd_eigh(&a, &deg, &what);
  *degenerate = deg != 0;
  s->own_tridiag_chunks++;
  /* a chunk some of whose matrices cuSOLVER solved */
  s->own_tridiag_degenerate += deg != 0 || handed > 0;
  if (err != cudaSuccess && h.st != GSTAT_OK) return h.st; /* cuSOLVER's failure, reported */
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(r->ctx, "eigh", what, err);
}

/* cuSOLVER's reduction and back-transformation around our tridiagonal step
 * (sytrd_split.c), matrix by matrix; *degenerate at the first matrix whose
 * eigenvalue gaps are too small for its vectors. */
static gstat_status split(const eigh_run *r, void *dA, void *dW, int *dInfo, int64_t nb, void *work,
                          bool *degenerate) {
  gstat_cu_state *s = r->s;
  const int64_t n = r->n;
  *degenerate = false;
  s->own_tridiag_chunks++;
  for (int64_t b = 0; b < nb && !*degenerate; b++) {
    gstat_cu_sytrd_split_args a = {.n = n,
                                   .a = (float *)dA + b * n * n,
                                   .w = (float *)dW + b * n,
                                   .info = dInfo + b,
                                   .work = work,
                                   .host_flag = s->host_info.ptr,
                                   .gap_tol = lockstep_gap,
                                   .clusters = gstat_cu_own_clusters(s),
                                   .stream = s->stream,
                                   .solver = s->solver};
    const char *what = "";
    int deg = 0;
    cudaError_t err = gstat_cu_sytrd_split(&a, &deg, &what);
    if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", what, err);
    *degenerate = deg != 0;
  }
  s->own_tridiag_degenerate += *degenerate;
  return GSTAT_OK;
}

/* Our two-stage reduction (two_stage.c), matrix by matrix; *degenerate at
 * the first matrix whose eigenvalue gaps are too small for its vectors. */
static gstat_status two_stage(const eigh_run *r, void *dA, void *dW, int *dInfo, int64_t nb,
                              void *work, void *host_work, bool *degenerate) {
  gstat_cu_state *s = r->s;
  const int64_t n = r->n;
  *degenerate = false;
  s->own_tridiag_chunks++;
  for (int64_t b = 0; b < nb && !*degenerate; b++) {
    gstat_cu_two_stage_args a = {.n = n,
                                 .a = (double *)dA + b * n * n,
                                 .w = (double *)dW + b * n,
                                 .info = dInfo + b,
                                 .work = work,
                                 .host_work = host_work,
                                 .host_flag = s->host_info.ptr,
                                 .gap_tol = lockstep_gap,
                                 .clusters = gstat_cu_own_clusters(s),
                                 .stream = s->stream,
                                 .solver = s->solver,
                                 .params = s->params,
                                 .blas = s->blas,
                                 .side = s->side[0],
                                 .side_blas = s->side_blas,
                                 .side_sms = -1,
                                 .ev = {s->ev[0], s->ev[1]}};
    const char *what = "";
    int deg = 0;
    cudaError_t err = gstat_cu_two_stage(&a, &deg, &what);
    if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", what, err);
    *degenerate = deg != 0;
  }
  s->own_tridiag_degenerate += *degenerate;
  return GSTAT_OK;
}

/* Rows whose largest magnitudes span more than this make a float32 chunk
 * solve in a float64 copy on cuSOLVER's batched path: its float32 vectors
 * of a 65 x 65 random matrix graded by 1e6 (D A D) were orthogonal only to
 * a ratio of 244 (tests/fuzz/README.md), those of the test families'
 * grading by 1e4 within 60 (bench/README.md). */
static const double graded_range = 1e5;

/* *in_f64 when the float32 chunk in `in` (dense, r->fill) is that graded:
 * one pass over it and one read back (scratch: 16 bytes of device memory a
 * matrix, then the flag). */
static gstat_status graded_f32(const eigh_run *r, const gstat_matrix *A0, const void *in,
                               int64_t nb, double *scratch, bool *in_f64) {
  *in_f64 = false;
  if (r->cdt != GSTAT_F32 || A0->dtype != GSTAT_F32) return GSTAT_OK;
  gstat_cu_state *s = r->s;
  int *host = s->host_info.ptr;
  int *flag = (int *)(scratch + 2 * nb);
  cudaError_t err = gstat_cu_graded_check(r->cdt, in, r->n, nb, r->fill == CUBLAS_FILL_MODE_UPPER,
                                          graded_range, scratch, flag, s->stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(host, flag, sizeof(int), cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", "graded check", err);
  *in_f64 = host[0] != 0;
  return GSTAT_OK;
}

/* A symmetric input read as column-major: a dense row-major A is its own
 * transpose, with the other triangle holding the data. */
static gstat_matrix as_col_major(const gstat_matrix *A, cublasFillMode_t *fill) {
  gstat_matrix t = *A;
  if (A->rows > 1 && A->col_stride == 1 && A->row_stride == A->cols) {
    t.row_stride = 1;
    t.col_stride = A->rows;
    *fill = *fill == CUBLAS_FILL_MODE_LOWER ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  }
  return t;
}

/* The same matrices seen transposed: for a symmetric input, the other
 * triangle holds the data. */
static gstat_matrix transposed(const gstat_matrix *m) {
  gstat_matrix t = *m;
  t.row_stride = m->col_stride;
  t.col_stride = m->row_stride;
  return t;
}

/* bf16 device data all the way on the Jacobi path (A, w and V dense column-major
 * bf16, V not A): the Jacobi kernels read and write bf16 themselves, so no
 * float32 copy exists and the call needs less memory than float32's. */
static gstat_status jacobi_bf16(const eigh_run *r, const char *a, char *w, char *v, int64_t b0,
                                int64_t nb, int64_t *info) {
  gstat_cu_state *s = r->s;
  int *dInfo = gstat_cu_buffer(s, r->ctx, CU_INFO, 2 * sizeof(int) * (size_t)nb);
  if (!dInfo) return GSTAT_ENOMEM;
  int *dFlags = dInfo + nb;
  /* the kernel writes NaN for the unconverged and flags those and NaN/Inf
   * outputs (the CPU redoes both) */
  cudaError_t err = gstat_cu_eigh_jacobi(GSTAT_BF16, a, r->fill == CUBLAS_FILL_MODE_UPPER, r->n, nb,
                                         w, v, dInfo, dFlags, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(r->ctx, "eigh", "Jacobi kernel (bfloat16)", err);
  return gstat_cu_collect_info(s, r->ctx, "eigh", dInfo, true, nb, info + b0, s->stream);
}

/* How one chunk runs: the run as this chunk sees it (fill flipped for a
 * transposed view), A's view, the path, and the buffers the solver reads
 * (in), overwrites with the vectors (dV) and writes values to (dW). */
typedef struct chunk_plan {
  eigh_run r;
  gstat_matrix A;
  bool jacobi, lock, split_path, two, loop, cusolver;
  bool load;                   /* A goes into dA through gstat_cu_load first */
  bool v_in_place, w_in_place; /* dV / dW are the caller's */
  char *src, *dA, *in, *dV, *dW;
  int *dInfo, *dFlags;
  size_t mat; /* bytes of the chunk's matrices in the compute type */
  solver_ws ws;
  void *own_work, *own_host;
} chunk_plan;

/* A chunk solved again from A (untouched so far): by cuSOLVER alone, when
 * our tridiagonal step found it degenerate or the two-stage path had no
 * room, or in a float64 copy when it is graded. */
typedef enum { AGAIN_NONE, AGAIN_CUSOLVER, AGAIN_CUSOLVER_DEGENERATE, AGAIN_F64 } chunk_again;

/* The chunk's path, and which of the caller's dense device arrays the
 * solver works in. */
static void plan_path(chunk_plan *c, gstat_matrix *w, gstat_matrix *V, int64_t b0, int64_t nb) {
  eigh_run *r = &c->r;
  c->src = gstat_cu_dense(&c->A, r->cdt, b0);
  c->dV = r->want ? gstat_cu_dense(V, r->cdt, b0) : NULL;
  c->dW = gstat_cu_dense(w, r->cdt, b0);
  /* a degenerate batch is solved again from A: not when A is V */
  bool reloadable = !(c->src && c->src == c->dV);
  c->jacobi = r->jacobi;
  c->lock = uses_lockstep(r, nb) && reloadable;
  c->split_path = !c->lock && r->want && uses_split(r) && reloadable;
  c->two = !c->lock && !c->split_path && uses_two_stage(r) && reloadable;
  c->loop = !c->lock && !c->split_path && !c->two && uses_loop(r->n, nb);
  c->cusolver = !c->jacobi && !c->lock && !c->split_path && !c->two;
  if (!c->jacobi && !c->loop && r->fill == CUBLAS_FILL_MODE_UPPER && reloadable) {
    /* the batched solver is faster on the lower triangle (bench/README.md,
     * "The CUDA eigh rules' measurements"), the lockstep one reads only that, and the
     * input is a copy anyway: copy the transpose, whose lower triangle
     * holds the data */
    c->A = transposed(&c->A);
    r->fill = CUBLAS_FILL_MODE_LOWER;
    c->src = NULL;
  }
  /* the batched solver's graphs are keyed by their buffers */
  if (c->cusolver && !c->loop && !may_use_caller_buffers(r, nb, c->dV, c->dW)) c->dV = c->dW = NULL;
  c->v_in_place = c->dV != NULL;
  c->w_in_place = c->dW != NULL;
  if (c->jacobi && c->src && c->src == c->dV) c->src = NULL; /* the kernel does not work in place */
}

/* Every buffer first: the chunk writes nothing to the caller's arrays
 * before all it needs is there (an out-of-memory return leaves them
 * untouched, and a halved retry finds an in-place A unsolved). The
 * solver's own copy of A (load) goes into V when usable, else a buffer. */
static gstat_status plan_buffers(chunk_plan *c, gstat_matrix *w, gstat_matrix *V, int64_t b0,
                                 int64_t nb) {
  const eigh_run *r = &c->r;
  gstat_cu_state *s = r->s;
  c->load = !c->src || (!c->jacobi && !c->dV);
  if (c->load &&
      !(c->dA = !c->jacobi && c->dV ? c->dV : gstat_cu_buffer(s, r->ctx, CU_MAT, c->mat)))
    return GSTAT_ENOMEM;
  /* what the solver reads; cuSOLVER overwrites it with the vectors */
  c->in = c->load ? c->dA : c->jacobi ? c->src : c->dV;
  if (!c->dV)
    c->dV = c->jacobi ? (r->want ? gstat_cu_buffer(s, r->ctx, CU_RHS, c->mat) : NULL) : c->in;
  if (!c->dW)
    c->dW = gstat_cu_buffer(s, r->ctx, CU_VEC, (size_t)(r->n * nb) * gstat_cu_dtype_bytes(r->cdt));
  /* info, flags, then the cuSOLVER paths' scaling: amax and sigma (before
   * them the graded check's scratch), then that check's flag */
  c->dInfo = gstat_cu_buffer(s, r->ctx, CU_INFO,
                             (2 * sizeof(int) + 2 * sizeof(double)) * (size_t)nb + sizeof(double));
  c->dFlags = c->dInfo ? c->dInfo + nb : NULL;
  size_t stage = 0; /* host arrays pass through CU_STAGE */
  const gstat_matrix *host_args[3] = {c->load ? &c->A : NULL, c->w_in_place ? NULL : w,
                                      r->want && !c->v_in_place ? V : NULL};
  for (int i = 0; i < 3; i++) {
    size_t span = host_args[i] && host_args[i]->location == GSTAT_HOST
                      ? gstat_cu_span(host_args[i], b0, nb)
                      : 0;
    if (span > stage) stage = span;
  }
  if ((r->want && !c->dV) || !c->dW || !c->dInfo ||
      !gstat_cu_host_buffer(s, r->ctx, &s->host_info, 2 * sizeof(int) * (size_t)nb) ||
      (stage && !gstat_cu_buffer(s, r->ctx, CU_STAGE, stage)))
    return GSTAT_ENOMEM;
  return GSTAT_OK;
}

/* The path's workspace; *again when the two-stage path has no room (it
 * needs about twice Xsyevd's: Xsyevd then). */
static gstat_status plan_solver_workspace(chunk_plan *c, int64_t nb, chunk_again *again) {
  const eigh_run *r = &c->r;
  gstat_cu_state *s = r->s;
  if (c->two) {
    size_t host = 0, bytes = gstat_cu_two_stage_bytes(s->solver, s->params, r->n,
                                                      (const double *)c->in, &host);
    if (!bytes)
      return gstat_cu_solver_fail(r->ctx, "eigh", "workspace query",
                                  CUSOLVER_STATUS_INTERNAL_ERROR);
    if (!(c->own_work = gstat_cu_buffer(s, NULL, CU_WORK, bytes)) ||
        (host && !(c->own_host = gstat_cu_host_buffer(s, NULL, &s->host_work, host)))) {
      if (gstat_cu_fault_now() == FAULT_OOM) return GSTAT_ENOMEM;
      *again = AGAIN_CUSOLVER;
    }
    return GSTAT_OK;
  }
  if (c->lock || c->split_path) {
    size_t bytes = c->lock ? gstat_cu_sytrd_eigh_bytes(r->cdt, r->n, nb, r->want)
                           : gstat_cu_sytrd_split_bytes(s->solver, r->n, (const float *)c->in);
    if (!bytes)
      return gstat_cu_solver_fail(r->ctx, "eigh", "workspace query",
                                  CUSOLVER_STATUS_INTERNAL_ERROR);
    return (c->own_work = gstat_cu_buffer(s, r->ctx, CU_WORK, bytes)) ? GSTAT_OK : GSTAT_ENOMEM;
  }
  return c->jacobi ? GSTAT_OK : plan_workspace(r, c->in, c->dW, nb, c->loop, &c->ws);
}

/* The solver's input in place: A loaded (or copied into V, which cuSOLVER
 * overwrites), the flags cleared. */
static gstat_status place_input(chunk_plan *c, int64_t b0, int64_t nb) {
  const eigh_run *r = &c->r;
  gstat_cu_state *s = r->s;
  cudaError_t err = cudaSuccess;
  if (c->load) {
    gstat_status st = gstat_cu_load(s, r->ctx, "eigh", &c->A, b0, nb, r->cdt, c->dA, NULL);
    if (st != GSTAT_OK) return st;
  } else if (!c->jacobi && c->src != c->dV) {
    err = cudaMemcpyAsync(c->dV, c->src, c->mat, cudaMemcpyDeviceToDevice, s->stream);
  }
  if (err == cudaSuccess && !c->jacobi)
    err = cudaMemsetAsync(c->dFlags, 0, sizeof(int) * (size_t)nb, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(r->ctx, "eigh", "copying the input", err);
}

/* Everything but Jacobi: cuSOLVER's paths scaled as LAPACK does (its
 * batched solver does not: bench/README.md, the near-underflow graded fuzz
 * case) or ours; then one pass for signs, NaN outputs of failed elements
 * and flags of non-finite ones (the dispatcher may recompute them).
 * *again when our tridiagonal step found the chunk degenerate. */
static gstat_status solve_reduced(chunk_plan *c, int64_t nb, chunk_again *again) {
  const eigh_run *r = &c->r;
  gstat_cu_state *s = r->s;
  bool degenerate = false, upper = r->fill == CUBLAS_FILL_MODE_UPPER;
  double *amax = (double *)(c->dInfo + 2 * nb), *sigma = amax + nb;
  cudaError_t err;
  if (c->cusolver && (err = gstat_cu_scale_to_unit(r->cdt, c->in, r->n, nb, upper, amax, sigma,
                                                   s->stream)) != cudaSuccess)
    return gstat_cu_fail(r->ctx, "eigh", "scaling", err);
  gstat_status st =
      c->lock         ? lockstep(r, c->in, c->dW, c->dInfo, nb, c->own_work, &degenerate)
      : c->split_path ? split(r, c->in, c->dW, c->dInfo, nb, c->own_work, &degenerate)
      : c->two  ? two_stage(r, c->in, c->dW, c->dInfo, nb, c->own_work, c->own_host, &degenerate)
      : c->loop ? syevd_loop(r, c->in, c->dW, c->dInfo, nb, &c->ws)
                : syev_batched(r, c->in, c->dW, c->dInfo, nb, &c->ws);
  if (st != GSTAT_OK) return st;
  if (c->cusolver &&
      (err = gstat_cu_unscale_values(r->cdt, c->dW, r->n, nb, sigma, s->stream)) != cudaSuccess)
    return gstat_cu_fail(r->ctx, "eigh", "unscaling", err);
  /* cuSOLVER's batched solver may leave a near-tie one ulp out of order */
  if (c->cusolver && (err = gstat_cu_sort_eigenpairs(r->cdt, r->want ? c->dV : NULL, c->dW, r->n,
                                                     nb, s->stream)) != cudaSuccess)
    return gstat_cu_fail(r->ctx, "eigh", "ordering the values", err);
  if (degenerate) {
    *again = AGAIN_CUSOLVER_DEGENERATE;
    return GSTAT_OK;
  }
  err = gstat_cu_finish_eigh(r->cdt, r->want ? c->dV : NULL, c->dW, r->n, nb, c->dInfo, c->dFlags,
                             s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(r->ctx, "eigh", "output check", err);
}

/* The chunk's solve: Jacobi (the kernel also fixes signs, writes NaN for
 * failed elements and sets every flag: no finishing pass), or a float32
 * chunk too graded for cuSOLVER's batched path (*again), or the rest. */
static gstat_status solve_planned(chunk_plan *c, const gstat_matrix *A0, int64_t nb,
                                  chunk_again *again) {
  const eigh_run *r = &c->r;
  if (c->jacobi) {
    cudaError_t err =
        gstat_cu_eigh_jacobi(r->cdt, c->in, r->fill == CUBLAS_FILL_MODE_UPPER, r->n, nb, c->dW,
                             r->want ? c->dV : NULL, c->dInfo, c->dFlags, r->s->stream);
    return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(r->ctx, "eigh", "Jacobi kernel", err);
  }
  bool in_f64 = false;
  if (c->cusolver && !c->loop) {
    gstat_status st = graded_f32(r, A0, c->in, nb, (double *)(c->dInfo + 2 * nb), &in_f64);
    if (st != GSTAT_OK) return st;
  }
  if (in_f64) {
    *again = AGAIN_F64;
    return GSTAT_OK;
  }
  return solve_reduced(c, nb, again);
}

/* One chunk [b0, b0 + nb): load, solve, check, store, collect info. Dense
 * device arguments of the compute dtype are used in place: no copies but
 * the one the solver needs (it overwrites its input with the vectors), and
 * on the batched path the copy out of the context's buffers when the
 * caller's may not hold the graph (may_use_caller_buffers). */
static gstat_status eigh_chunk(const eigh_run *run, const gstat_matrix *A0, gstat_matrix *w,
                               gstat_matrix *V, int64_t b0, int64_t nb, int64_t *info) {
  chunk_plan c = {.r = *run};
  c.A = as_col_major(A0, &c.r.fill);
  const eigh_run *r = &c.r;
  gstat_cu_state *s = r->s;
  c.mat = (size_t)(r->n * r->n) * gstat_cu_dtype_bytes(r->cdt) * (size_t)nb;
  if (r->jacobi && A0->dtype == GSTAT_BF16) {
    char *a16 = gstat_cu_dense(&c.A, GSTAT_BF16, b0), *w16 = gstat_cu_dense(w, GSTAT_BF16, b0);
    char *v16 = r->want ? gstat_cu_dense(V, GSTAT_BF16, b0) : NULL;
    if (a16 && w16 && (!r->want || (v16 && v16 != a16)))
      return jacobi_bf16(r, a16, w16, v16, b0, nb, info);
  }
  plan_path(&c, w, V, b0, nb);
  chunk_again again = AGAIN_NONE;
  gstat_status st = plan_buffers(&c, w, V, b0, nb);
  if (st == GSTAT_OK) st = plan_solver_workspace(&c, nb, &again);
  if (st == GSTAT_OK && again == AGAIN_NONE) st = place_input(&c, b0, nb);
  if (st == GSTAT_OK && again == AGAIN_NONE) st = solve_planned(&c, A0, nb, &again);
  if (st != GSTAT_OK) return st;
  if (again != AGAIN_NONE) { /* again from A (untouched so far), as the run says */
    eigh_run next = *run;
    if (again == AGAIN_F64)
      next.cdt = GSTAT_F64;
    else
      next.no_own_tridiag = true;
    if (again == AGAIN_CUSOLVER_DEGENERATE) next.cdt = compute_dtype(A0->dtype, r->n, false);
    return eigh_chunk(&next, A0, w, V, b0, nb, info);
  }
  if (!c.w_in_place &&
      (st = gstat_cu_store(s, r->ctx, "eigh", c.dW, r->cdt, w, b0, nb, NULL)) != GSTAT_OK)
    return st;
  if (r->want && !c.v_in_place &&
      (st = gstat_cu_store(s, r->ctx, "eigh", c.dV, r->cdt, V, b0, nb, NULL)) != GSTAT_OK)
    return st;
  return gstat_cu_collect_info(s, r->ctx, "eigh", c.dInfo, true, nb, info + b0, s->stream);
}

/* Host arrays on the Jacobi path, in pieces whose copies overlap the
 * kernel: piece k + 1 comes in on one side stream while the kernel solves
 * piece k on the context's stream and piece k - 1 goes out on another side
 * stream (two sets of device buffers alternate). Only this path gains from
 * pieces: its kernel time grows with the batch, while the batched solvers
 * take about as long for part of a batch as for all of it
 * (bench/probe_syev_batched). */
enum { kPipePieceBytes = 16 << 20 }; /* of A in the compute type, per piece */
_Static_assert(GSTAT_CU_STREAMS >= 4, "the pipeline uses side[0..1] and ev[0..3]");

/* Matrices per piece when eigh of these arguments runs as a pipeline, else 0. */
static int64_t pipeline_piece(const eigh_run *r, const gstat_matrix *A, const gstat_matrix *w,
                              const gstat_matrix *V) {
  if (A->location != GSTAT_HOST || w->location != GSTAT_HOST || (V && V->location != GSTAT_HOST))
    return 0;
  int64_t piece = kPipePieceBytes / (r->n * r->n * (int64_t)gstat_cu_dtype_bytes(r->cdt));
  if (!r->jacobi || A->batch < 3 * piece) return 0; /* at least three pieces */
  /* The pieces together may span at most twice the bytes of the whole
   * batch: with an interleaved layout (batch stride 1) each piece would
   * span nearly all of the array. */
  int64_t pieces = (A->batch + piece - 1) / piece;
  const gstat_matrix *args[3] = {A, w, V};
  for (int i = 0; i < 3; i++)
    if (args[i] && (size_t)pieces * gstat_cu_span(args[i], 0, piece) >
                       2 * gstat_cu_span(args[i], 0, args[i]->batch))
      return 0;
  return piece;
}

static gstat_status jacobi_pipeline(const eigh_run *run, const gstat_matrix *A0, gstat_matrix *w,
                                    gstat_matrix *V, int64_t piece, int64_t *info) {
  eigh_run rr = *run;
  const eigh_run *r = &rr;
  gstat_matrix A = as_col_major(A0, &rr.fill);
  gstat_cu_state *s = r->s;
  size_t es = gstat_cu_dtype_bytes(r->cdt), mat = (size_t)(r->n * r->n * piece) * es,
         vec = (size_t)(r->n * piece) * es, span = 0;
  const gstat_matrix *args[3] = {&A, w, V}; /* a stage holds a piece of any of them */
  for (int i = 0; i < 3; i++)
    if (args[i] && gstat_cu_span(args[i], 0, piece) > span) span = gstat_cu_span(args[i], 0, piece);
  span = (span + 255) & ~(size_t)255;
  /* per slot: a stage in and a stage out, matrices, vectors, values, info + flags */
  char *stage = gstat_cu_buffer(s, r->ctx, CU_STAGE, 4 * span);
  char *dA = gstat_cu_buffer(s, r->ctx, CU_MAT, 2 * mat);
  char *dV = r->want ? gstat_cu_buffer(s, r->ctx, CU_RHS, 2 * mat) : NULL;
  char *dW = gstat_cu_buffer(s, r->ctx, CU_VEC, 2 * vec);
  int *dInfo = gstat_cu_buffer(s, r->ctx, CU_INFO, 4 * sizeof(int) * (size_t)piece);
  if (!stage || !dA || (r->want && !dV) || !dW || !dInfo) return GSTAT_ENOMEM;
  cudaStream_t in = s->side[0], out = s->side[1];
  cudaEvent_t *loaded = &s->ev[0], *solved = &s->ev[2], start = s->ev[GSTAT_CU_STREAMS];
  /* both side streams start after the caller's earlier work on the stream */
  cudaError_t err = cudaEventRecord(start, s->stream);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(in, start, 0);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(out, start, 0);
  gstat_status st = GSTAT_OK;
  int64_t pieces = (A.batch + piece - 1) / piece;
  for (int64_t k = 0; k <= pieces && st == GSTAT_OK && err == cudaSuccess; k++) {
    if (k < pieces) { /* piece k: in, then the kernel once it is there */
      int slot = (int)(k & 1);
      int64_t b0 = k * piece, nb = A.batch - b0 < piece ? A.batch - b0 : piece;
      int *di = dInfo + 2 * piece * slot;
      gstat_cu_lane lane = {in, stage + span * (size_t)slot};
      /* the slot's last user, piece k - 2, is done: its kernel (waited for
       * here, on the device) and its store and info (on the host: stores
       * to host memory return once the bytes are there) */
      if (k >= 2 && (err = cudaStreamWaitEvent(in, solved[slot], 0)) != cudaSuccess) break;
      st = gstat_cu_load(s, r->ctx, "eigh", &A, b0, nb, r->cdt, dA + mat * (size_t)slot, &lane);
      if (st != GSTAT_OK) break;
      err = cudaEventRecord(loaded[slot], in);
      if (err == cudaSuccess) err = cudaStreamWaitEvent(s->stream, loaded[slot], 0);
      if (err == cudaSuccess)
        err = gstat_cu_eigh_jacobi(
            r->cdt, dA + mat * (size_t)slot, r->fill == CUBLAS_FILL_MODE_UPPER, r->n, nb,
            dW + vec * (size_t)slot, dV ? dV + mat * (size_t)slot : NULL, di, di + nb, s->stream);
      if (err == cudaSuccess) err = cudaEventRecord(solved[slot], s->stream);
      if (err == cudaSuccess) s->pipeline_pieces++;
    }
    if (k >= 1 && err == cudaSuccess) { /* piece k - 1: out once solved */
      int slot = (int)((k - 1) & 1);
      int64_t b0 = (k - 1) * piece, nb = A.batch - b0 < piece ? A.batch - b0 : piece;
      int *di = dInfo + 2 * piece * slot;
      gstat_cu_lane lane = {out, stage + span * (size_t)(2 + slot)};
      err = cudaStreamWaitEvent(out, solved[slot], 0);
      if (err != cudaSuccess) break;
      st = gstat_cu_store(s, r->ctx, "eigh", dW + vec * (size_t)slot, r->cdt, w, b0, nb, &lane);
      if (st == GSTAT_OK && V)
        st = gstat_cu_store(s, r->ctx, "eigh", dV + mat * (size_t)slot, r->cdt, V, b0, nb, &lane);
      if (st == GSTAT_OK)
        st = gstat_cu_collect_info(s, r->ctx, "eigh", di, true, nb, info + b0, out);
    }
  }
  if (st != GSTAT_OK || err != cudaSuccess) { /* nothing may run on after a failure */
    cudaStreamSynchronize(in);
    cudaStreamSynchronize(s->stream);
    cudaStreamSynchronize(out);
  }
  return err == cudaSuccess ? st : gstat_cu_fail(r->ctx, "eigh", "pipelined Jacobi", err);
}

gstat_status gstat_cu_eigh(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                           gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  eigh_run r = {s,
                ctx,
                A->rows,
                gstat_cu_compute_dtype(A->dtype),
                V != NULL,
                uplo == GSTAT_UPPER ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER,
                V ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR,
                false,
                false};
  r.cdt = compute_dtype(A->dtype, r.n, V && gstat_cu_sytrd_split_fits(r.n));
  r.jacobi = uses_jacobi(r.n, r.cdt, A->batch);
  gstat_status st0 = gstat_cu_check_finite(s, ctx, "eigh", "A", A, uplo == GSTAT_UPPER ? 2 : 1);
  if (st0 != GSTAT_OK) return st0;
  int64_t piece = pipeline_piece(&r, A, w, V);
  if (piece > 0) {
    st0 = jacobi_pipeline(&r, A, w, V, piece, info);
    /* out of memory: the plain chunks below, which can halve */
    if (st0 != GSTAT_ENOMEM || gstat_cu_fault_now() == FAULT_OOM) return st0;
  }
  size_t es = gstat_cu_dtype_bytes(r.cdt), n2 = (size_t)(r.n * r.n);
  /* device bytes per element: matrices (two for Jacobi), values, staging,
   * and about as much again for the solver's workspace */
  size_t per = n2 * es * 3 + (size_t)r.n * es + 8 + n2 * gstat_cu_dtype_bytes(A->dtype);
  /* our tridiagonal step's vectors pass through two double copies */
  if (gstat_cu_sytrd_split_fits(r.n) && V) per += n2 * 16;
  int64_t chunk = gstat_cu_chunk(s, A->batch, per);
  bool batched = !r.jacobi && !uses_loop(r.n, A->batch);
  if (batched && chunk > (int64_t)(INT32_MAX / n2)) chunk = (int64_t)(INT32_MAX / n2);
  /* the lockstep solver's grids; a Jacobi batch never runs it (the Jacobi
   * kernel takes any batch in one launch) */
  if (!r.jacobi && gstat_cu_sytrd_eigh_fits(r.n) && chunk > 65535) chunk = 65535;
  /* bf16 is chosen to save memory, but its float32 working copy plus the
   * batched solver's workspace (about 5x the matrices) for the whole batch
   * is more than the float32 path needs (it solves in the caller's V): half
   * the batch at a time keeps bf16's peak lower (bench/README.md) */
  if (batched && A->dtype == GSTAT_BF16 && A->batch > 1 && chunk > (A->batch + 1) / 2)
    chunk = (A->batch + 1) / 2;
  for (int64_t b0 = 0; b0 < A->batch;) {
    int64_t nb = A->batch - b0 < chunk ? A->batch - b0 : chunk;
    gstat_status st = eigh_chunk(&r, A, w, V, b0, nb, info);
    if (st == GSTAT_ENOMEM && gstat_cu_fault_now() != FAULT_OOM) {
      if (chunk > 1) {
        chunk = (chunk + 1) / 2; /* smaller chunks, then the CPU (dispatcher) */
        continue;
      }
      if (r.cdt != gstat_cu_compute_dtype(A->dtype)) {
        r.cdt = gstat_cu_compute_dtype(A->dtype); /* no room for the double copy */
        continue;
      }
    }
    if (st != GSTAT_OK) return st;
    b0 += nb;
  }
  return GSTAT_OK;
}

/* eigh of dense device data with no host synchronization and no allocation
 * (gstat_eigh_async: CUDA graph capture, training loops): the Jacobi kernel
 * alone, from the caller's A into the caller's w and V, info and flags into
 * the caller's 2 x batch ints. Whatever needs a copy, a workspace or a host
 * read is refused, so the caller can fall back to gstat_eigh. */
gstat_status gstat_cu_eigh_async(void *state, gstat_ctx *ctx, const gstat_matrix *A0,
                                 gstat_uplo uplo, gstat_matrix *w, gstat_matrix *V, int32_t *info) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (A0->rows == 0) { /* nothing failed */
    cudaError_t err = cudaMemsetAsync(info, 0, 2 * sizeof *info * (size_t)A0->batch, s->stream);
    return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "eigh_async", "info", err);
  }
  cublasFillMode_t fill = uplo == GSTAT_UPPER ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
  gstat_matrix A = as_col_major(A0, &fill);
  int dt = (int)A0->dtype;
  char *a = gstat_cu_dense(&A, dt, 0), *dw = gstat_cu_dense(w, dt, 0);
  char *dv = V ? gstat_cu_dense(V, dt, 0) : NULL;
  if (A.rows > GSTAT_CU_JACOBI_MAX_N)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "eigh_async: order %lld > %d: only the Jacobi kernels run without "
                               "host synchronization",
                               (long long)A.rows, GSTAT_CU_JACOBI_MAX_N);
  if (!a || !dw || (V && (!dv || dv == a)) || (int)w->dtype != dt || (V && (int)V->dtype != dt))
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "eigh_async: A, w and V must be dense (A contiguous, V column-major "
                               "and not A) and of one dtype");
  cudaError_t err = gstat_cu_eigh_jacobi(dt, a, fill == CUBLAS_FILL_MODE_UPPER, A.rows, A.batch, dw,
                                         dv, info, info + A.batch, s->stream);
  if (err == cudaSuccess)
    err = gstat_cu_flag_nonfinite(dt, a, fill == CUBLAS_FILL_MODE_UPPER, A.rows, A.batch, dw, dv,
                                  info + A.batch, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "eigh_async", "Jacobi kernel", err);
}

/* gstat_eigh_backward's backend op: one kernel over the batch on the
 * context's stream, reading and writing the caller's strided arrays. */
gstat_status gstat_cu_eigh_backward_op(void *state, gstat_ctx *ctx, const gstat_matrix *w,
                                       const gstat_matrix *V, const gstat_matrix *gw,
                                       const gstat_matrix *gV, double broadening,
                                       gstat_matrix *gA) {
  gstat_cu_state *s = state;
  if (V->rows > GSTAT_CU_EIGH_BWD_MAX_N || V->dtype == GSTAT_BF16)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "eigh_backward: float32 or float64 of order <= %d only",
                               GSTAT_CU_EIGH_BWD_MAX_N);
  gstat_cu_bwd_args a = {.dtype = (int)V->dtype,
                         .n = V->rows,
                         .batch = V->batch,
                         .w = w->data,
                         .gw = gw ? gw->data : NULL,
                         .w_bs = w->batch_stride,
                         .w_s = w->row_stride,
                         .gw_bs = gw ? gw->batch_stride : 0,
                         .gw_s = gw ? gw->row_stride : 0,
                         .v = V->data,
                         .gv = gV->data,
                         .v_bs = V->batch_stride,
                         .v_rs = V->row_stride,
                         .v_cs = V->col_stride,
                         .gv_bs = gV->batch_stride,
                         .gv_rs = gV->row_stride,
                         .gv_cs = gV->col_stride,
                         .out = gA->data,
                         .out_bs = gA->batch_stride,
                         .out_rs = gA->row_stride,
                         .out_cs = gA->col_stride,
                         .broadening = broadening};
  cudaSetDevice(s->device);
  cudaError_t err = gstat_cu_eigh_backward(&a, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "eigh_backward", "kernel", err);
}
