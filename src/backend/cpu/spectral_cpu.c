/*
 * The batch spectral engine's two steps on host memory (backend.h's
 * sc_laplacians and sc_assign, spectral_req.h), a graph per thread: the
 * graph code's reading, components and Laplacian formulas
 * (graph/dense_rules.h) and the engine's assignment (spectral/assign_impl.h),
 * so results are the CUDA module's and the host engine's, bit for bit.
 */
#include <string.h>

#include "backend/cpu/primitives_cpu.h"
#include "backend/dense.h"
#include "graph/dense_rules.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int thread_id(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* A dense column-major batch with unit row stride (what the engine passes). */
static bool dense(const gstat_matrix *M) {
  return M->row_stride == 1 && M->col_stride == M->rows &&
         (M->batch <= 1 || M->batch_stride == M->rows * M->cols);
}

/* Graph g's Laplacian (n x n in W, column-major) into element g of L,
 * padded to N with the decoupled diagonal `pad`. */
static void store_padded(const double *W, int64_t n, double pad, const gstat_matrix *L, int64_t g) {
  int64_t N = L->rows;
  size_t at = (size_t)(g * N * N);
  for (int64_t j = 0; j < N; j++)
    for (int64_t i = 0; i < N; i++) {
      double v = i < n && j < n ? W[i + j * n] : i == j ? pad : 0.0;
      if (L->dtype == GSTAT_F64)
        ((double *)L->data)[at + (size_t)(i + j * N)] = v;
      else
        ((float *)L->data)[at + (size_t)(i + j * N)] = (float)v;
    }
}

gstat_status gstat_i_cpu_sc_laplacians(void *state, gstat_ctx *ctx, const gstat_i_sc_lap_req *r) {
  (void)state;
  const gstat_matrix *A = r->A;
  int64_t count = A->batch, N = A->rows;
  gstat_self_loops loops = r->drop_loops ? GSTAT_LOOPS_DROP : GSTAT_LOOPS_KEEP;
  gstat_symmetrize sym = (gstat_symmetrize)r->sym;
  if (!dense(r->L) || !dense(r->deg) || r->deg->dtype != GSTAT_F64 ||
      (r->L->dtype != GSTAT_F32 && r->L->dtype != GSTAT_F64))
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "spectral_batch: Laplacians are dense F32/F64");
  if (count == 0 || N == 0) return GSTAT_OK;
  double bytes = 8.0 * (double)(count * N * N);
  int nt = gstat_i_loop_threads(ctx, count, 30.0 * bytes / 8.0, bytes);
  size_t per = (size_t)(N * N + 2 * N);
  double *scr = gstat_i_alloc(ctx, per * (size_t)nt * sizeof(double));
  if (!scr) return gstat_i_fail(ctx, GSTAT_ENOMEM, "spectral_batch: cannot allocate scratch");
  int64_t bad = 0; /* L is the engine's workspace: one pass reads, checks and builds */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4) reduction(| : bad) if (nt > 1)
  for (int64_t g = 0; g < count; g++) {
    double *W = scr + per * (size_t)thread_id(), *d = (double *)r->deg->data + g * N;
    int64_t n = r->sizes[g], *lab = (int64_t *)(W + N * N);
    gstat_i_err err = {0};
    if (gstat_i_dense_adjacency(&err, "spectral_batch", "", A, g, n, sym, loops, W) != GSTAT_OK) {
      bad = 1;
      continue;
    }
    r->comps[g] = gstat_i_dense_components(n, W, lab, lab + n);
    gstat_i_dense_laplacian(n, W, (gstat_laplacian_kind)r->kind, d);
    double maxdeg = 0;
    for (int64_t j = 0; j < N; j++) {
      if (j >= n) d[j] = 0;
      maxdeg = d[j] > maxdeg ? d[j] : maxdeg;
    }
    store_padded(W, n, r->kind == GSTAT_LAPLACIAN_UNNORMALIZED ? 2 * maxdeg + 1 : 3.0, r->L, g);
  }
  gstat_i_free(ctx, scr, per * (size_t)nt * sizeof(double));
  if (bad) /* the host engine names the entry, or skips the graph in a batch */
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "spectral_batch: a graph has an invalid weight");
  return GSTAT_OK;
}

/* Graph g of the request: its first m pairs in double, then the assignment. */
static void assign_one(const gstat_i_sc_assign_req *r, int64_t g, int64_t mmax, double *scr) {
  int64_t N = r->V->rows, n = r->sizes[g], k = r->k[g];
  int64_t m = gstat_i_sc_eig_count_impl(&r->opt, n, k);
  double *Vd = scr, *wd = Vd + n * mmax, *E = wd + mmax, *work = E + n * mmax;
  size_t at = (size_t)(g * N * N);
  for (int64_t c = 0; c < m; c++) {
    wd[c] = r->W->dtype == GSTAT_F64 ? ((const double *)r->W->data)[g * N + c]
                                     : ((const float *)r->W->data)[g * N + c];
    for (int64_t i = 0; i < n; i++)
      Vd[i + c * n] = r->V->dtype == GSTAT_F64
                          ? ((const double *)r->V->data)[at + (size_t)(i + c * N)]
                          : ((const float *)r->V->data)[at + (size_t)(i + c * N)];
  }
  gstat_i_sc_rec rec = {0};
  rec.comps = r->comps[g];
  double *eig = r->eigenvalues ? r->eigenvalues + r->eig0[g] : NULL;
  gstat_i_sc_assign_graph(&r->opt, n, k, r->info[g], Vd, wd, (const double *)r->deg->data + g * N,
                          &rec, r->labels + r->node0[g], eig, E, work);
  r->k_used[g] = rec.k;
  r->iters[g] = rec.iters;
  r->why[g] = rec.why;
  r->inertia[g] = rec.inertia;
}

gstat_status gstat_i_cpu_sc_assign(void *state, gstat_ctx *ctx, const gstat_i_sc_assign_req *r) {
  (void)state;
  if (!dense(r->V) || !dense(r->W) || !dense(r->deg) || r->V->dtype != r->W->dtype)
    return gstat_i_fail(ctx, GSTAT_EUNSUPPORTED, "spectral_batch: eigenpairs are dense F32/F64");
  int64_t count = r->V->batch, N = r->V->rows;
  if (count == 0 || N == 0) return GSTAT_OK;
  int64_t mmax = gstat_i_sc_assign_pairs(r);
  size_t per = (size_t)gstat_i_sc_assign_scratch(N, mmax);
  int nt = gstat_i_loop_threads(ctx, count, 3000.0 * (double)(count * N * mmax * mmax),
                                8.0 * (double)(count * N * mmax));
  double *scr = gstat_i_alloc(ctx, per * (size_t)nt * sizeof(double));
  if (!scr) return gstat_i_fail(ctx, GSTAT_ENOMEM, "spectral_batch: cannot allocate scratch");
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nt > 1)
  for (int64_t g = 0; g < count; g++) assign_one(r, g, mmax, scr + per * (size_t)thread_id());
  gstat_i_free(ctx, scr, per * (size_t)nt * sizeof(double));
  return GSTAT_OK;
}
