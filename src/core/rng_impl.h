/* xoshiro256** (Blackman and Vigna) seeded through splitmix64, inline for
 * host and device code (rng.c wraps it as the library's gstat_i_rng; the CUDA
 * module's k-means uses it directly, so a seed gives the same stream there). */
#ifndef GSTAT_CORE_RNG_IMPL_H
#define GSTAT_CORE_RNG_IMPL_H

#include <stdint.h>

#include "core/hostdevice.h"

GSTAT_HD static inline uint64_t gstat_i_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

GSTAT_HD static inline uint64_t gstat_i_rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

GSTAT_HD static inline void gstat_i_xoshiro_seed(uint64_t s[4], uint64_t seed) {
  for (int i = 0; i < 4; i++) s[i] = gstat_i_splitmix64(&seed);
}

GSTAT_HD static inline uint64_t gstat_i_xoshiro_next(uint64_t s[4]) {
  uint64_t result = gstat_i_rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = gstat_i_rotl64(s[3], 45);
  return result;
}

/* Uniform in [0, 1) with 53 random bits. */
GSTAT_HD static inline double gstat_i_xoshiro_uniform(uint64_t s[4]) {
  return (double)(gstat_i_xoshiro_next(s) >> 11) * 0x1.0p-53;
}

#endif /* GSTAT_CORE_RNG_IMPL_H */
