/*
 * gstat._core: the CPython extension over gstat's C API.
 *
 * Each function converts its arguments into gstat_matrix descriptors (numpy
 * arrays in place whenever their strides allow; DLPack capsules of CUDA
 * tensors as device descriptors), calls the C library with the GIL released
 * and turns a failed status into an exception carrying the library's message.
 * Nothing numerical happens here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define PY_ARRAY_UNIQUE_SYMBOL gstat_ARRAY_API
#include <numpy/arrayobject.h>

#ifndef NPY_2_0_API_VERSION /* numpy < 2 has no accessor */
#define PyDataType_ELSIZE(d) ((d)->elsize)
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gstat/gstat.h>

#include "convert.h"

/* ---- DLPack ABI (the protocol's public C structs, v0.8 layout) ------------- */

typedef struct {
  int32_t device_type; /* 1 CPU, 2 CUDA, 3 CUDA host, 13 CUDA managed */
  int32_t device_id;
} dl_device;

typedef struct {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat */
  uint8_t bits;
  uint16_t lanes;
} dl_dtype;

typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape;
  int64_t *strides; /* elements; NULL: compact row-major */
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
  dl_tensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

/* ---- module state ------------------------------------------------------------ */

static PyObject *LinAlgError, *UnsupportedError, *BackendError;
static int bf16_typenum = -1; /* ml_dtypes.bfloat16's numpy type number, if installed */
static int default_backend = GSTAT_BACKEND_AUTO;
static int default_threads = 0;
static _Thread_local char last_backend[16] = "none";
static _Thread_local int last_threads; /* gstat_ctx_last_threads of this thread's last call */
static _Thread_local gstat_device_stats last_device_stats; /* of this thread's last call */
static PyTypeObject EighResultType;

/* ---- contexts: a pool, one context per concurrent call --------------------------
 * The pool is touched only while the GIL is held; a context is used by one
 * thread at a time (the library's rule) and keeps its workspace between calls. */

typedef struct pooled {
  gstat_ctx *ctx;
  int backend, device, threads, busy;
  gstat_device_stats before; /* the counters when the running call began */
  PyObject *callback;        /* borrowed while a call runs: progress(done, total, what) */
  struct pooled *next;
} pooled;

static pooled *pool_head;

/* The progress callback of this thread's calls that take none of their own
 * (gstat._progress sets it around a PCA, covariance or eigh call): one per
 * Python thread, so a bar never shows another thread's work. Owned. */
static _Thread_local PyObject *thread_progress;

/* Called by the library between units of work, from the calling thread with
 * the GIL released: take it, look for Ctrl-C, report progress. */
static int progress_trampoline(int64_t done, int64_t total, const char *what, void *user) {
  pooled *p = user;
  PyGILState_STATE g = PyGILState_Ensure();
  int stop = PyErr_CheckSignals() < 0;
  if (!stop && p->callback) {
    PyObject *r =
        PyObject_CallFunction(p->callback, "LLs", (long long)done, (long long)total, what);
    if (!r) stop = 1;
    Py_XDECREF(r);
  }
  PyGILState_Release(g);
  return stop;
}

static int parse_backend(PyObject *obj, int *out) {
  if (obj == Py_None) {
    *out = default_backend;
    return 0;
  }
  const char *s = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
  if (s && !strcmp(s, "auto"))
    *out = GSTAT_BACKEND_AUTO;
  else if (s && !strcmp(s, "cpu"))
    *out = GSTAT_BACKEND_CPU;
  else if (s && !strcmp(s, "cuda"))
    *out = GSTAT_BACKEND_CUDA;
  else {
    PyErr_Format(PyExc_ValueError, "backend must be 'auto', 'cpu' or 'cuda', got %R", obj);
    return -1;
  }
  return 0;
}

static pooled *ctx_acquire(int backend, int device) {
  /* a setting of 0 is OpenMP's default now (threadpoolctl may have lowered
   * it), not the one a pooled context resolved when it was made */
  int resolved = default_threads ? default_threads : gstat_default_num_threads();
  for (pooled *p = pool_head; p; p = p->next)
    if (!p->busy && p->backend == backend && p->device == device && p->threads == default_threads &&
        gstat_ctx_num_threads(p->ctx) == resolved) {
      p->busy = 1;
      p->callback = thread_progress;
      gstat_ctx_device_stats(p->ctx, &p->before, sizeof p->before);
      return p;
    }
  pooled *p = calloc(1, sizeof *p);
  if (!p) return (pooled *)PyErr_NoMemory();
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = (gstat_backend)backend;
  opt.num_threads = default_threads;
  opt.cuda_device = device;
  opt.progress = progress_trampoline;
  opt.progress_user = p;
  gstat_status st = gstat_ctx_create(&p->ctx, &opt);
  if (st != GSTAT_OK) {
    free(p);
    if (st == GSTAT_EUNSUPPORTED)
      PyErr_SetString(UnsupportedError,
                      "backend 'cuda' asked for, but the CUDA module (libgstat_cuda.so.0) is not "
                      "installed, does not load, or finds no such device "
                      "(gstat.cuda_available(reason=True) says which)");
    else if (st == GSTAT_ENOMEM)
      PyErr_NoMemory();
    else
      PyErr_Format(PyExc_ValueError, "cannot create a gstat context: %s", gstat_status_string(st));
    return NULL;
  }
  p->backend = backend;
  p->device = device;
  p->threads = default_threads;
  p->busy = 1;
  p->callback = thread_progress;
  gstat_ctx_device_stats(p->ctx, &p->before, sizeof p->before);
  p->next = pool_head;
  pool_head = p;
  return p;
}

/* What the call that used p did on the device: its counters' growth. */
static void record_device_stats(const pooled *p) {
  gstat_device_stats now;
  gstat_ctx_device_stats(p->ctx, &now, sizeof now);
  last_device_stats.allocations = now.allocations - p->before.allocations;
  last_device_stats.graph_captures = now.graph_captures - p->before.graph_captures;
  last_device_stats.graph_refusals = now.graph_refusals - p->before.graph_refusals;
  last_device_stats.graph_launches = now.graph_launches - p->before.graph_launches;
  last_device_stats.pipeline_pieces = now.pipeline_pieces - p->before.pipeline_pieces;
  last_device_stats.own_tridiag_chunks = now.own_tridiag_chunks - p->before.own_tridiag_chunks;
  last_device_stats.own_tridiag_degenerate =
      now.own_tridiag_degenerate - p->before.own_tridiag_degenerate;
  last_device_stats.own_tridiag_clustered =
      now.own_tridiag_clustered - p->before.own_tridiag_clustered;
}

static void ctx_release(pooled *p) {
  if (!p) return;
  snprintf(last_backend, sizeof last_backend, "%s", gstat_ctx_last_backend_name(p->ctx));
  last_threads = gstat_ctx_last_threads(p->ctx);
  record_device_stats(p);
  p->callback = NULL;
  p->busy = 0;
}

/* ---- status -> exception ----------------------------------------------------------- */

static const char *status_name(gstat_status st) {
  static const char *names[] = {"GSTAT_OK",         "GSTAT_EINVAL",       "GSTAT_ENOMEM",
                                "GSTAT_ENOTFINITE", "GSTAT_ENOTPD",       "GSTAT_ESINGULAR",
                                "GSTAT_ENOCONV",    "GSTAT_EUNSUPPORTED", "GSTAT_EBACKEND",
                                "GSTAT_EIO",        "GSTAT_ECANCELED"};
  return (unsigned)st < sizeof names / sizeof *names ? names[st] : "GSTAT_UNKNOWN";
}

static PyObject *raise_message(gstat_status st, const char *msg) {
  /* A Python exception raised inside the progress callback (KeyboardInterrupt
   * from Ctrl-C, or the callback's own) is what the caller should see. */
  if (PyErr_Occurred()) return NULL;
  PyObject *type;
  switch (st) {
    case GSTAT_EINVAL:
    case GSTAT_ENOTFINITE: type = PyExc_ValueError; break;
    case GSTAT_ENOMEM: type = PyExc_MemoryError; break;
    case GSTAT_ENOTPD:
    case GSTAT_ESINGULAR:
    case GSTAT_ENOCONV: type = LinAlgError; break;
    case GSTAT_EUNSUPPORTED: type = UnsupportedError; break;
    case GSTAT_EIO: type = PyExc_OSError; break;
    case GSTAT_ECANCELED: type = PyExc_KeyboardInterrupt; break;
    default: type = BackendError; break;
  }
  if (!msg || !*msg) msg = gstat_status_string(st);
  PyObject *exc = PyObject_CallFunction(type, "s", msg);
  if (!exc) return NULL;
  PyObject *name = PyUnicode_FromString(status_name(st));
  if (name) PyObject_SetAttrString(exc, "status", name);
  Py_XDECREF(name);
  PyErr_Clear();
  PyErr_SetObject(type, exc);
  Py_DECREF(exc);
  return NULL;
}

static PyObject *raise_status(gstat_status st, pooled *p) {
  return raise_message(st, p ? gstat_ctx_last_error(p->ctx) : NULL);
}

/* ---- arrays -> descriptors ------------------------------------------------------------ */

typedef struct {
  gstat_matrix m;
  PyObject *owner; /* new reference: the ndarray used, or the DLPack capsule */
  int ndim;        /* of the whole array */
  npy_intp shape[NPY_MAXDIMS];
} marg;

static void marg_clear(marg *a) {
  Py_CLEAR(a->owner);
}

static int typenum_of(gstat_dtype dt) {
  return dt == GSTAT_F32 ? NPY_FLOAT32 : dt == GSTAT_F64 ? NPY_FLOAT64 : bf16_typenum;
}

static int dtype_of(int typenum, gstat_dtype *dt) {
  if (typenum == NPY_FLOAT32)
    *dt = GSTAT_F32;
  else if (typenum == NPY_FLOAT64)
    *dt = GSTAT_F64;
  else if (bf16_typenum >= 0 && typenum == bf16_typenum)
    *dt = GSTAT_BF16;
  else
    return -1;
  return 0;
}

/* Fill a->m's shape and strides from (ndim, shape, element strides); the last
 * one (vector) or two (matrix) dimensions are the matrix, the leading ones
 * collapse into the batch. Returns 0, or -1 when the strides cannot be
 * described (non-positive, or leading dimensions that do not collapse into
 * one stride, or elements that share memory). */
static int describe(marg *a, int vec, const npy_intp *shape, const int64_t *es) {
  int nd = a->ndim, core = vec ? 1 : 2;
  int64_t ext[3], str[3];
  ext[1] = shape[nd - core];
  str[1] = es[nd - core];
  ext[2] = vec ? 1 : shape[nd - 1];
  str[2] = vec ? 1 : es[nd - 1];
  int64_t batch = 1, bstride = 1, expect = 0;
  int have = 0;
  for (int d = nd - core - 1; d >= 0; d--) { /* innermost leading dimension first */
    batch *= shape[d];
    if (shape[d] <= 1) continue;
    if (have && es[d] != expect) return -1;
    if (!have) bstride = es[d];
    have = 1;
    expect = es[d] * shape[d];
  }
  ext[0] = batch;
  str[0] = bstride;
  if (ext[0] == 0 || ext[1] == 0 || ext[2] == 0) /* empty: nothing is read or written */
    str[0] = str[1] = str[2] = 1;
  for (int d = 0; d < 3; d++) {
    if (ext[d] <= 1)
      str[d] = 1; /* ignored by the library */
    else if (str[d] < 1)
      return -1;
  }
  /* the library refuses self-overlap; find it here to copy inputs instead */
  int64_t reach = 0;
  int used[3] = {0, 0, 0};
  if (ext[0] == 0 || ext[1] == 0 || ext[2] == 0) used[0] = used[1] = used[2] = 1;
  for (int k = 0; k < 3 && !(used[0] && used[1] && used[2]); k++) {
    int best = -1;
    for (int d = 0; d < 3; d++)
      if (!used[d] && (best < 0 || str[d] < str[best])) best = d;
    used[best] = 1;
    if (ext[best] <= 1) continue;
    if (str[best] <= reach) return -1;
    reach += (ext[best] - 1) * str[best];
  }
  a->m.batch = ext[0];
  a->m.rows = ext[1];
  a->m.cols = ext[2];
  a->m.batch_stride = str[0];
  a->m.row_stride = str[1];
  a->m.col_stride = str[2];
  return 0;
}

static int describe_ndarray(marg *a, PyArrayObject *arr, int vec) {
  int nd = PyArray_NDIM(arr);
  npy_intp isz = PyArray_ITEMSIZE(arr);
  int64_t es[NPY_MAXDIMS];
  a->ndim = nd;
  for (int d = 0; d < nd; d++) {
    npy_intp s = PyArray_STRIDES(arr)[d];
    a->shape[d] = PyArray_DIMS(arr)[d];
    es[d] = (s % isz == 0) ? s / isz : 0;                      /* 0: not describable */
    if (a->shape[d] <= 1 || PyArray_SIZE(arr) == 0) es[d] = 1; /* strides that never step */
  }
  a->m.data = PyArray_DATA(arr);
  a->m.location = GSTAT_HOST;
  a->m.device = 0;
  return describe(a, vec, a->shape, es);
}

/* An input array: any object numpy can turn into an array. float32, float64
 * and bfloat16 are used as they are; other real types are converted (integers
 * and bool to float64, float16 to float32), as numpy.linalg does. One copy is
 * made only when the strides cannot be described. */
/* A numpy masked array with masked entries: its mask would be silently lost
 * in the conversion, so it is refused (-1 with TypeError). */
static int refuse_masked(PyObject *obj, const char *name) {
  static PyObject *is_masked; /* numpy.ma.is_masked, imported once */
  if (!PyArray_Check(obj) || PyArray_CheckExact(obj)) return 0;
  if (!is_masked) {
    PyObject *ma = PyImport_ImportModule("numpy.ma");
    if (!ma) return -1;
    is_masked = PyObject_GetAttrString(ma, "is_masked");
    Py_DECREF(ma);
    if (!is_masked) return -1;
  }
  PyObject *r = PyObject_CallOneArg(is_masked, obj);
  if (!r) return -1;
  int masked = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (masked < 0) return -1;
  if (masked)
    PyErr_Format(PyExc_TypeError,
                 "%s: masked arrays are not supported (the mask would be ignored); pass "
                 "x.filled(value), or x.filled(np.nan) to a function with a missing-value mode",
                 name);
  return masked ? -1 : 0;
}

/* Whether obj is a CUDA tensor (DLPack device type CUDA or CUDA managed). */
static int is_cuda_tensor(PyObject *obj) {
  if (PyArray_Check(obj) || !PyObject_HasAttrString(obj, "__dlpack_device__")) return 0;
  PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  long kind = -1;
  if (dev && PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) >= 1)
    kind = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
  Py_XDECREF(dev);
  PyErr_Clear();
  return kind == 2 || kind == 13;
}

/* A CUDA array where host memory is needed: gstat's UnsupportedError (-1),
 * found before numpy converts it, whose error would be the producer's
 * (torch: "can't convert cuda:0 device type tensor to numpy"). Objects with
 * only __cuda_array_interface__ (no DLPack) are device arrays too. */
static int refuse_device(PyObject *obj, const char *name) {
  if (PyArray_Check(obj)) return 0;
  int dlpack = is_cuda_tensor(obj);
  if (!dlpack && !PyObject_HasAttrString(obj, "__cuda_array_interface__")) return 0;
  PyErr_Format(UnsupportedError,
               "%s: a CUDA array (%.100s) where this call takes host memory; pass host data "
               "(torch: x.cpu(), CuPy: x.get())%s",
               name, Py_TYPE(obj)->tp_name,
               dlpack ? "" : " or, for device work, a DLPack tensor (torch, CuPy)");
  return -1;
}

static int host_in(PyObject *obj, int vec, const char *name, marg *a) {
  memset(a, 0, sizeof *a);
  if (refuse_device(obj, name) < 0 || refuse_masked(obj, name) < 0) return -1;
  PyArrayObject *arr =
      (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
  if (!arr) return -1;
  gstat_dtype dt = GSTAT_F64;
  if (dtype_of(PyArray_TYPE(arr), &dt) < 0) {
    int t = PyArray_TYPE(arr), to;
    if (PyTypeNum_ISBOOL(t) || PyTypeNum_ISINTEGER(t))
      to = NPY_FLOAT64;
    else if (t == NPY_FLOAT16)
      to = NPY_FLOAT32;
    else if (t == NPY_LONGDOUBLE)
      to = NPY_FLOAT64;
    else {
      PyErr_Format(PyExc_TypeError,
                   "%s: dtype %R is not supported (gstat takes real float32, float64 or "
                   "bfloat16 data)",
                   name, (PyObject *)PyArray_DESCR(arr));
      Py_DECREF(arr);
      return -1;
    }
    PyArrayObject *c = (PyArrayObject *)PyArray_FROM_OTF((PyObject *)arr, to, NPY_ARRAY_CARRAY_RO);
    Py_DECREF(arr);
    if (!c) return -1;
    arr = c;
    dtype_of(to, &dt);
  }
  int need = vec ? 1 : 2;
  if (PyArray_NDIM(arr) < need) {
    PyErr_Format(PyExc_ValueError, "%s: %d-dimensional array given; it must be at least %s", name,
                 PyArray_NDIM(arr), vec ? "1-dimensional" : "2-dimensional");
    Py_DECREF(arr);
    return -1;
  }
  if (describe_ndarray(a, arr, vec) < 0) {
    PyArrayObject *c = (PyArrayObject *)PyArray_NewCopy(arr, NPY_CORDER);
    Py_DECREF(arr);
    if (!c) return -1;
    arr = c;
    describe_ndarray(a, arr, vec);
  }
  a->m.dtype = dt;
  a->owner = (PyObject *)arr;
  return 0;
}

static int same_shape(int nd, const npy_intp *got, const npy_intp *want) {
  for (int d = 0; d < nd; d++)
    if (got[d] != want[d]) return 0;
  return 1;
}

static PyObject *shape_str(int nd, const npy_intp *s) {
  PyObject *t = PyTuple_New(nd);
  for (int d = 0; t && d < nd; d++) PyTuple_SET_ITEM(t, d, PyLong_FromSsize_t(s[d]));
  return t;
}

/* An output: `obj` None allocates a C-ordered array of `typenum`; otherwise
 * obj must be a writable ndarray of exactly that shape, float32, float64 or
 * bfloat16, whose strides the descriptor can express (it is written in place). */
static int host_out(PyObject *obj, int vec, const char *name, int nd, const npy_intp *shape,
                    int typenum, marg *a) {
  memset(a, 0, sizeof *a);
  PyArrayObject *arr;
  if (obj == Py_None || !obj) {
    arr = (PyArrayObject *)PyArray_SimpleNew(nd, (npy_intp *)shape, typenum);
    if (!arr) return -1;
  } else {
    if (!PyArray_Check(obj)) {
      PyErr_Format(PyExc_TypeError, "%s must be a numpy.ndarray, not %.100s", name,
                   Py_TYPE(obj)->tp_name);
      return -1;
    }
    arr = (PyArrayObject *)obj;
    Py_INCREF(arr);
    PyObject *want = NULL, *got = NULL;
    gstat_dtype dt = GSTAT_F64;
    if (PyArray_NDIM(arr) != nd || !same_shape(nd, PyArray_DIMS(arr), shape)) {
      want = shape_str(nd, shape);
      got = shape_str(PyArray_NDIM(arr), PyArray_DIMS(arr));
      PyErr_Format(PyExc_ValueError, "%s has shape %R, expected %R", name, got, want);
    } else if (dtype_of(PyArray_TYPE(arr), &dt) < 0) {
      PyErr_Format(PyExc_TypeError, "%s has dtype %R; it must be float32, float64 or bfloat16",
                   name, (PyObject *)PyArray_DESCR(arr));
    } else if (!PyArray_ISWRITEABLE(arr) || !PyArray_ISALIGNED(arr) || !PyArray_ISNOTSWAPPED(arr)) {
      PyErr_Format(PyExc_ValueError, "%s must be writeable, aligned and in native byte order",
                   name);
    }
    Py_XDECREF(want);
    Py_XDECREF(got);
    if (PyErr_Occurred()) {
      Py_DECREF(arr);
      return -1;
    }
  }
  gstat_dtype dt = GSTAT_F64;
  dtype_of(PyArray_TYPE(arr), &dt);
  if (describe_ndarray(a, arr, vec) < 0) {
    PyErr_Format(PyExc_ValueError,
                 "%s: its strides cannot be written in place (negative, not a multiple of the "
                 "item size, or leading dimensions that do not collapse into one batch stride)",
                 name);
    Py_DECREF(arr);
    return -1;
  }
  a->m.dtype = dt;
  a->owner = (PyObject *)arr;
  return 0;
}

/* A CUDA tensor through DLPack (torch, CuPy): obj.__dlpack__(stream=stream)
 * gives a capsule whose data the library reads or writes in place. The
 * capsule is not consumed; releasing it calls the producer's deleter while
 * obj itself keeps the memory alive. */
static int dl_arg(PyObject *obj, int vec, const char *name, long long stream, marg *a) {
  memset(a, 0, sizeof *a);
  PyObject *cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  if (cap && stream != 0) { /* ask the producer to order its work before our stream */
    Py_DECREF(cap);
    PyObject *kw = Py_BuildValue("{s:L}", "stream", stream);
    PyObject *meth = kw ? PyObject_GetAttrString(obj, "__dlpack__") : NULL;
    PyObject *empty = PyTuple_New(0);
    cap = meth && empty ? PyObject_Call(meth, empty, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(meth);
    Py_XDECREF(empty);
  }
  if (!cap) return -1;
  dl_managed *mt = PyCapsule_GetPointer(cap, "dltensor");
  if (!mt) {
    Py_DECREF(cap);
    return -1;
  }
  a->owner = cap;
  dl_tensor *t = &mt->dl_tensor;
  if (t->device.device_type != 2 && t->device.device_type != 13) {
    PyErr_Format(PyExc_ValueError, "%s: DLPack device type %d is not CUDA", name,
                 (int)t->device.device_type);
    return -1;
  }
  if (t->dtype.lanes != 1 ||
      !((t->dtype.code == 2 && (t->dtype.bits == 32 || t->dtype.bits == 64)) ||
        (t->dtype.code == 4 && t->dtype.bits == 16))) {
    PyErr_Format(PyExc_TypeError,
                 "%s: dtype (code %d, %d bits) is not float32, float64 or bfloat16", name,
                 (int)t->dtype.code, (int)t->dtype.bits);
    return -1;
  }
  int need = vec ? 1 : 2;
  if (t->ndim < need || t->ndim > NPY_MAXDIMS) {
    PyErr_Format(PyExc_ValueError, "%s: %d-dimensional tensor given; it must be at least %s", name,
                 (int)t->ndim, vec ? "1-dimensional" : "2-dimensional");
    return -1;
  }
  int64_t es[NPY_MAXDIMS];
  a->ndim = t->ndim;
  int64_t run = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    a->shape[d] = (npy_intp)t->shape[d];
    es[d] = t->strides ? t->strides[d] : run;
    run *= t->shape[d];
    if (t->shape[d] <= 1) es[d] = 1;
  }
  if (describe(a, vec, a->shape, es) < 0) {
    PyErr_Format(PyExc_ValueError,
                 "%s: the tensor's strides cannot be described (negative or overlapping, or "
                 "leading dimensions that do not collapse); pass x.contiguous()",
                 name);
    return -1;
  }
  a->m.data = (char *)t->data + t->byte_offset;
  a->m.dtype = t->dtype.code == 4 ? GSTAT_BF16 : t->dtype.bits == 32 ? GSTAT_F32 : GSTAT_F64;
  a->m.location = GSTAT_CUDA;
  a->m.device = t->device.device_id;
  return 0;
}

/* Device outputs are allocated by the Python layer through the input's own
 * library; check their shape here. */
static int dl_out(PyObject *obj, int vec, const char *name, long long stream, int nd,
                  const npy_intp *shape, marg *a) {
  if (!obj || obj == Py_None) {
    PyErr_Format(PyExc_TypeError, "%s: a device output tensor is needed", name);
    return -1;
  }
  if (dl_arg(obj, vec, name, stream, a) < 0) return -1;
  if (a->ndim != nd || !same_shape(nd, a->shape, shape)) {
    PyErr_Format(PyExc_ValueError, "%s has the wrong shape", name);
    return -1;
  }
  return 0;
}

/* ---- running a call: GIL released; Ctrl-C through the progress callback ---------------- */

static int64_t to_i64(PyObject *o) {
  return PyLong_AsLongLong(o);
}

typedef enum { OP_EIGH, OP_CHOL, OP_CHOL_SOLVE, OP_TRI_SOLVE } lin_op;

typedef struct {
  lin_op op;
  gstat_uplo uplo;
  gstat_trans trans;
  gstat_diag diag;
  marg *in, *in2, *out, *out2; /* eigh: A, -, w, V; chol: A, -, F; solves: T, B, X */
} lin_call;

static gstat_status lin_run(gstat_ctx *ctx, const lin_call *c) {
  switch (c->op) {
    case OP_EIGH:
      return gstat_eigh(ctx, &c->in->m, c->uplo, &c->out->m, c->out2 ? &c->out2->m : NULL, NULL);
    case OP_CHOL: return gstat_cholesky(ctx, &c->in->m, c->uplo, &c->out->m, NULL);
    case OP_CHOL_SOLVE:
      return gstat_cholesky_solve(ctx, &c->in->m, c->uplo, &c->in2->m, &c->out->m, NULL);
    case OP_TRI_SOLVE:
      return gstat_triangular_solve(ctx, &c->in->m, c->uplo, c->trans, c->diag, &c->in2->m,
                                    &c->out->m, NULL);
  }
  return GSTAT_EINVAL;
}

/* The library reports long batches to the progress callback (the CPU
 * between slices, host data on the GPU between chunks), where Ctrl-C
 * cancels them, and names failing elements of the whole batch. */
static PyObject *lin_execute(pooled *p, const lin_call *c) {
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = lin_run(p->ctx, c);
  Py_END_ALLOW_THREADS if (st == GSTAT_OK) return Py_None;
  return raise_status(st, p);
}

static int parse_uplo(PyObject *o, gstat_uplo *u) {
  const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  if (s && (!strcmp(s, "L") || !strcmp(s, "l")))
    *u = GSTAT_LOWER;
  else if (s && (!strcmp(s, "U") || !strcmp(s, "u")))
    *u = GSTAT_UPPER;
  else {
    PyErr_Format(PyExc_ValueError, "UPLO must be 'L' or 'U', got %R", o);
    return -1;
  }
  return 0;
}

/* Input of a linalg call: numpy (device == -1) or a CUDA tensor. */
static int lin_in(PyObject *obj, int vec, const char *name, long long stream, marg *a) {
  return stream < 0 ? host_in(obj, vec, name, a) : dl_arg(obj, vec, name, stream, a);
}

static int lin_out(PyObject *obj, int vec, const char *name, long long stream, int nd,
                   const npy_intp *shape, gstat_dtype dt, marg *a) {
  if (stream >= 0) return dl_out(obj, vec, name, stream, nd, shape, a);
  return host_out(obj, vec, name, nd, shape, typenum_of(dt), a);
}

/* A second input of a call on device data that may lie on either side (a
 * fitted location or precision kept as numpy, say): the library moves it. */
static int any_in(PyObject *obj, int vec, const char *name, long long stream, marg *a) {
  return stream >= 0 && is_cuda_tensor(obj) ? dl_arg(obj, vec, name, stream, a)
                                            : host_in(obj, vec, name, a);
}

static pooled *lin_ctx(PyObject *backend_obj, const marg *in, long long stream) {
  int backend;
  if (parse_backend(backend_obj, &backend) < 0) return NULL;
  pooled *p = ctx_acquire(backend, in->m.location == GSTAT_CUDA ? in->m.device : 0);
  if (p && stream >= 0) {
    /* CUDA stream 0 (the legacy default) is named 1 in DLPack and by CUDA */
    gstat_status st =
        gstat_ctx_set_cuda_stream(p->ctx, (void *)(intptr_t)(stream == 0 ? 1 : stream));
    if (st != GSTAT_OK) {
      char msg[sizeof "CUDA device data given, but " + 512];
      snprintf(msg, sizeof msg, "CUDA device data given, but %s", gstat_ctx_last_error(p->ctx));
      raise_message(st, msg);
      ctx_release(p);
      return NULL;
    }
  }
  return p;
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fn) {
  if (nargs == want) return 0;
  PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", fn, want, nargs);
  return -1;
}

/* Functions that later took device data have optional trailing arguments
 * (a stream, device outputs): between `least` and `most` arguments. */
static int check_nargs_up_to(Py_ssize_t nargs, Py_ssize_t least, Py_ssize_t most, const char *fn) {
  if (nargs >= least && nargs <= most) return 0;
  PyErr_Format(PyExc_TypeError, "%s takes %zd to %zd arguments (%zd given)", fn, least, most,
               nargs);
  return -1;
}

/* Argument i, None when not given. */
static PyObject *opt_arg(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t i) {
  return i < nargs ? args[i] : Py_None;
}

/* A stream argument: -1 for None (host data). */
static long long stream_arg(PyObject *o) {
  return o == Py_None ? -1 : to_i64(o);
}

/* eigh(a, UPLO, want_vectors, out_w, out_v, backend, stream) */
static PyObject *py_eigh(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 7, "eigh") < 0) return NULL;
  gstat_uplo uplo;
  if (parse_uplo(args[1], &uplo) < 0) return NULL;
  int want_v = PyObject_IsTrue(args[2]);
  long long stream = args[6] == Py_None ? -1 : to_i64(args[6]);
  if (PyErr_Occurred()) return NULL;
  marg A, W, V;
  memset(&W, 0, sizeof W);
  memset(&V, 0, sizeof V);
  PyObject *ret = NULL;
  pooled *p = NULL;
  if (lin_in(args[0], 0, "a", stream, &A) < 0) goto done;
  if (A.shape[A.ndim - 1] != A.shape[A.ndim - 2]) {
    PyErr_Format(PyExc_ValueError,
                 "eigh: a must be square in its last two dimensions, got %zd x %zd",
                 (Py_ssize_t)A.shape[A.ndim - 2], (Py_ssize_t)A.shape[A.ndim - 1]);
    goto done;
  }
  if (lin_out(args[3], 1, "out[0] (w)", stream, A.ndim - 1, A.shape, A.m.dtype, &W) < 0) goto done;
  if (want_v && lin_out(args[4], 0, "out[1] (v)", stream, A.ndim, A.shape, A.m.dtype, &V) < 0)
    goto done;
  if (!(p = lin_ctx(args[5], &A, stream))) goto done;
  lin_call c = {OP_EIGH, uplo, GSTAT_NO_TRANS, GSTAT_NON_UNIT, &A, NULL, &W, want_v ? &V : NULL};
  if (!lin_execute(p, &c)) goto done;
  if (stream >= 0) { /* device: hand back the caller's tensors, not the capsules */
    ret = want_v ? PyTuple_Pack(2, args[3], args[4]) : (Py_INCREF(args[3]), args[3]);
  } else if (want_v) {
    ret = PyStructSequence_New(&EighResultType);
    if (ret) {
      PyStructSequence_SET_ITEM(ret, 0, W.owner);
      PyStructSequence_SET_ITEM(ret, 1, V.owner);
      W.owner = V.owner = NULL; /* references moved into the result */
    }
  } else {
    ret = W.owner;
    W.owner = NULL;
  }
done:
  ctx_release(p);
  marg_clear(&A);
  marg_clear(&W);
  marg_clear(&V);
  return ret;
}

/* eigh_async(a, w, v, info, batch, n, dtype, upper, device, stream): gstat_eigh_async on
 * raw device pointers (ints; v 0 for values only): a row-major contiguous, w packed, v
 * column-major packed, info 2 x batch int32, dtype 0/1/2 = float32/float64/bfloat16
 * (the caller, gstat.torch, makes them so). No DLPack: torch's __dlpack__ without a
 * stream orders the default stream after the current one, which a capture forbids. */
static PyObject *py_eigh_async(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 10, "eigh_async") < 0) return NULL;
  long long v[10];
  for (int i = 0; i < 10; i++) v[i] = i == 7 ? PyObject_IsTrue(args[i]) : to_i64(args[i]);
  if (PyErr_Occurred()) return NULL;
  static const gstat_dtype dts[] = {GSTAT_F32, GSTAT_F64, GSTAT_BF16};
  if (v[6] < 0 || v[6] > 2 || v[4] < 0 || v[5] < 0 || v[8] < 0) {
    PyErr_SetString(PyExc_ValueError, "eigh_async: bad dtype, shape or device");
    return NULL;
  }
  gstat_dtype dt = dts[v[6]];
  gstat_matrix A = gstat_matrix_row_major((void *)(intptr_t)v[0], dt, v[4], v[5], v[5]);
  gstat_matrix W = gstat_vector_batch((void *)(intptr_t)v[1], dt, v[4], v[5]);
  gstat_matrix V = gstat_matrix_col_major((void *)(intptr_t)v[2], dt, v[4], v[5], v[5]);
  gstat_matrix *m[3] = {&A, &W, &V};
  for (int i = 0; i < 3; i++) m[i]->location = GSTAT_CUDA, m[i]->device = (int32_t)v[8];
  pooled *p = ctx_acquire(GSTAT_BACKEND_CUDA, (int)v[8]);
  if (!p) return NULL;
  gstat_status st = gstat_ctx_set_cuda_stream(p->ctx, (void *)(intptr_t)(v[9] == 0 ? 1 : v[9]));
  if (st == GSTAT_OK)
    st = gstat_eigh_async(p->ctx, &A, v[7] ? GSTAT_UPPER : GSTAT_LOWER, &W, v[2] ? &V : NULL,
                          (int32_t *)(intptr_t)v[3]);
  PyObject *ret = st == GSTAT_OK ? (Py_INCREF(Py_None), Py_None) : raise_status(st, p);
  ctx_release(p);
  return ret;
}

/* A descriptor from raw fields (eigh_backward): device memory, or host
 * memory for device -1. */
static gstat_matrix raw_matrix(long long ptr, gstat_dtype dt, long long batch, long long rows,
                               long long cols, const long long st[3], int device) {
  gstat_matrix m = {(void *)(intptr_t)ptr,
                    dt,
                    device < 0 ? GSTAT_HOST : GSTAT_CUDA,
                    device < 0 ? 0 : device,
                    batch,
                    rows,
                    cols,
                    st[0],
                    st[1],
                    st[2]};
  return m;
}

/* eigh_backward(w, w_bs, w_s, gw, gw_bs, gw_s, v, v_bs, v_rs, v_cs, gv, gv_bs, gv_rs, gv_cs,
 * out, out_bs, out_rs, out_cs, batch, n, dtype, broadening, device, stream):
 * gstat_eigh_backward on raw device pointers and element strides (gw 0: none), dtype
 * 0/1 = float32/float64; for gstat.torch's backward, as eigh_async. Device -1:
 * host pointers, computed on the CPU (the stream is not used). */
static PyObject *py_eigh_backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 24, "eigh_backward") < 0) return NULL;
  long long v[24];
  for (int i = 0; i < 24; i++) v[i] = i == 21 ? 0 : to_i64(args[i]);
  double broadening = PyFloat_AsDouble(args[21]);
  if (PyErr_Occurred()) return NULL;
  if (v[20] < 0 || v[20] > 1 || v[22] < -1) {
    PyErr_SetString(PyExc_ValueError, "eigh_backward: bad dtype or device");
    return NULL;
  }
  gstat_dtype dt = v[20] ? GSTAT_F64 : GSTAT_F32;
  int dev = (int)v[22];
  long long b = v[18], n = v[19];
  const long long ws[3] = {v[1], v[2], 1}, gws[3] = {v[4], v[5], 1};
  gstat_matrix W = raw_matrix(v[0], dt, b, n, 1, ws, dev);
  gstat_matrix GW = raw_matrix(v[3], dt, b, n, 1, gws, dev);
  gstat_matrix V = raw_matrix(v[6], dt, b, n, n, v + 7, dev);
  gstat_matrix GV = raw_matrix(v[10], dt, b, n, n, v + 11, dev);
  gstat_matrix GA = raw_matrix(v[14], dt, b, n, n, v + 15, dev);
  pooled *p = ctx_acquire(dev < 0 ? GSTAT_BACKEND_CPU : GSTAT_BACKEND_CUDA, dev < 0 ? 0 : dev);
  if (!p) return NULL;
  gstat_status st =
      dev < 0 ? GSTAT_OK
              : gstat_ctx_set_cuda_stream(p->ctx, (void *)(intptr_t)(v[23] == 0 ? 1 : v[23]));
  if (st == GSTAT_OK) { /* without the GIL: on the host it is the whole computation */
    Py_BEGIN_ALLOW_THREADS st =
        gstat_eigh_backward(p->ctx, &W, &V, v[3] ? &GW : NULL, &GV, broadening, &GA);
    Py_END_ALLOW_THREADS
  }
  PyObject *ret = st == GSTAT_OK ? (Py_INCREF(Py_None), Py_None) : raise_status(st, p);
  ctx_release(p);
  return ret;
}

/* cholesky(a, upper, out, backend, stream) */
static PyObject *py_cholesky(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 5, "cholesky") < 0) return NULL;
  int upper = PyObject_IsTrue(args[1]);
  long long stream = args[4] == Py_None ? -1 : to_i64(args[4]);
  if (PyErr_Occurred()) return NULL;
  marg A, F;
  memset(&F, 0, sizeof F);
  PyObject *ret = NULL;
  pooled *p = NULL;
  if (lin_in(args[0], 0, "a", stream, &A) < 0) goto done;
  if (lin_out(args[2], 0, "out", stream, A.ndim, A.shape, A.m.dtype, &F) < 0) goto done;
  if (!(p = lin_ctx(args[3], &A, stream))) goto done;
  lin_call c = {
      OP_CHOL, upper ? GSTAT_UPPER : GSTAT_LOWER, GSTAT_NO_TRANS, GSTAT_NON_UNIT, &A, NULL, &F,
      NULL};
  if (!lin_execute(p, &c)) goto done;
  if (stream >= 0) {
    ret = args[2];
    Py_INCREF(ret);
  } else {
    ret = F.owner;
    F.owner = NULL;
  }
done:
  ctx_release(p);
  marg_clear(&A);
  marg_clear(&F);
  return ret;
}

/* solve(kind, t, b, uplo_upper, trans, unit, out, backend, stream): kind 0 =
 * Cholesky solve with factor t, 1 = triangular solve. b is batch x n x nrhs. */
static PyObject *py_solve(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 9, "solve") < 0) return NULL;
  int kind = PyObject_IsTrue(args[0]);
  int upper = PyObject_IsTrue(args[3]);
  int trans = PyObject_IsTrue(args[4]);
  int unit = PyObject_IsTrue(args[5]);
  long long stream = args[8] == Py_None ? -1 : to_i64(args[8]);
  if (PyErr_Occurred()) return NULL;
  marg T, B, X;
  memset(&B, 0, sizeof B);
  memset(&X, 0, sizeof X);
  PyObject *ret = NULL;
  pooled *p = NULL;
  if (lin_in(args[1], 0, kind ? "a" : "l", stream, &T) < 0) goto done;
  if (lin_in(args[2], 0, "b", stream, &B) < 0) goto done;
  /* the wider of the two types, as numpy promotes */
  gstat_dtype odt = (T.m.dtype == GSTAT_F64 || B.m.dtype == GSTAT_F64) ? GSTAT_F64 : B.m.dtype;
  if (lin_out(args[6], 0, "out", stream, B.ndim, B.shape, odt, &X) < 0) goto done;
  if (!(p = lin_ctx(args[7], &T, stream))) goto done;
  lin_call c = {kind ? OP_TRI_SOLVE : OP_CHOL_SOLVE,
                upper ? GSTAT_UPPER : GSTAT_LOWER,
                trans ? GSTAT_TRANS : GSTAT_NO_TRANS,
                unit ? GSTAT_UNIT : GSTAT_NON_UNIT,
                &T,
                &B,
                &X,
                NULL};
  if (!lin_execute(p, &c)) goto done;
  if (stream >= 0) {
    ret = args[6];
    Py_INCREF(ret);
  } else {
    ret = X.owner;
    X.owner = NULL;
  }
done:
  ctx_release(p);
  marg_clear(&T);
  marg_clear(&B);
  marg_clear(&X);
  return ret;
}

/* ---- covariance ------------------------------------------------------------------------ */

static int parse_dtype_arg(PyObject *o, gstat_dtype fallback, gstat_dtype *dt) {
  if (o == Py_None) {
    *dt = fallback;
    return 0;
  }
  PyArray_Descr *d = NULL;
  if (!PyArray_DescrConverter(o, &d)) return -1;
  int r = dtype_of(d->type_num, dt);
  Py_DECREF(d);
  if (r < 0) PyErr_Format(PyExc_TypeError, "dtype %R: must be float32, float64 or bfloat16", o);
  return r;
}

/* A contiguous float64 vector (weights), or NULL for None. */
static int f64_vector(PyObject *o, const char *name, int64_t n, PyArrayObject **out) {
  *out = NULL;
  if (o == Py_None) return 0;
  if (refuse_device(o, name) < 0) return -1;
  PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OTF(o, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
  if (!a) return -1;
  if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n) {
    PyErr_Format(PyExc_ValueError, "%s must be a 1-D array of length %lld (the observations)", name,
                 (long long)n);
    Py_DECREF(a);
    return -1;
  }
  *out = a;
  return 0;
}

/* cov(x, ddof, fweights, aweights, missing, correlation, dtype, out, backend, want_mean,
 *     assume_centered, stream, mean_out)
 * x is (..., n, p) observations in rows, numpy or (stream not None) a CUDA
 * tensor, whose outputs out and mean_out the Python layer allocates. Returns C
 * (..., p, p), or (C, mean (..., p)) with want_mean. */
static PyObject *py_cov(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 13, "cov") < 0) return NULL;
  int want_mean = PyObject_IsTrue(args[9]), assume_centered = PyObject_IsTrue(args[10]);
  int64_t ddof = to_i64(args[1]);
  int missing = (int)to_i64(args[4]);
  int corr = PyObject_IsTrue(args[5]);
  long long stream = args[11] == Py_None ? -1 : to_i64(args[11]);
  if (PyErr_Occurred()) return NULL;
  marg X, C, M;
  memset(&C, 0, sizeof C);
  memset(&M, 0, sizeof M);
  PyArrayObject *fw = NULL, *aw = NULL;
  PyObject *ret = NULL;
  pooled *p = NULL;
  if (lin_in(args[0], 0, "x", stream, &X) < 0) return NULL;
  gstat_dtype odt;
  if (parse_dtype_arg(args[6], X.m.dtype, &odt) < 0) goto done;
  if (f64_vector(args[2], "fweights", X.m.rows, &fw) < 0) goto done;
  if (f64_vector(args[3], "aweights", X.m.rows, &aw) < 0) goto done;
  npy_intp shape[NPY_MAXDIMS];
  memcpy(shape, X.shape, sizeof(npy_intp) * (size_t)X.ndim);
  shape[X.ndim - 2] = X.shape[X.ndim - 1];
  if (lin_out(args[7], 0, "out", stream, X.ndim, shape, odt, &C) < 0) goto done;
  if (want_mean && lin_out(args[12], 1, "mean", stream, X.ndim - 1, shape, odt, &M) < 0) goto done;
  if (!(p = lin_ctx(args[8], &X, stream))) goto done;
  gstat_cov_options opt;
  gstat_cov_options_init(&opt);
  opt.ddof = ddof;
  opt.fweights = fw ? PyArray_DATA(fw) : NULL;
  opt.aweights = aw ? PyArray_DATA(aw) : NULL;
  opt.missing = (gstat_missing)missing;
  opt.correlation = corr;
  opt.assume_centered = assume_centered;
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_covariance(p->ctx, &X.m, &opt, &C.m, want_mean ? &M.m : NULL);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  if (stream >= 0) /* device: the caller's tensors, not the capsules */
    ret = want_mean ? PyTuple_Pack(2, args[7], args[12]) : (Py_INCREF(args[7]), args[7]);
  else if (want_mean)
    ret = PyTuple_Pack(2, C.owner, M.owner);
  else {
    ret = C.owner;
    C.owner = NULL;
  }
done:
  marg_clear(&M);
  ctx_release(p);
  Py_XDECREF(fw);
  Py_XDECREF(aw);
  marg_clear(&X);
  marg_clear(&C);
  return ret;
}

/* cov_shrink(x, method, assume_centered, backend, stream, C_out, mean_out) -> (C (..., p, p)
 * float64, shrinkage (batch,) float64 numpy, mean (..., p) float64: the location
 * subtracted); with a stream, x and the two outputs are CUDA tensors. */
static PyObject *py_cov_shrink(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 7, "cov_shrink") < 0) return NULL;
  int method = (int)to_i64(args[1]);
  int centered = PyObject_IsTrue(args[2]);
  long long stream = args[4] == Py_None ? -1 : to_i64(args[4]);
  if (PyErr_Occurred()) return NULL;
  marg X, C, M;
  memset(&C, 0, sizeof C);
  memset(&M, 0, sizeof M);
  PyObject *ret = NULL, *s = NULL;
  pooled *p = NULL;
  if (lin_in(args[0], 0, "X", stream, &X) < 0) return NULL;
  npy_intp shape[NPY_MAXDIMS];
  memcpy(shape, X.shape, sizeof(npy_intp) * (size_t)X.ndim);
  shape[X.ndim - 2] = X.shape[X.ndim - 1];
  if (lin_out(args[5], 0, "C", stream, X.ndim, shape, GSTAT_F64, &C) < 0) goto done;
  if (lin_out(args[6], 1, "mean", stream, X.ndim - 1, shape, GSTAT_F64, &M) < 0) goto done;
  npy_intp nb = (npy_intp)X.m.batch;
  if (!(s = PyArray_SimpleNew(1, &nb, NPY_FLOAT64))) goto done;
  if (!(p = lin_ctx(args[3], &X, stream))) goto done;
  gstat_status st;
  double *sh = PyArray_DATA((PyArrayObject *)s);
  Py_BEGIN_ALLOW_THREADS st =
      gstat_cov_shrink(p->ctx, &X.m, (gstat_shrinkage)method, centered, &C.m, &M.m, sh);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = stream >= 0 ? PyTuple_Pack(3, args[5], s, args[6]) : PyTuple_Pack(3, C.owner, s, M.owner);
done:
  ctx_release(p);
  Py_XDECREF(s);
  marg_clear(&X);
  marg_clear(&C);
  marg_clear(&M);
  return ret;
}

/* mahalanobis(x (..., n, p), center (..., p) or None, S (..., p, p), inverted, backend,
 * stream, out) -> d2 (..., n) float64; with a stream x and out are CUDA tensors and
 * center and S may be either. */
static PyObject *py_mahalanobis(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 7, "mahalanobis") < 0) return NULL;
  int inverted = PyObject_IsTrue(args[3]);
  long long stream = args[5] == Py_None ? -1 : to_i64(args[5]);
  if (PyErr_Occurred()) return NULL;
  marg X, c, S, D;
  memset(&c, 0, sizeof c);
  memset(&S, 0, sizeof S);
  memset(&D, 0, sizeof D);
  PyObject *ret = NULL;
  pooled *p = NULL;
  if (lin_in(args[0], 0, "x", stream, &X) < 0) return NULL;
  if (args[1] != Py_None && any_in(args[1], 1, "center", stream, &c) < 0) goto done;
  if (any_in(args[2], 0, "cov", stream, &S) < 0) goto done;
  if (lin_out(args[6], 1, "d2", stream, X.ndim - 1, X.shape, GSTAT_F64, &D) < 0) goto done;
  if (!(p = lin_ctx(args[4], &X, stream))) goto done;
  gstat_status st;
  const gstat_matrix *cm = args[1] != Py_None ? &c.m : NULL;
  Py_BEGIN_ALLOW_THREADS st = gstat_mahalanobis(p->ctx, &X.m, cm, &S.m, inverted, &D.m);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  if (stream >= 0) {
    ret = args[6];
    Py_INCREF(ret);
  } else {
    ret = D.owner;
    D.owner = NULL;
  }
done:
  ctx_release(p);
  marg_clear(&X);
  marg_clear(&c);
  marg_clear(&S);
  marg_clear(&D);
  return ret;
}

/* ---- PCA ---------------------------------------------------------------------------------- */

/* pca_fit(X (n, p) or (b, n, p), n_components, variance_fraction, whiten, method,
 * oversamples, power_iterations, seed, compute_scores, backend, stream)
 * -> dict of float64 arrays (leading batch dimension kept) and counts. */
static PyObject *py_pca_fit(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 11, "pca_fit") < 0) return NULL;
  gstat_pca_options opt;
  gstat_pca_options_init(&opt);
  opt.n_components = to_i64(args[1]);
  opt.variance_fraction = PyFloat_AsDouble(args[2]);
  opt.whiten = PyObject_IsTrue(args[3]);
  opt.method = (gstat_pca_method)to_i64(args[4]);
  opt.oversamples = to_i64(args[5]);
  opt.power_iterations = to_i64(args[6]);
  opt.seed = (uint64_t)PyLong_AsUnsignedLongLongMask(args[7]);
  opt.compute_scores = PyObject_IsTrue(args[8]);
  long long stream = args[10] == Py_None ? -1 : to_i64(args[10]);
  int backend;
  if (PyErr_Occurred() || parse_backend(args[9], &backend) < 0) return NULL;
  marg X;
  if (lin_in(args[0], 0, "X", stream, &X) < 0) return NULL;
  PyObject *ret = NULL;
  pooled *p = NULL;
  gstat_pca_result *res = NULL;
  if (!(p = lin_ctx(args[9], &X, stream))) goto done;
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_pca(p->ctx, &X.m, &opt, &res);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = pca_result_dict(res);
done:
  gstat_pca_result_free(res);
  ctx_release(p);
  marg_clear(&X);
  return ret;
}

/* A result view over the fitted arrays (float64, C-contiguous, batch 1). */
static int pca_view(PyObject *const *arr, int whiten, gstat_pca_result *r, PyArrayObject **hold) {
  /* arr: components (k, p), mean (p,), explained_variance (k,) */
  for (int i = 0; i < 3; i++) {
    if (refuse_device(arr[i], "the fitted PCA arrays") < 0) return -1;
    hold[i] = (PyArrayObject *)PyArray_FROM_OTF(arr[i], NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
    if (!hold[i]) return -1;
  }
  if (PyArray_NDIM(hold[0]) != 2 || PyArray_NDIM(hold[1]) != 1 || PyArray_NDIM(hold[2]) != 1 ||
      PyArray_DIM(hold[1], 0) != PyArray_DIM(hold[0], 1) ||
      PyArray_DIM(hold[2], 0) != PyArray_DIM(hold[0], 0)) {
    PyErr_SetString(PyExc_ValueError,
                    "inconsistent PCA arrays (components_, mean_, explained_variance_)");
    return -1;
  }
  memset(r, 0, sizeof *r);
  r->batch = 1;
  r->n_components = PyArray_DIM(hold[0], 0);
  r->n_features = PyArray_DIM(hold[0], 1);
  r->whiten = whiten;
  r->components = PyArray_DATA(hold[0]);
  r->mean = PyArray_DATA(hold[1]);
  r->explained_variance = PyArray_DATA(hold[2]);
  npy_intp p = (npy_intp)r->n_features;
  if (!(hold[3] = (PyArrayObject *)PyArray_SimpleNew(1, &p, NPY_FLOAT64))) return -1;
  double *one = PyArray_DATA(hold[3]); /* sklearn's PCA does not scale */
  for (npy_intp j = 0; j < p; j++) one[j] = 1.0;
  r->scale = one;
  return 0;
}

/* pca_transform(inverse, X, components, mean, explained_variance, whiten, dtype, backend,
 * out, stream): stream None: numpy in and out; else X is a CUDA tensor and `out` the
 * tensor (m, k) the scores go into (returned). */
static PyObject *py_pca_transform(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 10, "pca_transform") < 0) return NULL;
  int inverse = PyObject_IsTrue(args[0]);
  int whiten = PyObject_IsTrue(args[5]);
  long long stream = args[9] == Py_None ? -1 : to_i64(args[9]);
  if (PyErr_Occurred()) return NULL;
  PyArrayObject *hold[4] = {NULL, NULL, NULL, NULL};
  gstat_pca_result r;
  marg X, Y;
  memset(&X, 0, sizeof X);
  memset(&Y, 0, sizeof Y);
  PyObject *ret = NULL;
  pooled *p = NULL;
  gstat_dtype odt;
  if (pca_view(args + 2, whiten, &r, hold) < 0) goto done;
  if (lin_in(args[1], 0, "X", stream, &X) < 0) goto done;
  if (parse_dtype_arg(args[6], X.m.dtype, &odt) < 0) goto done;
  npy_intp shape[NPY_MAXDIMS];
  memcpy(shape, X.shape, sizeof(npy_intp) * (size_t)X.ndim);
  shape[X.ndim - 1] = (npy_intp)(inverse ? r.n_features : r.n_components);
  if (lin_out(stream >= 0 ? args[8] : Py_None, 0, "out", stream, X.ndim, shape, odt, &Y) < 0)
    goto done;
  if (!(p = lin_ctx(args[7], &X, stream))) goto done;
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = inverse ? gstat_pca_inverse_transform(p->ctx, &r, &X.m, &Y.m)
                                      : gstat_pca_transform(p->ctx, &r, &X.m, &Y.m);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  if (stream >= 0) { /* a device tensor: the caller's out, now written */
    Py_INCREF(args[8]);
    ret = args[8];
  } else {
    ret = Y.owner;
    Y.owner = NULL;
  }
done:
  ctx_release(p);
  for (int i = 0; i < 4; i++) Py_XDECREF(hold[i]);
  marg_clear(&X);
  marg_clear(&Y);
  return ret;
}

/* ---- mergeable accumulator ---------------------------------------------------------------- */
/* In Python an accumulator is its exported state (a float64 array): picklable
 * for Dask, sendable over MPI, and merged anywhere by the C library. Each call
 * rebuilds the C accumulator from the state and exports the new state. */

/* A C accumulator of p variables holding `state` (None: empty). */
static gstat_cov_accum *accum_open(pooled *p, int64_t dim, int missing, PyObject *state) {
  gstat_cov_accum *acc = NULL;
  gstat_status st = gstat_cov_accum_create(p->ctx, dim, (gstat_missing)missing, &acc);
  if (st != GSTAT_OK) return (gstat_cov_accum *)raise_status(st, p);
  if (state == Py_None) return acc;
  PyArrayObject *s = (PyArrayObject *)PyArray_FROM_OTF(state, NPY_FLOAT64, NPY_ARRAY_IN_ARRAY);
  if (!s) goto fail;
  if (PyArray_NDIM(s) != 1 || PyArray_SIZE(s) != (npy_intp)gstat_cov_accum_state_size(dim)) {
    PyErr_Format(PyExc_ValueError, "accumulator state must be a 1-D array of %zu values for p=%lld",
                 gstat_cov_accum_state_size(dim), (long long)dim);
    Py_DECREF(s);
    goto fail;
  }
  st = gstat_cov_accum_merge_state(p->ctx, acc, PyArray_DATA(s));
  Py_DECREF(s);
  if (st == GSTAT_OK) return acc;
  raise_status(st, p);
fail:
  gstat_cov_accum_destroy(acc);
  return NULL;
}

static PyObject *accum_state(const gstat_cov_accum *acc) {
  npy_intp n = (npy_intp)gstat_cov_accum_state_size(gstat_cov_accum_dim(acc));
  PyObject *a = PyArray_SimpleNew(1, &n, NPY_FLOAT64);
  if (a) gstat_cov_accum_export(acc, PyArray_DATA((PyArrayObject *)a));
  return a;
}

/* Arguments every accumulator call starts with: (p, missing, state, ...). */
static pooled *accum_begin(PyObject *const *args, PyObject *backend_obj, gstat_cov_accum **acc) {
  int64_t dim = to_i64(args[0]);
  int missing = (int)to_i64(args[1]), backend;
  if (PyErr_Occurred() || parse_backend(backend_obj, &backend) < 0) return NULL;
  pooled *p = ctx_acquire(backend, 0);
  if (p && !(*acc = accum_open(p, dim, missing, args[2]))) {
    ctx_release(p);
    return NULL;
  }
  return p;
}

/* accum_add(p, missing, state, X (n, p), fweights, backend[, stream]) -> new state; with a
 * stream X is a CUDA tensor (the state stays on the host) */
static PyObject *py_accum_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 6, 7, "accum_add") < 0) return NULL;
  long long stream = stream_arg(opt_arg(args, nargs, 6)); /* x a CUDA tensor: its stream */
  int64_t dim = to_i64(args[0]);
  int missing = (int)to_i64(args[1]);
  if (PyErr_Occurred()) return NULL;
  gstat_cov_accum *acc = NULL;
  PyObject *ret = NULL;
  PyArrayObject *fw = NULL;
  pooled *p = NULL;
  marg X;
  if (lin_in(args[3], 0, "x", stream, &X) < 0) return NULL;
  if (!(p = lin_ctx(args[5], &X, stream)) || !(acc = accum_open(p, dim, missing, args[2])))
    goto done;
  if (X.ndim != 2) {
    PyErr_Format(PyExc_ValueError, "x must be 2-dimensional (n_samples, n_features), got %d-D",
                 X.ndim);
    goto done;
  }
  if (f64_vector(args[4], "fweights", X.m.rows, &fw) < 0) goto done;
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_cov_accum_add(p->ctx, acc, &X.m, fw ? PyArray_DATA(fw) : NULL);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) raise_status(st, p);
  else ret = accum_state(acc);
done:
  marg_clear(&X);
  Py_XDECREF(fw);
  gstat_cov_accum_destroy(acc);
  ctx_release(p);
  return ret;
}

/* accum_merge(p, missing, state, other_state) -> new state */
static PyObject *py_accum_merge(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 4, "accum_merge") < 0) return NULL;
  gstat_cov_accum *acc = NULL, *other = NULL;
  pooled *p = accum_begin(args, Py_None, &acc);
  if (!p) return NULL;
  PyObject *ret = NULL;
  if ((other = accum_open(p, gstat_cov_accum_dim(acc), (int)to_i64(args[1]), args[3]))) {
    gstat_status st = gstat_cov_accum_merge(p->ctx, acc, other);
    ret = st == GSTAT_OK ? accum_state(acc) : raise_status(st, p);
  }
  gstat_cov_accum_destroy(other);
  gstat_cov_accum_destroy(acc);
  ctx_release(p);
  return ret;
}

/* accum_info(p, missing, state) -> (rows, rows_skipped, weight) */
static PyObject *py_accum_info(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 3, "accum_info") < 0) return NULL;
  gstat_cov_accum *acc = NULL;
  pooled *p = accum_begin(args, Py_None, &acc);
  if (!p) return NULL;
  PyObject *ret =
      Py_BuildValue("(LLd)", (long long)gstat_cov_accum_rows(acc),
                    (long long)gstat_cov_accum_rows_skipped(acc), gstat_cov_accum_weight(acc));
  gstat_cov_accum_destroy(acc);
  ctx_release(p);
  return ret;
}

/* accum_covariance(p, missing, state, ddof, correlation) -> (C (p, p), mean (p,)) float64 */
static PyObject *py_accum_covariance(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 5, "accum_covariance") < 0) return NULL;
  int64_t ddof = to_i64(args[3]);
  int corr = PyObject_IsTrue(args[4]);
  if (PyErr_Occurred()) return NULL;
  gstat_cov_accum *acc = NULL;
  pooled *p = accum_begin(args, Py_None, &acc);
  if (!p) return NULL;
  PyObject *ret = NULL;
  npy_intp dim = (npy_intp)gstat_cov_accum_dim(acc), d2[2] = {dim, dim};
  PyObject *C = PyArray_SimpleNew(2, d2, NPY_FLOAT64), *M = PyArray_SimpleNew(1, &dim, NPY_FLOAT64);
  if (C && M) {
    gstat_matrix cm =
        gstat_matrix_row_major(PyArray_DATA((PyArrayObject *)C), GSTAT_F64, 1, dim, dim);
    gstat_matrix mm =
        gstat_matrix_row_major(PyArray_DATA((PyArrayObject *)M), GSTAT_F64, 1, dim, 1);
    gstat_status st = gstat_cov_accum_covariance(p->ctx, acc, ddof, corr, &cm, &mm);
    ret = st == GSTAT_OK ? PyTuple_Pack(2, C, M) : raise_status(st, p);
  }
  Py_XDECREF(C);
  Py_XDECREF(M);
  gstat_cov_accum_destroy(acc);
  ctx_release(p);
  return ret;
}

/* accum_pca(p, missing, state, n_components, fraction, whiten, backend) -> dict as pca_fit */
static PyObject *py_accum_pca(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 7, "accum_pca") < 0) return NULL;
  gstat_pca_options opt;
  gstat_pca_options_init(&opt);
  opt.method = GSTAT_PCA_COVARIANCE_EIGH;
  opt.n_components = to_i64(args[3]);
  opt.variance_fraction = PyFloat_AsDouble(args[4]);
  opt.whiten = PyObject_IsTrue(args[5]);
  if (PyErr_Occurred()) return NULL;
  gstat_cov_accum *acc = NULL;
  pooled *p = accum_begin(args, args[6], &acc);
  if (!p) return NULL;
  gstat_pca_result *res = NULL;
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_pca_from_accum(p->ctx, acc, &opt, &res);
  Py_END_ALLOW_THREADS PyObject *ret = st == GSTAT_OK ? pca_result_dict(res) : raise_status(st, p);
  gstat_pca_result_free(res);
  gstat_cov_accum_destroy(acc);
  ctx_release(p);
  return ret;
}

/* raise_status(status, message): raise the exception the C status maps to (for gstat._mpi). */
static PyObject *py_raise_status(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 2, "raise_status") < 0) return NULL;
  int st = (int)to_i64(args[0]);
  const char *msg = PyUnicode_AsUTF8(args[1]);
  if (PyErr_Occurred()) return NULL;
  return raise_message((gstat_status)st, msg);
}

/* ---- graphs ------------------------------------------------------------------------------- */

typedef struct {
  gstat_graph g;
  marg dense;
  PyArrayObject *indptr, *indices, *data;
} graph_arg;

static void graph_clear(graph_arg *g) {
  marg_clear(&g->dense);
  Py_CLEAR(g->indptr);
  Py_CLEAR(g->indices);
  Py_CLEAR(g->data);
}

/* graph: an ndarray (dense (..., n, n)), with a stream (>= 0) a CUDA tensor, or a
 * tuple (n, indptr, indices, data or None). */
static int graph_in(PyObject *obj, int symmetrize, int loops, long long stream, graph_arg *g) {
  memset(g, 0, sizeof *g);
  if (PyTuple_Check(obj)) {
    long long n;
    PyObject *ip, *ix, *dv;
    if (!PyArg_ParseTuple(obj, "LOOO", &n, &ip, &ix, &dv)) return -1;
    if (!(g->indptr = contig(ip, NPY_INT64)) || !(g->indices = contig(ix, NPY_INT64))) return -1;
    if (dv != Py_None && !(g->data = contig(dv, NPY_FLOAT64))) return -1;
    if (PyArray_SIZE(g->indptr) != n + 1) {
      PyErr_SetString(PyExc_ValueError, "CSR indptr must have n + 1 entries");
      return -1;
    }
    int64_t *off = PyArray_DATA(g->indptr);
    if (PyArray_SIZE(g->indices) < off[n] || (g->data && PyArray_SIZE(g->data) < off[n])) {
      PyErr_SetString(PyExc_ValueError, "CSR indices/data shorter than indptr[n]");
      return -1;
    }
    g->g =
        gstat_graph_csr(n, off, PyArray_DATA(g->indices), g->data ? PyArray_DATA(g->data) : NULL);
  } else {
    if (lin_in(obj, 0, "adjacency", stream, &g->dense) < 0) return -1;
    g->g = gstat_graph_dense(&g->dense.m);
  }
  g->g.symmetrize = (gstat_symmetrize)symmetrize;
  g->g.self_loops = (gstat_self_loops)loops;
  return 0;
}

/* A 1-d array cut to its first `len` entries in place (no other reference
 * holds it yet). */
static int shrink(PyObject **arr, int64_t len) {
  npy_intp dims[1] = {(npy_intp)len};
  PyArray_Dims shape = {dims, 1};
  PyObject *r = PyArray_Resize((PyArrayObject *)*arr, &shape, 0, NPY_CORDER);
  if (!r) return -1;
  Py_DECREF(r); /* None */
  return 0;
}

/* laplacian(graph, kind, symmetrize, loops, sparse, backend[, stream, L, degrees])
 * dense: -> (L (..., n, n) float64, degrees (..., n)); sparse: -> (indptr, indices, data, degrees)
 * With a stream the graph is a CUDA tensor and L, degrees the device outputs (returned). */
static PyObject *py_laplacian(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 6, 9, "laplacian") < 0) return NULL;
  int kind = (int)to_i64(args[1]), sym = (int)to_i64(args[2]), loops = (int)to_i64(args[3]);
  int sparse = PyObject_IsTrue(args[4]), backend;
  long long stream = stream_arg(opt_arg(args, nargs, 6));
  PyObject *l_out = opt_arg(args, nargs, 7), *d_out = opt_arg(args, nargs, 8);
  if (PyErr_Occurred() || parse_backend(args[5], &backend) < 0) return NULL;
  graph_arg g;
  marg L, D;
  memset(&L, 0, sizeof L);
  memset(&D, 0, sizeof D);
  PyObject *ret = NULL, *ip = NULL, *ix = NULL, *vals = NULL, *deg = NULL;
  pooled *p = NULL;
  gstat_status st;
  if (graph_in(args[0], sym, loops, stream, &g) < 0) goto done;
  if (!(p = lin_ctx(args[5], &g.dense, stream))) goto done;
  if (!sparse) {
    npy_intp shape[NPY_MAXDIMS];
    int nd;
    if (g.g.format == GSTAT_GRAPH_CSR) {
      nd = 2;
      shape[0] = shape[1] = (npy_intp)g.g.csr.n;
    } else {
      nd = g.dense.ndim;
      memcpy(shape, g.dense.shape, sizeof(npy_intp) * (size_t)nd);
    }
    if (lin_out(l_out, 0, "L", stream, nd, shape, GSTAT_F64, &L) < 0) goto done;
    if (lin_out(d_out, 1, "degrees", stream, nd - 1, shape, GSTAT_F64, &D) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS st =
        gstat_laplacian(p->ctx, &g.g, (gstat_laplacian_kind)kind, &L.m, &D.m);
    Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
      raise_status(st, p);
      goto done;
    }
    ret = stream >= 0 ? PyTuple_Pack(2, l_out, d_out) : PyTuple_Pack(2, L.owner, D.owner);
  } else {
    const int csr = g.g.format == GSTAT_GRAPH_CSR;
    int64_t nnz = 0, n = csr ? g.g.csr.n : g.dense.m.rows;
    if (csr) { /* at most the graph's entries, their mirrors unless CHECK kept the pattern, and
                * the diagonal: one pass, no count first */
      nnz = (g.g.symmetrize == GSTAT_SYM_CHECK ? 1 : 2) * g.g.csr.nnz + n;
    } else {
      Py_BEGIN_ALLOW_THREADS st = gstat_laplacian_csr(p->ctx, &g.g, (gstat_laplacian_kind)kind, 0,
                                                      NULL, NULL, NULL, &nnz, NULL);
      Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
        raise_status(st, p);
        goto done;
      }
    }
    npy_intp n1 = (npy_intp)(n + 1), nz = (npy_intp)nnz, nn = (npy_intp)n;
    ip = PyArray_SimpleNew(1, &n1, NPY_INT64);
    ix = PyArray_SimpleNew(1, &nz, NPY_INT64);
    vals = PyArray_SimpleNew(1, &nz, NPY_FLOAT64);
    deg = PyArray_SimpleNew(1, &nn, NPY_FLOAT64);
    if (!ip || !ix || !vals || !deg) goto done;
    int64_t *a0 = PyArray_DATA((PyArrayObject *)ip), *a1 = PyArray_DATA((PyArrayObject *)ix);
    double *a2 = PyArray_DATA((PyArrayObject *)vals), *a3 = PyArray_DATA((PyArrayObject *)deg);
    Py_BEGIN_ALLOW_THREADS st =
        gstat_laplacian_csr(p->ctx, &g.g, (gstat_laplacian_kind)kind, nnz, a0, a1, a2, &nnz, a3);
    Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
      raise_status(st, p);
      goto done;
    }
    if (nnz < (int64_t)nz && (shrink(&ix, nnz) < 0 || shrink(&vals, nnz) < 0)) goto done;
    ret = PyTuple_Pack(4, ip, ix, vals, deg);
  }
done:
  ctx_release(p);
  graph_clear(&g);
  marg_clear(&L);
  marg_clear(&D);
  Py_XDECREF(ip);
  Py_XDECREF(ix);
  Py_XDECREF(vals);
  Py_XDECREF(deg);
  return ret;
}

/* affinity(X, kind, gamma, n_neighbors, include_self, weights, symmetrize, epsilon, dense, backend,
 *          knn_algorithm, seed[, stream, A])
 * dense: -> A (n, n) float64; else -> (indptr, indices, data) host arrays. With a stream X is a
 * CUDA tensor and A the device output (returned). */
static PyObject *py_affinity(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 12, 14, "affinity") < 0) return NULL;
  long long stream = stream_arg(opt_arg(args, nargs, 12));
  PyObject *a_out = opt_arg(args, nargs, 13);
  gstat_affinity_options opt;
  gstat_affinity_options_init(&opt);
  opt.kind = (gstat_affinity_kind)to_i64(args[1]);
  opt.gamma = PyFloat_AsDouble(args[2]);
  opt.n_neighbors = to_i64(args[3]);
  opt.include_self = PyObject_IsTrue(args[4]);
  opt.weights = (gstat_knn_weights)to_i64(args[5]);
  opt.symmetrize = (gstat_symmetrize)to_i64(args[6]);
  opt.epsilon = PyFloat_AsDouble(args[7]);
  opt.knn.algorithm = (gstat_knn_algorithm)to_i64(args[10]);
  opt.knn.seed = (uint64_t)PyLong_AsUnsignedLongLongMask(args[11]);
  int dense = PyObject_IsTrue(args[8]), backend;
  if (PyErr_Occurred() || parse_backend(args[9], &backend) < 0) return NULL;
  marg X, A;
  memset(&A, 0, sizeof A);
  PyObject *ret = NULL;
  pooled *p = NULL;
  gstat_csr *csr = NULL;
  gstat_status st;
  if (lin_in(args[0], 0, "X", stream, &X) < 0) return NULL;
  if (!(p = lin_ctx(args[9], &X, stream))) goto done;
  if (dense) {
    npy_intp shape[NPY_MAXDIMS];
    memcpy(shape, X.shape, sizeof(npy_intp) * (size_t)X.ndim);
    shape[X.ndim - 1] = X.shape[X.ndim - 2];
    if (lin_out(a_out, 0, "A", stream, X.ndim, shape, GSTAT_F64, &A) < 0) goto done;
    Py_BEGIN_ALLOW_THREADS st = gstat_affinity_dense(p->ctx, &X.m, &opt, &A.m);
    Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
      raise_status(st, p);
      goto done;
    }
    if (stream >= 0) {
      ret = a_out;
      Py_INCREF(ret);
    } else {
      ret = A.owner;
      A.owner = NULL;
    }
  } else {
    Py_BEGIN_ALLOW_THREADS st = gstat_affinity_csr(p->ctx, &X.m, &opt, &csr);
    Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
      raise_status(st, p);
      goto done;
    }
    npy_intp nnz = (npy_intp)csr->nnz;
    PyObject *w = PyArray_SimpleNew(1, &nnz, NPY_FLOAT64);
    if (w) {
      double *wd = PyArray_DATA((PyArrayObject *)w);
      for (npy_intp e = 0; e < nnz; e++) wd[e] = csr->weights ? csr->weights[e] : 1.0;
    }
    ret = Py_BuildValue("(NNN)", np_from_i64(csr->offsets, (npy_intp)csr->n + 1),
                        np_from_i64(csr->indices, nnz), w);
  }
done:
  gstat_csr_free(csr);
  ctx_release(p);
  marg_clear(&X);
  marg_clear(&A);
  return ret;
}

/* knn(X (n, p), k, include_self, stream, backend, algorithm, seed) -> (indices int64 (n, k),
 * distances (n, k)), host arrays; X may be a CUDA tensor (stream: its producer's, else None);
 * algorithm a gstat_knn_algorithm */
static PyObject *py_knn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 7, "knn") < 0) return NULL;
  int64_t k = to_i64(args[1]);
  gstat_knn_options kopt;
  gstat_knn_options_init(&kopt);
  kopt.algorithm = (gstat_knn_algorithm)to_i64(args[5]);
  kopt.seed = (uint64_t)PyLong_AsUnsignedLongLongMask(args[6]);
  int include_self = PyObject_IsTrue(args[2]);
  long long stream = args[3] == Py_None ? -1 : to_i64(args[3]);
  if (PyErr_Occurred()) return NULL;
  marg X;
  if (any_in(args[0], 0, "X", stream, &X) < 0) return NULL;
  PyObject *ret = NULL, *ind = NULL, *dist = NULL;
  pooled *p = NULL;
  if (X.ndim != 2) {
    PyErr_SetString(PyExc_ValueError, "knn: X must be 2-D (points x features)");
    goto done;
  }
  if (!(p = lin_ctx(args[4], &X, stream))) goto done;
  npy_intp shape[2] = {(npy_intp)X.m.rows, (npy_intp)(k > 0 ? k : 0)};
  if (!(ind = PyArray_SimpleNew(2, shape, NPY_INT64)) ||
      !(dist = PyArray_SimpleNew(2, shape, NPY_FLOAT64)))
    goto done;
  int64_t *ip = PyArray_DATA((PyArrayObject *)ind);
  double *dp = PyArray_DATA((PyArrayObject *)dist);
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_knn_with_options(p->ctx, &X.m, k, include_self, &kopt, ip, dp);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = PyTuple_Pack(2, ind, dist);
done:
  Py_XDECREF(ind);
  Py_XDECREF(dist);
  ctx_release(p);
  marg_clear(&X);
  return ret;
}

/* ---- spectral ------------------------------------------------------------------------------ */

/* opts: (n_clusters, max_clusters, n_components, laplacian, drop_first, normalize_rows,
 *        assign, n_init, max_iter, tol, seed, solver, dense_limit, eig_tol, eig_max_iter,
 *        [disconnected]) */
static int64_t graph_nodes(const graph_arg *g) {
  return g->g.format == GSTAT_GRAPH_CSR ? g->g.csr.n : g->dense.m.rows;
}

/* graph_components(graph, symmetrize, loops, backend[, stream]) -> (n_components (batch,),
 * labels (batch, n)) host arrays; with a stream the graph is a CUDA tensor */
static PyObject *py_graph_components(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 4, 5, "graph_components") < 0) return NULL;
  long long stream = stream_arg(opt_arg(args, nargs, 4));
  int sym = (int)to_i64(args[1]), loops = (int)to_i64(args[2]), backend;
  if (PyErr_Occurred() || parse_backend(args[3], &backend) < 0) return NULL;
  graph_arg g;
  PyObject *ret = NULL, *count = NULL, *labels = NULL;
  pooled *p = NULL;
  if (graph_in(args[0], sym, loops, stream, &g) < 0) goto done;
  npy_intp nb = g.g.format == GSTAT_GRAPH_CSR ? 1 : (npy_intp)g.dense.m.batch;
  npy_intp dims[2] = {nb, (npy_intp)graph_nodes(&g)};
  if (!(count = PyArray_SimpleNew(1, dims, NPY_INT64)) ||
      !(labels = PyArray_SimpleNew(2, dims, NPY_INT64)))
    goto done;
  if (!(p = lin_ctx(args[3], &g.dense, stream))) goto done;
  gstat_status st;
  int64_t *c = PyArray_DATA((PyArrayObject *)count), *l = PyArray_DATA((PyArrayObject *)labels);
  Py_BEGIN_ALLOW_THREADS st = gstat_graph_components(p->ctx, &g.g, c, l);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = PyTuple_Pack(2, count, labels);
done:
  ctx_release(p);
  graph_clear(&g);
  Py_XDECREF(count);
  Py_XDECREF(labels);
  return ret;
}

/* spectral_embedding(graph, symmetrize, loops, opts, backend[, stream]) -> (embedding (n, k),
 * eigenvalues) host arrays; with a stream the graph is a CUDA tensor */
static PyObject *py_spectral_embedding(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 5, 6, "spectral_embedding") < 0) return NULL;
  long long stream = stream_arg(opt_arg(args, nargs, 5));
  int sym = (int)to_i64(args[1]), loops = (int)to_i64(args[2]), backend;
  gstat_spectral_options opt;
  if (PyErr_Occurred() || spectral_opts(args[3], &opt) < 0 || parse_backend(args[4], &backend) < 0)
    return NULL;
  graph_arg g;
  marg E;
  memset(&E, 0, sizeof E);
  PyObject *ret = NULL, *ev = NULL;
  pooled *p = NULL;
  if (graph_in(args[0], sym, loops, stream, &g) < 0) goto done;
  npy_intp shape[2] = {(npy_intp)graph_nodes(&g), (npy_intp)opt.n_components};
  npy_intp ne = (npy_intp)(opt.n_components + (opt.drop_first ? 1 : 0));
  if (opt.n_components < 1) {
    PyErr_SetString(PyExc_ValueError, "n_components must be >= 1");
    goto done;
  }
  if (host_out(Py_None, 0, "embedding", 2, shape, NPY_FLOAT64, &E) < 0) goto done;
  if (!(ev = PyArray_SimpleNew(1, &ne, NPY_FLOAT64))) goto done;
  if (!(p = lin_ctx(args[4], &g.dense, stream))) goto done;
  gstat_status st;
  double *evd = PyArray_DATA((PyArrayObject *)ev);
  Py_BEGIN_ALLOW_THREADS st = gstat_spectral_embedding(p->ctx, &g.g, &opt, &E.m, evd);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = PyTuple_Pack(2, E.owner, ev);
done:
  ctx_release(p);
  graph_clear(&g);
  marg_clear(&E);
  Py_XDECREF(ev);
  return ret;
}

static PyObject *spectral_info(const gstat_spectral_result *r) {
  npy_intp ne = (npy_intp)r->n_eigenvalues, es[2] = {(npy_intp)r->n, (npy_intp)r->n_components};
  return Py_BuildValue("{s:L,s:L,s:L,s:N,s:N,s:d,s:L,s:O,s:L,s:d}", "n_clusters",
                       (long long)r->n_clusters, "n_components", (long long)r->n_components,
                       "graph_components", (long long)r->graph_components, "eigenvalues",
                       copy_f64(r->eigenvalues, 1, &ne), "embedding", copy_f64(r->embedding, 2, es),
                       "inertia", r->inertia, "kmeans_iterations", (long long)r->kmeans_iterations,
                       "used_sparse", r->used_sparse ? Py_True : Py_False, "eig_iterations",
                       (long long)r->eig_iterations, "eig_max_residual", r->eig_max_residual);
}

/* spectral_clustering(graph, symmetrize, loops, opts, backend[, stream]) -> (labels, info);
 * with a stream the graph is a CUDA tensor */
static PyObject *py_spectral_clustering(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs_up_to(nargs, 5, 6, "spectral_clustering") < 0) return NULL;
  long long stream = stream_arg(opt_arg(args, nargs, 5));
  int sym = (int)to_i64(args[1]), loops = (int)to_i64(args[2]), backend;
  gstat_spectral_options opt;
  if (PyErr_Occurred() || spectral_opts(args[3], &opt) < 0 || parse_backend(args[4], &backend) < 0)
    return NULL;
  graph_arg g;
  PyObject *ret = NULL, *labels = NULL;
  pooled *p = NULL;
  gstat_spectral_result *res = NULL;
  if (graph_in(args[0], sym, loops, stream, &g) < 0) goto done;
  npy_intp n = (npy_intp)graph_nodes(&g);
  if (!(labels = PyArray_SimpleNew(1, &n, NPY_INT64))) goto done;
  if (!(p = lin_ctx(args[4], &g.dense, stream))) goto done;
  gstat_status st;
  int64_t *lab = PyArray_DATA((PyArrayObject *)labels);
  Py_BEGIN_ALLOW_THREADS st = gstat_spectral_clustering(p->ctx, &g.g, &opt, lab, &res);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) {
    raise_status(st, p);
    goto done;
  }
  ret = Py_BuildValue("(ON)", labels, spectral_info(res));
done:
  gstat_spectral_result_free(res);
  ctx_release(p);
  graph_clear(&g);
  Py_XDECREF(labels);
  return ret;
}

/* spectral_clustering_batch(kind, a, b, c, symmetrize, loops, n_clusters, opts, progress,
 *                           raise_errors, backend)
 * kind 0 CSR: a = node_offsets, b = (indptr, indices, data or None), c unused;
 * kind 1 DENSE: a = padded (count, nmax, nmax) array, b = sizes or None, c None;
 *   or a = a CUDA tensor (count, n, n) (DLPack), b None, c = its stream: the
 *   GPU engine, labels still on the host.
 * -> (labels (total,), info dict of per-graph arrays) */
static PyObject *py_spectral_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 11, "spectral_clustering_batch") < 0) return NULL;
  int kind = (int)to_i64(args[0]);
  int sym = (int)to_i64(args[4]), loops = (int)to_i64(args[5]), backend;
  int raise_errors = PyObject_IsTrue(args[9]);
  gstat_spectral_options opt;
  if (PyErr_Occurred() || spectral_opts(args[7], &opt) < 0 || parse_backend(args[10], &backend) < 0)
    return NULL;
  gstat_graph_batch gb;
  memset(&gb, 0, sizeof gb);
  gb.symmetrize = (gstat_symmetrize)sym;
  gb.self_loops = (gstat_self_loops)loops;
  PyArrayObject *h[5] = {NULL, NULL, NULL, NULL, NULL}; /* arrays held during the call */
  marg A;
  memset(&A, 0, sizeof A);
  PyObject *ret = NULL, *labels = NULL;
  pooled *p = NULL;
  gstat_spectral_batch_result *res = NULL;
  int64_t total = 0;
  const int64_t *kv = NULL;
  if (kind == 0) {
    if ((total = csr_batch(args[1], args[2], &gb, h)) < 0) goto done;
  } else {
    long long stream = args[3] == Py_None ? -1 : to_i64(args[3]);
    if (PyErr_Occurred() || lin_in(args[1], 0, "graphs", stream, &A) < 0) goto done;
    if (A.ndim != 3) {
      PyErr_Format(PyExc_ValueError, "graphs: a (count, n, n) batch is needed, got %d dimensions",
                   A.ndim);
      goto done;
    }
    if (stream >= 0 && !(p = lin_ctx(args[10], &A, stream))) goto done;
    if (args[2] != Py_None && !(h[0] = contig(args[2], NPY_INT64))) goto done;
    gb.format = GSTAT_GRAPH_DENSE;
    gb.count = A.m.batch;
    gb.adjacency = A.m;
    gb.sizes = h[0] ? PyArray_DATA(h[0]) : NULL;
    for (int64_t g = 0; g < gb.count; g++) total += gb.sizes ? gb.sizes[g] : A.m.rows;
  }
  if (k_per_graph(args[6], gb.count, &h[4], &kv) < 0) goto done;
  npy_intp nt = (npy_intp)total;
  if (!(labels = PyArray_SimpleNew(1, &nt, NPY_INT64))) goto done;
  if (!p && !(p = ctx_acquire(backend, 0))) goto done;
  p->callback = args[8] == Py_None ? NULL : args[8];
  gstat_status st;
  int64_t *lab = PyArray_DATA((PyArrayObject *)labels);
  Py_BEGIN_ALLOW_THREADS st = gstat_spectral_clustering_batch(p->ctx, &gb, kv, &opt, lab, &res);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK && (raise_errors || !res)) {
    raise_status(st, p);
    goto done;
  }
  {
    npy_intp c = (npy_intp)res->count;
    PyObject *stat = PyList_New(c), *eigs = PyList_New(c);
    for (npy_intp g = 0; stat && eigs && g < c; g++) {
      PyList_SET_ITEM(stat, g, PyUnicode_FromString(status_name(res->status[g])));
      npy_intp ne = (npy_intp)(res->eig_offsets[g + 1] - res->eig_offsets[g]);
      PyList_SET_ITEM(eigs, g, copy_f64(res->eigenvalues + res->eig_offsets[g], 1, &ne));
    }
    PyObject *inertia = copy_f64(res->inertia, 1, &c);
    ret = Py_BuildValue(
        "(O{s:N,s:N,s:N,s:N,s:N,s:s})", labels, "n_clusters", np_from_i64(res->n_clusters, c),
        "graph_components", np_from_i64(res->graph_components, c), "inertia", inertia, "status",
        stat, "eigenvalues", eigs, "message", st == GSTAT_OK ? "" : gstat_ctx_last_error(p->ctx));
  }
done:
  gstat_spectral_batch_result_free(res);
  ctx_release(p);
  for (int i = 0; i < 5; i++) Py_XDECREF(h[i]);
  marg_clear(&A);
  Py_XDECREF(labels);
  return ret;
}

/* ---- settings and introspection ------------------------------------------------------------ */

static PyObject *py_set_default_backend(PyObject *self, PyObject *arg) {
  (void)self;
  int b;
  if (arg == Py_None)
    b = GSTAT_BACKEND_AUTO;
  else if (parse_backend(arg, &b) < 0)
    return NULL;
  default_backend = b;
  Py_RETURN_NONE;
}

static PyObject *py_get_default_backend(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(default_backend == GSTAT_BACKEND_CPU    ? "cpu"
                              : default_backend == GSTAT_BACKEND_CUDA ? "cuda"
                                                                      : "auto");
}

static PyObject *py_set_num_threads(PyObject *self, PyObject *arg) {
  (void)self;
  long n = PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  if (n < 0) {
    PyErr_SetString(PyExc_ValueError, "num_threads must be >= 0 (0: OpenMP's default)");
    return NULL;
  }
  default_threads = (int)n;
  Py_RETURN_NONE;
}

static PyObject *py_set_passive_waits(PyObject *self, PyObject *arg) {
  (void)self;
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  gstat_set_passive_waits(on);
  Py_RETURN_NONE;
}

static PyObject *py_set_progress(PyObject *self, PyObject *arg) {
  (void)self;
  if (arg != Py_None && !PyCallable_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "progress must be a callable or None");
    return NULL;
  }
  Py_XDECREF(thread_progress);
  thread_progress = NULL;
  if (arg != Py_None) {
    Py_INCREF(arg);
    thread_progress = arg;
  }
  Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(default_threads);
}

/* The threads a context made now would use: the setting, or OpenMP's default. */
static PyObject *py_effective_threads(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(default_threads ? default_threads : gstat_default_num_threads());
}

static PyObject *py_last_threads(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(last_threads);
}

/* threadpoolctl's controller (gstat/_threadpool.py) recognises this module
 * among the loaded libraries by this exported symbol. */
__attribute__((visibility("default"))) int gstat_python_threads_setting(void) {
  return default_threads;
}

static PyObject *py_last_backend(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(last_backend);
}

static PyObject *py_last_device_stats(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  const gstat_device_stats *d = &last_device_stats;
  return Py_BuildValue("{sLsLsLsLsLsLsLsL}", "allocations", (long long)d->allocations,
                       "graph_captures", (long long)d->graph_captures, "graph_refusals",
                       (long long)d->graph_refusals, "graph_launches", (long long)d->graph_launches,
                       "pipeline_pieces", (long long)d->pipeline_pieces, "own_tridiag_chunks",
                       (long long)d->own_tridiag_chunks, "own_tridiag_degenerate",
                       (long long)d->own_tridiag_degenerate, "own_tridiag_clustered",
                       (long long)d->own_tridiag_clustered);
}

static PyObject *py_cuda_available(PyObject *self, PyObject *args) {
  (void)self;
  int device = 0;
  if (!PyArg_ParseTuple(args, "|i", &device)) return NULL;
  pooled *p = ctx_acquire(GSTAT_BACKEND_AUTO, device);
  if (!p) return NULL;
  int ok;
  Py_BEGIN_ALLOW_THREADS ok = gstat_ctx_cuda_available(p->ctx);
  Py_END_ALLOW_THREADS p->busy = 0;
  return PyBool_FromLong(ok);
}

/* Contexts are destroyed only here (workspace release for tests/long runs). */
static PyObject *py_release_contexts(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  pooled **pp = &pool_head;
  while (*pp) {
    pooled *p = *pp;
    if (p->busy) {
      pp = &p->next;
      continue;
    }
    *pp = p->next;
    gstat_ctx_destroy(p->ctx);
    free(p);
  }
  Py_RETURN_NONE;
}

static PyObject *py_pool_size(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  long n = 0;
  for (pooled *p = pool_head; p; p = p->next) n++;
  return PyLong_FromLong(n);
}

static PyObject *py_set_bfloat16(PyObject *self, PyObject *arg) {
  (void)self;
  PyArray_Descr *d = NULL;
  if (!PyArray_DescrConverter(arg, &d)) return NULL;
  if (PyDataType_ELSIZE(d) != 2) {
    Py_DECREF(d);
    PyErr_SetString(PyExc_ValueError, "bfloat16 dtype must have 2-byte items");
    return NULL;
  }
  bf16_typenum = d->type_num;
  Py_DECREF(d);
  Py_RETURN_NONE;
}

#define FAST(name, fn, doc) \
  { name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, doc }

static PyMethodDef methods[] = {
    FAST("eigh", py_eigh, "eigh(a, UPLO, want_vectors, out_w, out_v, backend, stream)"),
    FAST("eigh_async", py_eigh_async,
         "eigh_async(a, w, v, info, batch, n, dtype, upper, device, stream)"),
    FAST("eigh_backward", py_eigh_backward,
         "eigh_backward(w, w_bs, w_s, gw, gw_bs, gw_s, v, v_bs, v_rs, v_cs, gv, gv_bs, gv_rs, "
         "gv_cs, out, out_bs, out_rs, out_cs, batch, n, dtype, broadening, device, stream)"),
    FAST("cholesky", py_cholesky, "cholesky(a, upper, out, backend, stream)"),
    FAST("solve", py_solve, "solve(kind, t, b, upper, trans, unit, out, backend, stream)"),
    FAST("cov", py_cov,
         "cov(x, ddof, fweights, aweights, missing, correlation, dtype, out, backend, want_mean, "
         "assume_centered, stream, mean_out)"),
    FAST("cov_shrink", py_cov_shrink,
         "cov_shrink(X, method, assume_centered, backend, stream, C_out, mean_out)"),
    FAST("mahalanobis", py_mahalanobis,
         "mahalanobis(x, center, cov, inverted, backend, stream, out)"),
    FAST("pca_fit", py_pca_fit,
         "pca_fit(X, k, fraction, whiten, method, oversamples, power, seed, scores, backend, "
         "stream)"),
    FAST("pca_transform", py_pca_transform,
         "pca_transform(inverse, X, components, mean, ev, whiten, dtype, backend, out, stream)"),
    FAST("accum_add", py_accum_add, "accum_add(p, missing, state, x, fweights, backend[, stream])"),
    FAST("accum_merge", py_accum_merge, "accum_merge(p, missing, state, other_state)"),
    FAST("accum_info", py_accum_info, "accum_info(p, missing, state)"),
    FAST("accum_covariance", py_accum_covariance,
         "accum_covariance(p, missing, state, ddof, correlation)"),
    FAST("accum_pca", py_accum_pca,
         "accum_pca(p, missing, state, n_components, fraction, whiten, backend)"),
    FAST("raise_status", py_raise_status, "raise_status(status, message)"),
    FAST("laplacian", py_laplacian,
         "laplacian(graph, kind, symmetrize, loops, sparse, backend[, stream, L, degrees])"),
    FAST("knn", py_knn, "knn(X, k, include_self, stream, backend, algorithm, seed)"),
    FAST("affinity", py_affinity,
         "affinity(X, kind, gamma, k, include_self, weights, sym, eps, dense, backend, "
         "knn_algorithm, seed[, stream, A])"),
    FAST("graph_components", py_graph_components,
         "graph_components(graph, sym, loops, backend[, stream])"),
    FAST("spectral_embedding", py_spectral_embedding,
         "spectral_embedding(graph, sym, loops, opts, backend[, stream])"),
    FAST("spectral_clustering", py_spectral_clustering,
         "spectral_clustering(graph, sym, loops, opts, backend[, stream])"),
    FAST("spectral_clustering_batch", py_spectral_batch, "spectral_clustering_batch(...)"),
    {"set_default_backend", py_set_default_backend, METH_O, "set the default backend"},
    {"get_default_backend", py_get_default_backend, METH_NOARGS, "the default backend"},
    {"set_num_threads", py_set_num_threads, METH_O, "CPU threads per call (0: OpenMP default)"},
    {"set_passive_waits", py_set_passive_waits, METH_O,
     "tell the library that OpenMP threads wait passively"},
    {"set_progress", py_set_progress, METH_O,
     "this thread's progress callback (done, total, what) for calls without one, or None"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "CPU threads per call"},
    {"effective_threads", py_effective_threads, METH_NOARGS,
     "threads a call may use now (the setting, or OpenMP's default)"},
    {"last_threads", py_last_threads, METH_NOARGS,
     "most threads a step of this thread's last call ran on (0: no CPU work)"},
    {"last_backend", py_last_backend, METH_NOARGS, "backend(s) of this thread's last call"},
    {"last_device_stats", py_last_device_stats, METH_NOARGS,
     "GPU counters of this thread's last call"},
    {"cuda_available", py_cuda_available, METH_VARARGS, "whether the CUDA backend is usable"},
    {"release_contexts", py_release_contexts, METH_NOARGS, "free idle contexts and workspace"},
    {"pool_size", py_pool_size, METH_NOARGS, "number of pooled contexts"},
    {"set_bfloat16", py_set_bfloat16, METH_O, "register ml_dtypes.bfloat16"},
    {NULL, NULL, 0, NULL}};

static PyStructSequence_Field eigh_fields[] = {{"eigenvalues", "ascending eigenvalues"},
                                               {"eigenvectors", "unit eigenvectors as columns"},
                                               {NULL, NULL}};
static PyStructSequence_Desc eigh_desc = {
    "gstat.linalg.EighResult", "(eigenvalues, eigenvectors), as numpy.linalg.eigh", eigh_fields, 2};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT,
                                       "gstat._core",
                                       "gstat's C library, called from Python.",
                                       -1,
                                       methods,
                                       NULL,
                                       NULL,
                                       NULL,
                                       NULL};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  PyObject *m = PyModule_Create(&moduledef);
  if (!m) return NULL;
  PyObject *la = PyImport_ImportModule("numpy.linalg");
  PyObject *base = la ? PyObject_GetAttrString(la, "LinAlgError") : NULL;
  Py_XDECREF(la);
  if (!base) goto fail;
  LinAlgError = PyErr_NewExceptionWithDoc(
      "gstat.LinAlgError",
      "A matrix is not positive definite, is singular, or an algorithm did not converge.\n"
      "Subclass of numpy.linalg.LinAlgError; `status` names the C library's status.",
      base, NULL);
  Py_DECREF(base);
  UnsupportedError = PyErr_NewExceptionWithDoc(
      "gstat.UnsupportedError",
      "A valid request this build or backend cannot serve (e.g. CUDA asked for without a GPU).",
      PyExc_RuntimeError, NULL);
  BackendError = PyErr_NewExceptionWithDoc("gstat.BackendError", "A backend (e.g. CUDA) failed.",
                                           PyExc_RuntimeError, NULL);
  if (!LinAlgError || !UnsupportedError || !BackendError) goto fail;
  if (PyStructSequence_InitType2(&EighResultType, &eigh_desc) < 0) goto fail;
  Py_INCREF(LinAlgError);
  Py_INCREF(UnsupportedError);
  Py_INCREF(BackendError);
  Py_INCREF(&EighResultType);
  if (PyModule_AddObject(m, "LinAlgError", LinAlgError) < 0 ||
      PyModule_AddObject(m, "UnsupportedError", UnsupportedError) < 0 ||
      PyModule_AddObject(m, "BackendError", BackendError) < 0 ||
      PyModule_AddObject(m, "EighResult", (PyObject *)&EighResultType) < 0 ||
      PyModule_AddStringConstant(m, "c_version", gstat_version_string()) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
