/*
 * Times one batched gstat call: bench_linalg OP DTYPE BATCH N REPS [IN [OUT]]
 *   OP     eigh (values + vectors), eigvals, cholesky
 *   DTYPE  f32, f64, bf16
 *   IN     raw row-major input (BATCH*N*N elements of DTYPE); random if absent
 *   OUT    where to write the eigenvalues / factor (same dtype), for checking
 * Prints "best_ms=<best of REPS> first_ms=<first call, workspace included>".
 * bench/linalg_vs_numpy.py drives it against numpy on the same inputs.
 */
#define _POSIX_C_SOURCE 199309L
#include <gstat/gstat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int parse_dtype(const char *s, gstat_dtype *dt) {
  if (!strcmp(s, "f32"))
    *dt = GSTAT_F32;
  else if (!strcmp(s, "f64"))
    *dt = GSTAT_F64;
  else if (!strcmp(s, "bf16"))
    *dt = GSTAT_BF16;
  else
    return 0;
  return 1;
}

int main(int argc, char **argv) {
  gstat_dtype dt;
  if (argc < 6 || !parse_dtype(argv[2], &dt)) {
    fprintf(stderr, "usage: %s eigh|eigvals|cholesky f32|f64|bf16 BATCH N REPS [IN [OUT]]\n",
            argv[0]);
    return 2;
  }
  const char *op = argv[1];
  int64_t batch = atoll(argv[3]), n = atoll(argv[4]);
  int reps = atoi(argv[5]);
  size_t es = gstat_dtype_size(dt), count = (size_t)(batch * n * n);
  char *a = malloc(count * es), *v = malloc(count * es), *w = malloc((size_t)(batch * n) * es);
  if (!a || !v || !w) return 1;
  if (argc > 6) {
    FILE *f = fopen(argv[6], "rb");
    if (!f || fread(a, es, count, f) != count) {
      fprintf(stderr, "cannot read %s\n", argv[6]);
      return 1;
    }
    fclose(f);
  } else {
    /* diagonally dominant random symmetric: also positive definite */
    gstat_matrix A = gstat_matrix_row_major(a, dt, batch, n, n);
    unsigned long long s = 1;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
          s = s * 6364136223846793005ull + 1442695040888963407ull;
          double x = (double)(s >> 11) * 0x1.0p-53 - 0.5 + (i == j ? (double)n : 0);
          for (int t = 0; t < 2; t++) {
            size_t off = (size_t)(b * A.batch_stride + (t ? i : j) * n + (t ? j : i));
            if (dt == GSTAT_F32)
              ((float *)a)[off] = (float)x;
            else if (dt == GSTAT_F64)
              ((double *)a)[off] = x;
            else
              ((unsigned short *)a)[off] = gstat_f32_to_bf16((float)x);
          }
        }
  }
  gstat_ctx *ctx;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return 1;
  gstat_matrix A = gstat_matrix_row_major(a, dt, batch, n, n);
  gstat_matrix V = gstat_matrix_row_major(v, dt, batch, n, n);
  gstat_matrix W = gstat_vector_batch(w, dt, batch, n);
  double best = 1e300, first = 0;
  for (int r = 0; r <= reps; r++) {
    double t0 = now_ms();
    gstat_status st;
    if (!strcmp(op, "eigh"))
      st = gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, NULL);
    else if (!strcmp(op, "eigvals"))
      st = gstat_eigh(ctx, &A, GSTAT_LOWER, &W, NULL, NULL);
    else
      st = gstat_cholesky(ctx, &A, GSTAT_LOWER, &V, NULL);
    double t = now_ms() - t0;
    if (st != GSTAT_OK) {
      fprintf(stderr, "%s\n", gstat_ctx_last_error(ctx));
      return 1;
    }
    if (r == 0)
      first = t;
    else if (t < best)
      best = t;
  }
  if (argc > 7) {
    FILE *f = fopen(argv[7], "wb");
    int is_chol = !strcmp(op, "cholesky");
    if (!f || fwrite(is_chol ? v : w, es, is_chol ? count : (size_t)(batch * n), f) == 0) return 1;
    fclose(f);
  }
  printf("best_ms=%.4f first_ms=%.4f backend=%s\n", best, first, gstat_ctx_last_backend_name(ctx));
  gstat_ctx_destroy(ctx);
  free(a);
  free(v);
  free(w);
  return 0;
}
