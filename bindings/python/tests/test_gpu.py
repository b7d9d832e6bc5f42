"""CUDA tensors (torch, CuPy) in and out. Skipped, visibly, without a GPU."""
import numpy as np
import pytest

import gstat
from device_cases import CASES as DEVICE_CASES, LABELS, same_partition

torch = None
try:
    import torch  # noqa: F811
except ImportError:
    pass
cupy = None
try:
    import cupy  # noqa: F811

    cupy.cuda.runtime.getDeviceCount()
except Exception:
    cupy = None

needs_gpu = pytest.mark.skipif(not gstat.cuda_available(), reason="no CUDA backend/GPU here")
needs_torch = pytest.mark.skipif(torch is None or not torch.cuda.is_available(),
                                 reason="torch with CUDA not installed")
needs_cupy = pytest.mark.skipif(cupy is None, reason="CuPy with a GPU not installed")


def spd_np(b, n, dtype):
    x = np.random.default_rng(0).standard_normal((b, n, n))
    return (x @ x.transpose(0, 2, 1) + n * np.eye(n)).astype(dtype)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [8, 32, 64, 200])
def test_torch_eigh_cholesky(dtype, n):
    tdt = getattr(torch, dtype)
    a = torch.from_numpy(spd_np(64, n, dtype)).to("cuda")
    w, v = gstat.linalg.eigh(a)
    assert isinstance(w, torch.Tensor) and w.device == a.device and w.dtype == tdt
    assert gstat.last_backend() == "cuda"
    wr = torch.linalg.eigvalsh(a)
    tol = 1e-3 if dtype == "float32" else 1e-9
    assert torch.allclose(w, wr, rtol=tol, atol=tol * n)
    rec = v @ torch.diag_embed(w) @ v.transpose(-1, -2)
    assert torch.allclose(rec, a, rtol=tol * 10, atol=tol * n * 10)
    L = gstat.linalg.cholesky(a)
    assert torch.allclose(L, torch.linalg.cholesky(a), rtol=tol * 10, atol=tol * 10)
    b = torch.randn(64, n, 3, device="cuda", dtype=tdt)
    x = gstat.linalg.cholesky_solve(L, b)
    assert torch.allclose(x, torch.cholesky_solve(b, L), rtol=tol * 100, atol=tol * 100)


@needs_gpu
@needs_torch
def test_torch_zero_copy_out_and_views():
    a = torch.from_numpy(spd_np(16, 32, "float32")).to("cuda")
    w = torch.empty(16, 32, device="cuda")
    v = torch.empty(16, 32, 32, device="cuda")
    rw, rv = gstat.linalg.eigh(a, out=(w, v))
    assert rw.data_ptr() == w.data_ptr() and rv.data_ptr() == v.data_ptr()
    wt, _ = gstat.linalg.eigh(a.transpose(-1, -2))  # strided view, no copy
    assert torch.allclose(wt, w)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # runs on the caller's current stream
        w2 = gstat.linalg.eigvalsh(a)
    s.synchronize()
    assert torch.allclose(w2, w)


@needs_gpu
@needs_torch
def test_last_device_stats_show_graph_replay():
    """A repeated call of one shape into the same out= tensors replays the
    cached solver graph: no allocation, no capture, one launch."""
    a = torch.from_numpy(spd_np(50, 128, "float32")).to("cuda")
    w = torch.empty(50, 128, device="cuda")
    v = torch.empty(50, 128, 128, device="cuda")
    gstat.linalg.eigh(a, out=(w, v))
    first = gstat.last_device_stats()
    assert first["graph_launches"] == 1 and first["graph_refusals"] == 0
    gstat.linalg.eigh(a, out=(w, v))
    assert gstat.last_backend() == "cuda"
    assert gstat.last_device_stats() == {
        "allocations": 0, "graph_captures": 0, "graph_refusals": 0, "graph_launches": 1,
        "pipeline_pieces": 0, "own_tridiag_chunks": 0, "own_tridiag_degenerate": 0,
        "own_tridiag_clustered": 0}


@needs_gpu
@needs_torch
def test_torch_bfloat16_and_pca():
    a = torch.from_numpy(spd_np(8, 16, "float32")).to("cuda")
    w = gstat.linalg.eigvalsh(a.to(torch.bfloat16))
    assert w.dtype == torch.bfloat16 and w.is_cuda
    x = torch.randn(5000, 20, device="cuda")
    p = gstat.PCA(3).fit(x)
    q = gstat.PCA(3).fit(x.cpu().numpy())
    np.testing.assert_allclose(p.explained_variance_, q.explained_variance_, rtol=1e-3)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("dtype", [torch and torch.float32, torch and torch.float64])
def test_torch_pca_transform_on_device(whiten, dtype):
    x = torch.randn(3000, 12, device="cuda", dtype=dtype) * torch.arange(1, 13, device="cuda") + 5
    model = gstat.PCA(4, whiten=whiten).fit(x.cpu().numpy())
    z = model.transform(x)  # projected on the GPU, a CUDA tensor back
    assert z.is_cuda and z.dtype == dtype and tuple(z.shape) == (3000, 4)
    ref = model.transform(x.cpu().numpy())
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    np.testing.assert_allclose(z.cpu().numpy(), ref, rtol=tol, atol=tol * 10)
    bad = x.clone()
    bad[7, 3] = float("nan")
    with pytest.raises(ValueError, match=r"X\[0\] row 7 column 3 is NaN or Inf"):
        model.transform(bad)  # the message of host data
    with pytest.raises(ValueError, match="features"):
        model.transform(x[:, :5])


@needs_gpu
@needs_torch
@pytest.mark.parametrize("solver", ["gram_eigh", "randomized"])
@pytest.mark.parametrize("dtype", [torch and torch.float32, torch and torch.float64])
def test_torch_gram_and_randomized_pca_on_device(solver, dtype):
    """Gram and randomized PCA of a CUDA tensor run on the GPU (no host copy
    of the data) with the host fit's results; the inverse transform of device
    scores answers a CUDA tensor."""
    n, p = (300, 500) if solver == "gram_eigh" else (4000, 200)
    g = torch.Generator(device="cuda").manual_seed(0)
    scales = 0.5 ** torch.arange(p, device="cuda", dtype=dtype)
    x = (torch.randn(n, p, device="cuda", dtype=dtype, generator=g) * (1 + 10 * scales) + 3)
    model = gstat.PCA(4, svd_solver=solver, random_state=0).fit(x)
    assert "cuda" in model.backend_
    ref = gstat.PCA(4, svd_solver=solver, random_state=0).fit(x.cpu().numpy())
    tol = 1e-9 if dtype == torch.float64 else 2e-3
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=tol)
    np.testing.assert_allclose(model.components_, ref.components_, atol=tol)
    z = model.transform(x)
    back = model.inverse_transform(z)
    assert back.is_cuda and back.dtype == dtype and tuple(back.shape) == (n, p)
    want = ref.inverse_transform(z.cpu().numpy())
    np.testing.assert_allclose(back.cpu().numpy(), want, rtol=tol, atol=tol * 10)


@needs_gpu
@needs_cupy
def test_cupy_eigh_cholesky():
    a = cupy.asarray(spd_np(32, 24, "float64"))
    w, v = gstat.linalg.eigh(a)
    assert isinstance(w, cupy.ndarray) and w.device == a.device
    cupy.testing.assert_allclose(w, cupy.linalg.eigvalsh(a), rtol=1e-9, atol=1e-9)
    L = gstat.linalg.cholesky(a)
    cupy.testing.assert_allclose(L, cupy.linalg.cholesky(a), rtol=1e-9, atol=1e-9)
    assert gstat.last_backend() == "cuda"


@needs_gpu
def test_host_auto_large_batch_may_use_gpu():
    a = spd_np(1024, 64, "float32")
    w, _ = gstat.linalg.eigh(a, backend="cuda")
    assert gstat.last_backend() in ("cuda", "cuda+cpu")
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-3, atol=1e-2)


def sbm_graphs(count, n, seed):
    """count two-block SBM adjacencies (count, n, n) and their block labels."""
    rng = np.random.default_rng(seed)
    block = np.arange(n) >= n // 2
    P = np.where(block[:, None] == block[None, :], 0.4, 0.05)
    A = np.zeros((count, n, n))
    for g in range(count):
        U = np.triu(rng.random((n, n)) < P, 1).astype(np.float64)
        A[g] = U + U.T
    return A


@needs_gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_spectral_batch_on_gpu(dtype):
    """A CUDA tensor batch runs the GPU engine: the labels of the host engine
    (up to eigenvector rounding on a borderline node), as tensors on the
    batch's device; a NaN weight raises the host engine's error."""
    A = sbm_graphs(200, 48, 3).astype(dtype)
    t = torch.tensor(A, device="cuda")
    got = gstat.spectral_clustering_batch(t, 2)
    want = gstat.spectral_clustering_batch(A, 2, backend="cpu")
    assert len(got) == 200 and all(isinstance(g, torch.Tensor) and g.device == t.device
                                   for g in got)
    same = sum(np.array_equal(g.cpu().numpy(), w) for g, w in zip(got, want))
    assert same >= 196, f"{200 - same} graphs labelled differently"
    t[7, 3, 9] = float("nan")
    with pytest.raises(ValueError, match="graph 7"):
        gstat.spectral_clustering_batch(t, 2)
    with pytest.raises(TypeError):
        gstat.spectral_clustering_batch(torch.zeros((2, 4, 4), dtype=torch.int32, device="cuda"), 2)


def _data(n=2000, p=12, dtype="float64"):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, p)) * (1 + np.arange(p)) + 5.0
    x[:, 1] += 0.5 * x[:, 0]
    return x.astype(dtype)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_covariance_functions_on_device(dtype):
    x = _data(dtype=dtype)
    xd = torch.from_numpy(x).to("cuda")
    tol = 1e-4 if dtype == "float32" else 1e-10
    for fn in (gstat.cov, gstat.corrcoef):
        c = fn(xd, rowvar=False)
        assert isinstance(c, torch.Tensor) and c.device == xd.device and str(c.dtype) == f"torch.{dtype}"
        assert gstat.last_backend() == "cuda"
        np.testing.assert_allclose(c.cpu().numpy(), fn(x, rowvar=False), rtol=tol, atol=tol)
    ct = gstat.cov(xd.T, rowvar=True)  # numpy's orientation, a transposed view
    np.testing.assert_allclose(ct.cpu().numpy(), np.cov(x, rowvar=False), rtol=tol, atol=tol)
    s = np.cov(x, rowvar=False)
    d2 = gstat.mahalanobis(xd, torch.from_numpy(x.mean(0)).to("cuda"),
                           torch.from_numpy(s).to("cuda"), squared=True)
    assert isinstance(d2, torch.Tensor) and d2.dtype == torch.float64 and d2.device == xd.device
    np.testing.assert_allclose(d2.cpu().numpy(), gstat.mahalanobis(x, x.mean(0), s, squared=True), rtol=1e-4)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("cls", ["EmpiricalCovariance", "LedoitWolf", "OAS"])
def test_torch_covariance_estimators_on_device(cls):
    x = _data()
    xd = torch.from_numpy(x).to("cuda")
    est, ref = getattr(gstat, cls)().fit(xd), getattr(gstat, cls)().fit(x)
    assert est.n_features_in_ == x.shape[1]
    np.testing.assert_allclose(est.covariance_, ref.covariance_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.location_, ref.location_, rtol=1e-12)
    d2 = est.mahalanobis(xd)
    assert isinstance(d2, torch.Tensor) and d2.device == xd.device
    np.testing.assert_allclose(d2.cpu().numpy(), ref.mahalanobis(x), rtol=1e-8)


@needs_gpu
@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_shrinkage_and_mahalanobis_run_on_the_device(dtype):
    """Ledoit-Wolf, OAS and both forms of Mahalanobis on a CUDA tensor run on
    the GPU (the rows primitive, no host copy of X) with the host's results."""
    x = _data(n=5000, p=40, dtype=dtype)
    xd = torch.from_numpy(x).to("cuda")
    tol = 2e-4 if dtype == "float32" else 1e-9
    for cls in (gstat.LedoitWolf, gstat.OAS):
        est = cls(store_precision=False).fit(xd)
        assert gstat.last_backend() == "cuda"
        ref = cls(store_precision=False).fit(x)
        np.testing.assert_allclose(est.covariance_, ref.covariance_, rtol=tol, atol=tol)
        np.testing.assert_allclose(est.shrinkage_, ref.shrinkage_, rtol=tol, atol=1e-12)
        d2 = est.mahalanobis(xd)  # the precision form, its matrix from the host
        assert gstat.last_backend() == "cuda"
        assert isinstance(d2, torch.Tensor) and d2.device == xd.device
        np.testing.assert_allclose(d2.cpu().numpy(), ref.mahalanobis(x), rtol=10 * tol)
    s, mu = np.cov(x.astype(np.float64), rowvar=False), x.mean(0, dtype=np.float64)
    d2 = gstat.mahalanobis(xd, torch.from_numpy(mu).to("cuda"), torch.from_numpy(s).to("cuda"),
                           squared=True)
    assert gstat.last_backend() == "cuda"
    np.testing.assert_allclose(d2.cpu().numpy(), gstat.mahalanobis(x, mu, s, squared=True),
                               rtol=10 * tol)


@needs_gpu
@needs_cupy
def test_cupy_covariance_on_device():
    x = _data(dtype="float32")
    xc = cupy.asarray(x)
    c = gstat.cov(xc, rowvar=False)
    assert isinstance(c, cupy.ndarray) and c.dtype == cupy.float32
    np.testing.assert_allclose(c.get(), gstat.cov(x, rowvar=False), rtol=1e-4, atol=1e-4)
    lw = gstat.LedoitWolf().fit(xc)
    # float32 rounding, relative to the matrix (an entry near 0 has no relative precision)
    np.testing.assert_allclose(lw.covariance_, gstat.LedoitWolf().fit(x).covariance_, rtol=1e-4,
                               atol=1e-6 * np.abs(lw.covariance_).max())


@needs_gpu
@needs_torch
def test_torch_unsupported_is_a_gstat_error():
    """What has no device path is gstat's UnsupportedError, never torch's
    "can't convert cuda:0 device type tensor to numpy"."""
    xd = torch.from_numpy(_data()).to("cuda")
    with pytest.raises(gstat.UnsupportedError, match="scikit-learn on the host"):
        gstat.SpectralClustering(3, affinity="linear").fit(xd)
    with pytest.raises(gstat.UnsupportedError, match="host operator"):
        gstat.laplacian(torch.ones(4, 4, device="cuda", dtype=torch.float64), form="lo")


@needs_gpu
@needs_torch
def test_torch_kneighbors_of_device_points():
    """A CUDA tensor's kNN lists (searched on the GPU) equal those of the
    same points on the host, distances bit for bit (both exact)."""
    x = _data()
    xd = torch.from_numpy(x).to("cuda")
    dist, ind = gstat.kneighbors(xd, 6, include_self=True)
    assert ind.device == xd.device and dist.device == xd.device  # the lists on X's device
    hd, hi = gstat.kneighbors(x, 6, include_self=True)
    np.testing.assert_array_equal(ind.cpu().numpy(), hi)
    np.testing.assert_array_equal(dist.cpu().numpy(), hd)


# ---- every entry point with device data (device_cases.CASES) ------------------------------

def _kinds():
    """(name, to_device, is_ours, to_host) of the device array kinds present."""
    kinds = []
    if torch is not None and torch.cuda.is_available():
        kinds.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).to("cuda"),
                      lambda r: isinstance(r, torch.Tensor) and r.is_cuda,
                      lambda r: r.cpu().numpy()))
    if cupy is not None:
        kinds.append(("cupy", lambda a: cupy.asarray(a), lambda r: isinstance(r, cupy.ndarray),
                      lambda r: r.get()))
    return kinds


def _leaves(r):
    return [x for part in r for x in _leaves(part)] if isinstance(r, (tuple, list)) else [r]


def _check_answer(name, got, want, gpu, is_ours, to_host):
    """got: the device call's result; want: the host call's."""
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        if gpu.startswith("device"):
            assert is_ours(g), f"{name}: {type(g).__name__} is not a tensor of the input's kind"
            g = to_host(g)
        else:
            assert not is_ours(g), f"{name}: documented as a host result, got {type(g).__name__}"
        if hasattr(g, "toarray"):  # scipy graph
            g, w = g.toarray(), w.toarray()
        if name in LABELS:
            assert same_partition(g, w), name
            continue
        w = np.asarray(w, dtype=np.float64)
        scale = max(1.0, float(np.max(np.abs(w)))) if np.size(w) else 1.0
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), w, rtol=1e-6,
                                   atol=1e-7 * scale, err_msg=name)


@needs_gpu
@pytest.mark.parametrize("kind", ["torch", "cupy"])
@pytest.mark.parametrize("case", [c[0] for c in DEVICE_CASES])
def test_every_entry_point_with_device_data(kind, case):
    """Each public function and estimator given CUDA tensors answers on
    their device in their kind (the host call's values), or (what cannot
    run there, marked 'refused'/'device?' in device_cases.CASES) raises
    gstat.UnsupportedError; never a foreign exception."""
    found = [k for k in _kinds() if k[0] == kind]
    if not found:
        pytest.skip(f"{kind} with a GPU not installed")
    _, to_device, is_ours, to_host = found[0]
    name, call, gpu, _ = next(c for c in DEVICE_CASES if c[0] == case)
    if gpu == "refused":
        with pytest.raises(gstat.UnsupportedError):
            call(to_device)
        return
    try:
        got = call(to_device)
    except gstat.UnsupportedError as e:
        assert gpu == "device?", f"{name}: {e}"
        assert "device" in str(e) or "CUDA" in str(e), str(e)
        return
    _check_answer(name, got, call(lambda a: a), gpu.rstrip("?"), is_ours, to_host)


@needs_gpu
def test_host_batch_on_gpu_reports_names_elements_and_cancels():
    """Host data on the GPU runs in the library's chunks: progress reports
    with the whole batch as total, a callback (Ctrl-C's path) that raises
    stops the call, and a failing element is named by its batch index."""
    a = spd_np(3000, 64, "float64")
    seen = []

    def stop(done, total, what):
        seen.append((done, total, what))
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        gstat.linalg.eigvalsh(a, backend="cuda", progress=stop)
    assert seen and seen[0][1] == 3000 and 0 < seen[0][0] < 3000 and seen[0][2] == "eigh", seen
    a[2500, 3, 3] = -1e6
    with pytest.raises(gstat.LinAlgError, match="batch element 2500 "):
        gstat.linalg.cholesky(a, backend="cuda")


@needs_gpu
@needs_torch
def test_torch_kneighbors_by_algorithm():
    """Every algorithm on a CUDA tensor: 'brute' on the GPU, the tree and
    NN-descent on a host copy; each equal to the same call on the host (the
    lists as tensors on the input's device)."""
    x = _data()[:, :5].copy()
    xd = torch.from_numpy(x).to("cuda")
    for alg in ("brute", "kd_tree", "nndescent"):
        dist, ind = gstat.kneighbors(xd, 6, include_self=True, algorithm=alg, random_state=1)
        hd, hi = gstat.kneighbors(x, 6, include_self=True, algorithm=alg, random_state=1)
        np.testing.assert_array_equal(ind.cpu().numpy(), hi)
        np.testing.assert_array_equal(dist.cpu().numpy(), hd)


@needs_gpu
def test_spectral_sparse_graph_on_the_gpu():
    """A large kNN graph clustered with backend='cuda' (the sparse
    eigensolver's basis and the Laplacian on the GPU, and, past 20000
    points, its k-means) gives the CPU's labels; the GPU ran."""
    rng = np.random.default_rng(7)
    centers = rng.uniform(-10, 10, size=(4, 3))
    x = centers[np.arange(24000) % 4] + rng.standard_normal((24000, 3))
    kw = dict(affinity="nearest_neighbors", n_neighbors=10, random_state=0)
    cpu = gstat.SpectralClustering(4, backend="cpu", **kw).fit_predict(x)
    gpu = gstat.SpectralClustering(4, backend="cuda", **kw).fit_predict(x)
    assert "cuda" in gstat.last_backend()
    np.testing.assert_array_equal(cpu, gpu)  # both numbered by first appearance


@needs_gpu
def test_sparse_cuda_graphs_are_taken_on_the_host():
    """A torch sparse CUDA tensor or a CuPy sparse matrix as a precomputed
    graph: copied to the host (the CSR graph API takes host arrays), the
    host graph's results, never a foreign error."""
    import scipy.sparse as sp
    rng = np.random.default_rng(3)
    A = np.kron(np.eye(2), rng.uniform(0.5, 1.5, (20, 20)))
    A = (A + A.T) / 2
    np.fill_diagonal(A, 0)
    A[19, 20] = A[20, 19] = 0.05
    ref = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit_predict(
        sp.csr_array(A))
    Lref = gstat.laplacian(sp.csr_array(A), normed=True).toarray()
    graphs = []
    if torch is not None and torch.cuda.is_available():
        d = torch.from_numpy(A).cuda()
        graphs += [d.to_sparse(), d.to_sparse_csr()]
    if cupy is not None:
        import cupyx.scipy.sparse as cs
        graphs.append(cs.csr_matrix(cupy.asarray(A)))
    if not graphs:
        pytest.skip("neither torch with CUDA nor CuPy with a GPU")
    for g in graphs:
        got = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit_predict(g)
        np.testing.assert_array_equal(np.asarray(got), ref)
        np.testing.assert_allclose(gstat.laplacian(g, normed=True).toarray(), Lref, atol=1e-12)
