/*
 * The CUDA backend module: its entry point, per-context state, buffers,
 * error reporting and the host<->device movement every operation shares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/moments_cuda.h"
#include "backend/cuda/rows_cuda.h"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/util_kernels.h"

const gstat_i_host_services *gstat_cu_host;

gstat_cu_fault gstat_cu_fault_now(void) {
  const char *f = getenv("GSTAT_CUDA_FAULT");
  if (!f) return FAULT_NONE;
  if (!strcmp(f, "oom")) return FAULT_OOM;
  if (!strcmp(f, "solver")) return FAULT_SOLVER;
  if (!strcmp(f, "nonfinite")) return FAULT_NONFINITE;
  if (!strcmp(f, "clusters")) return FAULT_CLUSTERS;
  return FAULT_NONE;
}

gstat_status gstat_cu_fail(gstat_ctx *ctx, const char *fn, const char *what, cudaError_t err) {
  gstat_status st = err == cudaErrorMemoryAllocation ? GSTAT_ENOMEM : GSTAT_EBACKEND;
  return gstat_cu_host->fail(ctx, st, "%s: %s: %s", fn, what, cudaGetErrorString(err));
}

gstat_status gstat_cu_solver_fail(gstat_ctx *ctx, const char *fn, const char *what,
                                  cusolverStatus_t st) {
  gstat_status s = st == CUSOLVER_STATUS_ALLOC_FAILED ? GSTAT_ENOMEM : GSTAT_EBACKEND;
  return gstat_cu_host->fail(ctx, s, "%s: %s failed (cusolverStatus %d)", fn, what, (int)st);
}

void *gstat_cu_buffer(gstat_cu_state *s, gstat_ctx *ctx, gstat_cu_role role, size_t size) {
  gstat_cu_buf *b = &s->dev[role];
  if (gstat_cu_fault_now() == FAULT_OOM && size > 0) {
    if (ctx)
      gstat_cu_host->fail(ctx, GSTAT_ENOMEM,
                          "cuda: simulated device out of memory (GSTAT_CUDA_FAULT=oom)");
    return NULL;
  }
  if (b->ptr && b->size >= size) return b->ptr;
  if (b->ptr) cudaFree(b->ptr);
  b->ptr = NULL;
  b->size = 0;
  cudaError_t err = cudaMalloc(&b->ptr, size ? size : 1);
  s->device_allocations++;
  if (err != cudaSuccess) {
    b->ptr = NULL;
    cudaGetLastError(); /* clear the sticky-free error */
    if (ctx) gstat_cu_fail(ctx, "cuda", "cannot allocate device memory", err);
    return NULL;
  }
  b->size = size;
  return b->ptr;
}

void *gstat_cu_host_buffer(gstat_cu_state *s, gstat_ctx *ctx, gstat_cu_buf *b, size_t size) {
  (void)s;
  if (b->ptr && b->size >= size) return b->ptr;
  if (b->ptr) cudaFreeHost(b->ptr);
  b->ptr = NULL;
  b->size = 0;
  cudaError_t err = cudaMallocHost(&b->ptr, size ? size : 1);
  if (err != cudaSuccess) {
    b->ptr = NULL;
    cudaGetLastError();
    if (ctx) gstat_cu_fail(ctx, "cuda", "cannot allocate pinned host memory", err);
    return NULL;
  }
  b->size = size;
  return b->ptr;
}

void *gstat_cu_upload_buffer(gstat_cu_state *s, gstat_ctx *ctx, size_t size) {
  gstat_cu_buf *b = &s->host_upload;
  if (b->ptr && b->size >= size) return b->ptr;
  free(b->ptr);
  b->size = 0;
  b->ptr = malloc(size ? size : 1);
  if (!b->ptr) {
    if (ctx) gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "cuda: cannot allocate %zu bytes", size);
    return NULL;
  }
  b->size = size;
  return b->ptr;
}

gstat_status gstat_cu_upload(gstat_cu_state *s, gstat_ctx *ctx, void *dst, size_t bytes,
                             const char *what) {
  cudaError_t err =
      cudaMemcpyAsync(dst, s->host_upload.ptr, bytes, cudaMemcpyHostToDevice, s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "cuda", what, err);
}

int64_t gstat_cu_chunk(const gstat_cu_state *s, int64_t batch, size_t per_elem) {
  if (per_elem == 0) return batch;
  int64_t fit = (int64_t)(s->free_bytes_cap / per_elem);
  if (fit < 1) fit = 1;
  return fit < batch ? fit : batch;
}

/* Sub-descriptor of elements [b0, b0 + nb) and its byte span. */
static gstat_matrix sub(const gstat_matrix *m, int64_t b0, int64_t nb, size_t *span) {
  gstat_matrix r = *m;
  size_t es = gstat_cu_dtype_bytes(m->dtype);
  r.data = (char *)m->data + (size_t)(b0 * m->batch_stride) * es;
  r.batch = nb;
  int64_t last = (nb - 1) * (nb > 1 ? m->batch_stride : 0) + (m->rows - 1) * m->row_stride +
                 (m->cols - 1) * m->col_stride;
  *span = (size_t)(last + 1) * es;
  return r;
}

char *gstat_cu_dense(const gstat_matrix *m, int cdt, int64_t b0) {
  if (!m || m->location != GSTAT_CUDA || (int)m->dtype != cdt) return NULL;
  bool col = (m->rows <= 1 || m->row_stride == 1) && (m->cols <= 1 || m->col_stride == m->rows);
  bool packed = m->batch <= 1 || m->batch_stride == m->rows * m->cols;
  if (!col || !packed) return NULL;
  return (char *)m->data + (size_t)(b0 * m->rows * m->cols) * gstat_cu_dtype_bytes(cdt);
}

size_t gstat_cu_span(const gstat_matrix *m, int64_t b0, int64_t nb) {
  size_t span;
  sub(m, b0, nb, &span);
  return span;
}

gstat_status gstat_cu_load(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const gstat_matrix *m,
                           int64_t b0, int64_t nb, int cdt, void *dst, const gstat_cu_lane *lane) {
  size_t span;
  gstat_matrix r = sub(m, b0, nb, &span);
  cudaStream_t stream = lane ? lane->stream : s->stream;
  const void *src = r.data;
  cudaError_t err;
  if (m->location == GSTAT_HOST) {
    void *stage = lane && lane->stage ? lane->stage : gstat_cu_buffer(s, ctx, CU_STAGE, span);
    if (!stage) return GSTAT_ENOMEM;
    err = gstat_cu_copy_in(s, stream, stage, r.data, span);
    if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "copy to the device", err);
    src = stage;
  }
  err = gstat_cu_gather(src, (int)m->dtype, nb, m->rows, m->cols, m->batch_stride, m->row_stride,
                        m->col_stride, dst, cdt, stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, fn, "gather", err);
}

gstat_status gstat_cu_store(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const void *src,
                            int cdt, const gstat_matrix *m, int64_t b0, int64_t nb,
                            const gstat_cu_lane *lane) {
  size_t span;
  gstat_matrix r = sub(m, b0, nb, &span);
  cudaStream_t stream = lane ? lane->stream : s->stream;
  cudaError_t err;
  if (m->location == GSTAT_CUDA) {
    err = gstat_cu_scatter(src, cdt, nb, m->rows, m->cols, r.data, (int)m->dtype, m->batch_stride,
                           m->row_stride, m->col_stride, stream);
    return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, fn, "scatter", err);
  }
  void *stage = lane && lane->stage ? lane->stage : gstat_cu_buffer(s, ctx, CU_STAGE, span);
  if (!stage) return GSTAT_ENOMEM;
  /* Layouts with gaps: bring the caller's bytes first so the copy back
   * returns the gaps unchanged. */
  bool gaps = span != (size_t)(nb * m->rows * m->cols) * gstat_cu_dtype_bytes(m->dtype);
  if (gaps && (err = gstat_cu_copy_in(s, stream, stage, r.data, span)) != cudaSuccess)
    return gstat_cu_fail(ctx, fn, "copy to the device", err);
  err = gstat_cu_scatter(src, cdt, nb, m->rows, m->cols, stage, (int)m->dtype, m->batch_stride,
                         m->row_stride, m->col_stride, stream);
  if (err == cudaSuccess) err = gstat_cu_copy_out(s, stream, r.data, stage, span);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, fn, "copy to the host", err);
}

/* CU_FLAG: the scan's first index (8 bytes), the info check's verdict (4,
 * then 4 unused), a second deferred scan's first index (8), so that the
 * deferred scans' answers survive the info check and all come back in one
 * copy. Every user asks for the whole, so none reallocates it. */
enum { FLAG_BYTES = 24, FLAG_ANY = 8, FLAG_SECOND = 16 };

gstat_status gstat_cu_first_nonfinite(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                      const gstat_matrix *m, int tri, int64_t *first) {
  *first = -1;
  unsigned long long *d_first = gstat_cu_buffer(s, ctx, CU_FLAG, FLAG_BYTES);
  unsigned long long *h_first = gstat_cu_host_buffer(s, ctx, &s->host_info, sizeof *h_first);
  if (!d_first || !h_first) return GSTAT_ENOMEM;
  cudaError_t err = cudaMemsetAsync(d_first, 0xff, sizeof *d_first, s->stream);
  if (err == cudaSuccess)
    err =
        gstat_cu_find_nonfinite((int)m->dtype, m->data, tri, m->batch, m->rows, m->cols,
                                m->batch_stride, m->row_stride, m->col_stride, d_first, s->stream);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(h_first, d_first, sizeof *d_first, cudaMemcpyDeviceToHost, s->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "finiteness check", err);
  if (*h_first != ~0ull) *first = (int64_t)*h_first;
  return GSTAT_OK;
}

/* GSTAT_ENOTFINITE naming entry k (the scan's numbering) of m. */
static gstat_status nonfinite_fail(gstat_ctx *ctx, const char *fn, const char *name,
                                   const gstat_matrix *m, unsigned long long k) {
  unsigned long long per = (unsigned long long)(m->rows * m->cols);
  return gstat_cu_host->fail(ctx, GSTAT_ENOTFINITE,
                             "%s: batch element %llu of %s has a non-finite value at (%llu, %llu)",
                             fn, k / per, name, (k % per) / (unsigned long long)m->cols,
                             (k % per) % (unsigned long long)m->cols);
}

gstat_status gstat_cu_check_finite(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                   const char *name, const gstat_matrix *m, int tri) {
  if (m->location != GSTAT_CUDA || !gstat_cu_host->check_finite(ctx)) return GSTAT_OK;
  int64_t first;
  gstat_status st = gstat_cu_first_nonfinite(s, ctx, fn, m, tri, &first);
  if (st != GSTAT_OK || first < 0) return st;
  return nonfinite_fail(ctx, fn, name, m, (unsigned long long)first);
}

gstat_status gstat_cu_scan_deferred(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                    const gstat_matrix *m, int tri, int slot,
                                    const unsigned long long **guard) {
  *guard = NULL;
  if (m->location != GSTAT_CUDA || !gstat_cu_host->check_finite(ctx)) return GSTAT_OK;
  char *flag = gstat_cu_buffer(s, ctx, CU_FLAG, FLAG_BYTES);
  if (!flag) return GSTAT_ENOMEM;
  unsigned long long *d_first = (unsigned long long *)(flag + (slot ? FLAG_SECOND : 0));
  cudaError_t err = cudaMemsetAsync(d_first, 0xff, sizeof *d_first, s->stream);
  if (err == cudaSuccess)
    err =
        gstat_cu_find_nonfinite((int)m->dtype, m->data, tri, m->batch, m->rows, m->cols,
                                m->batch_stride, m->row_stride, m->col_stride, d_first, s->stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "finiteness check", err);
  *guard = d_first;
  return GSTAT_OK;
}

unsigned *gstat_cu_info_verdict(gstat_cu_state *s, gstat_ctx *ctx) {
  char *flag = gstat_cu_buffer(s, ctx, CU_FLAG, FLAG_BYTES);
  return flag ? (unsigned *)(flag + FLAG_ANY) : NULL;
}

/* collect_info's all-zero path: whether info[0 .. nb) were all zero (the
 * device's reduction, unless the work set the verdict itself, then one
 * small copy back), with a deferred scan's verdict (scan non-NULL) in the
 * same copy. The caller's info is zeroed while the device works, unless a
 * scan's verdict may yet say it must stay untouched. */
static gstat_status summary(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const int *d_info,
                            size_t count, int64_t nb, int64_t *info, cudaStream_t stream,
                            const gstat_cu_scan *scan, bool verdict_set, bool *any) {
  char *flag = gstat_cu_buffer(s, ctx, CU_FLAG, FLAG_BYTES);
  char *h = gstat_cu_host_buffer(s, ctx, &s->host_info, FLAG_BYTES);
  if (!flag || !h) return GSTAT_ENOMEM;
  unsigned *d_any = (unsigned *)(flag + FLAG_ANY);
  cudaError_t err = cudaSuccess;
  if (!verdict_set) {
    err = cudaMemsetAsync(d_any, 0, sizeof *d_any, stream);
    if (err == cudaSuccess) err = gstat_cu_any_nonzero(d_info, (int64_t)count, d_any, stream);
  }
  if (err == cudaSuccess)
    err = scan
              ? cudaMemcpyAsync(h, flag, FLAG_BYTES, cudaMemcpyDeviceToHost, stream)
              : cudaMemcpyAsync(h + FLAG_ANY, d_any, sizeof *d_any, cudaMemcpyDeviceToHost, stream);
  /* Zero the caller's info while the device still works, not after the
   * wait (a large batch's info is a measurable part of a short call:
   * bench/README.md); the slow path overwrites every entry. */
  if (!scan) memset(info, 0, sizeof *info * (size_t)nb);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "reading info", err);
  if (scan) {
    for (int k = 0; k < 2 && scan->m[k]; k++) {
      unsigned long long first;
      memcpy(&first, h + (k ? FLAG_SECOND : 0), sizeof first);
      if (first != ~0ull) return nonfinite_fail(ctx, fn, scan->name[k], scan->m[k], first);
    }
    memset(info, 0, sizeof *info * (size_t)nb);
  }
  unsigned a;
  memcpy(&a, h + FLAG_ANY, sizeof a);
  *any = a != 0;
  return GSTAT_OK;
}

gstat_status gstat_cu_collect_info_scanned(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                           const int *d_info, bool with_flags, int64_t nb,
                                           int64_t *info, cudaStream_t stream,
                                           const gstat_cu_scan *scan, bool verdict_set) {
  int *h = gstat_cu_host_buffer(
      s, ctx, &s->host_info,
      2 * sizeof(int) * (size_t)nb < FLAG_BYTES ? FLAG_BYTES : 2 * sizeof(int) * (size_t)nb);
  if (!h) return GSTAT_ENOMEM;
  size_t count = (size_t)nb * (with_flags ? 2 : 1);
  gstat_cu_fault fault = gstat_cu_fault_now();
  cudaError_t err = cudaSuccess;
  if (fault == FAULT_NONE || scan) {
    /* Usually every element succeeded: a device reduction says so in one
     * 4-byte copy, and the host neither copies nor walks the arrays, which
     * shortens short calls (bench/README.md, "Measurements moved from code
     * comments"). */
    bool any = true;
    gstat_status st = summary(s, ctx, fn, d_info, count, nb, info, stream, scan, verdict_set, &any);
    if (st != GSTAT_OK) {
      s->clean_info = NULL;
      s->clean_count = 0;
      return st;
    }
    if (!any && fault == FAULT_NONE) {
      if (s->clean_info && info == s->clean_info + s->clean_count) {
        s->clean_count += nb;
      } else {
        s->clean_info = info;
        s->clean_count = nb;
      }
      return GSTAT_OK;
    }
  }
  s->clean_info = NULL; /* this chunk has failures (or faults): no clean range */
  s->clean_count = 0;
  /* one copy for both arrays: each copy back costs a round trip */
  err = cudaMemcpyAsync(h, d_info, sizeof(int) * count, cudaMemcpyDeviceToHost, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) return gstat_cu_fail(ctx, fn, "reading info", err);
  for (int64_t b = 0; b < nb; b++) {
    bool nonfinite = (with_flags && h[nb + b] != 0) || (fault == FAULT_NONFINITE && b % 3 == 2);
    bool solver_error = h[b] < 0 || (fault == FAULT_SOLVER && b % 3 == 1);
    /* the CPU recomputes these; a plain info > 0 is the GPU's verdict, also
     * rechecked on the CPU by the dispatcher */
    info[b] = nonfinite || solver_error ? GSTAT_I_INFO_RETRY : h[b];
  }
  return GSTAT_OK;
}

gstat_status gstat_cu_collect_info(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                   const int *d_info, bool with_flags, int64_t nb, int64_t *info,
                                   cudaStream_t stream) {
  return gstat_cu_collect_info_scanned(s, ctx, fn, d_info, with_flags, nb, info, stream, NULL,
                                       false);
}

/* Whether collect_info found info[0 .. batch) all zero in one run of chunks:
 * the dispatcher then skips its scans. A range is only ever extended by the
 * chunk right after it and dropped by any chunk with failures, and it must
 * start at this call's info, so a call that stopped early cannot leave a
 * range that a later call would take for its own. Reading resets it. */
static bool info_clean(void *state, const int64_t *info, int64_t batch) {
  gstat_cu_state *s = state;
  bool clean = s->clean_info == info && s->clean_count == batch;
  s->clean_info = NULL;
  s->clean_count = 0;
  return clean;
}

/* src -> dst through one dense device buffer in a compute type that loses
 * nothing (float64 if either side is float64). Returns without a further
 * wait: a copy to the host has waited in copy_out, one into device memory
 * is ordered before later work on the stream (pageable host bytes are
 * staged before copy_in returns), unless it reads pinned host memory that
 * the caller may change once we return. The sparse solver makes several
 * copies per step. */
static gstat_status copy_matrix(void *state, gstat_ctx *ctx, const gstat_matrix *src,
                                gstat_matrix *dst) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int cdt = src->dtype == GSTAT_F64 || dst->dtype == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
  size_t bytes = (size_t)(src->batch * src->rows * src->cols) * gstat_cu_dtype_bytes(cdt);
  if (bytes == 0) return GSTAT_OK;
  void *buf = gstat_cu_buffer(s, ctx, CU_MAT, bytes);
  if (!buf) return GSTAT_ENOMEM;
  gstat_status st = gstat_cu_load(s, ctx, "copy", src, 0, src->batch, cdt, buf, NULL);
  if (st == GSTAT_OK) st = gstat_cu_store(s, ctx, "copy", buf, cdt, dst, 0, dst->batch, NULL);
  if (st != GSTAT_OK) return st;
  bool wait =
      dst->location == GSTAT_CUDA && src->location == GSTAT_HOST && gstat_cu_is_pinned(src->data);
  if (!wait) return GSTAT_OK;
  cudaError_t err = cudaStreamSynchronize(s->stream);
  return err == cudaSuccess ? GSTAT_OK : gstat_cu_fail(ctx, "copy", "synchronizing", err);
}

/* ---- state ---- */

static void destroy(void *state) {
  gstat_cu_state *s = state;
  if (!s) return;
  cudaSetDevice(s->device);
  for (int g = 0; g < GSTAT_CU_GRAPHS; g++)
    if (s->graphs[g].exec) cudaGraphExecDestroy(s->graphs[g].exec);
  for (int r = 0; r < CU_NBUF; r++)
    if (s->dev[r].ptr) cudaFree(s->dev[r].ptr);
  if (s->host_work.ptr) cudaFreeHost(s->host_work.ptr);
  if (s->host_info.ptr) cudaFreeHost(s->host_info.ptr);
  if (s->host_pca.ptr) cudaFreeHost(s->host_pca.ptr);
  if (s->host_sc.ptr) cudaFreeHost(s->host_sc.ptr);
  free(s->host_upload.ptr);
  gstat_cu_stager *stagers[2] = {&s->stage_in, &s->stage_out};
  for (int d = 0; d < 2; d++) {
    if (stagers[d]->buf.ptr) {
      for (int k = 0; k < 2; k++) cudaEventSynchronize(stagers[d]->ev[k]);
      cudaFreeHost(stagers[d]->buf.ptr);
    }
    for (int k = 0; k < 2; k++)
      if (stagers[d]->ev[k]) cudaEventDestroy(stagers[d]->ev[k]);
  }
  if (s->params) cusolverDnDestroyParams(s->params);
  if (s->solver) cusolverDnDestroy(s->solver);
  for (int k = 0; k < GSTAT_CU_STREAMS; k++) {
    if (s->side_params[k]) cusolverDnDestroyParams(s->side_params[k]);
    if (s->side_solver[k]) cusolverDnDestroy(s->side_solver[k]);
    if (s->side[k]) cudaStreamDestroy(s->side[k]);
  }
  for (int k = 0; k <= GSTAT_CU_STREAMS; k++)
    if (s->ev[k]) cudaEventDestroy(s->ev[k]);
  for (int k = 0; k < GSTAT_CU_BRANCHES; k++) {
    if (s->capture_solver[k]) cusolverDnDestroy(s->capture_solver[k]);
    if (s->capture[k]) cudaStreamDestroy(s->capture[k]);
    if (s->capture_ev[k]) cudaEventDestroy(s->capture_ev[k]);
  }
  if (s->blas) cublasDestroy(s->blas);
  if (s->side_blas) cublasDestroy(s->side_blas);
  if (s->own) cudaStreamDestroy(s->own);
  free(s);
}

static gstat_status set_stream(void *state, void *stream) {
  gstat_cu_state *s = state;
  s->stream = stream ? (cudaStream_t)stream : s->own;
  cusolverDnSetStream(s->solver, s->stream);
  cublasSetStream(s->blas, s->stream);
  return GSTAT_OK;
}

static gstat_status create(gstat_ctx *ctx, int device, void **out) {
  *out = NULL;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "no CUDA device (%s)",
                               err != cudaSuccess ? cudaGetErrorString(err) : "count is 0");
  }
  if (device >= count)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "CUDA device %d does not exist (%d found)",
                               device, count);
  gstat_cu_state *s = calloc(1, sizeof *s);
  if (!s) return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "cuda: cannot allocate the backend state");
  s->device = device;
  gstat_status st = GSTAT_OK;
  if ((err = cudaSetDevice(device)) != cudaSuccess ||
      /* a blocking stream: its work waits for the caller's earlier work on
       * the legacy default stream (a cudaMemcpy from pageable memory returns
       * before its DMA lands; a non-blocking stream could read before it) */
      (err = cudaStreamCreateWithFlags(&s->own, cudaStreamDefault)) != cudaSuccess) {
    st = gstat_cu_fail(ctx, "cuda", "initialising the device", err);
    goto done;
  }
  for (int k = 0; k < GSTAT_CU_STREAMS && err == cudaSuccess; k++)
    err = cudaStreamCreateWithFlags(&s->side[k], cudaStreamNonBlocking);
  for (int k = 0; k <= GSTAT_CU_STREAMS && err == cudaSuccess; k++)
    err = cudaEventCreateWithFlags(&s->ev[k], cudaEventDisableTiming);
  for (int k = 0; k < 2 && err == cudaSuccess; k++) {
    err = cudaEventCreateWithFlags(&s->stage_in.ev[k], cudaEventDisableTiming);
    if (err == cudaSuccess)
      err = cudaEventCreateWithFlags(&s->stage_out.ev[k], cudaEventDisableTiming);
  }
  if (err != cudaSuccess) {
    st = gstat_cu_fail(ctx, "cuda", "creating streams", err);
    goto done;
  }
  if (cusolverDnCreate(&s->solver) != CUSOLVER_STATUS_SUCCESS ||
      cusolverDnCreateParams(&s->params) != CUSOLVER_STATUS_SUCCESS ||
      cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS ||
      cublasCreate(&s->side_blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(s->side_blas, s->side[0]) != CUBLAS_STATUS_SUCCESS) {
    st =
        gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "cuda: cannot create the cuSOLVER/cuBLAS handles");
    goto done;
  }
  for (int k = 0; k < GSTAT_CU_STREAMS; k++) {
    if (cusolverDnCreate(&s->side_solver[k]) != CUSOLVER_STATUS_SUCCESS ||
        cusolverDnCreateParams(&s->side_params[k]) != CUSOLVER_STATUS_SUCCESS) {
      st = gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "cuda: cannot create the cuSOLVER handles");
      goto done;
    }
    cusolverDnSetStream(s->side_solver[k], s->side[k]);
  }
  for (int k = 0; k < GSTAT_CU_BRANCHES; k++) {
    if (cudaStreamCreateWithFlags(&s->capture[k], cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&s->capture_ev[k], cudaEventDisableTiming) != cudaSuccess ||
        cusolverDnCreate(&s->capture_solver[k]) != CUSOLVER_STATUS_SUCCESS) {
      cudaGetLastError();
      st = gstat_cu_host->fail(ctx, GSTAT_EBACKEND,
                               "cuda: cannot create the capture streams and handles");
      goto done;
    }
    cusolverDnSetStream(s->capture_solver[k], s->capture[k]);
  }
  set_stream(s, NULL);
  if (cudaDeviceGetAttribute(&s->cooperative, cudaDevAttrCooperativeLaunch, device) !=
      cudaSuccess) {
    cudaGetLastError();
    s->cooperative = 0;
  }
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  s->free_bytes_cap = free_b / 2; /* leave room for cuSOLVER and others */
  *out = s;
  s = NULL;
done:
  destroy(s);
  return st;
}

static int64_t device_allocations(void *state) {
  return ((gstat_cu_state *)state)->device_allocations;
}

static void device_stats(void *state, gstat_device_stats *stats, size_t stats_size) {
  const gstat_cu_state *s = state;
  gstat_device_stats all;
  memset(&all, 0, sizeof all);
  all.graph_captures = s->graph_captures;
  all.graph_refusals = s->graph_refusals;
  all.graph_launches = s->graph_launches;
  all.pipeline_pieces = s->pipeline_pieces;
  all.own_tridiag_chunks = s->own_tridiag_chunks;
  all.own_tridiag_degenerate = s->own_tridiag_degenerate;
  all.own_tridiag_clustered = s->own_tridiag_clustered;
  memcpy(stats, &all, stats_size < sizeof all ? stats_size : sizeof all);
}

/* ---- the synchronizing operations refuse a capturing stream ---- */

/* GSTAT_EUNSUPPORTED when the context's stream is capturing a CUDA graph: eigh,
 * Cholesky and the solves read results back on the host (and may allocate),
 * which would invalidate the caller's capture; gstat_eigh_async is the path
 * that captures. Querying the legacy stream while another stream captures is
 * itself an error (cudaErrorStreamCaptureImplicit): refused alike. */
static gstat_status refuse_capture(gstat_cu_state *s, gstat_ctx *ctx, const char *fn) {
  enum cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaSetDevice(s->device);
  cudaError_t err = cudaStreamIsCapturing(s->stream, &status);
  if (err != cudaSuccess) cudaGetLastError();
  if (err == cudaErrorStreamCaptureImplicit || status != cudaStreamCaptureStatusNone)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "%s: the CUDA stream is capturing a graph, and this call reads its "
                               "results on the host; only gstat_eigh_async (orders <= %d) can be "
                               "captured",
                               fn, GSTAT_CU_JACOBI_MAX_N);
  return GSTAT_OK;
}

static gstat_status eigh_op(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                            gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  GSTAT_CU_TRY(refuse_capture(state, ctx, "eigh"));
  return gstat_cu_eigh(state, ctx, A, uplo, w, V, info);
}

static gstat_status eigh_top_op(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                                gstat_matrix *w) {
  GSTAT_CU_TRY(refuse_capture(state, ctx, "eigh"));
  return gstat_cu_eigh_top(state, ctx, A, k, w);
}

static gstat_status cholesky_op(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                                gstat_matrix *F, int64_t *info) {
  GSTAT_CU_TRY(refuse_capture(state, ctx, "cholesky"));
  return gstat_cu_cholesky(state, ctx, A, uplo, F, info);
}

static gstat_status cholesky_solve_op(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                      gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                      int64_t *info) {
  GSTAT_CU_TRY(refuse_capture(state, ctx, "cholesky_solve"));
  return gstat_cu_cholesky_solve(state, ctx, F, uplo, B, X, info);
}

static gstat_status triangular_solve_op(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                        gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                        const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  GSTAT_CU_TRY(refuse_capture(state, ctx, "triangular_solve"));
  return gstat_cu_triangular_solve(state, ctx, T, uplo, trans, diag, B, X, info);
}

static const gstat_i_backend_ops cuda_ops = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .name = "cuda",
    .ran_flag = GSTAT_RAN_CUDA,
    .eigh = eigh_op,
    .eigh_top = eigh_top_op,
    .cholesky = cholesky_op,
    .cholesky_solve = cholesky_solve_op,
    .triangular_solve = triangular_solve_op,
    .destroy = destroy,
    .device_allocations = device_allocations,
    .device_stats = device_stats,
    .copy = copy_matrix,
    .info_clean = info_clean,
    .comoment = gstat_cu_comoment,
    .scale_sym = gstat_cu_scale_sym_op,
    .workspace = gstat_cu_workspace,
    .project = gstat_cu_project,
    .find_nonfinite = gstat_cu_find_nonfinite_first,
    .knn = gstat_cu_knn,
    .host_cost = gstat_cu_host_cost,
    .sc_laplacians = gstat_cu_sc_laplacians_op,
    .sc_assign = gstat_cu_sc_assign_op,
    .gemm = gstat_cu_gemm,
    .orthonormalize = gstat_cu_orthonormalize,
    .syrk_lower = gstat_cu_syrk_lower,
    .rows = gstat_cu_rows,
    .laplacian = gstat_cu_laplacian,
    .wcomoment = gstat_cu_wcomoment,
    .nan_rows = gstat_cu_nan_rows_op,
    .pairwise = gstat_cu_pairwise,
    .eigh_async = gstat_cu_eigh_async,
    .eigh_backward = gstat_cu_eigh_backward_op,
    .lincomb = gstat_cu_lincomb_op,
    .dots = gstat_cu_dots_op,
    .csr_lap_plan = gstat_cu_csr_lap_plan,
    .csr_lap_apply = gstat_cu_csr_lap_apply,
    .csr_lap_release = gstat_cu_csr_lap_release,
    .kmeans = gstat_cu_kmeans,
    .offdiag_sumsq = gstat_cu_offdiag_sumsq_op,
    .sym_affine = gstat_cu_sym_affine_op,
};

static const gstat_i_module module = {
    .api_version = GSTAT_I_BACKEND_API_VERSION,
    .ops = &cuda_ops,
    .create = create,
    .set_stream = set_stream,
};

__attribute__((visibility("default"))) const gstat_i_module *gstat_cuda_module_v1(
    const gstat_i_host_services *host) {
  if (!host || host->api_version != GSTAT_I_BACKEND_API_VERSION) return NULL;
  gstat_cu_host = host;
  return &module;
}
