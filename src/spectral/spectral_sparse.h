/* The sparse path of spectral clustering (one large CSR graph). */
#ifndef GSTAT_SPECTRAL_SPARSE_H
#define GSTAT_SPECTRAL_SPARSE_H

#include "graph/sparse_eigs.h"
#include "spectral/spectral_internal.h"

/* Eigenpairs by gstat_i_sparse_eigs on the Laplacian operator, then
 * gstat_i_sc_assign. Validates G. GSTAT_ENOCONV (with results) when the
 * solver did not converge; a graph failure fills labels with -1. */
gstat_status gstat_i_sc_sparse(gstat_ctx *ctx, const char *fn, const gstat_graph *G,
                               const gstat_spectral_options *o, int64_t k, int64_t *labels,
                               double *eig_out, double *emb_out, bool embed_only, gstat_i_sc_rec *r,
                               gstat_i_eigs_report *rep);

#endif /* GSTAT_SPECTRAL_SPARSE_H */
