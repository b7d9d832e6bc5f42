/* Threads: 8 threads, each with its own context, run batched eigh and
 * Cholesky on shared inputs at once; every result is bitwise equal to the
 * one a serial run produced first. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

enum { THREADS = 8, ROUNDS = 3, NCASES = 3 };

typedef struct {
  int64_t batch, n;
  gstat_dtype dtype;
  double *a; /* input, batch x n x n */
  double *w_ref, *v_ref, *l_ref;
} work_case;

static work_case cases[NCASES];

static size_t bytes(const work_case *c, int64_t per) {
  return sizeof(double) * (size_t)(c->batch * per);
}

/* eigh + Cholesky of a case into freshly allocated outputs. */
static int run(gstat_ctx *ctx, const work_case *c, double *w, double *v, double *l) {
  gstat_matrix A = gstat_matrix_row_major(c->a, c->dtype, c->batch, c->n, c->n);
  gstat_matrix W = gstat_vector_batch(w, c->dtype, c->batch, c->n);
  gstat_matrix V = gstat_matrix_row_major(v, c->dtype, c->batch, c->n, c->n);
  gstat_matrix L = gstat_matrix_row_major(l, c->dtype, c->batch, c->n, c->n);
  return gstat_eigh(ctx, &A, GSTAT_LOWER, &W, &V, NULL) != GSTAT_OK ||
         gstat_cholesky(ctx, &A, GSTAT_UPPER, &L, NULL) != GSTAT_OK;
}

static void *worker(void *arg) {
  (void)arg;
  gstat_ctx *ctx;
  if (gstat_ctx_create(&ctx, NULL) != GSTAT_OK) return (void *)1;
  intptr_t bad = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (int k = 0; k < NCASES; k++) {
      const work_case *c = &cases[k];
      double *w = malloc(bytes(c, c->n)), *v = malloc(bytes(c, c->n * c->n)),
             *l = malloc(bytes(c, c->n * c->n));
      bad |= run(ctx, c, w, v, l);
      bad |= memcmp(w, c->w_ref, bytes(c, c->n)) != 0;
      bad |= memcmp(v, c->v_ref, bytes(c, c->n * c->n)) != 0;
      bad |= memcmp(l, c->l_ref, bytes(c, c->n * c->n)) != 0;
      free(w);
      free(v);
      free(l);
    }
  gstat_ctx_destroy(ctx);
  return (void *)bad;
}

static void test_threads_bitwise(void **state) {
  (void)state;
  const int64_t shapes[NCASES][2] = {{200, 16}, {9, 70}, {1, tu_quick() ? 100 : 300}};
  gstat_ctx *ctx;
  assert_int_equal(gstat_ctx_create(&ctx, NULL), GSTAT_OK);
  for (int k = 0; k < NCASES; k++) {
    work_case *c = &cases[k];
    c->batch = shapes[k][0];
    c->n = shapes[k][1];
    c->dtype = GSTAT_F64;
    c->a = malloc(bytes(c, c->n * c->n));
    c->w_ref = malloc(bytes(c, c->n));
    c->v_ref = malloc(bytes(c, c->n * c->n));
    c->l_ref = malloc(bytes(c, c->n * c->n));
    tu_rng rng = tu_rng_new();
    for (int64_t b = 0; b < c->batch; b++) tu_spd(&rng, c->n, 100, c->a + b * c->n * c->n);
    assert_int_equal(run(ctx, c, c->w_ref, c->v_ref, c->l_ref), 0); /* the serial reference */
  }
  gstat_ctx_destroy(ctx);

  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, worker, NULL), 0);
  for (int t = 0; t < THREADS; t++) {
    void *ret;
    assert_int_equal(pthread_join(th[t], &ret), 0);
    assert_null(ret);
  }
  for (int k = 0; k < NCASES; k++) {
    free(cases[k].a);
    free(cases[k].w_ref);
    free(cases[k].v_ref);
    free(cases[k].l_ref);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_bitwise)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
