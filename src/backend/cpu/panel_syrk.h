/* M += P^T P for column panels of 8 doubles: the AVX-512 kernel under the
 * one-pass co-moment (panel_syrk.c). */
#ifndef GSTAT_BACKEND_CPU_PANEL_SYRK_H
#define GSTAT_BACKEND_CPU_PANEL_SYRK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Columns per panel (one 512-bit vector of doubles). */
#define GSTAT_PANEL_WIDTH 8

/* Whether gstat_i_panel_syrk may be called: an x86-64 CPU with AVX-512F, and
 * the environment variable GSTAT_CPU_KERNELS is not "generic" (for testing:
 * it sends the co-moment through BLAS syrk instead, so both paths are tested
 * on one machine). */
bool gstat_i_panel_syrk_available(void);

/*
 * M += P^T P on the lower triangle of 8 x 8 blocks (the diagonal blocks are
 * filled whole). P holds `panels` panels of `rows` rows: element (r, c) of
 * panel q (column 8q + c) is P[q * ps + 8 r + c], ps >= 8 rows; M is column-major
 * with ld ldm >= 8 * panels. While it computes, it prefetches the next_bytes
 * at `next` into L2 (the caller's next block of input: its first pass then
 * reads from cache, not memory; NULL, 0 for none). Only for
 * gstat_i_panel_syrk_available().
 */
void gstat_i_panel_syrk(int64_t rows, int64_t panels, const double *P, int64_t ps, double *M,
                        int64_t ldm, const void *next, size_t next_bytes);

#endif /* GSTAT_BACKEND_CPU_PANEL_SYRK_H */
