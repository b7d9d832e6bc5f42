/* The matrix families of the solver tests (issue 30): LAPACK-style planted
 * spectra, diagonal and rotated, scaled toward overflow and underflow,
 * random, banded, rank-deficient, repeated, graded, and mixed batches.
 * Each element comes with what is known of it (its spectrum, whether it is
 * positive definite once rounded to its dtype), so that tests check the
 * answers by ratios, not against another library. */
#ifndef GSTAT_FAMILIES_H
#define GSTAT_FAMILIES_H

#include <stdbool.h>
#include <stdint.h>

#include "testutil.h"

typedef enum {
  TF_ZERO,
  TF_IDENTITY,
  TF_DIAG_EVEN, /* positive diagonal, shuffled: spectra from 1 down to ulp */
  TF_DIAG_GEOMETRIC,
  TF_DIAG_CLUSTERED, /* clusters of 8, gaps 1e-5 down to ulp, centres 1 down to ulp */
  TF_DENSE_EVEN,     /* the same spectra with random signs, randomly rotated */
  TF_DENSE_GEOMETRIC,
  TF_DENSE_CLUSTERED,
  TF_DENSE_ULP_CLUSTER,   /* one eigenvalue 1, the rest ulp (LAPACK's clustered), signs random */
  TF_RANDOM,              /* entries uniform(-1, 1) */
  TF_BANDED,              /* random, half bandwidth max(1, n / 16) */
  TF_RANK_DEFICIENT,      /* rotated; 3/4 of the eigenvalues in [0.1, 1], the rest 0 */
  TF_NEAR_RANK_DEFICIENT, /* the rest 1e-6 */
  TF_REPEATED,            /* three values (random signs), each many times */
  TF_GRADED,              /* D A D, D over 4 decades, A positive definite (cond 2) */
  TF_KIND_COUNT
} tf_kind;

typedef enum { TF_UNIT, TF_BIG, TF_SMALL } tf_scale; /* 1, ~sqrt(overflow), ~sqrt(underflow) */

typedef struct {
  const char *name;
  tf_kind kind;
  tf_scale scale;
} tf_family;

/* Every family: each kind at scale 1, the diagonal ones and random also
 * scaled toward overflow and underflow. */
extern const tf_family tf_families[];
extern const int tf_nfamilies;

/* What is known of a generated element. */
typedef struct {
  bool spectrum_known; /* d holds its eigenvalues (before rounding to the dtype) */
  int definite;        /* 1: surely positive definite once rounded, -1: surely not, 0: either */
} tf_info;

/* Element of family f, order n, for dtype dt (ulp and range of that dtype;
 * bfloat16 is generated as float32 is): a (n x n, column-major, exactly
 * symmetric) and its planted spectrum d (n entries, unsorted). */
tf_info tf_generate(tu_rng *r, const tf_family *f, int64_t n, gstat_dtype dt, double *a, double *d);

/* The same by kind and scale, with the spectra down to `ulp` (tu_symmetric
 * passes its own); dt gives the range of the scales and the rounding that
 * decides definiteness. */
tf_info tf_generate_kind(tu_rng *r, tf_kind kind, tf_scale scale, int64_t n, double ulp,
                         gstat_dtype dt, double *a, double *d);

/* Whether a dense matrix with spectrum d (n values), stored in dt, is surely
 * positive definite (1), surely not (-1), or either (0): rounding moves its
 * eigenvalues by up to about n ulp max|d|, a failed Cholesky needs a clearly
 * negative one. */
int tf_definiteness(int64_t n, const double *d, gstat_dtype dt);

/* The rounding unit tests count ratios in: float64 and float32 epsilon,
 * bfloat16 2^-7. */
double tf_ulp(gstat_dtype dt);

#endif
