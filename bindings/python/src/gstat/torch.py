"""gstat's linear algebra as differentiable torch operators.

``import gstat.torch`` registers ``torch.library`` custom operators in the
``gstat`` namespace (``torch.ops.gstat.eigh`` ...) with fake (meta)
implementations, so ``torch.compile(dynamic=True)`` traces through them
without graph breaks or recompiles when the batch size changes, and with
autograd formulas written in differentiable torch operations, so
``gradgradcheck`` (double backward) works. ``import gstat`` alone never
imports torch.

CPU tensors go to gstat's CPU path as zero-copy numpy views; CUDA tensors go
to the CUDA module, which runs on torch's current stream (no extra
synchronisation needed). ``eigh``/``eigvalsh``/``eigh_ex`` of orders up to 64
on CUDA only queue gstat's Jacobi kernels (gstat_eigh_async): no host
synchronisation, no allocation outside torch's, so they can be captured in a
CUDA graph (``torch.cuda.CUDAGraph``; call them once before capturing); a
failure there gives NaN outputs rather than an exception (``eigh_ex`` returns
the per-element info). Elsewhere gstat checks the input for NaN/Inf and reads
the solvers' info on the host, a synchronisation: under CUDA graph capture
those calls refuse with a RuntimeError rather than break the capture.

Gradients follow ``torch.linalg``: for ``eigh``/``eigvalsh``/``cholesky``
the gradient is the symmetric one (as if the input were symmetric), for the
triangular solves it is restricted to the triangle that is read.

Degenerate eigenvalues. ``torch.linalg.eigh``'s backward divides by
``lambda_j - lambda_i`` and returns NaN/Inf (or rounding noise times 1e16)
when two eigenvalues coincide (pytorch issues 47599, 76531). Here pairs in
one numerically degenerate block, ``|lambda_i - lambda_j| <= n * eps *
max|lambda|``, contribute nothing. That is the exact gradient when the loss
depends on the eigenvectors only through what rotations within a block leave
unchanged for nearby eigenvalues too: the eigenvalues, and projectors onto
spaces spanned by whole blocks (``V[:, :k] V[:, :k]^T`` with no block cut at
k); then the antisymmetric part of ``V^T dV`` vanishes within every block.
A matrix function ``V diag(f(w)) V^T`` is invariant only at exact
degeneracy: its exact within-block term, ``f'(lambda) (V^T G V)_ij``, cannot
be told from the eigenvector gradient, so there the gradient is finite but
lacks that term (well separated eigenvalues are unaffected). For losses that
are not invariant no gradient exists; ``broadening=eps > 0`` replaces
``1/(lambda_j - lambda_i)`` by ``(lambda_j - lambda_i) / ((lambda_j -
lambda_i)^2 + eps)`` for every pair (eps in units of eigenvalue squared): a
finite, smooth surrogate also for nearly degenerate pairs, with a relative
bias of eps / gap^2 on well separated ones.

Forward-mode AD (``torch.func.jvp``/``jacfwd``, ``torch.autograd.forward_ad``)
and ``torch.func`` transforms (``jacrev``, ``vmap``, ``hessian``) work: a
``torch.library`` operator takes only a backward formula (its tangents would
be silently dropped), so while a transform or a dual level is active (never
under ``torch.compile``, which sees the registered operators) the functions
route through ``torch.autograd.Function`` s carrying torch.linalg's JVPs, with
the same degenerate-block and `broadening` rules as the backward.
"""
import math
from typing import NamedTuple

import torch

from . import linalg as _linalg, _core

__all__ = ["eigh", "eigh_ex", "eigvalsh", "cholesky", "cholesky_solve", "solve_triangular",
           "pca_project", "EighResult", "EighExResult"]

_DTYPES = (torch.float32, torch.float64, torch.bfloat16)
_LIB = "gstat"


class EighResult(NamedTuple):
    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor


class EighExResult(NamedTuple):
    eigenvalues: torch.Tensor
    eigenvectors: torch.Tensor
    info: torch.Tensor


def _tags():
    # inductor's CUDA graphs (mode="reduce-overhead") must leave these ops
    # out of their captures: most of their paths synchronise with the host
    tag = getattr(torch.Tag, "cudagraph_unsafe", None)
    return (tag,) if tag is not None else ()


def _op(name, mutates_args=()):
    try:
        return torch.library.custom_op(f"{_LIB}::{name}", mutates_args=mutates_args, tags=_tags())
    except TypeError:  # a torch whose custom_op takes no tags
        return torch.library.custom_op(f"{_LIB}::{name}", mutates_args=mutates_args)


# ---- running gstat on torch tensors ------------------------------------------------------

def _check(what, *tensors):
    for t in tensors:
        if t.dtype not in _DTYPES:
            raise TypeError(f"gstat.torch.{what}: dtype {t.dtype} is not supported "
                            f"(float32, float64, bfloat16)")
        if t.device.type not in ("cpu", "cuda"):
            raise TypeError(f"gstat.torch.{what}: tensors on {t.device} are not supported")
    if len({t.device for t in tensors}) > 1 or len({t.dtype for t in tensors}) > 1:
        raise ValueError(f"gstat.torch.{what}: all tensors must be on one device and of one "
                         f"dtype, got " + ", ".join(f"{t.dtype} on {t.device}" for t in tensors))


def _refuse_capture(what):
    if torch.cuda.is_current_stream_capturing():
        which = ("eigh and eigvalsh capture for orders up to 64 with dense outputs"
                 if what in ("eigh", "eigvalsh")
                 else "only eigh and eigvalsh capture (orders <= 64)")
        raise RuntimeError(
            f"gstat.torch.{what}: not capturable in a CUDA graph here (this path checks the input "
            f"for NaN/Inf and reads the solver's status on the host, a synchronisation that "
            f"capture forbids; {which}); call it outside the captured region")


def _on_device(t):
    """Whether t goes to gstat's CUDA path (one place, for the tests)."""
    return t.is_cuda


def _plain(t):
    """t as gstat may take it: inside a custom operator the inputs still
    require grad, which DLPack refuses to export; no negative view bit."""
    return t.detach().resolve_neg()


def _np_view(t):
    """A numpy view of a CPU tensor (float32/float64), no copy."""
    return _plain(t).numpy()


def _host_compute(outs):
    """Where gstat writes on the CPU: the outputs themselves (numpy views),
    or float32 buffers for bfloat16 ones (gstat's CPU path computes bf16 in
    float32 anyway; torch's copy rounds to nearest even, as gstat does)."""
    return [o if o.dtype != torch.bfloat16 else torch.empty(o.shape, dtype=torch.float32)
            for o in outs]


def _host_inputs(*ts):
    return [_np_view(t.float() if t.dtype == torch.bfloat16 else t) for t in ts]


def _finish(outs, bufs):
    for o, b in zip(outs, bufs):
        if o is not b:
            o.copy_(b)


# ---- eigh on CUDA without host synchronization ----------------------------------------------
# Orders up to 64 run gstat's Jacobi kernels through gstat_eigh_async: nothing
# read back on the host, nothing allocated by gstat (every buffer is torch's),
# so the call queues on torch's current stream, also inside a CUDA graph
# capture. Failures stay on the device: NaN outputs and an info tensor.

_ASYNC_MAX_N = 64
_ASYNC_DTYPES = {torch.float32: 0, torch.float64: 1, torch.bfloat16: 2}
_warm = set()  # devices whose gstat CUDA context exists (none may be made while capturing)


def _async_eligible(A, w, v):
    n = A.shape[-1]
    return (A.is_cuda and n <= _ASYNC_MAX_N and w.is_contiguous()
            and (v is None or (v.mT.is_contiguous()
                               and (v.numel() == 0 or v.data_ptr() != A.data_ptr()))))


def _run_eigh_async(A, upper, w, v):
    """gstat_eigh_async into w, v (v column-major); returns the raw info:
    2 x batch int32, (did not converge, non-finite outputs) per element."""
    batch = math.prod(A.shape[:-2])
    info = torch.empty(2 * batch, dtype=torch.int32, device=A.device)
    dev = A.device.index if A.device.index is not None else torch.cuda.current_device()
    if dev not in _warm and torch.cuda.is_current_stream_capturing():
        raise RuntimeError(
            "gstat.torch.eigh: call it once on this device before capturing a CUDA graph (gstat's "
            "CUDA context cannot be created inside a capture; torch asks for the same warm-up)")
    A = _plain(A).contiguous()
    _core.eigh_async(A.data_ptr(), w.data_ptr(), 0 if v is None else v.data_ptr(), info.data_ptr(),
                     batch, A.shape[-1], _ASYNC_DTYPES[A.dtype], upper, dev,
                     torch.cuda.current_stream(dev).cuda_stream)
    _warm.add(dev)
    return info


def _run_eigh(A, upper, w, v):
    uplo = "U" if upper else "L"
    if _on_device(A):
        if _async_eligible(A, w, v):
            _run_eigh_async(A, upper, w, v)
            return
        _refuse_capture("eigh")
        A = _plain(A)
        if v is None:
            _linalg.eigvalsh(A, uplo, out=w)
        else:
            _linalg.eigh(A, uplo, out=(w, v))
        return
    outs = [w] if v is None else [w, v]
    bufs = _host_compute(outs)
    (a,) = _host_inputs(A)
    if v is None:
        _linalg.eigvalsh(a, uplo, out=_np_view(bufs[0]))
    else:
        _linalg.eigh(a, uplo, out=(_np_view(bufs[0]), _np_view(bufs[1])))
    _finish(outs, bufs)


def _run_cholesky(A, upper, out):
    if _on_device(A):
        _refuse_capture("cholesky")
        _linalg.cholesky(_plain(A), upper, out=out)
        return
    bufs = _host_compute([out])
    (a,) = _host_inputs(A)
    _linalg.cholesky(a, upper, out=_np_view(bufs[0]))
    _finish([out], bufs)


def _run_solve(kind, A, B, upper, trans, unit, out):
    """op(A) X = B with A triangular (kind 'tri') or A = the Cholesky product of A ('chol')."""
    if _on_device(A):
        _refuse_capture("cholesky_solve" if kind == "chol" else "solve_triangular")
        args = (_plain(A), _plain(B))
    else:
        args = _host_inputs(A, B)
    bufs = [out] if _on_device(A) else _host_compute([out])
    o = bufs[0] if _on_device(A) else _np_view(bufs[0])
    if kind == "chol":
        _linalg.cholesky_solve(args[0], args[1], upper=upper, out=o)
    else:
        _linalg.solve_triangular(args[0], args[1], trans=1 if trans else 0, lower=not upper,
                                 unit_diagonal=unit, out=o)
    if not _on_device(A):
        _finish([out], bufs)


def _run_project(X, mean, components, ev, whiten, out):
    if _on_device(X):
        # gstat's device projection takes its parameters from the host: a
        # copy (and a synchronisation) per call in a training loop. The
        # same single GEMM over the centred rows in torch keeps the
        # parameters on the device (autograd does not record inside the
        # operator: its backward is _project_bwd).
        y = torch.addmm(-(mean @ components.mT), X, components.mT)
        out.copy_(y * ev.rsqrt() if whiten else y)
        return
    c, m, e = (t.detach().double().numpy() for t in (components, mean, ev))
    bufs = _host_compute([out])
    (x,) = _host_inputs(X)
    o = _np_view(bufs[0])
    o[...] = _core.pca_transform(False, x, c, m, e, whiten, None, None, None, None)
    _finish([out], bufs)


# ---- the operators -------------------------------------------------------------------------

def _new_vectors(A):
    """Eigenvector storage: column-major matrices, as torch.linalg.eigh's (and
    what gstat's device kernels write in place); not a view (forward AD
    wants an autograd.Function's outputs to be none)."""
    n = A.shape[-1]
    strides, step = [1, n], n * n
    for d in reversed(A.shape[:-2]):
        strides.insert(0, step)
        step = step * d
    return torch.empty_strided(A.shape, strides, dtype=A.dtype, device=A.device)


def _eigh_now(A, upper):
    w, v = A.new_empty(A.shape[:-1]), _new_vectors(A)
    _run_eigh(A, upper, w, v)
    return w, v


@_op("eigh")
def _eigh_op(A: torch.Tensor, upper: bool, broadening: float) -> tuple[torch.Tensor, torch.Tensor]:
    return _eigh_now(A, upper)


@_eigh_op.register_fake
def _(A, upper, broadening):
    return A.new_empty(A.shape[:-1]), _new_vectors(A)


@_op("eigh_ex")
def _eigh_ex_op(A: torch.Tensor, upper: bool,
                broadening: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w, v = A.new_empty(A.shape[:-1]), _new_vectors(A)
    if _on_device(A) and _async_eligible(A, w, v):
        raw = _run_eigh_async(A, upper, w, v).view(2, *A.shape[:-2])
        return w, v, torch.where(raw[0] != 0, raw[0], raw[1])
    _run_eigh(A, upper, w, v)
    return w, v, torch.zeros(A.shape[:-2], dtype=torch.int32, device=A.device)


@_eigh_ex_op.register_fake
def _(A, upper, broadening):
    return (A.new_empty(A.shape[:-1]), _new_vectors(A),
            A.new_empty(A.shape[:-2], dtype=torch.int32))


def _eigvalsh_now(A, upper):
    w = A.new_empty(A.shape[:-1])
    _run_eigh(A, upper, w, None)
    return w


@_op("eigvalsh")
def _eigvalsh_op(A: torch.Tensor, upper: bool) -> torch.Tensor:
    return _eigvalsh_now(A, upper)


@_eigvalsh_op.register_fake
def _(A, upper):
    return A.new_empty(A.shape[:-1])


def _cholesky_now(A, upper):
    out = torch.empty_like(A, memory_format=torch.contiguous_format)
    _run_cholesky(A, upper, out)
    return out


@_op("cholesky")
def _cholesky_op(A: torch.Tensor, upper: bool) -> torch.Tensor:
    return _cholesky_now(A, upper)


@_cholesky_op.register_fake
def _(A, upper):
    return torch.empty_like(A, memory_format=torch.contiguous_format)


def _chol_solve_now(B, L, upper):
    out = torch.empty_like(B, memory_format=torch.contiguous_format)
    _run_solve("chol", L, B, upper, False, False, out)
    return out


@_op("cholesky_solve")
def _cholesky_solve_op(B: torch.Tensor, L: torch.Tensor, upper: bool) -> torch.Tensor:
    return _chol_solve_now(B, L, upper)


@_cholesky_solve_op.register_fake
def _(B, L, upper):
    return torch.empty_like(B, memory_format=torch.contiguous_format)


def _tri_solve_now(A, B, upper, trans, unit):
    out = torch.empty_like(B, memory_format=torch.contiguous_format)
    _run_solve("tri", A, B, upper, trans, unit, out)
    return out


@_op("solve_triangular")
def _solve_triangular_op(A: torch.Tensor, B: torch.Tensor, upper: bool, trans: bool,
                         unitriangular: bool) -> torch.Tensor:
    return _tri_solve_now(A, B, upper, trans, unitriangular)


@_solve_triangular_op.register_fake
def _(A, B, upper, trans, unitriangular):
    return torch.empty_like(B, memory_format=torch.contiguous_format)


@_op("pca_project")
def _pca_project_op(X: torch.Tensor, mean: torch.Tensor, components: torch.Tensor,
                    explained_variance: torch.Tensor, whiten: bool) -> torch.Tensor:
    out = X.new_empty((X.shape[0], components.shape[0]))
    _run_project(X, mean, components, explained_variance, whiten, out)
    return out


@_pca_project_op.register_fake
def _(X, mean, components, explained_variance, whiten):
    return X.new_empty((X.shape[0], components.shape[0]))


# out= variants: the same computations written into the caller's tensors
@_op("eigh_out", mutates_args=("w", "v"))
def _eigh_out_op(A: torch.Tensor, upper: bool, w: torch.Tensor, v: torch.Tensor) -> None:
    _run_eigh(A, upper, w, v)


@_op("eigvalsh_out", mutates_args=("w",))
def _eigvalsh_out_op(A: torch.Tensor, upper: bool, w: torch.Tensor) -> None:
    _run_eigh(A, upper, w, None)


@_op("cholesky_out", mutates_args=("out",))
def _cholesky_out_op(A: torch.Tensor, upper: bool, out: torch.Tensor) -> None:
    _run_cholesky(A, upper, out)


@_op("cholesky_solve_out", mutates_args=("out",))
def _cholesky_solve_out_op(B: torch.Tensor, L: torch.Tensor, upper: bool, out: torch.Tensor) -> None:
    _run_solve("chol", L, B, upper, False, False, out)


@_op("solve_triangular_out", mutates_args=("out",))
def _solve_triangular_out_op(A: torch.Tensor, B: torch.Tensor, upper: bool, trans: bool,
                             unitriangular: bool, out: torch.Tensor) -> None:
    _run_solve("tri", A, B, upper, trans, unitriangular, out)


@_op("pca_project_out", mutates_args=("out",))
def _pca_project_out_op(X: torch.Tensor, mean: torch.Tensor, components: torch.Tensor,
                        explained_variance: torch.Tensor, whiten: bool, out: torch.Tensor) -> None:
    _run_project(X, mean, components, explained_variance, whiten, out)


# ---- autograd: every backward is made of differentiable torch operations, ----------------
# ---- so it can itself be differentiated (double backward) ---------------------------------

def _half_inverse_gaps(w, broadening):
    """F_ij = 1/(2 (w_j - w_i)), zero within degenerate blocks, or broadened.
    (The 1/2 of the skew part folded in; few kernels: the backward of a
    batch of small matrices is bound by launches.)"""
    gaps = w.unsqueeze(-2) - w.unsqueeze(-1)
    with torch.no_grad():  # which pairs are degenerate is piecewise constant in w
        tol = torch.linalg.vector_norm(w, float("inf"), dim=-1)[..., None, None]
        block = gaps.abs() <= tol * (w.shape[-1] * torch.finfo(w.dtype).eps)  # with the diagonal
    if broadening > 0:
        inv = gaps / (2 * (gaps * gaps + broadening))
    else:  # the inner where keeps 0 * inf out of the double backward
        inv = 0.5 / torch.where(block, 1.0, gaps)
    return torch.where(block, 0.0, inv)


_BWD_MAX_N = 32  # gstat_eigh_backward's orders
_BWD_DTYPES = {torch.float32: 0, torch.float64: 1}


def _real_on(device_type, *ts):
    """Whether every tensor is a plain strided tensor with memory behind it on
    device_type ("cuda" or "cpu"), read as its data say (no negative-bit
    view), outside any trace: not a fake/functional tensor of a compiler's
    trace, nor a torch.func wrapper, nor under a dispatch mode or the JIT
    tracer (which would record an empty result)."""
    wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda t: False)
    if _dispatch_mode() is not None or torch._C._get_tracing_state() is not None:
        return False
    return all(type(t) is torch.Tensor and t.device.type == device_type and not wrapped(t)
               and t.layout == torch.strided and not t.is_neg() for t in ts)


def _dispatch_mode():
    get = getattr(torch.utils._python_dispatch, "_get_current_dispatch_mode", lambda: None)
    return get()



def _no_broadcast(t):
    """t, or a copy where a dimension repeats memory (stride 0, as autograd's
    expanded gradients of a sum), which gstat's descriptors do not take."""
    return t.contiguous() if any(st < 1 and sz > 1 for st, sz in zip(t.stride(), t.shape)) else t


def _fused_backward(w, v, gw, gv, broadening):
    """The backward in one gstat call (gstat_eigh_backward: one CUDA kernel
    for orders up to 32, three matrix products per element on the CPU), or
    None where it does not apply (then torch operations compute it)."""
    n = v.shape[-1]
    ts = (w, v, gv) if gw is None else (w, v, gw, gv)
    if not (n >= 1 and v.dtype in _BWD_DTYPES and all(t.dtype == v.dtype for t in ts)):
        return None
    on_cpu = _real_on("cpu", *ts)
    if not on_cpu and not (n <= _BWD_MAX_N and _real_on("cuda", *ts)):
        return None
    dev = -1 if on_cpu else (v.device.index if v.device.index is not None
                             else torch.cuda.current_device())
    if not on_cpu and dev not in _warm and torch.cuda.is_current_stream_capturing():
        return None  # gstat's CUDA context cannot be made inside a capture
    w2, v3, gv3 = (_no_broadcast(t) for t in (w.reshape(-1, n), v.reshape(-1, n, n),
                                              gv.reshape(-1, n, n)))
    gw2 = None if gw is None else _no_broadcast(gw.reshape(-1, n))
    out = torch.empty(v.shape, dtype=v.dtype, device=v.device)
    _core.eigh_backward(w2.data_ptr(), *w2.stride(),
                        *((0, 0, 0) if gw2 is None else (gw2.data_ptr(), *gw2.stride())),
                        v3.data_ptr(), *v3.stride(), gv3.data_ptr(), *gv3.stride(),
                        out.data_ptr(), n * n, n, 1, v3.shape[0], n, _BWD_DTYPES[v.dtype],
                        float(broadening), dev,
                        0 if on_cpu else torch.cuda.current_stream(dev).cuda_stream)
    if not on_cpu:
        _warm.add(dev)
    return out


def _eigh_backward_once(w, v, gw, gv, broadening):
    """_eigh_backward where no second derivative is asked (grad mode off, as
    in a plain backward): one gstat call on the CPU and on CUDA for orders up
    to 32, else the same values in fewer, in-place kernels. A batch of small
    matrices is bound by kernel launches or operator overhead here."""
    fused = _fused_backward(w, v, gw, gv, broadening)
    if fused is not None:
        return fused
    inner = v.mT @ gv
    inner = inner - inner.mT
    gaps = w.unsqueeze(-2) - w.unsqueeze(-1)
    tol = torch.linalg.vector_norm(w, float("inf"), dim=-1, keepdim=True).unsqueeze(-1)
    block = gaps.abs() <= tol.mul_(w.shape[-1] * torch.finfo(w.dtype).eps)  # with the diagonal
    if broadening > 0:
        inner.mul_(gaps).div_(gaps.square().add_(broadening).mul_(2))
    else:  # 0/0 on the diagonal and inf in degenerate blocks: masked below
        inner.div_(gaps.mul_(2))
    inner.masked_fill_(block, 0.0)
    if gw is not None:
        inner.diagonal(0, -2, -1).copy_(gw)
    return v @ inner @ v.mT


def _eigh_backward(w, v, gw, gv, broadening):
    # torch.linalg's symmetric gradient: V (diag(gw) + F o skew(V^T gV)) V^T
    if v.shape[-1] == 0:  # (no max|w| to scale the degeneracy test by)
        return None if gw is None and gv is None else torch.zeros_like(v)
    if gv is not None and not torch.is_grad_enabled():
        return _eigh_backward_once(w, v, gw, gv, broadening)
    if gv is None:
        return None if gw is None else (v * gw.unsqueeze(-2)) @ v.mT
    vtg = v.mT @ gv
    inner = (vtg - vtg.mT) * _half_inverse_gaps(w, broadening)
    if gw is not None:  # the diagonal of inner is zero
        inner = inner.diagonal_scatter(gw, 0, -2, -1)
    return v @ inner @ v.mT


def _eigh_setup(ctx, inputs, output):
    ctx.broadening = inputs[2]
    ctx.save_for_backward(*output)


def _eigh_bwd(ctx, gw, gv):
    w, v = ctx.saved_tensors
    return _eigh_backward(w, v, gw, gv, ctx.broadening), None, None


_eigh_op.register_autograd(_eigh_bwd, setup_context=_eigh_setup)


def _eigh_ex_setup(ctx, inputs, output):
    ctx.broadening = inputs[2]
    ctx.save_for_backward(*output[:2])


def _eigh_ex_bwd(ctx, gw, gv, _ginfo):
    w, v = ctx.saved_tensors
    return _eigh_backward(w, v, gw, gv, ctx.broadening), None, None


_eigh_ex_op.register_autograd(_eigh_ex_bwd, setup_context=_eigh_ex_setup)


def _cholesky_setup(ctx, inputs, output):
    ctx.upper = inputs[1]
    ctx.save_for_backward(output)


def _cholesky_bwd(ctx, gL):
    return _cholesky_backward(ctx.saved_tensors[0], gL, ctx.upper), None


def _cholesky_backward(L, gL, upper):
    # torch.linalg's symmetric gradient L^-T Phi(L^T gL) L^-1, Phi: the lower
    # triangle with its diagonal halved, symmetrised
    if upper:
        L, gL = L.mT, gL.mT
    P = (L.mT @ gL).tril()
    P = 0.5 * (P + P.tril(-1).mT)
    P = torch.linalg.solve_triangular(L.mT, P, upper=True)
    return torch.linalg.solve_triangular(L, P, upper=False, left=False)


_cholesky_op.register_autograd(_cholesky_bwd, setup_context=_cholesky_setup)


def _chol_solve_setup(ctx, inputs, output):
    ctx.upper = inputs[2]
    ctx.save_for_backward(inputs[1], output)


def _chol_solve_bwd(ctx, gX):
    return (*_chol_solve_backward(*ctx.saved_tensors, gX, ctx.upper), None)


def _chol_solve_backward(L, X, gX, upper):
    # X = A^-1 B with A = L L^T: gB = A^-1 gX, gA = -gB X^T (symmetrised),
    # pushed through A = L L^T onto the triangle that is read
    # only L's triangle is read: the other one must not receive second-order terms
    L = L.triu() if upper else L.tril()
    gB = _chol_solve(gX, L, upper)
    S = gB @ X.mT
    S = S + S.mT
    gL = -(L @ S).triu() if upper else -(S @ L).tril()
    return gB, gL


_cholesky_solve_op.register_autograd(_chol_solve_bwd, setup_context=_chol_solve_setup)


def _solve_tri_setup(ctx, inputs, output):
    ctx.upper, ctx.trans, ctx.unit = inputs[2], inputs[3], inputs[4]
    ctx.save_for_backward(inputs[0], output)


def _solve_tri_bwd(ctx, gX):
    return (*_solve_tri_backward(*ctx.saved_tensors, gX, ctx.upper, ctx.trans, ctx.unit),
            None, None, None)


def _solve_tri_backward(A, X, gX, upper, trans, unit):
    # op(A) X = B: gB = op(A)^-T gX, g op(A) = -gB X^T, kept on the triangle read
    gB = _tri_solve(A, gX, upper, not trans, unit)
    gA = -(X @ gB.mT) if trans else -(gB @ X.mT)
    gA = gA.triu() if upper else gA.tril()
    if unit:
        gA = gA - torch.diag_embed(gA.diagonal(0, -2, -1))
    return gA, gB


_solve_triangular_op.register_autograd(_solve_tri_bwd, setup_context=_solve_tri_setup)


def _project_setup(ctx, inputs, output):
    X, mean, components, ev, whiten = inputs
    ctx.whiten = whiten
    ctx.save_for_backward(X, mean, components, ev, output)


def _project_bwd(ctx, gY):
    return (*_project_backward(*ctx.saved_tensors, gY, ctx.whiten), None)


def _project_backward(X, mean, C, ev, Y, gY, whiten):
    # Y = ((X - mean) C^T) s with s = ev^-1/2 when whitened, else 1
    gZ = gY * ev.rsqrt() if whiten else gY
    gX = gZ @ C
    gC = gZ.mT @ (X - mean)
    gev = (gY * Y).sum(0) * (-0.5 / ev) if whiten else None
    return gX, -gX.sum(0), gC, gev


_pca_project_op.register_autograd(_project_bwd, setup_context=_project_setup)


# ---- forward mode and torch.func transforms ------------------------------------------------
# A torch.library operator takes a backward formula only: under a dual level
# its tangents are dropped (silently zero), and torch.func's grad refuses the
# generated autograd.Function. While a transform or a dual level is active the
# public functions go through these Functions (same forward operators, same
# backward, plus torch.linalg's JVPs); torch.compile never sees them: dynamo
# breaks the graph on a custom jvp, and there the registered operators serve.

def _transformed():
    if torch.compiler.is_compiling():
        return False
    level = getattr(torch.autograd.forward_ad, "_current_level", 0)  # -1: no dual level
    active = getattr(torch._C, "_are_functorch_transforms_active", lambda: True)
    return level >= 0 or active()


class _EighFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A, upper, broadening):
        return torch.ops.gstat.eigh(A, upper, broadening)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.broadening = inputs[2]
        ctx.save_for_backward(*output)
        ctx.save_for_forward(*output)

    @staticmethod
    def backward(ctx, gw, gv):
        w, v = ctx.saved_tensors
        return _eigh_backward(w, v, gw, gv, ctx.broadening), None, None

    @staticmethod
    def jvp(ctx, dA, _upper, _broadening):
        # torch.linalg's: M = V^T dA V, dw = diag(M), dV = V (E o M) with
        # E_ij = 1/(w_j - w_i), degenerate pairs and broadening as the backward
        w, v = ctx.saved_tensors
        m = v.mT @ dA @ v
        return m.diagonal(0, -2, -1), v @ (m * (2 * _half_inverse_gaps(w, ctx.broadening)))


def _eager_fn(name, run, setup, backward):
    """An autograd.Function for plain eager mode (no compiler, transform,
    tracer or dispatch mode; those take the registered operator): run(*args)
    with the operator's own setup_context and backward, without
    torch.library's dispatch, which costs tens of microseconds a call, much
    of a small batch's time (bench/README.md, "gstat.torch in autograd")."""
    def forward(ctx, *args):
        out = run(*args)
        setup(ctx, args, out)
        return out
    return type(name, (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


_EagerEighFn = _eager_fn("_EagerEighFn", lambda A, upper, broadening: _eigh_now(A, upper),
                         _eigh_setup, _eigh_bwd)
_EagerCholeskyFn = _eager_fn("_EagerCholeskyFn", _cholesky_now, _cholesky_setup, _cholesky_bwd)
_EagerCholSolveFn = _eager_fn("_EagerCholSolveFn", _chol_solve_now, _chol_solve_setup,
                              _chol_solve_bwd)
_EagerSolveTriFn = _eager_fn("_EagerSolveTriFn", _tri_solve_now, _solve_tri_setup, _solve_tri_bwd)


def _plain_eager(*ts):
    """Whether the tensors may skip the operator: eager mode on plain tensors."""
    return not torch.compiler.is_compiling() and _real_on(ts[0].device.type, *ts)


def _records(*ts):
    """Whether autograd records a call on these tensors."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in ts)


class _CholeskyFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A, upper):
        return torch.ops.gstat.cholesky(A, upper)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.upper = inputs[1]
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, gL):
        return _cholesky_backward(ctx.saved_tensors[0], gL, ctx.upper), None

    @staticmethod
    def jvp(ctx, dA, _upper):
        # torch.linalg's: dL = L Phi(L^-1 dA L^-T), Phi: the lower triangle with
        # its diagonal halved (upper: dU = dL^T with L = U^T)
        (L,) = ctx.saved_tensors
        if ctx.upper:
            L = L.mT
        P = torch.linalg.solve_triangular(L, dA, upper=False)
        P = torch.linalg.solve_triangular(L.mT, P, upper=True, left=False).tril()
        dL = L @ (P - 0.5 * torch.diag_embed(P.diagonal(0, -2, -1)))
        return dL.mT if ctx.upper else dL


class _CholSolveFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(B, L, upper):
        return torch.ops.gstat.cholesky_solve(B, L, upper)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.upper = inputs[2]
        ctx.save_for_backward(inputs[1], output)
        ctx.save_for_forward(inputs[1], output)

    @staticmethod
    def backward(ctx, gX):
        return (*_chol_solve_backward(*ctx.saved_tensors, gX, ctx.upper), None)

    @staticmethod
    def jvp(ctx, dB, dL, _upper):
        # A X = B with A = L L^T (U^T U): dX = A^-1 (dB - dA X), dA from the
        # triangle that is read
        L, X = ctx.saved_tensors
        L = L.triu() if ctx.upper else L.tril()
        r = torch.zeros_like(X) if dB is None else dB
        if dL is not None:
            if ctx.upper:
                dL = dL.triu()
                r = r - dL.mT @ (L @ X) - L.mT @ (dL @ X)
            else:
                dL = dL.tril()
                r = r - dL @ (L.mT @ X) - L @ (dL.mT @ X)
        return _chol_solve(r, L, ctx.upper)


class _SolveTriFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(A, B, upper, trans, unit):
        return torch.ops.gstat.solve_triangular(A, B, upper, trans, unit)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.upper, ctx.trans, ctx.unit = inputs[2:]
        ctx.save_for_backward(inputs[0], output)
        ctx.save_for_forward(inputs[0], output)

    @staticmethod
    def backward(ctx, gX):
        return (*_solve_tri_backward(*ctx.saved_tensors, gX, ctx.upper, ctx.trans, ctx.unit),
                None, None, None)

    @staticmethod
    def jvp(ctx, dA, dB, *_flags):
        # op(A) X = B: dX = op(A)^-1 (dB - op(dA) X), dA on the triangle read
        A, X = ctx.saved_tensors
        r = torch.zeros_like(X) if dB is None else dB
        if dA is not None:
            k = 1 if ctx.unit else 0
            dA = dA.triu(k) if ctx.upper else dA.tril(-k)
            r = r - (dA.mT if ctx.trans else dA) @ X
        return _tri_solve(A, r, ctx.upper, ctx.trans, ctx.unit)


class _ProjectFn(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(X, mean, C, ev, whiten):
        return torch.ops.gstat.pca_project(X, mean, C, ev, whiten)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.whiten = inputs[4]
        ctx.save_for_backward(*inputs[:4], output)
        ctx.save_for_forward(*inputs[:4], output)

    @staticmethod
    def backward(ctx, gY):
        return (*_project_backward(*ctx.saved_tensors, gY, ctx.whiten), None)

    @staticmethod
    def jvp(ctx, dX, dmean, dC, dev, _whiten):
        X, mean, C, ev, Y = ctx.saved_tensors
        dZ = torch.zeros_like(Y)
        if dX is not None:
            dZ = dZ + dX @ C.mT
        if dmean is not None:
            dZ = dZ - dmean @ C.mT
        if dC is not None:
            dZ = dZ + (X - mean) @ dC.mT
        if not ctx.whiten:
            return dZ
        dZ = dZ * ev.rsqrt()
        return dZ if dev is None else dZ - Y * (0.5 * dev / ev)


def _chol_solve(B, L, upper):
    if _transformed():
        return _CholSolveFn.apply(B, L, upper)
    if _plain_eager(B, L):
        if _records(B, L):
            return _EagerCholSolveFn.apply(B, L, upper)
        return _chol_solve_now(B, L, upper)
    return _cholesky_solve_op(B, L, upper)


def _tri_solve(A, B, upper, trans, unit):
    if _transformed():
        return _SolveTriFn.apply(A, B, upper, trans, unit)
    if _plain_eager(A, B):
        if _records(A, B):
            return _EagerSolveTriFn.apply(A, B, upper, trans, unit)
        return _tri_solve_now(A, B, upper, trans, unit)
    return _solve_triangular_op(A, B, upper, trans, unit)


# batching rules: the operators batch over leading dimensions already, so
# vmap moves its dimension to the front (no per-element fallback loop)
def _front(info, t, d):
    return t.movedim(d, 0) if d is not None else t.expand(info.batch_size, *t.shape)


@torch.library.register_vmap("gstat::eigh")
def _(info, in_dims, A, upper, broadening):
    return torch.ops.gstat.eigh(_front(info, A, in_dims[0]), upper, broadening), (0, 0)


@torch.library.register_vmap("gstat::eigvalsh")
def _(info, in_dims, A, upper):
    return torch.ops.gstat.eigvalsh(_front(info, A, in_dims[0]), upper), 0


@torch.library.register_vmap("gstat::cholesky")
def _(info, in_dims, A, upper):
    return torch.ops.gstat.cholesky(_front(info, A, in_dims[0]), upper), 0


@torch.library.register_vmap("gstat::cholesky_solve")
def _(info, in_dims, B, L, upper):
    B, L = (_front(info, t, d).contiguous() for t, d in zip((B, L), in_dims))
    return torch.ops.gstat.cholesky_solve(B, L, upper), 0


@torch.library.register_vmap("gstat::solve_triangular")
def _(info, in_dims, A, B, upper, trans, unit):
    A, B = (_front(info, t, d).contiguous() for t, d in zip((A, B), in_dims[:2]))
    return torch.ops.gstat.solve_triangular(A, B, upper, trans, unit), 0


@torch.library.register_vmap("gstat::pca_project")
def _(info, in_dims, X, mean, C, ev, whiten):
    if in_dims[1:4] == (None, None, None):  # only the data batched: one projection
        X = X.movedim(in_dims[0], 0)
        Y = torch.ops.gstat.pca_project(X.reshape(-1, X.shape[-1]), mean, C, ev, whiten)
        return Y.reshape(*X.shape[:-1], Y.shape[-1]), 0
    args = [_front(info, t, d) for t, d in zip((X, mean, C, ev), in_dims[:4])]
    return torch.stack([torch.ops.gstat.pca_project(*a, whiten) for a in zip(*args)]), 0


# ---- the public functions ------------------------------------------------------------------

def _upper(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


def _refuse_grad(what, *tensors):
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"gstat.torch.{what}: out= does not support automatic differentiation "
                           f"(as torch's out= functions); call it without out=")


def _check_out(what, out, shape, like):
    if tuple(out.shape) != tuple(shape) or out.dtype != like.dtype or out.device != like.device:
        raise ValueError(f"gstat.torch.{what}: out has shape {tuple(out.shape)}, {out.dtype} on "
                         f"{out.device}; expected {tuple(shape)}, {like.dtype} on {like.device}")


def eigh(A, UPLO="L", *, broadening=0.0, out=None):
    """Eigenvalues (ascending) and eigenvectors of a batch of symmetric matrices.

    As ``torch.linalg.eigh`` (only the triangle named by `UPLO` is read;
    eigenvectors are columns, signed so that the entry of largest magnitude is
    positive), differentiable, with finite gradients at degenerate eigenvalues
    (see the module's documentation and `broadening`). On CUDA, orders up
    to 64 never synchronise with the host (CUDA graph capture works) and a
    failed element gives NaN outputs instead of an exception: ``eigh_ex``
    reports which.

    Parameters
    ----------
    A : Tensor (..., n, n), float32, float64 or bfloat16, CPU or CUDA
    UPLO : {'L', 'U'}
    broadening : float, optional
        0 (default): exact 1/(w_j - w_i) in the backward, pairs within a
        degenerate block dropped. eps > 0: (w_j - w_i) / ((w_j - w_i)^2 + eps).
    out : tuple (w, v) of tensors, optional
        Written in place; not differentiable.

    Returns
    -------
    EighResult(eigenvalues, eigenvectors)

    Examples
    --------
    Forward mode: the eigenvalues' tangent along dA is diag(V^T dA V).

    >>> import torch, gstat.torch as gt
    >>> A = torch.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    >>> dA = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    >>> w, dw = torch.func.jvp(lambda a: gt.eigh(a).eigenvalues, (A,), (dA,))
    >>> w.tolist(), dw.tolist()
    ([1.0, 3.0], [0.5, 0.5])
    """
    _check("eigh", A)
    upper = _upper(UPLO)
    if out is None:
        if _transformed():
            return EighResult(*_EighFn.apply(A, upper, float(broadening)))
        if _plain_eager(A):
            if _records(A):
                return EighResult(*_EagerEighFn.apply(A, upper, float(broadening)))
            return EighResult(*_eigh_now(A, upper))
        return EighResult(*torch.ops.gstat.eigh(A, upper, float(broadening)))
    w, v = out
    _refuse_grad("eigh", A)
    _check_out("eigh", w, A.shape[:-1], A)
    _check_out("eigh", v, A.shape, A)
    torch.ops.gstat.eigh_out(A, upper, w, v)
    return EighResult(w, v)


def eigh_ex(A, UPLO="L", *, broadening=0.0):
    """``eigh`` that reports failures in a tensor instead of raising, as
    ``torch.linalg.cholesky_ex``: ``(eigenvalues, eigenvectors, info)``.

    On CUDA, for orders up to 64, nothing is read back to the host: the call
    only queues work on the current stream (CUDA graph capture works), and a
    failed element has NaN outputs and ``info`` 1 (did not converge) or 2
    (a NaN/Inf in its input or outputs), 0 otherwise; check ``info`` when the
    results are used, e.g. ``info.any()``, which synchronizes. Elsewhere (CPU,
    larger orders) it is ``eigh`` with ``info`` all 0: failures raise there.
    Differentiable in the eigenvalues and eigenvectors, as ``eigh``.
    """
    _check("eigh_ex", A)
    if _transformed():  # its tangents would be silently dropped (see the module's notes)
        raise NotImplementedError("gstat.torch.eigh_ex: no forward-mode AD or torch.func "
                                  "transforms; use gstat.torch.eigh there")
    w, v, info = torch.ops.gstat.eigh_ex(A, _upper(UPLO), float(broadening))
    return EighExResult(w, v, info)


def eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) of a batch of symmetric matrices, as
    ``torch.linalg.eigvalsh``; differentiable (the backward needs the
    eigenvectors, so a call that records a gradient computes them)."""
    _check("eigvalsh", A)
    upper = _upper(UPLO)
    if out is not None:
        _refuse_grad("eigvalsh", A)
        _check_out("eigvalsh", out, A.shape[:-1], A)
        torch.ops.gstat.eigvalsh_out(A, upper, out)
        return out
    if _transformed():
        return _EighFn.apply(A, upper, 0.0)[0]
    grad = _records(A)
    if _plain_eager(A):
        return _EagerEighFn.apply(A, upper, 0.0)[0] if grad else _eigvalsh_now(A, upper)
    if grad:
        return torch.ops.gstat.eigh(A, upper, 0.0)[0]
    return torch.ops.gstat.eigvalsh(A, upper)


def cholesky(A, upper=False, *, out=None):
    """Cholesky factor of a batch of symmetric positive definite matrices, as
    ``torch.linalg.cholesky``: lower L with A = L L^T (upper U with A = U^T U);
    only that triangle of A is read, the other strict triangle is zero.
    Raises gstat.LinAlgError naming the first element that is not positive
    definite."""
    _check("cholesky", A)
    if out is None:
        if _transformed():
            return _CholeskyFn.apply(A, bool(upper))
        if _plain_eager(A):
            if _records(A):
                return _EagerCholeskyFn.apply(A, bool(upper))
            return _cholesky_now(A, bool(upper))
        return torch.ops.gstat.cholesky(A, bool(upper))
    _refuse_grad("cholesky", A)
    _check_out("cholesky", out, A.shape, A)
    torch.ops.gstat.cholesky_out(A, bool(upper), out)
    return out


def _broadcast(what, A, B):
    if B.dim() < 2:
        raise ValueError(f"gstat.torch.{what}: B must have shape (..., n, k)")
    batch = torch.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    if A.shape[:-2] != batch:
        A = A.expand(*batch, *A.shape[-2:]).contiguous()
    if B.shape[:-2] != batch:
        B = B.expand(*batch, *B.shape[-2:]).contiguous()
    return A, B


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B, given A's Cholesky factor L: ``torch.cholesky_solve``'s
    argument order (B first). Batch dimensions broadcast."""
    _check("cholesky_solve", B, L)
    L, B = _broadcast("cholesky_solve", L, B)
    if out is None:
        return _chol_solve(B, L, bool(upper))
    _refuse_grad("cholesky_solve", B, L)
    _check_out("cholesky_solve", out, B.shape, B)
    torch.ops.gstat.cholesky_solve_out(B, L, bool(upper), out)
    return out


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left) or X A = B (left=False), A triangular, as
    ``torch.linalg.solve_triangular``. Batch dimensions broadcast."""
    _check("solve_triangular", A, B)
    A, B = _broadcast("solve_triangular", A, B)
    upper, unit = bool(upper), bool(unitriangular)
    if out is None:
        if left:
            return _tri_solve(A, B, upper, False, unit)
        # X A = B  <=>  A^T X^T = B^T
        return _tri_solve(A, B.mT, upper, True, unit).mT
    _refuse_grad("solve_triangular", A, B)
    _check_out("solve_triangular", out, B.shape, B)
    if left:
        torch.ops.gstat.solve_triangular_out(A, B, upper, False, unit, out)
    else:
        torch.ops.gstat.solve_triangular_out(A, B.mT, upper, True, unit, out.mT)
    return out


def pca_project(X, mean, components, explained_variance=None, *, whiten=False, out=None):
    """PCA scores ``(X - mean) @ components.T``, divided by
    ``sqrt(explained_variance)`` when `whiten`; differentiable in all four.

    X is (m, p), mean (p,), components (k, p), explained_variance (k,). CPU
    tensors run gstat's fused centred projection; on CUDA one GEMM in torch
    (gstat's device projection reads its parameters from the host).
    """
    if explained_variance is None:
        if whiten:
            raise ValueError("gstat.torch.pca_project: whiten needs explained_variance")
        explained_variance = components.new_ones(components.shape[0])
    _check("pca_project", X, mean, components, explained_variance)
    if X.dim() != 2 or components.dim() != 2 or mean.shape != X.shape[-1:] or \
            components.shape[1] != X.shape[1] or explained_variance.shape != components.shape[:1]:
        raise ValueError(f"gstat.torch.pca_project: inconsistent shapes X {tuple(X.shape)}, mean "
                         f"{tuple(mean.shape)}, components {tuple(components.shape)}, "
                         f"explained_variance {tuple(explained_variance.shape)}")
    if out is None:
        if _transformed():
            return _ProjectFn.apply(X, mean, components, explained_variance, bool(whiten))
        return torch.ops.gstat.pca_project(X, mean, components, explained_variance, bool(whiten))
    _refuse_grad("pca_project", X, mean, components, explained_variance)
    _check_out("pca_project", out, (X.shape[0], components.shape[0]), X)
    torch.ops.gstat.pca_project_out(X, mean, components, explained_variance, bool(whiten), out)
    return out
