/* The library's seeded generator: xoshiro256** (core/rng_impl.h), plus normals. */
#include <math.h>

#include "core/rng.h"
#include "core/rng_impl.h"

void gstat_i_rng_seed(gstat_i_rng *r, uint64_t seed) {
  gstat_i_xoshiro_seed(r->s, seed);
  r->has_spare = 0;
  r->spare = 0;
}

uint64_t gstat_i_rng_u64(gstat_i_rng *r) {
  return gstat_i_xoshiro_next(r->s);
}

double gstat_i_rng_uniform(gstat_i_rng *r) {
  return gstat_i_xoshiro_uniform(r->s);
}

double gstat_i_rng_normal(gstat_i_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u, v, s;
  do { /* Marsaglia's polar method: no trigonometry, exact rejection */
    u = 2.0 * gstat_i_rng_uniform(r) - 1.0;
    v = 2.0 * gstat_i_rng_uniform(r) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  double f = sqrt(-2.0 * log(s) / s);
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}
