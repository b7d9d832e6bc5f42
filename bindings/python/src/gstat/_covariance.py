"""Covariance, correlation, Mahalanobis distances and the covariance estimators."""
import math
import warnings

import numpy as np

from . import _core, _progress
from ._device import cuda_device as _cuda_device, empty_like as _empty_like, stream as _stream
from ._device import host as _host, refuse_masked as _refuse_masked, to_numpy as _to_numpy
from ._sk import BaseEstimator, check_is_fitted, validate_any

__all__ = ["cov", "corrcoef", "mahalanobis", "EmpiricalCovariance", "LedoitWolf", "OAS"]

_MISSING = {"everything": 0, "complete": 1, "complete.obs": 1, "pairwise": 2,
            "pairwise.complete.obs": 2}


def _missing(m):
    try:
        return _MISSING[m]
    except (KeyError, TypeError):
        raise ValueError(f"missing must be one of {sorted(_MISSING)}, got {m!r}") from None


class _Default:
    """The rowvar default: True as numpy, told apart from an explicit True so
    callers that relied on the old default (False) hear about it."""

    def __bool__(self):
        return True

    def __repr__(self):
        return "True"


_ROWVAR_DEFAULT = _Default()


def _rowvar(x, rowvar, what):
    """The rowvar to use; a FutureWarning (this release only) when the default
    meets a non-square matrix, where the old default gave another shape."""
    if rowvar is not _ROWVAR_DEFAULT:
        return bool(rowvar)
    shape = tuple(x.shape)
    if len(shape) >= 2 and shape[-2] != shape[-1]:
        warnings.warn(
            f"gstat.{what}: rowvar now defaults to True as numpy.{what} (variables in rows: "
            f"shape {shape} gives {shape[-2]}x{shape[-2]}); gstat 0.1 defaulted to False "
            f"({shape[-1]}x{shape[-1]}). Pass rowvar= explicitly to silence this warning.",
            FutureWarning, stacklevel=4)
    return True


def _prepare(x, rowvar, missing, what):
    dev = _cuda_device(x)
    if dev is None:
        if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
            if missing == _MISSING["everything"]:
                _refuse_masked(x, what, "pass missing='pairwise' or 'complete' to treat the "
                               "masked entries as missing, or x.filled(value)")
            # masked entries are missing values: NaN under a missing-value mode
            x = np.ma.filled(x.astype(np.result_type(x.dtype, np.float32)), np.nan)
        x = np.asarray(x)
    if x.ndim == 0:
        raise ValueError("x must be at least 1-dimensional")
    rowvar = _rowvar(x, rowvar, what)
    scalar = x.ndim == 1
    if scalar:  # one variable, observations along the axis (numpy)
        x = x[:, None]
    elif rowvar:  # variables in rows: a transposed view, no copy
        x = x.swapaxes(-1, -2)
    return x, scalar


def _work(x):
    """Multiply-adds of the co-moments of x (..., n, p)."""
    shape = tuple(int(s) for s in x.shape)
    return float(math.prod(shape[:-1])) * shape[-1] * shape[-1] / 2.0


def _cov_call(x, ddof, fweights, aweights, missing, correlation, dtype, out, backend,
              want_mean=False, assume_centered=False):
    """_core.cov on numpy or, outputs allocated alike, on a CUDA tensor (weights,
    n numbers, are read from the host either way)."""
    fweights, aweights = _host(fweights), _host(aweights)
    dev = _cuda_device(x)
    if dev is None:
        return _core.cov(x, ddof, fweights, aweights, missing, correlation, dtype, out, backend,
                         want_mean, assume_centered, None, None)
    if dtype is not None and np.dtype(dtype).name != str(x.dtype).split(".")[-1]:
        raise ValueError("dtype= must be the input's for a CUDA tensor (cast the tensor first)")
    p = x.shape[-1]
    if out is None:
        out = _empty_like(x, tuple(x.shape[:-2]) + (p, p), dev)
    mean = _empty_like(x, tuple(x.shape[:-2]) + (p,), dev) if want_mean else None
    return _core.cov(x, ddof, fweights, aweights, missing, correlation, None, out, backend,
                     want_mean, assume_centered, _stream(x, dev), mean)


def cov(x, rowvar=_ROWVAR_DEFAULT, ddof=1, fweights=None, aweights=None, missing="everything", *,
        dtype=None, out=None, backend=None, progress=None):
    """Covariance matrix of each dataset of a batch.

    Parameters
    ----------
    x : array_like, shape (..., p, n) or, with ``rowvar=False``, (..., n, p)
        Variables in rows, observations in columns (numpy.cov's default).
        A 1-D `x` is one variable.
    rowvar : bool, default True
        True (numpy's default): each row is a variable. False: each column
        is a variable, observations in rows (scikit-learn's layout).
        **Changed in 0.2**: the default was False; for this release a
        FutureWarning is issued when the default meets a non-square matrix
        (where the two readings give different shapes). Pass `rowvar`
        explicitly to silence it.
    ddof : int, optional
        Divisor ``sum(weights) - ddof`` (1: unbiased, 0: maximum likelihood).
        A divisor <= 0 divides by 0 as numpy.cov does: +-inf entries, NaN where
        the co-moment is 0 (no warning is issued).
    fweights, aweights : array_like, shape (n,), optional
        Integer frequency and non-negative analytic weights, as numpy.cov.
    missing : {'everything', 'complete', 'pairwise'}, optional
        NaN handling as R's cov(use=): NaN propagates, rows with a NaN are
        dropped, or each pair uses the rows where both are present. The
        masked entries of a numpy masked array are missing values under
        'complete' and 'pairwise' (unlike np.ma.cov, which centres each
        column over all its present rows); with 'everything' a masked array
        is refused (TypeError).
    dtype : dtype, optional
        Output dtype (float32, float64, bfloat16); default the input's.
    out : ndarray, shape (..., p, p), optional
    backend : {'auto', 'cpu', 'cuda'}, optional
    progress : bool, callable or None, optional
        A tqdm bar over the batch: None (default) shows one when the call is
        long and stderr is a terminal or a notebook runs it; True/False
        force it; a callable is called as ``progress(done, total, what)``.

    Returns
    -------
    ndarray, shape (..., p, p) (0-d for 1-D `x`)

    Examples
    --------
    >>> import numpy as np, gstat
    >>> x = np.array([[0., 2.], [1., 1.], [2., 0.]])   # 3 observations of 2 variables
    >>> gstat.cov(x, rowvar=False)                      # columns are the variables
    array([[ 1., -1.],
           [-1.,  1.]])
    >>> gstat.cov(x.T, rowvar=True)                     # numpy.cov's layout: rows
    array([[ 1., -1.],
           [-1.,  1.]])
    >>> gstat.cov(np.stack([x, 2 * x]), rowvar=False).shape   # a batch of datasets
    (2, 2, 2)
    """
    missing = _missing(missing)
    x, scalar = _prepare(x, rowvar, missing, "cov")
    with _progress.scope(progress, "cov", _work(x), "dataset"):
        c = _cov_call(x, int(ddof), fweights, aweights, missing, False, dtype, out, backend)
    return c[0, 0] if scalar and out is None else c


def corrcoef(x, rowvar=_ROWVAR_DEFAULT, fweights=None, aweights=None, missing="everything", *,
             dtype=None, out=None, backend=None, progress=None):
    """Correlation matrix of each dataset of a batch (Pearson).

    Parameters are those of :func:`cov`. A constant column gives NaN in its
    row and column (numpy). Entries are clamped to [-1, 1].

    Returns
    -------
    ndarray, shape (..., p, p)

    Examples
    --------
    >>> import numpy as np, gstat
    >>> x = np.array([[1., 2., 3., 4.], [2., 4., 6., 9.]])  # 2 variables in rows
    >>> np.round(gstat.corrcoef(x, rowvar=True), 4)
    array([[1.    , 0.9944],
           [0.9944, 1.    ]])
    """
    missing = _missing(missing)
    x, scalar = _prepare(x, rowvar, missing, "corrcoef")
    with _progress.scope(progress, "corrcoef", _work(x), "dataset"):
        c = _cov_call(x, 1, fweights, aweights, missing, True, dtype, out, backend)
    return c[0, 0] if scalar and out is None else c


def mahalanobis(x, center, cov, *, inverted=False, squared=None, backend=None):
    """Mahalanobis distances of the rows of `x` to `center`.

    **Squared or not -- say which.** ``squared=True`` gives
    ``(x - center)^T cov^-1 (x - center)`` (R's ``mahalanobis()``,
    scikit-learn's ``EmpiricalCovariance.mahalanobis``); ``squared=False``
    its square root, the distance of ``scipy.spatial.distance.mahalanobis``
    (which takes the inverse: pass it here with ``inverted=True``).
    Without `squared` the result is squared, as gstat 0.1 gave it, with a
    FutureWarning: the default becomes ``squared=False`` (scipy's, whose
    name this function has) in the next release.

    Parameters
    ----------
    x : array_like, shape (..., n, p) or (p,)
        Points in rows.
    center : array_like, shape (..., p), or None
        None: zero.
    cov : array_like, shape (..., p, p)
        Covariance (only its lower triangle is read), factored by Cholesky;
        with ``inverted=True`` it is already the inverse (precision).
    inverted : bool, optional
        `cov` is the precision matrix (scipy's ``VI``).
    squared : bool, optional
        True: squared distances (R, scikit-learn); False: distances (scipy).
        Not given: squared, with a FutureWarning (see above).
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    ndarray, shape (..., n) (a float for 1-D `x`), float64

    Raises
    ------
    gstat.LinAlgError
        `cov` is not positive definite.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> x = np.array([[1., 0.], [0., 2.]])
    >>> cov = np.array([[1., 0.], [0., 4.]])
    >>> gstat.mahalanobis(x, [0., 0.], cov, squared=True)    # R, scikit-learn
    array([1., 1.])
    >>> gstat.mahalanobis(x, [0., 0.], np.linalg.inv(cov), inverted=True,
    ...                   squared=False)                      # scipy's distance
    array([1., 1.])
    """
    dev = _cuda_device(x)
    if dev is None:
        _refuse_masked(x, "mahalanobis")
        x = np.asarray(x)
    if squared is None:
        warnings.warn("gstat.mahalanobis returns squared distances (R's convention) when squared= "
                      "is not given; the default becomes squared=False (scipy's distance) in the "
                      "next release. Pass squared=True or squared=False to silence this warning.",
                      FutureWarning, stacklevel=2)
        squared = True
    single = x.ndim == 1
    d2 = _mahalanobis_call(x[None, :] if single else x, center, cov, inverted, backend)
    d = d2 if squared else d2 ** 0.5  # ** also works on a CUDA tensor
    return float(d[0]) if single else d


def _mahalanobis_call(x, center, cov, inverted, backend):
    """_core.mahalanobis on numpy or a CUDA tensor (center and cov either: for
    host x they come to the host)."""
    dev = _cuda_device(x)
    if dev is None:
        return _core.mahalanobis(x, _host(center), _host(cov), inverted, backend, None, None)
    out = _empty_like(x, tuple(x.shape[:-1]), dev, "float64")
    return _core.mahalanobis(x, center, cov, inverted, backend, _stream(x, dev), out)


def _precision(c, backend):
    """Inverse of a covariance: Cholesky solves; pseudo-inverse for a singular one."""
    from . import linalg
    p = c.shape[0]
    try:
        return linalg.cholesky_solve(linalg.cholesky(c, backend=backend), np.eye(p), backend=backend)
    except (linalg_error(), ValueError):
        # Singular (e.g. one sample): scipy.linalg.pinvh's definition from gstat's eigh.
        w, v = linalg.eigh(c, backend=backend)
        keep = np.abs(w) > np.abs(w).max(initial=0.0) * p * np.finfo(np.float64).eps
        return (v[:, keep] / w[keep]) @ v[:, keep].T


def _validated(est, X, reset=True):
    """scikit-learn's validation for host data; a CUDA tensor is checked for
    shape only (it stays on its device)."""
    return validate_any(est, X, reset=reset, ensure_min_samples=1)


def _host64(a):
    """A fitted attribute as a float64 numpy array (from a CUDA tensor too)."""
    return np.asarray(_to_numpy(a) if _cuda_device(a) is not None else a, dtype=np.float64)


def linalg_error():
    return _core.LinAlgError


class EmpiricalCovariance(BaseEstimator):
    """Maximum-likelihood covariance (scikit-learn's EmpiricalCovariance).

    Parameters
    ----------
    store_precision : bool, default True
        Also compute `precision_`.
    assume_centered : bool, default False
        Only False is supported (the C library always centres).
    backend : {'auto', 'cpu', 'cuda'} or None

    Attributes
    ----------
    covariance_ : ndarray (p, p)
    location_ : ndarray (p,)
    precision_ : ndarray (p, p) or None
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.array([[0., 0.], [2., 0.], [0., 2.], [2., 2.]])
    >>> est = gstat.EmpiricalCovariance().fit(X)
    >>> est.covariance_
    array([[1., 0.],
           [0., 1.]])
    >>> est.mahalanobis(X)          # squared, as scikit-learn's
    array([2., 2., 2., 2.])
    """

    def __init__(self, *, store_precision=True, assume_centered=False, backend=None):
        self.store_precision = store_precision
        self.assume_centered = assume_centered
        self.backend = backend

    def _set_covariance(self, covariance):
        self.covariance_ = covariance
        self.precision_ = _precision(covariance, self.backend) if self.store_precision else None

    def fit(self, X, y=None):
        """Fit the covariance of `X` (n_samples, n_features; a CUDA tensor is
        reduced on its device). Returns self."""
        X = _validated(self, X)
        if X.shape[0] == 1:
            warnings.warn("Only one sample available. You may want to reshape your data array")
        c, m = _cov_call(X, 0, None, None, 0, False, None if _cuda_device(X) is not None
                         else np.float64, None, self.backend, True, bool(self.assume_centered))
        self.location_ = _host64(m)
        self._set_covariance(_host64(c))
        return self

    def get_precision(self):
        """The precision matrix (inverse covariance)."""
        check_is_fitted(self)
        if self.precision_ is not None:
            return self.precision_
        return _precision(self.covariance_, self.backend)

    def mahalanobis(self, X):
        """**Squared** Mahalanobis distances of the rows of `X` to `location_`
        (scikit-learn's ``EmpiricalCovariance.mahalanobis``; the distances are
        their square roots)."""
        check_is_fitted(self)
        X = _validated(self, X, reset=False)
        return _mahalanobis_call(X, self.location_, self.get_precision(), True, self.backend)


class _Shrunk(EmpiricalCovariance):
    _method = 0

    def __init__(self, *, store_precision=True, assume_centered=False, backend=None):
        super().__init__(store_precision=store_precision, assume_centered=assume_centered,
                         backend=backend)

    def fit(self, X, y=None):
        """Fit the shrunk covariance of `X` (n_samples, n_features). Returns self."""
        X = _validated(self, X)
        dev = _cuda_device(X)
        if dev is None:
            c, s, m = _core.cov_shrink(X, self._method, self.assume_centered, self.backend, None,
                                       None, None)
        else:
            p = X.shape[-1]
            c, s, m = _core.cov_shrink(X, self._method, self.assume_centered, self.backend,
                                       _stream(X, dev), _empty_like(X, (p, p), dev, "float64"),
                                       _empty_like(X, (p,), dev, "float64"))
        self.location_ = _host64(m)
        self.shrinkage_ = float(s[0])
        self._set_covariance(_host64(c))
        return self


class LedoitWolf(_Shrunk):
    """Ledoit-Wolf shrunk covariance (same shrinkage as scikit-learn's LedoitWolf).

    Parameters
    ----------
    store_precision : bool, default True
    assume_centered : bool, default False
    backend : {'auto', 'cpu', 'cuda'} or None

    Attributes
    ----------
    covariance_, location_, precision_, shrinkage_, n_features_in_

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.random.default_rng(0).standard_normal((50, 5))
    >>> lw = gstat.LedoitWolf().fit(X)
    >>> lw.covariance_.shape, 0.0 <= lw.shrinkage_ <= 1.0
    ((5, 5), True)
    """

    _method = 0


class OAS(_Shrunk):
    """Oracle Approximating Shrinkage covariance (scikit-learn >= 1.3's OAS).

    Parameters and attributes as :class:`LedoitWolf`.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.random.default_rng(0).standard_normal((50, 5))
    >>> oas = gstat.OAS().fit(X)
    >>> oas.covariance_.shape, 0.0 <= oas.shrinkage_ <= 1.0
    ((5, 5), True)
    """

    _method = 1
