/*
 * Copies between the caller's host memory and the device through pinned
 * staging. A copy from pageable memory is much slower than from pinned
 * memory (bench/bench_cuda_host; bench/README.md, "Measurements moved from
 * code comments"). So the bytes go through two pinned halves of
 * kPiece bytes that the context keeps for each direction (copies in and out
 * of a pipeline interleave, eigh_cuda.c): OpenMP threads copy piece i into one
 * half while the DMA engine moves piece i - 1 from the other, and on the way
 * back the threads empty one half while the next piece arrives in the other.
 * Memory that is pinned already is copied directly, and so are small copies
 * (there the pipeline's event waits cost more than they save).
 */
#include <omp.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"

enum {
  kPiece = 8 << 20,       /* bytes per half of the staging buffer */
  kDirectBelow = 1 << 16, /* smaller copies go straight through */
  kPerThread = 1 << 20,   /* at least this many bytes per copying thread */
  kMaxThreads = 8         /* memory bandwidth is saturated by then */
};

/* memcpy spread over up to kMaxThreads OpenMP threads. */
static void parallel_copy(void *dst, const void *src, size_t bytes) {
  int threads = (int)(bytes / kPerThread);
  int avail = omp_get_max_threads();
  if (threads > avail) threads = avail;
  if (threads > kMaxThreads) threads = kMaxThreads;
  if (threads <= 1) {
    memcpy(dst, src, bytes);
    return;
  }
  size_t part = (bytes + (size_t)threads - 1) / (size_t)threads;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; t++) {
    size_t off = (size_t)t * part;
    if (off < bytes)
      memcpy((char *)dst + off, (const char *)src + off, bytes - off < part ? bytes - off : part);
  }
}

bool gstat_cu_is_pinned(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* plain malloc'd memory may report an error */
    return false;
  }
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeManaged;
}

/* The two halves of st, after the copies that last used them have
 * finished; NULL when no pinned memory can be had (the caller copies
 * directly). */
static char *halves(gstat_cu_state *s, gstat_cu_stager *st, size_t bytes) {
  size_t half = bytes < kPiece ? bytes : kPiece;
  if (st->pending) {
    cudaEventSynchronize(st->ev[0]);
    cudaEventSynchronize(st->ev[1]);
    st->pending = false;
  }
  return gstat_cu_host_buffer(s, NULL, &st->buf, 2 * half);
}

cudaError_t gstat_cu_copy_in(gstat_cu_state *s, cudaStream_t stream, void *dev, const void *host,
                             size_t bytes) {
  gstat_cu_stager *st = &s->stage_in;
  char *h = bytes < kDirectBelow || gstat_cu_is_pinned(host) ? NULL : halves(s, st, bytes);
  if (!h) return cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream);
  size_t half = st->buf.size / 2;
  cudaError_t err = cudaSuccess;
  for (size_t off = 0, i = 0; off < bytes && err == cudaSuccess; off += half, i++) {
    size_t len = bytes - off < half ? bytes - off : half;
    char *slot = h + (i & 1) * half;
    if (i >= 2) err = cudaEventSynchronize(st->ev[i & 1]); /* piece i - 2 has left */
    if (err != cudaSuccess) break;
    parallel_copy(slot, (const char *)host + off, len);
    err = cudaMemcpyAsync((char *)dev + off, slot, len, cudaMemcpyHostToDevice, stream);
    if (err == cudaSuccess) err = cudaEventRecord(st->ev[i & 1], stream);
    st->pending = true;
  }
  return err;
}

cudaError_t gstat_cu_copy_out(gstat_cu_state *s, cudaStream_t stream, void *host, const void *dev,
                              size_t bytes) {
  gstat_cu_stager *st = &s->stage_out;
  char *h = bytes < kDirectBelow || gstat_cu_is_pinned(host) ? NULL : halves(s, st, bytes);
  if (!h) {
    cudaError_t err = cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream);
    return err == cudaSuccess ? cudaStreamSynchronize(stream) : err;
  }
  size_t half = st->buf.size / 2, pieces = (bytes + half - 1) / half;
  cudaError_t err = cudaSuccess;
  /* piece i + 1 travels while the threads empty piece i */
  for (size_t i = 0; i <= pieces && err == cudaSuccess; i++) {
    if (i < pieces) {
      size_t off = i * half, len = bytes - off < half ? bytes - off : half;
      err = cudaMemcpyAsync(h + (i & 1) * half, (const char *)dev + off, len,
                            cudaMemcpyDeviceToHost, stream);
      if (err == cudaSuccess) err = cudaEventRecord(st->ev[i & 1], stream);
    }
    if (i >= 1 && err == cudaSuccess) {
      size_t j = i - 1, off = j * half, len = bytes - off < half ? bytes - off : half;
      err = cudaEventSynchronize(st->ev[j & 1]);
      if (err == cudaSuccess) parallel_copy((char *)host + off, h + (j & 1) * half, len);
    }
  }
  return err;
}
