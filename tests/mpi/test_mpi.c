/*
 * gstat_mpi against single-process gstat, run under mpirun with 1, 2 and 3
 * ranks: covariance, correlation, PCA and batch spectral clustering on
 * uneven splits (one rank holds no rows / no graphs), and bad input on one
 * rank (every rank must return the same status and message, no hang: ctest's
 * TIMEOUT bounds it). Plain C with a failure counter: one output per rank.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gstat/gstat.h"
#include "gstat/mpi.h"
#include "mpi_check.h"

/* Rows [lo, hi) of rank r: uneven, and rank 1 (when there is one) holds none. */
static void split(int64_t n, int r, int64_t *lo, int64_t *hi) {
  int64_t w[8], tot = 0, acc = 0;
  for (int i = 0; i < size; i++) tot += w[i] = (i == 1 ? 0 : i + 2);
  for (int i = 0; i < r; i++) acc += w[i];
  *lo = n * acc / tot;
  *hi = n * (acc + w[r]) / tot;
}

static void test_covariance_pca(gstat_mpi *m, gstat_ctx *ctx) {
  enum { N = 211, P = 6 };
  static double X[N * P], w[N];
  for (int64_t i = 0; i < N; i++) {
    w[i] = (double)(1 + i % 3);
    for (int j = 0; j < P; j++) X[i * P + j] = 1e4 * (j + 1) + uniform() * (j + 1) + 0.3 * X[i * P];
  }
  int64_t lo, hi;
  split(N, rank, &lo, &hi);
  gstat_matrix Xl = gstat_matrix_row_major(X + lo * P, GSTAT_F64, 1, hi - lo, P);
  gstat_matrix Xa = gstat_matrix_row_major(X, GSTAT_F64, 1, N, P);
  for (int variant = 0; variant < 4; variant++) {
    gstat_cov_options o;
    gstat_cov_options_init(&o);
    o.correlation = variant & 1;
    double Cref[P * P], mref[P], C[P * P], mean[P];
    if (variant >= 2) o.ddof = 0, o.fweights = w;
    gstat_matrix Cr = gstat_matrix_row_major(Cref, GSTAT_F64, 1, P, P);
    gstat_matrix Mr = gstat_vector_batch(mref, GSTAT_F64, 1, P);
    CHECK(gstat_covariance(ctx, &Xa, &o, &Cr, &Mr) == GSTAT_OK);
    if (variant >= 2) o.fweights = w + lo;
    int root = variant == 3 ? size - 1 : GSTAT_MPI_ALL_RANKS;
    gstat_matrix Cd = gstat_matrix_row_major(C, GSTAT_F64, 1, P, P);
    gstat_matrix Md = gstat_vector_batch(mean, GSTAT_F64, 1, P);
    int recv = root == GSTAT_MPI_ALL_RANKS || root == rank;
    gstat_status st =
        gstat_mpi_covariance(m, ctx, &Xl, &o, root, recv ? &Cd : NULL, recv ? &Md : NULL);
    CHECK(st == GSTAT_OK);
    if (recv) {
      close_rel(C, Cref, P * P, 1e-12, "covariance");
      close_rel(mean, mref, P, 1e-12, "mean");
    }
  }
  /* PCA, plain and scaled, against gstat_pca on all the rows */
  for (int scale = 0; scale < 2; scale++) {
    gstat_pca_options o;
    gstat_pca_options_init(&o);
    o.scale = scale;
    o.n_components = 4;
    gstat_pca_result *ref = NULL, *res = NULL;
    CHECK(gstat_pca(ctx, &Xa, &o, &ref) == GSTAT_OK);
    CHECK(gstat_mpi_pca(m, ctx, &Xl, &o, GSTAT_MPI_ALL_RANKS, &res) == GSTAT_OK);
    if (res && ref) {
      CHECK(res->n_components == 4 && res->n_samples == N);
      close_rel(res->components, ref->components, 4 * P, 1e-12, "components");
      close_rel(res->explained_variance, ref->explained_variance, 4, 1e-12, "explained_variance");
      close_rel(res->explained_variance_ratio, ref->explained_variance_ratio, 4, 1e-12, "ratio");
      close_rel(res->singular_values, ref->singular_values, 4, 1e-12, "singular_values");
      close_rel(res->mean, ref->mean, P, 1e-12, "pca mean");
      close_rel(res->scale, ref->scale, P, 1e-12, "pca scale");
      close_rel(res->noise_variance, ref->noise_variance, 1, 1e-12, "noise_variance");
    }
    gstat_pca_result_free(ref);
    gstat_pca_result_free(res);
  }
  /* bad input on the last rank holding rows: NaN -> GSTAT_ENOTFINITE on every rank */
  int bad = size == 2 ? 0 : size - 1; /* with 2 ranks, rank 1 holds no rows */
  double saved = X[lo * P];
  if (rank == bad) X[lo * P] = NAN;
  gstat_pca_result *res = NULL;
  gstat_status st = gstat_mpi_pca(m, ctx, &Xl, NULL, GSTAT_MPI_ALL_RANKS, &res);
  same_everywhere(m, st, GSTAT_ENOTFINITE);
  gstat_pca_result_free(res);
  res = NULL;
  X[lo * P] = saved;
  /* a rank with another p, and a rank passing NULL */
  gstat_matrix Xp = Xl;
  if (rank == size - 1) Xp.cols = P - 1, Xp.rows = 0;
  st = gstat_mpi_pca(m, ctx, &Xp, NULL, 0, &res);
  same_everywhere(m, st, GSTAT_EINVAL); /* one rank: no rows at all */
  gstat_pca_result_free(res);
  double C[P * P];
  gstat_matrix Cd = gstat_matrix_row_major(C, GSTAT_F64, 1, P, P);
  st = gstat_mpi_covariance(m, ctx, rank == size - 1 ? NULL : &Xl, NULL, GSTAT_MPI_ALL_RANKS, &Cd,
                            NULL);
  same_everywhere(m, st, GSTAT_EINVAL);
  /* the accumulator reduce keeps a non-root rank's own data */
  gstat_cov_accum *acc = NULL;
  CHECK(gstat_cov_accum_create(ctx, P, GSTAT_MISSING_EVERYTHING, &acc) == GSTAT_OK);
  if (hi > lo) CHECK(gstat_cov_accum_add(ctx, acc, &Xl, NULL) == GSTAT_OK);
  CHECK(gstat_mpi_cov_accum_reduce(m, ctx, acc, 0) == GSTAT_OK);
  CHECK(gstat_cov_accum_rows(acc) == (rank == 0 ? N : hi - lo));
  gstat_cov_accum_destroy(acc);
}

/* A ragged CSR batch of two-community graphs (a bridge joins them). */
typedef struct {
  int64_t count, total, node_offsets[16], *offsets, *indices;
} batch;

static void make_batch(batch *b, int64_t count, const int64_t *sizes, int disconnect) {
  b->count = count;
  b->node_offsets[0] = 0;
  for (int64_t g = 0; g < count; g++) b->node_offsets[g + 1] = b->node_offsets[g] + sizes[g];
  b->total = b->node_offsets[count];
  b->offsets = malloc(sizeof(int64_t) * (size_t)(b->total + 1));
  b->indices = malloc(sizeof(int64_t) * (size_t)(b->total * b->total + 1));
  int64_t e = 0;
  b->offsets[0] = 0;
  for (int64_t g = 0; g < count; g++) {
    int64_t n = sizes[g], base = b->node_offsets[g], h = n / 2;
    for (int64_t i = 0; i < n; i++) {
      for (int64_t j = 0; j < n; j++) {
        int same = (i < h) == (j < h);
        int bridge = (i == h - 1 && j == h) || (i == h && j == h - 1);
        if (disconnect == g) bridge = 0;
        if (i != j && ((same && (i + j) % 3 != 0) || bridge)) b->indices[e++] = base + j;
      }
      b->offsets[base + i + 1] = e;
    }
  }
}

static void test_spectral(gstat_mpi *m, gstat_ctx *ctx) {
  static const int64_t sizes[] = {12, 40, 9, 64, 20, 18, 30, 10};
  for (int variant = 0; variant < 3; variant++) {
    int64_t count = variant == 1 ? 1 : 8; /* one graph: the other ranks get none */
    batch b;
    make_batch(&b, count, sizes, variant == 2 ? 5 : -1);
    int64_t ks[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    if (variant == 2) ks[5] = 1; /* disconnected with k = 1 < 2 components: that graph fails */
    gstat_graph_batch G;
    memset(&G, 0, sizeof G);
    G.format = GSTAT_GRAPH_CSR;
    G.count = count;
    G.node_offsets = b.node_offsets;
    G.offsets = b.offsets;
    G.indices = b.indices;
    int64_t *ref = malloc(sizeof(int64_t) * (size_t)b.total),
            *lab = malloc(sizeof(int64_t) * (size_t)b.total);
    gstat_spectral_batch_result *r = NULL;
    gstat_status want = gstat_spectral_clustering_batch(ctx, &G, ks, NULL, ref, &r);
    CHECK(want == (variant == 2 ? GSTAT_EINVAL : GSTAT_OK));
    for (int root = -1; root < (variant == 0 ? size : 0); root++) {
      gstat_status gs[8];
      int64_t ku[8];
      memset(lab, 0x5a, sizeof(int64_t) * (size_t)b.total);
      gstat_status st =
          gstat_mpi_spectral_clustering_batch(m, ctx, &G, ks, NULL, root, lab, gs, ku);
      same_everywhere(m, st, want);
      if (root == -1 || root == rank) {
        CHECK(memcmp(lab, ref, sizeof(int64_t) * (size_t)b.total) == 0);
        for (int64_t g = 0; r && g < count; g++)
          CHECK(gs[g] == r->status[g] && ku[g] == r->n_clusters[g]);
      }
    }
    gstat_spectral_batch_result_free(r);
    /* a rank that passes a different batch: EINVAL everywhere, no hang */
    if (variant == 0) {
      G.count = rank == size - 1 ? 7 : 8;
      gstat_status st =
          gstat_mpi_spectral_clustering_batch(m, ctx, &G, ks, NULL, -1, lab, NULL, NULL);
      same_everywhere(m, st, size > 1 ? GSTAT_EINVAL : GSTAT_OK);
      /* a bad CSR index in the graph rank size-1 owns: EINVAL everywhere, nothing written */
      G.count = 8;
      int64_t saved = b.indices[b.offsets[b.node_offsets[7]]];
      b.indices[b.offsets[b.node_offsets[7]]] = -5;
      memset(lab, 0x5a, sizeof(int64_t) * (size_t)b.total);
      st = gstat_mpi_spectral_clustering_batch(m, ctx, &G, ks, NULL, -1, lab, NULL, NULL);
      same_everywhere(m, st, GSTAT_EINVAL);
      CHECK(lab[0] == 0x5a5a5a5a5a5a5a5a);
      b.indices[b.offsets[b.node_offsets[7]]] = saved;
    }
    free(ref);
    free(lab);
    free(b.offsets);
    free(b.indices);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gstat_ctx_options co;
  gstat_ctx_options_init(&co);
  co.num_threads = 1;
  gstat_ctx *ctx = NULL;
  gstat_mpi *m = NULL;
  CHECK(gstat_ctx_create(&ctx, &co) == GSTAT_OK);
  CHECK(gstat_mpi_create(MPI_COMM_WORLD, &m) == GSTAT_OK);
  if (size > 8) {
    if (rank == 0) fprintf(stderr, "test_mpi: at most 8 ranks\n");
    failures++;
  } else {
    test_covariance_pca(m, ctx);
    test_spectral(m, ctx);
  }
  gstat_mpi_destroy(m);
  gstat_ctx_destroy(ctx);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("test_mpi: %d ranks, %d failed checks\n", size, total);
  MPI_Finalize();
  return total ? 1 : 0;
}
