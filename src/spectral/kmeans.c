/* k-means, renumbering and inertia: the library's entry points over the
 * shared per-graph code (assign_impl.h; the CUDA module runs the same). */
#include <stdlib.h>

#include "core/internal.h"
#include "spectral/assign_impl.h"
#include "spectral/spectral_internal.h"

size_t gstat_i_kmeans_scratch(int64_t n, int64_t dim, int64_t k) {
  return gstat_i_kmeans_scratch_impl(n, dim, k);
}

bool gstat_i_kmeans(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                    int64_t *labels, double *inertia, int64_t *iterations, double *scratch) {
  return gstat_i_kmeans_impl(X, n, dim, opt, labels, inertia, iterations, scratch);
}

void gstat_i_relabel(int64_t *labels, int64_t n, int64_t k, int64_t *map) {
  gstat_i_relabel_impl(labels, n, k, map);
}

bool gstat_i_sc_km_tick(void *ctx, int64_t done, int64_t total) {
  return gstat_i_progress((gstat_ctx *)ctx, "kmeans: iterations", done, total) == GSTAT_OK;
}

double gstat_i_inertia(const double *X, int64_t n, int64_t dim, const int64_t *labels, int64_t k,
                       double *scratch) {
  return gstat_i_inertia_impl(X, n, dim, labels, k, scratch);
}

/* Below this many points the runs stay serial: threads cost more than one
 * run (bench/README.md, "k-means runs in parallel"). */
enum { PARALLEL_RUNS_MIN_N = 20000 };

/* One round: runs r0 .. r0 + cnt - 1, run r0 + q in slot q, which keeps
 * the labels of its best run so far (the serial rule within the slot's
 * runs: its first counts, a later one when strictly smaller). */
static void run_round(const double *X, int64_t n, int64_t dim, const gstat_i_kmeans_opt *opt,
                      double tol, int64_t r0, int cnt, double *mem, int64_t per, double *total,
                      int64_t *its, int64_t *mine) {
#pragma omp parallel for num_threads(cnt) schedule(static, 1)
  for (int q = 0; q < cnt; q++) {
    int64_t r = r0 + q, it = 0;
    double *s = mem + q * per;
    gstat_i_km m = gstat_i_km_over(X, n, dim, opt->k, s);
    bool stop;
    total[r] = gstat_i_km_run(&m, opt, r, tol, false, &it, &stop);
    its[r] = it;
    if (mine[q] < 0 || total[r] < total[mine[q]]) {
      mine[q] = r;
      memcpy(s + per - n, m.lab, sizeof(int64_t) * (size_t)n);
    }
  }
}

/* The n_init runs in rounds of one run per thread (progress and cancellation
 * between rounds, outside the parallel region); the winner is chosen by the
 * serial rule over all inertias, so the result is the serial one bitwise (a
 * winner whose labels its slot did not keep, after a first run with a NaN
 * inertia, is run again). */
bool gstat_i_kmeans_runs(void *ctxv, const double *X, int64_t n, int64_t dim,
                         const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                         int64_t *iterations, double *scratch) {
  gstat_ctx *ctx = ctxv;
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
  for (int64_t r0 = 0; r0 < runs && done; r0 += nt) {
    done = !opt->tick || opt->tick(opt->tick_arg, r0 * opt->max_iter, runs * opt->max_iter);
    if (done)
      run_round(X, n, dim, opt, tol, r0, (int)(runs - r0 < nt ? runs - r0 : nt), mem, per, total,
                its, mine);
  }
  if (done) {
    int64_t win = 0;
    for (int64_t r = 1; r < runs; r++)
      if (gstat_i_km_better(r, total[r], total[win])) win = r;
    *inertia = total[win];
    *iterations = its[win];
    if (mine[win % nt] == win) {
      memcpy(labels, mem + (win % nt) * per + per - n, sizeof(int64_t) * (size_t)n);
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
