/* Allocation through the context's hooks, cached workspace, checked sizes. */
#include <stdlib.h>

#include "core/internal.h"

enum { GSTAT_ALIGN = 64 };

void *gstat_i_alloc(gstat_ctx *ctx, size_t size) {
  if (size == 0) size = 1;
  if (ctx->opt.allocator.alloc)
    return ctx->opt.allocator.alloc(size, GSTAT_ALIGN, ctx->opt.allocator.user);
  /* aligned_alloc wants a multiple of the alignment */
  size_t rounded;
  if (!gstat_i_add_size(size, GSTAT_ALIGN - 1, &rounded)) return NULL;
  rounded -= rounded % GSTAT_ALIGN;
  return aligned_alloc(GSTAT_ALIGN, rounded);
}

void gstat_i_free(gstat_ctx *ctx, void *ptr, size_t size) {
  if (!ptr) return;
  if (ctx->opt.allocator.free) {
    ctx->opt.allocator.free(ptr, size == 0 ? 1 : size, ctx->opt.allocator.user);
    return;
  }
  free(ptr);
}

void *gstat_i_workspace(gstat_ctx *ctx, gstat_i_ws_slot slot, size_t size) {
  gstat_i_buffer *b = &ctx->ws[slot];
  if (b->ptr && b->size >= size) return b->ptr;
  gstat_i_free(ctx, b->ptr, b->size);
  b->ptr = gstat_i_alloc(ctx, size);
  b->size = b->ptr ? (size == 0 ? 1 : size) : 0;
  return b->ptr;
}

bool gstat_i_mul_size(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

bool gstat_i_add_size(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
