/*
 * The CUDA backend's weighted and missing-value co-moments (backend.h's
 * wcomoment, nan_rows, pairwise) on device data; host data are the CPU's
 * (host_cost declines them, and these entries refuse them).
 *
 * wcomoment: a dense copy in the compute type, kept-row means in double (two
 * passes, constant columns exact), the kept rows centred and scaled by
 * sqrt(w) and the others zeroed (no compaction), one cuBLAS syrk over all n
 * rows. pairwise: a float64 copy, each column shifted by its mean (its value
 * when constant), then masked GEMMs with m the presence mask and D the
 * weights: W = m^T D m, S = x0^T D m, Q = (x0 x0)^T D m, P = x0^T D x0 (and
 * WA with the analytic weights); moments_req.h turns them into the pair
 * co-moments on the host. An infinite value sends pairwise to the CPU.
 */
#include <stdint.h>
#include <string.h>

#include "backend/cuda/cuda_state.h"
#include "backend/cuda/kernels/moments_kernels.h"
#include "backend/cuda/moments_cuda.h"

#define TRY_CU(expr, what)                                                    \
  do {                                                                        \
    cudaError_t e_ = (expr);                                                  \
    if (e_ != cudaSuccess) return gstat_cu_fail(ctx, "covariance", what, e_); \
  } while (0)

#define TRY_BLAS(expr, what)                                                                 \
  do {                                                                                       \
    if ((expr) != CUBLAS_STATUS_SUCCESS)                                                     \
      return gstat_cu_host->fail(ctx, GSTAT_EBACKEND, "covariance: cuBLAS %s failed", what); \
  } while (0)

static gstat_status host_data(gstat_ctx *ctx) {
  return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "covariance: host data are the CPU's");
}

/* What the device entries take: X in device memory, n and p in cuBLAS's int. */
static gstat_status device_input(gstat_ctx *ctx, const gstat_matrix *X) {
  if (X->location != GSTAT_CUDA) return host_data(ctx);
  if (X->rows > INT32_MAX || X->cols > INT32_MAX)
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED,
                               "covariance: n or p exceeds cuBLAS's int range");
  return GSTAT_OK;
}

/* A leading dimension for cuBLAS, which wants >= 1 even for an empty extent. */
static int ld_of(int64_t rows) {
  return rows > 0 ? (int)rows : 1;
}

/* Element b of X as a dense column-major device matrix of dtype cdt: X's
 * own memory when it is one, else a copy into role's buffer. */
static const void *dense_input(gstat_cu_state *s, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                               int cdt, gstat_cu_role role, bool writable, gstat_status *st) {
  const void *x = writable ? NULL : gstat_cu_dense(X, cdt, b);
  if (x) return x;
  void *buf =
      gstat_cu_buffer(s, ctx, role, (size_t)(X->rows * X->cols) * gstat_cu_dtype_bytes(cdt));
  *st = buf ? gstat_cu_load(s, ctx, "covariance", X, b, 1, cdt, buf, NULL) : GSTAT_ENOMEM;
  return *st == GSTAT_OK ? buf : NULL;
}

gstat_status gstat_cu_nan_rows_op(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                  unsigned char *keep, int64_t *inf_at) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device); /* the context's GPU, whatever this thread's current one */
  GSTAT_CU_TRY(device_input(ctx, X));
  int64_t n = X->rows, p = X->cols;
  int cdt = gstat_cu_compute_dtype(X->dtype);
  *inf_at = -1;
  if (n == 0) return GSTAT_OK;
  gstat_status st = GSTAT_OK;
  const void *x = dense_input(s, ctx, X, b, cdt, CU_DATA, false, &st);
  unsigned long long *dinf = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(unsigned long long) + n);
  if (!x) return st;
  if (!dinf) return GSTAT_ENOMEM;
  unsigned char *dkeep = (unsigned char *)(dinf + 1);
  TRY_CU(cudaMemsetAsync(dinf, 0xff, sizeof *dinf, s->stream), "zeroing");
  TRY_CU(gstat_cu_nan_rows(cdt, x, n, p, dkeep, dinf, s->stream), "NaN rows");
  unsigned long long h = 0;
  TRY_CU(cudaMemcpyAsync(keep, dkeep, (size_t)n, cudaMemcpyDeviceToHost, s->stream), "rows");
  TRY_CU(cudaMemcpyAsync(&h, dinf, sizeof h, cudaMemcpyDeviceToHost, s->stream), "rows");
  TRY_CU(cudaStreamSynchronize(s->stream), "rows");
  *inf_at = h == UINT64_MAX ? -1 : (int64_t)h;
  return GSTAT_OK;
}

/* w and keep (host, n each, either NULL) to the device: dw, dkeep (NULL
 * where not given). */
static gstat_status upload_rows(gstat_cu_state *s, gstat_ctx *ctx, int64_t n, int64_t p,
                                const double *w, const unsigned char *keep, double **dmean,
                                double **dw, unsigned char **dkeep) {
  double *d = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)(p + n) + (size_t)n);
  if (!d) return GSTAT_ENOMEM;
  *dmean = d;
  *dw = w ? d + p : NULL;
  *dkeep = keep ? (unsigned char *)(d + p + n) : NULL;
  if (w)
    TRY_CU(cudaMemcpyAsync(*dw, w, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice, s->stream),
           "weights");
  if (keep)
    TRY_CU(cudaMemcpyAsync(*dkeep, keep, (size_t)n, cudaMemcpyHostToDevice, s->stream), "rows");
  return GSTAT_OK;
}

gstat_status gstat_cu_wcomoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                                const double *w, const unsigned char *keep, bool about_zero,
                                double *mean, double *M) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  GSTAT_CU_TRY(device_input(ctx, X));
  int64_t n = X->rows, p = X->cols;
  int cdt = gstat_cu_compute_dtype(X->dtype);
  size_t es = gstat_cu_dtype_bytes(cdt);
  gstat_status st = GSTAT_OK;
  void *x = (void *)dense_input(s, ctx, X, b, cdt, CU_DATA, true, &st); /* centred in place */
  void *S = gstat_cu_buffer(s, ctx, CU_COV, (size_t)(p * p) * es);
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, (size_t)(p * p) * es);
  if (!x) return st;
  if (!S || !h) return GSTAT_ENOMEM;
  double *dmean, *dw;
  unsigned char *dkeep;
  GSTAT_CU_TRY(upload_rows(s, ctx, n, p, w, keep, &dmean, &dw, &dkeep));
  TRY_CU(gstat_cu_kept_means(cdt, x, n, p, dw, dkeep, about_zero, dmean, s->stream), "means");
  TRY_CU(gstat_cu_kept_center(cdt, x, n, p, dw, dkeep, about_zero ? NULL : dmean, s->stream),
         "centring");
  const double one = 1, zero = 0;
  const float onef = 1, zerof = 0;
  if (cdt == GSTAT_F64)
    TRY_BLAS(cublasDsyrk(s->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, (int)p, (int)n, &one, x,
                         ld_of(n), &zero, S, ld_of(p)),
             "syrk");
  else
    TRY_BLAS(cublasSsyrk(s->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, (int)p, (int)n, &onef, x,
                         ld_of(n), &zerof, S, ld_of(p)),
             "syrk");
  TRY_CU(
      cudaMemcpyAsync(mean, dmean, sizeof(double) * (size_t)p, cudaMemcpyDeviceToHost, s->stream),
      "means");
  TRY_CU(cudaMemcpyAsync(h, S, (size_t)(p * p) * es, cudaMemcpyDeviceToHost, s->stream),
         "co-moment");
  TRY_CU(cudaStreamSynchronize(s->stream), "co-moment");
  for (int64_t j = 0; j < p; j++) /* the lower triangle, both ways, in double */
    for (int64_t i = j; i < p; i++) {
      double v = cdt == GSTAT_F64 ? h[i + j * p] : (double)((const float *)h)[i + j * p];
      M[i + j * p] = M[j + i * p] = v;
    }
  return GSTAT_OK;
}

/* out = A^T B (p x p) for dense n x p float64 A, B. */
static gstat_status gram(gstat_cu_state *s, gstat_ctx *ctx, int64_t n, int64_t p, const double *A,
                         const double *B, double *out) {
  const double one = 1, zero = 0;
  TRY_BLAS(cublasDgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)p, (int)p, (int)n, &one, A, ld_of(n),
                       B, ld_of(n), &zero, out, ld_of(p)),
           "gemm");
  return GSTAT_OK;
}

/* The masked products into G (W, S, Q, P, WA: p x p each): x is the float64
 * copy (made x0 on the way), B and T n x p scratch. */
static gstat_status masked_products(gstat_cu_state *s, gstat_ctx *ctx, int64_t n, int64_t p,
                                    double *x, const double *shift, const double *dw,
                                    const double *daw, double *B, double *T, double *G) {
  int64_t pp = p * p;
  cudaStream_t st = s->stream;
  TRY_CU(gstat_cu_pair_fill(1, x, n, p, NULL, dw, NULL, B, st), "mask"); /* B = D m */
  TRY_CU(gstat_cu_pair_fill(0, x, n, p, NULL, NULL, NULL, T, st), "mask");
  GSTAT_CU_TRY(gram(s, ctx, n, p, T, B, G)); /* W */
  if (daw) {
    TRY_CU(gstat_cu_pair_fill(2, x, n, p, NULL, NULL, daw, T, st), "mask");
    GSTAT_CU_TRY(gram(s, ctx, n, p, T, B, G + 4 * pp)); /* WA */
  }
  TRY_CU(gstat_cu_pair_fill(3, x, n, p, shift, NULL, NULL, x, st), "shift"); /* x0 */
  GSTAT_CU_TRY(gram(s, ctx, n, p, x, B, G + pp));                            /* S */
  TRY_CU(gstat_cu_pair_fill(4, x, n, p, NULL, NULL, NULL, T, st), "squares");
  GSTAT_CU_TRY(gram(s, ctx, n, p, T, B, G + 2 * pp)); /* Q */
  TRY_CU(gstat_cu_pair_fill(5, x, n, p, NULL, dw, NULL, T, st), "weights");
  return gram(s, ctx, n, p, x, T, G + 3 * pp); /* P */
}

gstat_status gstat_cu_pairwise(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                               const double *w, const double *aw, const gstat_i_pairwise_out *o) {
  gstat_cu_state *s = state;
  cudaSetDevice(s->device);
  GSTAT_CU_TRY(device_input(ctx, X));
  int64_t n = X->rows, p = X->cols, pp = p * p;
  size_t np = (size_t)(n * p) * sizeof(double);
  gstat_status st = GSTAT_OK;
  double *x = (double *)dense_input(s, ctx, X, b, GSTAT_F64, CU_DATA, true, &st);
  double *B = gstat_cu_buffer(s, ctx, CU_PROJ, np), *T = gstat_cu_buffer(s, ctx, CU_PART, np);
  double *G = gstat_cu_buffer(s, ctx, CU_COV, sizeof(double) * (size_t)(5 * pp));
  double *d = gstat_cu_buffer(s, ctx, CU_SUMS, sizeof(double) * (size_t)(p + 2 * n + 1));
  double *h = gstat_cu_host_buffer(s, ctx, &s->host_pca, sizeof(double) * (size_t)(3 * pp + p));
  if (!x) return st;
  if (!B || !T || !G || !d || !h) return GSTAT_ENOMEM;
  double *shift = d, *dw = w ? d + p : NULL, *daw = aw && o->WA ? d + p + n : NULL;
  unsigned *dinf = (unsigned *)(d + p + 2 * n), inf = 0;
  TRY_CU(cudaMemsetAsync(dinf, 0, sizeof *dinf, s->stream), "zeroing");
  if (dw)
    TRY_CU(cudaMemcpyAsync(dw, w, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice, s->stream),
           "weights");
  if (daw)
    TRY_CU(cudaMemcpyAsync(daw, aw, sizeof(double) * (size_t)n, cudaMemcpyHostToDevice, s->stream),
           "weights");
  TRY_CU(gstat_cu_pair_shift(x, n, p, shift, dinf, s->stream), "shift");
  TRY_CU(cudaMemcpyAsync(&inf, dinf, sizeof inf, cudaMemcpyDeviceToHost, s->stream), "flag");
  TRY_CU(cudaStreamSynchronize(s->stream), "flag");
  if (inf) /* x0 and its squares would turn it into NaN products: the CPU's loop */
    return gstat_cu_host->fail(ctx, GSTAT_EUNSUPPORTED, "covariance: an infinite value");
  GSTAT_CU_TRY(masked_products(s, ctx, n, p, x, shift, dw, daw, B, T, G));
  double *hS = h, *hQ = h + pp, *hP = h + 2 * pp, *hshift = h + 3 * pp;
  TRY_CU(cudaMemcpyAsync(o->W, G, sizeof(double) * (size_t)pp, cudaMemcpyDeviceToHost, s->stream),
         "results");
  TRY_CU(cudaMemcpyAsync(h, G + pp, sizeof(double) * (size_t)(3 * pp), cudaMemcpyDeviceToHost,
                         s->stream),
         "results");
  TRY_CU(
      cudaMemcpyAsync(hshift, shift, sizeof(double) * (size_t)p, cudaMemcpyDeviceToHost, s->stream),
      "results");
  if (daw)
    TRY_CU(cudaMemcpyAsync(o->WA, G + 4 * pp, sizeof(double) * (size_t)pp, cudaMemcpyDeviceToHost,
                           s->stream),
           "results");
  TRY_CU(cudaStreamSynchronize(s->stream), "results");
  gstat_i_pairwise_from_sums(p, n, hshift, hS, hQ, hP, o);
  return GSTAT_OK;
}
