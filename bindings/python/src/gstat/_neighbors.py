"""k-nearest-neighbour lists and graphs, in scikit-learn's conventions
(``NearestNeighbors.kneighbors``, ``kneighbors_graph``): exact by default,
approximate (NN-descent) when asked."""
import numpy as np

from . import _core, _progress
from ._device import cuda_device as _cuda_device, like as _like, refuse_masked as _refuse_masked
from ._device import stream as _stream
from ._graph_input import is_sparse as _is_sparse

# scikit-learn's NearestNeighbors(algorithm=...) names, and NN-descent
# (gstat_knn_algorithm); both trees are gstat's k-d tree, exact either way.
_ALGORITHMS = {"auto": 0, "kd_tree": 1, "ball_tree": 1, "brute": 2, "nndescent": 3}


def knn_algorithm(algorithm, who):
    """The C library's gstat_knn_algorithm for an `algorithm` argument."""
    try:
        return _ALGORITHMS[algorithm]
    except (KeyError, TypeError):
        raise ValueError(f"{who}: algorithm must be one of {sorted(_ALGORITHMS)}, "
                         f"got {algorithm!r}") from None


def knn_seed(random_state):
    """The NN-descent seed of a random_state (None: 0, so that results repeat)."""
    if random_state is None:
        return 0
    from ._sk import seed_from
    return seed_from(random_state)


def _work(X, k):
    """Rough multiply-adds of a kNN search: the GEMM's n^2 p (the tree's is less,
    and a bar shows only after a second anyway)."""
    n, p = (int(s) for s in X.shape)
    return float(n) * n * max(p, 1) + float(n) * k


def kneighbors(X, n_neighbors=5, *, include_self=False, return_distance=True, backend=None,
               progress=None, algorithm="auto", random_state=None):
    """The `n_neighbors` nearest points (Euclidean) of every point of `X`.

    Parameters
    ----------
    X : array_like, shape (n, p)
        Points in rows (any float dtype; a CUDA tensor is searched on its
        GPU). Must be finite.
    n_neighbors : int, optional
        Neighbours per point.
    include_self : bool, optional
        False (default): the point's others, as ``NearestNeighbors().fit(X)
        .kneighbors()`` with no argument. True: the point itself first
        (distance 0), then ``n_neighbors - 1`` others.
    return_distance : bool, optional
        Return ``(distances, indices)``, as scikit-learn does, or indices only.
    backend : {'auto', 'cpu', 'cuda'}, optional
    progress : bool, callable or None, optional
        A tqdm bar over the points searched: None (default) shows one when
        the search is long and stderr is a terminal or a notebook runs it;
        True/False force it; a callable is called as
        ``progress(done, total, what)``. Ctrl-C cancels between blocks.
    algorithm : {'auto', 'kd_tree', 'ball_tree', 'brute', 'nndescent'}, optional
        'auto' (default), 'kd_tree', 'ball_tree' and 'brute' are exact (the
        same answer): 'auto' lets gstat choose, the trees force its k-d tree
        (at most 16 features; 'ball_tree' is the same tree), 'brute' its GEMM
        search. 'nndescent' is APPROXIMATE and runs on the CPU: NN-descent,
        whose cost grows like n rather than n^2; a true neighbour may be
        missed (recall >= 0.99 on blobs of up to 128 features, checked on a
        sample as it runs), the distances given are exact. On the Gaussian
        blobs measured (up to 10^5 points, 10-128 features) it is not faster
        than the exact search (bench/README.md, "Approximate kNN"); it is
        meant for data of low intrinsic dimension in many features. 'auto'
        never picks it.
    random_state : int, RandomState or None, optional
        Seed of 'nndescent' (None: 0): its result depends only on the data,
        `n_neighbors` and the seed, not on the thread count.

    Returns
    -------
    distances : ndarray, shape (n, n_neighbors), float64
        Only when `return_distance`.
    indices : ndarray, shape (n, n_neighbors), int64
        Each row ordered by distance; equal distances by the smaller index.
        For a CUDA tensor `X` both are tensors of its kind on its device.

    Notes
    -----
    Exact but for 'nndescent': the float64 distances from the coordinates,
    the same on every backend. On the CPU up to 16 features a k-d tree searches (its cost
    grows like ``n log n`` on clustered data); above, and on the GPU,
    blocked GEMM distances (float32 ones for float32 data) choose the
    candidates within a proven bound of their rounding, and the candidates'
    distances are measured exactly.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.array([[0.], [1.], [3.]])
    >>> dist, ind = gstat.kneighbors(X, 1)
    >>> ind.ravel(), dist.ravel()
    (array([1, 0, 1]), array([1., 1., 2.]))
    """
    dist, ind, dev = _knn(X, n_neighbors, include_self, backend, progress, algorithm,
                          random_state)
    if dev is not None:  # the lists to X's device, as X's kind
        dist, ind = _like(X, dist, dev), _like(X, ind, dev)
    return (dist, ind) if return_distance else ind


def _knn(X, n_neighbors, include_self, backend, progress, algorithm, random_state):
    """(distances, indices) as host arrays, and X's CUDA device (or None)."""
    if _is_sparse(X):
        raise TypeError("kneighbors: sparse X is not supported; pass a dense array")
    dev = _cuda_device(X)
    if dev is None:
        _refuse_masked(X, "kneighbors")
        X = np.asarray(X)
    if len(X.shape) != 2:
        raise ValueError(f"kneighbors: X must be 2-D (points x features), got {len(X.shape)}-D")
    alg = knn_algorithm(algorithm, "kneighbors")
    with _progress.scope(progress, "kneighbors", _work(X, int(n_neighbors)), "point"):
        ind, dist = _core.knn(X, int(n_neighbors), bool(include_self),
                              None if dev is None else _stream(X, dev), backend, alg,
                              knn_seed(random_state))
    return dist, ind, dev


def kneighbors_graph(X, n_neighbors, *, mode="connectivity", include_self=False, backend=None,
                     progress=None, algorithm="auto", random_state=None):
    """The directed k-nearest-neighbour graph of `X`, as
    ``sklearn.neighbors.kneighbors_graph`` (Euclidean metric).

    Parameters
    ----------
    X : array_like, shape (n, p)
    n_neighbors : int
    mode : {'connectivity', 'distance'}, optional
        Weight 1, or the Euclidean distance, per edge.
    include_self : bool, optional
        Whether each point is its own neighbour (an explicit diagonal entry:
        1, or a stored 0 in 'distance' mode).
    backend : {'auto', 'cpu', 'cuda'}, optional
    progress : bool, callable or None, optional
        As :func:`kneighbors`.
    algorithm : {'auto', 'kd_tree', 'ball_tree', 'brute', 'nndescent'}, optional
        As :func:`kneighbors`: exact by default, 'nndescent' approximate.
    random_state : int, RandomState or None, optional
        As :func:`kneighbors`.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n, n)
        Row i holds point i's neighbours (column indices sorted). A CUDA
        tensor `X` is searched on its GPU; the graph is a host scipy matrix
        all the same (the form every gstat graph entry point takes).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.array([[0.], [1.], [3.]])
    >>> gstat.kneighbors_graph(X, 1).toarray()
    array([[0., 1., 0.],
           [1., 0., 0.],
           [0., 1., 0.]])
    """
    if mode not in ("connectivity", "distance"):
        raise ValueError(f"kneighbors_graph: mode must be 'connectivity' or 'distance', got {mode!r}")
    import scipy.sparse as sp

    dist, ind, _ = _knn(X, n_neighbors, include_self, backend, progress, algorithm, random_state)
    n, k = ind.shape
    order = np.argsort(ind, axis=1, kind="stable")
    cols = np.take_along_axis(ind, order, axis=1).ravel()
    if mode == "distance":
        data = np.take_along_axis(dist, order, axis=1).ravel()
    else:
        data = np.ones(n * k)
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
    return sp.csr_matrix((data, cols, indptr), shape=(n, n))
