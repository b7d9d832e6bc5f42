/*
 * Public linear algebra entry points: validate every argument, check
 * finiteness, choose a backend, call it through its table, and turn the
 * per-element info into a status and a message naming the failing element.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "core/matrix.h"
#include "backend/backend.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

/* ---- argument checks shared by the entry points ---- */

static gstat_status check_square(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *m) {
  gstat_status st = gstat_i_check_matrix(ctx, fn, name, m);
  if (st != GSTAT_OK) return st;
  if (m->rows != m->cols)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s must be square, got %" PRId64 " x %" PRId64, fn,
                        name, m->rows, m->cols);
  if (m->rows > INT32_MAX)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                        "%s: %s has order %" PRId64 " > INT32_MAX (LAPACK limit)", fn, name,
                        m->rows);
  return GSTAT_OK;
}

static gstat_status check_uplo(gstat_ctx *ctx, const char *fn, gstat_uplo uplo) {
  if (uplo != GSTAT_LOWER && uplo != GSTAT_UPPER)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: uplo=%d is neither GSTAT_LOWER nor GSTAT_UPPER", fn,
                        (int)uplo);
  return GSTAT_OK;
}

/* All arguments in one memory: the host, or one CUDA device. */
static gstat_status check_location(gstat_ctx *ctx, const char *fn, const gstat_matrix *const *args,
                                   const char *const *names, int count) {
  const gstat_matrix *first = NULL;
  for (int k = 0; k < count; k++) {
    const gstat_matrix *m = args[k];
    if (!m) continue;
    if (!first) {
      first = m;
      continue;
    }
    if (m->location != first->location || (m->location == GSTAT_CUDA && m->device != first->device))
      return gstat_i_fail(ctx, GSTAT_EINVAL,
                          "%s: %s and %s are in different memories (host/device)", fn, names[0],
                          names[k]);
  }
  return GSTAT_OK;
}

static gstat_status check_finite(gstat_ctx *ctx, const char *fn, const char *name,
                                 const gstat_matrix *m, gstat_i_tri tri) {
  int64_t b, i, j;
  if (!ctx->opt.check_finite || m->location != GSTAT_HOST)
    return GSTAT_OK; /* device: backend checks */
  if (!gstat_i_find_nonfinite(m, tri, &b, &i, &j)) return GSTAT_OK;
  return gstat_i_fail(ctx, GSTAT_ENOTFINITE,
                      "%s: batch element %" PRId64 " of %s has a non-finite value at (%" PRId64
                      ", %" PRId64 ")",
                      fn, b, name, i, j);
}

static gstat_i_tri triangle(gstat_uplo uplo, bool strict) {
  if (uplo == GSTAT_LOWER) return strict ? GSTAT_I_TRI_STRICT_LOWER : GSTAT_I_TRI_LOWER;
  return strict ? GSTAT_I_TRI_STRICT_UPPER : GSTAT_I_TRI_UPPER;
}

/* The caller's info array, or one cached in the context. */
/* Device data need a usable CUDA backend: said before anything is allocated
 * for them (a batch of views may be far larger than its memory). */
static gstat_status device_refusal(gstat_ctx *ctx, const char *fn) {
  char why[sizeof ctx->last_error];
  memcpy(why, ctx->last_error, sizeof why);
  return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                      "%s: the arguments are in CUDA device memory, but %s", fn, why);
}

/* The caller's info, or the context's scratch for A's batch, into *out. */
static gstat_status info_buffer(gstat_ctx *ctx, const char *fn, int64_t *info,
                                const gstat_matrix *A, int64_t **out) {
  gstat_i_backend be;
  if (A->location == GSTAT_CUDA && gstat_i_cuda_backend(ctx, &be) != GSTAT_OK)
    return device_refusal(ctx, fn);
  *out = info ? info : gstat_i_workspace(ctx, GSTAT_WS_INFO, sizeof(int64_t) * (size_t)A->batch);
  if (!*out) return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate the info array", fn);
  return GSTAT_OK;
}

/* Index of the first nonzero info[b'] with b <= b' < batch, else batch.
 * Blocks are ORed first (a loop the compiler vectorizes), so that the
 * usual all-zero array of a large batch costs one fast pass. */
static int64_t next_failed(const int64_t *info, int64_t b, int64_t batch) {
  enum { kBlock = 64 };
  for (; b < batch && b % kBlock != 0; b++)
    if (info[b] != 0) return b;
  for (; b + kBlock <= batch; b += kBlock) {
    int64_t any = 0;
    for (int k = 0; k < kBlock; k++) any |= info[b + k];
    if (any != 0) break;
  }
  for (; b < batch; b++)
    if (info[b] != 0) return b;
  return batch;
}

/* Turn per-element info into a status and a message naming the first
 * failure, e.g. "cholesky: batch element 17 is not positive definite
 * (leading minor of order 5); 3 of 64 elements failed". `what` ends in the
 * words that introduce the info value. */
static gstat_status report(gstat_ctx *ctx, const char *fn, const int64_t *info, int64_t batch,
                           gstat_status failed, const char *what) {
  int64_t first = next_failed(info, 0, batch), count = 0;
  if (first == batch) return GSTAT_OK;
  for (int64_t b = first; b < batch; b = next_failed(info, b + 1, batch)) count++;
  if (count == 1)
    return gstat_i_fail(ctx, failed, "%s: batch element %" PRId64 " %s %" PRId64 ")", fn, first,
                        what, info[first]);
  return gstat_i_fail(ctx, failed,
                      "%s: batch element %" PRId64 " %s %" PRId64 "); %" PRId64 " of %" PRId64
                      " elements failed",
                      fn, first, what, info[first], count, batch);
}

/* Nothing to compute (n = 0 or nrhs = 0): every element succeeded. */
static gstat_status nothing_to_do(int64_t *info, int64_t batch) {
  for (int64_t b = 0; info && b < batch; b++) info[b] = 0;
  return GSTAT_OK;
}

/* ---- one operation, whichever backend runs it ---- */

typedef enum { OP_EIGH, OP_CHOLESKY, OP_CHOLESKY_SOLVE, OP_TRIANGULAR_SOLVE } op_kind;

typedef struct {
  op_kind kind;
  const char *fn;
  const gstat_matrix *A, *B; /* A: the matrix input (A, F or T) */
  gstat_matrix *w, *out;     /* out: V (may be NULL), F or X */
  gstat_uplo uplo;
  gstat_trans trans;
  gstat_diag diag;
} op;

static gstat_status call(const gstat_i_backend *be, gstat_ctx *ctx, const op *o, int64_t *info) {
  switch (o->kind) {
    case OP_EIGH: return be->ops->eigh(be->state, ctx, o->A, o->uplo, o->w, o->out, info);
    case OP_CHOLESKY: return be->ops->cholesky(be->state, ctx, o->A, o->uplo, o->out, info);
    case OP_CHOLESKY_SOLVE:
      return be->ops->cholesky_solve(be->state, ctx, o->A, o->uplo, o->B, o->out, info);
    case OP_TRIANGULAR_SOLVE:
      return be->ops->triangular_solve(be->state, ctx, o->A, o->uplo, o->trans, o->diag, o->B,
                                       o->out, info);
  }
  return GSTAT_EINVAL;
}

static op part_op(const op *o, int64_t b, int64_t count, gstat_matrix tmp[4]) {
  op e = *o;
  tmp[0] = gstat_i_batch_part(o->A, b, count);
  e.A = &tmp[0];
  if (o->B) tmp[1] = gstat_i_batch_part(o->B, b, count), e.B = &tmp[1];
  if (o->w) tmp[2] = gstat_i_batch_part(o->w, b, count), e.w = &tmp[2];
  if (o->out) tmp[3] = gstat_i_batch_part(o->out, b, count), e.out = &tmp[3];
  return e;
}

static op element_op(const op *o, int64_t b, gstat_matrix tmp[4]) {
  return part_op(o, b, 1, tmp);
}

/* Host data on the GPU with a progress callback runs in chunks of about this
 * batch * n^3 (at least 64 elements), reported and cancellable between
 * them: the GPU pipeline reports nothing itself, and a chunk is about the
 * CPU slice's Ctrl-C latency (what the Python binding's own chunks were). */
static const double progress_chunk_work = 268435456.0;

static bool on_device(const op *o) {
  return o->A->location == GSTAT_CUDA;
}

/* Device data needs the CUDA backend; host data goes to the GPU under AUTO
 * when one is usable and the work is large, or when CUDA was asked for. */
static bool wants_gpu(gstat_ctx *ctx, const gstat_matrix *A) {
  if (A->location == GSTAT_CUDA || ctx->opt.backend == GSTAT_BACKEND_CUDA) return true;
  if (ctx->opt.backend != GSTAT_BACKEND_AUTO) return false;
  /* quietly the CPU when no GPU is usable */
  return !gstat_i_cpu_keeps_host_linalg(A->batch, A->rows) && gstat_ctx_cuda_available(ctx);
}

bool gstat_i_eigh_runs_on_cpu(gstat_ctx *ctx, const gstat_matrix *A) {
  return !wants_gpu(ctx, A);
}

/* Choose the backend of an operation (wants_gpu). */
static gstat_status choose(gstat_ctx *ctx, const op *o, gstat_i_backend *be) {
  be->ops = &gstat_i_cpu_backend_ops;
  be->state = NULL;
  if (!wants_gpu(ctx, o->A)) return GSTAT_OK;
  gstat_status st = gstat_i_cuda_backend(ctx, be);
  if (st != GSTAT_OK && on_device(o)) return device_refusal(ctx, o->fn);
  return st;
}

/* A flagged element b of device data, recomputed on the CPU: its arguments
 * come to the host through the backend's copy, its outputs go back. */
static gstat_status recompute_on_host(gstat_ctx *ctx, const gstat_i_backend *gpu, const op *o,
                                      int64_t b, int64_t *info) {
  const gstat_i_backend cpu = {&gstat_i_cpu_backend_ops, NULL};
  if (!gpu->ops->copy) return GSTAT_OK; /* the element keeps its failure */
  gstat_matrix dev[4], host[4];
  op e = element_op(o, b, dev);
  const gstat_matrix *args[4] = {e.A, e.B, e.w, e.out};
  size_t off[4], total = 0;
  for (int i = 0; i < 4; i++) {
    off[i] = total;
    if (!args[i]) continue;
    host[i] = gstat_matrix_col_major(NULL, args[i]->dtype, 1, args[i]->rows, args[i]->cols);
    size_t bytes = (size_t)(args[i]->rows * args[i]->cols) * gstat_dtype_size(args[i]->dtype);
    total += (bytes + 63) / 64 * 64;
  }
  char *mem = gstat_i_alloc(ctx, total);
  if (!mem)
    return gstat_i_fail(ctx, GSTAT_ENOMEM,
                        "%s: cannot allocate %zu bytes to recompute element %lld", o->fn, total,
                        (long long)b);
  for (int i = 0; i < 4; i++)
    if (args[i]) host[i].data = mem + off[i];
  /* an in-place output shares the host copy of its input */
  if (e.out && gstat_i_same_view(e.out, e.A)) host[3] = host[0];
  if (e.out && e.B && gstat_i_same_view(e.out, e.B)) host[3] = host[1];
  gstat_status st = gpu->ops->copy(gpu->state, ctx, e.A, &host[0]);
  if (st == GSTAT_OK && e.B) st = gpu->ops->copy(gpu->state, ctx, e.B, &host[1]);
  op h = e;
  h.A = &host[0];
  h.B = e.B ? &host[1] : NULL;
  h.w = e.w ? &host[2] : NULL;
  h.out = e.out ? &host[3] : NULL;
  if (st == GSTAT_OK) st = call(&cpu, ctx, &h, info);
  if (st == GSTAT_OK && e.w) st = gpu->ops->copy(gpu->state, ctx, h.w, (gstat_matrix *)e.w);
  if (st == GSTAT_OK && e.out) st = gpu->ops->copy(gpu->state, ctx, h.out, (gstat_matrix *)e.out);
  gstat_i_free(ctx, mem, total);
  if (st == GSTAT_OK) ctx->last_backends |= GSTAT_RAN_CPU;
  return st;
}

/* An in-place call on the GPU (an output the same view as its host input)
 * overwrites that input, also for the elements the GPU then flags, which the
 * CPU recomputes from the input: keep a copy of it first (dense, in the
 * context's GSTAT_WS_KEEP slot). *kept describes the copy; its `data` stays
 * NULL when there is nothing to keep. */
static gstat_status keep_input(gstat_ctx *ctx, const op *o, gstat_matrix *kept) {
  memset(kept, 0, sizeof *kept);
  if (!o->out || on_device(o)) return GSTAT_OK; /* device inputs: not kept (yet) */
  const gstat_matrix *in = gstat_i_same_view(o->out, o->A)           ? o->A
                           : o->B && gstat_i_same_view(o->out, o->B) ? o->B
                                                                     : NULL;
  if (!in || in->batch == 0 || in->rows == 0 || in->cols == 0) return GSTAT_OK;
  size_t bytes;
  if (!gstat_i_mul_size((size_t)(in->batch * in->rows),
                        (size_t)in->cols * gstat_dtype_size(in->dtype), &bytes))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: the copy of an in-place input overflows", o->fn);
  void *mem = gstat_i_workspace(ctx, GSTAT_WS_KEEP, bytes);
  if (!mem)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "%s: cannot allocate %zu bytes to keep the input", o->fn,
                        bytes);
  gstat_matrix copy = gstat_matrix_col_major(mem, in->dtype, in->batch, in->rows, in->cols);
  gstat_status st = gstat_i_cpu_backend_ops.copy(NULL, ctx, in, &copy);
  if (st == GSTAT_OK) *kept = copy;
  return st;
}

#define TRY(expr)                    \
  do {                               \
    gstat_status st_ = (expr);       \
    if (st_ != GSTAT_OK) return st_; \
  } while (0)

/* The elements per GPU call: the whole batch, or chunks (progress_chunk_work)
 * for host data when a progress callback listens. */
static int64_t gpu_chunk(const gstat_ctx *ctx, const op *o) {
  int64_t batch = o->A->batch;
  if (on_device(o) || !ctx->opt.progress || ctx->progress_muted > 0) return batch;
  double n = (double)o->A->rows, want = progress_chunk_work / (n * n * n);
  return want < 64.0 ? 64 : want >= (double)batch ? batch : (int64_t)want;
}

/* Elements [b0, b0 + count) of o on *be; a GPU failure of the whole part (out
 * of memory after chunking, a backend error) on host data reruns it on the
 * CPU (an in-place input from `kept`, keep_input's copy), which then also
 * runs every later part (*be becomes the CPU). *clean stays true while the
 * GPU vouches for every part's info. */
static gstat_status run_part(gstat_ctx *ctx, gstat_i_backend *be, const op *o,
                             const gstat_matrix *kept, int64_t b0, int64_t count, int64_t *info,
                             bool *clean) {
  const gstat_i_backend cpu = {&gstat_i_cpu_backend_ops, NULL};
  gstat_matrix tmp[4], k;
  op p = part_op(o, b0, count, tmp);
  gstat_status st = call(be, ctx, &p, info + b0);
  if (st != GSTAT_OK && be->ops != cpu.ops && !on_device(o) &&
      (st == GSTAT_ENOMEM || st == GSTAT_EBACKEND)) {
    ctx->last_error[0] = '\0';
    *be = cpu;
    if (kept->data) { /* the GPU may have written over the part's input */
      k = gstat_i_batch_part(kept, b0, count);
      if (gstat_i_same_view(o->out, o->A))
        p.A = &k;
      else
        p.B = &k;
    }
    st = call(be, ctx, &p, info + b0);
  }
  if (st != GSTAT_OK) return st;
  ctx->last_backends |= be->ops->ran_flag;
  /* a large batch's info can take as long to scan as a small kernel runs */
  *clean = *clean && be->ops != cpu.ops && be->ops->info_clean &&
           be->ops->info_clean(be->state, info + b0, count);
  return GSTAT_OK;
}

/* Run o with fallback (run_part), in chunks reported to the progress
 * callback for host data on the GPU (gpu_chunk); elements the GPU flagged
 * are recomputed on the CPU one by one (for device data through host copies
 * of the element). Element numbers index the whole batch throughout.
 * *clean: the backend vouched that every info is 0, so nobody need scan them. */
static gstat_status execute(gstat_ctx *ctx, const op *o, int64_t *info, bool *clean) {
  *clean = false;
  gstat_i_backend be;
  gstat_status st = choose(ctx, o, &be);
  if (st != GSTAT_OK) return st;
  const gstat_i_backend cpu = {&gstat_i_cpu_backend_ops, NULL};
  if (be.ops == cpu.ops) {
    st = call(&be, ctx, o, info);
    if (st == GSTAT_OK) ctx->last_backends |= be.ops->ran_flag;
    return st;
  }
  gstat_matrix kept;
  memset(&kept, 0, sizeof kept);
  TRY(keep_input(ctx, o, &kept));
  int64_t batch = o->A->batch, chunk = gpu_chunk(ctx, o), gpu_end = batch;
  bool all_clean = true;
  for (int64_t b0 = 0; b0 < batch; b0 += chunk) {
    int64_t count = batch - b0 < chunk ? batch - b0 : chunk;
    bool was_gpu = be.ops != cpu.ops;
    TRY(run_part(ctx, &be, o, &kept, b0, count, info, &all_clean));
    if (was_gpu && be.ops == cpu.ops) gpu_end = b0; /* from here the CPU's infos are final */
    if (b0 + count < batch) TRY(gstat_i_progress(ctx, o->fn, b0 + count, batch));
  }
  *clean = all_clean;
  if (*clean) return GSTAT_OK;
  for (int64_t b = next_failed(info, 0, gpu_end); b < gpu_end;
       b = next_failed(info, b + 1, gpu_end)) {
    if (on_device(o)) {
      /* In place, the GPU's factor overwrote the input (device inputs are
       * not kept): a recomputation would factor that NaN element and report
       * its first column. The GPU's verdict and NaN element stand. */
      if (o->kind == OP_CHOLESKY && info[b] > 0 && gstat_i_same_view(o->out, o->A)) continue;
      TRY(recompute_on_host(ctx, &be, o, b, &info[b]));
      continue;
    }
    gstat_matrix tmp[4], k;
    op e = element_op(o, b, tmp);
    if (kept.data) { /* the element's input from the copy: the GPU wrote over it */
      k = gstat_i_batch_part(&kept, b, 1);
      if (gstat_i_same_view(o->out, o->A))
        e.A = &k;
      else
        e.B = &k;
    }
    TRY(call(&cpu, ctx, &e, &info[b]));
    ctx->last_backends |= GSTAT_RAN_CPU;
  }
  return GSTAT_OK;
}

/* execute, then info as a status (report) unless the backend vouched for it. */
static gstat_status execute_and_report(gstat_ctx *ctx, const op *o, int64_t *info,
                                       gstat_status failed, const char *what) {
  bool clean;
  TRY(execute(ctx, o, info, &clean));
  return clean ? GSTAT_OK : report(ctx, o->fn, info, o->A->batch, failed, what);
}

/* ---- entry points ---- */

gstat_status gstat_eigh(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo, gstat_matrix *w,
                        gstat_matrix *V, int64_t *info) {
  static const char fn[] = "eigh";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_square(ctx, fn, "A", A));
  TRY(check_uplo(ctx, fn, uplo));
  if (!w) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: w is NULL", fn);
  TRY(gstat_i_check_shape(ctx, fn, "w", w, A->batch, A->rows, 1));
  if (V) TRY(gstat_i_check_shape(ctx, fn, "V", V, A->batch, A->rows, A->cols));
  TRY(gstat_i_check_alias(ctx, fn, "w", w, "A", A, false));
  TRY(gstat_i_check_alias(ctx, fn, "V", V, "A", A, true));
  TRY(gstat_i_check_alias(ctx, fn, "V", V, "w", w, false));
  const gstat_matrix *args[] = {A, w, V};
  const char *names[] = {"A", "w", "V"};
  TRY(check_location(ctx, fn, args, names, 3));
  if (A->batch == 0 || A->rows == 0) return nothing_to_do(info, A->batch);
  TRY(check_finite(ctx, fn, "A", A, triangle(uplo, false)));
  int64_t *inf = NULL;
  TRY(info_buffer(ctx, fn, info, A, &inf));
  op o = {.kind = OP_EIGH, .fn = fn, .A = A, .w = w, .out = V, .uplo = uplo};
  return execute_and_report(ctx, &o, inf, GSTAT_ENOCONV, "did not converge (info");
}

gstat_status gstat_cholesky(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo, gstat_matrix *F,
                            int64_t *info) {
  static const char fn[] = "cholesky";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_square(ctx, fn, "A", A));
  TRY(check_uplo(ctx, fn, uplo));
  if (!F) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: F is NULL", fn);
  TRY(gstat_i_check_shape(ctx, fn, "F", F, A->batch, A->rows, A->cols));
  TRY(gstat_i_check_alias(ctx, fn, "F", F, "A", A, true));
  const gstat_matrix *args[] = {A, F};
  const char *names[] = {"A", "F"};
  TRY(check_location(ctx, fn, args, names, 2));
  if (A->batch == 0 || A->rows == 0) return nothing_to_do(info, A->batch);
  TRY(check_finite(ctx, fn, "A", A, triangle(uplo, false)));
  int64_t *inf = NULL;
  TRY(info_buffer(ctx, fn, info, A, &inf));
  op o = {.kind = OP_CHOLESKY, .fn = fn, .A = A, .out = F, .uplo = uplo};
  return execute_and_report(ctx, &o, inf, GSTAT_ENOTPD,
                            "is not positive definite (leading minor of order");
}

/* Shared checks of the two solves: T square, B batch x n x nrhs, X like B. */
static gstat_status check_solve(gstat_ctx *ctx, const char *fn, const char *tname,
                                const gstat_matrix *T, gstat_uplo uplo, bool unit,
                                const gstat_matrix *B, gstat_matrix *X) {
  TRY(check_square(ctx, fn, tname, T));
  TRY(check_uplo(ctx, fn, uplo));
  TRY(gstat_i_check_matrix(ctx, fn, "B", B));
  if (B->batch != T->batch || B->rows != T->rows)
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "%s: B is %" PRId64 " x %" PRId64 " x %" PRId64 ", expected %" PRId64
                        " x %" PRId64 " x nrhs",
                        fn, B->batch, B->rows, B->cols, T->batch, T->rows);
  if (!X) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: X is NULL", fn);
  TRY(gstat_i_check_shape(ctx, fn, "X", X, B->batch, B->rows, B->cols));
  TRY(gstat_i_check_alias(ctx, fn, "X", X, "B", B, true));
  TRY(gstat_i_check_alias(ctx, fn, "X", X, tname, T, false));
  const gstat_matrix *args[] = {T, B, X};
  const char *names[] = {tname, "B", "X"};
  TRY(check_location(ctx, fn, args, names, 3));
  if (T->batch == 0 || T->rows == 0 || B->cols == 0) return GSTAT_OK; /* caller: nothing_to_do */
  TRY(check_finite(ctx, fn, tname, T, triangle(uplo, unit)));
  return check_finite(ctx, fn, "B", B, GSTAT_I_TRI_FULL);
}

gstat_status gstat_cholesky_solve(gstat_ctx *ctx, const gstat_matrix *F, gstat_uplo uplo,
                                  const gstat_matrix *B, gstat_matrix *X, int64_t *info) {
  static const char fn[] = "cholesky_solve";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_solve(ctx, fn, "F", F, uplo, false, B, X));
  if (F->batch == 0 || F->rows == 0 || B->cols == 0) return nothing_to_do(info, F->batch);
  int64_t *inf = NULL;
  TRY(info_buffer(ctx, fn, info, F, &inf));
  op o = {.kind = OP_CHOLESKY_SOLVE, .fn = fn, .A = F, .B = B, .out = X, .uplo = uplo};
  return execute_and_report(ctx, &o, inf, GSTAT_ESINGULAR,
                            "has a singular factor (zero diagonal entry");
}

gstat_status gstat_triangular_solve(gstat_ctx *ctx, const gstat_matrix *T, gstat_uplo uplo,
                                    gstat_trans trans, gstat_diag diag, const gstat_matrix *B,
                                    gstat_matrix *X, int64_t *info) {
  static const char fn[] = "triangular_solve";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  if (trans != GSTAT_NO_TRANS && trans != GSTAT_TRANS)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: trans=%d is neither GSTAT_NO_TRANS nor GSTAT_TRANS",
                        fn, (int)trans);
  if (diag != GSTAT_NON_UNIT && diag != GSTAT_UNIT)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: diag=%d is neither GSTAT_NON_UNIT nor GSTAT_UNIT",
                        fn, (int)diag);
  TRY(check_solve(ctx, fn, "T", T, uplo, diag == GSTAT_UNIT, B, X));
  if (T->batch == 0 || T->rows == 0 || B->cols == 0) return nothing_to_do(info, T->batch);
  int64_t *inf = NULL;
  TRY(info_buffer(ctx, fn, info, T, &inf));
  op o = {.kind = OP_TRIANGULAR_SOLVE,
          .fn = fn,
          .A = T,
          .B = B,
          .out = X,
          .uplo = uplo,
          .trans = trans,
          .diag = diag};
  return execute_and_report(ctx, &o, inf, GSTAT_ESINGULAR,
                            "has a singular triangle (zero diagonal entry");
}

gstat_status gstat_i_eigh(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo, gstat_matrix *w,
                          gstat_matrix *V, int64_t *info) {
  ctx->progress_muted++;
  gstat_status st = gstat_eigh(ctx, A, uplo, w, V, info);
  ctx->progress_muted--;
  return st;
}

gstat_status gstat_i_eigh_host(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *w, gstat_matrix *V, int64_t *info) {
  gstat_backend asked = ctx->opt.backend;
  unsigned ran = ctx->last_backends;
  int threads = ctx->last_threads;
  ctx->opt.backend = GSTAT_BACKEND_CPU;
  gstat_status st = gstat_i_eigh(ctx, A, uplo, w, V, info);
  ctx->opt.backend = asked;
  ctx->last_backends = ran;
  if (ctx->last_threads < threads) ctx->last_threads = threads; /* the most over the outer call */
  return st;
}

/* gstat_eigh with everything that would read the device from the host left
 * out (the finiteness check, info, the CPU's recomputation of flagged
 * elements): device data only, one backend call, refused when the backend
 * cannot run these arguments that way. */
gstat_status gstat_eigh_async(gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                              gstat_matrix *w, gstat_matrix *V, int32_t *info) {
  static const char fn[] = "eigh_async";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_square(ctx, fn, "A", A));
  TRY(check_uplo(ctx, fn, uplo));
  if (!w) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: w is NULL", fn);
  if (!info && A->batch > 0) return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: info is NULL", fn);
  TRY(gstat_i_check_shape(ctx, fn, "w", w, A->batch, A->rows, 1));
  if (V) TRY(gstat_i_check_shape(ctx, fn, "V", V, A->batch, A->rows, A->cols));
  TRY(gstat_i_check_alias(ctx, fn, "w", w, "A", A, false));
  TRY(gstat_i_check_alias(ctx, fn, "V", V, "A", A, false));
  TRY(gstat_i_check_alias(ctx, fn, "V", V, "w", w, false));
  const gstat_matrix *args[] = {A, w, V};
  const char *names[] = {"A", "w", "V"};
  TRY(check_location(ctx, fn, args, names, 3));
  if (A->location != GSTAT_CUDA)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED,
                        "%s: the arguments are in host memory; it takes CUDA device data", fn);
  if (A->batch == 0) return GSTAT_OK;
  gstat_i_backend be;
  TRY(gstat_i_cuda_backend(ctx, &be));
  if (!be.ops->eigh_async)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: the %s backend has no such path", fn,
                        be.ops->name);
  TRY(be.ops->eigh_async(be.state, ctx, A, uplo, w, V, info));
  ctx->last_backends |= be.ops->ran_flag;
  return GSTAT_OK;
}

/* Arguments of gstat_eigh_backward: V n x n, w and gw n x 1, gV and gA like V,
 * one dtype, gA overlapping no input, all in host memory or on one device. */
static gstat_status check_eigh_backward(gstat_ctx *ctx, const char *fn, const gstat_matrix *w,
                                        const gstat_matrix *V, const gstat_matrix *gw,
                                        const gstat_matrix *gV, gstat_matrix *gA) {
  if (!w || !V || !gV || !gA)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: w, V, gV or gA is NULL", fn);
  TRY(check_square(ctx, fn, "V", V));
  TRY(gstat_i_check_shape(ctx, fn, "w", w, V->batch, V->rows, 1));
  if (gw) TRY(gstat_i_check_shape(ctx, fn, "gw", gw, V->batch, V->rows, 1));
  TRY(gstat_i_check_shape(ctx, fn, "gV", gV, V->batch, V->rows, V->cols));
  TRY(gstat_i_check_shape(ctx, fn, "gA", gA, V->batch, V->rows, V->cols));
  const gstat_matrix *in[] = {w, V, gw, gV};
  const char *names[] = {"w", "V", "gw", "gV", "gA"};
  for (int k = 0; k < 4; k++) {
    if (in[k] && in[k]->dtype != V->dtype)
      return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: %s and V differ in dtype", fn, names[k]);
    if (in[k]) TRY(gstat_i_check_alias(ctx, fn, "gA", gA, names[k], in[k], false));
  }
  if (gA->dtype != V->dtype)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: gA and V differ in dtype", fn);
  const gstat_matrix *all[] = {V, w, gw, gV, gA};
  const char *order[] = {"V", "w", "gw", "gV", "gA"};
  return check_location(ctx, fn, all, order, 5);
}

gstat_status gstat_eigh_backward(gstat_ctx *ctx, const gstat_matrix *w, const gstat_matrix *V,
                                 const gstat_matrix *gw, const gstat_matrix *gV, double broadening,
                                 gstat_matrix *gA) {
  static const char fn[] = "eigh_backward";
  if (!ctx) return GSTAT_EINVAL;
  gstat_i_begin(ctx);
  TRY(check_eigh_backward(ctx, fn, w, V, gw, gV, gA));
  if (!(broadening >= 0) || isinf(broadening))
    return gstat_i_fail(ctx, GSTAT_EINVAL, "%s: broadening must be finite and >= 0", fn);
  if (V->batch == 0 || V->rows == 0) return GSTAT_OK;
  gstat_i_backend be = {&gstat_i_cpu_backend_ops, NULL}; /* host data: the CPU's */
  if (V->location == GSTAT_CUDA) TRY(gstat_i_cuda_backend(ctx, &be));
  if (!be.ops->eigh_backward)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "%s: the %s backend has no such path", fn,
                        be.ops->name);
  TRY(be.ops->eigh_backward(be.state, ctx, w, V, gw, gV, broadening, gA));
  ctx->last_backends |= be.ops->ran_flag;
  return GSTAT_OK;
}
