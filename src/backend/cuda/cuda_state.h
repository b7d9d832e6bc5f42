/*
 * The CUDA backend's per-context state and the helpers its operations share
 * (internal to the module libgstat_cuda.so). Handles, streams and buffers
 * live here and are reused: a loop of same-shape calls allocates nothing on
 * the device after the first (device_allocations counts every cudaMalloc).
 */
#ifndef GSTAT_BACKEND_CUDA_STATE_H
#define GSTAT_BACKEND_CUDA_STATE_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "backend/cuda/tridiag_step.h"

/* side streams for the per-matrix (large n) path; the host-array pipeline
 * (eigh_cuda.c) uses two of them and ev[0..3] */
enum { GSTAT_CU_STREAMS = 4 };

/* A device (or pinned host) buffer that grows and is kept. */
typedef struct {
  void *ptr;
  size_t size;
} gstat_cu_buf;

/* Device buffers by role. */
typedef enum {
  CU_STAGE, /* the caller's bytes, copied as they lie (host data) */
  CU_MAT,   /* dense column-major matrices in the compute type */
  CU_VEC,   /* eigenvalues in the compute type */
  CU_RHS,   /* right-hand sides */
  CU_INFO,  /* per-element info (int) */
  CU_PTRS,  /* pointer arrays for the *Batched routines */
  CU_WORK,  /* solver workspace (one slice per stream for the loop path) */
  CU_FLAG,  /* a scalar: the non-finite scan's first index, the info check's verdict */
  CU_DATA,  /* co-moment, projection: centred rows */
  CU_COV,   /* co-moment: its matrix (and the double accumulator of host chunks) */
  CU_SUMS,  /* co-moment, projection: column sums, means, shifts (double) */
  CU_PROJ,  /* projection: components and scores */
  CU_PART,  /* co-moment: partial products of row blocks */
  CU_SC,    /* batch spectral clustering: one chunk's Laplacians, results, scratch */
  CU_CHAIN, /* a statistic's chain of primitives on device data (workspace) */
  CU_KNN,   /* knn: a block of distances, candidate lists, results */
  CU_KSORT, /* knn: the exhaustive path's distances and sort scratch */
  CU_QR,    /* orthonormalize: Cholesky QR's two passes and Gram matrix */
  CU_NBUF
} gstat_cu_role;

/* One direction of the pinned staging of host data (host_staging.c): two
 * halves and the events of the last copies through them. */
typedef struct {
  gstat_cu_buf buf;
  cudaEvent_t ev[2];
  bool pending; /* a copy may still use the halves */
} gstat_cu_stager;

typedef enum {
  FAULT_NONE,
  FAULT_OOM,
  FAULT_SOLVER,
  FAULT_NONFINITE,
  FAULT_CLUSTERS
} gstat_cu_fault;

/* A cuSOLVER call captured into a CUDA graph, with everything it captured
 * (shape, branches, buffers, sizes) as its key (eigh_cuda.c). */
typedef struct {
  cudaGraphExec_t exec; /* NULL: not captured, or the capture was refused */
  bool used;
  int64_t n, nb;
  int parts; /* parallel branches, each solving ceil(nb / parts) matrices
              * (the last the rest) */
  int cdt, jobz, fill;
  const void *a, *w, *info, *work, *hwork;
  size_t dev_bytes, host_bytes; /* per branch */
  unsigned long long stamp;     /* last use, for replacing the oldest entry */
} gstat_cu_graph;

/* graphs kept (a shape may hold two: in the caller's and in the context's
 * buffers), and the most parallel branches one graph has */
enum { GSTAT_CU_GRAPHS = 8, GSTAT_CU_BRANCHES = 4 };

typedef struct gstat_cu_state {
  int device;
  int cooperative;          /* the device takes cooperative launches (two_stage.c's chase) */
  cudaStream_t own, stream; /* stream: the caller's or `own` */
  cudaStream_t side[GSTAT_CU_STREAMS];
  cudaEvent_t ev[GSTAT_CU_STREAMS + 1];
  cusolverDnHandle_t solver;
  cusolverDnHandle_t side_solver[GSTAT_CU_STREAMS];
  /* one per side stream: the large-n loop calls from a host thread each,
   * and cuSOLVER promises nothing for objects shared between threads */
  cusolverDnParams_t side_params[GSTAT_CU_STREAMS];
  cublasHandle_t blas;
  cublasHandle_t side_blas; /* on side[0] (two_stage.c's side stream) */
  cusolverDnParams_t params;
  gstat_cu_buf dev[CU_NBUF];
  gstat_cu_buf host_work;              /* cuSOLVER's host workspace */
  gstat_cu_buf host_info;              /* info copied back */
  gstat_cu_buf host_pca;               /* pinned: co-moments and means read back */
  gstat_cu_buf host_sc;                /* pinned: batch spectral clustering's per-graph results */
  gstat_cu_buf host_upload;            /* pageable: small uploads (gstat_cu_upload) */
  gstat_cu_stager stage_in, stage_out; /* pinned: copies of the caller's host memory */
  /* the batched eigensolver's graphs, captured on their own streams with
   * their own handles (no other call can touch what a graph holds), a
   * stream, handle and event per branch (capture[0]: the graph's origin) */
  cudaStream_t capture[GSTAT_CU_BRANCHES];
  cusolverDnHandle_t capture_solver[GSTAT_CU_BRANCHES];
  cudaEvent_t capture_ev[GSTAT_CU_BRANCHES];
  gstat_cu_graph graphs[GSTAT_CU_GRAPHS];
  unsigned long long graph_clock;
  int64_t device_allocations;
  /* gstat_device_stats' other counters */
  int64_t graph_captures, graph_refusals, graph_launches, pipeline_pieces;
  int64_t own_tridiag_chunks, own_tridiag_degenerate, own_tridiag_clustered;
  size_t free_bytes_cap; /* chunking budget, from cudaMemGetInfo at creation */
  /* info[0 .. clean_count) from clean_info on: what collect_info's
   * all-zero path wrote in one run of consecutive chunks (info_clean) */
  const int64_t *clean_info;
  int64_t clean_count;
} gstat_cu_state;

extern const gstat_i_host_services *gstat_cu_host;

/* Buffer of at least `size` bytes for `role`, or NULL after setting
 * GSTAT_ENOMEM in the context unless ctx is NULL (callers with a fallback
 * pass NULL; a simulated OOM when the fault is on). */
void *gstat_cu_buffer(gstat_cu_state *s, gstat_ctx *ctx, gstat_cu_role role, size_t size);
/* Pinned host buffer b grown to at least `size` bytes, or NULL (reported in
 * ctx unless ctx is NULL: callers with a fallback pass NULL). */
void *gstat_cu_host_buffer(gstat_cu_state *s, gstat_ctx *ctx, gstat_cu_buf *b, size_t size);
/* A pageable host buffer of at least `size` bytes to fill for gstat_cu_upload
 * (valid until the next call of either), or NULL (reported in ctx). */
void *gstat_cu_upload_buffer(gstat_cu_state *s, gstat_ctx *ctx, size_t size);
/* The upload buffer's first `bytes` to device dst on the stream, without a
 * host wait: a copy from pageable memory has read its source when
 * cudaMemcpyAsync returns (CUDA's API synchronization behavior), so the
 * buffer may be refilled at once; a pinned one would need the copy done. */
gstat_status gstat_cu_upload(gstat_cu_state *s, gstat_ctx *ctx, void *dst, size_t bytes,
                             const char *what);

/* The rows primitive with L: through L^-1 (trtri, trmm) rather than a trsm
 * for n rows of p columns (the rules table's crossover). */
bool gstat_cu_rows_by_inverse(int64_t n, int64_t p);
/* Orthonormalize an m x n element by Cholesky QR (rather than Householder)
 * from this shape on (the rules table; GSTAT_CUDA_CHOLESKY_QR=0 turns it off). */
bool gstat_cu_qr_by_cholesky(int64_t m, int64_t n);

/* The lower triangle of S = X^T X (p x p, compute dtype cdt) of the dense
 * n x p device matrix X (row-major: leading dimension p, else n) by row
 * blocks of strided-batched GEMMs summed in double: a single SYRK or GEMM
 * down a long k leaves the GPU idle (comoment_cuda.c). */
/* Element b of X as a dense device matrix of the compute type cdt used in
 * place: row-major (i*p + j, *row_major = 1) or column-major (i + j*n);
 * NULL when it is neither (comoment_cuda.c). */
const char *gstat_cu_dense_element(const gstat_matrix *X, int cdt, int64_t b, int *row_major);
gstat_status gstat_cu_gram_lower(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int row_major,
                                 int64_t n, int64_t p, const char *xc, void *S);
/* cuSOLVER's Xpotrf on nb dense n x n matrices in turn (lower, in place,
 * stream-ordered; dInfo: nb ints on the device). */
gstat_status gstat_cu_xpotrf(gstat_cu_state *s, gstat_ctx *ctx, int cdt, char *dA, int64_t n,
                             int64_t nb, int *dInfo);
/* L^-1 in place of the dense lower triangle of L (n x n; trtri, stream-ordered,
 * its info into dInfo on the device, not read back). */
gstat_status gstat_cu_xtrtri_lower(gstat_cu_state *s, gstat_ctx *ctx, int cdt, void *L, int64_t n,
                                   int *dInfo);
/* W = U Li^T (U dense column-major n x p, leading dimension n), or with rm
 * W^T = Li U^T (U^T stored p x n, leading dimension p); Li lower p x p
 * (an inverse factor: the rows' solve as a product). One trmm, out of place. */
gstat_status gstat_cu_mul_inverse(gstat_cu_state *s, gstat_ctx *ctx, int cdt, int rm, int64_t n,
                                  int64_t p, const void *Li, const void *u, void *w);

/* The cluster step's settings for our tridiagonal step (eigh_cuda.c; the
 * environment's switches, the counter in s). */
gstat_cu_clusters gstat_cu_own_clusters(gstat_cu_state *s);
/* The backend's eigh_top (eigh_top_cuda.c): GSTAT_EUNSUPPORTED, A untouched,
 * where the full eigh is the plan. */
gstat_status gstat_cu_eigh_top(void *state, gstat_ctx *ctx, gstat_matrix *A, int64_t k,
                               gstat_matrix *w);

/* The fault-injection switch (GSTAT_CUDA_FAULT), read per call. */
gstat_cu_fault gstat_cu_fault_now(void);

/* A CUDA error as a status and a message "fn: what: cudaGetErrorString". */
gstat_status gstat_cu_fail(gstat_ctx *ctx, const char *fn, const char *what, cudaError_t err);
gstat_status gstat_cu_solver_fail(gstat_ctx *ctx, const char *fn, const char *what,
                                  cusolverStatus_t st);

/* The compute precision of an input dtype, and bytes per element of a dtype
 * (the module does not link libgstat, so not gstat_dtype_size). */
static inline int gstat_cu_compute_dtype(gstat_dtype in) {
  return in == GSTAT_F64 ? GSTAT_F64 : GSTAT_F32;
}
static inline size_t gstat_cu_dtype_bytes(int dt) {
  return dt == GSTAT_F64 ? 8 : dt == GSTAT_F32 ? 4 : 2;
}

/* Pointer to element b0 when m is a dense column-major device batch of
 * dtype cdt (the caller's memory can be used as it is), else NULL. */
char *gstat_cu_dense(const gstat_matrix *m, int cdt, int64_t b0);

/* Where a load or store runs: its stream and, for host data, the device
 * buffer the caller's bytes pass through as they lie (NULL: CU_STAGE). */
typedef struct {
  cudaStream_t stream;
  void *stage;
} gstat_cu_lane;

/* Move element range [b0, b0 + nb) of descriptor m into a dense column-major
 * device batch in compute dtype `cdt` (through the lane's stage when m is on
 * the host), and back; lane NULL: the context's stream and CU_STAGE. A store
 * to host memory returns once the bytes are there. */
gstat_status gstat_cu_load(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const gstat_matrix *m,
                           int64_t b0, int64_t nb, int cdt, void *dst, const gstat_cu_lane *lane);
gstat_status gstat_cu_store(gstat_cu_state *s, gstat_ctx *ctx, const char *fn, const void *src,
                            int cdt, const gstat_matrix *m, int64_t b0, int64_t nb,
                            const gstat_cu_lane *lane);
/* Bytes that elements [b0, b0 + nb) of m span as they lie (a stage's size). */
size_t gstat_cu_span(const gstat_matrix *m, int64_t b0, int64_t nb);

/* bytes from the caller's host memory to the device and back, on `stream`,
 * through the pinned halves of s->stage_in / s->stage_out (host_staging.c).
 * copy_in returns once host may change (the device side is ordered on the
 * stream), except for memory the caller pinned, which the DMA reads
 * directly, in stream order; copy_out returns once host holds the bytes. */
cudaError_t gstat_cu_copy_in(gstat_cu_state *s, cudaStream_t stream, void *dev, const void *host,
                             size_t bytes);
cudaError_t gstat_cu_copy_out(gstat_cu_state *s, cudaStream_t stream, void *host, const void *dev,
                              size_t bytes);
/* Whether host memory p was pinned (page-locked) by cudaHostAlloc or
 * cudaHostRegister, or is managed memory: copy_in reads it after
 * returning. */
bool gstat_cu_is_pinned(const void *p);

/* The first NaN/Inf of part `tri` of device-resident m as the index b * rows
 * * cols + i * cols + j into *first (-1: none). */
gstat_status gstat_cu_first_nonfinite(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                      const gstat_matrix *m, int tri, int64_t *first);

/* GSTAT_ENOTFINITE naming the first NaN/Inf of part `tri` (the kernels'
 * codes: 0 full, 1 lower, 2 upper, 3/4 strict) of a device-resident input,
 * when the context checks finiteness; host inputs were checked already. */
gstat_status gstat_cu_check_finite(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                   const char *name, const gstat_matrix *m, int tri);

/* Elements per chunk so that `per_elem` device bytes each fit the budget. */
int64_t gstat_cu_chunk(const gstat_cu_state *s, int64_t batch, size_t per_elem);

/* The operations (eigh_cuda.c, chol_cuda.c). */
gstat_status gstat_cu_eigh(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                           gstat_matrix *w, gstat_matrix *V, int64_t *info);
gstat_status gstat_cu_cholesky(void *state, gstat_ctx *ctx, const gstat_matrix *A, gstat_uplo uplo,
                               gstat_matrix *F, int64_t *info);
gstat_status gstat_cu_cholesky_solve(void *state, gstat_ctx *ctx, const gstat_matrix *F,
                                     gstat_uplo uplo, const gstat_matrix *B, gstat_matrix *X,
                                     int64_t *info);
gstat_status gstat_cu_triangular_solve(void *state, gstat_ctx *ctx, const gstat_matrix *T,
                                       gstat_uplo uplo, gstat_trans trans, gstat_diag diag,
                                       const gstat_matrix *B, gstat_matrix *X, int64_t *info);

gstat_status gstat_cu_comoment(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                               double *mean, double *M, const gstat_matrix *S);
gstat_status gstat_cu_scale_sym_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                   const double *d);
gstat_status gstat_cu_offdiag_sumsq_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                       double *out);
gstat_status gstat_cu_sym_affine_op(void *state, gstat_ctx *ctx, const gstat_matrix *S,
                                    const double *a, const double *c);
void *gstat_cu_workspace(void *state, gstat_ctx *ctx, size_t bytes);
gstat_status gstat_cu_project(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b,
                              const double *mean, const double *scale, const double *comp,
                              const double *ev, int64_t k, gstat_matrix *Y);
gstat_status gstat_cu_find_nonfinite_first(void *state, gstat_ctx *ctx, const gstat_matrix *M,
                                           int64_t *first);
gstat_status gstat_cu_knn(void *state, gstat_ctx *ctx, const gstat_matrix *X, int64_t b, int64_t k,
                          bool include_self, int64_t *nbr, double *d2);
double gstat_cu_host_cost(void *state, const gstat_ctx *ctx, const gstat_i_work *w);
/* The batch spectral engine's steps (spectral_cuda.c). */
gstat_status gstat_cu_sc_laplacians_op(void *state, gstat_ctx *ctx, const gstat_i_sc_lap_req *r);
gstat_status gstat_cu_sc_assign_op(void *state, gstat_ctx *ctx, const gstat_i_sc_assign_req *r);
/* The dense primitives on descriptors (dense_cuda.c). */
gstat_status gstat_cu_gemm(void *state, gstat_ctx *ctx, gstat_trans ta, gstat_trans tb,
                           double alpha, const gstat_matrix *A, const gstat_matrix *B, double beta,
                           const gstat_matrix *C);
gstat_status gstat_cu_orthonormalize(void *state, gstat_ctx *ctx, const gstat_matrix *A);
gstat_status gstat_cu_syrk_lower(void *state, gstat_ctx *ctx, gstat_trans trans,
                                 const gstat_matrix *A, const gstat_matrix *C);
gstat_status gstat_cu_kmeans(void *state, gstat_ctx *ctx, const gstat_matrix *E,
                             const gstat_i_kmeans_opt *opt, int64_t *labels, double *inertia,
                             int64_t *iterations);
gstat_status gstat_cu_lincomb_op(void *state, gstat_ctx *ctx, const gstat_i_lincomb_req *r);
gstat_status gstat_cu_dots_op(void *state, gstat_ctx *ctx, const gstat_matrix *X,
                              const gstat_matrix *Y, double *out);
gstat_status gstat_cu_csr_lap_plan(void *state, gstat_ctx *ctx, const gstat_i_csr_lap *A,
                                   void **plan);
gstat_status gstat_cu_csr_lap_apply(void *state, gstat_ctx *ctx, void *plan, const gstat_matrix *X,
                                    const gstat_matrix *Y);
void gstat_cu_csr_lap_release(void *state, void *plan);
gstat_status gstat_cu_laplacian(void *state, gstat_ctx *ctx, const char *fn, const gstat_matrix *A,
                                int sym, int drop_loops, int kind, const gstat_matrix *L,
                                const gstat_matrix *deg);

/* Copy per-element device info (int) of a chunk into info (int64); elements
 * with a negative info (solver error) or a non-zero flag (NaN/Inf output;
 * with_flags: nb flags follow the nb infos at d_info + nb) become
 * GSTAT_I_INFO_RETRY. A device reduction first says whether any value is
 * nonzero (a 4-byte copy back); only then are the arrays copied and walked.
 * Chunks found clean in a row extend s's clean range (info_clean).
 * Synchronizes `stream`. */
gstat_status gstat_cu_collect_info(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                   const int *d_info, bool with_flags, int64_t nb, int64_t *info,
                                   cudaStream_t stream);

/* A finiteness scan launched without waiting for it (gstat_cu_scan_deferred),
 * into slot 0 or 1 (two inputs of one call): *guard = its device verdict,
 * the first non-finite entry's index (ULLONG_MAX: none), which kernels
 * writing the caller's outputs read to write nothing when the input is not
 * finite; NULL: nothing to check (host data, already checked by the
 * dispatcher, or the check off). Saves the host's wait for the scan: its
 * verdict comes back with the info summary (gstat_cu_collect_info_scanned). */
gstat_status gstat_cu_scan_deferred(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                    const gstat_matrix *m, int tri, int slot,
                                    const unsigned long long **guard);
/* The inputs the deferred scans of slots 0 and 1 read (m[1] NULL: slot 0
 * only), for the message naming the entry (slot 0's first). */
typedef struct {
  const char *name[2];
  const gstat_matrix *m[2];
} gstat_cu_scan;
/* The device word collect_info's reduction writes (1: some info or flag
 * is nonzero), for work that sets it itself: zero it before the work, set
 * it where a failure is written, and pass verdict_set to
 * gstat_cu_collect_info_scanned, which then launches no reduction. NULL
 * (reported) when it cannot be allocated. */
unsigned *gstat_cu_info_verdict(gstat_cu_state *s, gstat_ctx *ctx);
/* gstat_cu_collect_info that first reports a deferred scan's verdict
 * (scan non-NULL): a non-finite input is GSTAT_ENOTFINITE naming the entry,
 * and info stays untouched. verdict_set: gstat_cu_info_verdict's word was
 * set by the work. */
gstat_status gstat_cu_collect_info_scanned(gstat_cu_state *s, gstat_ctx *ctx, const char *fn,
                                           const int *d_info, bool with_flags, int64_t nb,
                                           int64_t *info, cudaStream_t stream,
                                           const gstat_cu_scan *scan, bool verdict_set);
/* gstat_eigh_async's backend op (eigh_cuda.c): the Jacobi kernels on the
 * caller's dense device arrays, nothing read back, nothing allocated. */
gstat_status gstat_cu_eigh_async(void *state, gstat_ctx *ctx, const gstat_matrix *A,
                                 gstat_uplo uplo, gstat_matrix *w, gstat_matrix *V, int32_t *info);

/* gstat_eigh_backward's backend op (eigh_cuda.c). */
gstat_status gstat_cu_eigh_backward_op(void *state, gstat_ctx *ctx, const gstat_matrix *w,
                                       const gstat_matrix *V, const gstat_matrix *gw,
                                       const gstat_matrix *gV, double broadening, gstat_matrix *gA);

/* Return a failed gstat_status from the enclosing function. */
#define GSTAT_CU_TRY(expr)             \
  do {                                 \
    gstat_status try_ = (expr);        \
    if (try_ != GSTAT_OK) return try_; \
  } while (0)

#endif /* GSTAT_BACKEND_CUDA_STATE_H */
