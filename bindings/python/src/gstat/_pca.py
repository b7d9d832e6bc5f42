"""Principal component analysis (scikit-learn's PCA interface)."""
import numbers

import numpy as np

from . import _core
from ._device import cuda_device as _cuda_device, empty_like as _empty_like, stream as _stream
from ._sk import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, check_array,
                  check_is_fitted, seed_from, validate)

__all__ = ["PCA"]

# gstat_pca_method
_AUTO, _COV, _GRAM, _RANDOMIZED = 0, 1, 2, 3
_MAX_POWER_ITERATIONS = 1000  # GSTAT_PCA_MAX_POWER_ITERATIONS
_METHOD_NAMES = {_COV: "covariance_eigh", _GRAM: "gram_eigh", _RANDOMIZED: "randomized"}


class PCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Principal component analysis by gstat's batched eigh (scikit-learn's PCA API).

    Parameters
    ----------
    n_components : int, float in (0, 1), or None
        Number of components; a float keeps the fewest components whose
        cumulative explained-variance ratio exceeds it; None keeps min(n, p).
    copy : bool, default True
        Accepted for compatibility; the input is never modified.
    whiten : bool, default False
        Scale the scores to unit variance.
    svd_solver : {'auto', 'full', 'covariance_eigh', 'gram_eigh', 'randomized', 'arpack'}
        'full' and 'arpack' run an exact eigen decomposition (of the p x p
        covariance when n >= p, else of the n x n Gram matrix); 'randomized'
        Halko et al.'s range finder; 'auto' chooses by shape.
    iterated_power : int in [0, 1000] or 'auto'
        Power iterations of the randomized solver ('auto': 7 when
        n_components < 0.1 min(n, p), else 4). Each iteration checks for
        Ctrl-C and reports progress.
    n_oversamples : int, default 10
        Extra random vectors of the randomized solver; more than
        min(n, p) - n_components change nothing.
    random_state : int, RandomState or None
        Seed of the randomized solver.
    backend : {'auto', 'cpu', 'cuda'} or None

    Attributes
    ----------
    components_ : ndarray (n_components_, n_features_in_)
        Unit principal axes; the entry of largest magnitude of each is positive.
    explained_variance_, explained_variance_ratio_, singular_values_ : ndarray (n_components_,)
    mean_ : ndarray (n_features_in_,)
    noise_variance_ : float
    n_components_, n_samples_, n_features_in_ : int
    backend_ : str
        The backend(s) that ran the fit ("cpu", "cuda", "cuda+cpu").
    """

    def __init__(self, n_components=None, *, copy=True, whiten=False, svd_solver="auto",
                 iterated_power="auto", n_oversamples=10, random_state=None, backend=None):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.random_state = random_state
        self.backend = backend

    def _options(self, n, p):
        k, frac = self.n_components, 0.0
        if k is None:
            k = 0
        elif isinstance(k, numbers.Integral) and not isinstance(k, bool):
            k = int(k)
            if not 1 <= k <= min(n, p):
                raise ValueError(f"n_components={k} must be between 1 and min(n_samples, "
                                 f"n_features)={min(n, p)}")
        elif isinstance(k, numbers.Real) and 0.0 < k < 1.0:
            k, frac = 0, float(k)
        else:
            raise ValueError(f"n_components must be None, an int >= 1 or a float in (0, 1), got "
                             f"{self.n_components!r}")
        solver = self.svd_solver
        if solver == "auto":
            method = _AUTO
        elif solver in ("full", "arpack"):
            method = _COV if n >= p else _GRAM
        elif solver == "covariance_eigh":
            method = _COV
        elif solver == "gram_eigh":
            method = _GRAM
        elif solver == "randomized":
            method = _RANDOMIZED
        else:
            raise ValueError(f"svd_solver must be 'auto', 'full', 'covariance_eigh', 'gram_eigh', "
                             f"'randomized' or 'arpack', got {solver!r}")
        power = self.iterated_power
        if isinstance(power, str) and power == "auto":
            power = -1
        elif not (isinstance(power, numbers.Integral) and not isinstance(power, bool)
                  and 0 <= power <= _MAX_POWER_ITERATIONS):
            raise ValueError(f"iterated_power must be 'auto' or an int in [0, "
                             f"{_MAX_POWER_ITERATIONS}], got {power!r}")
        over = self.n_oversamples
        if not (isinstance(over, numbers.Integral) and not isinstance(over, bool) and over >= 0):
            raise ValueError(f"n_oversamples must be an int >= 0, got {over!r}")
        # beyond min(n, p) extra vectors change nothing; the C int64 cannot hold more
        return k, frac, method, int(power), min(int(over), min(n, p))

    def _fit(self, X, scores):
        dev = _cuda_device(X)
        if dev is not None:  # fit on the GPU; attributes come back as numpy
            n, p = int(X.shape[0]), int(X.shape[1])
            self.n_features_in_ = p
            dtype = np.float64 if "64" in str(X.dtype) else np.float32
            stream = _stream(X, dev)
        else:
            X = validate(self, X, ensure_min_samples=1, c_checks_finite=True)
            n, p = X.shape
            dtype = X.dtype
            stream = None
        k, frac, method, power, over = self._options(n, p)
        r = _core.pca_fit(X, k, frac, self.whiten, method, over, power,
                          seed_from(self.random_state), scores, self.backend, stream)
        self._set_fitted(r, dtype)
        return r["scores"][0].astype(dtype, copy=False) if scores else None

    def _set_fitted(self, r, dtype):
        """Fitted attributes from the C library's result dict (batch 1)."""
        self.backend_ = _core.last_backend()
        self.n_features_in_ = int(r["n_features"])
        self.components_ = r["components"][0].astype(dtype, copy=False)
        self.explained_variance_ = r["explained_variance"][0].astype(dtype, copy=False)
        if int(r["n_samples"]) == 1:  # divisor n - 1 = 0: scikit-learn's 0 / 0
            self.explained_variance_ = np.full_like(self.explained_variance_, np.nan)
        self.explained_variance_ratio_ = r["explained_variance_ratio"][0].astype(dtype, copy=False)
        self.singular_values_ = r["singular_values"][0].astype(dtype, copy=False)
        self.mean_ = r["mean"][0].astype(dtype, copy=False)
        self.noise_variance_ = float(r["noise_variance"][0])
        self.n_components_ = int(r["n_components"])
        self.n_samples_ = int(r["n_samples"])
        self.method_ = _METHOD_NAMES.get(r["method"], "auto")
        return self

    def fit(self, X, y=None):
        """Fit the model with `X` (n_samples, n_features). Returns self."""
        self._fit(X, False)
        return self

    def fit_transform(self, X, y=None):
        """Fit the model with `X` and return its scores (n_samples, n_components_)."""
        return self._fit(X, True)

    def transform(self, X):
        """Project `X` on the principal axes (whitened when `whiten`).

        A CUDA tensor (torch, CuPy) is projected on its GPU and answered with
        a tensor of the same kind on the same device.
        """
        check_is_fitted(self)
        dev = _cuda_device(X)
        if dev is not None:
            if len(X.shape) != 2 or int(X.shape[1]) != self.n_features_in_:
                raise ValueError(f"X has shape {tuple(X.shape)}, but {type(self).__name__} is "
                                 f"expecting {self.n_features_in_} features as input")
            out = _empty_like(X, (int(X.shape[0]), self.n_components_), dev)
            return _core.pca_transform(False, X, self.components_, self.mean_,
                                       self.explained_variance_, self.whiten, None, self.backend,
                                       out, _stream(X, dev))
        X = validate(self, X, reset=False, c_checks_finite=True)
        return _core.pca_transform(False, X, self.components_, self.mean_,
                                   self.explained_variance_, self.whiten, None, self.backend, None,
                                   None)

    def inverse_transform(self, X):
        """Map scores (n_samples, n_components_) back to the feature space."""
        check_is_fitted(self)
        X = check_array(X, dtype=[np.float64, np.float32])
        return _core.pca_transform(True, X, self.components_, self.mean_,
                                   self.explained_variance_, self.whiten, None, self.backend, None,
                                   None)

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32]}
