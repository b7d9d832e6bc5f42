/*
 * The kmeans primitive on the device (backend.h): assign_impl.h's runs with
 * their seeds, the passes over the points on the GPU (distances, nearest
 * centres, per-block sums in a fixed order), the sequential decisions on the
 * host (k-means++ picks from the copied distances, the new centres, empty
 * clusters, the stopping rules, the best run). Runs one after another, each
 * on the whole GPU.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/kmeans_kernels.h"

/* Device and host arrays of one call. */
typedef struct km_run {
  gstat_cu_state *s;
  gstat_ctx *ctx;
  const double *X; /* device */
  int64_t n, dim, k, nb;
  double *closest, *trial, *best_trial, *dist, *blocks, *partial, *centers, *sums;
  int64_t *lab, *best_lab;
  int *changed;
  double *hc, *hcent, *hnext, *hsums, *hdist; /* host; hc and hdist pinned */
  cudaError_t err;
} km_run;

/* A copy ordered on the module's stream and waited for (a caller's stream
 * need not synchronize with the legacy default stream). */
static cudaError_t copy_now(cudaStream_t st, void *dst, const void *src, size_t bytes,
                            enum cudaMemcpyKind kind) {
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, st);
  return e == cudaSuccess ? cudaStreamSynchronize(st) : e;
}

static void *device_alloc(km_run *r, size_t bytes) {
  void *p = NULL;
  if (r->err == cudaSuccess) r->err = cudaMalloc(&p, bytes ? bytes : 8);
  return r->err == cudaSuccess ? p : NULL;
}

/* The sum of the nb block sums in `blocks`, in order. */
static double block_total(km_run *r) {
  double t = NAN;
  if (r->err == cudaSuccess) r->err = gstat_cu_km_sum(r->blocks, r->nb, 1, r->sums, r->s->stream);
  if (r->err == cudaSuccess)
    r->err = cudaMemcpyAsync(&t, r->sums, sizeof t, cudaMemcpyDeviceToHost, r->s->stream);
  if (r->err == cudaSuccess) r->err = cudaStreamSynchronize(r->s->stream);
  return t;
}

static void copy_point(km_run *r, int64_t i, int64_t c) {
  if (r->err == cudaSuccess)
    r->err = cudaMemcpyAsync(r->centers + c * r->dim, r->X + i * r->dim, sizeof(double) * r->dim,
                             cudaMemcpyDeviceToDevice, r->s->stream);
}

/* gstat_i_km_seed: the same draws, the distances on the device. */
static void seed(km_run *r, uint64_t *rng) {
  int64_t n = r->n, trials = 2 + (int64_t)log((double)r->k);
  cudaStream_t st = r->s->stream;
  copy_point(r, (int64_t)(gstat_i_xoshiro_uniform(rng) * (double)n), 0);
  if (r->err == cudaSuccess)
    r->err = gstat_cu_km_dist(r->X, n, r->dim, r->centers, NULL, r->closest, r->blocks, st);
  double pot = block_total(r);
  for (int64_t c = 1; c < r->k && r->err == cudaSuccess; c++) {
    int64_t last = 0;
    if (pot > 0 && r->err == cudaSuccess) { /* the picks walk the distances in order */
      r->err = copy_now(r->s->stream, r->hc, r->closest, sizeof(double) * (size_t)n,
                        cudaMemcpyDeviceToHost);
      last = gstat_i_km_running_sums(r->hc, n, r->hc); /* in place */
    }
    double best_pot = INFINITY;
    int64_t best = 0;
    for (int64_t t = 0; t < trials && r->err == cudaSuccess; t++) {
      int64_t cand =
          pot > 0 ? gstat_i_km_pick_sorted(r->hc, n, last, gstat_i_xoshiro_uniform(rng) * pot)
                  : (int64_t)(gstat_i_xoshiro_uniform(rng) * (double)n);
      r->err = gstat_cu_km_dist(r->X, n, r->dim, r->X + cand * r->dim, r->closest, r->trial,
                                r->blocks, st);
      double p = block_total(r);
      if (p < best_pot) {
        best_pot = p;
        best = cand;
        double *t2 = r->best_trial;
        r->best_trial = r->trial;
        r->trial = t2;
      }
    }
    copy_point(r, best, c);
    double *t2 = r->closest;
    r->closest = r->best_trial;
    r->best_trial = t2;
    pot = best_pot;
  }
}

/* gstat_i_km_update from the device's sums: the new centres (empty clusters
 * take the farthest points), uploaded; returns the shift. */
static double update(km_run *r) {
  int64_t k = r->k, dim = r->dim, w = dim + 1;
  cudaStream_t st = r->s->stream;
  r->err = gstat_cu_km_partial(r->X, r->n, dim, r->lab, k, r->partial, st);
  if (r->err == cudaSuccess) r->err = gstat_cu_km_sum(r->partial, r->nb, k * w, r->sums, st);
  if (r->err == cudaSuccess)
    r->err = copy_now(r->s->stream, r->hsums, r->sums, sizeof(double) * (size_t)(k * w),
                      cudaMemcpyDeviceToHost);
  bool dist_here = false;
  for (int64_t c = 0; c < k && r->err == cudaSuccess; c++) {
    double count = r->hsums[c * w + dim];
    if (count > 0) {
      for (int64_t a = 0; a < dim; a++) r->hnext[c * dim + a] = r->hsums[c * w + a] / count;
      continue;
    }
    if (!dist_here &&
        (r->err = copy_now(r->s->stream, r->hdist, r->dist, sizeof(double) * (size_t)r->n,
                           cudaMemcpyDeviceToHost)) != cudaSuccess)
      break;
    dist_here = true;
    int64_t far = gstat_i_km_take_farthest(r->hdist, r->n);
    r->err = copy_now(r->s->stream, r->hnext + c * dim, r->X + far * dim,
                      sizeof(double) * (size_t)dim, cudaMemcpyDeviceToHost);
  }
  double shift = gstat_i_km_shift(r->hnext, r->hcent, k * dim);
  double *t = r->hcent;
  r->hcent = r->hnext;
  r->hnext = t;
  if (r->err == cudaSuccess)
    r->err = copy_now(r->s->stream, r->centers, r->hcent, sizeof(double) * (size_t)(k * dim),
                      cudaMemcpyHostToDevice);
  return shift;
}

/* The nearest centres; whether a label changed (track); the inertia (total). */
static bool assign(km_run *r, bool track, double *total) {
  int h = 0;
  cudaStream_t st = r->s->stream;
  if (r->err == cudaSuccess) r->err = cudaMemsetAsync(r->changed, 0, sizeof(int), st);
  if (r->err == cudaSuccess)
    r->err = gstat_cu_km_assign(r->X, r->n, r->dim, r->centers, r->k, r->lab, r->dist, r->blocks,
                                r->changed, track, st);
  if (total) *total = block_total(r);
  if (track && r->err == cudaSuccess)
    r->err = copy_now(r->s->stream, &h, r->changed, sizeof h, cudaMemcpyDeviceToHost);
  return h != 0;
}

/* gstat_i_km_run on the device: the run's labels in r->lab. */
static double one_run(km_run *r, const gstat_i_kmeans_opt *opt, int64_t run, double tol,
                      int64_t *iters) {
  uint64_t rng[4];
  gstat_i_xoshiro_seed(rng, opt->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(run + 1)));
  seed(r, rng);
  if (r->err == cudaSuccess)
    r->err = copy_now(r->s->stream, r->hcent, r->centers, sizeof(double) * (size_t)(r->k * r->dim),
                      cudaMemcpyDeviceToHost);
  int64_t it = 0;
  while (it < opt->max_iter && r->err == cudaSuccess) {
    bool changed = assign(r, it > 0, NULL);
    if (it > 0 && !changed) break; /* strict */
    it++;
    if (update(r) <= tol) break;
  }
  *iters = it;
  double total = NAN;
  assign(r, false, &total);
  return total;
}

static void release(km_run *r, double *own_x, double *host_x) {
  void *dev[] = {own_x,      r->closest, r->trial, r->best_trial, r->dist,     r->blocks,
                 r->partial, r->centers, r->sums,  r->lab,        r->best_lab, r->changed};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
  cudaFreeHost(r->hc);
  cudaFreeHost(r->hdist);
  free(r->hcent);
  free(r->hnext);
  free(r->hsums);
  free(host_x);
}

/* The device buffers and host mirrors of a call (r->err, or NULL host arrays, on failure). */
static bool buffers(km_run *r) {
  size_t n = (size_t)r->n, kd = (size_t)(r->k * r->dim), kw = (size_t)(r->k * (r->dim + 1));
  r->closest = device_alloc(r, sizeof(double) * n);
  r->trial = device_alloc(r, sizeof(double) * n);
  r->best_trial = device_alloc(r, sizeof(double) * n);
  r->dist = device_alloc(r, sizeof(double) * n);
  r->blocks = device_alloc(r, sizeof(double) * (size_t)r->nb);
  r->partial = device_alloc(r, sizeof(double) * (size_t)r->nb * kw);
  r->centers = device_alloc(r, sizeof(double) * kd);
  r->sums = device_alloc(r, sizeof(double) * (kw + 1));
  r->lab = device_alloc(r, sizeof(int64_t) * n);
  r->best_lab = device_alloc(r, sizeof(int64_t) * n);
  r->changed = device_alloc(r, sizeof(int));
  /* pinned: each centre's pick copies all n distances back */
  if (r->err == cudaSuccess) r->err = cudaMallocHost((void **)&r->hc, sizeof(double) * n);
  if (r->err == cudaSuccess) r->err = cudaMallocHost((void **)&r->hdist, sizeof(double) * n);
  r->hcent = malloc(sizeof(double) * kd);
  r->hnext = malloc(sizeof(double) * kd);
  r->hsums = malloc(sizeof(double) * (kw + 1));
  return r->err == cudaSuccess && r->hc && r->hdist && r->hcent && r->hnext && r->hsums;
}

/* The embedding's rows on the device (*own: a copy made here) and on the host (*hx). */
static gstat_status place(km_run *r, const gstat_matrix *E, double **own, double **hx,
                          const double **host_rows) {
  size_t bytes = sizeof(double) * (size_t)(r->n * r->dim);
  if (E->location == GSTAT_HOST) {
    *host_rows = E->data;
    r->X = *own = device_alloc(r, bytes);
    if (r->err == cudaSuccess)
      r->err = copy_now(r->s->stream, *own, E->data, bytes, cudaMemcpyHostToDevice);
  } else { /* the tolerance needs the data's spread: one copy to the host */
    r->X = E->data;
    *host_rows = *hx = malloc(bytes ? bytes : 8);
    if (!*hx) return gstat_cu_host->fail(r->ctx, GSTAT_ENOMEM, "kmeans: no host memory");
    r->err = copy_now(r->s->stream, *hx, E->data, bytes, cudaMemcpyDeviceToHost);
  }
  return r->err == cudaSuccess ? GSTAT_OK
                               : gstat_cu_fail(r->ctx, "kmeans", "the embedding", r->err);
}

gstat_status gstat_cu_kmeans(void *state, gstat_ctx *ctx, const gstat_matrix *E,
                             const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                             int64_t *iterations) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  int64_t n = E->rows, dim = E->cols, k = opt->k;
  bool dense = E->dtype == GSTAT_F64 && E->col_stride == 1 && (n <= 1 || E->row_stride == dim);
  if (!dense || n < 1 || dim < 1 || k < 1 || dim > 22 || k * dim > 4096 ||
      (E->location == GSTAT_CUDA && E->device != s->device))
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "kmeans: the device takes dense row-major float64 rows of at most "
                               "22 columns and 4096 centre coordinates");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "kmeans: simulated device out of memory");
  km_run r = {.s = s, .ctx = ctx, .n = n, .dim = dim, .k = k, .err = cudaSuccess};
  r.nb = (n + GSTAT_CU_KM_THREADS - 1) / GSTAT_CU_KM_THREADS;
  double *own = NULL, *hx = NULL;
  const double *rows = NULL;
  gstat_status st = place(&r, E, &own, &hx, &rows);
  if (st == GSTAT_OK && !buffers(&r))
    st = r.err != cudaSuccess ? gstat_cu_fail(ctx, "kmeans", "buffers", r.err)
                              : gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "kmeans: no host memory");
  double tol = st == GSTAT_OK ? gstat_i_km_tol(rows, n, dim, opt->tol) : 0, best = INFINITY;
  for (int64_t run = 0; run < opt->n_init && st == GSTAT_OK; run++) {
    if (opt->tick && !opt->tick(opt->tick_arg, run * opt->max_iter, opt->n_init * opt->max_iter)) {
      st = GSTAT_ECANCELED; /* the tick's progress report set the message */
      break;
    }
    int64_t it = 0;
    double total = one_run(&r, opt, run, tol, &it);
    if (r.err == cudaSuccess && gstat_i_km_better(run, total, best)) {
      best = total;
      *iterations = it;
      r.err = cudaMemcpyAsync(r.best_lab, r.lab, sizeof(int64_t) * (size_t)n,
                              cudaMemcpyDeviceToDevice, s->stream);
    }
    if (r.err != cudaSuccess) st = gstat_cu_fail(ctx, "kmeans", "a run", r.err);
  }
  if (st == GSTAT_OK) {
    *inertia = best;
    r.err = copy_now(s->stream, labels, r.best_lab, sizeof(int64_t) * (size_t)n,
                     cudaMemcpyDeviceToHost);
    if (r.err != cudaSuccess) st = gstat_cu_fail(ctx, "kmeans", "the labels", r.err);
  }
  release(&r, own, hx);
  return st;
}
