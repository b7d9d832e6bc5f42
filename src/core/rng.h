/*
 * A small seeded random generator (xoshiro256** seeded by splitmix64) for
 * the library's randomized algorithms: the same seed gives the same stream on
 * every platform, independent of the C library's rand().
 */
#ifndef GSTAT_CORE_RNG_H
#define GSTAT_CORE_RNG_H

#include <stdint.h>

typedef struct gstat_i_rng {
  uint64_t s[4];
  int has_spare; /* Box-Muller gives normals in pairs */
  double spare;
} gstat_i_rng;

void gstat_i_rng_seed(gstat_i_rng *r, uint64_t seed);
uint64_t gstat_i_rng_u64(gstat_i_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double gstat_i_rng_uniform(gstat_i_rng *r);
/* Standard normal. */
double gstat_i_rng_normal(gstat_i_rng *r);

#endif /* GSTAT_CORE_RNG_H */
