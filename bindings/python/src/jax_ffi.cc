// XLA FFI handlers of gstat.jax: eigh, eigvalsh, Cholesky and the two solves
// on XLA buffers, for the CPU (host memory) and CUDA (device memory, on the
// stream XLA gives the call). gstat/jax.py loads this library with ctypes and
// registers the exported handler symbols with jax.ffi.register_ffi_target.
//
// XLA hands every buffer dense and row-major, so each operand is one gstat
// descriptor: all leading dimensions fold into gstat's batch, the last two
// are the matrix. jax.py broadcasts the operands of a solve to one batch
// shape before the call, so a handler only checks that they agree.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gstat/gstat.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// Contexts are single-threaded and XLA may run handlers of several
// computations at once from its own threads, so each thread owns its
// contexts: one for host data, one per CUDA device. They are created on a
// thread's first call (the workspace they cache is what makes repeated calls
// of one shape allocation-free) and destroyed with the thread.
struct ThreadContexts {
  gstat_ctx *host = nullptr;
  std::vector<gstat_ctx *> cuda;  // by device ordinal
  ~ThreadContexts() {
    gstat_ctx_destroy(host);
    for (gstat_ctx *c : cuda) gstat_ctx_destroy(c);
  }
};
thread_local ThreadContexts contexts;

// Where a call's buffers live: host memory, or device memory of `device`
// ordered on `stream`.
struct Place {
  gstat_location location;
  int32_t device;
  void *stream;
};

ffi::Error Fail(const char *op, const std::string &why) {
  return ffi::Error(ffi::ErrorCode::kInvalidArgument, std::string("gstat ") + op + ": " + why);
}

// The context of this thread for `place`. Host buffers run on gstat's CPU
// backend only: JAX chose the CPU for them, and it owns the GPU's memory
// (it preallocates most of it), so gstat's AUTO offload is not wanted here.
ffi::Error GetContext(const char *op, const Place &place, gstat_ctx **out) {
  gstat_ctx **slot = &contexts.host;
  if (place.location == GSTAT_CUDA) {
    if (place.device < 0) return Fail(op, "negative CUDA device ordinal");
    if (contexts.cuda.size() <= static_cast<size_t>(place.device))
      contexts.cuda.resize(static_cast<size_t>(place.device) + 1, nullptr);
    slot = &contexts.cuda[static_cast<size_t>(place.device)];
  }
  if (!*slot) {
    gstat_ctx_options opt;
    gstat_ctx_options_init(&opt);
    opt.backend = place.location == GSTAT_CUDA ? GSTAT_BACKEND_CUDA : GSTAT_BACKEND_CPU;
    opt.cuda_device = place.location == GSTAT_CUDA ? place.device : 0;
    gstat_status st = gstat_ctx_create(slot, &opt);
    if (st != GSTAT_OK) {
      *slot = nullptr;
      return Fail(op, std::string("cannot create a context: ") + gstat_status_string(st) +
                          (place.location == GSTAT_CUDA
                               ? " (is gstat's CUDA module libgstat_cuda.so.0 installed next to "
                                 "libgstat_jax_ffi.so?)"
                               : ""));
    }
  }
  if (place.location == GSTAT_CUDA) {
    // gstat's CUDA work is then ordered after XLA's earlier work on this
    // stream, and XLA's later work after it: no synchronization needed.
    gstat_status st = gstat_ctx_set_cuda_stream(*slot, place.stream);
    if (st != GSTAT_OK) return Fail(op, gstat_ctx_last_error(*slot));
  }
  *out = *slot;
  return ffi::Error::Success();
}

bool ToGstatDtype(ffi::DataType t, gstat_dtype *out) {
  switch (t) {
    case ffi::DataType::F32: *out = GSTAT_F32; return true;
    case ffi::DataType::F64: *out = GSTAT_F64; return true;
    case ffi::DataType::BF16: *out = GSTAT_BF16; return true;
    default: return false;
  }
}

// A row-major descriptor of `buf` viewed as batch x rows x cols, where the
// last two dimensions are rows and cols (cols = 1 for a vector batch: the
// last dimension is rows). Checks dtype and the number of dimensions.
ffi::Error Describe(const char *op, const char *name, const ffi::AnyBuffer &buf, bool vector,
                    const Place &place, gstat_matrix *m) {
  gstat_dtype dt;
  if (!ToGstatDtype(buf.element_type(), &dt))
    return Fail(op, std::string(name) + " must be float32, float64 or bfloat16");
  auto dims = buf.dimensions();
  size_t core = vector ? 1 : 2;
  if (dims.size() < core) return Fail(op, std::string(name) + " has too few dimensions");
  int64_t batch = 1;
  for (size_t i = 0; i + core < dims.size(); ++i) batch *= dims[i];
  int64_t rows = dims[dims.size() - core];
  int64_t cols = vector ? 1 : dims[dims.size() - 1];
  *m = gstat_matrix_row_major(buf.untyped_data(), dt, batch, rows, cols);
  m->location = place.location;
  m->device = place.location == GSTAT_CUDA ? place.device : 0;
  return ffi::Error::Success();
}

// GSTAT_RAN_* bits of every call since the last GstatJaxBackendsRan(1):
// the calls run on XLA's threads, whose contexts Python cannot ask, and the
// tests need to see that a GPU array really ran on gstat's CUDA backend.
std::atomic<unsigned> backends_ran{0};

// gstat's statuses as XLA errors. An element that failed numerically (not
// positive definite, singular, not converged) already has NaN outputs while
// the others are computed: that is JAX's convention for these failures
// (jnp.linalg.cholesky gives NaN), so it is a success here.
ffi::Error Finish(const char *op, gstat_ctx *ctx, gstat_status st) {
  backends_ran.fetch_or(gstat_ctx_last_backends(ctx), std::memory_order_relaxed);
  switch (st) {
    case GSTAT_OK:
    case GSTAT_ENOTPD:
    case GSTAT_ESINGULAR:
    case GSTAT_ENOCONV: return ffi::Error::Success();
    case GSTAT_ENOMEM:
      return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                        std::string("gstat ") + op + ": " + gstat_ctx_last_error(ctx));
    default:
      return Fail(op, std::string(gstat_status_string(st)) + ": " + gstat_ctx_last_error(ctx));
  }
}

// Every output must have the input's dtype: jax.py asks for that, and gstat
// would convert silently otherwise.
ffi::Error SameDtype(const char *op, const gstat_matrix &a, const gstat_matrix &b) {
  if (a.dtype != b.dtype) return Fail(op, "operands and results must share one dtype");
  return ffi::Error::Success();
}

ffi::Error EighImpl(const Place &place, ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> w,
                    ffi::Result<ffi::AnyBuffer> *v, int32_t upper) {
  const char *op = v ? "eigh" : "eigvalsh";
  gstat_matrix A, W, V;
  if (auto e = Describe(op, "a", a, false, place, &A); e.failure()) return e;
  if (auto e = Describe(op, "w", *w, true, place, &W); e.failure()) return e;
  if (v) {
    if (auto e = Describe(op, "v", **v, false, place, &V); e.failure()) return e;
    if (auto e = SameDtype(op, A, V); e.failure()) return e;
  }
  if (auto e = SameDtype(op, A, W); e.failure()) return e;
  gstat_ctx *ctx;
  if (auto e = GetContext(op, place, &ctx); e.failure()) return e;
  gstat_status st =
      gstat_eigh(ctx, &A, upper ? GSTAT_UPPER : GSTAT_LOWER, &W, v ? &V : nullptr, nullptr);
  return Finish(op, ctx, st);
}

ffi::Error CholeskyImpl(const Place &place, ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> l,
                        int32_t upper) {
  const char *op = "cholesky";
  gstat_matrix A, L;
  if (auto e = Describe(op, "a", a, false, place, &A); e.failure()) return e;
  if (auto e = Describe(op, "l", *l, false, place, &L); e.failure()) return e;
  if (auto e = SameDtype(op, A, L); e.failure()) return e;
  gstat_ctx *ctx;
  if (auto e = GetContext(op, place, &ctx); e.failure()) return e;
  return Finish(op, ctx, gstat_cholesky(ctx, &A, upper ? GSTAT_UPPER : GSTAT_LOWER, &L, nullptr));
}

// Both solves: the factor / triangle t, right-hand sides b, solution x.
// triangular < 0 is the Cholesky solve; otherwise it holds op(T)'s trans.
ffi::Error SolveImpl(const Place &place, ffi::AnyBuffer t, ffi::AnyBuffer b,
                     ffi::Result<ffi::AnyBuffer> x, int32_t upper, int32_t triangular,
                     int32_t unit) {
  const char *op = triangular < 0 ? "cholesky_solve" : "solve_triangular";
  gstat_matrix T, B, X;
  if (auto e = Describe(op, "a", t, false, place, &T); e.failure()) return e;
  if (auto e = Describe(op, "b", b, false, place, &B); e.failure()) return e;
  if (auto e = Describe(op, "x", *x, false, place, &X); e.failure()) return e;
  if (auto e = SameDtype(op, T, B); e.failure()) return e;
  if (auto e = SameDtype(op, T, X); e.failure()) return e;
  if (T.batch != B.batch) return Fail(op, "a and b must have the same batch dimensions");
  gstat_ctx *ctx;
  if (auto e = GetContext(op, place, &ctx); e.failure()) return e;
  gstat_uplo uplo = upper ? GSTAT_UPPER : GSTAT_LOWER;
  gstat_status st = triangular < 0 ? gstat_cholesky_solve(ctx, &T, uplo, &B, &X, nullptr)
                                   : gstat_triangular_solve(
                                         ctx, &T, uplo, triangular ? GSTAT_TRANS : GSTAT_NO_TRANS,
                                         unit ? GSTAT_UNIT : GSTAT_NON_UNIT, &B, &X, nullptr);
  return Finish(op, ctx, st);
}

constexpr Place kHost{GSTAT_HOST, 0, nullptr};

Place OnDevice(void *stream, int32_t device) {
  return Place{GSTAT_CUDA, device, stream};
}

}  // namespace

// ---- the handlers: one CPU and one CUDA binding per operation -------------

// The CUDA bindings take the stream as void*: gstat takes it that way, and
// this file then needs no CUDA header (it builds where CUDA is absent).
#define GSTAT_CUDA_CTX .Ctx<ffi::PlatformStream<void *>>().Ctx<ffi::DeviceOrdinal>()

// The library is built with hidden visibility; these are what jax.py looks up.
#define GSTAT_JAX_EXPORT(fn) \
  extern "C" __attribute__((visibility("default"))) XLA_FFI_Error *fn(XLA_FFI_CallFrame *)
GSTAT_JAX_EXPORT(GstatEighCpu);
GSTAT_JAX_EXPORT(GstatEighCuda);
GSTAT_JAX_EXPORT(GstatEigvalshCpu);
GSTAT_JAX_EXPORT(GstatEigvalshCuda);
GSTAT_JAX_EXPORT(GstatCholeskyCpu);
GSTAT_JAX_EXPORT(GstatCholeskyCuda);
GSTAT_JAX_EXPORT(GstatSolveCpu);
GSTAT_JAX_EXPORT(GstatSolveCuda);

// Which backends (GSTAT_RAN_* bits) ran the handlers' calls since the last
// reset; `reset` nonzero clears the record after reading it.
extern "C" __attribute__((visibility("default"))) unsigned GstatJaxBackendsRan(int reset) {
  return reset ? backends_ran.exchange(0) : backends_ran.load();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatEighCpu,
    [](ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> w, ffi::Result<ffi::AnyBuffer> v,
       int32_t upper) { return EighImpl(kHost, a, w, &v, upper); },
    ffi::Ffi::Bind()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatEighCuda,
    [](void *stream, int32_t device, ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> w,
       ffi::Result<ffi::AnyBuffer> v,
       int32_t upper) { return EighImpl(OnDevice(stream, device), a, w, &v, upper); },
    ffi::Ffi::Bind() GSTAT_CUDA_CTX.Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatEigvalshCpu,
    [](ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> w, int32_t upper) {
      return EighImpl(kHost, a, w, nullptr, upper);
    },
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<int32_t>("upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatEigvalshCuda,
    [](void *stream, int32_t device, ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> w,
       int32_t upper) { return EighImpl(OnDevice(stream, device), a, w, nullptr, upper); },
    ffi::Ffi::Bind() GSTAT_CUDA_CTX.Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<int32_t>(
        "upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatCholeskyCpu,
    [](ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> l, int32_t upper) {
      return CholeskyImpl(kHost, a, l, upper);
    },
    ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<int32_t>("upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatCholeskyCuda,
    [](void *stream, int32_t device, ffi::AnyBuffer a, ffi::Result<ffi::AnyBuffer> l,
       int32_t upper) { return CholeskyImpl(OnDevice(stream, device), a, l, upper); },
    ffi::Ffi::Bind() GSTAT_CUDA_CTX.Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<int32_t>(
        "upper"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatSolveCpu,
    [](ffi::AnyBuffer t, ffi::AnyBuffer b, ffi::Result<ffi::AnyBuffer> x, int32_t upper,
       int32_t triangular,
       int32_t unit) { return SolveImpl(kHost, t, b, x, upper, triangular, unit); },
    ffi::Ffi::Bind()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("upper")
        .Attr<int32_t>("triangular")
        .Attr<int32_t>("unit"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatSolveCuda,
    [](void *stream, int32_t device, ffi::AnyBuffer t, ffi::AnyBuffer b,
       ffi::Result<ffi::AnyBuffer> x, int32_t upper, int32_t triangular, int32_t unit) {
      return SolveImpl(OnDevice(stream, device), t, b, x, upper, triangular, unit);
    },
    ffi::Ffi::Bind() GSTAT_CUDA_CTX.Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("upper")
        .Attr<int32_t>("triangular")
        .Attr<int32_t>("unit"));
