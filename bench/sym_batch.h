/* The GPU benchmarks' test matrices: batch x n x n symmetric, dense
 * column-major, entries uniform(-0.5, 0.5) plus n on the diagonal
 * (diagonally dominant, so positive definite too), drawn from one LCG
 * stream in a fixed order, so every program with the same seed solves the
 * very same matrices. */
#ifndef GSTAT_BENCH_SYM_BATCH_H
#define GSTAT_BENCH_SYM_BATCH_H

#include <stddef.h>
#include <stdint.h>

/* The batch into a (batch * n * n doubles). */
static inline void bench_sym_batch(double *a, int64_t batch, int64_t n, unsigned long long seed) {
  unsigned long long s = seed;
  for (int64_t k = 0; k < batch; k++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = j; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double x = (double)(s >> 11) * 0x1.0p-53 - 0.5 + (i == j ? (double)n : 0);
        a[k * n * n + i + j * n] = a[k * n * n + j + i * n] = x;
      }
}

/* a's first count doubles into out as double (f64) or rounded to float. */
static inline void bench_store(const double *a, size_t count, int f64, void *out) {
  for (size_t i = 0; i < count; i++) {
    if (f64)
      ((double *)out)[i] = a[i];
    else
      ((float *)out)[i] = (float)a[i];
  }
}

/* a's first count doubles rounded to float, packed in place from its start
 * (each float lands at or before the double it came from). */
static inline void bench_pack_float(double *a, size_t count) {
  float *f = (float *)a;
  for (size_t i = 0; i < count; i++) f[i] = (float)a[i];
}

#endif
