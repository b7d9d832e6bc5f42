/*
 * gstat._mpi: gstat_mpi (include/gstat/mpi.h) called from Python with an
 * mpi4py communicator. Built only when CMake finds MPI; it links its own
 * static copy of libgstat (gstat._core's symbols are private to that module),
 * so it creates its own context per call.
 *
 * The Python layer (gstat/mpi.py) passes the communicator as its Fortran
 * handle (comm.py2f(), converted back with MPI_Comm_f2c: portable across MPI
 * implementations) and arrays already C-contiguous in the types used here.
 * A failed status is raised through gstat._core.raise_status, so exceptions
 * are the same classes as everywhere else in gstat. Every function is
 * collective, as its C counterpart.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL gstat_mpi_ARRAY_API
#include <numpy/arrayobject.h>

#include <gstat/gstat.h>
#include <gstat/mpi.h>

#include "convert.h"

static PyObject *raise_status_fn; /* gstat._core.raise_status */

/* One call's MPI handle and context; released by call_end. */
typedef struct {
  gstat_mpi *m;
  gstat_ctx *ctx;
} call;

static PyObject *fail(gstat_status st, const char *msg) {
  PyObject *r = PyObject_CallFunction(raise_status_fn, "is", (int)st, msg ? msg : "");
  Py_XDECREF(r); /* raise_status always raises; r is NULL */
  return NULL;
}

/* (fcomm, backend, device, threads) -> handle and context, or an exception. */
static int call_begin(PyObject *fcomm, PyObject *backend, PyObject *device, PyObject *threads,
                      call *c) {
  c->m = NULL;
  c->ctx = NULL;
  long long f = PyLong_AsLongLong(fcomm);
  gstat_ctx_options opt;
  gstat_ctx_options_init(&opt);
  opt.backend = (gstat_backend)PyLong_AsLong(backend);
  opt.cuda_device = (int)PyLong_AsLong(device);
  opt.num_threads = (int)PyLong_AsLong(threads);
  if (PyErr_Occurred()) return -1;
  int init = 0;
  MPI_Initialized(&init);
  if (!init) {
    PyErr_SetString(PyExc_RuntimeError, "MPI is not initialized (import mpi4py.MPI first)");
    return -1;
  }
  gstat_status st = gstat_ctx_create(&c->ctx, &opt);
  /* Collective even when this rank's context failed: the others must not
   * wait in MPI_Comm_dup; the failure is agreed on in the first call. */
  gstat_status sm = gstat_mpi_create(MPI_Comm_f2c((MPI_Fint)f), &c->m);
  if (st == GSTAT_OK && sm == GSTAT_OK) return 0;
  gstat_mpi_destroy(c->m);
  gstat_ctx_destroy(c->ctx);
  c->m = NULL;
  c->ctx = NULL;
  fail(st != GSTAT_OK ? st : sm,
       st != GSTAT_OK ? "cannot create a gstat context on this rank" : "gstat_mpi_create failed");
  return -1;
}

static void call_end(call *c) {
  gstat_mpi_destroy(c->m);
  gstat_ctx_destroy(c->ctx);
}

static PyObject *call_fail(call *c, gstat_status st) {
  return fail(st, gstat_mpi_last_error(c->m));
}

static int check_nargs(Py_ssize_t nargs, Py_ssize_t want, const char *fn) {
  if (nargs == want) return 0;
  PyErr_Format(PyExc_TypeError, "%s() takes %zd arguments (%zd given)", fn, want, nargs);
  return -1;
}

/* The local rows X (n_r, p), float32 or float64 C-contiguous, as a descriptor. */
static gstat_matrix rows_of(PyArrayObject *x) {
  gstat_dtype dt = PyArray_TYPE(x) == NPY_FLOAT32 ? GSTAT_F32 : GSTAT_F64;
  return gstat_matrix_row_major(PyArray_DATA(x), dt, 1, PyArray_DIM(x, 0), PyArray_DIM(x, 1));
}

static PyArrayObject *rows_arg(PyObject *o) {
  PyArrayObject *x = (PyArrayObject *)PyArray_FROM_OF(o, NPY_ARRAY_IN_ARRAY);
  if (x && (PyArray_NDIM(x) != 2 ||
            (PyArray_TYPE(x) != NPY_FLOAT32 && PyArray_TYPE(x) != NPY_FLOAT64))) {
    PyErr_SetString(PyExc_ValueError, "x must be a 2-D float32 or float64 array");
    Py_CLEAR(x);
  }
  return x;
}

/* covariance(fcomm, root, receives, x, ddof, fweights, missing, correlation, backend, device,
 * threads) -> (C (p, p), mean (p,)) float64 on receiving ranks, None elsewhere */
static PyObject *py_covariance(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 11, "covariance") < 0) return NULL;
  int root = (int)PyLong_AsLong(args[1]), receives = PyObject_IsTrue(args[2]);
  gstat_cov_options opt;
  gstat_cov_options_init(&opt);
  opt.ddof = PyLong_AsLongLong(args[4]);
  opt.missing = (gstat_missing)PyLong_AsLong(args[6]);
  opt.correlation = PyObject_IsTrue(args[7]);
  if (PyErr_Occurred()) return NULL;
  PyArrayObject *x = rows_arg(args[3]), *fw = NULL;
  PyObject *C = NULL, *M = NULL, *ret = NULL;
  if (!x) return NULL;
  if (args[5] != Py_None && !(fw = contig(args[5], NPY_FLOAT64))) goto done;
  npy_intp p = PyArray_DIM(x, 1), d2[2] = {p, p};
  if (receives &&
      (!(C = PyArray_ZEROS(2, d2, NPY_FLOAT64, 0)) || !(M = PyArray_ZEROS(1, &p, NPY_FLOAT64, 0))))
    goto done;
  opt.fweights = fw ? PyArray_DATA(fw) : NULL;
  call c;
  if (call_begin(args[0], args[8], args[9], args[10], &c) < 0) goto done;
  gstat_matrix X = rows_of(x), cm, mm;
  if (receives) {
    cm = gstat_matrix_row_major(PyArray_DATA((PyArrayObject *)C), GSTAT_F64, 1, p, p);
    mm = gstat_matrix_row_major(PyArray_DATA((PyArrayObject *)M), GSTAT_F64, 1, p, 1);
  }
  gstat_status st;
  Py_BEGIN_ALLOW_THREADS st = gstat_mpi_covariance(c.m, c.ctx, &X, &opt, root,
                                                   receives ? &cm : NULL, receives ? &mm : NULL);
  Py_END_ALLOW_THREADS if (st != GSTAT_OK) call_fail(&c, st);
  else ret = receives ? PyTuple_Pack(2, C, M) : (Py_INCREF(Py_None), Py_None);
  call_end(&c);
done:
  Py_XDECREF(C);
  Py_XDECREF(M);
  Py_XDECREF(fw);
  Py_DECREF(x);
  return ret;
}

/* pca(fcomm, root, receives, x, n_components, fraction, whiten, backend, device, threads)
 * -> dict as gstat._core.pca_fit on receiving ranks, None elsewhere */
static PyObject *py_pca(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 10, "pca") < 0) return NULL;
  int root = (int)PyLong_AsLong(args[1]), receives = PyObject_IsTrue(args[2]);
  gstat_pca_options opt;
  gstat_pca_options_init(&opt);
  opt.n_components = PyLong_AsLongLong(args[4]);
  opt.variance_fraction = PyFloat_AsDouble(args[5]);
  opt.whiten = PyObject_IsTrue(args[6]);
  if (PyErr_Occurred()) return NULL;
  PyArrayObject *x = rows_arg(args[3]);
  if (!x) return NULL;
  PyObject *ret = NULL;
  call c;
  if (call_begin(args[0], args[7], args[8], args[9], &c) == 0) {
    gstat_matrix X = rows_of(x);
    gstat_pca_result *res = NULL;
    gstat_status st;
    Py_BEGIN_ALLOW_THREADS st = gstat_mpi_pca(c.m, c.ctx, &X, &opt, root, receives ? &res : NULL);
    Py_END_ALLOW_THREADS if (st != GSTAT_OK) call_fail(&c, st);
    else ret = receives ? pca_result_dict(res) : (Py_INCREF(Py_None), Py_None);
    gstat_pca_result_free(res);
    call_end(&c);
  }
  Py_DECREF(x);
  return ret;
}

/* accum_reduce(fcomm, root, receives, p, missing, state or None, backend, device, threads)
 * -> the merged state on receiving ranks, the rank's own state elsewhere */
static PyObject *py_accum_reduce(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 9, "accum_reduce") < 0) return NULL;
  int root = (int)PyLong_AsLong(args[1]);
  int64_t p = PyLong_AsLongLong(args[3]);
  int missing = (int)PyLong_AsLong(args[4]);
  if (PyErr_Occurred()) return NULL;
  PyArrayObject *s = NULL;
  if (args[5] != Py_None && !(s = contig(args[5], NPY_FLOAT64))) return NULL;
  PyObject *ret = NULL;
  call c;
  if (call_begin(args[0], args[6], args[7], args[8], &c) == 0) {
    gstat_cov_accum *acc = NULL;
    gstat_status st = gstat_cov_accum_create(c.ctx, p, (gstat_missing)missing, &acc);
    if (st == GSTAT_OK && s) {
      if (PyArray_SIZE(s) != (npy_intp)gstat_cov_accum_state_size(p))
        st = GSTAT_EINVAL;
      else
        st = gstat_cov_accum_merge_state(c.ctx, acc, PyArray_DATA(s));
    }
    /* A local failure goes into the reduction's agreement: pass a NULL
     * accumulator so every rank returns the same status. */
    gstat_status sr;
    Py_BEGIN_ALLOW_THREADS sr =
        gstat_mpi_cov_accum_reduce(c.m, c.ctx, st == GSTAT_OK ? acc : NULL, root);
    Py_END_ALLOW_THREADS if (sr != GSTAT_OK) call_fail(&c, sr);
    else {
      npy_intp n = (npy_intp)gstat_cov_accum_state_size(p);
      if ((ret = PyArray_SimpleNew(1, &n, NPY_FLOAT64)))
        gstat_cov_accum_export(acc, PyArray_DATA((PyArrayObject *)ret));
    }
    gstat_cov_accum_destroy(acc);
    call_end(&c);
  }
  Py_XDECREF(s);
  return ret;
}

/* spectral_clustering_batch(fcomm, root, receives, kind, a, b, sym, k or None, opts, backend,
 * device, threads) -> (labels, graph statuses, k used) on receiving ranks, None elsewhere.
 * kind 0: a node offsets, b (indptr, indices, data); kind 1: a (count, n, n) float64, b sizes
 * or None (the arguments of gstat/_spectral.py's _batch_request). */
static PyObject *py_spectral_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (check_nargs(nargs, 12, "spectral_clustering_batch") < 0) return NULL;
  int root = (int)PyLong_AsLong(args[1]), receives = PyObject_IsTrue(args[2]);
  int kind = (int)PyLong_AsLong(args[3]), sym = (int)PyLong_AsLong(args[6]);
  gstat_spectral_options opt;
  if (PyErr_Occurred() || spectral_opts(args[8], &opt) < 0) return NULL;
  gstat_graph_batch gb;
  memset(&gb, 0, sizeof gb);
  gb.symmetrize = (gstat_symmetrize)sym;
  PyArrayObject *h[5] = {NULL, NULL, NULL, NULL, NULL}; /* arrays held during the call */
  PyObject *ret = NULL, *labels = NULL, *status = NULL, *kused = NULL;
  int64_t total = 0;
  const int64_t *kv = NULL;
  if (kind == 0) {
    if ((total = csr_batch(args[4], args[5], &gb, h)) < 0) goto done;
  } else {
    if (!(h[0] = contig(args[4], NPY_FLOAT64))) goto done;
    if (PyArray_NDIM(h[0]) != 3) {
      PyErr_SetString(PyExc_ValueError, "graphs must be a (count, n, n) array");
      goto done;
    }
    if (args[5] != Py_None && !(h[1] = contig(args[5], NPY_INT64))) goto done;
    npy_intp *d = PyArray_DIMS(h[0]);
    gb.format = GSTAT_GRAPH_DENSE;
    gb.count = d[0];
    gb.adjacency = gstat_matrix_row_major(PyArray_DATA(h[0]), GSTAT_F64, d[0], d[1], d[2]);
    gb.sizes = h[1] ? PyArray_DATA(h[1]) : NULL;
    for (int64_t g = 0; g < gb.count; g++) total += gb.sizes ? gb.sizes[g] : d[1];
  }
  if (k_per_graph(args[7], gb.count, &h[4], &kv) < 0) goto done;
  npy_intp nt = (npy_intp)total, ng = (npy_intp)gb.count;
  if (receives && (!(labels = PyArray_SimpleNew(1, &nt, NPY_INT64)) ||
                   !(status = PyArray_ZEROS(1, &ng, NPY_INT32, 0)) ||
                   !(kused = PyArray_ZEROS(1, &ng, NPY_INT64, 0))))
    goto done;
  call c;
  if (call_begin(args[0], args[9], args[10], args[11], &c) < 0) goto done;
  gstat_status st;
  int64_t *lab = receives ? PyArray_DATA((PyArrayObject *)labels) : NULL;
  gstat_status *gs = receives ? PyArray_DATA((PyArrayObject *)status) : NULL;
  int64_t *ku = receives ? PyArray_DATA((PyArrayObject *)kused) : NULL;
  Py_BEGIN_ALLOW_THREADS st =
      gstat_mpi_spectral_clustering_batch(c.m, c.ctx, &gb, kv, &opt, root, lab, gs, ku);
  Py_END_ALLOW_THREADS;
  /* Graphs failing on their own leave their statuses (labels -1, the rest
   * written): returned, the caller decides. Any other failure wrote nothing. */
  int own = 0;
  for (int64_t g = 0; gs && st != GSTAT_OK && g < gb.count; g++) own |= gs[g] != GSTAT_OK;
  if (st != GSTAT_OK && !own)
    call_fail(&c, st);
  else if (!receives)
    ret = (Py_INCREF(Py_None), Py_None);
  else
    ret = Py_BuildValue("(OOOis)", labels, status, kused, (int)st,
                        st == GSTAT_OK ? "" : gstat_mpi_last_error(c.m));
  call_end(&c);
done:
  for (int i = 0; i < 5; i++) Py_XDECREF(h[i]);
  Py_XDECREF(labels);
  Py_XDECREF(status);
  Py_XDECREF(kused);
  return ret;
}

#define FAST(name, fn, doc) \
  { name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, doc }

static PyMethodDef methods[] = {
    FAST("covariance", py_covariance,
         "covariance(fcomm, root, receives, x, ddof, fweights, missing, correlation, backend, "
         "device, threads)"),
    FAST("pca", py_pca,
         "pca(fcomm, root, receives, x, n_components, fraction, whiten, backend, device, "
         "threads)"),
    FAST("accum_reduce", py_accum_reduce,
         "accum_reduce(fcomm, root, receives, p, missing, state, backend, device, threads)"),
    FAST("spectral_clustering_batch", py_spectral_batch,
         "spectral_clustering_batch(fcomm, root, receives, kind, a, b, sym, k, opts, backend, "
         "device, threads)"),
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT,
                                       "gstat._mpi",
                                       "gstat_mpi called with mpi4py communicators.",
                                       -1,
                                       methods,
                                       NULL,
                                       NULL,
                                       NULL,
                                       NULL};

PyMODINIT_FUNC PyInit__mpi(void) {
  import_array();
  PyObject *core = PyImport_ImportModule("gstat._core");
  if (!core) return NULL;
  raise_status_fn = PyObject_GetAttrString(core, "raise_status");
  Py_DECREF(core);
  if (!raise_status_fn) return NULL;
  return PyModule_Create(&moduledef);
}
