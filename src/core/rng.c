/* xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
#include <math.h>

#include "core/rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

void gstat_i_rng_seed(gstat_i_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
  r->has_spare = 0;
  r->spare = 0;
}

uint64_t gstat_i_rng_u64(gstat_i_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double gstat_i_rng_uniform(gstat_i_rng *r) {
  return (double)(gstat_i_rng_u64(r) >> 11) * 0x1.0p-53;
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
