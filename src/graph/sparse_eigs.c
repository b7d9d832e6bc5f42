/*
 * The k smallest eigenpairs of a large sparse symmetric operator, by one of
 * two methods built from the same parts (block orthogonalization, Rayleigh-
 * Ritz through gstat_eigh, thick restart, true-residual checks):
 *
 * - block Chebyshev-Davidson (default; after Zhou and Saad 2007, Zhou 2010):
 *   the basis grows by the b smallest unconverged Ritz vectors passed
 *   through a Chebyshev polynomial of degree d (16) that damps
 *   [cut, upper], cut = the largest Ritz value a restart keeps. One
 *   orthogonalization and one Rayleigh-Ritz per d + 1 block products.
 * - thick-restart block Lanczos (block Krylov-Schur: Stewart 2001; Wu and
 *   Simon 2000), the default for a block of one.
 *
 * Orthogonalization: block classical Gram-Schmidt, a Cholesky QR after each
 * pass (Lanczos: the first pass against the last two blocks only, then one
 * full pass, another when it removed much). A failing Cholesky or a column
 * that is roundoff goes to column-wise Gram-Schmidt, which replaces deflated
 * columns by random ones, so an exhausted Krylov space (a complete graph, a
 * small component) goes on correctly. Convergence seen in cheap estimates
 * (Lanczos: ||E s_i||; Davidson: the residuals the filter's first product
 * gives) is confirmed by true residuals before returning.
 *
 * Why. A graph Laplacian's wanted eigenvalues are packed against 0
 * (normalized, kNN graph of 10^5 points: lambda_2..8 = 7e-4..2e-3 in 3-D,
 * 4e-5..2e-4 in 2-D, on a spectrum reaching ~1.5), and we have products with
 * the operator only: no factorization (scikit-learn's ARPACK call is
 * shift-invert around -1e-5, i.e. a sparse LU of L) and no preconditioner.
 * That leaves polynomial (Krylov) methods, whose cost is set by the relative
 * gaps; shifting to upper I - L changes nothing for them (the Krylov space is
 * shift invariant), so we work on L.
 * 1. A block, by default of k: 0 repeats once per connected component, rings
 *    and square grids have pairs, and a start block of b vectors holds at
 *    most b copies of an eigenvalue; a single vector silently returns larger
 *    eigenvalues with small residuals.
 * 2. A block of k needs about k times a single vector's products (the
 *    polynomial degree needed is the same), and here a block product is not
 *    much cheaper per column (random gathers: 9.4 ms for 8 columns against
 *    12.8 ms for 8 single products, n = 10^5). What is left to gain is the
 *    orthogonalization, which block Lanczos pays every block step against a
 *    basis of ~100 vectors and Davidson once per d + 1 products: measured
 *    2-2.5x less time for Davidson at about the same number of products.
 * 3. LOBPCG without a preconditioner searches span(X, L X, previous X), the
 *    space Davidson has at degree 1: 5-10x the time of degree 16 below.
 * 4. A block of one (Lanczos) is the fastest where the caller knows there is
 *    no repeated eigenvalue, e.g. a connected kNN graph of data.
 *
 * Measured (bench/bench_sparse_eigs.c, one thread of this 2-core machine, CPU
 * seconds / operator columns, k = 8, tol 1e-8 x 2; normalized Laplacian of a
 * kNN graph, k = 10, n = 10^5):
 *
 *   graph              Davidson   Davidson   Davidson    block Lanczos  Lanczos    sklearn
 *                      d=16       d=10       d=1         b=8            b=1        arpack
 *   3-D uniform        4.9/2736   4.9/2832   42/13280    11.5/2288      3.0/687    430
 *   3-D 8 blobs        4.5/2600   4.5/2568   33/10592    8.8/1784       2.2/494    see below
 *   2-D uniform        9.8/6000   12.4/7584                             15.9/3474  8.2
 *
 * scikit-learn 1.9 spectral_embedding(eigen_solver="arpack") on the same
 * graphs (bench/sparse_eigs_vs_sklearn.py): its sparse LU fills in heavily in
 * 3-D and little in 2-D, where the shift-invert spectrum (1 / (lambda +
 * 1e-5)) converges in a few steps while the gaps of L itself are ~1e-5.
 *
 * Deterministic for a seed: the start block comes from it, our reductions
 * have a fixed order, and the CSR product sums each row in one thread.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/rng.h"
#include "graph/sparse_eigs.h"
#include "gstat/linalg.h"
#include "backend/dense.h"

#define TRY(expr)                      \
  do {                                 \
    status = (expr);                   \
    if (status != GSTAT_OK) goto done; \
  } while (0)

enum {
  DEFAULT_MAX_ITER = 10000,
  DEFAULT_DEGREE = 16,
  MAX_DEFAULT_BLOCK = 16,
  MAX_BLOCK = 256,
  SERIAL_BELOW_N = 4096, /* run single-threaded below this size */
  RESTART_CHUNK = 2048   /* rows per GEMM when the restart rotates the basis in place */
};
static const double DEFAULT_TOL = 1e-8;
/* A column that keeps less than this fraction of its norm through the
 * projections is roundoff: deflate it (replace by a random direction). */
static const double DEFLATE = 1e-12;
/* Cholesky QR loses orthogonality like cond(Y)^2 eps; the second round
 * repairs up to cond ~ 1/sqrt(eps), so refuse columns at angles below this. */
static const double CHOLQR_MIN_SINE = 1e-6;

typedef struct solver {
  gstat_ctx *ctx;
  gstat_i_apply_fn apply;
  void *op;
  int64_t n, k, b, m, p; /* size, wanted, block, largest basis, kept at a restart */
  double tol, scale;
  int scale_fixed;
  gstat_i_rng rng;
  int64_t j; /* basis columns; the next block F sits at columns j..j+b */
  double *Q; /* n x (m + b) */
  double *H; /* ldh x ldh, ldh = m + b; rows j..j+b, columns 0..j: E */
  int64_t ldh;
  double *S;             /* j x j Ritz coefficients (ld j) */
  double *theta;         /* j Ritz values, ascending */
  double *ES;            /* b x j: E S, its column norms are the residual estimates */
  double *est;           /* j residual estimates */
  double *C, *Cacc;      /* (m + b) x b projection coefficients (ld m + b) */
  double *G, *Racc, *Rt; /* b x b */
  double *T;             /* RESTART_CHUNK x m */
  double *coef;          /* m + b */
  double *norm0;         /* b: column norms of the block before any projection */
  double *F;             /* n x 3b: the filter's three blocks (Chebyshev-Davidson), scratch */
  int coupled;           /* Krylov-Schur: H carries the coupling E of the next block */
  int fresh;             /* Krylov-Schur: restarted, A F couples to every kept vector */
  int64_t degree;        /* Chebyshev filter degree */
  double upper;          /* top of the damped interval (a bound of the spectrum) */
  int64_t applies, iters, restarts, deflated;
} solver;

static gstat_status apply_block(solver *s, const double *X, int64_t cols, double *Y) {
  s->applies += cols;
  return s->apply(s->ctx, s->op, s->n, cols, X, Y);
}

/* C (rows lo..nq of a ld ldc array) = Q[:, lo:nq]^T Y; Y -= Q[:, lo:nq] C. */
static gstat_status project(solver *s, int64_t lo, int64_t nq, double *Y, int64_t cols, double *C,
                            int64_t ldc) {
  gstat_status status = GSTAT_OK;
  if (nq <= lo) return GSTAT_OK;
  const double *Ql = s->Q + lo * s->n;
  if (cols == 1) {
    TRY(gstat_i_gemv(s->ctx, GSTAT_F64, GSTAT_TRANS, s->n, nq - lo, 1.0, Ql, s->n, Y, 0.0, C + lo));
    TRY(gstat_i_gemv(s->ctx, GSTAT_F64, GSTAT_NO_TRANS, s->n, nq - lo, -1.0, Ql, s->n, C + lo, 1.0,
                     Y));
    goto done;
  }
  TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_TRANS, GSTAT_NO_TRANS, nq - lo, cols, s->n, 1.0, Ql,
                   s->n, Y, s->n, 0.0, C + lo, ldc));
  TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, s->n, cols, nq - lo, -1.0, Ql,
                   s->n, C + lo, ldc, 1.0, Y, s->n));
done:
  return status;
}

static double dot(const solver *s, const double *x, const double *y) {
  double acc = 0;
  for (int64_t i = 0; i < s->n; i++) acc += x[i] * y[i];
  return acc;
}

/* Cacc += C Racc over rows lo..nq (upper b x b Racc). */
static void accumulate(solver *s, int64_t lo, int64_t nq, const double *C) {
  int64_t b = s->b, ld = s->ldh;
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = lo; r < nq; r++) {
      double acc = 0;
      for (int64_t t = 0; t <= c; t++) acc += C[r + t * ld] * s->Racc[t + c * b];
      s->Cacc[r + c * ld] += acc;
    }
}

/* Racc = R Racc, both upper triangular b x b. */
static void chain(solver *s, const double *R) {
  int64_t b = s->b;
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r <= c; r++) {
      double acc = 0;
      for (int64_t t = r; t <= c; t++) acc += R[r + t * b] * s->Racc[t + c * b];
      s->Rt[r + c * b] = acc;
    }
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r < b; r++) s->Racc[r + c * b] = r <= c ? s->Rt[r + c * b] : 0;
}

/* Cholesky QR of Y (n x b) in place, given G = Y^T Y in s->G: Y = Z R, R
 * into the upper triangle of s->G. The Gram matrix is scaled to unit diagonal first, so that
 * columns of very different norms (a partly converged block) are fine; *ok = 0 (Y untouched) when a
 * column is nearly dependent on the ones before it (the scaled Cholesky's pivot, the sine of that
 * angle, is below CHOLQR_MIN_SINE) or kept less than DEFLATE of norm0 (NULL: no such test). */
static gstat_status cholqr(solver *s, double *Y, const double *norm0, int *ok) {
  gstat_status status = GSTAT_OK;
  int64_t b = s->b, info = 0;
  double *G = s->G, *d = s->Rt; /* Rt is free here: column norms */
  *ok = 0;
  for (int64_t c = 0; c < b; c++) {
    d[c] = sqrt(G[c + c * b]);
    if (!(d[c] > 0) || (norm0 && !(d[c] > DEFLATE * norm0[c]))) goto done;
  }
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r < b; r++) G[r + c * b] /= d[r] * d[c];
  TRY(gstat_i_potrf(s->ctx, GSTAT_F64, b, G, b, &info));
  if (info != 0) goto done;
  for (int64_t c = 0; c < b; c++)
    if (!(G[c + c * b] > CHOLQR_MIN_SINE)) goto done;
  /* L = D L_s, so G = L L^T; then Y L^{-T} */
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = c; r < b; r++) G[r + c * b] *= d[r];
  TRY(gstat_i_trsm(s->ctx, GSTAT_F64, true, GSTAT_LOWER, GSTAT_TRANS, GSTAT_NON_UNIT, s->n, b, 1.0,
                   G, b, Y, s->n));
  /* R = L^T into the upper triangle, zeros below */
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = c + 1; r < b; r++) {
      G[c + r * b] = G[r + c * b];
      G[r + c * b] = 0;
    }
  *ok = 1;
done:
  return status;
}

/* Column-wise Gram-Schmidt (twice, thrice when a pass cancels much) of Y
 * (the b columns after Q[:, 0:nq]) against the basis and the columns before
 * it: Y = Q C + Z R. A column that is roundoff (below DEFLATE of norm0) gets
 * R(c, c) = 0 and a random orthonormal replacement, which keeps the Krylov
 * relation exact (the replacement enters with coefficient 0). */
static gstat_status gram_schmidt(solver *s, int64_t nq, double *Y, const double *norm0) {
  gstat_status status = GSTAT_OK;
  int64_t b = s->b, n = s->n, ld = s->ldh;
  double *R = s->G;
  memset(s->C, 0, sizeof(double) * (size_t)(ld * b));
  memset(R, 0, sizeof(double) * (size_t)(b * b));
  for (int64_t c = 0; c < b; c++) {
    double *v = Y + c * n;
    int64_t nb = nq + c; /* Q and the finished columns of Y are contiguous */
    double before = sqrt(dot(s, v, v)), after = before;
    for (int pass = 0; pass < 3; pass++) {
      if (nb > 0) {
        TRY(project(s, 0, nb, v, 1, s->coef, nb));
        for (int64_t r = 0; r < nq; r++) s->C[r + c * ld] += s->coef[r];
        for (int64_t r = 0; r < c; r++) R[r + c * b] += s->coef[nq + r];
      }
      double prev = after;
      after = sqrt(dot(s, v, v));
      if (pass >= 1 && after > 0.5 * prev) break;
    }
    double ref = norm0 ? norm0[c] : before;
    if (after > DEFLATE * ref && after > 0) {
      R[c + c * b] = after;
      for (int64_t i = 0; i < n; i++) v[i] /= after;
      continue;
    }
    /* deflated: a random direction orthogonal to everything so far */
    s->deflated++;
    for (int attempt = 0;; attempt++) {
      if (attempt == 3 || nb >= n) {
        status = gstat_i_fail(s->ctx, GSTAT_EBACKEND,
                              "sparse_eigs: cannot extend the basis (%lld columns, n=%lld)",
                              (long long)nb, (long long)n);
        goto done;
      }
      for (int64_t i = 0; i < n; i++) v[i] = gstat_i_rng_normal(&s->rng);
      double r0 = sqrt(dot(s, v, v));
      for (int pass = 0; pass < 2; pass++) TRY(project(s, 0, nb, v, 1, s->coef, nb));
      double r1 = sqrt(dot(s, v, v));
      if (r1 > 1e-3 * r0) {
        for (int64_t i = 0; i < n; i++) v[i] /= r1;
        break;
      }
    }
  }
done:
  return status;
}

/* Orthonormalize the b columns Y = Q[:, nq:nq+b] against Q[:, 0:nq] and among
 * themselves: Y_in = Q Cacc + Z Racc, Z replacing Y. Rounds of (block
 * projection, Cholesky QR): the first against Q[:, lo:nq] only (Lanczos: the
 * columns A F can have components on in exact arithmetic), then against the
 * whole basis, once more when that removed much (Daniel, Gragg, Kaufman and
 * Stewart's criterion). A failing Cholesky hands the rest to gram_schmidt.
 * *finite = 0 when Y held NaN or Inf. */
static gstat_status orthonormalize(solver *s, int64_t lo, int64_t nq, int *finite) {
  gstat_status status = GSTAT_OK;
  int64_t b = s->b, ld = s->ldh;
  double *Y = s->Q + nq * s->n, *G = s->G;
  *finite = 1;
  memset(s->Cacc, 0, sizeof(double) * (size_t)(ld * b));
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r < b; r++) s->Racc[r + c * b] = r == c;
  for (int round = 0; round < 4; round++) {
    int64_t from = round == 0 ? lo : 0;
    TRY(project(s, from, nq, Y, b, s->C, ld));
    TRY(gstat_i_syrk(s->ctx, GSTAT_F64, GSTAT_TRANS, b, s->n, 1.0, Y, s->n, 0.0, G, b));
    double kept = INFINITY; /* smallest norm left, of unit columns (rounds >= 1) */
    for (int64_t c = 0; c < b; c++) {
      if (round == 0) {
        /* any NaN/Inf of Y reaches its coefficients and the Gram diagonal;
         * ||Y_in||^2 = ||C||^2 + ||Y||^2 (Pythagoras) */
        double sq = G[c + c * b];
        for (int64_t r = from; r < nq; r++) sq += s->C[r + c * ld] * s->C[r + c * ld];
        if (!isfinite(sq)) {
          *finite = 0;
          goto done;
        }
        s->norm0[c] = sqrt(sq);
      }
      kept = fmin(kept, sqrt(G[c + c * b]));
    }
    accumulate(s, from, nq, s->C);
    int ok = 0;
    TRY(cholqr(s, Y, round == 0 ? s->norm0 : NULL, &ok));
    if (!ok) {
      TRY(gram_schmidt(s, nq, Y, round == 0 ? s->norm0 : NULL));
      accumulate(s, 0, nq, s->C);
      chain(s, G);
      break;
    }
    chain(s, G);
    if (nq == 0 || (round >= 1 && kept > 0.5)) break;
  }
done:
  return status;
}

/* H[0:j+b, j:j+b] = C (ld ldc) and its mirror; within the diagonal block
 * the mean of the two computed triangles, so H stays exactly symmetric. */
static void set_block_column(solver *s, int64_t j, const double *C, int64_t ldc) {
  int64_t b = s->b, ld = s->ldh;
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r < j + b; r++) {
      double v = C[r + c * ldc];
      if (r >= j && r < j + c) v = 0.5 * (v + C[(j + c) + (r - j) * ldc]);
      s->H[r + (j + c) * ld] = v;
      s->H[(j + c) + r * ld] = v;
    }
}

/* Krylov-Schur step: Y = A F, orthonormalized into the next block; H grows
 * by the block column of coefficients and the new coupling E. */
static gstat_status expand(solver *s, int *finite) {
  gstat_status status = GSTAT_OK;
  int64_t j = s->j, b = s->b, n = s->n, ld = s->ldh;
  TRY(apply_block(s, s->Q + j * n, b, s->Q + (j + b) * n));
  TRY(orthonormalize(s, s->fresh ? 0 : (j >= b ? j - b : 0), j + b, finite));
  s->fresh = 0;
  if (!*finite) goto done;
  set_block_column(s, j, s->Cacc, ld);
  for (int64_t c = 0; c < b; c++) {
    for (int64_t r = 0; r < b; r++) s->H[(j + b + r) + (j + c) * ld] = s->Racc[r + c * b];
    for (int64_t col = 0; col < j; col++) s->H[(j + b + c) + col * ld] = 0;
  }
  s->j = j + b;
  s->iters++;
done:
  return status;
}

/* Davidson step: the block at columns j..j+b (already orthonormal to the
 * basis) joins it; H gains Q^T A Q_new, one block product. F[0:b] is used. */
static gstat_status add_block(solver *s, int *finite) {
  gstat_status status = GSTAT_OK;
  int64_t j = s->j, b = s->b, n = s->n, ld = s->ldh;
  TRY(apply_block(s, s->Q + j * n, b, s->F));
  TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_TRANS, GSTAT_NO_TRANS, j + b, b, n, 1.0, s->Q, n, s->F,
                   n, 0.0, s->C, ld));
  for (int64_t c = 0; c < b; c++)
    for (int64_t r = 0; r < j + b; r++)
      if (!isfinite(s->C[r + c * ld])) *finite = 0;
  if (!*finite) goto done;
  set_block_column(s, j, s->C, ld);
  s->j = j + b;
done:
  return status;
}

/* Ritz pairs of H (ascending); Krylov-Schur: residual estimates ||E s_i||
 * and the scale. */
static gstat_status rayleigh_ritz(solver *s) {
  gstat_status status = GSTAT_OK;
  int64_t j = s->j, b = s->b, ld = s->ldh;
  for (int64_t c = 0; c < j; c++) memcpy(s->S + c * j, s->H + c * ld, sizeof(double) * (size_t)j);
  gstat_matrix Sm = gstat_matrix_col_major(s->S, GSTAT_F64, 1, j, j);
  gstat_matrix wm = gstat_vector_batch(s->theta, GSTAT_F64, 1, j);
  TRY(gstat_i_eigh(s->ctx, &Sm, GSTAT_LOWER, &wm, &Sm, NULL));
  if (!s->coupled) goto done;
  TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, b, j, j, 1.0, s->H + j, ld,
                   s->S, j, 0.0, s->ES, b));
  for (int64_t i = 0; i < j; i++) {
    double acc = 0;
    for (int64_t r = 0; r < b; r++) acc += s->ES[r + i * b] * s->ES[r + i * b];
    s->est[i] = sqrt(acc);
  }
  if (!s->scale_fixed) {
    double big = fmax(fabs(s->theta[0]), fabs(s->theta[j - 1]));
    if (big > s->scale) s->scale = big;
  }
done:
  return status;
}

static double threshold(const solver *s, double lambda) {
  return s->tol * fmax(fabs(lambda), s->scale);
}

/* Keep the pp smallest Ritz vectors: Q[:, 0:pp] = Q[:, 0:j] S[:, 0:pp] (in
 * place, by row chunks), H = diag(theta), S = I; Krylov-Schur: the next
 * block moves to pp and the coupling becomes E S. Needs a preceding
 * rayleigh_ritz. */
static gstat_status restart(solver *s, int64_t pp) {
  gstat_status status = GSTAT_OK;
  int64_t j = s->j, b = s->b, n = s->n, ld = s->ldh;
  for (int64_t r0 = 0; r0 < n; r0 += RESTART_CHUNK) {
    int64_t rows = n - r0 < RESTART_CHUNK ? n - r0 : RESTART_CHUNK;
    TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, rows, pp, j, 1.0, s->Q + r0,
                     n, s->S, j, 0.0, s->T, rows));
    for (int64_t c = 0; c < pp; c++)
      memcpy(s->Q + r0 + c * n, s->T + c * rows, sizeof(double) * (size_t)rows);
  }
  /* ascending order is safe: destination columns lie before the source */
  if (pp != j && s->coupled)
    for (int64_t c = 0; c < b; c++)
      memmove(s->Q + (pp + c) * n, s->Q + (j + c) * n, sizeof(double) * (size_t)n);
  for (int64_t c = 0; c < pp + b; c++) memset(s->H + c * ld, 0, sizeof(double) * (size_t)(pp + b));
  for (int64_t i = 0; i < pp; i++) {
    s->H[i + i * ld] = s->theta[i];
    if (s->coupled)
      for (int64_t r = 0; r < b; r++) s->H[(pp + r) + i * ld] = s->ES[r + i * b];
  }
  /* the Ritz basis of the kept space is the identity now */
  for (int64_t c = 0; c < pp; c++)
    for (int64_t r = 0; r < pp; r++) s->S[r + c * pp] = r == c;
  s->j = pp;
  s->fresh = 1;
  s->restarts++;
done:
  return status;
}

/* ||y - th x|| for each of `cols` columns. */
static void residual_norms(const solver *s, const double *Y, const double *X, const double *th,
                           int64_t cols, double *out) {
  for (int64_t c = 0; c < cols; c++) {
    const double *x = X + c * s->n, *y = Y + c * s->n;
    double acc = 0;
    for (int64_t i = 0; i < s->n; i++) {
      double d = y[i] - th[c] * x[i];
      acc += d * d;
    }
    out[c] = sqrt(acc);
  }
}

/* True residual norms of the first cnt basis columns as Ritz vectors (values
 * theta), through `room` scratch columns at Y. */
static gstat_status true_residuals(solver *s, int64_t cnt, double *res, double *Y, int64_t room) {
  gstat_status status = GSTAT_OK;
  int64_t n = s->n;
  for (int64_t c0 = 0; c0 < cnt; c0 += room) {
    int64_t cols = cnt - c0 < room ? cnt - c0 : room;
    TRY(apply_block(s, s->Q + c0 * n, cols, Y));
    residual_norms(s, Y, s->Q + c0 * n, s->theta + c0, cols, res + c0);
    for (int64_t c = 0; c < cols; c++)
      if (!isfinite(res[c0 + c])) {
        status =
            gstat_i_fail(s->ctx, GSTAT_ENOTFINITE, "sparse_eigs: the operator returned NaN or Inf");
        goto done;
      }
  }
done:
  return status;
}

/* The library's sign rule: the largest-magnitude entry positive (first on ties). */
static void fix_sign(double *v, int64_t n) {
  int64_t arg = 0;
  for (int64_t i = 1; i < n; i++)
    if (fabs(v[i]) > fabs(v[arg])) arg = i;
  if (v[arg] < 0)
    for (int64_t i = 0; i < n; i++) v[i] = -v[i];
}

/* Small n: form the operator densely (applied to identity blocks) and solve it. */
static gstat_status solve_dense(gstat_ctx *ctx, int64_t n, gstat_i_apply_fn apply, void *op,
                                const gstat_i_eigs_options *opt, double tol, double *w, double *V,
                                double *resid, gstat_i_eigs_report *rep) {
  gstat_status status = GSTAT_OK;
  int64_t k = opt->k, bs = n < 64 ? n : 64;
  size_t elems = (size_t)(n * n + n * bs + n + n * k), bytes = elems * sizeof(double);
  double *mem = gstat_i_alloc(ctx, bytes);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "sparse_eigs: cannot allocate %zu bytes", bytes);
  double *A = mem, *X = A + n * n, *lam = X + n * bs, *Y = lam + n;
  for (int64_t c0 = 0; c0 < n; c0 += bs) {
    int64_t cols = n - c0 < bs ? n - c0 : bs;
    memset(X, 0, sizeof(double) * (size_t)(n * cols));
    for (int64_t c = 0; c < cols; c++) X[(c0 + c) + c * n] = 1;
    TRY(apply(ctx, op, n, cols, X, A + c0 * n));
    rep->operator_applies += cols;
  }
  for (int64_t i = 0; i < n * n; i++)
    if (!isfinite(A[i])) {
      status = gstat_i_fail(ctx, GSTAT_ENOTFINITE, "sparse_eigs: the operator returned NaN or Inf");
      goto done;
    }
  double scale = opt->upper;
  gstat_matrix Am = gstat_matrix_col_major(A, GSTAT_F64, 1, n, n);
  gstat_matrix wm = gstat_vector_batch(lam, GSTAT_F64, 1, n);
  TRY(gstat_i_eigh(ctx, &Am, GSTAT_LOWER, &wm, &Am, NULL));
  if (!(scale > 0)) scale = fmax(fabs(lam[0]), fabs(lam[n - 1]));
  TRY(apply(ctx, op, n, k, A, Y));
  rep->operator_applies += k;
  rep->converged = 0;
  rep->max_residual = 0;
  for (int64_t c = 0; c < k; c++) {
    double acc = 0;
    for (int64_t i = 0; i < n; i++) {
      double d = Y[i + c * n] - lam[c] * A[i + c * n];
      acc += d * d;
    }
    double r = sqrt(acc);
    if (resid) resid[c] = r;
    if (r <= tol * fmax(fabs(lam[c]), scale)) rep->converged++;
    rep->max_residual = fmax(rep->max_residual, r);
    w[c] = lam[c];
    memcpy(V + c * n, A + c * n, sizeof(double) * (size_t)n);
  }
  rep->scale = scale;
  rep->dense = 1;
  if (rep->converged < k)
    status = gstat_i_fail(ctx, GSTAT_ENOCONV,
                          "sparse_eigs: dense solve: %lld of %lld pairs meet the tolerance %g "
                          "(largest residual %.3g)",
                          (long long)rep->converged, (long long)k, tol, rep->max_residual);
done:
  gstat_i_free(ctx, mem, bytes);
  return status;
}

static gstat_status not_finite(solver *s) {
  return gstat_i_fail(s->ctx, GSTAT_ENOTFINITE,
                      "sparse_eigs: the operator returned NaN or Inf (iteration %lld)",
                      (long long)s->iters);
}

/* The seeded Gaussian start block, orthonormalized, at columns 0..b. */
static gstat_status start_block(solver *s) {
  int finite = 1;
  for (int64_t i = 0; i < s->n * s->b; i++) s->Q[i] = gstat_i_rng_normal(&s->rng);
  s->j = 0;
  return orthonormalize(s, 0, 0, &finite);
}

/* Thick-restart block Lanczos. res: the k true residuals at the end. */
static gstat_status krylov_schur(solver *s, int64_t max_iter, double *res, int64_t *nconv) {
  gstat_status status = GSTAT_OK;
  int64_t k = s->k, b = s->b, m = s->m;
  double strict = 1; /* tightened each time the estimates claim more than the truth */
  int finite = 1;
  s->coupled = 1;
  TRY(start_block(s));
  for (;;) {
    if (s->j + b > m) {
      TRY(restart(s, s->p));
      TRY(gstat_i_progress(s->ctx, "sparse_eigs", s->iters, max_iter));
    }
    TRY(expand(s, &finite));
    if (!finite) {
      status = not_finite(s);
      goto done;
    }
    int last = s->iters >= max_iter && s->j >= k;
    /* Rayleigh-Ritz costs ~9 j^3 flops against the step's ~4 n j b: on small
     * problems look at convergence only when the basis is full */
    if (!last && s->j + b <= m && 2 * s->j * s->j > s->n * b) continue;
    TRY(rayleigh_ritz(s));
    if (s->j < k) continue;
    int64_t est_conv = 0;
    for (int64_t i = 0; i < k; i++)
      if (s->est[i] <= strict * threshold(s, s->theta[i])) est_conv++;
    if (est_conv < k && !last) continue;
    /* the Ritz vectors to the front, then the true residuals decide */
    TRY(restart(s, s->p < s->j ? s->p : s->j));
    TRY(true_residuals(s, k, res, s->Q + (s->j + b) * s->n, m - s->j));
    *nconv = 0;
    for (int64_t i = 0; i < k; i++)
      if (res[i] <= threshold(s, s->theta[i])) ++*nconv;
    if (*nconv == k || last) break;
    strict *= 0.1;
  }
done:
  return status;
}

/* In place over n x cols: Z = alpha (Z - c Y) - beta X (X NULL: no term). */
static void cheb_combine(const solver *s, int64_t cols, double *Z, const double *Y, const double *X,
                         double c, double alpha, double beta) {
  int64_t len = s->n * cols;
  int nt = gstat_i_loop_threads(s->ctx, len, 4.0 * (double)len, 32.0 * (double)len);
  if (X) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < len; i++) Z[i] = alpha * (Z[i] - c * Y[i]) - beta * X[i];
  } else {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t i = 0; i < len; i++) Z[i] = alpha * (Z[i] - c * Y[i]);
  }
}

/* out = p(A) X for X = F[0:b]: the Chebyshev polynomial of degree d that is
 * small on [a, up] and 1 at a0 < a, by the scaled three-term recurrence
 * (y_i = T_i(L(A)) x / T_i(L(a0)), L mapping [a, up] to [-1, 1], so nothing
 * overflows whatever the degree). The first product also gives the residual
 * norms of X's columns as Ritz vectors with values th (rx). Uses F[0:3b]. */
static gstat_status cheb_filter(solver *s, double a0, double a, double up, const double *th,
                                double *rx, double *out) {
  gstat_status status = GSTAT_OK;
  int64_t n = s->n, b = s->b;
  double e = (up - a) / 2, c = (up + a) / 2, t0 = (a0 - c) / e;
  double *X = s->F, *Y = X + n * b, *Z = Y + n * b;
  TRY(apply_block(s, X, b, Y));
  residual_norms(s, Y, X, th, b, rx);
  double sig = 1 / t0;
  cheb_combine(s, b, Y, X, NULL, c, sig / e, 0);
  for (int64_t deg = 2; deg <= s->degree; deg++) {
    double sig1 = 1 / (2 * t0 - sig);
    TRY(apply_block(s, Y, b, Z));
    cheb_combine(s, b, Z, Y, X, c, 2 * sig1 / e, sig * sig1);
    double *t = X;
    X = Y;
    Y = Z;
    Z = t;
    sig = sig1;
  }
  memcpy(out, Y, sizeof(double) * (size_t)(n * b));
done:
  return status;
}

/* An upper bound of the spectrum when the caller has none: a few Lanczos
 * steps from a seeded vector, the largest Ritz value plus the last
 * off-diagonal (Zhou and Saad's safeguarded estimate), 1% margin. */
static gstat_status estimate_upper(solver *s, double *upper) {
  gstat_status status = GSTAT_OK;
  enum { STEPS = 24 };
  int64_t n = s->n, steps = STEPS < n ? STEPS : n;
  double *v0 = s->F, *v = v0 + n, *w = v + n, alpha[STEPS], beta[STEPS];
  double T[STEPS * STEPS], lam[STEPS];
  for (int64_t i = 0; i < n; i++) v[i] = gstat_i_rng_normal(&s->rng), v0[i] = 0;
  double nv = sqrt(dot(s, v, v));
  for (int64_t i = 0; i < n; i++) v[i] /= nv;
  double bprev = 0;
  int64_t t = 0;
  for (; t < steps; t++) {
    TRY(apply_block(s, v, 1, w));
    alpha[t] = dot(s, w, v);
    for (int64_t i = 0; i < n; i++) w[i] -= alpha[t] * v[i] + bprev * v0[i];
    beta[t] = sqrt(dot(s, w, w));
    if (!isfinite(alpha[t]) || !isfinite(beta[t])) {
      status = not_finite(s);
      goto done;
    }
    if (beta[t] <= 1e-12 * fabs(alpha[t])) { /* invariant subspace: exact */
      t++;
      break;
    }
    for (int64_t i = 0; i < n; i++) {
      v0[i] = v[i];
      v[i] = w[i] / beta[t];
    }
    bprev = beta[t];
  }
  memset(T, 0, sizeof T);
  for (int64_t i = 0; i < t; i++) {
    T[i + i * t] = alpha[i];
    if (i + 1 < t) T[(i + 1) + i * t] = T[i + (i + 1) * t] = beta[i];
  }
  gstat_matrix Tm = gstat_matrix_col_major(T, GSTAT_F64, 1, t, t);
  gstat_matrix lm = gstat_vector_batch(lam, GSTAT_F64, 1, t);
  TRY(gstat_i_eigh(s->ctx, &Tm, GSTAT_LOWER, &lm, NULL, NULL));
  *upper = lam[t - 1] + beta[t - 1];
  *upper += 0.01 * fmax(fabs(*upper), lam[t - 1] - lam[0]);
done:
  return status;
}

/* Block Chebyshev-Davidson. res: the k true residuals at the end. */
static gstat_status cheb_davidson(solver *s, int64_t max_iter, double *res, int64_t *nconv) {
  gstat_status status = GSTAT_OK;
  int64_t k = s->k, b = s->b, m = s->m, n = s->n;
  int64_t nc = 0; /* leading Ritz pairs taken as converged (not filtered again) */
  double rx[MAX_BLOCK];
  int finite = 1;
  s->coupled = 0;
  TRY(start_block(s));
  TRY(add_block(s, &finite));
  s->iters++;
  if (!finite) {
    status = not_finite(s);
    goto done;
  }
  for (;;) {
    TRY(rayleigh_ritz(s));
    int last = s->iters >= max_iter && s->j >= k; /* k Ritz pairs to return */
    if (nc >= k || last) {
      /* the Ritz vectors to the front, then the true residuals decide */
      TRY(restart(s, s->p < s->j ? s->p : s->j));
      TRY(true_residuals(s, k, res, s->F, 3 * b));
      *nconv = 0;
      for (nc = 0; nc < k && res[nc] <= threshold(s, s->theta[nc]); nc++) continue;
      for (int64_t i = 0; i < k; i++)
        if (res[i] <= threshold(s, s->theta[i])) ++*nconv;
      if (*nconv == k || last) break;
    }
    if (s->j + b > m) {
      TRY(restart(s, s->p));
      TRY(gstat_i_progress(s->ctx, "sparse_eigs", s->iters, max_iter));
    }
    /* filter the b smallest Ritz vectors not yet converged; damp everything
     * above the largest Ritz value a restart would keep (>= lambda_p by
     * interlacing, so the wanted end and the guard vectors are amplified;
     * measured: 20 % fewer products than damping above the largest one) */
    int64_t j = s->j;
    TRY(gstat_i_gemm(s->ctx, GSTAT_F64, GSTAT_NO_TRANS, GSTAT_NO_TRANS, n, b, j, 1.0, s->Q, n,
                     s->S + nc * j, j, 0.0, s->F, n));
    double a0 = s->theta[0], a = s->theta[(s->p < j ? s->p : j) - 1], up = s->upper;
    if (!(a < up)) a = 0.5 * (a0 + up);
    if (a0 > a) a0 = a;
    TRY(cheb_filter(s, a0, a, up, s->theta + nc, rx, s->Q + j * n));
    for (int64_t c = 0; c < b; c++)
      if (!isfinite(rx[c])) {
        status = not_finite(s);
        goto done;
      }
    /* rx are true residuals of the Ritz vectors nc, nc + 1, ...: the leading
     * converged ones are not filtered again */
    for (int64_t c = 0; c < b && nc < k && rx[c] <= threshold(s, s->theta[nc]); c++) nc++;
    TRY(orthonormalize(s, 0, j, &finite));
    if (finite) TRY(add_block(s, &finite));
    if (!finite) {
      status = not_finite(s);
      goto done;
    }
    s->iters++;
  }
done:
  return status;
}

/* The iteration (validated arguments, n >= 2 (m + b)). */
static gstat_status solve_iterative(gstat_ctx *ctx, int64_t n, gstat_i_apply_fn apply, void *op,
                                    const gstat_i_eigs_options *opt, int davidson, int64_t b,
                                    int64_t m, double tol, int64_t max_iter, double *w, double *V,
                                    double *resid, gstat_i_eigs_report *rep) {
  gstat_status status = GSTAT_OK;
  int64_t k = opt->k;
  solver s;
  memset(&s, 0, sizeof s);
  s.ctx = ctx;
  s.apply = apply;
  s.op = op;
  s.n = n;
  s.k = k;
  s.b = b;
  s.m = m;
  /* keep the wanted pairs plus half of the rest (at least what the method
   * needs), leaving room for a step */
  s.p = k + (m - k - b) / 2;
  if (davidson && s.p < k + b) s.p = k + b;
  s.tol = tol;
  s.scale = opt->upper;
  s.scale_fixed = opt->upper > 0;
  s.upper = opt->upper;
  s.degree = opt->degree ? opt->degree : DEFAULT_DEGREE;
  s.ldh = m + b;
  gstat_i_rng_seed(&s.rng, opt->seed);

  size_t ld = (size_t)(m + b), chunk = (size_t)(n < RESTART_CHUNK ? n : RESTART_CHUNK);
  size_t qn, bytes = 0;
  size_t small = ld * ld + (size_t)(m * m) + 3 * (size_t)m + (size_t)(b * m) + 2 * ld * (size_t)b +
                 3 * (size_t)(b * b) + chunk * (size_t)m + ld + (size_t)b;
  /* the basis, plus three blocks of scratch (filter, residual checks) */
  if (!gstat_i_mul_size((size_t)n, ld + 3 * (size_t)b, &qn) ||
      !gstat_i_add_size(qn, small, &bytes) || !gstat_i_mul_size(bytes, sizeof(double), &bytes))
    return gstat_i_fail(ctx, GSTAT_ENOMEM, "sparse_eigs: n=%lld x basis %lld overflows",
                        (long long)n, (long long)(m + 4 * b));
  double *mem = gstat_i_alloc(ctx, bytes);
  if (!mem) return gstat_i_fail(ctx, GSTAT_ENOMEM, "sparse_eigs: cannot allocate %zu bytes", bytes);
  s.Q = mem;
  s.F = s.Q + (size_t)n * ld;
  s.H = s.Q + qn;
  s.S = s.H + ld * ld;
  s.theta = s.S + m * m;
  s.est = s.theta + m;
  double *res = s.est + m;
  s.ES = res + m;
  s.C = s.ES + b * m;
  s.Cacc = s.C + ld * b;
  s.G = s.Cacc + ld * b;
  s.Racc = s.G + b * b;
  s.Rt = s.Racc + b * b;
  s.T = s.Rt + b * b;
  s.coef = s.T + chunk * m;
  s.norm0 = s.coef + ld;

  TRY(gstat_i_progress(ctx, "sparse_eigs", 0, max_iter));
  int64_t nconv = 0;
  if (davidson) {
    if (!(s.upper > 0)) {
      TRY(estimate_upper(&s, &s.upper));
      s.scale = s.upper;
      s.scale_fixed = 1;
    }
    TRY(cheb_davidson(&s, max_iter, res, &nconv));
  } else {
    TRY(krylov_schur(&s, max_iter, res, &nconv));
  }

  for (int64_t c = 0; c < k; c++) {
    w[c] = s.theta[c];
    memcpy(V + c * n, s.Q + c * n, sizeof(double) * (size_t)n);
    fix_sign(V + c * n, n);
    if (resid) resid[c] = res[c];
    rep->max_residual = fmax(rep->max_residual, res[c]);
  }
  rep->converged = nconv;
  if (nconv < k)
    status = gstat_i_fail(ctx, GSTAT_ENOCONV,
                          "sparse_eigs: %lld of %lld eigenpairs converged in %lld iterations "
                          "(largest residual %.3g, tolerance %g x %.3g)",
                          (long long)nconv, (long long)k, (long long)s.iters, rep->max_residual,
                          tol, s.scale);
done:
  rep->iterations = s.iters;
  rep->operator_applies += s.applies;
  rep->restarts = s.restarts;
  rep->deflated = s.deflated;
  rep->scale = s.scale;
  gstat_i_free(ctx, mem, bytes);
  return status;
}

gstat_status gstat_i_sparse_eigs(gstat_ctx *ctx, int64_t n, gstat_i_apply_fn apply, void *op,
                                 const gstat_i_eigs_options *opt, double *w, double *V,
                                 double *resid, gstat_i_eigs_report *report) {
  gstat_status status = GSTAT_OK;
  gstat_i_eigs_report rep_local, *rep = report ? report : &rep_local;
  memset(rep, 0, sizeof *rep);
  if (!ctx) return GSTAT_EINVAL;
  if (!apply || !opt || !w || !V)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "sparse_eigs: apply, options, w and V must not be NULL");
  int64_t k = opt->k;
  if (n < 1 || k < 1 || k > n)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "sparse_eigs: k=%lld must be in [1, n=%lld]",
                        (long long)k, (long long)n);
  if (!(opt->tol >= 0) || !(opt->upper >= 0) || !isfinite(opt->tol) || !isfinite(opt->upper))
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "sparse_eigs: tol=%g and upper=%g must be finite and >= 0", opt->tol,
                        opt->upper);
  if (opt->max_iter < 0 || opt->block < 0 || opt->basis < 0 || opt->degree < 0 ||
      opt->block > MAX_BLOCK ||
      (opt->method != GSTAT_I_EIGS_AUTO && opt->method != GSTAT_I_EIGS_CHEBYSHEV_DAVIDSON &&
       opt->method != GSTAT_I_EIGS_BLOCK_LANCZOS))
    return gstat_i_fail(ctx, GSTAT_EINVAL,
                        "sparse_eigs: max_iter, block (<= %d), basis and degree must be >= 0 and "
                        "the method known",
                        MAX_BLOCK);
  int64_t b = opt->block ? opt->block : (k < MAX_DEFAULT_BLOCK ? k : MAX_DEFAULT_BLOCK);
  /* a block of one converges the wanted pairs one after another under a
   * filter; Lanczos suits it (see the measurements at the top) */
  int davidson =
      opt->method == GSTAT_I_EIGS_CHEBYSHEV_DAVIDSON || (opt->method == GSTAT_I_EIGS_AUTO && b > 1);
  int64_t m = opt->basis;
  if (m == 0 && davidson) m = 6 * b > k + 3 * b ? 6 * b : k + 3 * b;
  if (m == 0 && !davidson) {
    m = 4 * k > k + 12 * b ? 4 * k : k + 12 * b;
    int64_t cap = k + 4 * b > 128 ? k + 4 * b : 128; /* memory: n (m + 4b) doubles */
    m = m < cap ? m : cap;
  }
  /* Davidson keeps >= k + b at a restart (the block filtered next lies
   * inside) and adds a block; Krylov-Schur keeps >= k */
  int64_t m_min = davidson ? k + 2 * b : k + b;
  if (m < m_min)
    return gstat_i_fail(ctx, GSTAT_EINVAL, "sparse_eigs: basis=%lld must be >= %lld", (long long)m,
                        (long long)m_min);
  double tol = opt->tol > 0 ? opt->tol : DEFAULT_TOL;
  int64_t max_iter = opt->max_iter ? opt->max_iter : DEFAULT_MAX_ITER;
  /* threads cost more than they give on small problems (and slow the
   * valgrind runs to a crawl with spinning workers) */
  int threads = ctx->num_threads;
  if (n < SERIAL_BELOW_N) ctx->num_threads = 1;
  if (n < 2 * (m + b))
    status = solve_dense(ctx, n, apply, op, opt, tol, w, V, resid, rep);
  else
    status =
        solve_iterative(ctx, n, apply, op, opt, davidson, b, m, tol, max_iter, w, V, resid, rep);
  ctx->num_threads = threads;
  return status;
}
