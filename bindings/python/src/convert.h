/*
 * Conversions shared by the extensions gstat._core and gstat._mpi (each
 * includes this header once, after numpy/arrayobject.h): C results into
 * numpy arrays and dicts, option tuples into C option structs.
 */
#ifndef GSTAT_PY_CONVERT_H
#define GSTAT_PY_CONVERT_H

#include <string.h>

#include <gstat/gstat.h>

/* A new float64 array of shape dims holding a copy of src (src may be NULL when empty). */
static inline PyObject *copy_f64(const double *src, int nd, npy_intp *dims) {
  PyObject *a = PyArray_SimpleNew(nd, dims, NPY_FLOAT64);
  if (!a) return NULL;
  size_t n = (size_t)PyArray_SIZE((PyArrayObject *)a);
  if (n && src) memcpy(PyArray_DATA((PyArrayObject *)a), src, n * sizeof(double));
  return a;
}

/* A new int64 vector holding a copy of src. */
static inline PyObject *np_from_i64(const int64_t *src, npy_intp n) {
  PyObject *a = PyArray_SimpleNew(1, &n, NPY_INT64);
  if (a && n) memcpy(PyArray_DATA((PyArrayObject *)a), src, (size_t)n * sizeof(int64_t));
  return a;
}

/* A fitted PCA as a dict of float64 arrays (leading batch dimension kept) and counts. */
static inline PyObject *pca_result_dict(const gstat_pca_result *res) {
  npy_intp b = (npy_intp)res->batch, k = (npy_intp)res->n_components,
           pp = (npy_intp)res->n_features, n = (npy_intp)res->n_samples;
  npy_intp d_kp[3] = {b, k, pp}, d_k[2] = {b, k}, d_p[2] = {b, pp}, d_b[1] = {b},
           d_nk[3] = {b, n, k};
  return Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:L,s:L,s:L,s:i}", "components",
                       copy_f64(res->components, 3, d_kp), "explained_variance",
                       copy_f64(res->explained_variance, 2, d_k), "explained_variance_ratio",
                       copy_f64(res->explained_variance_ratio, 2, d_k), "singular_values",
                       copy_f64(res->singular_values, 2, d_k), "mean", copy_f64(res->mean, 2, d_p),
                       "scale", copy_f64(res->scale, 2, d_p), "noise_variance",
                       copy_f64(res->noise_variance, 1, d_b), "total_variance",
                       copy_f64(res->total_variance, 1, d_b), "scores",
                       res->scores ? copy_f64(res->scores, 3, d_nk) : (Py_INCREF(Py_None), Py_None),
                       "n_components", (long long)k, "n_samples", (long long)n, "n_features",
                       (long long)pp, "method", (int)res->method);
}

/* A C-contiguous array of the given type (new reference), or NULL with an exception. */
static inline PyArrayObject *contig(PyObject *o, int typenum) {
  return (PyArrayObject *)PyArray_FROM_OTF(o, typenum, NPY_ARRAY_IN_ARRAY);
}

/* The CSR part of a batch request (gstat/_spectral.py's _batch_request): a
 * node offsets, b (indptr, indices, data or None), into gb; the arrays are
 * held in hold[0..3] (the caller releases them). Returns the total node
 * count, or -1 with an exception. */
static inline int64_t csr_batch(PyObject *a, PyObject *b, gstat_graph_batch *gb,
                                PyArrayObject **hold) {
  PyObject *ip, *ix, *dv;
  if (!PyArg_ParseTuple(b, "OOO", &ip, &ix, &dv)) return -1;
  if (!(hold[0] = contig(a, NPY_INT64)) || !(hold[1] = contig(ip, NPY_INT64)) ||
      !(hold[2] = contig(ix, NPY_INT64)))
    return -1;
  if (dv != Py_None && !(hold[3] = contig(dv, NPY_FLOAT64))) return -1;
  gb->format = GSTAT_GRAPH_CSR;
  gb->count = PyArray_SIZE(hold[0]) - 1;
  gb->node_offsets = PyArray_DATA(hold[0]);
  gb->offsets = PyArray_DATA(hold[1]);
  gb->indices = PyArray_DATA(hold[2]);
  gb->weights = hold[3] ? PyArray_DATA(hold[3]) : NULL;
  int64_t total = gb->count >= 0 ? gb->node_offsets[gb->count] : 0;
  if (gb->count < 0 || PyArray_SIZE(hold[1]) != total + 1) {
    PyErr_SetString(PyExc_ValueError, "inconsistent CSR batch arrays");
    return -1;
  }
  return total;
}

/* The per-graph cluster counts of a batch request (None: NULL in *kv), held
 * in *hold. Returns 0, or -1 with an exception. */
static inline int k_per_graph(PyObject *k, int64_t count, PyArrayObject **hold,
                              const int64_t **kv) {
  *kv = NULL;
  if (k == Py_None) return 0;
  if (!(*hold = contig(k, NPY_INT64))) return -1;
  if (PyArray_SIZE(*hold) != count) {
    PyErr_SetString(PyExc_ValueError, "n_clusters must give one value per graph");
    return -1;
  }
  *kv = PyArray_DATA(*hold);
  return 0;
}

/* The spectral options tuple built by gstat/_spectral.py (_options). */
static inline int spectral_opts(PyObject *o, gstat_spectral_options *opt) {
  gstat_spectral_options_init(opt);
  long long k, mk, nc, ni, mi, dl, emi;
  int lap, df, nr, as, sv, disc = GSTAT_DISCONNECTED_AUTO;
  unsigned long long seed;
  double tol, etol;
  if (!PyArg_ParseTuple(o, "LLLiiiiLLdKiLdL|i", &k, &mk, &nc, &lap, &df, &nr, &as, &ni, &mi, &tol,
                        &seed, &sv, &dl, &etol, &emi, &disc))
    return -1;
  opt->n_clusters = k;
  opt->max_clusters = mk;
  opt->n_components = nc;
  opt->laplacian = (gstat_laplacian_kind)lap;
  opt->drop_first = df;
  opt->normalize_rows = nr;
  opt->assign = (gstat_assign_labels)as;
  opt->n_init = ni;
  opt->max_iter = mi;
  opt->tol = tol;
  opt->seed = seed;
  opt->solver = (gstat_eigen_solver)sv;
  opt->dense_limit = dl;
  opt->eig_tol = etol;
  opt->eig_max_iter = emi;
  opt->disconnected = (gstat_disconnected)disc;
  return 0;
}

#endif /* GSTAT_PY_CONVERT_H */
