/* Core internals shared by every layer of the library (never installed). */
#ifndef GSTAT_CORE_INTERNAL_H
#define GSTAT_CORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gstat/core.h"

/* Workspace slots a context caches. Each grows to the largest size asked for
 * and is kept, so repeated calls of one shape allocate nothing. */
typedef enum gstat_i_ws_slot {
  GSTAT_WS_INFO = 0, /* per-element info when the caller passed none */
  GSTAT_WS_CPU,      /* CPU backend: per-thread packing and LAPACK work */
  GSTAT_WS_PCA,      /* src/pca: centered data, Gram/covariance matrices, spectra */
  GSTAT_WS_PCA_AUX,  /* src/pca: the randomized method's sketches */
  GSTAT_WS_COV,      /* src/pca covariance, shrinkage, Mahalanobis, accumulator chunks */
  GSTAT_WS_GRAPH,    /* src/graph: dense adjacency/Laplacian scratch, kNN distance blocks */
  GSTAT_WS_SPECTRAL, /* src/spectral: batched Laplacians, spectra, embeddings, k-means */
  GSTAT_WS_KEEP,     /* dispatch: the input of an in-place call on the GPU, kept for retries */
  GSTAT_WS_COUNT
} gstat_i_ws_slot;

typedef struct gstat_i_buffer {
  void *ptr;
  size_t size;
} gstat_i_buffer;

/* A loaded backend's per-context state (the CUDA module's). */
typedef struct gstat_i_backend_state {
  const struct gstat_i_backend_ops *ops; /* NULL until created */
  void *state;
  int unavailable; /* 1 once creation failed: do not retry */
  char why[256];   /* the reason, for later calls' messages */
  void *stream;    /* the caller's cudaStream_t, or NULL */
} gstat_i_backend_state;

struct gstat_ctx {
  gstat_ctx_options opt;
  int num_threads; /* resolved: >= 1 */
  gstat_i_buffer ws[GSTAT_WS_COUNT];
  gstat_i_backend_state cuda;
  unsigned last_backends;
  int last_threads;   /* gstat_ctx_last_threads */
  int progress_muted; /* > 0 inside a nested call: the outer call reports */
  char last_error[512];
};

/* Allocation through the context's allocator (64-byte aligned). */
void *gstat_i_alloc(gstat_ctx *ctx, size_t size);
void gstat_i_free(gstat_ctx *ctx, void *ptr, size_t size);

/* A cached workspace of at least `size` bytes, or NULL (GSTAT_ENOMEM) */
void *gstat_i_workspace(gstat_ctx *ctx, gstat_i_ws_slot slot, size_t size);

/* Record a failure: formats the message into ctx->last_error and returns
 * `status`, so callers write `return gstat_i_fail(ctx, GSTAT_EINVAL, ...)`. */
gstat_status gstat_i_fail(gstat_ctx *ctx, gstat_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A failure recorded apart from the context, so that the per-element work of
 * a batch can run in parallel; the caller raises the first one. */
typedef struct gstat_i_err {
  gstat_status status;
  char msg[320];
} gstat_i_err;

/* Record a failure (the first one wins) and return its status. */
gstat_status gstat_i_err_set(gstat_i_err *err, gstat_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Move a recorded failure into the context. */
gstat_status gstat_i_err_raise(gstat_ctx *ctx, const gstat_i_err *err);

/* Start of a public call: clears the message and the backends-ran bits. */
void gstat_i_begin(gstat_ctx *ctx);

/* Record that a step of the running call uses `threads` CPU threads. */
static inline void gstat_i_note_threads(gstat_ctx *ctx, int threads) {
  if (threads > ctx->last_threads) ctx->last_threads = threads;
}

/* Report progress through the context's callback (if any). Returns
 * GSTAT_ECANCELED, with the message set, when the callback asks to stop. */
gstat_status gstat_i_progress(gstat_ctx *ctx, const char *what, int64_t done, int64_t total);

/* Checked arithmetic: false on overflow or negative operands. */
bool gstat_i_mul_size(size_t a, size_t b, size_t *out);
bool gstat_i_add_size(size_t a, size_t b, size_t *out);

/* Sections of one cached workspace block: each gstat_i_ws_take reserves
 * count * elem bytes at a 64-byte aligned offset and returns the offset;
 * an overflowing size clears ok. */
typedef struct gstat_i_ws_plan {
  size_t size;
  bool ok;
} gstat_i_ws_plan;

static inline size_t gstat_i_ws_take(gstat_i_ws_plan *pl, int64_t count, size_t elem) {
  size_t at = (pl->size + 63) / 64 * 64, bytes, end;
  if (count < 0 || at < pl->size || !gstat_i_mul_size((size_t)count, elem, &bytes) ||
      !gstat_i_add_size(at, bytes, &end)) {
    pl->ok = false;
    return 0;
  }
  pl->size = end;
  return at;
}

#endif /* GSTAT_CORE_INTERNAL_H */
