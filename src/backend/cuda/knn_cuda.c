/*
 * Exact k nearest neighbours on the GPU (backend.h's knn primitive), the
 * same answer as the CPU's (src/backend/cpu/knn.c): the k best by (exact
 * float64 squared distance, index).
 *
 * Blocks of query rows against all points: squared distances from one cuBLAS
 * GEMM over a centred, power-of-two-scaled copy (a_ij = |y_i|^2 + |y_j|^2 -
 * 2 y_i.y_j in the data's precision), whose error is at most B_ij = c (|y_i|^2
 * + |y_j|^2) + eta (knn_bound). The kp-th smallest a + B bounds the true kp-th
 * exact distance from above, so every j with a_ij - B_ij at or below it is a
 * candidate and the candidates hold the true kp best. Their distances are
 * measured exactly (double, from the coordinates, rounded as the CPU rounds)
 * and ordered by (distance, index). A row with more candidates than its list
 * holds (ties: duplicates, lattices), or any row when k is large, gets every
 * exact distance, stably sorted. No n x n matrix is held: the block of rows
 * is sized by the device memory.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/knn_kernels.h"

#define TRY_CU(expr, what)                                             \
  do {                                                                 \
    cudaError_t e_ = (expr);                                           \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "knn", what, e_); \
  } while (0)

/* One search: the element's copies on the device and the request. */
typedef struct knn_job {
  gstat_cu_state *s;
  gstat_ctx *ctx;
  int cdt;
  size_t es;
  int64_t n, p, k, kp; /* kp: neighbours besides the point itself */
  bool include_self;
  const void *x; /* the coordinates, exactly (column-major, compute type) */
  void *y, *sq;  /* the centred, scaled copy and its squared norms */
  int64_t *nbr;  /* host outputs */
  double *d2;
} knn_job;

static size_t up256(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

/* Bytes a buffer of `role` may take: half of what is free now (its own
 * current size counted as free: it is replaced when it grows), at most half
 * of the state's budget. */
static size_t knn_budget(gstat_cu_state *s, gstat_cu_role role) {
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    free_b = s->free_bytes_cap;
  }
  free_b += s->dev[role].size;
  return (free_b < s->free_bytes_cap ? free_b : s->free_bytes_cap) / 2;
}

/* c and eta of B = c (sq_i + sq_j) + eta: the GEMM's dot products (gamma_p
 * of |y_i| |y_j| in any summation order), the norms' (gamma_p each), the
 * two roundings of a, the copy's rounding (about 4u of the norms), the
 * exact distances' own (gamma_{p+2} in double; D <= 2 (|y_i|^2 + |y_j|^2))
 * and underflow (eta), all doubled: the bound's own float arithmetic and the
 * norms' error stay inside the factor 2. */
static void knn_bound(int cdt, int64_t p, double *c, double *eta) {
  double u = cdt == GSTAT_F64 ? 0x1p-53 : 0x1p-24;
  double c0 = (double)(2 * p + 10) * u * 1.01 + (double)(2 * p + 8) * 0x1p-53;
  *c = 2 * c0;
  *eta = 2 * (double)(2 * p + 8) * (cdt == GSTAT_F64 ? 0x1p-1074 : 0x1p-149);
}

/* Row i's k slots from its kp best (j, d) in (distance, index) order:
 * itself added when include_self, sorted by index. */
typedef struct {
  int64_t j;
  double d;
} knn_pair;

static int by_index(const void *a, const void *b) {
  int64_t x = ((const knn_pair *)a)->j, y = ((const knn_pair *)b)->j;
  return (x > y) - (x < y);
}

static void finish_row(const knn_job *job, int64_t i, const double *d, const int *j, int64_t m,
                       knn_pair *tmp) {
  int64_t t = 0;
  if (job->include_self) tmp[t++] = (knn_pair){i, 0.0};
  for (int64_t q = 0; q < m && t < job->k; q++)
    if (j[q] != i) tmp[t++] = (knn_pair){j[q], d[q]};
  qsort(tmp, (size_t)job->k, sizeof *tmp, by_index);
  for (int64_t q = 0; q < job->k; q++) {
    job->nbr[i * job->k + q] = tmp[q].j;
    job->d2[i * job->k + q] = tmp[q].d;
  }
}

/* Up to g rows (listed in rows) by every exact distance, stably sorted;
 * returns how many it took (at least 1) in *took, bounded by the memory. */
static gstat_status sort_group(const knn_job *job, const int *rows, int64_t g, int64_t *took,
                               double *hd, int *hj, knn_pair *tmp) {
  gstat_cu_state *s = job->s;
  gstat_ctx *ctx = job->ctx;
  int64_t n = job->n, per = 24 * n + 8, m = job->kp + 1 < n ? job->kp + 1 : n;
  int64_t fit = (int64_t)(knn_budget(s, CU_KSORT) / (size_t)per);
  if (g > fit) g = fit > 1 ? fit : 1;
  if (g > INT32_MAX / n) g = INT32_MAX / n;
  if (g > 65535) g = 65535;
  size_t temp = 0, kb = up256((size_t)(g * n) * 8), vb = up256((size_t)(g * n) * 4);
  TRY_CU(gstat_cu_knn_sort_segments(NULL, NULL, NULL, NULL, g, n, NULL, NULL, &temp, s->stream),
         "sort size");
  size_t total = 2 * kb + 2 * vb + up256((size_t)(2 * g + 1) * 4) + temp;
  char *w = gstat_cu_buffer(s, ctx, CU_KSORT, total);
  if (!w) return GSTAT_ENOMEM;
  double *keys = (double *)w, *keys_out = (double *)(w + kb);
  int *vals = (int *)(w + 2 * kb), *vals_out = (int *)(w + 2 * kb + vb);
  int *offsets = (int *)(w + 2 * kb + 2 * vb), *drows = offsets + g + 1;
  void *tw = w + 2 * kb + 2 * vb + up256((size_t)(2 * g + 1) * 4);
  TRY_CU(cudaMemcpyAsync(drows, rows, (size_t)g * 4, cudaMemcpyHostToDevice, s->stream), "rows");
  TRY_CU(gstat_cu_knn_all_distances(job->cdt, job->x, n, job->p, drows, g, keys, vals, offsets,
                                    s->stream),
         "distances");
  TRY_CU(gstat_cu_knn_sort_segments(keys, vals, keys_out, vals_out, g, n, offsets, tw, &temp,
                                    s->stream),
         "sort");
  TRY_CU(cudaMemcpy2DAsync(hd, (size_t)m * 8, keys_out, (size_t)n * 8, (size_t)m * 8, (size_t)g,
                           cudaMemcpyDeviceToHost, s->stream),
         "sorted distances");
  TRY_CU(cudaMemcpy2DAsync(hj, (size_t)m * 4, vals_out, (size_t)n * 4, (size_t)m * 4, (size_t)g,
                           cudaMemcpyDeviceToHost, s->stream),
         "sorted indices");
  TRY_CU(cudaStreamSynchronize(s->stream), "sort");
  for (int64_t q = 0; q < g; q++) finish_row(job, rows[q], hd + q * m, hj + q * m, m, tmp);
  *took = g;
  return GSTAT_OK;
}

/* The listed rows by the exhaustive path, in groups. */
static gstat_status sort_rows(const knn_job *job, const int *rows, int64_t count) {
  int64_t m = job->kp + 1 < job->n ? job->kp + 1 : job->n, g = count < 65535 ? count : 65535;
  double *hd = malloc(sizeof(double) * (size_t)(g * m));
  int *hj = malloc(sizeof(int) * (size_t)(g * m));
  knn_pair *tmp = malloc(sizeof(knn_pair) * (size_t)job->k);
  gstat_status st = hd && hj && tmp ? GSTAT_OK
                                    : gstat_cu_host->fail(job->ctx, GSTAT_ENOMEM,
                                                          "knn: cannot allocate host scratch");
  for (int64_t done = 0, took = 0; st == GSTAT_OK && done < count; done += took)
    st = sort_group(job, rows + done, count - done < g ? count - done : g, &took, hd, hj, tmp);
  free(hd);
  free(hj);
  free(tmp);
  return st;
}

/* dots (n x nb) = Y Y[r0 .. r0 + nb)^T, without reduced-precision modes
 * (the error bound assumes IEEE arithmetic in the data's precision). */
static gstat_status block_dots(const knn_job *job, int64_t r0, int64_t nb, void *dots) {
  bool f64 = job->cdt == GSTAT_F64;
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  cudaDataType_t t = f64 ? CUDA_R_64F : CUDA_R_32F;
  cublasStatus_t st = cublasGemmEx(
      job->s->blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)job->n, (int)nb, (int)job->p,
      f64 ? (const void *)&one : (const void *)&onef, job->y, t, (int)job->n,
      (const char *)job->y + (size_t)r0 * job->es, t, (int)job->n,
      f64 ? (const void *)&zero : (const void *)&zerof, dots, t, (int)job->n,
      f64 ? CUBLAS_COMPUTE_64F_PEDANTIC : CUBLAS_COMPUTE_32F_PEDANTIC, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    return gstat_cu_host->fail(job->ctx, GSTAT_EBACKEND, "knn: cuBLAS gemm failed (%d)", (int)st);
  return GSTAT_OK;
}

/* Candidate list length: room for the kp best and the ties and near-ties
 * around the kp-th; 0 when kp is too large for the shared-memory sort. */
static int list_cap(int64_t kp) {
  int64_t want = 2 * kp > kp + 32 ? 2 * kp : kp + 32, cap = 64;
  while (cap < want) cap *= 2;
  return cap > GSTAT_CU_KNN_MAX_CAP ? 0 : (int)cap;
}

/* The candidates of rows r0 .. r0 + nb - 1 (dots: room for their GEMM block
 * unless the dimensions are low enough for the fused kernel). */
static cudaError_t candidates(const knn_job *job, bool fused, int64_t r0, int64_t nb, int cap,
                              void *dots, int *cand, int *count, gstat_status *st) {
  double c, eta;
  knn_bound(job->cdt, job->p, &c, &eta);
  if (fused)
    return gstat_cu_knn_fused_select(job->cdt, job->y, job->sq, job->n, job->p, r0, nb, job->kp, c,
                                     eta, cap, cand, count, job->s->stream);
  *st = block_dots(job, r0, nb, dots);
  if (*st != GSTAT_OK) return cudaSuccess;
  return gstat_cu_knn_select(job->cdt, dots, job->sq, job->n, r0, nb, job->kp, c, eta, cap, cand,
                             count, job->s->stream);
}

/* Every row by candidates (GEMM blocks, or in low dimensions the fused
 * kernel) and exact distances; rows that overflow their lists by the
 * exhaustive path. */
static gstat_status blocked_search(knn_job *job, int cap) {
  gstat_cu_state *s = job->s;
  gstat_ctx *ctx = job->ctx;
  int64_t n = job->n, k = job->k;
  bool fused = job->p <= GSTAT_CU_KNN_FUSED_MAX_P && job->kp <= GSTAT_CU_KNN_FUSED_MAX_KP;
  size_t dots_row = fused ? 0 : n * job->es;
  size_t per_row = dots_row + (size_t)cap * 4 + 8 + (size_t)k * 16 + 64;
  size_t budget = knn_budget(s, CU_KNN), dots_max = (size_t)4 << 30;
  int64_t rb = (int64_t)(budget / per_row);
  if (!fused && (size_t)rb * dots_row > dots_max) rb = (int64_t)(dots_max / dots_row);
  rb = rb < 1 ? 1 : rb > n ? n : rb;
  size_t o_cand = up256((size_t)rb * dots_row), o_cnt = o_cand + up256((size_t)rb * cap * 4);
  size_t o_ovf = o_cnt + up256((size_t)rb * 4), o_nbr = o_ovf + up256((size_t)rb * 4);
  size_t o_d2 = o_nbr + up256((size_t)(rb * k) * 8), total = o_d2 + up256((size_t)(rb * k) * 8);
  char *w = gstat_cu_buffer(s, ctx, CU_KNN, total);
  int *flags = malloc(sizeof(int) * (size_t)rb), *over = malloc(sizeof(int) * (size_t)rb);
  if (!w || !flags || !over) {
    free(flags);
    free(over);
    return w ? gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "knn: cannot allocate host scratch")
             : GSTAT_ENOMEM;
  }
  gstat_status st = GSTAT_OK;
  for (int64_t r0 = 0; r0 < n && st == GSTAT_OK; r0 += rb) {
    int64_t nb = n - r0 < rb ? n - r0 : rb, nover = 0;
    cudaError_t e =
        candidates(job, fused, r0, nb, cap, w, (int *)(w + o_cand), (int *)(w + o_cnt), &st);
    if (st == GSTAT_OK && e == cudaSuccess)
      e = gstat_cu_knn_exact(job->cdt, job->x, n, job->p, r0, nb, job->kp, job->include_self, cap,
                             (int *)(w + o_cand), (int *)(w + o_cnt), (int64_t *)(w + o_nbr),
                             (double *)(w + o_d2), (int *)(w + o_ovf), s->stream);
    if (st == GSTAT_OK && e == cudaSuccess)
      e = cudaMemcpyAsync(job->nbr + r0 * k, w + o_nbr, (size_t)(nb * k) * 8,
                          cudaMemcpyDeviceToHost, s->stream);
    if (st == GSTAT_OK && e == cudaSuccess)
      e = cudaMemcpyAsync(job->d2 + r0 * k, w + o_d2, (size_t)(nb * k) * 8, cudaMemcpyDeviceToHost,
                          s->stream);
    if (st == GSTAT_OK && e == cudaSuccess)
      e = cudaMemcpyAsync(flags, w + o_ovf, (size_t)nb * 4, cudaMemcpyDeviceToHost, s->stream);
    if (st == GSTAT_OK && e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
    if (st == GSTAT_OK && e != cudaSuccess) st = gstat_cu_fail(ctx, "knn", "search", e);
    for (int64_t r = 0; st == GSTAT_OK && r < nb; r++)
      if (flags[r]) over[nover++] = (int)(r0 + r);
    if (st == GSTAT_OK && nover > 0) st = sort_rows(job, over, nover);
  }
  free(flags);
  free(over);
  return st;
}

/* Every row by the exhaustive path (k too large for the candidate lists). */
static gstat_status exhaustive_search(knn_job *job) {
  int64_t chunk = 65536;
  int *rows = malloc(sizeof(int) * (size_t)(job->n < chunk ? job->n : chunk));
  if (!rows)
    return gstat_cu_host->fail(job->ctx, GSTAT_ENOMEM, "knn: cannot allocate host scratch");
  gstat_status st = GSTAT_OK;
  for (int64_t r0 = 0; r0 < job->n && st == GSTAT_OK; r0 += chunk) {
    int64_t nb = job->n - r0 < chunk ? job->n - r0 : chunk;
    for (int64_t r = 0; r < nb; r++) rows[r] = (int)(r0 + r);
    st = sort_rows(job, rows, nb);
  }
  free(rows);
  return st;
}

/* The element's exact copy (the caller's memory when it is one already),
 * its centred, scaled copy and norms. */
static gstat_status prepare(knn_job *job, const gstat_matrix *X, int64_t b) {
  gstat_cu_state *s = job->s;
  gstat_ctx *ctx = job->ctx;
  size_t xb = up256((size_t)(job->n * job->p) * job->es);
  size_t total = 2 * xb + up256((size_t)job->n * job->es) + up256((size_t)(2 * job->p + 1) * 8);
  char *w = gstat_cu_buffer(s, ctx, CU_DATA, total);
  if (!w) return GSTAT_ENOMEM;
  job->x = gstat_cu_dense(X, job->cdt, b);
  if (!job->x) {
    GSTAT_CU_TRY(gstat_cu_load(s, ctx, "knn", X, b, 1, job->cdt, w, NULL));
    job->x = w;
  }
  job->y = w + xb;
  job->sq = w + 2 * xb;
  double *stats = (double *)(w + 2 * xb + up256((size_t)job->n * job->es));
  TRY_CU(gstat_cu_knn_center(job->cdt, job->x, job->y, job->sq, job->n, job->p, stats, s->stream),
         "centring");
  return GSTAT_OK;
}

gstat_status gstat_cu_knn(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                          bool include_self, int64_t *nbr, double *d2) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  if (X->rows > INT32_MAX / 2 || X->cols > INT32_MAX || X->cols < 1)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "knn: n or p outside cuBLAS's int range, or no columns");
  if (gstat_cu_fault_now() == FAULT_OOM)
    return gstat_cu_host->fail(ctx, GSTAT_ENOMEM, "knn: simulated device out of memory");
  int cdt = gstat_cu_compute_dtype(X->dtype);
  knn_job job = {s,
                 ctx,
                 cdt,
                 gstat_cu_dtype_bytes(cdt),
                 X->rows,
                 X->cols,
                 k,
                 k - include_self,
                 include_self,
                 NULL,
                 NULL,
                 NULL,
                 nbr,
                 d2};
  if (job.kp == 0) { /* only the point itself */
    for (int64_t i = 0; i < job.n; i++) {
      nbr[i] = i;
      d2[i] = 0.0;
    }
    return GSTAT_OK;
  }
  GSTAT_CU_TRY(prepare(&job, X, b));
  /* float64 data near overflow can leave the centred copy non-finite: its
   * bound then says nothing, and every row takes the exact distances */
  int64_t bad = -1;
  gstat_matrix sqm = {.data = job.sq,
                      .dtype = (gstat_dtype)cdt,
                      .location = GSTAT_CUDA,
                      .device = s->device,
                      .batch = 1,
                      .rows = job.n,
                      .cols = 1,
                      .batch_stride = job.n,
                      .row_stride = 1,
                      .col_stride = job.n};
  GSTAT_CU_TRY(gstat_cu_first_nonfinite(s, ctx, "knn", &sqm, 0, &bad));
  int cap = list_cap(job.kp);
  return cap && bad < 0 ? blocked_search(&job, cap) : exhaustive_search(&job);
}
