/* The CPU backend's rows primitive (rows_cpu.c), for its ops table; the
 * contract is backend.h's gstat_i_rows_req. */
#ifndef GSTAT_BACKEND_CPU_ROWS_CPU_H
#define GSTAT_BACKEND_CPU_ROWS_CPU_H

#include "backend/backend.h"

gstat_status gstat_i_cpu_rows(void *state, gstat_ctx *ctx, const gstat_i_rows_req *r);

#endif /* GSTAT_BACKEND_CPU_ROWS_CPU_H */
