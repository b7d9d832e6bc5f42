/*
 * The request of the rows primitive, shared by the backend table
 * (backend.h) and the statistics that call it through the scheduler
 * (sched.h), which include no backend header.
 */
#ifndef GSTAT_BACKEND_ROWS_REQ_H
#define GSTAT_BACKEND_ROWS_REQ_H

#include "core/internal.h"

/* A row-wise map and reduction (the rows primitive): for each row x_i of
 * element b of X, u_i = (x_i - center) / scale, then u_i <- L^-1 u_i when L
 * is given, and d_i = u_i^T Q u_i when Q is given, else ||u_i||^2 (in double
 * for float32 data). Mahalanobis distances and Ledoit-Wolf's sum of
 * ||x_i - mean||^4 are such reductions. */
typedef struct gstat_i_rows_req {
  const gstat_matrix *X;        /* n x p, any dtype and strides */
  int64_t b;                    /* its element */
  const double *center, *scale; /* host doubles, p each; NULL: 0 and 1 */
  /* or the centre as it lies beside X (p x 1 or 1 x p, batch 1, any float
   * dtype), read by the backend: a device centre is not copied to the host
   * and back; center is then NULL */
  const gstat_matrix *center_vec;
  /* NULL, or p x p (batch 1): lower triangle read, its diagonal nonzero (a
   * Cholesky factor: a backend may apply it through its inverse) */
  const gstat_matrix *L;
  const gstat_matrix *Q; /* NULL, or p x p (batch 1): symmetric, lower triangle read */
  gstat_matrix *d;       /* NULL, or n x 1 (batch 1, any dtype): the d_i */
  double *sums;          /* NULL, or host [2]: sum_i d_i and sum_i d_i^2 */
} gstat_i_rows_req;

#endif /* GSTAT_BACKEND_ROWS_REQ_H */
