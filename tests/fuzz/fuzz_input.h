/* Reading fuzzer bytes as parameters, and the one way a fuzz target reports
 * a broken property (abort: libFuzzer keeps the input as a crash, the
 * standalone driver exits non-zero). */
#ifndef GSTAT_FUZZ_INPUT_H
#define GSTAT_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  const uint8_t *p;
  size_t left;
} fz_input;

/* The next byte, 0 once the input is used up (so short inputs stay valid). */
static inline uint8_t fz_u8(fz_input *in) {
  if (in->left == 0) return 0;
  in->left--;
  return *in->p++;
}

static inline uint64_t fz_u64(fz_input *in, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; k++) v = (v << 8) | fz_u8(in);
  return v;
}

/* An integer in [lo, hi]. */
static inline int64_t fz_range(fz_input *in, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)(hi - lo) + 1;
  int bytes = span <= 256 ? 1 : span <= 65536 ? 2 : 8;
  return lo + (int64_t)(span == 0 ? fz_u64(in, bytes) : fz_u64(in, bytes) % span);
}

#define FZ_CHECK(cond, ...)                                                       \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: property broken: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
      abort();                                                                    \
    }                                                                             \
  } while (0)

#endif /* GSTAT_FUZZ_INPUT_H */
