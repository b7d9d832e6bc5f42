"""scikit-learn compatibility: its base classes and input validation when it
is installed, a small stand-in (get_params/set_params, 2-D float input)
when it is not."""
import inspect

import numpy as np

try:
    from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
    from sklearn.utils import check_random_state
    from sklearn.utils.validation import check_array, check_is_fitted

    try:
        from sklearn.base import ClassNamePrefixFeaturesOutMixin
    except ImportError:  # scikit-learn < 1.2
        class ClassNamePrefixFeaturesOutMixin:
            pass
    try:
        from sklearn.utils.validation import validate_data as _validate_data
    except ImportError:  # scikit-learn < 1.6
        def _validate_data(est, X="no_validation", y="no_validation", reset=True, **kw):
            return est._validate_data(X, reset=reset, **kw)

    try:
        from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
    except ImportError:  # scikit-learn < 1.2: no declarative validation
        Interval = StrOptions = None
        InvalidParameterError = ValueError

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False
    Interval = StrOptions = None
    InvalidParameterError = ValueError

    class BaseEstimator:
        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p for p in sig.parameters if p != "self")

        def get_params(self, deep=True):
            return {k: getattr(self, k) for k in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for k, v in params.items():
                if k not in valid:
                    raise ValueError(f"Invalid parameter {k!r} for estimator {self!r}")
                setattr(self, k, v)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:
        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)

    class ClusterMixin:
        def fit_predict(self, X, y=None, **kw):
            self.fit(X, **kw)
            return self.labels_

    class ClassNamePrefixFeaturesOutMixin:
        pass

    def check_random_state(seed):
        if seed is None or isinstance(seed, (int, np.integer)):
            return np.random.RandomState(seed)
        return seed

    def check_array(X, dtype=None, **kw):
        X = np.asarray(X, dtype=None if isinstance(dtype, (list, tuple)) else dtype)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if X.ndim != 2:
            raise ValueError(f"Expected 2D array, got {X.ndim}D array instead")
        return X

    def check_is_fitted(est, attributes=None):
        if not any(k.endswith("_") and not k.startswith("__") for k in vars(est)):
            raise AttributeError(f"This {type(est).__name__} instance is not fitted yet.")

    def _validate_data(est, X, reset=True, **kw):
        X = check_array(X, **kw)
        if reset:
            est.n_features_in_ = X.shape[1]
        elif X.shape[1] != est.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                f"{est.n_features_in_} features as input")
        return X


def _finite_keyword():
    if not HAVE_SKLEARN:
        return None
    params = inspect.signature(check_array).parameters
    return next((k for k in ("ensure_all_finite", "force_all_finite") if k in params), None)


_FINITE_KW = _finite_keyword()


def validate(est, X, reset=True, c_checks_finite=False, **kw):
    """Validated 2-D float32/float64 input (scikit-learn's rules when installed).

    c_checks_finite: the C call that follows refuses NaN/Inf itself (with a
    ValueError naming the entry), so scikit-learn's extra pass over the data
    is skipped.
    """
    from ._device import refuse
    refuse(X, type(est).__name__)
    kw.setdefault("dtype", [np.float64, np.float32])
    if c_checks_finite and _FINITE_KW:
        kw[_FINITE_KW] = False
    return _validate_data(est, X, reset=reset, **kw)


def validate_any(est, X, reset=True, **kw):
    """validate() for host data; a CUDA tensor, which stays on its device, is
    checked for its shape only (2-D, at least one row, the fitted width)."""
    from ._device import cuda_device
    if cuda_device(X) is None:
        return validate(est, X, reset=reset, **kw)
    shape = tuple(int(s) for s in X.shape)
    if len(shape) != 2 or shape[0] < 1:
        raise ValueError(f"Expected a 2-D tensor with at least one row, got shape {shape}")
    if reset:
        est.n_features_in_ = shape[1]
    elif shape[1] != est.n_features_in_:
        raise ValueError(f"X has {shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    return X


def constraints(make):
    """An estimator's `_parameter_constraints` (scikit-learn's declarative
    rules) from make(Interval, StrOptions); {} where scikit-learn cannot
    check them (the estimator's own checks still raise ValueError)."""
    return make(Interval, StrOptions) if Interval is not None else {}


def validate_params(est):
    """Refuse invalid hyper-parameters with scikit-learn's InvalidParameterError
    (a ValueError) as its estimators do at fit."""
    check = getattr(est, "_validate_params", None)
    if check is not None and getattr(est, "_parameter_constraints", None):
        check()


def seed_from(random_state):
    """A uint64 seed for the C library from scikit-learn's random_state."""
    if isinstance(random_state, (int, np.integer)):
        return int(random_state) & 0xFFFFFFFFFFFFFFFF
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
