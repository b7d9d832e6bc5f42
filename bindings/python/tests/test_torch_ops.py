"""gstat.torch: registered, differentiable, torch.compile-ready operators.

Skipped as a whole (visibly) without torch; the CUDA tests skip visibly
without a GPU."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import gstat  # noqa: E402
import gstat.torch as gt  # noqa: E402

needs_cuda = pytest.mark.skipif(not (torch.cuda.is_available() and gstat.cuda_available()),
                                reason="no CUDA GPU (or no gstat CUDA backend) here")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]


def sym(b, n, dtype=torch.float64, device="cpu", seed=0, spd=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, n, generator=g, dtype=torch.float64)
    a = x @ x.mT + n * torch.eye(n, dtype=torch.float64) if spd else (x + x.mT) / 2
    return a.to(device=device, dtype=dtype)


def with_spectrum(w, seed=0):
    """A symmetric matrix with eigenvalues w (a repeated value repeats)."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(len(w), len(w), generator=g, dtype=torch.float64))
    return q @ torch.diag(torch.tensor(w, dtype=torch.float64)) @ q.mT


def symmetrized(f):
    """f of a symmetric matrix made from any square input: the gradient of
    eigh/cholesky is defined on symmetric matrices, as torch.linalg's."""
    return lambda x, *rest: f(x + x.mT, *rest)


# ---- forward results ------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(device, dtype, uplo):
    a = sym(8, 12, dtype, device)
    ref = a.double()
    w, v = gt.eigh(a, uplo)
    assert w.dtype == dtype and v.dtype == dtype and w.device == a.device
    wr, vr = torch.linalg.eigh(ref, UPLO=uplo)
    tol = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 5e-2}[dtype]
    torch.testing.assert_close(w.double(), wr, rtol=tol, atol=tol * 10)
    # vectors up to sign: |<v_j, vr_j>| = 1 (eigenvalues are distinct here)
    dots = (v.double() * vr).sum(-2).abs()
    torch.testing.assert_close(dots, torch.ones_like(dots), rtol=0, atol=tol * 10)
    # gstat's sign rule: the entry of largest magnitude is positive
    idx = v.double().abs().argmax(-2, keepdim=True)
    assert (v.double().gather(-2, idx) > 0).all()
    torch.testing.assert_close(gt.eigvalsh(a, uplo).double(), w.double())


def test_eigh_ex_and_column_major_vectors():
    a = sym(3, 7)
    w, v = gt.eigh(a)
    assert v.mT.is_contiguous()  # column-major, as torch.linalg.eigh's
    we, ve, info = gt.eigh_ex(a)
    assert info.dtype == torch.int32 and info.shape == (3,) and not info.any()
    torch.testing.assert_close((we, ve), (w, v), rtol=0, atol=0)
    x = a.clone().requires_grad_()
    g1 = torch.autograd.grad(_gauge_invariant(*gt.eigh_ex(x)[:2]), x)[0]
    g2 = torch.autograd.grad(_gauge_invariant(*gt.eigh(x)), x)[0]
    torch.testing.assert_close(g1, g2)
    assert gt.eigh_ex(a[0]).info.shape == ()
    with pytest.raises(NotImplementedError, match="eigh_ex"):
        torch.func.jvp(lambda x: gt.eigh_ex(x).eigenvalues, (a,), (a,))


@pytest.mark.parametrize("broadening", [0.0, 1e-3])
@pytest.mark.parametrize("spectrum", [None, [1.0, 1.0, 1.0, 2.0, 5.0, 5.0]])
def test_plain_backward_equals_the_differentiable_one(broadening, spectrum):
    # the in-place backward used when no second derivative is asked gives the
    # differentiable formula's values, degenerate blocks included
    a = sym(5, 6) if spectrum is None else with_spectrum(spectrum).expand(5, 6, 6)
    w, v = gt.eigh(a)
    gw, gv = torch.randn_like(w), torch.randn_like(v)
    for g in ((gw, gv), (None, gv)):
        ref = gt._eigh_backward(w, v, *g, broadening)  # grad mode on: the differentiable one
        with torch.no_grad():
            got = gt._eigh_backward(w, v, *g, broadening)
        torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
        assert torch.isfinite(got).all()


def test_eigh_reads_one_triangle():
    a = sym(4, 6)
    garbage = a.triu(1) * 0 + torch.randn(4, 6, 6, dtype=torch.float64).triu(1)
    w, _ = gt.eigh(a.tril() + garbage)
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_and_solves_match_torch(device, dtype, upper):
    a = sym(6, 10, dtype, device, spd=True)
    L = gt.cholesky(a, upper)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(L, torch.linalg.cholesky(a, upper=upper), rtol=tol, atol=tol)
    b = torch.randn(6, 10, 3, dtype=dtype, device=device)
    torch.testing.assert_close(gt.cholesky_solve(b, L, upper),
                               torch.cholesky_solve(b, L, upper=upper), rtol=tol * 10, atol=tol * 10)
    for left in (True, False):
        bb = b if left else b.mT
        for unit in (False, True):
            x = gt.solve_triangular(L, bb, upper=upper, left=left, unitriangular=unit)
            xr = torch.linalg.solve_triangular(L, bb, upper=upper, left=left, unitriangular=unit)
            torch.testing.assert_close(x, xr, rtol=tol * 10, atol=tol * 10)


def test_solves_broadcast_batch():
    L = torch.linalg.cholesky(sym(1, 5, spd=True))
    b = torch.randn(4, 5, 2, dtype=torch.float64)
    torch.testing.assert_close(gt.cholesky_solve(b, L), torch.cholesky_solve(b, L))


@pytest.mark.parametrize("whiten", [False, True])
def test_pca_project_matches_formula(whiten):
    X = torch.randn(50, 7, dtype=torch.float64)
    mean = X.mean(0)
    ev, comp = torch.linalg.eigh(torch.cov(X.T))
    comp, ev = comp.mT[-3:].contiguous(), ev[-3:].contiguous()
    y = gt.pca_project(X, mean, comp, ev, whiten=whiten)
    ref = (X - mean) @ comp.T
    if whiten:
        ref = ref / ev.sqrt()
    torch.testing.assert_close(y, ref)


# ---- out= -----------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_out_variants_write_in_place(device):
    a = sym(5, 8, torch.float32, device, spd=True)
    w, v = torch.full((5, 8), float("nan"), device=device), torch.full((5, 8, 8), float("nan"), device=device)
    rw, rv = gt.eigh(a, out=(w, v))
    assert rw is w and rv is v
    wr, vr = gt.eigh(a)
    torch.testing.assert_close(w, wr)
    torch.testing.assert_close(v, vr)
    w2 = torch.full_like(w, float("nan"))
    assert gt.eigvalsh(a, out=w2) is w2
    torch.testing.assert_close(w2, wr)
    L = torch.full_like(a, float("nan"))
    assert gt.cholesky(a, out=L) is L
    torch.testing.assert_close(L, gt.cholesky(a))
    b = torch.randn(5, 8, 2, device=device)
    x = torch.full_like(b, float("nan"))
    assert gt.cholesky_solve(b, L, out=x) is x
    torch.testing.assert_close(x, gt.cholesky_solve(b, L))
    for left in (True, False):
        bb = b if left else b.mT.contiguous()
        x = torch.full_like(bb, float("nan"))
        assert gt.solve_triangular(L, bb, upper=False, left=left, out=x) is x
        torch.testing.assert_close(x, gt.solve_triangular(L, bb, upper=False, left=left))
    X = torch.randn(20, 8, device=device)
    y = torch.full((20, 3), float("nan"), device=device)
    assert gt.pca_project(X, X.mean(0), v[0, :, :3].mT.contiguous(), out=y) is y
    torch.testing.assert_close(y, gt.pca_project(X, X.mean(0), v[0, :, :3].mT.contiguous()))


def test_out_refuses_autograd_and_bad_shapes():
    a = sym(2, 4).requires_grad_()
    with pytest.raises(RuntimeError, match="out="):
        gt.eigh(a, out=(torch.empty(2, 4, dtype=torch.float64), torch.empty(2, 4, 4, dtype=torch.float64)))
    with pytest.raises(ValueError, match="out has shape"):
        gt.cholesky(a.detach(), out=torch.empty(2, 4, 5, dtype=torch.float64))


def test_bad_dtype_refused():
    with pytest.raises(TypeError, match="not supported"):
        gt.eigh(torch.eye(3, dtype=torch.float16))
    with pytest.raises(ValueError, match="one dtype"):
        gt.cholesky_solve(torch.ones(3, 1), torch.eye(3, dtype=torch.float64))


# ---- gradients ------------------------------------------------------------------------------

def _gauge_invariant(w, v):
    # functions of V diag(f(w)) V^T and of w: unchanged by eigenvector signs
    m = v @ torch.diag_embed(torch.sin(w)) @ v.mT
    return (m * m.flip(-1)).sum() + (w ** 3).sum() + (v ** 4).sum()


def test_gradcheck_eigh():
    a = sym(2, 5).requires_grad_()
    f = symmetrized(lambda x: _gauge_invariant(*gt.eigh(x)))
    assert torch.autograd.gradcheck(f, (a,))
    assert torch.autograd.gradgradcheck(f, (a,))
    g = symmetrized(lambda x: gt.eigvalsh(x, "U"))
    assert torch.autograd.gradcheck(g, (a,))
    assert torch.autograd.gradgradcheck(g, (a,))


def test_eigh_gradient_equals_torch():
    a = sym(3, 6).requires_grad_()
    g1, = torch.autograd.grad(_gauge_invariant(*gt.eigh(a)), a)
    g2, = torch.autograd.grad(_gauge_invariant(*torch.linalg.eigh(a)), a)
    torch.testing.assert_close(g1, g2)


def test_eager_calls_equal_the_registered_operators():
    # plain eager calls run the operator's work directly (an autograd.Function
    # when A requires grad); values, vectors and gradients equal the registered
    # operator's, which a dispatch mode (as a tracer's) still reaches
    from torch.utils._python_dispatch import TorchDispatchMode

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    a = sym(3, 6).requires_grad_()
    w1, v1 = gt.eigh(a)
    g1, = torch.autograd.grad(_gauge_invariant(w1, v1), a)
    w2, v2 = torch.ops.gstat.eigh(a, False, 0.0)
    g2, = torch.autograd.grad(_gauge_invariant(w2, v2), a)
    torch.testing.assert_close((w1, v1, g1), (w2, v2, g2), rtol=0, atol=0)
    e1 = gt.eigvalsh(a)
    torch.testing.assert_close(torch.autograd.grad(e1.square().sum(), a),
                               torch.autograd.grad(torch.ops.gstat.eigh(a, False, 0.0)[0]
                                                   .square().sum(), a), rtol=0, atol=0)
    spd = (a @ a.mT + 6 * torch.eye(6, dtype=a.dtype)).detach().requires_grad_()
    for upper in (False, True):
        L1, L2 = gt.cholesky(spd, upper), torch.ops.gstat.cholesky(spd, upper)
        torch.testing.assert_close((L1, *torch.autograd.grad(L1.sin().sum(), spd)),
                                   (L2, *torch.autograd.grad(L2.sin().sum(), spd)), rtol=0, atol=0)
    L = torch.linalg.cholesky(spd.detach()).requires_grad_()
    B = torch.randn(3, 6, 2, dtype=a.dtype, requires_grad=True)
    for upper in (False, True):
        F = (L.mT if upper else L).detach().requires_grad_()
        pairs = ((gt.cholesky_solve(B, F, upper), torch.ops.gstat.cholesky_solve(B, F, upper)),
                 (gt.solve_triangular(F, B, upper=upper),
                  torch.ops.gstat.solve_triangular(F, B, upper, False, False)))
        for X1, X2 in pairs:
            torch.testing.assert_close(
                (X1, *torch.autograd.grad(X1.sin().sum(), (B, F))),
                (X2, *torch.autograd.grad(X2.sin().sum(), (B, F))), rtol=0, atol=0)
    for call, name in ((lambda x: gt.eigh(x), "gstat.eigh"),
                       (lambda x: gt.eigvalsh(x), "gstat.eigvalsh"),
                       (lambda x: gt.cholesky(x @ x.mT + 6 * torch.eye(6)), "gstat.cholesky"),
                       (lambda x: gt.solve_triangular(x.tril() + 6 * torch.eye(6), x, upper=False),
                        "gstat.solve_triangular")):
        with Seen() as seen:
            call(a.detach())
        assert any(name in op for op in seen.ops), seen.ops


@pytest.mark.parametrize("upper", [False, True])
def test_gradcheck_cholesky_and_solves(upper):
    # small shapes and gradgradcheck's fast mode (random projections of the
    # Jacobian): the 2-core CI machine runs these in seconds
    a = sym(2, 3, spd=True).requires_grad_()
    f = symmetrized(lambda x: gt.cholesky(x, upper))
    assert torch.autograd.gradcheck(f, (a,))
    assert torch.autograd.gradgradcheck(f, (a,), fast_mode=True)
    L = torch.linalg.cholesky(sym(2, 3, spd=True, seed=1), upper=upper).requires_grad_()
    B = torch.randn(2, 3, 2, dtype=torch.float64, requires_grad=True)
    h = lambda L, B: gt.cholesky_solve(B, L, upper)  # noqa: E731
    assert torch.autograd.gradcheck(h, (L, B))
    assert torch.autograd.gradgradcheck(h, (L, B), fast_mode=True)
    for left in (True, False):
        for unit in (False, True):
            Bx = B if left else B.detach().mT.contiguous().requires_grad_()
            s = lambda L, B: gt.solve_triangular(L, B, upper=upper, left=left,  # noqa: E731
                                                 unitriangular=unit)
            assert torch.autograd.gradcheck(s, (L, Bx))
            assert torch.autograd.gradgradcheck(s, (L, Bx), fast_mode=True)


def test_gradcheck_through_chained_ops():
    # the whitening pattern: L = chol(C), y = L^-1 x
    a = sym(2, 4, spd=True).requires_grad_()
    x = torch.randn(2, 4, 2, dtype=torch.float64, requires_grad=True)
    f = lambda a, x: gt.solve_triangular(gt.cholesky(a + a.mT), x, upper=False)  # noqa: E731
    assert torch.autograd.gradcheck(f, (a, x))


@pytest.mark.parametrize("whiten", [False, True])
def test_gradcheck_pca_project(whiten):
    X = torch.randn(9, 5, dtype=torch.float64, requires_grad=True)
    mean = torch.randn(5, dtype=torch.float64, requires_grad=True)
    comp = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    ev = (torch.rand(3, dtype=torch.float64) + 0.5).requires_grad_()
    f = lambda *t: gt.pca_project(*t, whiten=whiten)  # noqa: E731
    assert torch.autograd.gradcheck(f, (X, mean, comp, ev))
    assert torch.autograd.gradgradcheck(f, (X, mean, comp, ev))


# ---- forward mode and torch.func transforms --------------------------------------------------

def _fwd_cases(upper=False):
    """(gstat function, torch reference, float64 inputs) for every operator:
    symmetric inputs with well separated eigenvalues for eigh."""
    a = with_spectrum([-2.0, -0.5, 1.0, 2.5, 4.0]).unsqueeze(0)
    spd = sym(2, 4, spd=True)
    L = torch.linalg.cholesky(sym(2, 4, spd=True, seed=1), upper=upper)
    B = torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    X, mean, comp = (torch.randn(*s, dtype=torch.float64) for s in ((7, 4), (4,), (2, 4)))
    ev = torch.tensor([2.0, 0.7], dtype=torch.float64)
    return {
        "eigh": (symmetrized(lambda x: _gauge_invariant(*gt.eigh(x))),
                 symmetrized(lambda x: _gauge_invariant(*torch.linalg.eigh(x))), (a,)),
        "eigvalsh": (symmetrized(lambda x: gt.eigvalsh(x, "U")),
                     symmetrized(torch.linalg.eigvalsh), (a,)),
        "cholesky": (symmetrized(lambda x: gt.cholesky(x, upper)),
                     symmetrized(lambda x: torch.linalg.cholesky(x, upper=upper)), (spd,)),
        "cholesky_solve": (lambda L, B: gt.cholesky_solve(B, L, upper),
                           lambda L, B: torch.cholesky_solve(B, L, upper), (L, B)),
        "solve_triangular": (
            lambda L, B: gt.solve_triangular(L, B, upper=upper, unitriangular=True),
            lambda L, B: torch.linalg.solve_triangular(L, B, upper=upper, unitriangular=True),
            (L, B)),
        "solve_triangular_right": (
            lambda L, B: gt.solve_triangular(L, B.mT, upper=upper, left=False),
            lambda L, B: torch.linalg.solve_triangular(L, B.mT, upper=upper, left=False),
            (L, B)),
        "pca_project": (lambda *t: gt.pca_project(*t, whiten=True),
                        lambda X, m, c, e: (X - m) @ c.mT / e.sqrt(), (X, mean, comp, ev)),
    }


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("name", list(_fwd_cases()))
def test_gradcheck_forward_ad(name, upper):
    f, _, inputs = _fwd_cases(upper)[name]
    inputs = tuple(t.clone().requires_grad_() for t in inputs)
    assert torch.autograd.gradcheck(f, inputs, check_forward_ad=True)
    # forward over reverse (hessian-vector products) as well as reverse over reverse
    assert torch.autograd.gradgradcheck(f, inputs, check_fwd_over_rev=True, fast_mode=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(_fwd_cases()))
def test_jvp_jacfwd_match_torch_linalg(name, device):
    """torch.func.jvp, jacfwd, jacrev, vmap over jvp and forward_ad dual
    tensors give torch.linalg's values. Before, a dual level dropped the
    tangents silently (zero) and jacrev refused the operators."""
    f, ref, inputs = _fwd_cases()[name]
    g = torch.Generator().manual_seed(5)
    tangents = tuple(torch.randn(t.shape, dtype=t.dtype, generator=g).to(device) for t in inputs)
    inputs = tuple(t.to(device) for t in inputs)
    if name == "cholesky_solve":
        # both read only L's triangle, but torch's JVP also uses the other one
        tangents = (tangents[0].tril(), tangents[1])
    out, tan = torch.func.jvp(f, inputs, tangents)
    out_r, tan_r = torch.func.jvp(ref, inputs, tangents)
    torch.testing.assert_close(out, out_r)
    torch.testing.assert_close(tan, tan_r)
    assert tan.abs().max() > 0
    argnums = tuple(range(len(inputs)))
    fwd = torch.func.jacfwd(f, argnums=argnums)(*inputs)
    torch.testing.assert_close(fwd, torch.func.jacrev(f, argnums=argnums)(*inputs))
    fwd_ref = torch.func.jacfwd(ref, argnums=argnums)(*inputs)
    if name == "cholesky_solve":  # compared on the triangle that is read (above)
        tri = torch.ones(4, 4, dtype=torch.float64, device=device).tril()
        fwd, fwd_ref = (fwd[0] * tri, fwd[1]), (fwd_ref[0] * tri, fwd_ref[1])
    torch.testing.assert_close(fwd, fwd_ref)
    stacked = tuple(torch.stack([t, -2 * t]) for t in tangents)
    many = torch.vmap(lambda *ts: torch.func.jvp(f, inputs, ts)[1])(*stacked)
    torch.testing.assert_close(many, torch.stack([tan, -2 * tan]))
    fwAD = torch.autograd.forward_ad
    with fwAD.dual_level():
        dual = f(*(fwAD.make_dual(x, t) for x, t in zip(inputs, tangents)))
        torch.testing.assert_close(fwAD.unpack_dual(dual).tangent, tan)


def test_vmap_batching_rules():
    """vmap moves its dimension onto the operators' batch (no per-element
    fallback, which warns of a performance drop); unbatched operands of the
    solves and batched PCA parameters are expanded."""
    import warnings
    a, L = sym(3, 4), torch.linalg.cholesky(sym(3, 4, spd=True))
    B = torch.randn(3, 4, 2, dtype=torch.float64)
    X, mean, comp = torch.randn(3, 6, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64), \
        torch.randn(3, 2, 4, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*performance drop.*")
        torch.testing.assert_close(torch.vmap(gt.eigvalsh)(a), torch.linalg.eigvalsh(a))
        torch.testing.assert_close(torch.vmap(lambda b: gt.cholesky_solve(b, L[0]))(B),
                                   torch.cholesky_solve(B, L[0].expand(3, 4, 4)))
        torch.testing.assert_close(
            torch.vmap(lambda l: gt.solve_triangular(l, B[0], upper=False))(L),
            torch.linalg.solve_triangular(L, B[0].expand(3, 4, 2), upper=False))
        torch.testing.assert_close(torch.vmap(lambda x: gt.pca_project(x, mean, comp[0]))(X),
                                   (X - mean) @ comp[0].mT)
        torch.testing.assert_close(torch.vmap(lambda x, c: gt.pca_project(x, mean, c))(X, comp),
                                   (X - mean) @ comp.mT)


def test_eigh_jvp_at_degenerate_eigenvalues_is_finite():
    # within a degenerate block the eigenvector tangent drops the 1/0 pairs, as the backward
    a = with_spectrum([1.0, 1.0, 1.0, 2.0, 3.0])
    t = sym(1, 5, seed=3)[0]
    (w, v), (dw, dv) = torch.func.jvp(lambda x: tuple(gt.eigh(x)), (a,), (t,))
    assert torch.isfinite(dv).all()
    # the eigenvalue tangent of the whole block: its trace is that of V^T t V over the block
    m = v.mT @ t @ v
    torch.testing.assert_close(dw.sum(), m.diagonal().sum())
    _, (_, db) = torch.func.jvp(lambda x: tuple(gt.eigh(x, broadening=1e-3)), (a,), (t,))
    assert torch.isfinite(db).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_in_low_precision(dtype):
    a = sym(4, 6, dtype).requires_grad_()
    w, v = gt.eigh(a)
    _gauge_invariant(w.float(), v.float()).backward()
    assert a.grad.dtype == dtype and torch.isfinite(a.grad).all()


# ---- degenerate eigenvalues -----------------------------------------------------------------

def _subspace_loss(w, v, W, k):
    # depends on the vectors only through the projector on the first k
    # (whole degenerate blocks): invariant under rotations within any block
    p = v[..., :k] @ v[..., :k].mT
    return (p * W).sum() + (w ** 3).sum()


def _subspace_gradient(a, W, k):
    """The analytic symmetric gradient of _subspace_loss, written
    independently: dP = sum_{i<k<=j} (v_j v_i^T + v_i v_j^T) v_j^T dA v_i / (w_i - w_j),
    whose gaps are all non-zero when the first k are whole blocks."""
    w, v = torch.linalg.eigh(a)
    S = W + W.mT
    g = v @ torch.diag(3 * w ** 2) @ v.mT
    for i in range(k):
        for j in range(k, len(w)):
            c = v[:, j] @ S @ v[:, i] / (w[i] - w[j])
            g = g + c * torch.outer(v[:, j], v[:, i])
    return (g + g.mT) / 2


@pytest.mark.parametrize("spectrum,k", [([1.0] * 5, 5), ([1.0, 1.0, 1.0, 2.0, 3.0], 3),
                                        ([-2.0, 0.5, 0.5, 4.0, 4.0], 3), ([0.5, 0.5, 4.0, 4.0, 4.0], 2)])
def test_degenerate_gradient_is_finite_and_exact(spectrum, k):
    n = len(spectrum)
    a0 = torch.eye(n, dtype=torch.float64) if k == n else with_spectrum(spectrum)
    W = torch.randn(n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    a = a0.clone().requires_grad_()
    g, = torch.autograd.grad(_subspace_loss(*gt.eigh(a), W, k), a)
    ref = _subspace_gradient(a0, W, k)
    torch.testing.assert_close(g, ref, rtol=1e-7, atol=1e-7)
    # torch.linalg.eigh divides by the (rounded) zero gaps (pytorch issues
    # 47599, 76531): NaN/Inf, or noise amplified by 1/1e-16
    c = a0.clone().requires_grad_()
    gt_, = torch.autograd.grad(_subspace_loss(*torch.linalg.eigh(c), W, k), c)
    assert not torch.isfinite(gt_).all() or (gt_ - ref).abs().max() > 1e-3


def test_broadening_gives_finite_gradients_for_non_invariant_losses():
    a0 = with_spectrum([1.0, 1.0 + 1e-13, 2.0, 3.0])
    a = a0.clone().requires_grad_()
    w, v = gt.eigh(a, broadening=1e-6)
    (v[:, 0] ** 4).sum().backward()  # depends on the vector chosen in the block
    assert torch.isfinite(a.grad).all()
    # far from degeneracy the broadened gradient tends to the exact one
    s = sym(1, 5).requires_grad_()
    g0, = torch.autograd.grad(_gauge_invariant(*gt.eigh(s)), s)
    g1, = torch.autograd.grad(_gauge_invariant(*gt.eigh(s, broadening=1e-12)), s)
    torch.testing.assert_close(g0, g1, rtol=1e-6, atol=1e-8)
    g2, = torch.autograd.grad(_gauge_invariant(*gt.eigh(s, broadening=10.0)), s)
    assert not torch.allclose(g0, g2)  # the parameter is used


# ---- torch.compile --------------------------------------------------------------------------

def _compiled_fns():
    def f_eigh(x):
        w, v = gt.eigh(x)
        return (v @ torch.diag_embed(w.clamp_min(0).sqrt()) @ v.mT).sum()

    def f_eigvalsh(x):
        return gt.eigvalsh(x).sum()

    def f_chol(x):
        L = gt.cholesky(x)
        y = gt.solve_triangular(L, x[..., :2], upper=False)
        return gt.cholesky_solve(y, L).sum()

    def f_project(x):
        flat = x.reshape(-1, x.shape[-1])
        comp = flat[:3]
        return gt.pca_project(flat, flat.mean(0), comp, comp.norm(dim=1) + 1, whiten=True).sum()

    def f_eigh_ex(x):
        w, v, info = gt.eigh_ex(x)
        return (v * v * w.unsqueeze(-2)).sum() + info.sum()

    return {"eigh": f_eigh, "eigvalsh": f_eigvalsh, "cholesky+solves": f_chol,
            "pca_project": f_project, "eigh_ex": f_eigh_ex}


@pytest.mark.parametrize("name", list(_compiled_fns()))
def test_compile_no_graph_breaks_no_recompiles(name):
    import torch._dynamo as dynamo

    f = _compiled_fns()[name]
    dynamo.reset()
    assert dynamo.explain(f)(sym(16, 6, spd=True)).graph_break_count == 0
    dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    cf = torch.compile(f, backend=counting, dynamic=True, fullgraph=True)
    for b in (16, 32, 64, 128):
        x = sym(b, 6, spd=True, seed=b)
        torch.testing.assert_close(cf(x), f(x))
    assert len(graphs) == 1


def test_compile_training_step_aot_eager():
    # forward and backward through the registered autograd in one compiled graph
    def step(x):
        w, v = gt.eigh(x)
        return (v @ torch.diag_embed(w.abs().add(1).rsqrt()) @ v.mT).square().sum()

    torch._dynamo.reset()
    cf = torch.compile(step, backend="aot_eager", dynamic=True, fullgraph=True)
    for b in (16, 32):
        x = sym(b, 5, seed=b).requires_grad_()
        g1, = torch.autograd.grad(cf(x), x)
        g2, = torch.autograd.grad(step(x), x)
        torch.testing.assert_close(g1, g2)


def test_import_gstat_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, gstat; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


class _DlpackLinalg:
    """Stands in for gstat.linalg on the device path: exports every tensor
    through DLPack as gstat's CUDA path does (which refuses tensors that
    require grad), then computes with gstat on the CPU into `out`."""

    def __getattr__(self, name):
        real = getattr(gstat.linalg, name)

        def call(*args, out, **kw):
            outs = out if isinstance(out, tuple) else (out,)
            for t in args + outs:
                if isinstance(t, torch.Tensor):
                    t.__dlpack__()
            real(*(a.numpy() if isinstance(a, torch.Tensor) else a for a in args),
                 out=tuple(o.numpy() for o in outs) if isinstance(out, tuple) else out.numpy(), **kw)
            return out
        return call


def test_device_path_arguments_on_the_cpu(monkeypatch):
    # the CUDA branches of gstat.torch, run here with CPU tensors: what they
    # pass (detached inputs, out tensors, triangle/transpose flags) must give
    # the CPU path's values and gradients
    a = sym(3, 5, spd=True).requires_grad_()
    b = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)

    def everything():
        w, v = gt.eigh(a)
        L = gt.cholesky(a)
        U = gt.cholesky(a, upper=True)
        parts = [w, v.abs(), gt.eigvalsh(a), L, gt.cholesky_solve(b, L), gt.cholesky_solve(b, U, True),
                 gt.solve_triangular(U, b, upper=True), gt.solve_triangular(L, b.mT, upper=False, left=False),
                 gt.pca_project(b[0], b[0].mean(0), b[1, :2], b[2, :2, 0].abs() + 1, whiten=True)]
        return parts, torch.autograd.grad(sum(p.sum() for p in parts), (a, b))

    ref_parts, ref_grads = everything()
    monkeypatch.setattr(gt, "_on_device", lambda t: True)
    monkeypatch.setattr(gt, "_refuse_capture", lambda what: None)
    monkeypatch.setattr(gt, "_linalg", _DlpackLinalg())
    parts, grads = everything()
    for x, y in zip(parts + list(grads), ref_parts + list(ref_grads)):
        torch.testing.assert_close(x, y)


# ---- CUDA -----------------------------------------------------------------------------------

@needs_cuda
def test_cuda_on_a_side_stream():
    # work queued on a non-default stream: gstat must run after it, on it
    s = torch.cuda.Stream()
    a = sym(64, 32, torch.float32, "cuda", spd=True)
    s.wait_stream(torch.cuda.current_stream())  # a was made on the default stream
    with torch.cuda.stream(s):
        big = torch.randn(4096, 4096, device="cuda")
        for _ in range(4):
            big = big @ big / 4096  # keeps the stream busy
        b = a * 2 + big[:1, :1] * 0
        w, _ = gt.eigh(b)
        L = gt.cholesky(b)
    s.synchronize()
    torch.testing.assert_close(w, torch.linalg.eigvalsh(a * 2), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(L, torch.linalg.cholesky(a * 2), rtol=1e-4, atol=1e-4)


def _capturable_step(a):
    """A training-loop-like step around gstat.torch.eigh: whitening and a loss."""
    w, v = gt.eigh(a)
    white = v @ torch.diag_embed((w.clamp_min(0) + 1e-3).rsqrt()) @ v.mT
    return w * 2, white, (white @ a).diagonal(0, -2, -1).sum()


@needs_cuda
@pytest.mark.parametrize("dtype,n", [(torch.float32, 32), (torch.float64, 48),
                                     (torch.bfloat16, 16)])
def test_cuda_graph_capture_replays_eigh(dtype, n):
    static = sym(64, n, dtype, "cuda", spd=True)
    side = torch.cuda.Stream()  # warm-up on a side stream, as torch's documentation asks
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _capturable_step(static)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = _capturable_step(static)
    for seed in (1, 2):  # new inputs copied into the static one, then replayed
        x = sym(64, n, dtype, "cuda", spd=True, seed=seed)
        static.copy_(x)
        g.replay()
        torch.cuda.synchronize()
        ref = _capturable_step(x)
        torch.testing.assert_close(outs[0], ref[0], rtol=0, atol=0)  # gstat's kernel, same bits
        tol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 2e-2}[dtype]
        for got, want in zip(outs[1:], ref[1:]):  # cuBLAS may pick other kernels in a graph
            torch.testing.assert_close(got, want, rtol=tol, atol=tol)
        torch.testing.assert_close(outs[0].double() / 2, torch.linalg.eigvalsh(x.double()),
                                   rtol=5e-2 if dtype == torch.bfloat16 else 1e-4, atol=1e-2)


@needs_cuda
def test_cuda_graph_capture_eigh_ex_and_values():
    static = sym(16, 8, torch.float32, "cuda")
    gt.eigh_ex(static), gt.eigvalsh(static)  # warm-up
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        w, v, info = gt.eigh_ex(static)
        only = gt.eigvalsh(static)
    bad = sym(16, 8, torch.float32, "cuda", seed=3)
    bad[5, 2, 1] = float("nan")
    static.copy_(bad)
    g.replay()
    torch.cuda.synchronize()
    assert info[5] != 0 and (info[torch.arange(16, device="cuda") != 5] == 0).all()
    assert w[5].isnan().all() and torch.isfinite(w[:5]).all()
    torch.testing.assert_close(w[6:], torch.linalg.eigvalsh(bad[6:]), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(only[6:], w[6:])


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batches(device):
    for shape in ((0, 5, 5), (3, 0, 0)):
        a = torch.zeros(shape, device=device, requires_grad=True)
        w, v, info = gt.eigh_ex(a)
        assert w.shape == shape[:-1] and v.shape == shape and info.shape == shape[:1]
        assert not info.any()
        assert torch.autograd.grad((w.sum() + v.sum()), a)[0].shape == shape


@needs_cuda
def test_cuda_eigh_ex_reports_without_raising():
    a = sym(4, 10, torch.float64, "cuda")
    a[1, 3, 0] = float("inf")
    w, v, info = gt.eigh_ex(a)
    assert info.dtype == torch.int32 and info.shape == (4,)
    assert info.tolist()[1] != 0 and info.tolist()[0] == info.tolist()[2] == info.tolist()[3] == 0
    torch.testing.assert_close(w[2], torch.linalg.eigvalsh(a[2]))
    assert v[1].isnan().any()
    with pytest.raises(ValueError):  # above the Jacobi orders, eigh checks on the host
        gt.eigh(torch.full((2, 80, 80), float("nan"), device="cuda"))


@needs_cuda
def test_cuda_graph_capture_is_refused_clearly():
    a = sym(2, 80, torch.float32, "cuda", spd=True)  # above the orders that capture
    gt.eigh(a), gt.cholesky(a)  # warm up outside capture
    for f, what in ((gt.eigh, "eigh"), (gt.cholesky, "cholesky")):
        g = torch.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match=f"{what}: not capturable"):
            with torch.cuda.graph(g):
                f(a)
    # the backward is made of torch operations: it captures and replays
    w, v = gt.eigh(a)
    gv = torch.randn_like(v)
    ref = gt._eigh_backward(w, v, None, gv, 0.0)  # also the warm-up before capture
    torch.cuda.synchronize()
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        out = gt._eigh_backward(w, v, None, gv, 0.0)
    out.fill_(float("nan"))
    g2.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, ref)


def check_fused_backward(device, dtype, broadening, orders):
    # gstat_eigh_backward against the differentiable torch formula: random
    # and degenerate spectra, strided/expanded gradients, with and without
    # the eigenvalue term
    tol = 1e-4 if dtype == torch.float32 else 1e-11
    for n in orders:
        a = torch.cat([sym(6, n), with_spectrum([1.0] * (n // 2) + [3.0] * (n - n // 2)).expand(2, n, n)])
        w, v = gt.eigh(a.to(device=device, dtype=dtype))
        gw = torch.randn_like(w)
        for gv in (torch.randn_like(v), torch.randn_like(v).mT, torch.ones(1, 1, 1, device=device,
                                                                           dtype=dtype).expand_as(v)):
            for g in ((gw, gv), (None, gv), (gw[:1].expand_as(w), gv)):
                fused = gt._fused_backward(w, v, *g, broadening)
                assert fused is not None
                ref = gt._eigh_backward(w, v, *g, broadening)  # grad mode on: torch operations
                # relative to the largest entry: near-degenerate pairs make some entries large
                scale = 1 + ref.abs().max().item()
                torch.testing.assert_close(fused, ref, rtol=0, atol=tol * scale)
    assert gt._fused_backward(w, v.bfloat16(), None, v.bfloat16(), 0.0) is None


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("broadening", [0.0, 1e-3])
def test_cuda_fused_backward_equals_torch_formula(dtype, broadening):
    check_fused_backward("cuda", dtype, broadening, (1, 7, 32))  # one kernel, orders <= 32


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("broadening", [0.0, 1e-3])
def test_cpu_fused_backward_equals_torch_formula(dtype, broadening):
    # one gstat call on the CPU, any order
    check_fused_backward("cpu", dtype, broadening, (1, 7, 32, 70))
    # a plain backward (grad mode off) takes it; a fake tensor of a trace does not
    w, v = gt.eigh(sym(2, 5, dtype))
    with torch.no_grad():
        torch.testing.assert_close(gt._eigh_backward(w, v, None, v, broadening),
                                   gt._fused_backward(w, v, None, v, broadening), rtol=0, atol=0)
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fw, fv = mode.from_tensor(w), mode.from_tensor(v)
        assert gt._fused_backward(fw, fv, None, fv, broadening) is None
    # nor a negative-bit view (its data are the negation), nor a dispatch
    # mode's trace (make_fx with real tensors would record an empty result)
    assert gt._fused_backward(w, v, None, torch._neg_view(v), broadening) is None

    class Passthrough(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passthrough():
        assert gt._fused_backward(w, v, None, v, broadening) is None


@needs_cuda
def test_cuda_fwd_bwd_captured():
    # a whole step, forward and backward through gstat.torch.eigh, in one graph
    a = sym(32, 24, torch.float32, "cuda").requires_grad_()
    cw = torch.randn(32, 24, device="cuda")

    def step():
        w, v = gt.eigh(a)
        return torch.autograd.grad((w * cw).sum() + (v * v * cw.unsqueeze(-1)).sum(), a)[0]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        grad = step()
    with torch.no_grad():
        a.copy_(sym(32, 24, torch.float32, "cuda", seed=4))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(grad, step(), rtol=1e-5, atol=1e-5)


@needs_cuda
def test_gradcheck_cuda():
    a = sym(2, 5, device="cuda").requires_grad_()
    f = symmetrized(lambda x: _gauge_invariant(*gt.eigh(x)))
    assert torch.autograd.gradcheck(f, (a,))
    assert torch.autograd.gradgradcheck(f, (a,))
    s = sym(2, 4, device="cuda", spd=True).requires_grad_()
    assert torch.autograd.gradcheck(symmetrized(lambda x: gt.cholesky(x)), (s,))
    L = torch.linalg.cholesky(sym(2, 4, device="cuda", spd=True, seed=1)).requires_grad_()
    B = torch.randn(2, 4, 3, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda L, B: gt.cholesky_solve(B, L), (L, B))
    assert torch.autograd.gradcheck(lambda L, B: gt.solve_triangular(L, B, upper=False), (L, B))


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_cuda_compiled_inductor(dtype):
    def f(x):
        w, v = gt.eigh(x)
        return v @ torch.diag_embed(w.clamp_min(0).sqrt()) @ v.mT

    torch._dynamo.reset()
    cf = torch.compile(f, dynamic=True)
    for b in (16, 32):
        x = sym(b, 16, dtype, "cuda", spd=True, seed=b)
        tol = 0.25 if dtype == torch.bfloat16 else None  # fused products round differently
        torch.testing.assert_close(cf(x).float(), f(x).float(), rtol=tol, atol=tol)


@needs_cuda
def test_cuda_compiled_reduce_overhead():
    # inductor's CUDA graphs must leave the gstat operators out (cudagraph_unsafe)
    # rather than capture them (they would refuse)
    def f(x):
        w, v = gt.eigh(x)
        return v @ torch.diag_embed(w.abs().sqrt()) @ v.mT

    torch._dynamo.reset()
    cf = torch.compile(f, mode="reduce-overhead")
    x = sym(32, 16, torch.float32, "cuda", spd=True)
    for _ in range(3):
        torch.testing.assert_close(cf(x), f(x), rtol=1e-4, atol=1e-4)
