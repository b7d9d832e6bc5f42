// XLA FFI handlers of gstat.jax: eigh, eigvalsh, Cholesky, the two solves and
// the PCA projection on XLA buffers, for the CPU (host memory) and CUDA (device memory, on the
// stream XLA gives the call). gstat/jax.py loads this library with ctypes and
// registers the exported handler symbols with jax.ffi.register_ffi_target.
//
// XLA hands every buffer dense and row-major, so each operand is one gstat
// descriptor: all leading dimensions fold into gstat's batch, the last two
// are the matrix. jax.py broadcasts the operands of a solve to one batch
// shape before the call, so a handler only checks that they agree.
#include <dlfcn.h>

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

// ---- the PCA projection ----------------------------------------------------

// gstat_pca_transform takes the fitted parameters as host float64 arrays (it
// uploads what its device projection needs itself). On CUDA they arrive in
// device memory: they are read back through the CUDA driver (libcuda.so.1,
// present wherever a GPU runs; loaded at run time so that this file needs no
// CUDA header), on XLA's stream, which the copy then waits for.
struct CudaDriver {
  using Ctx = void *;
  int (*device_get)(int *, int) = nullptr;
  int (*primary_retain)(Ctx *, int) = nullptr;
  int (*primary_release)(int) = nullptr;
  int (*push)(Ctx) = nullptr;
  int (*pop)(Ctx *) = nullptr;
  int (*copy_dtoh)(void *, unsigned long long, size_t, void *) = nullptr;
  int (*sync)(void *) = nullptr;
  bool ok = false;
  CudaDriver() {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    // the handle stays open: the driver is needed for the process's lifetime
    ok = Load(h, "cuDeviceGet", &device_get) &&
         Load(h, "cuDevicePrimaryCtxRetain", &primary_retain) &&
         Load(h, "cuDevicePrimaryCtxRelease_v2", &primary_release) &&
         Load(h, "cuCtxPushCurrent_v2", &push) && Load(h, "cuCtxPopCurrent_v2", &pop) &&
         Load(h, "cuMemcpyDtoHAsync_v2", &copy_dtoh) && Load(h, "cuStreamSynchronize", &sync);
  }
  template <class F>
  static bool Load(void *h, const char *name, F *f) {
    *f = reinterpret_cast<F>(dlsym(h, name));
    return *f != nullptr;
  }
};

// bytes of device memory at `src` into `dst`, ordered on `place`'s stream,
// in the device's primary context (XLA's)
ffi::Error CopyToHost(const char *op, const Place &place, const void *src, size_t bytes,
                      void *dst) {
  static CudaDriver cu;
  if (!cu.ok) return Fail(op, "cannot load the CUDA driver (libcuda.so.1)");
  int dev;
  CudaDriver::Ctx ctx, popped;
  if (cu.device_get(&dev, place.device) != 0 || cu.primary_retain(&ctx, dev) != 0)
    return Fail(op, "cannot reach the CUDA device's primary context");
  int rc = cu.push(ctx);
  if (rc == 0) {
    rc = cu.copy_dtoh(dst, reinterpret_cast<unsigned long long>(src), bytes, place.stream);
    if (rc == 0) rc = cu.sync(place.stream);
    cu.pop(&popped);
  }
  cu.primary_release(dev);
  if (rc != 0)
    return Fail(
        op, "copying the PCA parameters to the host failed (CUresult " + std::to_string(rc) + ")");
  return ffi::Error::Success();
}

// The `count` values of parameter buffer `buf` (X's dtype) as float64.
ffi::Error HostDoubles(const char *op, const Place &place, const ffi::AnyBuffer &buf,
                       gstat_dtype dt, std::vector<double> *out) {
  size_t count = buf.element_count(), size = gstat_dtype_size(dt);
  std::vector<unsigned char> staged;
  const unsigned char *raw = static_cast<const unsigned char *>(buf.untyped_data());
  if (place.location == GSTAT_CUDA && count > 0) {
    staged.resize(count * size);
    if (auto e = CopyToHost(op, place, raw, count * size, staged.data()); e.failure()) return e;
    raw = staged.data();
  }
  out->resize(count);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char *at = raw + i * size;
    if (dt == GSTAT_F64) {
      std::memcpy(&(*out)[i], at, sizeof(double));
    } else if (dt == GSTAT_F32) {
      float f;
      std::memcpy(&f, at, sizeof f);
      (*out)[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, at, sizeof h);
      (*out)[i] = gstat_bf16_to_f32(h);
    }
  }
  return ffi::Error::Success();
}

// scores = ((x - mean) components^T) [/ sqrt(ev)] for every element of the
// batch: x (b, m, p), mean (b, p), components (b, k, p), ev (b, k).
ffi::Error ProjectImpl(const Place &place, ffi::AnyBuffer x, ffi::AnyBuffer mean,
                       ffi::AnyBuffer comp, ffi::AnyBuffer ev, ffi::Result<ffi::AnyBuffer> y,
                       int32_t whiten) {
  const char *op = "pca_project";
  gstat_matrix X, M, C, E, Y;
  if (auto e = Describe(op, "x", x, false, place, &X); e.failure()) return e;
  if (auto e = Describe(op, "mean", mean, true, place, &M); e.failure()) return e;
  if (auto e = Describe(op, "components", comp, false, place, &C); e.failure()) return e;
  if (auto e = Describe(op, "explained_variance", ev, true, place, &E); e.failure()) return e;
  if (auto e = Describe(op, "scores", *y, false, place, &Y); e.failure()) return e;
  for (const gstat_matrix *m : {&M, &C, &E, &Y})
    if (auto e = SameDtype(op, X, *m); e.failure()) return e;
  const int64_t k = C.rows, p = C.cols;
  if (M.batch != X.batch || C.batch != X.batch || E.batch != X.batch || M.rows != p ||
      X.cols != p || E.rows != k)
    return Fail(op, "inconsistent shapes of x, mean, components and explained_variance");
  std::vector<double> mean_h, comp_h, ev_h, scale(static_cast<size_t>(X.batch * p), 1.0);
  if (auto e = HostDoubles(op, place, mean, X.dtype, &mean_h); e.failure()) return e;
  if (auto e = HostDoubles(op, place, comp, X.dtype, &comp_h); e.failure()) return e;
  if (auto e = HostDoubles(op, place, ev, X.dtype, &ev_h); e.failure()) return e;
  gstat_pca_result r;
  std::memset(&r, 0, sizeof r);
  r.batch = X.batch;
  r.n_samples = X.rows;
  r.n_features = p;
  r.n_components = k;
  r.whiten = whiten != 0;
  r.components = comp_h.data();
  r.mean = mean_h.data();
  r.explained_variance = ev_h.data();
  r.scale = scale.data();  // no scaling: the projection of gstat.torch and scikit-learn
  gstat_ctx *ctx;
  if (auto e = GetContext(op, place, &ctx); e.failure()) return e;
  return Finish(op, ctx, gstat_pca_transform(ctx, &r, &X, &Y));
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
GSTAT_JAX_EXPORT(GstatPcaProjectCpu);
GSTAT_JAX_EXPORT(GstatPcaProjectCuda);

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

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatPcaProjectCpu,
    [](ffi::AnyBuffer x, ffi::AnyBuffer mean, ffi::AnyBuffer comp, ffi::AnyBuffer ev,
       ffi::Result<ffi::AnyBuffer> y,
       int32_t whiten) { return ProjectImpl(kHost, x, mean, comp, ev, y, whiten); },
    ffi::Ffi::Bind()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("whiten"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    GstatPcaProjectCuda,
    [](void *stream, int32_t device, ffi::AnyBuffer x, ffi::AnyBuffer mean, ffi::AnyBuffer comp,
       ffi::AnyBuffer ev, ffi::Result<ffi::AnyBuffer> y, int32_t whiten) {
      return ProjectImpl(OnDevice(stream, device), x, mean, comp, ev, y, whiten);
    },
    ffi::Ffi::Bind() GSTAT_CUDA_CTX.Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Arg<ffi::AnyBuffer>()
        .Ret<ffi::AnyBuffer>()
        .Attr<int32_t>("whiten"));
