/*
 * The accumulator's exported state (src/pca/accum.c): gstat_cov_accum_
 * merge_state on genuine exports (of accumulators fed fuzzer rows), on
 * exports with fuzzer-overwritten entries and on arrays made up whole.
 * Properties beyond "no crash, no UB":
 * - a refused state leaves the accumulator exactly as it was;
 * - a genuine export merges as gstat_cov_accum_merge of its source does
 *   (the same status, bitwise the same result);
 * - whatever was accepted, the accumulator's own export can be merged into
 *   a fresh accumulator (a state the library produced is one it accepts),
 *   and gstat_cov_accum_covariance then succeeds.
 */
#include <math.h>
#include <string.h>

#include "fuzz_input.h"
#include "gstat/gstat.h"

enum { MAXP = 5, MAXROWS = 6 };

static double pick_double(fz_input *in) {
  static const double special[] = {
      0.0,   -0.0,     1.0, 0.5,         1e308, -1e308, 9007199254740992.0, 9007199254740993.0,
      1e300, 4.9e-324, 3.0, 1735619681.0};
  uint8_t c = fz_u8(in);
  if (c < 96) return special[c % 12];
  if (c < 112) return c & 1 ? NAN : INFINITY;
  return ((double)fz_u64(in, 2) - 32768.0) / 256.0;
}

/* An accumulator of p columns fed up to MAXROWS fuzzer rows (some weighted). */
static gstat_cov_accum *fed(gstat_ctx *ctx, fz_input *in, int64_t p, gstat_missing mode) {
  gstat_cov_accum *acc = NULL;
  if (gstat_cov_accum_create(ctx, p, mode, &acc) != GSTAT_OK) abort();
  int64_t rows = fz_range(in, 0, MAXROWS);
  double x[MAXROWS * MAXP], w[MAXROWS];
  for (int64_t k = 0; k < rows * p; k++) x[k] = fz_u8(in) < 8 ? NAN : pick_double(in);
  for (int64_t k = 0; k < rows; k++) w[k] = fabs(pick_double(in));
  gstat_matrix X = gstat_matrix_row_major(x, GSTAT_F64, 1, rows, p);
  /* finiteness off: Inf rows reach the accumulator as NaN rows do */
  gstat_cov_accum_add(ctx, acc, &X, fz_u8(in) & 1 ? w : NULL);
  return acc;
}

static double *exported(const gstat_cov_accum *acc, size_t len) {
  double *s = malloc(sizeof(double) * len);
  if (!s || gstat_cov_accum_export(acc, s) != GSTAT_OK) abort();
  return s;
}

/* The export of acc merges into a fresh accumulator; the covariance works. */
static void check_reimport(gstat_ctx *ctx, const gstat_cov_accum *acc, int64_t p,
                           gstat_missing mode, size_t len) {
  double *s = exported(acc, len);
  gstat_cov_accum *fresh = NULL;
  if (gstat_cov_accum_create(ctx, p, mode, &fresh) != GSTAT_OK) abort();
  gstat_status st = gstat_cov_accum_merge_state(ctx, fresh, s);
  FZ_CHECK(st == GSTAT_OK, "the library's own export was refused: %s", gstat_ctx_last_error(ctx));
  double c[MAXP * MAXP], mean[MAXP];
  gstat_matrix C = gstat_matrix_row_major(c, GSTAT_F64, 1, p, p);
  gstat_matrix M = gstat_vector_batch(mean, GSTAT_F64, 1, p);
  st = gstat_cov_accum_covariance(ctx, fresh, 1, (int)(p & 1), &C, &M);
  FZ_CHECK(st == GSTAT_OK, "covariance of an accepted state: %s", gstat_ctx_last_error(ctx));
  gstat_cov_accum_destroy(fresh);
  free(s);
}

/* Both from empty: merges of the accumulators themselves and merge_state of
 * their exports must agree, in status and bitwise (the same update on the
 * same numbers). */
static void check_twins(gstat_ctx *ctx, const gstat_cov_accum *acc, const gstat_cov_accum *src,
                        const double *acc_state, const double *src_state, int64_t p,
                        gstat_missing mode, size_t len) {
  gstat_cov_accum *a = NULL, *b = NULL;
  if (gstat_cov_accum_create(ctx, p, mode, &a) != GSTAT_OK ||
      gstat_cov_accum_create(ctx, p, mode, &b) != GSTAT_OK)
    abort();
  const gstat_cov_accum *from[2] = {acc, src};
  const double *states[2] = {acc_state, src_state};
  for (int k = 0; k < 2; k++) {
    gstat_status sa = gstat_cov_accum_merge(ctx, a, from[k]);
    gstat_status sb = gstat_cov_accum_merge_state(ctx, b, states[k]);
    FZ_CHECK(sa == sb, "merge %d, merge_state %d: %s", (int)sa, (int)sb, gstat_ctx_last_error(ctx));
    double *x = exported(a, len), *y = exported(b, len);
    FZ_CHECK(memcmp(x, y, sizeof(double) * len) == 0, "merge and merge_state disagree");
    free(x);
    free(y);
  }
  gstat_cov_accum_destroy(a);
  gstat_cov_accum_destroy(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static gstat_ctx *ctx;
  if (!ctx) {
    gstat_ctx_options opt;
    gstat_ctx_options_init(&opt);
    opt.num_threads = 1;
    opt.backend = GSTAT_BACKEND_CPU;
    opt.check_finite = 0;
    if (gstat_ctx_create(&ctx, &opt) != GSTAT_OK) abort();
  }
  fz_input in = {data, size};
  uint8_t head = fz_u8(&in);
  int64_t p = 1 + head % MAXP;
  gstat_missing mode = (head >> 3) & 1 ? GSTAT_MISSING_COMPLETE : GSTAT_MISSING_EVERYTHING;
  size_t len = gstat_cov_accum_state_size(p);
  gstat_cov_accum *src = fed(ctx, &in, p, mode), *acc = fed(ctx, &in, p, mode);
  double *state = exported(src, len);
  int genuine = 1;
  if ((head >> 4) & 1) { /* made up whole, with a header that is often right */
    for (size_t k = 0; k < len; k++) state[k] = pick_double(&in);
    genuine = 0;
    if ((head >> 5) & 1) {
      state[0] = 1735619681.0, state[1] = 1, state[2] = (double)p, state[3] = (double)mode;
      state[7] = (double)(fz_u8(&in) & 1);
    }
  }
  for (int edits = fz_u8(&in) % 4; edits > 0; edits--, genuine = 0)
    state[fz_range(&in, 0, (int64_t)len - 1)] = pick_double(&in);

  double *before = exported(acc, len);
  if (genuine) check_twins(ctx, acc, src, before, state, p, mode, len);
  int repeats = 1 + fz_u8(&in) % 3;
  for (int r = 0; r < repeats; r++) {
    double *now = exported(acc, len);
    gstat_status st = gstat_cov_accum_merge_state(ctx, acc, state);
    double *after = exported(acc, len);
    if (st != GSTAT_OK)
      FZ_CHECK(memcmp(now, after, sizeof(double) * len) == 0, "a refused state changed acc");
    free(now);
    free(after);
  }
  check_reimport(ctx, acc, p, mode, len);
  free(before);
  free(state);
  gstat_cov_accum_destroy(src);
  gstat_cov_accum_destroy(acc);
  return 0;
}
