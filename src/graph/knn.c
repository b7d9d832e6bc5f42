/* Blocked pairwise distances (||x||^2 + ||y||^2 - 2 x.y through the GEMM of
 * src/linalg/dense.h) and k-nearest-neighbour selection by a bounded heap. */
#include <stdlib.h>

#include "graph/knn.h"
#include "linalg/dense.h"

/* ~32 MiB of distances per block, at least one row */
static int64_t block_rows(int64_t n) {
  int64_t b = n > 0 ? ((int64_t)1 << 22) / n : 1;
  if (b < 1) b = 1;
  return b < n ? b : n;
}

int64_t gstat_i_pairwise_scratch(int64_t n) {
  return n * block_rows(n) + n + 1;
}

gstat_status gstat_i_pairwise_rows(gstat_ctx *ctx, int64_t n, int64_t p, const double *X,
                                   double *block, gstat_i_dist_row_fn row, void *user) {
  int64_t B = block_rows(n);
  double *sq = block + n * B;
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t c = 0; c < p; c++) s += X[i + c * n] * X[i + c * n];
    sq[i] = s;
  }
  for (int64_t r0 = 0; r0 < n; r0 += B) {
    int64_t nb = n - r0 < B ? n - r0 : B;
    /* column r of the block: x_j . x_{r0+r} for every j */
    gstat_status st = gstat_i_gemm(ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_TRANS, n, nb, p, 1.0, X, n,
                                   X + r0, n, 0.0, block, n);
    if (st != GSTAT_OK) return st;
#pragma omp parallel for num_threads(ctx->num_threads) schedule(dynamic, 8) if (nb * n > 100000)
    for (int64_t r = 0; r < nb; r++) {
      double *d2 = block + r * n;
      int64_t i = r0 + r;
      for (int64_t j = 0; j < n; j++) {
        double v = sq[i] + sq[j] - 2.0 * d2[j];
        d2[j] = v > 0 ? v : 0.0;
      }
      d2[i] = 0.0;
      row(user, i, d2);
    }
  }
  return GSTAT_OK;
}

typedef struct knn_job {
  int64_t n, k;
  bool self;
  int64_t *nbr;
  double *d2;
} knn_job;

/* (d, j) ordered by distance, then index */
static bool worse(double da, int64_t ja, double db, int64_t jb) {
  return da > db || (da == db && ja > jb);
}

static void sift_down(double *hd, int64_t *hj, int64_t size, int64_t at) {
  for (;;) {
    int64_t l = 2 * at + 1, r = l + 1, top = at;
    if (l < size && worse(hd[l], hj[l], hd[top], hj[top])) top = l;
    if (r < size && worse(hd[r], hj[r], hd[top], hj[top])) top = r;
    if (top == at) return;
    double td = hd[at];
    int64_t tj = hj[at];
    hd[at] = hd[top];
    hj[at] = hj[top];
    hd[top] = td;
    hj[top] = tj;
    at = top;
  }
}

static void knn_row(void *user, int64_t i, const double *d2) {
  knn_job *job = user;
  int64_t k = job->k, *hj = job->nbr + i * k, size = 0;
  double *hd = job->d2 + i * k;
  int64_t want = job->self ? k - 1 : k; /* others than i */
  double *od = hd + (job->self ? 1 : 0);
  int64_t *oj = hj + (job->self ? 1 : 0);
  /* a max-heap of the `want` best (worst on top) */
  for (int64_t j = 0; j < job->n && want > 0; j++) {
    if (j == i) continue;
    if (size < want) {
      od[size] = d2[j];
      oj[size] = j;
      size++;
      for (int64_t at = size - 1; at > 0;) { /* sift up */
        int64_t up = (at - 1) / 2;
        if (!worse(od[at], oj[at], od[up], oj[up])) break;
        double td = od[at];
        int64_t tj = oj[at];
        od[at] = od[up];
        oj[at] = oj[up];
        od[up] = td;
        oj[up] = tj;
        at = up;
      }
    } else if (worse(od[0], oj[0], d2[j], j)) {
      od[0] = d2[j];
      oj[0] = j;
      sift_down(od, oj, size, 0);
    }
  }
  if (job->self) {
    hd[0] = 0.0;
    hj[0] = i;
  }
  /* sort the row by index (insertion: k is small) */
  for (int64_t a = 1; a < k; a++) {
    double td = hd[a];
    int64_t tj = hj[a], b = a;
    for (; b > 0 && hj[b - 1] > tj; b--) {
      hd[b] = hd[b - 1];
      hj[b] = hj[b - 1];
    }
    hd[b] = td;
    hj[b] = tj;
  }
}

gstat_status gstat_i_knn(gstat_ctx *ctx, int64_t n, int64_t p, const double *X, double *block,
                         int64_t k, bool include_self, int64_t *nbr, double *d2) {
  knn_job job = {n, k, include_self, nbr, d2};
  return gstat_i_pairwise_rows(ctx, n, p, X, block, knn_row, &job);
}
