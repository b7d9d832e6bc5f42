"""Graph Laplacians, spectral embedding and spectral clustering."""
import numbers
import warnings

import numpy as np

from . import _core, _device, _progress
from ._graph_input import as_graph, check_dense, is_graph_object, is_sparse as _issparse
from ._neighbors import _ALGORITHMS as _KNN_ALGORITHMS, knn_seed as _knn_seed
from ._sk import (BaseEstimator, ClusterMixin, check_is_fitted, check_random_state, constraints,
                  seed_from, validate, validate_any, validate_params)

__all__ = ["laplacian", "SpectralClustering", "SpectralEmbedding", "spectral_clustering_batch"]

_SYM = {"check": 0, "max": 1, "mean": 2, "sum": 3, "min": 4}
_LOOPS = {"drop": 0, "keep": 1}
_KIND = {"unnormalized": 0, "symmetric": 1, "random_walk": 2}
_ASSIGN = {"kmeans": 0, "cluster_qr": 1}
# scikit-learn's pairwise kernels beyond 'rbf' (sklearn.metrics.pairwise.PAIRWISE_KERNEL_FUNCTIONS)
_KERNELS = {"additive_chi2", "chi2", "linear", "poly", "polynomial", "laplacian", "sigmoid",
            "cosine"}
# gstat_eigen_solver; scikit-learn's names are its iterative solvers (ARPACK's
# Lanczos, LOBPCG, LOBPCG preconditioned by AMG): gstat's iterative solver
_SOLVER = {None: 0, "auto": 0, "dense": 1, "sparse": 2, "arpack": 2, "lobpcg": 2, "amg": 2,
           "lanczos": 3}
_BACKENDS = {"auto", "cpu", "cuda"}


def _common_constraints(I, S):
    return {
        "eigen_solver": [S(set(k for k in _SOLVER if k)), None],
        "eigen_tol": [I(numbers.Real, 0.0, None, closed="left"), S({"auto"})],
        "random_state": ["random_state"],
        "backend": [S(_BACKENDS), None],
        "knn_algorithm": [S(set(_KNN_ALGORITHMS))],
    }


def _choice(table, value, name):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError(f"{name} must be one of {sorted(k for k in table if k)}, "
                         f"got {value!r}") from None


def _csr(a):
    """(n, indptr, indices, data) of the sparse `a` canonicalized by as_graph
    (any scipy format; sorted, duplicates summed, stored zeros dropped)."""
    m = as_graph(a)
    n = m.shape[0]
    if m.shape[1] != n:
        raise ValueError(f"adjacency must be square, got {m.shape}")
    return (n, m.indptr.astype(np.int64), m.indices.astype(np.int64),
            np.asarray(m.data, dtype=np.float64))


def _graph(adjacency):
    _device.refuse(adjacency, "gstat")
    return _csr(adjacency) if _issparse(adjacency) else np.asarray(adjacency)


def _on_device(graph):
    """The trailing (stream,) of a C graph call for a dense graph in device
    memory (the C library runs it there or says why not), else ()."""
    dev = _device.cuda_device(graph)
    return () if dev is None else (_device.stream(graph, dev),)


def _answer(X, a):
    """`a` (a host result) as a tensor of X's kind on its device when X is one."""
    dev = _device.cuda_device(X)
    return a if dev is None else _device.like(X, a, dev)


def _square(a, where):
    shape = tuple(int(s) for s in a.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{where}: an adjacency matrix must be square, got shape {shape}")
    return shape


def _precomputed(X):
    """A precomputed graph ready for scikit-learn's validation: graph objects
    and every scipy format as canonical CSR (validation keeps CSR sparse)."""
    X = as_graph(X, "affinity='precomputed'")
    if not _issparse(X) and _device.cuda_device(X) is None and np.asarray(X).dtype == object:
        check_dense(X, "affinity='precomputed'")  # raises: says what a graph may be
    return X


def laplacian(adjacency, normed=False, *, kind=None, return_diag=False, symmetrize="check",
              self_loops="drop", form="array", dtype=None, backend=None):
    """Graph Laplacian of an undirected graph (scipy.sparse.csgraph.laplacian).

    Parameters
    ----------
    adjacency : array_like (..., n, n), scipy.sparse (n, n), torch/CuPy sparse, networkx or igraph graph
        Non-negative weights; dense input may be a batch. scipy.sparse in
        any format (matrix or array classes; duplicates summed, stored zeros
        dropped) stays sparse; a torch sparse tensor (COO, CSR, CSC) or a
        CuPy sparse matrix, on the CPU or a GPU, is taken as a scipy CSR
        copy on the host (the result is a scipy CSR). A networkx graph's
        nodes are ordered as ``list(G.nodes)``, an igraph graph's by vertex
        id; weights are the ``'weight'`` edge attribute (1 if absent); a
        directed graph gives its adjacency ``A[i, j]`` = weight of i -> j,
        which `symmetrize` treats.
    normed : bool, optional
        ``I - D^-1/2 A D^-1/2`` instead of ``D - A``.
    kind : {'unnormalized', 'symmetric', 'random_walk'}, optional
        Overrides `normed` ('random_walk': ``I - D^-1 A``).
    return_diag : bool, optional
        Also return the degrees.
    symmetrize : {'check', 'max', 'mean', 'sum', 'min'}, optional
        'check' (default) refuses an asymmetric input, naming the first
        asymmetric pair; pairs that agree to 1e-10 relative (float64; 64
        ulps for float32), as other libraries' kernels leave them, are
        averaged.
    self_loops : {'drop', 'keep'}, optional
        Whether the diagonal counts in the degrees (scipy drops it).
    form : {'array', 'function', 'lo'}, optional
        As scipy.sparse.csgraph.laplacian: the matrix, a function ``x -> L @ x``
        (x of shape (n,) or (n, m)), or a scipy.sparse.linalg.LinearOperator.
        gstat forms L either way (for one graph only).
    dtype : dtype, optional
        Of L and d. Default as scipy: the input's floating dtype (float32
        stays float32); an integer graph keeps its dtype unnormalized and
        gives float64 normalized.
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    L : ndarray for dense input, scipy.sparse CSR (same kind) for sparse input,
        or a function / LinearOperator (`form`)
    d : ndarray, only with `return_diag`

    Examples
    --------
    >>> import numpy as np, gstat
    >>> A = np.array([[0., 1., 1.], [1., 0., 0.], [1., 0., 0.]])
    >>> gstat.laplacian(A)
    array([[ 2., -1., -1.],
           [-1.,  1.,  0.],
           [-1.,  0.,  1.]])
    >>> gstat.laplacian(A.astype(np.float32), normed=True).dtype   # kept, as scipy
    dtype('float32')
    >>> import networkx as nx
    >>> gstat.laplacian(nx.path_graph(3)).toarray()   # nodes 0, 1, 2 in G.nodes order
    array([[ 1., -1.,  0.],
           [-1.,  2., -1.],
           [ 0., -1.,  1.]])
    """
    if form not in ("array", "function", "lo"):
        raise ValueError(f"form must be 'array', 'function' or 'lo', got {form!r}")
    k = _choice(_KIND, kind, "kind") if kind is not None else (1 if normed else 0)
    sym, loops = _choice(_SYM, symmetrize, "symmetrize"), _choice(_LOOPS, self_loops, "self_loops")
    dev = _device.cuda_device(adjacency)
    if dev is not None:
        L, d = _laplacian_device(adjacency, dev, k, sym, loops, form, dtype, backend)
        return (L, d) if return_diag else L
    adjacency = as_graph(adjacency, "laplacian")
    if _issparse(adjacency):
        import scipy.sparse as sp
        g = _csr(adjacency)
        ip, ix, v, d = _core.laplacian(g, k, sym, loops, True, backend)
        cls = sp.csr_array if isinstance(adjacency, getattr(sp, "sparray", ())) else sp.csr_matrix
        L = cls((v, ix, ip), shape=(g[0], g[0]))
    else:
        adjacency = check_dense(adjacency, "laplacian", batch=True)
        L, d = _core.laplacian(adjacency, k, sym, loops, False, backend)
    # computed in float64; handed back in the input's dtype as scipy does
    kind_in = np.dtype(adjacency.dtype).kind
    out = (np.dtype(dtype) if dtype is not None
           else adjacency.dtype if kind_in == "f" or (kind_in in "iu" and k == 0)
           else np.dtype(np.float64))
    L, d = L.astype(out, copy=False), d.astype(out, copy=False)
    if form != "array":
        L = _as_operator(L, form)
    return (L, d) if return_diag else L


def _laplacian_device(a, dev, k, sym, loops, form, dtype, backend):
    """laplacian() of a dense CUDA tensor: L and the degrees as tensors of its
    kind, dtype and device, or the C library's UnsupportedError."""
    if form != "array":
        raise _core.UnsupportedError(f"laplacian: form={form!r} builds a host operator; for a CUDA "
                                     f"tensor pass form='array'")
    shape = _square(a, "laplacian")
    if dtype is not None and np.dtype(dtype).name != str(a.dtype).split(".")[-1]:
        raise ValueError("laplacian: dtype= must be the input's for a CUDA tensor (cast it first)")
    L, d = _device.empty_like(a, shape, dev), _device.empty_like(a, shape[:-1], dev)
    return _core.laplacian(a, k, sym, loops, False, backend, _device.stream(a, dev), L, d)


def _as_operator(L, form):
    """L as a function x -> L @ x or a scipy LinearOperator (scipy's forms)."""
    if L.ndim != 2:
        raise ValueError(f"form={form!r} takes one graph, got a batch of shape {L.shape}")

    def apply(x):
        return L @ np.asarray(x)

    if form == "function":
        return apply
    from scipy.sparse.linalg import LinearOperator
    # the random-walk Laplacian is not symmetric: the adjoint is L^T
    return LinearOperator(L.shape, matvec=apply, matmat=apply, rmatvec=lambda x: L.T @ x,
                          rmatmat=lambda x: L.T @ x, dtype=L.dtype)


def _spectral_opts(n_clusters, n_components, laplacian_kind, drop_first, normalize_rows, assign,
                   n_init, max_iter, tol, seed, solver, dense_limit=2048, eig_tol=1e-8,
                   eig_max_iter=1000, max_clusters=10, disconnected=0):
    return (int(n_clusters), int(max_clusters), int(n_components), int(laplacian_kind),
            int(drop_first), int(normalize_rows), int(assign), int(n_init), int(max_iter),
            float(tol), int(seed), int(solver), int(dense_limit), float(eig_tol),
            int(eig_max_iter), int(disconnected))


# gstat_disconnected: GSTAT_DISCONNECTED_PROCEED clusters a graph with more
# components than clusters from its k smallest eigenvectors (scikit-learn)
_PROCEED = 2


def _eig_tol(t):
    return 1e-8 if t in ("auto", None) or t == 0 else float(t)


def _fit_work(X):
    """Rough multiply-adds of a spectral fit, for the progress bar's 'long'
    test: the kNN/affinity's n^2 p (a bar shows only after a second anyway)."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        return None
    return float(shape[0]) * float(shape[0]) * max(float(shape[1]), 1.0)


class _AffinityMixin:
    def _affinity(self, X, dense_default):
        """(graph for the C call, affinity_matrix_) from the data or a precomputed graph."""
        aff = self.affinity
        dev = _device.cuda_device(X)
        if aff in ("precomputed", "precomputed_nearest_neighbors"):
            if aff == "precomputed_nearest_neighbors":
                raise NotImplementedError("affinity='precomputed_nearest_neighbors' is not "
                                          "supported; pass the graph with affinity='precomputed'")
            if dev is not None:  # a dense graph in device memory, as it is
                self.n_features_in_ = _square(X, "affinity='precomputed'")[-1]
                return X, X
            X = validate(self, _precomputed(X), accept_sparse=["csr"])
            return _graph(X), X
        if dev is not None and (callable(aff) or aff in _KERNELS):
            raise _core.UnsupportedError(
                f"{type(self).__name__}: affinity={aff!r} is computed by scikit-learn on the host; "
                f"for a CUDA tensor use affinity='rbf' or 'nearest_neighbors', or pass host data")
        X = validate_any(self, X, ensure_min_samples=2)
        if callable(aff) or aff in _KERNELS:
            A = self._kernel(X)
            return A, A
        gamma = getattr(self, "gamma", None)
        gamma = 0.0 if gamma is None else float(gamma)
        on_dev = () if dev is None else (_device.stream(X, dev),)
        if aff == "rbf":
            n = int(X.shape[0])
            out = () if dev is None else (_device.empty_like(X, (n, n), dev, "float64"),)
            A = _core.affinity(X, 0, gamma, 10, True, 0, 2, 0.0, True, self.backend, 0, 0, *on_dev,
                               *out)
            return A, A
        if aff == "nearest_neighbors":
            k = self.n_neighbors
            if k is None:
                k = max(int(X.shape[0] / 10), 1)
            alg = _KNN_ALGORITHMS[getattr(self, "knn_algorithm", "auto")]
            ip, ix, w = _core.affinity(X, 1, 0.0, int(k), True, 0, 2, 0.0, False, self.backend,
                                       alg, _knn_seed(self.random_state) if alg == 3 else 0,
                                       *on_dev)
            g = (X.shape[0], ip, ix, w)
            try:
                import scipy.sparse as sp
                return g, sp.csr_matrix((w, ix, ip), shape=(X.shape[0], X.shape[0]))
            except ImportError:  # pragma: no cover
                return g, g
        raise ValueError(f"affinity must be 'rbf', 'nearest_neighbors', 'precomputed', a kernel "
                         f"name of sklearn.metrics.pairwise_kernels or a callable, got {aff!r}")

    def _symmetrize(self, graph):
        """A precomputed sparse graph is averaged with its transpose (scikit-learn's
        check_symmetric); everything else must be symmetric."""
        return 2 if self.affinity == "precomputed" and isinstance(graph, tuple) else 0

    def _kernel(self, X):
        """The affinity from scikit-learn's pairwise_kernels (a kernel name or a
        callable), with the estimator's gamma/degree/coef0/kernel_params as
        scikit-learn's SpectralClustering passes them."""
        from sklearn.metrics.pairwise import pairwise_kernels
        if callable(self.affinity) and not hasattr(self, "degree"):  # SpectralEmbedding
            return np.asarray(self.affinity(X), dtype=np.float64)
        params = dict(getattr(self, "kernel_params", None) or {})
        if not callable(self.affinity):  # a callable gets kernel_params only
            params.update(gamma=self.gamma, degree=self.degree, coef0=self.coef0)
        return np.asarray(pairwise_kernels(X, metric=self.affinity, filter_params=True, **params),
                          dtype=np.float64)


class SpectralClustering(_AffinityMixin, ClusterMixin, BaseEstimator):
    """Spectral clustering (scikit-learn's SpectralClustering API).

    Parameters
    ----------
    n_clusters : int >= 1 or 'eigengap', default 8
        'eigengap': k chosen by the largest gap among the 11 smallest
        eigenvalues of the Laplacian (never fewer than the graph's connected
        components); the k used is `n_clusters_`.
    eigen_solver : {None, 'auto', 'dense', 'sparse', 'lanczos', 'arpack', 'lobpcg', 'amg'}
        None/'auto': the faster for the graph at hand (see `eigen_solver_`).
        scikit-learn's 'arpack', 'lobpcg' and 'amg' (all iterative) mean
        gstat's iterative solver, 'sparse' (no pyamg needed). 'lanczos': the
        iterative solver with a single vector, the fastest for graphs of data
        (eigenvalues above the components' zeros simple) but, like ARPACK,
        blind to a second copy of a repeated eigenvalue (rings, grids). Other
        values raise InvalidParameterError.
    n_components : int or None
        Embedding columns (default n_clusters).
    random_state : int, RandomState or None
        Seed of k-means++.
    n_init : int, default 10
    gamma : float, default 1.0
        RBF kernel coefficient.
    affinity : str or callable, default 'rbf'
        'rbf' and 'nearest_neighbors' (computed by gstat), 'precomputed' (X is
        the graph), a kernel of sklearn.metrics.pairwise_kernels ('poly',
        'sigmoid', 'laplacian', 'linear', 'cosine', 'chi2', ...) or a
        callable ``f(x, y) -> float`` as pairwise_kernels takes (these
        computed by scikit-learn's pairwise_kernels).
    n_neighbors : int, default 10
    eigen_tol : float or 'auto'
    knn_algorithm : {'auto', 'kd_tree', 'ball_tree', 'brute', 'nndescent'}, default 'auto'
        How affinity='nearest_neighbors' finds the neighbours (a gstat
        extension): exact by default; 'nndescent' is approximate (recall >=
        0.99 on blobs, seeded by `random_state`). See :func:`gstat.kneighbors`.
    assign_labels : {'kmeans', 'discretize', 'cluster_qr'}
        'discretize': Yu & Shi's (2003) rotation of the embedding towards an
        indicator matrix, as scikit-learn's (seeded by `random_state`).
    degree : float, default 3
        Degree of the 'poly' kernel.
    coef0 : float, default 1
        Zero coefficient of the 'poly' and 'sigmoid' kernels.
    kernel_params : dict or None
        Further keyword arguments of a callable or named kernel.
    backend : {'auto', 'cpu', 'cuda'} or None
        Where the work runs. 'cuda' also takes a large sparse graph's
        eigensolver (the Laplacian through cuSPARSE) and its k-means to the
        GPU for host data; under 'auto' (default) those two stay on the CPU.
    progress : bool, callable or None
        A tqdm bar over the long phases of `fit` (the kNN search, the sparse
        eigensolver's iterations, k-means): None (default) shows one when the
        fit is long and stderr is a terminal or a notebook runs it;
        True/False force it; a callable is called as
        ``progress(done, total, what)``.

    Attributes
    ----------
    labels_ : ndarray of int64 (n_samples,)
    affinity_matrix_ : ndarray (dense, for 'rbf') or scipy.sparse matrix
    n_features_in_ : int
    eigenvalues_ : ndarray
        The smallest eigenvalues of the Laplacian that were used.
    n_clusters_ : int
        The number of clusters (`n_clusters`, or chosen by the eigengap).
    eigen_solver_ : {'dense', 'sparse'} or None
        The eigensolver that ran (None with assign_labels='discretize').
        'auto' takes the iterative one above 2048 nodes and for a sparse
        graph whose stored entries are few for its size (6000 nnz < n^3:
        kNN graphs from about 300 nodes).
    graph_components_ : int
        Connected components of the graph; with more than `n_clusters` a
        UserWarning is issued and the k smallest eigenvectors (some basis of
        the Laplacian's null space) are clustered, as scikit-learn does.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.array([[1., 1.], [2., 1.], [1., 0.], [4., 7.], [3., 5.], [3., 6.]])
    >>> sc = gstat.SpectralClustering(n_clusters=2, assign_labels="discretize",
    ...                               random_state=0).fit(X)
    >>> bool(sc.labels_[0] == sc.labels_[1] == sc.labels_[2] != sc.labels_[3])
    True
    >>> gstat.SpectralClustering("eigengap", random_state=0).fit(X).n_clusters_
    2

    A graph as users hold it (scipy.sparse, networkx, igraph):

    >>> import networkx as nx
    >>> G = nx.karate_club_graph()   # rows in G.nodes order
    >>> sc = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(G)
    >>> bool(sc.labels_[0] != sc.labels_[33])   # the instructor's and the president's clubs
    True
    """

    _parameter_constraints = constraints(lambda I, S: {
        "n_clusters": [I(numbers.Integral, 1, None, closed="left"), S({"eigengap"})],
        "n_components": [I(numbers.Integral, 1, None, closed="left"), None],
        "n_init": [I(numbers.Integral, 1, None, closed="left")],
        "gamma": [I(numbers.Real, 0, None, closed="left")],
        "affinity": [callable, S({"rbf", "nearest_neighbors", "precomputed",
                                  "precomputed_nearest_neighbors"} | _KERNELS)],
        "n_neighbors": [I(numbers.Integral, 1, None, closed="left")],
        "assign_labels": [S(set(_ASSIGN) | {"discretize"})],
        "degree": [I(numbers.Real, 0, None, closed="left")],
        "coef0": [I(numbers.Real, None, None, closed="neither")],
        "kernel_params": [dict, None],
        **_common_constraints(I, S)})

    def __init__(self, n_clusters=8, *, eigen_solver=None, n_components=None, random_state=None,
                 n_init=10, gamma=1.0, affinity="rbf", n_neighbors=10, eigen_tol="auto",
                 assign_labels="kmeans", degree=3, coef0=1, kernel_params=None, backend=None,
                 progress=None, knn_algorithm="auto"):
        self.n_clusters = n_clusters
        self.eigen_solver = eigen_solver
        self.n_components = n_components
        self.random_state = random_state
        self.n_init = n_init
        self.gamma = gamma
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.eigen_tol = eigen_tol
        self.assign_labels = assign_labels
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.backend = backend
        self.progress = progress
        self.knn_algorithm = knn_algorithm

    def fit(self, X, y=None):
        """Cluster the rows of `X` (or the graph `X` when affinity='precomputed';
        any graph :func:`laplacian` takes). Returns self."""
        validate_params(self)
        with _progress.scope(self.progress, "SpectralClustering", _fit_work(X)):
            return self._fit(X)

    def _fit(self, X):
        graph, self.affinity_matrix_ = self._affinity(X, True)
        k = 0 if isinstance(self.n_clusters, str) and self.n_clusters == "eigengap" else self.n_clusters
        if self.assign_labels == "discretize":
            return self._fit_discretize(X, graph, k)
        opts = _spectral_opts(
            k, self.n_components or 0, 2, False, False,
            _choice(_ASSIGN, self.assign_labels, "assign_labels"), self.n_init, 300, 1e-4,
            seed_from(self.random_state), _choice(_SOLVER, self.eigen_solver, "eigen_solver"),
            eig_tol=_eig_tol(self.eigen_tol), disconnected=_PROCEED)
        labels, info = _core.spectral_clustering(graph, self._symmetrize(graph), 0,
                                                 opts, self.backend, *_on_device(graph))
        if info["graph_components"] > 1:
            # scikit-learn's warning; gstat clusters each component apart when
            # there are at most n_clusters of them, else (GSTAT_DISCONNECTED_PROCEED)
            # from the k smallest eigenvectors, as scikit-learn does
            warnings.warn(f"Graph is not fully connected ({info['graph_components']} connected "
                          f"components), spectral embedding may not work as expected.",
                          UserWarning, stacklevel=3)
        self.labels_ = labels
        self.eigenvalues_ = info["eigenvalues"]
        self.n_clusters_ = int(info["n_clusters"])
        self.eigen_solver_ = "sparse" if info["used_sparse"] else "dense"
        self.graph_components_ = info["graph_components"]
        self.inertia_ = info["inertia"]
        return self

    def _fit_discretize(self, X, graph, k):
        """labels_ by Yu & Shi's discretization of the k-column embedding."""
        if k == 0:
            raise ValueError("n_clusters='eigengap' needs assign_labels='kmeans' or 'cluster_qr'")
        sym = self._symmetrize(graph)
        comps = int(_core.graph_components(graph, sym, 0, self.backend, *_on_device(graph))[0][0])
        if comps > 1:
            warnings.warn(f"Graph is not fully connected ({comps} connected components), spectral "
                          f"embedding may not work as expected.", UserWarning, stacklevel=4)
        opts = _spectral_opts(k, self.n_components or k, 2, False, False, 0, 1, 300, 1e-4,
                              seed_from(self.random_state),
                              _choice(_SOLVER, self.eigen_solver, "eigen_solver"),
                              eig_tol=_eig_tol(self.eigen_tol), disconnected=_PROCEED)
        emb, ev = _core.spectral_embedding(graph, sym, 0, opts, self.backend, *_on_device(graph))
        self.labels_ = _discretize(emb, check_random_state(self.random_state))
        self.eigenvalues_ = ev
        self.n_clusters_ = int(k)
        self.eigen_solver_ = None  # the embedding call does not report it
        self.graph_components_ = comps
        self.inertia_ = None
        return self

    def fit_predict(self, X, y=None):
        """Fit and return `labels_` (for a CUDA tensor `X`, as a tensor of its
        kind on its device)."""
        return _answer(X, self.fit(X).labels_)


def _discretize(vectors, rng, max_restarts=30, max_iter=20):
    """Yu & Shi (2003), "Multiclass spectral clustering": the discrete
    partition nearest to the embedding's span. Alternate between the
    indicator matrix closest to the rotated, row-normalized embedding and the
    rotation (orthogonal Procrustes, one SVD) closest to that indicator,
    until the relaxed normalized cut stops changing."""
    V = np.array(vectors, dtype=np.float64)
    n, k = V.shape
    # columns to the length of the all-ones vector, oriented so their first
    # entry is negative (the sign of an eigenvector is arbitrary)
    V *= np.sqrt(n) / np.maximum(np.linalg.norm(V, axis=0), np.finfo(float).tiny)
    first = np.sign(V[0])
    V *= np.where(first != 0, -first, 1.0)
    V /= np.sqrt((V * V).sum(axis=1))[:, None]
    eps = np.finfo(float).eps
    for _ in range(max_restarts):
        # the first axis a random row, each next the row least aligned with those so far
        R = np.zeros((k, k))
        R[:, 0] = V[rng.randint(n)]
        spread = np.zeros(n)
        for j in range(1, k):
            spread += np.abs(V @ R[:, j - 1])
            R[:, j] = V[spread.argmin()]
        last, it = 0.0, 0
        while True:
            it += 1
            labels = (V @ R).argmax(axis=1)
            # indicator^T V, one row per cluster: the sums of its rows of V
            M = np.zeros((k, k))
            np.add.at(M, labels, V)
            try:
                U, S, Vt = np.linalg.svd(M)
            except np.linalg.LinAlgError:
                break  # a restart
            ncut = 2.0 * (n - S.sum())
            if abs(ncut - last) < eps or it > max_iter:
                return labels.astype(np.int64)
            last = ncut
            R = Vt.T @ U.T
    raise np.linalg.LinAlgError("SVD did not converge")


class SpectralEmbedding(_AffinityMixin, BaseEstimator):
    """Spectral embedding / Laplacian eigenmaps (scikit-learn's SpectralEmbedding API).

    The embedding is that of scikit-learn: eigenvectors of the normalized
    Laplacian scaled by ``D^-1/2``, the first (constant) one dropped, each
    signed so its entry of largest magnitude is positive.

    Parameters
    ----------
    n_components : int, default 2
    affinity : {'nearest_neighbors', 'rbf', 'precomputed'} or callable
        A callable takes X and returns the affinity matrix (scikit-learn's).
    gamma : float or None
        RBF coefficient (None: 1 / n_features).
    random_state : int, RandomState or None
    eigen_solver : {None, 'auto', 'dense', 'sparse', 'lanczos', 'arpack', 'lobpcg', 'amg'}
        As :class:`SpectralClustering` (scikit-learn's names: the iterative solver).
    eigen_tol : float or 'auto'
    n_neighbors : int or None
        None: max(n_samples / 10, 1).
    knn_algorithm : {'auto', 'kd_tree', 'ball_tree', 'brute', 'nndescent'}, default 'auto'
        How affinity='nearest_neighbors' finds the neighbours (a gstat
        extension): exact by default; 'nndescent' is approximate (recall >=
        0.99 on blobs, seeded by `random_state`). See :func:`gstat.kneighbors`.
    backend : {'auto', 'cpu', 'cuda'} or None
        As :class:`SpectralClustering`.
    progress : bool, callable or None
        As :class:`SpectralClustering`.

    Attributes
    ----------
    embedding_ : ndarray (n_samples, n_components)
    affinity_matrix_ : ndarray or scipy.sparse matrix
    eigenvalues_ : ndarray (n_components + 1,)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.random.default_rng(0).standard_normal((100, 5))
    >>> gstat.SpectralEmbedding(n_components=2, random_state=0).fit_transform(X).shape
    (100, 2)
    """

    _parameter_constraints = constraints(lambda I, S: {
        "n_components": [I(numbers.Integral, 1, None, closed="left")],
        "affinity": [S({"nearest_neighbors", "rbf", "precomputed",
                        "precomputed_nearest_neighbors"}), callable],
        "gamma": [I(numbers.Real, 0, None, closed="left"), None],
        "n_neighbors": [I(numbers.Integral, 1, None, closed="left"), None],
        **_common_constraints(I, S)})

    def __init__(self, n_components=2, *, affinity="nearest_neighbors", gamma=None,
                 random_state=None, eigen_solver=None, eigen_tol="auto", n_neighbors=None,
                 backend=None, progress=None, knn_algorithm="auto"):
        self.n_components = n_components
        self.affinity = affinity
        self.gamma = gamma
        self.random_state = random_state
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.n_neighbors = n_neighbors
        self.backend = backend
        self.progress = progress
        self.knn_algorithm = knn_algorithm

    def fit(self, X, y=None):
        """Compute the embedding of `X` (or of the graph `X` when
        affinity='precomputed'; any graph :func:`laplacian` takes). Returns self."""
        validate_params(self)
        with _progress.scope(self.progress, "SpectralEmbedding", _fit_work(X)):
            return self._fit(X)

    def _fit(self, X):
        graph, self.affinity_matrix_ = self._affinity(X, False)
        sym = self._symmetrize(graph)
        k = int(self.n_components)
        tol = _eig_tol(self.eigen_tol)
        opts = _spectral_opts(1, k, 2, True, False, 0, 1, 300, 1e-4,
                              seed_from(self.random_state),
                              _choice(_SOLVER, self.eigen_solver, "eigen_solver"),
                              eig_tol=tol, disconnected=_PROCEED)
        emb, ev = _core.spectral_embedding(graph, sym, 0, opts, self.backend, *_on_device(graph))
        # scikit-learn warns when the graph is not connected and embeds anyway
        # (with more components than columns, some basis of the Laplacian's
        # null space: PROCEED). Then the second eigenvalue is 0 up to the
        # solve's accuracy; only then are the components counted, so that a
        # connected graph with a clear gap pays no pass for the warning.
        if (len(ev) < 2 or ev[1] <= 100.0 * max(tol, 1e-8)) and int(
                _core.graph_components(graph, sym, 0, self.backend, *_on_device(graph))[0][0]) > 1:
            warnings.warn("Graph is not fully connected, spectral embedding may not work as "
                          "expected.", UserWarning, stacklevel=3)
        self.embedding_, self.eigenvalues_ = emb[:, :k], ev[:k + 1]
        return self

    def fit_transform(self, X, y=None):
        """Fit and return `embedding_` (for a CUDA tensor `X`, as a tensor of
        its kind on its device)."""
        return _answer(X, self.fit(X).embedding_)


def spectral_clustering_batch(graphs, n_clusters, *, laplacian="random_walk", assign_labels="kmeans",
                              n_init=10, normalize_rows=False, random_state=0,
                              symmetrize="check", errors="raise", progress=None, backend=None):
    """Spectral clustering of many graphs of any sizes in one call.

    Each graph is labelled exactly as :class:`SpectralClustering` with
    ``affinity='precomputed'`` and the same options would label it; graphs
    of equal size share batched eigen decompositions and the per-graph work
    runs in parallel.

    Parameters
    ----------
    graphs : sequence of graphs, an ndarray (count, n, n), or a CUDA tensor
        (count, n, n) (torch, CuPy)
        Adjacency matrices (ragged sizes allowed): each an array_like
        (n_i, n_i), a scipy.sparse matrix/array of any format, a torch or
        CuPy sparse graph, or a networkx or igraph graph (as :func:`laplacian`
        reads them). A CUDA tensor of float32
        or float64 is clustered on its GPU (Laplacians, eigen
        decompositions, embeddings and k-means all on the device, no copy
        of the graphs); the labels still come back as numpy arrays.
    n_clusters : int, 'eigengap' or sequence of int
        Clusters per graph ('eigengap', or 0 in a sequence: chosen by the
        eigengap; a scalar 0 still means 'eigengap' with a FutureWarning).
    laplacian : {'random_walk', 'symmetric', 'unnormalized'}
    assign_labels : {'kmeans', 'cluster_qr'}
    n_init : int
    normalize_rows : bool
        Ng-Jordan-Weiss row normalization of the embedding.
    random_state : int
        Seed of k-means++ (the same for every graph).
    symmetrize : {'check', 'max', 'mean', 'sum', 'min'}
    errors : {'raise', 'ignore'}
        'ignore': a graph that fails on its own (more components than
        clusters, NaN or Inf weights) gets labels -1 instead of raising; a
        RuntimeWarning names those graphs and the first one's reason.
    progress : bool, callable or None
        A tqdm bar over the graphs: None (default) shows one when the batch
        is long and stderr is a terminal or a notebook runs it; True/False
        force it (True without tqdm warns once); a callable is called as
        ``progress(done, total, what)``. Ctrl-C cancels between chunks of
        graphs.
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    list of ndarray of int64
        The labels of each graph (for a CUDA tensor batch, int64 tensors of
        its kind on its device).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> two_triangles = np.kron(np.eye(2), np.ones((3, 3))) - np.eye(6)
    >>> gstat.spectral_clustering_batch([two_triangles, two_triangles[:3, :3]], [2, 1])
    [array([0, 0, 0, 1, 1, 1]), array([0, 0, 0])]
    """
    if errors not in ("raise", "ignore"):
        raise ValueError(f"errors must be 'raise' or 'ignore', got {errors!r}")
    kind, a, b, sym, kv, opts, sizes = _batch_request(graphs, n_clusters, laplacian, assign_labels,
                                                      n_init, normalize_rows, random_state,
                                                      symmetrize)
    work = float(sum(float(n) ** 3 for n in sizes))
    cb, close = _progress.callback(progress, "spectral_clustering_batch", work, "graph")
    try:
        dev = _device.cuda_device(a)
        stream = None if dev is None else _device.stream(a, dev)
        labels, info = _core.spectral_clustering_batch(kind, a, b, stream, sym, 0, kv, opts, cb,
                                                       errors == "raise", backend)
    finally:
        if close:
            close()
    _warn_failed_graphs(info)
    if dev is not None:  # one copy to the batch's device, then views
        labels = _device.like(a, labels, dev)
    return _split_labels(labels, sizes)


def _warn_failed_graphs(info):
    """Under errors='ignore', say which graphs were labelled -1 and why."""
    failed = [g for g, s in enumerate(info["status"]) if s != "GSTAT_OK"]
    if failed:
        import warnings

        shown = ", ".join(f"{g} ({info['status'][g]})" for g in failed[:10])
        more = f" and {len(failed) - 10} more" if len(failed) > 10 else ""
        warnings.warn(f"spectral_clustering_batch: {len(failed)} of {len(info['status'])} graphs "
                      f"failed and are labelled -1: graphs {shown}{more}; the first: "
                      f"{info['message']}", RuntimeWarning, stacklevel=3)


def _split_labels(labels, sizes):
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return [labels[bounds[g]:bounds[g + 1]] for g in range(len(sizes))]


def _batch_request(graphs, n_clusters, laplacian, assign_labels, n_init, normalize_rows,
                   random_state, symmetrize):
    """The C call's arguments for a batch: (kind, a, b, sym, k per graph or None, options, sizes).

    kind 0: CSR (a node offsets, b (indptr, indices, data)); kind 1: dense
    (a padded (count, n, n), b the sizes).
    """
    sym = _choice(_SYM, symmetrize, "symmetrize")
    if _device.cuda_device(graphs) is not None:  # a (count, n, n) CUDA tensor: the GPU engine
        shape = tuple(int(s) for s in graphs.shape)
        if len(shape) != 3 or shape[1] != shape[2]:
            raise ValueError(f"a device batch of graphs must be (count, n, n), got {shape}")
        kind, a, b, count = 1, graphs, None, shape[0]
        sizes = [shape[1]] * count
    elif isinstance(graphs, np.ndarray) and graphs.ndim == 3:
        kind, a, b, count = 1, graphs, None, graphs.shape[0]
        sizes = [graphs.shape[1]] * count
    else:
        if _issparse(graphs) or is_graph_object(graphs):
            raise TypeError("spectral_clustering_batch: graphs must be a sequence of graphs (or an "
                            f"ndarray (count, n, n)), got one {type(graphs).__name__}; pass [graph]")
        graphs = [as_graph(g, "spectral_clustering_batch") for g in graphs]
        if any(_device.cuda_device(g) is not None for g in graphs):
            raise _core.UnsupportedError(
                "spectral_clustering_batch: a sequence of CUDA tensors; pass the batch as one "
                "(count, n, n) CUDA tensor (the GPU engine), or host arrays")
        count = len(graphs)
        if any(_issparse(g) for g in graphs):
            import scipy.sparse as sp
            parts = [_csr(g if _issparse(g) else sp.csr_matrix(check_dense(
                g, "spectral_clustering_batch"))) for g in graphs]
            sizes = [p[0] for p in parts]
            node_off = np.zeros(count + 1, dtype=np.int64)
            node_off[1:] = np.cumsum(sizes)
            nnz = [len(p[2]) for p in parts]
            indptr = np.zeros(int(node_off[-1]) + 1, dtype=np.int64)
            edge_off = np.concatenate(([0], np.cumsum(nnz))).astype(np.int64)
            for g, p in enumerate(parts):  # block-diagonal concatenation (global indices)
                indptr[node_off[g] + 1:node_off[g + 1] + 1] = p[1][1:] + edge_off[g]
            indices = np.concatenate([p[2] + node_off[g] for g, p in enumerate(parts)] or [[]])
            data = np.concatenate([p[3] for p in parts] or [[]])
            kind, a, b = 0, node_off, (indptr, indices.astype(np.int64), data.astype(np.float64))
        else:
            for g in graphs:
                _device.refuse_masked(g, "spectral_clustering_batch")
            arrs = [check_dense(g, "spectral_clustering_batch") for g in graphs]
            sizes = [g.shape[0] for g in arrs]
            for g in arrs:
                if g.ndim != 2 or g.shape[0] != g.shape[1]:
                    raise ValueError(f"each graph must be a square matrix, got shape {g.shape}")
            nmax = max(sizes, default=0)
            dt = np.result_type(np.float32, *[g.dtype for g in arrs]) if arrs else np.float64
            if dt not in (np.float32, np.float64):
                dt = np.float64
            a = np.zeros((count, nmax, nmax), dtype=dt)  # padded; the padding is never read
            for g, m in enumerate(arrs):
                a[g, :m.shape[0], :m.shape[0]] = m
            kind, b = 1, np.asarray(sizes, dtype=np.int64)
    if isinstance(n_clusters, str):
        if n_clusters != "eigengap":
            raise ValueError(f"n_clusters must be an int >= 1, 'eigengap' or a sequence of ints, "
                             f"got {n_clusters!r}")
        k_all, kv = 0, None
    elif isinstance(n_clusters, numbers.Integral):
        k_all, kv = int(n_clusters), None
        if k_all == 0:  # gstat 0.1's spelling of the eigengap choice
            warnings.warn("n_clusters=0 for the eigengap is deprecated: pass n_clusters='eigengap'",
                          FutureWarning, stacklevel=3)
    else:
        kv = np.asarray(n_clusters, dtype=np.int64)
        k_all = 0
    opts = _spectral_opts(k_all, 0, _choice(_KIND, laplacian, "laplacian"), False, normalize_rows,
                          _choice(_ASSIGN, assign_labels, "assign_labels"), n_init, 300, 1e-4,
                          seed_from(random_state), 1)
    return kind, a, b, sym, kv, opts, sizes
