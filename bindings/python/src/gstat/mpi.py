"""gstat over MPI with mpi4py communicators (the C library's gstat_mpi).

Every function is collective over ``comm``: all ranks call it in the same
order with the same ``root``. Each rank passes its own rows (row-partitioned
data, any number of rows including none) or, for batch spectral clustering,
the whole batch description. Results equal the single-process ones to
rounding (covariance and PCA) or exactly (cluster labels). A rank whose
input is bad does not leave the others waiting: every rank raises the same
exception, whose message names the failing rank.

``root=None`` gives the result on every rank; ``root=r`` only on rank r
(the others get None). ``device``: the GPU a rank uses with the CUDA backend;
by default the rank's index among the ranks of its node, modulo the number of
usable GPUs (one rank per GPU). ``backend`` as everywhere in gstat.

Needs gstat built where CMake found MPI (``gstat.mpi.available()``) and
mpi4py using the same MPI library.

Example (``mpirun -np 4 python script.py``)::

    from mpi4py import MPI
    import gstat.mpi
    x_local = load_my_rows(MPI.COMM_WORLD.Get_rank())
    model = gstat.mpi.pca(MPI.COMM_WORLD, x_local, n_components=10)
    scores = model.transform(x_local)   # each rank projects its own rows
"""
import numpy as np

from . import _core, _device
from ._accumulator import _MISSING, CovarianceAccumulator
from ._pca import PCA
from ._spectral import _batch_request, _split_labels

try:
    from . import _mpi
except ImportError:  # gstat built without MPI
    _mpi = None

__all__ = ["available", "covariance", "corrcoef", "pca", "reduce_accumulator",
           "spectral_clustering_batch"]

_BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}
_ALL_RANKS = -1
_gpu_count = None


def available():
    """Whether this gstat was built with MPI support (gstat._mpi)."""
    return _mpi is not None


def _setup(comm, root, backend, device):
    """(fortran handle, root, receives, backend, device, threads) of a call."""
    if _mpi is None:
        raise _core.UnsupportedError("gstat was built without MPI (CMake found no MPI when the "
                                     "package was built); gstat.mpi is not available")
    if not hasattr(comm, "py2f"):
        raise TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")
    size, rank = comm.Get_size(), comm.Get_rank()
    if root is None:
        r = _ALL_RANKS
    elif isinstance(root, (int, np.integer)) and 0 <= root < size:
        r = int(root)
    else:
        raise ValueError(f"root must be None or a rank in [0, {size}), got {root!r}")
    name = _core.get_default_backend() if backend is None else backend
    if name not in _BACKENDS:
        raise ValueError(f"backend must be 'auto', 'cpu' or 'cuda', got {backend!r}")
    if device is None:
        device = _default_device(comm) if name != "cpu" else 0
    return comm.py2f(), r, r in (_ALL_RANKS, rank), _BACKENDS[name], int(device), \
        _core.get_num_threads()


def _default_device(comm):
    """This rank's index among its node's ranks, modulo the usable GPUs (0 without GPUs)."""
    global _gpu_count
    if _gpu_count is None:
        _gpu_count = 0
        while _gpu_count < 64 and _core.cuda_available(_gpu_count):
            _gpu_count += 1
    if _gpu_count <= 1:
        return 0
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return node.Get_rank() % _gpu_count
    finally:
        node.Free()


def _rows(x):
    x = np.asarray(x)
    if x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-dimensional (n_samples_on_this_rank, n_features), got "
                         f"{x.ndim}-D")
    return np.ascontiguousarray(x)


def _missing(missing):
    if missing not in _MISSING:
        raise ValueError(f"missing must be 'everything' or 'complete.obs' (pairwise does not "
                         f"merge across ranks), got {missing!r}")
    return _MISSING[missing]


def covariance(comm, x, *, ddof=1, fweights=None, missing="everything", root=None, backend=None,
               device=None):
    """Covariance (p, p) of the rows of all ranks stacked in rank order, as numpy.cov(rowvar=False).

    x is this rank's rows (n_r, p), n_r >= 0; fweights its rows' frequency
    weights. Returns the matrix on receiving ranks, None elsewhere.
    """
    f, r, recv, be, dev, th = _setup(comm, root, backend, device)
    res = _mpi.covariance(f, r, recv, _rows(x), int(ddof), fweights, _missing(missing), False, be,
                          dev, th)
    return None if res is None else res[0]


def corrcoef(comm, x, *, missing="everything", root=None, backend=None, device=None):
    """Correlation matrix (p, p) of the rows of all ranks (see covariance)."""
    f, r, recv, be, dev, th = _setup(comm, root, backend, device)
    res = _mpi.covariance(f, r, recv, _rows(x), 1, None, _missing(missing), True, be, dev, th)
    return None if res is None else res[0]


def pca(comm, x, n_components=None, *, whiten=False, root=None, backend=None, device=None):
    """PCA (covariance-eigh) of the rows of all ranks: a fitted :class:`gstat.PCA`.

    Each rank accumulates its rows, the accumulators merge in rank order,
    and the eigen decomposition runs once per receiving rank. n_components is
    a count, a variance fraction in (0, 1) or None (all). Project each rank's
    rows with the returned model's ``transform``. None on non-receiving ranks.
    """
    f, r, recv, be, dev, th = _setup(comm, root, backend, device)
    x = _rows(x)
    est = PCA(n_components=n_components, whiten=whiten, svd_solver="covariance_eigh",
              backend=backend)
    p = x.shape[1]
    k, frac, _, _, _ = est._options(max(p, 1), max(p, 1))  # n is only known after the merge
    res = _mpi.pca(f, r, recv, x, k, frac, whiten, be, dev, th)
    return None if res is None else est._set_fitted(res, x.dtype)


def reduce_accumulator(comm, acc, *, root=None, backend=None):
    """Merge every rank's :class:`gstat.CovarianceAccumulator` (same n_features and missing).

    Returns a new accumulator holding the data of all ranks on the
    receiving ranks (merged pairwise in rank order), a copy of the rank's own
    elsewhere. ``acc`` itself is not changed.
    """
    if not isinstance(acc, CovarianceAccumulator):
        raise TypeError(f"acc must be a gstat.CovarianceAccumulator, got {type(acc).__name__}")
    f, r, recv, be, dev, th = _setup(comm, root, backend, 0)
    state = _mpi.accum_reduce(f, r, recv, acc.n_features, _MISSING[acc.missing], acc.state, be,
                              dev, th)
    out = CovarianceAccumulator(acc.n_features, acc.missing)
    out.state = state
    return out


def spectral_clustering_batch(comm, graphs, n_clusters, *, laplacian="random_walk",
                              assign_labels="kmeans", n_init=10, normalize_rows=False,
                              random_state=0, symmetrize="check", errors="raise", root=None,
                              backend=None, device=None):
    """Batch spectral clustering with the graphs spread over the ranks.

    Every rank passes the same whole batch (arguments as
    :func:`gstat.spectral_clustering_batch`); the graphs are cut into ranges
    of about equal cost (n^3 per graph), one per rank, and the labels come
    back in the original order, bitwise those of the single-process call.
    Returns the list of label arrays on receiving ranks, None elsewhere.
    """
    if errors not in ("raise", "ignore"):
        raise ValueError(f"errors must be 'raise' or 'ignore', got {errors!r}")
    if _device.cuda_device(graphs) is not None:
        raise TypeError("gstat.mpi.spectral_clustering_batch takes host graphs (numpy, "
                        "scipy.sparse); a CUDA tensor batch goes to gstat.spectral_clustering_batch")
    f, r, recv, be, dev, th = _setup(comm, root, backend, device)
    kind, a, b, sym, kv, opts, sizes = _batch_request(graphs, n_clusters, laplacian, assign_labels,
                                                      n_init, normalize_rows, random_state,
                                                      symmetrize)
    # Labels on every rank, so that each applies `errors` to the same statuses.
    labels, status, k_used, st, msg = _mpi.spectral_clustering_batch(
        f, _ALL_RANKS, True, kind, a, b, sym, kv, opts, be, dev, th)
    if st != 0 and errors == "raise":
        _core.raise_status(st, msg)
    return _split_labels(labels, sizes) if recv else None
