/* What the cuSOLVER probes share: the check of a cuSOLVER call, a solver
 * workspace that grows and is kept, and the median of their timings. */
#ifndef GSTAT_BENCH_PROBE_UTIL_H
#define GSTAT_BENCH_PROBE_UTIL_H

#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "cuda_check.h"

/* CS(call): a cuSOLVER call; on failure print where and the status, exit 1. */
#define CS(x)                                                         \
  do {                                                                \
    cusolverStatus_t s_ = (x);                                        \
    if (s_ != CUSOLVER_STATUS_SUCCESS) {                              \
      fprintf(stderr, "%s:%d cuSOLVER %d\n", __FILE__, __LINE__, s_); \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

/* A device and a host workspace; zero-initialise, free with probe_ws_free. */
typedef struct {
  void *dev, *host;
  size_t dev_bytes, host_bytes;
} probe_ws;

/* Grow w to at least `dev` device and `host` host bytes. Fresh device
 * memory is cleared: some cuSOLVER versions read the workspace first. */
static inline void probe_ws_reserve(probe_ws *w, size_t dev, size_t host) {
  if (dev > w->dev_bytes) {
    cudaFree(w->dev);
    CK(cudaMalloc(&w->dev, dev));
    CK(cudaMemset(w->dev, 0, dev));
    w->dev_bytes = dev;
  }
  if (host > w->host_bytes) {
    free(w->host);
    w->host = malloc(host);
    if (!w->host) {
      fprintf(stderr, "out of host memory\n");
      exit(1);
    }
    w->host_bytes = host;
  }
}

static inline void probe_ws_free(probe_ws *w) {
  cudaFree(w->dev);
  free(w->host);
  memset(w, 0, sizeof *w);
}

/* Element i of a float64 (cdt 2) or float32 array, as double. */
static inline double probe_get(const void *p, int cdt, size_t i) {
  return cdt == 2 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline int probe_cmp_float(const void *x, const void *y) {
  float a = *(const float *)x, b = *(const float *)y;
  return (a > b) - (a < b);
}

static inline int probe_cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The median of t[0..n) (t is sorted in place). */
static inline float probe_median_f(float *t, int n) {
  qsort(t, (size_t)n, sizeof *t, probe_cmp_float);
  return t[n / 2];
}

static inline double probe_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, probe_cmp_double);
  return t[n / 2];
}

#endif
