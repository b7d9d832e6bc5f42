"""gstat's eigh, Cholesky, solves and PCA projection as JAX operations (``import gstat.jax``).

The functions take JAX arrays (float32, float64 or bfloat16) of shape
(..., n, n), run gstat's batched C routines through JAX's FFI (on the CPU, or
on an NVIDIA GPU on the stream XLA gives the call) and work under
``jax.jit``, ``jax.vmap`` (gstat is batched: a vmapped call is one gstat call
over the larger batch) and ``jax.grad`` / ``jax.jvp`` (``jax.custom_jvp``
rules, the solves through ``jax.lax.custom_linear_solve`` so that their
transposes are gstat solves too). :func:`pca_project` is gstat's centred
projection of data on fitted PCA parameters (on a GPU the parameters, small,
are read back to the host, which gstat's projection takes them from).

Conventions follow ``jax.numpy.linalg`` / ``jax.scipy.linalg``:

- an element that fails numerically (a matrix not positive definite, a
  singular triangle, an eigensolver that did not converge) gives NaN outputs
  for that element, the others are computed;
- NaN or Inf in the read input raises (gstat's check, at run time; under
  ``jit`` the error comes when the result is used);
- ``eigh`` and ``cholesky`` symmetrize the input by default, as JAX does;
  with ``symmetrize_input=False`` only the named triangle is read and
  gradients are those of the matrix that triangle describes.

Eigenvector derivatives divide by eigenvalue gaps ``d = w_j - w_i``. gstat
replaces ``1 / d`` by ``d / (d**2 + eta**2)`` with ``eta = n * eps * max|w|``
per matrix (eps of the dtype): gaps below that eigenvalue accuracy carry no
information, and degenerate eigenvalues then give finite terms (zero at
``d = 0``) where ``jax.numpy.linalg.eigh`` gives inf/NaN. Gaps well above
eta are unchanged to rounding. Losses of the eigenvalues stay exact at
degenerate points; a function of the vectors that is smooth there, such as
``V f(W) V^T``, loses the pair terms whose limit is ``f'(w)`` (first-order
eigenvector derivatives cannot express it), so its gradient is finite but
not exact at exactly repeated eigenvalues.

This module needs JAX and the FFI library ``libgstat_jax_ffi.so`` that the
package build makes when it finds JAX's FFI headers (``jax.ffi.include_dir()``).
``import gstat`` never imports JAX.
"""
import ctypes as _ctypes
import functools as _functools
import os as _os
from typing import NamedTuple as _NamedTuple

try:
    import jax as _jax
    import jax.ffi as _ffi
    import jax.numpy as _jnp
except ImportError as _e:  # pragma: no cover - depends on the environment
    raise ImportError(f"gstat.jax needs JAX with jax.ffi (pip install jax): {_e}") from _e

import numpy as _np

__all__ = ["eigh", "eigvalsh", "cholesky", "cholesky_solve", "solve_triangular", "pca_project",
           "EighResult"]

_LIB_NAME = "libgstat_jax_ffi.so"


def _load_library():
    path = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), _LIB_NAME)
    if not _os.path.exists(path):
        raise ImportError(
            f"gstat.jax: {path} is missing: this gstat was built without its JAX extension because "
            "JAX's FFI headers were not found at build time (`import jax.ffi` failed in the building "
            "interpreter, or no C++ compiler was found). Install jax, then reinstall gstat with "
            "`pip install --no-build-isolation ./bindings/python`.")
    try:
        return _ctypes.cdll.LoadLibrary(path)
    except OSError as e:
        raise ImportError(f"gstat.jax: cannot load {path}: {e}") from e


_lib = _load_library()


def _register():
    # "CUDA" targets can be registered on a machine without a GPU (XLA keeps
    # them for that platform); gstat's CUDA module is looked for at the first
    # GPU call, whose error names it when it is missing.
    for target, symbol in (("eigh", "GstatEigh"), ("eigvalsh", "GstatEigvalsh"),
                           ("cholesky", "GstatCholesky"), ("solve", "GstatSolve"),
                           ("pca_project", "GstatPcaProject")):
        for platform, suffix in (("cpu", "Cpu"), ("CUDA", "Cuda")):
            _ffi.register_ffi_target(f"gstat_{target}", _ffi.pycapsule(getattr(_lib, symbol + suffix)),
                                     platform=platform)


_register()


class EighResult(_NamedTuple):
    """``(eigenvalues, eigenvectors)`` as ``jax.numpy.linalg.eigh`` returns them."""
    eigenvalues: "_jax.Array"
    eigenvectors: "_jax.Array"


# ---- helpers ----------------------------------------------------------------

def _as_float(x, name):
    x = _jnp.asarray(x)
    if _jnp.issubdtype(x.dtype, _jnp.complexfloating):
        raise TypeError(f"gstat.jax: {name} must be real (gstat has no complex routines), got {x.dtype}")
    if not _jnp.issubdtype(x.dtype, _jnp.floating):
        x = x.astype(_jnp.result_type(float))  # ints as JAX promotes them (float32 unless x64)
    if x.dtype not in (_jnp.float32, _jnp.float64, _jnp.bfloat16):
        raise TypeError(f"gstat.jax: {name} must be float32, float64 or bfloat16, got {x.dtype}")
    return x


def _square(a, name):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"gstat.jax: {name} must have shape (..., n, n), got {a.shape}")


def _mT(x):
    return _jnp.swapaxes(x, -1, -2)


def _sym_from_triangle(x, upper):
    """The symmetric matrix whose `upper` (or lower) triangle is x's: what
    gstat reads, hence also how a tangent of the input acts."""
    t = _jnp.triu(x) if upper else _jnp.tril(x)
    return t + _mT(_jnp.triu(x, 1) if upper else _jnp.tril(x, -1))


def _call(target, results, *args, **attrs):
    # gstat folds all leading dimensions into its batch, so a vmapped call is
    # the same call over a longer batch. "broadcast_all" (not "expand_dims")
    # because the solves need their operands' batches equal: gstat has no
    # stride-0 broadcasting of an operand.
    attrs = {k: _np.int32(v) for k, v in attrs.items()}
    return _ffi.ffi_call(target, results, vmap_method="broadcast_all")(*args, **attrs)


# ---- eigh -------------------------------------------------------------------

def _gap_inverse(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it, broadened
    near zero gaps (see the module docstring)."""
    n = w.shape[-1]
    off = ~_jnp.eye(n, dtype=bool)
    # The diagonal's zero gaps are replaced before the division: their
    # derivative would be 1 / eta**2, and second derivatives (reverse over
    # forward) would cancel such huge terms in rounding.
    d = _jnp.where(off, w[..., None, :] - w[..., :, None], 1)
    eps = _jnp.finfo(w.dtype).eps
    eta = _jax.lax.stop_gradient(n * eps * _jnp.max(_jnp.abs(w), axis=-1))[..., None, None]
    den = d * d + eta * eta
    # den == 0 only where a gap and eta are both 0 (a zero matrix): no information.
    ok = off & (den > 0)
    return _jnp.where(ok, d / _jnp.where(ok, den, 1), 0)


@_functools.partial(_jax.custom_jvp, nondiff_argnums=(1,))
def _eigh(a, upper):
    w = _jax.ShapeDtypeStruct(a.shape[:-1], a.dtype)
    v = _jax.ShapeDtypeStruct(a.shape, a.dtype)
    return tuple(_call("gstat_eigh", (w, v), a, upper=upper))


@_eigh.defjvp
def _eigh_jvp(upper, primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh(a, upper)
    vt_da_v = _mT(v) @ _sym_from_triangle(da, upper) @ v
    dw = _jnp.diagonal(vt_da_v, axis1=-2, axis2=-1)
    dv = v @ (_gap_inverse(w) * vt_da_v)
    return (w, v), (dw, dv)


@_functools.partial(_jax.custom_jvp, nondiff_argnums=(1,))
def _eigvalsh(a, upper):
    return _call("gstat_eigvalsh", _jax.ShapeDtypeStruct(a.shape[:-1], a.dtype), a, upper=upper)


@_eigvalsh.defjvp
def _eigvalsh_jvp(upper, primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh(a, upper)  # dw = diag(V^T dA V) needs the vectors
    dw = _jnp.sum(v * (_sym_from_triangle(da, upper) @ v), axis=-2)
    return w, dw


def _eigh_input(a, UPLO, symmetrize_input):
    a = _as_float(a, "a")
    _square(a, "a")
    if UPLO not in ("L", "U"):
        raise ValueError(f"gstat.jax: UPLO must be 'L' or 'U', got {UPLO!r}")
    if symmetrize_input:
        a = (a + _mT(a)) / 2
    return a, UPLO == "U"


def eigh(a, UPLO="L", symmetrize_input=True):
    """Eigenvalues (ascending) and eigenvectors of a batch of symmetric matrices.

    Parameters
    ----------
    a : jax.Array, shape (..., n, n)
    UPLO : {'L', 'U'}
        The triangle read when ``symmetrize_input`` is False.
    symmetrize_input : bool
        Use ``(a + a.T) / 2`` (default, as ``jax.numpy.linalg.eigh``).

    Returns
    -------
    EighResult
        ``(eigenvalues, eigenvectors)``; column ``j`` of ``eigenvectors`` is
        the unit eigenvector of ``eigenvalues[..., j]``, signed so that its
        entry of largest magnitude is positive (gstat's rule, on every backend).
    """
    a, upper = _eigh_input(a, UPLO, symmetrize_input)
    return EighResult(*_eigh(a, upper))


def eigvalsh(a, UPLO="L", symmetrize_input=True):
    """Eigenvalues (ascending) of a batch of symmetric matrices, shape (..., n).

    Parameters as :func:`eigh`; no eigenvectors are computed unless the call
    is differentiated.
    """
    a, upper = _eigh_input(a, UPLO, symmetrize_input)
    return _eigvalsh(a, upper)


# ---- Cholesky -----------------------------------------------------------------

@_functools.partial(_jax.custom_jvp, nondiff_argnums=(1,))
def _cholesky(a, upper):
    return _call("gstat_cholesky", _jax.ShapeDtypeStruct(a.shape, a.dtype), a, upper=upper)


@_cholesky.defjvp
def _cholesky_jvp(upper, primals, tangents):
    (a,), (da,) = primals, tangents
    f = _cholesky(a, upper)
    lo = _mT(f) if upper else f  # A = L L^T
    # dL = L Phi(L^-1 dA L^-T), Phi: the lower triangle with its diagonal
    # halved; the two solves are gstat's (and differentiable again).
    x = solve_triangular(lo, _sym_from_triangle(da, upper), lower=True)
    y = solve_triangular(lo, _mT(x), lower=True)
    phi = _jnp.tril(y, -1) + _jnp.tril(_jnp.triu(y)) / 2
    dl = lo @ phi
    return f, _mT(dl) if upper else dl


def cholesky(a, upper=False, symmetrize_input=True):
    """Cholesky factor of a batch of symmetric positive definite matrices.

    Parameters
    ----------
    a : jax.Array, shape (..., n, n)
    upper : bool
        False (default): lower L with ``a = L @ L.T`` (``jax.numpy.linalg``);
        True: upper U with ``a = U.T @ U``. The other strict triangle is zero.
    symmetrize_input : bool
        Use ``(a + a.T) / 2`` (default, as JAX); False reads only the
        factor's triangle.

    Returns
    -------
    jax.Array, shape (..., n, n); NaN for an element that is not positive definite.
    """
    a = _as_float(a, "a")
    _square(a, "a")
    if symmetrize_input:
        a = (a + _mT(a)) / 2
    return _cholesky(a, bool(upper))


# ---- solves -------------------------------------------------------------------

def _solve_operands(t, b, name):
    t = _as_float(t, name)
    b = _as_float(b, "b")
    _square(t, name)
    dtype = _jnp.promote_types(t.dtype, b.dtype)
    t, b = t.astype(dtype), b.astype(dtype)
    # (..., n) with a's batch: one right-hand side per matrix (JAX's rule);
    # otherwise (..., n, k), broadcast against a's batch.
    vector = b.ndim == 1 or (b.ndim == t.ndim - 1 and b.shape[-1] == t.shape[-1])
    if vector:
        b = b[..., None]
    if b.ndim < 2 or b.shape[-2] != t.shape[-1]:
        raise ValueError(f"gstat.jax: b must have shape (..., {t.shape[-1]}, k) or (..., {t.shape[-1]}), "
                         f"got {b.shape if not vector else b.shape[:-1]}")
    batch = _jnp.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = _jnp.broadcast_to(t, batch + t.shape[-2:])
    b = _jnp.broadcast_to(b, batch + b.shape[-2:])
    return t, b, vector


def _gstat_solve(t, b, upper, triangular, unit):
    return _call("gstat_solve", _jax.ShapeDtypeStruct(b.shape, b.dtype), t, b, upper=upper,
                 triangular=triangular, unit=unit)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    """Solve ``op(a) x = b`` for a batch of triangular matrices (scipy's signature).

    Parameters
    ----------
    a : jax.Array, shape (..., n, n); only the triangle named by `lower` is read
        (and not its diagonal with `unit_diagonal`).
    b : jax.Array, shape (..., n, k) or (..., n); batch dimensions broadcast.
    trans : {0, 1, 2, 'N', 'T', 'C'}
        ``op(a)`` is a, or its transpose (1, 2, 'T', 'C': real data).
    lower, unit_diagonal : bool

    Returns
    -------
    x : jax.Array, the broadcast shape of b.
    """
    if trans in (0, "N", "n"):
        t_op = 0
    elif trans in (1, 2, "T", "t", "C", "c"):
        t_op = 1
    else:
        raise ValueError(f"gstat.jax: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    a, b, vector = _solve_operands(a, b, "a")
    upper = not lower
    tri = _jnp.triu(a) if upper else _jnp.tril(a)
    if unit_diagonal:
        tri = tri - _jnp.triu(_jnp.tril(tri)) + _jnp.eye(a.shape[-1], dtype=a.dtype)
    op = _mT(tri) if t_op else tri

    # The matrix-vector product is only differentiated (dA x in the solve's
    # JVP), never run forward; the solve and its transpose are gstat's.
    x = _jax.lax.custom_linear_solve(
        lambda y: op @ y, b,
        solve=lambda _, y: _gstat_solve(a, y, upper, t_op, unit_diagonal),
        transpose_solve=lambda _, y: _gstat_solve(a, y, upper, 1 - t_op, unit_diagonal))
    return x[..., 0] if vector else x


def cholesky_solve(l, b, upper=False):
    """Solve ``A x = b`` given the Cholesky factor of A (from :func:`cholesky`).

    Parameters
    ----------
    l : jax.Array, shape (..., n, n)
        Lower factor L (``A = L L^T``), or upper U (``A = U^T U``) with
        ``upper=True``; only that triangle is read.
    b : jax.Array, shape (..., n, k) or (..., n); batch dimensions broadcast.

    Returns
    -------
    x : jax.Array, the broadcast shape of b.
    """
    l, b, vector = _solve_operands(l, b, "l")
    upper = bool(upper)
    lo = _mT(_jnp.triu(l)) if upper else _jnp.tril(l)
    x = _jax.lax.custom_linear_solve(
        lambda y: lo @ (_mT(lo) @ y), b,
        solve=lambda _, y: _gstat_solve(l, y, upper, -1, 0), symmetric=True)
    return x[..., 0] if vector else x


# ---- PCA projection -------------------------------------------------------------

@_functools.partial(_jax.custom_jvp, nondiff_argnums=(4,))
def _project(x, mean, comp, ev, whiten):
    y = _jax.ShapeDtypeStruct(x.shape[:-1] + comp.shape[-2:-1], x.dtype)
    return _call("gstat_pca_project", y, x, mean, comp, ev, whiten=whiten)


@_project.defjvp
def _project_jvp(whiten, primals, tangents):
    # y = ((x - mean) C^T) s, s = ev^-1/2 when whitened: linear in the
    # tangents, so jax.grad transposes it (gstat computes only the primal)
    (x, mean, comp, ev), (dx, dmean, dcomp, dev) = primals, tangents
    y = _project(x, mean, comp, ev, whiten)
    dy = (dx - dmean[..., None, :]) @ _mT(comp) + (x - mean[..., None, :]) @ _mT(dcomp)
    if whiten:
        dy = dy / _jnp.sqrt(ev)[..., None, :] - y * (0.5 * dev / ev)[..., None, :]
    return y, dy


def pca_project(x, mean, components, explained_variance=None, *, whiten=False):
    """PCA scores ``(x - mean) @ components.T``, divided by
    ``sqrt(explained_variance)`` when `whiten` (gstat's fused centred
    projection, as :func:`gstat.torch.pca_project`); differentiable in all four.

    Parameters
    ----------
    x : jax.Array, shape (..., m, p)
    mean : jax.Array, shape (..., p)
    components : jax.Array, shape (..., k, p)
    explained_variance : jax.Array, shape (..., k), optional (needed with `whiten`)
    whiten : bool

    Batch dimensions broadcast. NaN or Inf in `x` raises (gstat's check).

    Returns
    -------
    jax.Array, shape (..., m, k)

    Examples
    --------
    >>> import jax.numpy as jnp, gstat.jax as gj
    >>> x = jnp.array([[1.0, 2.0], [3.0, 4.0]])
    >>> gj.pca_project(x, jnp.array([2.0, 3.0]), jnp.array([[0.6, 0.8]])).tolist()
    [[-1.4], [1.4]]
    """
    if explained_variance is None:
        if whiten:
            raise ValueError("gstat.jax.pca_project: whiten needs explained_variance")
        explained_variance = _jnp.ones(_jnp.shape(components)[-2:-1], _jnp.asarray(components).dtype)
    x, mean, comp, ev = (_as_float(t, n) for t, n in ((x, "x"), (mean, "mean"),
                                                      (components, "components"),
                                                      (explained_variance, "explained_variance")))
    if x.ndim < 2 or mean.ndim < 1 or comp.ndim < 2 or ev.ndim < 1 or \
            mean.shape[-1] != x.shape[-1] or comp.shape[-1] != x.shape[-1] or \
            ev.shape[-1] != comp.shape[-2]:
        raise ValueError(f"gstat.jax.pca_project: inconsistent shapes x {x.shape}, mean {mean.shape}, "
                         f"components {comp.shape}, explained_variance {ev.shape}")
    dtype = _functools.reduce(_jnp.promote_types, (x.dtype, mean.dtype, comp.dtype, ev.dtype))
    batch = _jnp.broadcast_shapes(x.shape[:-2], mean.shape[:-1], comp.shape[:-2], ev.shape[:-1])
    x, mean, comp, ev = (_jnp.broadcast_to(t.astype(dtype), batch + t.shape[len(t.shape) - c:])
                         for t, c in ((x, 2), (mean, 1), (comp, 2), (ev, 1)))
    return _project(x, mean, comp, ev, bool(whiten))


_lib.GstatJaxBackendsRan.restype = _ctypes.c_uint
_lib.GstatJaxBackendsRan.argtypes = [_ctypes.c_int]


def _backends_ran(reset=False):
    """The backends that ran gstat.jax's calls since the last reset: "cpu",
    "cuda", "cuda+cpu" or "none" (for tests: the calls run on XLA's threads,
    where :func:`gstat.last_backend` does not see them)."""
    bits = _lib.GstatJaxBackendsRan(int(bool(reset)))
    names = [name for bit, name in ((2, "cuda"), (1, "cpu")) if bits & bit]
    return "+".join(names) or "none"
