"""gstat: batched eigh/Cholesky, covariance analysis, PCA and spectral
clustering on the CPU and on NVIDIA GPUs, over the gstat C library.

numpy arrays go in and come out (float32, float64, and bfloat16 when
ml_dtypes is installed); CUDA tensors from torch or CuPy are processed on the
GPU in place and answered with tensors of the same kind. The GIL is released
while the C library computes.
"""
import contextlib as _contextlib
import os as _os

from . import _threadpool  # before _core: the OpenMP wait policy (see _threadpool.py)
from . import _core, _cuda_libs, linalg
from ._core import BackendError, LinAlgError, UnsupportedError
from ._accumulator import CovarianceAccumulator
from ._covariance import OAS, EmpiricalCovariance, LedoitWolf, corrcoef, cov, mahalanobis
from ._neighbors import kneighbors, kneighbors_graph
from ._pca import PCA
from ._spectral import SpectralClustering, SpectralEmbedding, laplacian, spectral_clustering_batch

__version__ = _core.c_version  # the C library's, built from the repository's VERSION file
__c_version__ = _core.c_version

__all__ = [
    "linalg", "cov", "CovarianceAccumulator", "corrcoef", "mahalanobis", "PCA", "EmpiricalCovariance", "LedoitWolf", "OAS",
    "SpectralClustering", "SpectralEmbedding", "laplacian", "spectral_clustering_batch", "kneighbors",
    "kneighbors_graph",
    "LinAlgError", "UnsupportedError", "BackendError", "last_backend", "last_device_stats", "set_backend",
    "get_backend", "use_backend", "set_num_threads", "get_num_threads", "cuda_available",
]

_threadpool.register()  # threadpoolctl's limits apply to gstat's threads
# before any call can load the CUDA module: which module, and its CUDA libraries
_cuda_libs.setup(_os.path.dirname(_os.path.abspath(_core.__file__)))

try:  # bfloat16 arrays when ml_dtypes is installed
    import ml_dtypes as _ml_dtypes

    _core.set_bfloat16(_ml_dtypes.bfloat16)
except ImportError:
    pass


def last_backend():
    """Backend(s) that did the work of this thread's last gstat call.

    Returns
    -------
    str
        "cpu", "cuda", "cuda+cpu" (GPU with elements recomputed on the CPU) or
        "none" (nothing computed, e.g. an empty batch or a rejected argument).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> _ = gstat.linalg.eigvalsh(np.eye(3), backend="cpu")
    >>> gstat.last_backend()
    'cpu'
    """
    return _core.last_backend()


def last_device_stats():
    """What the GPU did in this thread's last gstat call (all zero when it ran
    on the CPU), for tuning and tests.

    Returns
    -------
    dict
        ``allocations``: device memory allocations (cudaMalloc); a repeated
        call of one shape makes none. ``graph_captures``: batched-solver CUDA
        graphs captured (once per shape while cached). ``graph_refusals``:
        captures that failed (cuSOLVER refuses at n = 1024; the call then ran
        the solver directly). ``graph_launches``: replays of a captured graph,
        one per chunk. ``pipeline_pieces``: pieces of host arrays solved in the
        pipeline that overlaps their copies with the solve.
        ``own_tridiag_chunks``: chunks whose tridiagonal problems gstat solved
        itself (its lockstep eigensolver at mid n, or after cuSOLVER's
        reduction for large float32). ``own_tridiag_degenerate``: of those,
        chunks with eigenvalue clusters its cluster step could not serve
        (those matrices, on the lockstep path, or the whole chunk solved
        again by cuSOLVER). ``own_tridiag_clustered``: matrices whose
        eigenvalue clusters got their vectors from that step.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> _ = gstat.linalg.eigvalsh(np.eye(3), backend="cpu")
    >>> gstat.last_device_stats()["allocations"]
    0
    """
    return _core.last_device_stats()


def set_backend(backend):
    """Set the default backend of calls without ``backend=``: 'auto', 'cpu' or 'cuda'.

    'auto' (the default) sends CUDA tensors and large host batches to the GPU
    when the CUDA module and a device are usable, everything else to the CPU.
    The setting is process-wide.

    Examples
    --------
    >>> import gstat
    >>> gstat.set_backend("cpu")
    >>> gstat.get_backend()
    'cpu'
    >>> gstat.set_backend("auto")
    """
    _core.set_default_backend(backend)


def get_backend():
    """The default backend ('auto', 'cpu' or 'cuda').

    Examples
    --------
    >>> import gstat
    >>> gstat.get_backend()
    'auto'
    """
    return _core.get_default_backend()


@_contextlib.contextmanager
def use_backend(backend):
    """Context manager: ``with gstat.use_backend('cpu'): ...`` (process-wide while inside).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> with gstat.use_backend("cpu"):
    ...     w = gstat.linalg.eigvalsh(np.eye(2))
    >>> gstat.get_backend()
    'auto'
    """
    old = get_backend()
    set_backend(backend)
    try:
        yield
    finally:
        set_backend(old)


def set_num_threads(n):
    """CPU threads per call for contexts created from now on (0: OpenMP's default).

    Examples
    --------
    >>> import gstat
    >>> gstat.set_num_threads(1)
    >>> gstat.get_num_threads()
    1
    >>> gstat.set_num_threads(0)
    """
    _core.set_num_threads(n)


def get_num_threads():
    """CPU threads per call (0: OpenMP's default).

    Examples
    --------
    >>> import gstat
    >>> gstat.get_num_threads()     # 0: OpenMP's default
    0
    """
    return _core.get_num_threads()


def cuda_available(device=0, reason=False):
    """Whether the CUDA backend module loads and finds `device`.

    Parameters
    ----------
    device : int, optional
        CUDA device ordinal.
    reason : bool, optional
        Also say why not: return ``(available, why)``, `why` being "" when
        available, else a sentence naming what is missing (no CUDA module
        installed, a CUDA library the module cannot find, no driver or GPU).

    Examples
    --------
    >>> import gstat
    >>> gstat.cuda_available() in (True, False)
    True
    >>> ok, why = gstat.cuda_available(reason=True)
    >>> ok or why != ""
    True
    """
    ok = _core.cuda_available(device)
    if not reason:
        return ok
    return ok, "" if ok else _cuda_libs.why_not(device)
