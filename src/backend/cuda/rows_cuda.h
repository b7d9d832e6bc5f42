/* The CUDA backend's rows primitive (rows_cuda.c), for its ops table in
 * module.c; the contract is backend.h's gstat_i_rows_req. */
#ifndef GSTAT_BACKEND_CUDA_ROWS_CUDA_H
#define GSTAT_BACKEND_CUDA_ROWS_CUDA_H

#include "backend/backend.h"

gstat_status gstat_cu_rows(void *state, gstat_ctx *ctx, const gstat_i_rows_req *r);

#endif /* GSTAT_BACKEND_CUDA_ROWS_CUDA_H */
