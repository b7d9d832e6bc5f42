"""gstat.jax: gstat's eigh, Cholesky and solves as JAX operations through
XLA's FFI, checked against jax.numpy.linalg / jax.scipy.linalg on the same
inputs under jit, vmap and grad. Skipped, visibly, without JAX or without the
FFI library; the GPU tests skip visibly without a GPU."""
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install jax)")
gj = pytest.importorskip("gstat.jax", reason="gstat was built without its JAX extension")

import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import gstat  # noqa: E402

# float64 for check_grads (and x64 is needed to hold float64 arrays at all);
# float32 tests pass float32 arrays explicitly.
jax.config.update("jax_enable_x64", True)

TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _gpus():
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


needs_gpu = pytest.mark.skipif(not _gpus() or not gstat.cuda_available(),
                               reason="no GPU for JAX here, or gstat has no CUDA backend")


def spd(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dtype)


def sym(rng, shape, dtype=np.float64):
    x = rng.standard_normal(shape)
    return ((x + np.swapaxes(x, -1, -2)) / 2).astype(dtype)


def tri(rng, shape, lower, dtype=np.float64):
    """Well-conditioned triangular matrices (the other triangle is noise that
    must not be read)."""
    n = shape[-1]
    t = rng.standard_normal(shape) * 0.3 + 2 * np.eye(n)
    return t.astype(dtype)


def assert_vectors_match(v, v0, w0, tol):
    """Eigenvectors equal up to sign (columns of distinct eigenvalues)."""
    v, v0 = np.asarray(v, np.float64), np.asarray(v0, np.float64)
    dots = np.abs(np.sum(v * v0, axis=-2))
    gaps = np.diff(np.asarray(w0, np.float64), axis=-1)
    distinct = np.ones(dots.shape, bool)
    distinct[..., 1:] &= gaps > 1e-3
    distinct[..., :-1] &= gaps > 1e-3
    np.testing.assert_allclose(dots[distinct], 1, atol=tol * 100)


def test_import_gstat_does_not_import_jax():
    code = "import sys, gstat; assert 'jax' not in sys.modules, 'gstat imported jax'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_library_gives_clear_import_error(tmp_path):
    # A copy of the package without libgstat_jax_ffi.so, as a build without
    # JAX's headers makes it.
    pkg = os.path.dirname(gstat.__file__)
    dst = tmp_path / "gstat"
    dst.mkdir()
    for name in os.listdir(pkg):
        if name != "libgstat_jax_ffi.so" and name != "__pycache__":
            os.symlink(os.path.join(os.path.realpath(pkg), name), dst / name)
    # an auditwheel-repaired wheel's extension finds its libraries in ../gstat.libs
    libs = os.path.join(os.path.dirname(os.path.realpath(pkg)), "gstat.libs")
    if os.path.isdir(libs):
        os.symlink(libs, tmp_path / "gstat.libs")
    code = textwrap.dedent("""
        try:
            import gstat.jax
        except ImportError as e:
            assert "built without its JAX extension" in str(e), e
        else:
            raise SystemExit("gstat.jax imported without its library")
    """)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path,
                   env=dict(os.environ, PYTHONPATH=str(tmp_path)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (4, 33, 33), (2, 3, 8, 8)])
def test_eigh_matches_jax(rng, dtype, shape):
    a = jnp.asarray(sym(rng, shape, dtype))
    w, v = gj.eigh(a)
    w0, v0 = jnp.linalg.eigh(a)
    assert w.dtype == dtype and v.dtype == dtype and w.shape == w0.shape and v.shape == v0.shape
    scale = float(jnp.max(jnp.abs(w0))) + 1
    np.testing.assert_allclose(w, w0, atol=TOL[dtype] * scale)
    assert_vectors_match(v, v0, w0, TOL[dtype])
    # gstat's sign rule: the entry of largest magnitude of each vector is positive
    vn = np.asarray(v)
    idx = np.argmax(np.abs(vn), axis=-2)
    assert np.all(np.take_along_axis(vn, idx[..., None, :], axis=-2) > 0)
    np.testing.assert_allclose(gj.eigvalsh(a), w0, atol=TOL[dtype] * scale)


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh_reads_one_triangle(rng, UPLO):
    a = sym(rng, (3, 6, 6))
    garbage = a.copy()
    other = np.triu_indices(6, 1) if UPLO == "L" else np.tril_indices(6, -1)
    garbage[:, other[0], other[1]] = np.nan  # never read, so never a NaN error
    w, v = gj.eigh(garbage, UPLO=UPLO, symmetrize_input=False)
    w0, v0 = jnp.linalg.eigh(a)
    np.testing.assert_allclose(w, w0, atol=1e-10)
    assert_vectors_match(v, v0, w0, 1e-10)
    np.testing.assert_allclose(gj.eigvalsh(garbage, UPLO=UPLO, symmetrize_input=False), w0,
                               atol=1e-10)
    # and its gradient is the one of the symmetric matrix that triangle describes
    g = jax.grad(lambda x: jnp.sum(gj.eigvalsh(x, UPLO=UPLO, symmetrize_input=False) ** 3))(a)
    g0 = jax.grad(lambda x: jnp.sum(jnp.linalg.eigvalsh(x) ** 3))(a)
    keep = np.tril(np.ones((6, 6))) if UPLO == "L" else np.triu(np.ones((6, 6)))
    np.testing.assert_allclose(g, keep * (g0 + np.swapaxes(g0, -1, -2) - g0 * np.eye(6)), atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_jax(rng, dtype, upper):
    a = jnp.asarray(spd(rng, (2, 3, 17, 17), dtype))
    f = gj.cholesky(a, upper=upper)
    f0 = jsl.cholesky(a, lower=not upper)
    assert f.dtype == dtype
    np.testing.assert_allclose(f, f0, atol=TOL[dtype] * 10, rtol=TOL[dtype])


def test_cholesky_not_pd_element_is_nan(rng):
    a = spd(rng, (4, 5, 5))
    a[2, 3, 3] = -100.0
    f = np.asarray(gj.cholesky(a))
    assert np.all(np.isnan(f[2]))
    np.testing.assert_allclose(f[[0, 1, 3]], np.linalg.cholesky(a[[0, 1, 3]]), atol=1e-12)


def test_nonfinite_input_raises(rng):
    a = sym(rng, (2, 4, 4))
    a[1, 2, 1] = np.nan
    with pytest.raises(Exception, match="gstat eigh"):
        jax.block_until_ready(jax.jit(gj.eigh)(a))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_matches_jax(rng, dtype, upper):
    a = spd(rng, (3, 9, 9), dtype)
    f = gj.cholesky(a, upper=upper)
    b = jnp.asarray(rng.standard_normal((3, 9, 4)).astype(dtype))
    x = gj.cholesky_solve(f, b, upper=upper)
    x0 = jsl.cho_solve((f, not upper), b)
    np.testing.assert_allclose(x, x0, atol=TOL[dtype] * 10)
    # one vector per matrix, and a right-hand side broadcast over the batch
    np.testing.assert_allclose(gj.cholesky_solve(f, b[..., 0], upper=upper), x0[..., 0],
                               atol=TOL[dtype] * 10)
    np.testing.assert_allclose(gj.cholesky_solve(f, b[0], upper=upper),
                               jsl.cho_solve((f, not upper), jnp.broadcast_to(b[0], b.shape)),
                               atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1, "T"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_jax(rng, dtype, lower, trans, unit):
    t = jnp.asarray(tri(rng, (2, 7, 7), lower, dtype))
    b = jnp.asarray(rng.standard_normal((2, 7, 3)).astype(dtype))
    x = gj.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
    x0 = jsl.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(x, x0, atol=TOL[dtype] * 10)


def test_jit_equals_eager(rng):
    a = spd(rng, (4, 12, 12))
    b = rng.standard_normal((4, 12, 2))

    def chain(a, b):
        w, v = gj.eigh(a)
        f = gj.cholesky(a)
        return w, v, f, gj.cholesky_solve(f, b), gj.solve_triangular(f, b, lower=True)

    for got, want in zip(jax.jit(chain)(a, b), chain(a, b)):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_vmap(rng):
    a = sym(rng, (3, 4, 6, 6))
    w, v = jax.vmap(gj.eigh)(a)
    w0, v0 = gj.eigh(a)
    np.testing.assert_allclose(w, w0, atol=1e-12)
    np.testing.assert_allclose(v, v0, atol=1e-12)
    # nested, under jit, and on another axis
    w2 = jax.jit(jax.vmap(jax.vmap(gj.eigvalsh), in_axes=1, out_axes=1))(a)
    np.testing.assert_allclose(w2, w0, atol=1e-12)
    s = spd(rng, (5, 6, 6))
    f = gj.cholesky(s)
    np.testing.assert_allclose(jax.vmap(gj.cholesky)(s), f, atol=1e-12)
    # a shared factor with batched right-hand sides, and the other way round
    b = rng.standard_normal((7, 6, 2))
    x = jax.vmap(gj.cholesky_solve, in_axes=(None, 0))(f[0], b)
    np.testing.assert_allclose(x, np.linalg.solve(s[0], b), atol=1e-10)
    x = jax.vmap(lambda t: gj.solve_triangular(t, b[0], lower=True))(f)
    np.testing.assert_allclose(x, jsl.solve_triangular(f, jnp.broadcast_to(b[0], (5, 6, 2)), lower=True),
                               atol=1e-10)


def test_grad_matches_jax(rng):
    a = spd(rng, (3, 7, 7))
    b = rng.standard_normal((3, 7, 2))
    m = rng.standard_normal((7, 7))

    def losses(eigh, eigvalsh, cholesky, cho_solve, solve_tri):
        def matrix_function(x):  # gauge invariant: V f(W) V^T
            w, v = eigh(x)
            return jnp.sum(m * (v * jnp.sin(w)[..., None, :]) @ jnp.swapaxes(v, -1, -2))

        return [
            lambda x: jnp.sum(eigvalsh(x) ** 3),
            matrix_function,
            lambda x: jnp.sum(jnp.cos(cholesky(x))),
            lambda x: jnp.sum(cho_solve(cholesky(x), b) ** 2),
            lambda x: jnp.sum(jnp.tanh(solve_tri(cholesky(x), b))),
            lambda x: jnp.sum(solve_tri(cholesky(x), b, trans=1) ** 2),
        ]

    ours = losses(gj.eigh, gj.eigvalsh, gj.cholesky, lambda f, y: gj.cholesky_solve(f, y),
                  lambda f, y, trans=0: gj.solve_triangular(f, y, trans=trans, lower=True))
    ref = losses(jnp.linalg.eigh, jnp.linalg.eigvalsh, jnp.linalg.cholesky,
                 lambda f, y: jsl.cho_solve((f, True), y),
                 lambda f, y, trans=0: jsl.solve_triangular(f, y, trans=trans, lower=True))
    for i, (f, f0) in enumerate(zip(ours, ref)):
        g = jax.jit(jax.grad(f))(a)
        g0 = jax.grad(f0)(a)
        # gstat's functions of a symmetrize it, as JAX's eigh and cholesky do
        g0 = (g0 + np.swapaxes(g0, -1, -2)) / 2
        np.testing.assert_allclose(g, g0, atol=1e-9, err_msg=f"loss {i}")
    # and with respect to the right-hand sides
    f = gj.cholesky(a)
    gb = jax.grad(lambda y: jnp.sum(gj.solve_triangular(f, y, lower=True) ** 3))(b)
    gb0 = jax.grad(lambda y: jnp.sum(jsl.solve_triangular(f, y, lower=True) ** 3))(b)
    np.testing.assert_allclose(gb, gb0, atol=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_check_grads_float64(rng, upper):
    a = jnp.asarray(spd(rng, (2, 5, 5)))
    s = jnp.asarray(sym(rng, (2, 5, 5)))
    b = jnp.asarray(rng.standard_normal((2, 5, 3)))
    f = gj.cholesky(a, upper=upper)
    kw = dict(order=2, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)
    # eigenvectors directly: gstat's sign rule is locally constant
    check_grads(lambda x: gj.eigh(x, UPLO="U" if upper else "L"), (s,), **kw)
    check_grads(gj.eigvalsh, (s,), **kw)
    check_grads(lambda x: gj.cholesky(x, upper=upper), (a,), **kw)
    check_grads(lambda x, y: gj.cholesky_solve(x, y, upper=upper), (f, b), **kw)
    for trans in (0, 1):
        for unit in (False, True):
            check_grads(lambda x, y: gj.solve_triangular(x, y, trans=trans, lower=not upper,
                                                         unit_diagonal=unit), (f, b), **kw)


def test_degenerate_eigenvalues_give_finite_gradients(rng):
    q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    a = np.stack([np.eye(6), (q * np.array([1.0, 1, 1, 2, 2, 3])) @ q.T, np.zeros((6, 6))])
    t = sym(rng, (3, 6, 6))

    def vectors(x):
        return jnp.sum(gj.eigh(x)[1] ** 3)

    hvp = jax.jvp(jax.grad(vectors), (a,), (t,))[1]  # second order too
    for g in (jax.grad(vectors)(a), jax.jvp(vectors, (a,), (t,))[1], hvp):
        assert np.all(np.isfinite(g))
    # JAX's own rule gives NaN here
    assert not np.all(np.isfinite(jax.grad(lambda x: jnp.sum(jnp.linalg.eigh(x)[1] ** 3))(a)))
    # losses of the eigenvalues stay exact: sum(w**2) = |A|_F^2 has gradient 2 A
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(gj.eigvalsh(x) ** 2))(a), 2 * a, atol=1e-10)
    np.testing.assert_allclose(jax.grad(lambda x: jnp.sum(gj.eigh(x)[0] ** 2))(a), 2 * a, atol=1e-10)


def test_bfloat16(rng):
    a = sym(rng, (4, 8, 8), np.float32)
    ab = jnp.asarray(a, jnp.bfloat16)
    w, v = gj.eigh(ab)
    assert w.dtype == jnp.bfloat16 and v.dtype == jnp.bfloat16
    w0 = np.linalg.eigvalsh(np.asarray(ab, np.float32))
    np.testing.assert_allclose(np.asarray(w, np.float32), w0, atol=0.05 * np.abs(w0).max())
    s = jnp.asarray(spd(rng, (2, 6, 6), np.float32), jnp.bfloat16)
    f = gj.cholesky(s)
    assert f.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(f, np.float32), np.linalg.cholesky(np.asarray(s, np.float32)),
                               atol=0.05 * 6)


def test_empty_and_int_inputs(rng):
    assert gj.eigh(jnp.zeros((0, 4, 4)))[1].shape == (0, 4, 4)
    assert gj.cholesky(jnp.zeros((3, 0, 0))).shape == (3, 0, 0)
    w = gj.eigvalsh(jnp.array([[2, 1], [1, 2]]))
    assert w.dtype == jnp.float64
    np.testing.assert_allclose(w, [1, 3], atol=1e-12)
    with pytest.raises(TypeError, match="float16"):
        gj.eigh(jnp.eye(3, dtype=jnp.float16))
    with pytest.raises(TypeError, match="real"):
        gj.eigvalsh(jnp.eye(3, dtype=jnp.complex64))
    with pytest.raises(ValueError, match="shape"):
        gj.cholesky(jnp.zeros((3, 4)))


def test_threads(rng):
    # XLA may run handlers of several computations at once: each thread has
    # its own gstat contexts.
    a = sym(rng, (8, 16, 40, 40))
    f = jax.jit(gj.eigvalsh)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda x: np.asarray(f(x)), a))
    np.testing.assert_allclose(np.stack(got), np.linalg.eigvalsh(a), atol=1e-10)


def test_cpu_arrays_run_on_gstats_cpu_backend(rng):
    gj._backends_ran(reset=True)
    cpu = jax.devices("cpu")[0]
    jax.block_until_ready(gj.eigh(jax.device_put(sym(rng, (2, 5, 5)), cpu)))
    assert gj._backends_ran(reset=True) == "cpu"


# ---- GPU -------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 32, 32), (8, 100, 100), (4, 512, 512)])
def test_gpu_matches_jax(rng, dtype, shape):
    gpu = _gpus()[0]
    a = jax.device_put(spd(rng, shape, dtype), gpu)
    b = jax.device_put(rng.standard_normal(shape[:-1] + (3,)).astype(dtype), gpu)
    gj._backends_ran(reset=True)
    w, v = jax.jit(gj.eigh)(a)
    f = jax.jit(gj.cholesky)(a)
    x = jax.jit(gj.cholesky_solve)(f, b)
    y = jax.jit(lambda t, r: gj.solve_triangular(t, r, lower=True, trans=1))(f, b)
    jax.block_until_ready((w, v, f, x, y))
    assert gj._backends_ran(reset=True) == "cuda"
    assert w.devices() == {gpu}
    w0, v0 = jnp.linalg.eigh(a)
    scale = float(jnp.max(jnp.abs(w0)))
    np.testing.assert_allclose(w, w0, atol=TOL[dtype] * scale * 10)
    assert_vectors_match(v, v0, w0, TOL[dtype] * 10)
    np.testing.assert_allclose(f, jnp.linalg.cholesky(a), atol=TOL[dtype] * np.sqrt(scale) * 10)
    np.testing.assert_allclose(x, jsl.cho_solve((f, True), b), atol=TOL[dtype] * 10)
    np.testing.assert_allclose(y, jsl.solve_triangular(f, b, lower=True, trans=1), atol=TOL[dtype] * 10)


@needs_gpu
def test_gpu_stream_order_vmap_grad(rng):
    # Work before and after gstat's call inside one jitted function on the
    # GPU: gstat must run on XLA's stream, after its input was computed and
    # before its output is used.
    gpu = _gpus()[0]
    x = jax.device_put(rng.standard_normal((256, 48, 48)), gpu)

    def pipeline(x, op):
        a = x @ jnp.swapaxes(x, -1, -2) + 48 * jnp.eye(48)
        w, v = op(a)
        return jnp.sum(w, axis=-1), v @ jnp.swapaxes(v, -1, -2)

    for _ in range(3):
        s, vvt = jax.jit(lambda x: pipeline(x, gj.eigh))(x)
        s0, _ = jax.jit(lambda x: pipeline(x, jnp.linalg.eigh))(x)
        np.testing.assert_allclose(s, s0, rtol=1e-10)
        np.testing.assert_allclose(vvt, np.broadcast_to(np.eye(48), vvt.shape), atol=1e-10)
    a = jax.device_put(spd(rng, (4, 8, 20, 20)), gpu)
    np.testing.assert_allclose(jax.vmap(gj.eigvalsh)(a), jnp.linalg.eigvalsh(a), atol=1e-9)
    g = jax.grad(lambda x: jnp.sum(jnp.cos(gj.cholesky(x))))(a)
    g0 = jax.grad(lambda x: jnp.sum(jnp.cos(jnp.linalg.cholesky(x))))(a)
    np.testing.assert_allclose(g, (g0 + jnp.swapaxes(g0, -1, -2)) / 2, atol=1e-9)
    assert gj._backends_ran(reset=True) == "cuda"


# ---- PCA projection (CPU here; the GPU case runs where JAX sees a GPU) ---------

DEVICES = ["cpu", pytest.param("gpu", marks=needs_gpu)]


def _pca_args(rng, batch=(), m=9, p=5, k=3, dtype=np.float64):
    return tuple(a.astype(dtype) for a in (
        rng.standard_normal(batch + (m, p)), rng.standard_normal(batch + (p,)),
        rng.standard_normal(batch + (k, p)), rng.random(batch + (k,)) + 0.5))


def _pca_ref_jnp(x, mean, comp, ev, whiten):
    """The formula in jnp, for gradients (float64 in those tests)."""
    y = (x - mean[..., None, :]) @ jnp.swapaxes(comp, -1, -2)
    return y / jnp.sqrt(ev)[..., None, :] if whiten else y


def _pca_ref(x, mean, comp, ev, whiten):
    # numpy in float64 on the host: JAX's float32 matmul on a GPU defaults to
    # TF32, whose 1e-3 error failed the comparison on the H200
    x, mean, comp, ev = (np.asarray(a, dtype=np.float64) for a in (x, mean, comp, ev))
    y = (x - mean[..., None, :]) @ np.swapaxes(comp, -1, -2)
    return y / np.sqrt(ev)[..., None, :] if whiten else y


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("whiten", [False, True])
def test_pca_project_matches_formula(rng, device, dtype, whiten):
    dev = jax.devices(device)[0]
    args = [jax.device_put(a, dev) for a in _pca_args(rng, (2,), dtype=dtype)]
    gj._backends_ran(reset=True)
    y = jax.jit(lambda *a: gj.pca_project(*a, whiten=whiten))(*args)
    y.block_until_ready()
    assert gj._backends_ran(reset=True) == ("cuda" if device == "gpu" else "cpu")
    assert y.dtype == dtype and y.shape == (2, 9, 3) and y.devices() == {dev}
    np.testing.assert_allclose(y, _pca_ref(*args, whiten), rtol=TOL[dtype], atol=TOL[dtype])
    # a vmap over the data alone, and over data and components (broadcast batch)
    x, mean, comp, ev = args
    f = lambda x, c: gj.pca_project(x, mean[0], c, ev[0], whiten=whiten)  # noqa: E731
    np.testing.assert_allclose(jax.vmap(f, (0, None))(x, comp[0]),
                               _pca_ref(x, mean[0], comp[0], ev[0], whiten), rtol=TOL[dtype],
                               atol=TOL[dtype])
    np.testing.assert_allclose(jax.vmap(f)(x, comp), _pca_ref(x, mean[0], comp, ev[0], whiten),
                               rtol=TOL[dtype], atol=TOL[dtype])
    assert gj._backends_ran(reset=True) == ("cuda" if device == "gpu" else "cpu")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("whiten", [False, True])
def test_pca_project_gradients(rng, device, whiten):
    dev = jax.devices(device)[0]
    args = [jax.device_put(a, dev) for a in _pca_args(rng, m=4, p=3, k=2)]
    f = lambda *a: gj.pca_project(*a, whiten=whiten)  # noqa: E731
    check_grads(f, args, order=2, modes=("fwd", "rev"))
    loss = lambda g: lambda *a: jnp.sum(jnp.sin(g(*a)))  # noqa: E731
    grads = jax.jit(jax.grad(loss(f), argnums=(0, 1, 2, 3)))(*args)
    ref = jax.grad(loss(lambda *a: _pca_ref_jnp(*a, whiten)), argnums=(0, 1, 2, 3))(*args)
    for g, g0 in zip(grads, ref):
        np.testing.assert_allclose(g, g0, rtol=1e-10, atol=1e-12)


def test_pca_project_checks(rng):
    x, mean, comp, ev = _pca_args(rng)
    np.testing.assert_allclose(gj.pca_project(x, mean, comp), _pca_ref(x, mean, comp, ev, False),
                               rtol=1e-12, atol=1e-12)
    y = gj.pca_project(x.astype(jnp.bfloat16), mean.astype(jnp.bfloat16),
                       comp.astype(jnp.bfloat16), whiten=False)
    assert y.dtype == jnp.bfloat16
    np.testing.assert_allclose(np.asarray(y, np.float64), _pca_ref(x, mean, comp, ev, False),
                               atol=0.1)
    with pytest.raises(ValueError, match="whiten needs explained_variance"):
        gj.pca_project(x, mean, comp, whiten=True)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        gj.pca_project(x, mean[:-1], comp)
    bad = x.copy()
    bad[2, 1] = np.nan
    with pytest.raises(Exception, match="NaN or Inf"):
        jax.block_until_ready(gj.pca_project(bad, mean, comp))
