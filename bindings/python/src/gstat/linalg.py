"""Batched linear algebra: eigh, eigvalsh, cholesky, cholesky_solve, solve_triangular.

Every function takes a numpy array (float32, float64, or ml_dtypes.bfloat16;
other real types are converted to float64 as numpy.linalg does) of shape
(..., n, n) in any memory order, or a CUDA tensor with ``__dlpack__`` (torch,
CuPy) that is processed on the GPU in place and answered with tensors of the
same kind on the same device.
"""
import functools as _functools
import inspect as _inspect
import math as _math

import numpy as _np

from . import _core, _progress
from ._device import cuda_device as _cuda_device, empty_like as _empty_like, stream as _stream
from ._device import like as _like, refuse_masked as _refuse_masked

__all__ = ["eigh", "eigvalsh", "cholesky", "cholesky_solve", "solve_triangular", "EighResult"]

EighResult = _core.EighResult
_ndarray = _np.ndarray

_PROGRESS_DOC = """
    progress : bool, callable or None, optional
        A tqdm bar over the batch: None (default) shows one when the call is
        long (about a second of work or more) and stderr is a terminal or a
        notebook runs it; True/False force it; a callable is called as
        ``progress(done, total, what)``. Ctrl-C cancels between chunks."""


def _with_progress(desc, flops_per_n3):
    """Add progress= to a batch function of a (..., n, n) first argument."""
    def wrap(fn):
        @_functools.wraps(fn)
        def call(a, *args, progress=None, **kw):
            shape = getattr(a, "shape", ())
            work = 0.0
            if len(shape) >= 2:
                work = float(_math.prod(int(s) for s in shape[:-2])) * float(shape[-1]) ** 3
            work *= flops_per_n3
            if progress is None and work < _progress.LONG_WORK:  # the common, short call
                return fn(a, *args, **kw)
            with _progress.scope(progress, desc, work, "matrix"):
                return fn(a, *args, **kw)
        sig = _inspect.signature(fn)  # help() and IDEs show progress= too
        call.__signature__ = sig.replace(parameters=[*sig.parameters.values(), _inspect.Parameter(
            "progress", _inspect.Parameter.KEYWORD_ONLY, default=None)])
        call.__doc__ = (fn.__doc__ or "").replace("\n\n    Returns", _PROGRESS_DOC +
                                                  "\n\n    Returns", 1)
        return call
    return wrap


@_with_progress("eigh", 4.0)
def eigh(a, UPLO="L", *, out=None, backend=None):
    """Eigenvalues and eigenvectors of a batch of symmetric matrices.

    Parameters
    ----------
    a : array_like or CUDA tensor, shape (..., n, n)
        Symmetric matrices; only the triangle named by `UPLO` is read.
    UPLO : {'L', 'U'}, optional
        Which triangle to read (default lower, as numpy).
    out : tuple of two ndarrays, optional
        ``(w, v)`` of shapes (..., n) and (..., n, n) to write into (float32,
        float64 or bfloat16, any strides the library can express). ``out=(a, ...)``
        style in-place use is allowed when the view is the same.
    backend : {'auto', 'cpu', 'cuda'}, optional
        Backend choice for this call (default: :func:`gstat.get_backend`).

    Returns
    -------
    EighResult
        ``(eigenvalues, eigenvectors)``: eigenvalues ascending; column ``j``
        of ``eigenvectors`` is the unit eigenvector of ``eigenvalues[..., j]``,
        signed so that its entry of largest magnitude is positive.

    Raises
    ------
    gstat.LinAlgError
        An element did not converge.
    ValueError
        Bad shapes, strides, NaN/Inf input.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> a = np.array([[[2., 1.], [1., 2.]], [[1., 0.], [0., 3.]]])   # a batch of 2
    >>> w, v = gstat.linalg.eigh(a)
    >>> w
    array([[1., 3.],
           [1., 3.]])
    >>> np.allclose(a @ v, v * w[:, None, :])
    True
    """
    if out is None and type(a) is _ndarray:
        return _core.eigh(a, UPLO, True, None, None, backend, None)
    dev = _cuda_device(a)
    if dev is not None:
        w, v = out if out is not None else (_empty_like(a, a.shape[:-1], dev), _empty_like(a, a.shape, dev))
        return EighResult(_core.eigh(a, UPLO, True, w, v, backend, _stream(a, dev)))
    w, v = (None, None) if out is None else out
    return _core.eigh(a, UPLO, True, w, v, backend, None)


@_with_progress("eigvalsh", 1.5)
def eigvalsh(a, UPLO="L", *, out=None, backend=None):
    """Eigenvalues of a batch of symmetric matrices, ascending.

    Parameters
    ----------
    a : array_like or CUDA tensor, shape (..., n, n)
    UPLO : {'L', 'U'}, optional
    out : ndarray, shape (..., n), optional
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    w : ndarray or tensor, shape (..., n)

    Examples
    --------
    >>> import numpy as np, gstat
    >>> gstat.linalg.eigvalsh(np.array([[2., 1.], [1., 2.]]))
    array([1., 3.])
    """
    if out is None and type(a) is _ndarray:
        return _core.eigh(a, UPLO, False, None, None, backend, None)
    dev = _cuda_device(a)
    if dev is not None:
        w = out if out is not None else _empty_like(a, a.shape[:-1], dev)
        return _core.eigh(a, UPLO, False, w, None, backend, _stream(a, dev))
    return _core.eigh(a, UPLO, False, out, None, backend, None)


@_with_progress("cholesky", 1.0 / 3.0)
def cholesky(a, upper=False, *, out=None, backend=None):
    """Cholesky factor of a batch of symmetric positive definite matrices.

    Parameters
    ----------
    a : array_like or CUDA tensor, shape (..., n, n)
        Only the triangle of the requested factor is read.
    upper : bool, optional
        False (default): lower L with ``a = L @ L.T`` (numpy); True: upper U
        with ``a = U.T @ U``. The other strict triangle is set to zero.
    out : ndarray, shape (..., n, n), optional
        May be `a` itself (in place).
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    ndarray or tensor, shape (..., n, n)

    Raises
    ------
    gstat.LinAlgError
        An element is not positive definite (the message names the first one
        and the order of its failing leading minor).

    Examples
    --------
    >>> import numpy as np, gstat
    >>> gstat.linalg.cholesky(np.array([[4., 2.], [2., 5.]]))
    array([[2., 0.],
           [1., 2.]])
    """
    if out is None and type(a) is _ndarray:
        return _core.cholesky(a, upper, None, backend, None)
    dev = _cuda_device(a)
    if dev is not None:
        return _core.cholesky(a, upper, out if out is not None else _empty_like(a, a.shape, dev),
                              backend, _stream(a, dev))
    return _core.cholesky(a, upper, out, backend, None)


def _solve(kind, t, b, upper, trans, unit, out, backend):
    dev, bdev = _cuda_device(t), _cuda_device(b)
    if dev is None and bdev is not None:  # the factor comes to b's device
        t, dev = _like(b, _np.asarray(t), bdev), bdev
    elif dev is not None and bdev is None:  # b goes to the factor's device
        _refuse_masked(b, "b")
        b = _like(t, _np.asarray(b), dev)
    vector = getattr(b, "ndim", None) == 1 or (dev is None and _np.ndim(b) == 1)
    if vector:  # a single right-hand side vector, as numpy.linalg.solve
        if dev is None:
            _refuse_masked(b, "b")
        b = b[:, None] if dev is not None else _np.asarray(b)[:, None]
        if out is not None:
            out = out[:, None]
    if dev is not None:
        if out is None:
            out = _empty_like(b, b.shape, dev)
        x = _core.solve(kind, t, b, upper, trans, unit, out, backend, _stream(t, dev))
    else:
        x = _core.solve(kind, t, b, upper, trans, unit, out, backend, None)
    return x[:, 0] if vector else x


def cholesky_solve(l, b, *, upper=False, out=None, backend=None):
    """Solve ``A x = b`` given the Cholesky factor of A.

    Parameters
    ----------
    l : array_like or CUDA tensor, shape (..., n, n)
        Factor from :func:`cholesky` (lower unless `upper`).
    b : array_like, shape (..., n, k) or (n,)
        Right-hand sides; a 1-D `b` is one vector.
    upper : bool, optional
        Whether `l` holds the upper factor U (``A = U.T U``).
    out : ndarray, optional
        Same shape as `b`; may be `b` itself.
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    x : ndarray or tensor, same shape as `b`

    Raises
    ------
    gstat.LinAlgError
        A factor has a zero on its diagonal.

    Examples
    --------
    >>> import numpy as np, gstat
    >>> a = np.array([[4., 2.], [2., 5.]])
    >>> x = gstat.linalg.cholesky_solve(gstat.linalg.cholesky(a), np.array([[2.], [3.]]))
    >>> np.allclose(a @ x, [[2.], [3.]])
    True
    """
    return _solve(False, l, b, upper, False, False, out, backend)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, *, out=None, backend=None):
    """Solve ``op(a) x = b`` for a batch of triangular matrices (scipy's signature).

    Parameters
    ----------
    a : array_like or CUDA tensor, shape (..., n, n)
        Only the triangle named by `lower` is read.
    b : array_like, shape (..., n, k) or (n,)
    trans : {0, 1, 2, 'N', 'T', 'C'}, optional
        ``op(a)`` is a (0, 'N') or its transpose (1, 'T', and for real data 2, 'C').
    lower : bool, optional
        Use the lower triangle (default False: upper, as scipy).
    unit_diagonal : bool, optional
        Assume ones on the diagonal (it is not read).
    out : ndarray, optional
    backend : {'auto', 'cpu', 'cuda'}, optional

    Returns
    -------
    x : ndarray or tensor, same shape as `b`

    Examples
    --------
    >>> import numpy as np, gstat
    >>> l = np.array([[2., 0.], [1., 2.]])
    >>> gstat.linalg.solve_triangular(l, np.array([[2.], [5.]]), lower=True)
    array([[1.],
           [2.]])
    """
    if trans in (0, "N", "n"):
        t = False
    elif trans in (1, 2, "T", "t", "C", "c"):
        t = True
    else:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    return _solve(True, a, b, not lower, t, unit_diagonal, out, backend)
