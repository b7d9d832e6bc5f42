/*
 * The CPU backend's eigh_lowest primitive (backend.h): the few smallest
 * eigenpairs of a batch of symmetric matrices (graph Laplacians), by the
 * cheapest of its solvers: bisection and inverse iteration per matrix for
 * small orders (eigh_lowest.h), the top-k solver on the negated matrix for
 * one large matrix, or neither (the scheduler then runs the full eigh).
 * The crossovers are this backend's rules (bench/README.md, "Batch spectral
 * clustering" and "Threads on a shared machine").
 */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/matrix.h"
#include "backend/backend.h"
#include "backend/cpu/eigh_lowest.h"
#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"

/* Whether the m smallest pairs of n x n matrices are cheaper alone
 * (bisection and inverse iteration, a cost per pair) than a full eigh
 * (growing as n^3); bench/README.md, "Measurements moved from code
 * comments". */
static bool lowest_pays(int64_t n, int64_t m) {
  return n <= gstat_i_eigh_lowest_max_n() && (m + 1) * 4096 <= 4 * n * n;
}

static gstat_status each_lowest(gstat_ctx *ctx, gstat_matrix *A, const int64_t *m, int64_t mmax,
                                gstat_matrix *w, int64_t *info) {
  int64_t n = A->rows, cn = A->batch;
  bool f32 = A->dtype == GSTAT_F32;
  size_t lws = (gstat_i_eigh_lowest_workspace(n, mmax, f32 ? 4 : 8) + 63) / 64 * 64;
  double order = (double)n;
  int tn = gstat_i_loop_threads(
      ctx, cn, (double)cn * (4.0 / 3.0 * order + 2.0 * (double)mmax) * order * order,
      8.0 * (double)cn * order * order);
  char *scratch = gstat_i_workspace(ctx, GSTAT_WS_CPU, lws * (size_t)tn + 64);
  if (!scratch)
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "eigh_lowest: cannot allocate %zu bytes",
                        lws * (size_t)tn + 64);
  scratch += (64 - (uintptr_t)scratch % 64) % 64;
  size_t es = f32 ? 4 : 8;
  int64_t failed = 0;
#pragma omp parallel for num_threads(tn) schedule(dynamic, 4) if (tn > 1) reduction(+ : failed)
  for (int64_t c = 0; c < cn; c++) {
    int t = 0;
#ifdef _OPENMP
    t = omp_get_thread_num();
#endif
    void *work = scratch + lws * (size_t)t, *a = gstat_i_elem(A, c, 0, 0);
    void *wc = (char *)w->data + (size_t)(c * w->batch_stride) * es;
    info[c] = f32 ? gstat_i_eigh_lowest_f32(n, a, A->col_stride, m[c], wc, work)
                  : gstat_i_eigh_lowest_f64(n, a, A->col_stride, m[c], wc, work);
    failed += info[c] != 0;
  }
  return failed ? GSTAT_ENOCONV : GSTAT_OK;
}

#define NEGATE_LOWER(T)                                             \
  do {                                                              \
    T *a = (T *)A->data;                                            \
    for (int64_t j = 0; j < n; j++)                                 \
      for (int64_t i = j; i < n; i++) a[i + j * n] = -a[i + j * n]; \
  } while (0)
/* the top solver's answer for -A back in the order the full eigh leaves
 * A's: eigenvalues ascending (-reverse), their vectors in the first columns */
#define UNDO_TOP(T)                                                         \
  do {                                                                      \
    T *a = (T *)A->data, *v = (T *)w->data;                                 \
    for (int64_t i = 0; i < n / 2; i++) {                                   \
      T t = v[i];                                                           \
      v[i] = -v[n - 1 - i];                                                 \
      v[n - 1 - i] = -t;                                                    \
    }                                                                       \
    if (n % 2) v[n / 2] = -v[n / 2];                                        \
    for (int64_t c = 0; c < (m < n / 2 ? m : n / 2); c++) /* columns too */ \
      for (int64_t i = 0; i < n; i++) {                                     \
        T t = a[i + c * n];                                                 \
        a[i + c * n] = a[i + (n - 1 - c) * n];                              \
        a[i + (n - 1 - c) * n] = t;                                         \
      }                                                                     \
  } while (0)

/* One large matrix: its m smallest pairs as the m largest of -A (reduction,
 * every eigenvalue, m vectors by inverse iteration: 4/3 n^3 flops against
 * the full eigh's 9 n^3). */
static gstat_status lowest_by_top(gstat_ctx *ctx, gstat_matrix *A, int64_t m, gstat_matrix *w,
                                  int64_t *info) {
  int64_t n = A->rows;
  bool f32 = A->dtype == GSTAT_F32;
  if (f32)
    NEGATE_LOWER(float);
  else
    NEGATE_LOWER(double);
  gstat_status st = gstat_i_cpu_eigh_top(NULL, ctx, A, m, w);
  if (st == GSTAT_EUNSUPPORTED) { /* A back as it was: the full eigh is faster */
    if (f32)
      NEGATE_LOWER(float);
    else
      NEGATE_LOWER(double);
    return st;
  }
  info[0] = st == GSTAT_ENOCONV;
  if (st != GSTAT_OK) return st;
  if (f32)
    UNDO_TOP(float);
  else
    UNDO_TOP(double);
  return GSTAT_OK;
}
#undef NEGATE_LOWER
#undef UNDO_TOP

gstat_status gstat_i_cpu_eigh_lowest(void *state, gstat_ctx *ctx, gstat_matrix *A, const int64_t *m,
                                     gstat_matrix *w, int64_t *info) {
  (void)state;
  int64_t n = A->rows, mmax = 1;
  for (int64_t c = 0; c < A->batch; c++)
    if (m[c] > mmax) mmax = m[c];
  if (lowest_pays(n, mmax)) return each_lowest(ctx, A, m, mmax, w, info);
  if (A->batch == 1) return lowest_by_top(ctx, A, m[0], w, info);
  return GSTAT_EUNSUPPORTED;
}
