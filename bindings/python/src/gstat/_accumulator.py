"""Streaming, mergeable covariance statistics (the C library's gstat_cov_accum)."""
import numbers

import numpy as np

from . import _core
from ._device import cuda_device as _cuda_device, host as _host, stream as _stream
from ._pca import PCA

__all__ = ["CovarianceAccumulator"]

_MISSING = {"everything": 0, "complete": 1, "complete.obs": 1}


class CovarianceAccumulator:
    """Count, mean and co-moment matrix of data seen in chunks, mergeable.

    Chunks of rows are added one at a time and accumulators merge with one
    another (Chan et al.'s pairwise update, in float64), so any split of the
    rows, over chunks of a file larger than memory, Dask blocks or MPI ranks,
    gives the covariance and PCA of the whole data to rounding. The object is
    small and picklable: it holds the C library's exported state (a float64
    array of about p^2 / 2 values), which is also what travels between
    processes.

    Parameters
    ----------
    n_features : int
        Number of variables p (columns of every chunk).
    missing : {'everything', 'complete.obs' (or 'complete')}
        'everything': a NaN makes the entries of its column NaN from then on;
        'complete.obs': rows with a NaN are skipped (and counted).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> rows = np.random.default_rng(0).standard_normal((1000, 3))
    >>> acc = gstat.CovarianceAccumulator(3)
    >>> for chunk in np.array_split(rows, 4):
    ...     _ = acc.add(chunk)
    >>> np.allclose(acc.covariance(), np.cov(rows, rowvar=False))
    True
    >>> acc.pca(n_components=2).components_.shape   # a fitted gstat.PCA
    (2, 3)
    """

    def __init__(self, n_features, missing="everything"):
        if not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise ValueError(f"n_features must be an int >= 1, got {n_features!r}")
        if missing not in _MISSING:
            raise ValueError(f"missing must be 'everything' or 'complete.obs', got {missing!r}")
        self.n_features = int(n_features)
        self.missing = missing
        self.state = None  # None: empty; else the C library's exported state

    def _args(self):
        return self.n_features, _MISSING[self.missing], self.state

    def add(self, x, fweights=None, *, backend=None):
        """Add a chunk of rows `x` (n, n_features), optionally with frequency weights. Returns self.

        A CUDA tensor `x` is reduced where the C library can (its device);
        the accumulated state stays on the host."""
        dev = _cuda_device(x)
        on_dev = () if dev is None else (_stream(x, dev),)
        self.state = _core.accum_add(*self._args(), x, _host(fweights), backend, *on_dev)
        return self

    def merge(self, other):
        """Merge `other` (an accumulator of the same n_features and missing) into self. Returns self."""
        if not isinstance(other, CovarianceAccumulator):
            raise TypeError(f"can only merge a CovarianceAccumulator, got {type(other).__name__}")
        if (other.n_features, other.missing) != (self.n_features, self.missing):
            raise ValueError(f"cannot merge an accumulator of n_features={other.n_features}, "
                             f"missing={other.missing!r} into one of n_features={self.n_features}, "
                             f"missing={self.missing!r}")
        if other.state is not None:
            self.state = other.state.copy() if self.state is None else _core.accum_merge(
                *self._args(), other.state)
        return self

    def copy(self):
        """An independent accumulator with the same data."""
        new = CovarianceAccumulator(self.n_features, self.missing)
        new.state = None if self.state is None else self.state.copy()
        return new

    @classmethod
    def from_state(cls, n_features, missing, state):
        """An accumulator holding `state` (an array from `.state`, e.g. received from elsewhere)."""
        acc = cls(n_features, missing)
        if state is not None:
            acc.state = _core.accum_merge(*acc._args(), np.asarray(state, dtype=np.float64))
        return acc

    def _info(self):
        return _core.accum_info(*self._args())

    @property
    def n_samples(self):
        """Rows accumulated (skipped rows not counted)."""
        return self._info()[0]

    @property
    def n_skipped(self):
        """Rows skipped because of missing values ('complete.obs')."""
        return self._info()[1]

    @property
    def weight(self):
        """Sum of the frequency weights (the number of rows without weights)."""
        return self._info()[2]

    def covariance(self, ddof=1):
        """Covariance matrix (n_features, n_features), divisor weight - ddof, as numpy.cov."""
        return _core.accum_covariance(*self._args(), ddof, False)[0]

    def correlation(self):
        """Correlation matrix (n_features, n_features), as numpy.corrcoef."""
        return _core.accum_covariance(*self._args(), 1, True)[0]

    @property
    def mean(self):
        """Column means (n_features,)."""
        return _core.accum_covariance(*self._args(), 1, False)[1]

    def pca(self, n_components=None, *, whiten=False, backend=None):
        """A fitted :class:`gstat.PCA` (covariance-eigh) of the data seen.

        n_components is a count, a variance fraction in (0, 1) or None (all).
        The returned estimator transforms new data; it has no scores of the
        accumulated rows (pass them through ``transform``).
        """
        est = PCA(n_components=n_components, whiten=whiten, svd_solver="covariance_eigh",
                  backend=backend)
        k, frac, _, _, _ = est._options(self.n_samples, self.n_features)
        r = _core.accum_pca(*self._args(), k, frac, whiten, backend)
        return est._set_fitted(r, np.float64)

    def __repr__(self):
        return (f"CovarianceAccumulator(n_features={self.n_features}, missing={self.missing!r}, "
                f"n_samples={self.n_samples})")
