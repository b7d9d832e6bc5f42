/* CK(call): a CUDA runtime call in a benchmark program; on failure print
 * where and why, and exit 1. */
#ifndef GSTAT_BENCH_CUDA_CHECK_H
#define GSTAT_BENCH_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e_ = (x);                                                        \
    if (e_ != cudaSuccess) {                                                     \
      fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

#endif
