/*
 * gstat core: status codes, dtypes, the batched strided matrix descriptor and
 * the context that owns workspace, options and the last error message.
 *
 * Ownership rules for the whole library: the caller owns every input and
 * output buffer; gstat frees only what a gstat_*_create call made, and every
 * destroy function accepts NULL. The library never aborts, exits or prints.
 */
#ifndef GSTAT_CORE_H
#define GSTAT_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "gstat/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status -------------------------------------------------------------- */

/* Every public function that can fail returns one of these. */
typedef enum gstat_status {
  GSTAT_OK = 0,
  GSTAT_EINVAL = 1,       /* an argument is invalid (NULL, bad shape/stride/enum) */
  GSTAT_ENOMEM = 2,       /* allocation failed, or a size product overflows */
  GSTAT_ENOTFINITE = 3,   /* input holds NaN or Inf (when finiteness is checked) */
  GSTAT_ENOTPD = 4,       /* a matrix is not positive definite (Cholesky) */
  GSTAT_ESINGULAR = 5,    /* a triangular factor has a zero on its diagonal */
  GSTAT_ENOCONV = 6,      /* an iterative algorithm did not converge */
  GSTAT_EUNSUPPORTED = 7, /* valid request this build/backend cannot serve */
  GSTAT_EBACKEND = 8,     /* a backend (e.g. CUDA) failed in a way not listed above */
  GSTAT_EIO = 9,          /* reading or writing a file failed */
  GSTAT_ECANCELED = 10    /* the caller cancelled the operation */
} gstat_status;

/* Static English name of a status ("GSTAT_ENOTPD: matrix not positive
 * definite"). Never NULL; unknown values give a generic string. */
GSTAT_API const char *gstat_status_string(gstat_status status);

/* Library version as "MAJOR.MINOR.PATCH" (static string). */
GSTAT_API const char *gstat_version_string(void);

/* ---- element types and memory locations ------------------------------------ */

typedef enum gstat_dtype {
  GSTAT_F32 = 1,
  GSTAT_F64 = 2,
  GSTAT_BF16 = 3 /* stored as uint16_t; computed in float32, rounded to nearest even */
} gstat_dtype;

/* Size in bytes of one element, 0 for an unknown dtype. */
GSTAT_API size_t gstat_dtype_size(gstat_dtype dtype);

typedef enum gstat_location {
  GSTAT_HOST = 0, /* ordinary (or pinned) host memory */
  GSTAT_CUDA = 1  /* CUDA device memory; `device` names the device ordinal */
} gstat_location;

/* bfloat16 helpers: exact widening, and round-to-nearest-even narrowing (NaN
 * stays NaN, overflow rounds to infinity as IEEE rounding does). */
GSTAT_API float gstat_bf16_to_f32(uint16_t x);
GSTAT_API uint16_t gstat_f32_to_bf16(float x);

/* ---- the batched strided matrix descriptor ---------------------------------------
 *
 * Element (b, i, j) — batch element b, row i, column j — lives at
 *   (T *)data + b * batch_stride + i * row_stride + j * col_stride
 * with strides counted in elements. C/numpy row-major: row_stride = cols,
 * col_stride = 1. Fortran/R column-major: row_stride = 1, col_stride = rows.
 * Transposed views and torch/CuPy tensors are other stride choices. Strides of
 * dimensions whose extent is 1 are ignored; others must be >= 1 and must not
 * make two elements share an address. A vector batch (eigenvalues) is a
 * descriptor with cols = 1.
 *
 * A descriptor never owns its data. */
typedef struct gstat_matrix {
  void *data;
  gstat_dtype dtype;
  gstat_location location;
  int32_t device; /* CUDA device ordinal when location == GSTAT_CUDA */
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
} gstat_matrix;

/* Descriptors of contiguous batches (host memory). They only fill fields. */
GSTAT_API gstat_matrix gstat_matrix_row_major(void *data, gstat_dtype dtype, int64_t batch,
                                              int64_t rows, int64_t cols);
GSTAT_API gstat_matrix gstat_matrix_col_major(void *data, gstat_dtype dtype, int64_t batch,
                                              int64_t rows, int64_t cols);
/* batch vectors of length n, contiguous: element (b, i) at data + b*n + i. */
GSTAT_API gstat_matrix gstat_vector_batch(void *data, gstat_dtype dtype, int64_t batch, int64_t n);

/* ---- context ------------------------------------------------------------------ */

typedef struct gstat_ctx gstat_ctx;

typedef enum gstat_backend {
  GSTAT_BACKEND_AUTO = 0, /* GPU when usable and worth it, else CPU */
  GSTAT_BACKEND_CPU = 1,
  GSTAT_BACKEND_CUDA = 2
} gstat_backend;

/* Bits of gstat_ctx_last_backends(): which backends did work in the last call. */
#define GSTAT_RAN_CPU 0x1u
#define GSTAT_RAN_CUDA 0x2u

/* Memory hooks. alloc returns `size` bytes aligned to `alignment` (a power of
 * two, at most 4096) or NULL; free receives what alloc returned and the size
 * that was asked for. `user` is passed through. */
typedef struct gstat_allocator {
  void *(*alloc)(size_t size, size_t alignment, void *user);
  void (*free)(void *ptr, size_t size, void *user);
  void *user;
} gstat_allocator;

/* Progress of a long call: `done` of `total` units of the stage named `what`
 * ("spectral_batch: graphs", ...). Called from the calling thread between
 * units of work (never from inside a parallel region), at least at the start
 * and the end. Return 0 to go on, nonzero to cancel: the call then stops at
 * the next unit boundary and returns GSTAT_ECANCELED; outputs are partially
 * written. Bindings use it for progress bars and to check for interrupts. */
typedef int (*gstat_progress_fn)(int64_t done, int64_t total, const char *what, void *user);

typedef struct gstat_ctx_options {
  gstat_backend backend;      /* default GSTAT_BACKEND_AUTO */
  int num_threads;            /* CPU threads; 0 = OpenMP's default (OMP_NUM_THREADS or all cores) */
  int check_finite;           /* nonzero (default): reject NaN/Inf input with GSTAT_ENOTFINITE */
  gstat_allocator allocator;  /* alloc == NULL: the C library's aligned allocation */
  int cuda_device;            /* CUDA device ordinal the context uses (default 0) */
  gstat_progress_fn progress; /* NULL (default): no progress reports */
  void *progress_user;        /* passed to progress */
} gstat_ctx_options;

/* Fill *opt with the defaults (AUTO backend, default threads, check_finite on,
 * system allocator). Always use this before changing single fields. */
GSTAT_API void gstat_ctx_options_init(gstat_ctx_options *opt);

/* Create a context. opt NULL means defaults. On success *ctx receives a new
 * context that the caller releases with gstat_ctx_destroy.
 * Statuses: GSTAT_EINVAL (ctx NULL, bad option values), GSTAT_ENOMEM,
 * GSTAT_EUNSUPPORTED (backend GSTAT_BACKEND_CUDA asked for, but the CUDA
 * module is not installed, does not load, or finds no such device).
 *
 * The CUDA backend is a separate module (libgstat_cuda.so.0) loaded on first
 * use from the directory libgstat itself was loaded from, or from the path in
 * the environment variable GSTAT_CUDA_MODULE. For testing only, the
 * environment variable GSTAT_CUDA_FAULT=oom|solver|nonfinite|clusters makes
 * the CUDA backend simulate device out-of-memory, a failing solver, NaN
 * output, or eigenvalue clusters its own cluster step cannot serve, so that
 * the fallback paths can be exercised. */
GSTAT_API gstat_status gstat_ctx_create(gstat_ctx **ctx, const gstat_ctx_options *opt);

/* Release the context and all the workspace it cached. NULL is a no-op. */
GSTAT_API void gstat_ctx_destroy(gstat_ctx *ctx);

/* Message of the last failed call on this context ("" after a success).
 * Owned by the context; valid until the next call that uses it. */
GSTAT_API const char *gstat_ctx_last_error(const gstat_ctx *ctx);

/* GSTAT_RAN_* bits of the backends that did work in the last call (0 when it
 * did no work, e.g. an empty batch or a rejected argument). */
GSTAT_API unsigned gstat_ctx_last_backends(const gstat_ctx *ctx);

/* The same as text: "cpu", "cuda", "cuda+cpu" or "none". */
GSTAT_API const char *gstat_ctx_last_backend_name(const gstat_ctx *ctx);

/* CPU threads this context may use (num_threads resolved: OpenMP's default
 * when the option was 0). Each parallel step takes fewer when its work is
 * small (the CPU backend's rules), and one inside the caller's parallel
 * region. 0 when ctx is NULL. */
GSTAT_API int gstat_ctx_num_threads(const gstat_ctx *ctx);

/* The threads a context created now by this thread with num_threads 0
 * would resolve to: OpenMP's default for this thread (OMP_NUM_THREADS or
 * every core, less after omp_set_num_threads). */
GSTAT_API int gstat_default_num_threads(void);

/* Tell gstat that this process's OpenMP threads wait passively (libgomp was
 * started with OMP_WAIT_POLICY=passive; the Python package does so): waking
 * a sleeping thread then costs tens of microseconds, so LAPACK steps made of
 * many small parallel BLAS calls (the tridiagonal reduction of an eigh below
 * order ~2000) run on one thread. Process-wide; 0 (default) or 1. */
GSTAT_API void gstat_set_passive_waits(int passive);

/* The most CPU threads any step of the last call ran on or let BLAS use: 1
 * when everything ran on one thread, 0 when it did no CPU work (an empty
 * batch, a rejected argument, the GPU). For tests and tuning; it is the
 * count asked for, not a measurement. */
GSTAT_API int gstat_ctx_last_threads(const gstat_ctx *ctx);

/* Whether a usable CUDA backend is present: the CUDA module is installed and
 * loads, and the device of this context exists. Never fails; 0 or 1. */
GSTAT_API int gstat_ctx_cuda_available(gstat_ctx *ctx);

/* Run this context's CUDA work on `stream` (a cudaStream_t; NULL = the
 * context's own stream, which is ordered after the caller's work on the
 * legacy default stream, as a stream created by cudaStreamCreate is; not
 * after work on a per-thread default stream or the caller's own streams:
 * pass that stream here). Work runs in order with the caller's earlier work
 * on that stream. A call on device data may return once its last device
 * work (a copy into the caller's device memory) is enqueued: its results
 * are ready for later work on that stream; read them from another stream
 * after synchronizing it. The caller
 * keeps ownership of the stream and must keep it alive while the context
 * uses it. Statuses: GSTAT_OK,
 * GSTAT_EINVAL (ctx NULL), GSTAT_EUNSUPPORTED (no CUDA backend). */
GSTAT_API gstat_status gstat_ctx_set_cuda_stream(gstat_ctx *ctx, void *stream);

/* Device memory allocations (cudaMalloc) this context has made so far; 0
 * without a CUDA backend. Repeating a call of one shape adds none. */
GSTAT_API int64_t gstat_ctx_device_allocations(const gstat_ctx *ctx);

/* What this context's CUDA backend has done since the context was created:
 * counters for tuning and tests (is a shape's solver graph replayed rather
 * than captured again? did host arrays run as a copy/solve pipeline?). */
typedef struct gstat_device_stats {
  int64_t allocations;     /* cudaMalloc calls (gstat_ctx_device_allocations) */
  int64_t graph_captures;  /* batched-solver CUDA graphs captured: once per
                            * shape and set of buffers, while cached */
  int64_t graph_refusals;  /* captures that failed (cuSOLVER refused, as it
                            * does at n = 1024, or the graph could not be
                            * instantiated); remembered per shape, whose
                            * calls then run the solver directly */
  int64_t graph_launches;  /* launches of a captured graph, the first right
                            * after its capture; one per chunk of a call */
  int64_t pipeline_pieces; /* pieces of host arrays solved in the pipeline
                            * that overlaps their copies with the solve */
  /* added after the first five (a caller passing GSTAT_DEVICE_STATS_SIZE_V1
   * does not get these): */
  int64_t own_tridiag_chunks;     /* chunks whose tridiagonal problems gstat
                                   * solved itself (its lockstep solver at
                                   * mid n, its tridiagonal step after
                                   * cuSOLVER's reduction for large float32,
                                   * its two-stage reduction for large
                                   * float64, the top components of a
                                   * PCA of device data) */
  int64_t own_tridiag_degenerate; /* of those, chunks with eigenvalue
                                   * clusters its cluster step could not
                                   * serve: those matrices (the lockstep
                                   * solver) or the whole chunk solved
                                   * again by cuSOLVER */
  /* added after the first seven: */
  int64_t own_tridiag_clustered; /* matrices whose eigenvalue clusters got
                                  * their vectors from its cluster step
                                  * (inverse iteration) */
} gstat_device_stats;

/* The size of gstat_device_stats as first published (five counters); every
 * caller passes at least this much. */
#define GSTAT_DEVICE_STATS_SIZE_V1 ((size_t)(5 * sizeof(int64_t)))

/* Fill *stats with the counters above; all zero without a CUDA backend.
 * `stats_size` is sizeof *stats as the caller compiled it, so that the
 * struct can grow: the library writes the fields that fit in stats_size and
 * zeroes any bytes past the fields it knows. Call it as
 * gstat_ctx_device_stats(ctx, &s, sizeof s). Statuses: GSTAT_OK,
 * GSTAT_EINVAL (ctx or stats NULL, stats_size < GSTAT_DEVICE_STATS_SIZE_V1);
 * *stats is untouched on GSTAT_EINVAL. */
GSTAT_API gstat_status gstat_ctx_device_stats(const gstat_ctx *ctx, gstat_device_stats *stats,
                                              size_t stats_size);

/* Drop the cached workspace (it is re-created on the next call that needs it). */
GSTAT_API void gstat_ctx_release_workspace(gstat_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GSTAT_CORE_H */
