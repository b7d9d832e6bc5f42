/* The kmeans primitive on the host (backend.h): assign_impl.h's serial runs,
 * spread over the context's threads for a large embedding. */
#include <omp.h>
#include <stdlib.h>

#include "backend/cpu/primitives_cpu.h"

/* Below this many points the runs stay serial: threads do not pay there
 * (bench/README.md, "k-means runs in parallel"). */
enum { PARALLEL_RUNS_MIN_N = 5000 };

/* One round: runs r0 .. r0 + cnt - 1 handed out to nt threads as they
 * finish (runs differ in length); each thread's slot keeps the labels of its
 * best run so far (the serial rule within the slot's runs, which it takes in
 * increasing order: its first counts, a later one when strictly smaller). */
static void run_round(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                      double tol, int64_t r0, int64_t cnt, int nt, double *mem, int64_t per,
                      double *total, int64_t *its, int64_t *mine) {
#pragma omp parallel num_threads(nt)
  {
    int q = omp_get_thread_num();
    double *s = mem + q * per;
    gstat_i_km m = gstat_i_km_over(X, n, dim, opt->k, s);
#pragma omp for schedule(dynamic, 1)
    for (int64_t r = r0; r < r0 + cnt; r++) {
      int64_t it = 0;
      bool stop;
      total[r] = gstat_i_km_run(&m, opt, r, tol, false, &it, &stop);
      its[r] = it;
      if (mine[q] < 0 || total[r] < total[mine[q]]) {
        mine[q] = r;
        memcpy(s + per - n, m.lab, sizeof(int64_t) * (size_t)n);
      }
    }
  }
}

/* The n_init runs in rounds of two runs per thread (progress and
 * cancellation between rounds, outside the parallel region); the winner is
 * chosen by the serial rule over all inertias, so the result is the serial
 * one bitwise whichever thread ran what (a winner whose labels its slot did
 * not keep, after a first run with a NaN inertia, is run again). false when
 * opt->tick stopped it. */
static bool parallel_runs(gstat_ctx *ctx, const double *X, int64_t n, int64_t dim,
                          const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                          int64_t *iterations, double *scratch) {
  int64_t runs = opt->n_init, per = (int64_t)gstat_i_kmeans_scratch_impl(n, dim, opt->k) + n;
  int64_t nt = ctx->num_threads < runs ? ctx->num_threads : runs;
  int64_t cap = ((int64_t)1 << 27) / (per > 0 ? per : 1); /* at most 1 GiB of scratch */
  if (nt > cap) nt = cap;
  double *mem = nt > 1 && n >= PARALLEL_RUNS_MIN_N
                    ? malloc(sizeof(double) * (size_t)(nt * per + runs) +
                             sizeof(int64_t) * (size_t)(runs + nt))
                    : NULL;
  if (!mem) return gstat_i_kmeans_impl(X, n, dim, opt, labels, inertia, iterations, scratch);
  double *total = mem + nt * per;
  int64_t *its = (int64_t *)(total + runs), *mine = its + runs;
  for (int64_t q = 0; q < nt; q++) mine[q] = -1;
  double tol = gstat_i_km_tol(X, n, dim, opt->tol);
  bool done = true;
  for (int64_t r0 = 0; r0 < runs && done; r0 += 2 * nt) {
    done = !opt->tick || opt->tick(opt->tick_arg, r0 * opt->max_iter, runs * opt->max_iter);
    if (done)
      run_round(X, n, dim, opt, tol, r0, runs - r0 < 2 * nt ? runs - r0 : 2 * nt, (int)nt, mem, per,
                total, its, mine);
  }
  if (done) {
    int64_t win = 0;
    for (int64_t r = 1; r < runs; r++)
      if (gstat_i_km_better(r, total[r], total[win])) win = r;
    *inertia = total[win];
    *iterations = its[win];
    int64_t held = -1;
    for (int64_t q = 0; q < nt; q++)
      if (mine[q] == win) held = q;
    if (held >= 0) {
      memcpy(labels, mem + held * per + per - n, sizeof(int64_t) * (size_t)n);
    } else {
      gstat_i_km m = gstat_i_km_over(X, n, dim, opt->k, scratch);
      int64_t it = 0;
      bool stop;
      gstat_i_km_run(&m, opt, win, tol, false, &it, &stop);
      memcpy(labels, m.lab, sizeof(int64_t) * (size_t)n);
    }
  }
  free(mem);
  return done;
}

gstat_status gstat_i_cpu_kmeans(void *state, gstat_ctx *ctx, const gstat_matrix *E,
                                const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                                int64_t *iterations) {
  (void)state;
  int64_t n = E->rows, dim = E->cols;
  if (E->dtype != GSTAT_F64 || E->col_stride != 1 || (n > 1 && E->row_stride != dim))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "kmeans: E must be dense row-major float64");
  size_t bytes = sizeof(double) * gstat_i_kmeans_scratch_impl(n, dim, opt->k);
  double *scratch = gstat_i_alloc(ctx, bytes);
  if (!scratch) return gstat_i_fail(ctx, GSTAT_ENOMEM, "kmeans: cannot allocate %zu bytes", bytes);
  bool done = parallel_runs(ctx, E->data, n, dim, opt, labels, inertia, iterations, scratch);
  gstat_i_free(ctx, scratch, bytes);
  return done ? GSTAT_OK : GSTAT_ECANCELED;
}
