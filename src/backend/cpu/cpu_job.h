/* One batched CPU operation: its arguments and the per-element routine the
 * batch loop calls (internal to the CPU backend). */
#ifndef GSTAT_BACKEND_CPU_JOB_H
#define GSTAT_BACKEND_CPU_JOB_H

#include <stdbool.h>

#include "core/internal.h"
#include "gstat/linalg.h"

typedef struct gstat_i_cpu_job gstat_i_cpu_job;
struct gstat_i_cpu_job {
  const gstat_matrix *A;                /* the matrix input (A, F or T) */
  const gstat_matrix *B;                /* right-hand sides (solves) */
  gstat_matrix *out;                    /* V (may be NULL), F or X */
  gstat_matrix *w;                      /* eigenvalues (eigh) */
  const gstat_matrix *vals, *grad_vals; /* eigh_backward: w and gw (may be NULL) */
  double broadening;                    /* eigh_backward */
  double flops; /* one element's in BLAS-3, when the fields above do not say */
  gstat_uplo uplo;
  gstat_trans trans;
  gstat_diag diag;
  int64_t n;
  bool small;            /* use our small-matrix kernel instead of LAPACK */
  int64_t lwork, liwork; /* LAPACK workspace (elements) when !small */
  size_t per_thread;     /* bytes of workspace each thread needs */
  /* Computes element b with `ws` (per_thread bytes, 64-byte aligned) and
   * returns its info (0 = success). */
  int64_t (*one)(const gstat_i_cpu_job *job, int64_t b, char *ws);
  /* Optional: computes the `lanes` elements b0, b0+1, ... at once, writing
   * their info to info[b0...]; the batch loop uses it for whole groups and
   * `one` for the rest. */
  void (*group)(const gstat_i_cpu_job *job, int64_t b0, char *ws, int64_t *info);
  int64_t lanes;
};

/* Round a byte count up to 64 (workspace sections stay aligned). */
static inline size_t gstat_i_align64(size_t x) {
  return (x + 63u) & ~(size_t)63u;
}

/* Per-type element routines and job setup (cpu_ops_f32.c / cpu_ops_f64.c). */
#define GSTAT_I_DECLARE_CPU_OPS(SFX)                            \
  bool gstat_i_cpu_eigh_setup_##SFX(gstat_i_cpu_job *job);      \
  bool gstat_i_cpu_chol_setup_##SFX(gstat_i_cpu_job *job);      \
  bool gstat_i_cpu_cholsolve_setup_##SFX(gstat_i_cpu_job *job); \
  bool gstat_i_cpu_trsolve_setup_##SFX(gstat_i_cpu_job *job);   \
  bool gstat_i_cpu_eigh_backward_setup_##SFX(gstat_i_cpu_job *job);
GSTAT_I_DECLARE_CPU_OPS(f32)
GSTAT_I_DECLARE_CPU_OPS(f64)

#endif /* GSTAT_BACKEND_CPU_JOB_H */
