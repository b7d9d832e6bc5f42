/* The GPU benchmarks' test matrices (sym_batch.h, seed 7, as bench_cuda
 * draws them) uploaded to device memory as float or double. */
#ifndef GSTAT_BENCH_SYM_BATCH_DEVICE_H
#define GSTAT_BENCH_SYM_BATCH_DEVICE_H

#include <stdlib.h>

#include "cuda_check.h"
#include "sym_batch.h"

/* A new device array of batch x n x n (float, or double when f64) that the
 * caller frees with cudaFree. */
static inline void *bench_sym_batch_device(int64_t batch, int64_t n, int f64) {
  size_t count = (size_t)(batch * n * n), bytes = count * (f64 ? sizeof(double) : sizeof(float));
  double *h = (double *)malloc(sizeof(double) * count);
  if (!h) {
    fprintf(stderr, "out of host memory\n");
    exit(1);
  }
  bench_sym_batch(h, batch, n, 7);
  if (!f64) bench_pack_float(h, count);
  void *d = NULL;
  CK(cudaMalloc(&d, bytes));
  CK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  free(h);
  return d;
}

#endif
