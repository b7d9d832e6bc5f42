"""Principal component analysis (scikit-learn's PCA interface)."""
import math
import numbers

import numpy as np

from . import _core, _progress
from ._device import cuda_device as _cuda_device, empty_like as _empty_like, like as _like
from ._device import stream as _stream, to_numpy as _to_numpy
from ._graph_input import is_sparse as _issparse
from ._sk import (BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, check_array,
                  check_is_fitted, seed_from, validate, validate_any)

__all__ = ["PCA"]

# gstat_pca_method
_AUTO, _COV, _GRAM, _RANDOMIZED = 0, 1, 2, 3
_MAX_POWER_ITERATIONS = 1000  # GSTAT_PCA_MAX_POWER_ITERATIONS
_METHOD_NAMES = {_COV: "covariance_eigh", _GRAM: "gram_eigh", _RANDOMIZED: "randomized"}


class PCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Principal component analysis by gstat's batched eigh (scikit-learn's PCA API).

    Parameters
    ----------
    n_components : int, float in (0, 1), 'mle' or None
        Number of components; a float keeps the fewest components whose
        cumulative explained-variance ratio exceeds it; 'mle' chooses it by
        Minka's maximum-likelihood rule (as scikit-learn; needs n_samples >=
        n_features and an exact solver); None keeps min(n, p).
    copy : bool, default True
        Accepted for compatibility; the input is never modified.
    whiten : bool, default False
        Scale the scores to unit variance.
    svd_solver : {'auto', 'full', 'covariance_eigh', 'gram_eigh', 'randomized', 'arpack'}
        'full' and 'arpack' run an exact eigen decomposition (of the p x p
        covariance when n >= p, else of the n x n Gram matrix); 'randomized'
        Halko et al.'s range finder; 'auto' chooses by shape. A scipy.sparse
        `X` is never densified: its covariance comes from sparse products
        (``X^T X - n mu mu^T``) and is decomposed ('auto', 'arpack' and
        'covariance_eigh'; the others raise TypeError as scikit-learn).
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
    progress : bool, callable or None
        A tqdm bar while fitting: None (default) shows one when the fit is
        long and stderr is a terminal or a notebook runs it; True/False
        force it; a callable is called as ``progress(done, total, what)``.

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

    Examples
    --------
    >>> import numpy as np, gstat
    >>> X = np.array([[-1., -1.], [-2., -1.], [-3., -2.], [1., 1.], [2., 1.], [3., 2.]])
    >>> pca = gstat.PCA(n_components=2).fit(X)
    >>> np.round(pca.explained_variance_ratio_, 4)
    array([0.9924, 0.0076])
    >>> np.round(pca.singular_values_, 4)
    array([6.3006, 0.5498])
    >>> pca.transform(X).shape
    (6, 2)
    >>> round(pca.score(X), 4)      # mean log-likelihood (probabilistic PCA)
    -2.3042
    """

    def __init__(self, n_components=None, *, copy=True, whiten=False, svd_solver="auto",
                 iterated_power="auto", n_oversamples=10, random_state=None, backend=None,
                 progress=None):
        self.n_components = n_components
        self.copy = copy
        self.whiten = whiten
        self.svd_solver = svd_solver
        self.iterated_power = iterated_power
        self.n_oversamples = n_oversamples
        self.random_state = random_state
        self.backend = backend
        self.progress = progress

    def _options(self, n, p):
        k, frac = self.n_components, 0.0
        if isinstance(k, str) and k == "mle":
            if self.svd_solver in ("arpack", "randomized"):
                raise ValueError(f"n_components='mle' cannot be a string with "
                                 f"svd_solver={self.svd_solver!r}")
            if n < p:
                raise ValueError("n_components='mle' is only supported if n_samples >= n_features")
            k = None
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
            raise ValueError(f"n_components must be None, 'mle', an int >= 1 or a float in (0, 1), "
                             f"got {self.n_components!r}")
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
        if _issparse(X):
            return self._fit_sparse(X, scores)
        mle = isinstance(self.n_components, str) and self.n_components == "mle"
        dev = _cuda_device(X)
        if dev is not None:  # fit on the GPU; attributes come back as numpy
            validate_any(self, X)
            n, p = int(X.shape[0]), int(X.shape[1])
            dtype = np.float64 if "64" in str(X.dtype) else np.float32
            stream = _stream(X, dev)
        else:
            X = validate(self, X, ensure_min_samples=1, c_checks_finite=True)
            n, p = X.shape
            dtype = X.dtype
            stream = None
        k, frac, method, power, over = self._options(n, p)
        work = float(n) * p * min(n, p) + float(min(n, p)) ** 3
        with _progress.scope(self.progress, "PCA", work):
            r = _core.pca_fit(X, k, frac, self.whiten, method, over, power,
                              seed_from(self.random_state), scores and not mle and dev is None,
                              self.backend, stream)
        self._set_fitted(r, dtype)
        if mle:
            self._keep(_mle_components(self.explained_variance_, n))
        if scores and (mle or dev is not None):  # device scores: projected on the device
            return self.transform(X)
        return r["scores"][0].astype(dtype, copy=False) if scores else None

    def _fit_sparse(self, X, scores):
        """PCA of a scipy.sparse X through its covariance: the co-moment
        X^T X - n mu mu^T from sparse products (X stays sparse), handed to the
        C library as an accumulator state, decomposed there as a dense fit's."""
        from ._accumulator import CovarianceAccumulator
        if self.svd_solver not in ("auto", "arpack", "covariance_eigh"):
            raise TypeError(f'PCA only supports sparse inputs with the "auto", "arpack" and '
                            f'"covariance_eigh" solvers, while {self.svd_solver!r} was passed')
        X = validate(self, X, accept_sparse=["csr", "csc"], ensure_min_samples=1)
        n, p = X.shape
        mle = isinstance(self.n_components, str) and self.n_components == "mle"
        k, frac, _, _, _ = self._options(n, p)
        mu = np.asarray(X.mean(axis=0), dtype=np.float64).ravel()
        X64 = X.astype(np.float64)
        comoment = np.asarray((X64.T @ X64).todense()) - n * np.outer(mu, mu)
        state = np.concatenate((_accum_header(p, n), np.zeros(p), mu,
                                comoment[np.triu_indices(p)]))
        acc = CovarianceAccumulator.from_state(p, "everything", state)
        with _progress.scope(self.progress, "PCA", float(p) ** 3):
            r = _core.accum_pca(*acc._args(), k, frac, self.whiten, self.backend)
        self._set_fitted(r, X.dtype)
        if mle:
            self._keep(_mle_components(self.explained_variance_, n))
        return self.transform(X) if scores else None

    def _keep(self, k):
        """Keep the first k of all components; the rest make the noise variance."""
        ev = self.explained_variance_
        self.noise_variance_ = float(ev[k:].mean()) if k < len(ev) else 0.0
        self.components_ = self.components_[:k]
        self.explained_variance_ = ev[:k]
        self.explained_variance_ratio_ = self.explained_variance_ratio_[:k]
        self.singular_values_ = self.singular_values_[:k]
        self.n_components_ = int(k)

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
            _device_shape(self, X, self.n_features_in_)
            out = _empty_like(X, (int(X.shape[0]), self.n_components_), dev)
            return _core.pca_transform(False, X, self.components_, self.mean_,
                                       self.explained_variance_, self.whiten, None, self.backend,
                                       out, _stream(X, dev))
        if _issparse(X):
            X = validate(self, X, reset=False, accept_sparse=["csr", "csc"])
            Y = np.asarray(X @ self.components_.T) - self.mean_ @ self.components_.T
            if self.whiten:
                Y /= np.sqrt(self.explained_variance_)
            return Y.astype(self.components_.dtype, copy=False)
        X = validate(self, X, reset=False, c_checks_finite=True)
        return _core.pca_transform(False, X, self.components_, self.mean_,
                                   self.explained_variance_, self.whiten, None, self.backend, None,
                                   None)

    def _model(self):
        """(components scaled as the model's, variance beyond the noise), float64."""
        comp = np.asarray(self.components_, dtype=np.float64)
        ev = np.asarray(self.explained_variance_, dtype=np.float64)
        if self.whiten:
            comp = comp * np.sqrt(ev)[:, None]
        return comp, np.maximum(ev - self.noise_variance_, 0.0)

    def get_covariance(self):
        """Covariance of the generative model (probabilistic PCA, Tipping & Bishop):
        ``components_.T diag(explained_variance_ - noise_variance_) components_
        + noise_variance_ I``, as scikit-learn's.

        Returns
        -------
        ndarray (n_features_in_, n_features_in_)
        """
        check_is_fitted(self)
        comp, excess = self._model()
        cov = (comp.T * excess) @ comp
        cov.flat[::cov.shape[0] + 1] += self.noise_variance_
        return cov

    def get_precision(self):
        """Inverse of :meth:`get_covariance` by the matrix inversion lemma
        (a k x k inverse; the p x p one only when the noise variance is 0).

        Returns
        -------
        ndarray (n_features_in_, n_features_in_)
        """
        check_is_fitted(self)
        p = self.components_.shape[1]
        noise = self.noise_variance_
        if self.n_components_ == 0:
            return np.eye(p) / noise
        if noise == 0.0:
            return np.linalg.inv(self.get_covariance())
        comp, excess = self._model()
        inner = comp @ comp.T / noise
        inner.flat[::inner.shape[0] + 1] += 1.0 / excess
        prec = comp.T @ np.linalg.inv(inner) @ comp
        prec /= -(noise * noise)
        prec.flat[::p + 1] += 1.0 / noise
        return prec

    def score_samples(self, X):
        """Log-likelihood of each row of `X` under the probabilistic PCA model.

        Returns
        -------
        ndarray (n_samples,)
        """
        check_is_fitted(self)
        dev = _cuda_device(X)
        if dev is not None:  # the model is on the host: so is this small computation
            _device_shape(self, X, self.n_features_in_)
            return _like(X, self.score_samples(_to_numpy(X)), dev)
        X = validate(self, X, reset=False)
        Xr = X - self.mean_
        prec = self.get_precision()
        sign, logdet = np.linalg.slogdet(prec)
        if sign <= 0:
            logdet = -np.inf
        ll = -0.5 * np.einsum("ij,ij->i", Xr, Xr @ prec)
        return ll - 0.5 * (X.shape[1] * math.log(2.0 * math.pi) - logdet)

    def score(self, X, y=None):
        """Mean log-likelihood of the rows of `X` (:meth:`score_samples`)."""
        s = self.score_samples(X)
        return float(np.mean(_to_numpy(s) if _cuda_device(s) is not None else s))

    def inverse_transform(self, X):
        """Map scores (n_samples, n_components_) back to the feature space.

        A CUDA tensor (torch, CuPy) is mapped on its GPU and answered with a
        tensor of the same kind on the same device.
        """
        check_is_fitted(self)
        dev = _cuda_device(X)
        if dev is not None:  # a tensor of X's kind on its device
            _device_shape(self, X, self.n_components_)
            out = _empty_like(X, (int(X.shape[0]), self.n_features_in_), dev)
            return _core.pca_transform(True, X, self.components_, self.mean_,
                                       self.explained_variance_, self.whiten, None, self.backend,
                                       out, _stream(X, dev))
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
        tags.input_tags.sparse = self.svd_solver in ("auto", "arpack", "covariance_eigh")
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32]}


def _device_shape(est, X, width):
    """A CUDA tensor given to a fitted model: 2-D with `width` columns."""
    shape = tuple(int(s) for s in X.shape)
    if len(shape) != 2:
        raise ValueError(f"Expected a 2-D tensor, got shape {shape}")
    if shape[1] != width:  # scikit-learn's words, as for host data
        raise ValueError(f"X has {shape[1]} features, but {type(est).__name__} is expecting "
                         f"{width} features as input")


def _accum_header(p, n):
    """The accumulator state's header for n unweighted complete rows about a
    zero shift (src/pca/accum.c, gstat_cov_accum_export)."""
    from ._accumulator import CovarianceAccumulator
    head = CovarianceAccumulator(p).add(np.zeros((1, p))).state[:8].copy()
    head[4:8] = (n, 0, n, 1)  # rows, skipped, weight, anchored (holds data; shift 0)
    return head


def _mle_log_evidence(spectrum, rank, n):
    """Minka (2000), "Automatic choice of dimensionality for PCA": the log
    evidence of keeping `rank` of the eigenvalues `spectrum` (descending) of
    the covariance of n samples, under a uniform prior, in Laplace's
    approximation."""
    p = len(spectrum)
    eps = 1e-15
    if spectrum[rank - 1] < eps:
        return -np.inf
    # p(U): the prior over the rank-dimensional subspaces (Stiefel volume)
    i = np.arange(1, rank + 1)
    pu = -rank * math.log(2.0) + float(np.sum(
        [math.lgamma((p - j + 1) / 2.0) - math.log(math.pi) * (p - j + 1) / 2.0 for j in i]))
    pl = -float(np.sum(np.log(spectrum[:rank]))) * n / 2.0
    v = max(eps, float(np.sum(spectrum[rank:])) / (p - rank))
    pv = -math.log(v) * n * (p - rank) / 2.0
    m = p * rank - rank * (rank + 1) / 2.0
    pp = math.log(2.0 * math.pi) * (m + rank) / 2.0
    # log det of the Hessian: the pairs (i < rank, j > i) of the spectrum
    # with the discarded eigenvalues replaced by their mean v
    lam = np.asarray(spectrum, dtype=np.float64)
    capped = lam.copy()
    capped[rank:] = v
    pa = 0.0
    for a in range(rank):
        b = np.arange(a + 1, p)
        pa += float(np.sum(np.log((lam[a] - lam[b]) * (1.0 / capped[b] - 1.0 / capped[a])
                                  ))) + len(b) * math.log(n)
    return pu + pl + pv + pp - pa / 2.0 - rank * math.log(n) / 2.0


def _mle_components(spectrum, n):
    """The rank in [1, p - 1] of largest evidence (Minka's MLE)."""
    spectrum = np.asarray(spectrum, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = [_mle_log_evidence(spectrum, r, n) for r in range(1, len(spectrum))]
    return int(np.argmax(ll)) + 1 if ll else 0
