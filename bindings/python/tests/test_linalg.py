import numpy as np
import pytest
import scipy.linalg

import gstat
from conftest import layouts, sym

TOL = {np.float32: 2e-4, np.float64: 1e-10}


def check_eigh(a, w, v, tol):
    a = a.astype(np.float64)
    w = w.astype(np.float64)
    v = v.astype(np.float64)
    scale = max(1.0, np.abs(a).max())
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), atol=tol * scale * a.shape[-1])
    rec = (v * w[..., None, :]) @ np.swapaxes(v, -1, -2)
    np.testing.assert_allclose(rec, a, atol=tol * scale * a.shape[-1])
    # sign rule: the entry of largest magnitude of each eigenvector is positive
    idx = np.argmax(np.abs(v), axis=-2)
    assert (np.take_along_axis(v, idx[..., None, :], axis=-2) > 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 8), (5, 8, 8), (2, 3, 17, 17), (4, 33, 33), (0, 4, 4), (3, 0, 0)])
def test_eigh_matches_numpy(rng, dtype, shape):
    a = sym(rng, shape, dtype)
    for name, view in layouts(a).items():
        w, v = gstat.linalg.eigh(view)
        assert w.dtype == dtype and v.dtype == dtype, name
        assert w.shape == shape[:-1] and v.shape == shape, name
        if a.size:
            check_eigh(a, w, v, TOL[dtype])
            np.testing.assert_array_equal(gstat.linalg.eigvalsh(view), w)
    assert gstat.last_backend() in ("cpu", "none")


def test_eigh_result_and_uplo(rng):
    a = sym(rng, (6, 6))
    res = gstat.linalg.eigh(a)
    assert isinstance(res, gstat.linalg.EighResult)
    w, v = res
    assert res.eigenvalues is w and res.eigenvectors is v
    lower, upper = np.tril(a), np.triu(a)
    lower[np.triu_indices(6, 1)] = np.nan  # the other triangle is never read
    upper[np.tril_indices(6, -1)] = np.nan
    np.testing.assert_allclose(gstat.linalg.eigh(lower, "L")[0], w, atol=1e-12)
    np.testing.assert_allclose(gstat.linalg.eigh(upper, UPLO="U")[0], w, atol=1e-12)


def test_eigh_other_types(rng):
    a = np.array([[2, 1], [1, 2]])
    w, v = gstat.linalg.eigh(a)  # integers are converted to float64 as numpy does
    assert w.dtype == np.float64
    np.testing.assert_allclose(w, [1, 3])
    w, _ = gstat.linalg.eigh([[2.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(w, [1, 2])
    w, _ = gstat.linalg.eigh(np.eye(3, dtype=np.float16))
    assert w.dtype == np.float32


def test_bfloat16(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = sym(rng, (4, 16, 16), np.float32).astype(ml_dtypes.bfloat16)
    w, v = gstat.linalg.eigh(a)
    assert w.dtype == ml_dtypes.bfloat16 and v.dtype == ml_dtypes.bfloat16
    w32 = np.linalg.eigvalsh(a.astype(np.float32))
    np.testing.assert_allclose(w.astype(np.float32), w32, atol=0.05 * np.abs(w32).max())
    L = gstat.linalg.cholesky(sym(rng, (3, 8, 8), np.float32, spd=True).astype(ml_dtypes.bfloat16))
    assert L.dtype == ml_dtypes.bfloat16


def test_out_reuse_and_in_place(rng):
    a = sym(rng, (10, 12, 12))
    w = np.empty((10, 12))
    v = np.empty((10, 12, 12), order="F")
    res = gstat.linalg.eigh(a, out=(w, v))
    assert res[0] is w and res[1] is v
    check_eigh(a, w, v, 1e-10)
    # strided outputs are written in place, without a copy
    wbig = np.full((10, 24), np.nan)
    res = gstat.linalg.eigh(a, out=(wbig[:, ::2], v))
    np.testing.assert_array_equal(wbig[:, ::2], w)
    assert np.isnan(wbig[:, 1::2]).all()
    # V may be the input itself
    a2 = a.copy()
    w2, v2 = gstat.linalg.eigh(a2, out=(np.empty((10, 12)), a2))
    assert v2 is a2
    np.testing.assert_allclose(np.abs(a2), np.abs(v), atol=1e-10)
    # float32 outputs of float64 input
    w32 = np.empty((10, 12), np.float32)
    gstat.linalg.eigvalsh(a, out=w32)
    np.testing.assert_allclose(w32, w, rtol=1e-5, atol=1e-5)
    # cholesky in place
    s = sym(rng, (4, 9, 9), spd=True)
    ref = np.linalg.cholesky(s)
    out = gstat.linalg.cholesky(s, out=s)
    assert out is s
    np.testing.assert_allclose(s, ref, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cholesky_and_solves(rng, dtype):
    s = sym(rng, (6, 20, 20), dtype, spd=True)
    tol = TOL[dtype] * 20
    for name, view in layouts(s).items():
        L = gstat.linalg.cholesky(view)
        np.testing.assert_allclose(L, np.linalg.cholesky(s), rtol=tol, atol=tol, err_msg=name)
        U = gstat.linalg.cholesky(view, upper=True)
        np.testing.assert_allclose(U, np.swapaxes(L, -1, -2), rtol=tol, atol=tol, err_msg=name)
    b = rng.standard_normal((6, 20, 3)).astype(dtype)
    L = gstat.linalg.cholesky(s)
    x = gstat.linalg.cholesky_solve(L, b)
    np.testing.assert_allclose(x, np.linalg.solve(s, b), rtol=50 * tol, atol=50 * tol)
    xu = gstat.linalg.cholesky_solve(gstat.linalg.cholesky(s, upper=True), b, upper=True)
    np.testing.assert_allclose(xu, x, rtol=50 * tol, atol=50 * tol)
    # one vector right-hand side
    xv = gstat.linalg.cholesky_solve(L[0], b[0, :, 0])
    assert xv.shape == (20,)
    np.testing.assert_allclose(xv, x[0, :, 0], rtol=50 * tol, atol=50 * tol)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, "T"])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_matches_scipy(rng, lower, trans, unit):
    t = rng.standard_normal((15, 15)) + 15 * np.eye(15)
    b = rng.standard_normal((15, 4))
    ref = scipy.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
    got = gstat.linalg.solve_triangular(t, b, trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
    got = gstat.linalg.solve_triangular(np.asfortranarray(t), b[:, 0], trans=trans, lower=lower,
                                        unit_diagonal=unit)
    np.testing.assert_allclose(got, ref[:, 0], rtol=1e-10, atol=1e-10)


def test_batched_solve_triangular(rng):
    t = np.tril(rng.standard_normal((7, 10, 10))) + 10 * np.eye(10)
    b = rng.standard_normal((7, 10, 2))
    got = gstat.linalg.solve_triangular(t, b, lower=True)
    np.testing.assert_allclose(got, np.linalg.solve(t, b), rtol=1e-10, atol=1e-10)
    out = np.empty_like(b)
    assert gstat.linalg.solve_triangular(t, b, lower=True, out=out) is out
    assert gstat.linalg.solve_triangular(t, b, lower=True, out=b) is b  # in place
    np.testing.assert_allclose(b, got)


def test_no_copy_for_describable_views(rng):
    """Strided/transposed float views are handed to C as they are: writes through
    out= show that outputs are not copies, and a huge-stride input still works."""
    a = sym(rng, (3, 5, 5))
    base = np.zeros((3, 5, 10))
    v = base[:, :, ::2]
    gstat.linalg.eigh(a, out=(np.empty((3, 5)), v))
    assert np.abs(base[:, :, ::2]).sum() > 0 and not base[:, :, 1::2].any()


def test_backend_selection(rng):
    a = sym(rng, (4, 4))
    gstat.linalg.eigh(a, backend="cpu")
    assert gstat.last_backend() == "cpu"
    assert gstat.last_device_stats() == {
        "allocations": 0, "graph_captures": 0, "graph_refusals": 0, "graph_launches": 0,
        "pipeline_pieces": 0, "own_tridiag_chunks": 0, "own_tridiag_degenerate": 0,
        "own_tridiag_clustered": 0}
    with gstat.use_backend("cpu"):
        assert gstat.get_backend() == "cpu"
        gstat.linalg.eigh(a)
    assert gstat.get_backend() == "auto"
    if not gstat.cuda_available():
        with pytest.raises(gstat.UnsupportedError):
            gstat.linalg.eigh(a, backend="cuda")
