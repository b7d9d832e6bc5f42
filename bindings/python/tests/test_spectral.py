import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
from sklearn.cluster import SpectralClustering as SkSC
from sklearn.datasets import make_blobs
from sklearn.manifold import SpectralEmbedding as SkSE
from sklearn.metrics import adjusted_rand_score

import gstat


def random_graph(rng, n, p=0.3):
    a = np.triu(rng.random((n, n)) * (rng.random((n, n)) < p), 1)
    return a + a.T


@pytest.mark.parametrize("normed", [False, True])
def test_laplacian_matches_scipy(rng, normed):
    a = random_graph(rng, 12)
    np.testing.assert_allclose(gstat.laplacian(a, normed=normed), csgraph.laplacian(a, normed=normed),
                               atol=1e-14)
    s = sp.csr_matrix(a)
    L = gstat.laplacian(s, normed=normed)
    assert sp.issparse(L)
    np.testing.assert_allclose(L.toarray(), csgraph.laplacian(a, normed=normed), atol=1e-14)
    L, d = gstat.laplacian(sp.csr_array(a), return_diag=True)
    assert isinstance(L, sp.csr_array)
    np.testing.assert_allclose(d, a.sum(axis=1))
    # batch of dense graphs
    ab = np.stack([random_graph(rng, 7) for _ in range(3)])
    Lb = gstat.laplacian(ab, normed=normed)
    np.testing.assert_allclose(Lb[1], csgraph.laplacian(ab[1], normed=normed), atol=1e-14)


def test_spectral_clustering_matches_sklearn():
    x, y = make_blobs(300, centers=4, cluster_std=0.8, random_state=3)
    for affinity in ("rbf", "nearest_neighbors"):
        ours = gstat.SpectralClustering(4, affinity=affinity, gamma=0.5, random_state=0).fit(x)
        ref = SkSC(4, affinity=affinity, gamma=0.5, random_state=0).fit(x)
        assert adjusted_rand_score(ours.labels_, y) > 0.95, affinity
        assert adjusted_rand_score(ours.labels_, ref.labels_) > 0.95, affinity
    assert ours.labels_.dtype == np.int64
    np.testing.assert_allclose(ours.affinity_matrix_.toarray(), ref.affinity_matrix_.toarray())
    rbf = gstat.SpectralClustering(4, gamma=0.5, random_state=0).fit(x)
    np.testing.assert_allclose(rbf.affinity_matrix_,
                               SkSC(4, gamma=0.5).fit(x).affinity_matrix_, atol=1e-12)
    lab = gstat.SpectralClustering(4, affinity="precomputed", random_state=0,
                                   assign_labels="cluster_qr").fit_predict(rbf.affinity_matrix_)
    assert adjusted_rand_score(lab, y) > 0.95


def test_spectral_embedding_matches_sklearn():
    x, _ = make_blobs(200, centers=3, random_state=1)
    ours = gstat.SpectralEmbedding(2, random_state=0).fit_transform(x)
    ref = SkSE(2, random_state=0, eigen_solver="arpack").fit_transform(x)
    for j in range(2):
        c = np.corrcoef(ours[:, j], ref[:, j])[0, 1]
        assert abs(c) > 0.99, (j, c)


def test_batch_matches_one_at_a_time(rng):
    graphs = [random_graph(rng, n, 0.5) + 0.01 * (1 - np.eye(n)) for n in (10, 23, 10, 17, 5)]
    labels = gstat.spectral_clustering_batch(graphs, 2, random_state=0)
    for g, lab in zip(graphs, labels):
        one = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(g).labels_
        np.testing.assert_array_equal(lab, one)
    sparse = gstat.spectral_clustering_batch([sp.csr_matrix(g) for g in graphs], [2, 3, 2, 2, 2],
                                             random_state=0)
    np.testing.assert_array_equal(sparse[0], labels[0])
    assert [len(s) for s in sparse] == [10, 23, 10, 17, 5]
    stacked = gstat.spectral_clustering_batch(np.stack(graphs[::2][:2]), 2, random_state=0)
    np.testing.assert_array_equal(stacked[1], labels[2])


def test_batch_progress_and_errors(rng):
    graphs = [random_graph(rng, 12, 0.6) + 0.01 * (1 - np.eye(12)) for _ in range(40)]
    seen = []
    gstat.spectral_clustering_batch(graphs, 2, progress=lambda d, t, w: seen.append((d, t)))
    assert seen[0][0] == 0 and seen[-1] == (40, 40)
    pytest.importorskip("tqdm")
    gstat.spectral_clustering_batch(graphs, 2, progress=True)
    # three components but two clusters: that graph fails on its own
    bad = np.kron(np.eye(3), np.ones((4, 4)))
    with pytest.raises(ValueError, match="graph 1"):
        gstat.spectral_clustering_batch([graphs[0], bad], 2)
    with pytest.warns(RuntimeWarning, match=r"1 of 2 graphs failed .*graphs 1 \(GSTAT_EINVAL\)"):
        labs = gstat.spectral_clustering_batch([graphs[0], bad], 2, errors="ignore")
    assert (labs[1] == -1).all() and (labs[0] >= 0).all()


@pytest.mark.parametrize("bad_value", [np.nan, np.inf])
def test_batch_nonfinite_weights_fail_one_graph(rng, bad_value):
    """A graph with NaN/Inf weights is that graph's failure: errors='ignore'
    labels it -1 and names it; the others are clustered as alone."""
    graphs = [random_graph(rng, 12, 0.6) + 0.01 * (1 - np.eye(12)) for _ in range(3)]
    poisoned = graphs[1].copy()
    poisoned[2, 5] = poisoned[5, 2] = bad_value
    alone = gstat.spectral_clustering_batch([graphs[0], graphs[2]], 2)
    for form in (np.stack, list):  # dense batch, and a list of graphs (CSR for scipy, dense here)
        batch = form([graphs[0], poisoned, graphs[2]])
        with pytest.raises(ValueError, match="graph 1.*NaN or Inf"):
            gstat.spectral_clustering_batch(batch, 2)
        with pytest.warns(RuntimeWarning, match=r"graphs 1 \(GSTAT_ENOTFINITE\).*NaN or Inf"):
            labs = gstat.spectral_clustering_batch(batch, 2, errors="ignore")
        assert (labs[1] == -1).all()
        np.testing.assert_array_equal(labs[0], alone[0])
        np.testing.assert_array_equal(labs[2], alone[1])
    sparse = [sp.csr_matrix(g) for g in (graphs[0], poisoned, graphs[2])]
    with pytest.warns(RuntimeWarning, match="GSTAT_ENOTFINITE"):
        labs = gstat.spectral_clustering_batch(sparse, 2, errors="ignore")
    assert (labs[1] == -1).all() and (labs[0] >= 0).all()


def test_affinity_from_other_libraries_is_accepted():
    """scikit-learn's RBF kernel is symmetric only to its rounding (a few
    ulps): 'check' takes it, a kNN graph from kneighbors_graph clusters as
    scikit-learn clusters it, and a clear asymmetry is still refused."""
    from sklearn.cluster import SpectralClustering as SkSC
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score, pairwise_kernels
    from sklearn.neighbors import kneighbors_graph

    X, _ = make_blobs(300, n_features=5, centers=3, random_state=1)
    A = pairwise_kernels(X, metric="rbf", gamma=0.1)
    assert not (A == A.T).all()  # the premise: not exactly symmetric
    lab = gstat.SpectralClustering(3, affinity="precomputed", random_state=0).fit(A).labels_
    ref = SkSC(3, affinity="precomputed", random_state=0).fit(A).labels_
    assert adjusted_rand_score(lab, ref) == 1.0
    L = gstat.laplacian(A, normed=True)
    assert (L == L.T).all()
    K = kneighbors_graph(X, 10, include_self=True)
    K = 0.5 * (K + K.T)
    lab = gstat.SpectralClustering(3, affinity="precomputed",
                                   random_state=0).fit(K).labels_
    ref = SkSC(3, affinity="precomputed", random_state=0).fit(K.toarray()).labels_
    assert adjusted_rand_score(lab, ref) == 1.0
    B = A.copy()
    B[3, 7] *= 1 + 1e-6
    with pytest.raises(ValueError, match=r"not symmetric: entry \(7, 3\)|not symmetric: entry \(3, 7\)"):
        gstat.laplacian(B)


@pytest.mark.parametrize("solver", ["dense", "sparse"])
def test_more_components_than_clusters_warns_and_labels(solver):
    # scikit-learn warns that the graph is not fully connected and clusters
    # anyway; so does gstat (it used to refuse with "ask for at least ...")
    cliques = sp.block_diag([np.ones((20, 20)) - np.eye(20)] * 5).tocsr()
    for X, kw in ((cliques, {"affinity": "precomputed"}), (_breast_cancer(), {})):
        with pytest.warns(UserWarning, match="Graph is not fully connected"):
            sk = SkSC(2, random_state=0, **kw).fit(X)
        with pytest.warns(UserWarning, match="Graph is not fully connected"):
            ours = gstat.SpectralClustering(2, random_state=0, eigen_solver=solver, **kw).fit(X)
        assert ours.labels_.shape == sk.labels_.shape
        assert set(np.unique(ours.labels_)) <= {0, 1}
    with pytest.warns(UserWarning):
        lab = gstat.SpectralClustering(2, random_state=0, eigen_solver=solver,
                                       affinity="precomputed").fit(cliques).labels_
    # each component lies in one cluster
    assert all(len(np.unique(lab[20 * c:20 * (c + 1)])) == 1 for c in range(5))


@pytest.mark.parametrize("solver", ["dense", "sparse", "lanczos"])
def test_embedding_warns_exactly_when_disconnected(solver):
    # scikit-learn's warning for a graph that is not connected, and none for
    # one joined by edges so weak that its second eigenvalue is nearly 0
    cliques = sp.block_diag([np.ones((20, 20)) - np.eye(20)] * 3).tocsr()
    emb = gstat.SpectralEmbedding(2, affinity="precomputed", eigen_solver=solver, random_state=0)
    with pytest.warns(UserWarning, match="Graph is not fully connected"):
        emb.fit(cliques)
    joined = cliques.tolil()
    for a in (19, 39):
        joined[a, a + 1] = joined[a + 1, a] = 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        emb.fit(joined.tocsr())
    assert emb.eigenvalues_[1] < 1e-6


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer
    return load_breast_cancer().data  # unscaled: most RBF weights underflow


@pytest.mark.parametrize("param, value", [
    ("n_clusters", 0), ("n_clusters", -1), ("n_clusters", "gap"), ("eigen_solver", "eigsh"),
    ("assign_labels", "nearest"), ("affinity", "cosine_distance"), ("n_init", 0), ("gamma", -1.0),
    ("eigen_tol", "tight"), ("n_neighbors", 0)])
def test_invalid_parameters_raise_as_sklearn(param, value):
    from sklearn.utils._param_validation import InvalidParameterError
    X, _ = make_blobs(40, random_state=0)
    kw = {"n_clusters": 2, param: value}
    with pytest.raises(InvalidParameterError, match=param):
        SkSC(**kw).fit(X)
    with pytest.raises(InvalidParameterError, match=param):
        gstat.SpectralClustering(**kw).fit(X)
    if param in ("eigen_solver", "eigen_tol", "n_neighbors"):
        with pytest.raises(InvalidParameterError, match=param):
            gstat.SpectralEmbedding(**{param: value}).fit(X)


def test_eigengap_is_a_named_choice():
    X, y = make_blobs(150, centers=3, cluster_std=0.4, random_state=1)
    m = gstat.SpectralClustering("eigengap", random_state=0).fit(X)
    assert m.n_clusters_ == 3
    ref = gstat.SpectralClustering(3, random_state=0).fit(X)
    np.testing.assert_array_equal(m.labels_, ref.labels_)
    g = gstat.SpectralClustering(affinity="precomputed").fit(ref.affinity_matrix_).affinity_matrix_
    (lab,) = gstat.spectral_clustering_batch([g], "eigengap")
    assert len(np.unique(lab)) == 3


@pytest.mark.parametrize("solver", ["arpack", "lobpcg", "amg"])
def test_sklearn_solver_names_mean_the_iterative_solver(solver):
    X, y = make_blobs(300, centers=3, cluster_std=0.5, random_state=2)
    kw = dict(affinity="nearest_neighbors", n_neighbors=10, random_state=0)
    ours = gstat.SpectralClustering(3, eigen_solver=solver, **kw).fit(X)
    sparse = gstat.SpectralClustering(3, eigen_solver="sparse", **kw).fit(X)
    np.testing.assert_array_equal(ours.labels_, sparse.labels_)
    sk_solver = "arpack" if solver == "amg" else solver  # amg needs pyamg
    sk = SkSC(3, eigen_solver=sk_solver, **kw).fit(X)
    assert adjusted_rand_score(ours.labels_, sk.labels_) > 0.99


@pytest.mark.parametrize("n", [2000, 6000])
def test_lanczos_solver_agrees_on_a_graph_of_data(n):
    # one vector instead of a block: the same eigenvalues and labels where
    # the eigenvalues are simple (a connected kNN graph of blobs); from 4096
    # nodes the single vector keeps its basis only semi-orthogonal
    X, y = make_blobs(n, centers=4, cluster_std=1.5, random_state=4)
    kw = dict(affinity="nearest_neighbors", n_neighbors=10, random_state=0, eigen_tol=1e-10)
    lz = gstat.SpectralClustering(4, eigen_solver="lanczos", **kw).fit(X)
    sp = gstat.SpectralClustering(4, eigen_solver="sparse", **kw).fit(X)
    assert lz.graph_components_ == 1 and lz.eigen_solver_ == "sparse"
    np.testing.assert_allclose(lz.eigenvalues_, sp.eigenvalues_, atol=1e-8)
    assert adjusted_rand_score(lz.labels_, sp.labels_) == 1.0
    emb = gstat.SpectralEmbedding(3, eigen_solver="lanczos", n_neighbors=10, random_state=0)
    ref = gstat.SpectralEmbedding(3, eigen_solver="sparse", n_neighbors=10, random_state=0)
    a, b = emb.fit_transform(X), ref.fit_transform(X)
    # the same subspace: the projection of one basis on the other keeps its norm
    qa, _ = np.linalg.qr(a)
    qb, _ = np.linalg.qr(b)
    np.testing.assert_allclose(np.linalg.svd(qa.T @ qb, compute_uv=False), 1, atol=1e-6)


def test_lanczos_solver_beside_known_null_vectors():
    # two components (their null vectors known to the solver) and a tight
    # tolerance: with a basis of k + 12 columns the single vector stopped at
    # 1000 iterations (largest residual 1.1e-9); k + 24 converges
    X, y = make_blobs([4000, 2000], cluster_std=[0.5, 1.0], center_box=(-80, 80), random_state=2)
    kw = dict(affinity="nearest_neighbors", n_neighbors=8, random_state=0, eigen_tol=1e-10)
    lz = gstat.SpectralEmbedding(4, eigen_solver="lanczos", **kw)
    sp = gstat.SpectralEmbedding(4, eigen_solver="sparse", **kw)
    with pytest.warns(UserWarning, match="not fully connected"):
        a = lz.fit_transform(X)
    with pytest.warns(UserWarning, match="not fully connected"):
        b = sp.fit_transform(X)
    assert np.sum(lz.eigenvalues_ < 1e-9) == 2
    np.testing.assert_allclose(lz.eigenvalues_, sp.eigenvalues_, atol=1e-9)
    qa, _ = np.linalg.qr(a)
    qb, _ = np.linalg.qr(b)
    np.testing.assert_allclose(np.linalg.svd(qa.T @ qb, compute_uv=False), 1, atol=1e-6)


def test_auto_solver_is_the_fast_one_for_the_graph():
    # a kNN graph of 1000 nodes: 0.28 s dense, 0.036 s iterative (1 thread);
    # the rule (bench/README.md) sends it to the iterative solver
    X, y = make_blobs(1000, centers=3, cluster_std=0.6, random_state=3)
    kw = dict(affinity="nearest_neighbors", n_neighbors=10, random_state=0)
    auto = gstat.SpectralClustering(3, **kw).fit(X)
    assert auto.eigen_solver_ == "sparse"
    sk = SkSC(3, **kw).fit(X)
    assert adjusted_rand_score(auto.labels_, sk.labels_) > 0.99
    # small or dense graphs stay with the dense solver
    assert gstat.SpectralClustering(3, **kw).fit(X[:150]).eigen_solver_ == "dense"
    assert gstat.SpectralClustering(3, random_state=0).fit(X[:400]).eigen_solver_ == "dense"
    rng = np.random.default_rng(0)
    a = sp.random(400, 400, density=0.2, random_state=1, format="csr")
    g = (a + a.T + sp.eye(400, k=1) + sp.eye(400, k=-1)).tocsr()
    m = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(g)
    assert m.eigen_solver_ == "dense"


@pytest.mark.parametrize("kw", [
    {"assign_labels": "discretize"},
    {"assign_labels": "discretize", "affinity": "nearest_neighbors"},
    {"affinity": "laplacian", "gamma": 1.0}, {"affinity": "poly", "gamma": 1.0, "degree": 2},
    {"affinity": "sigmoid", "gamma": 0.5, "coef0": 1.5},
    {"affinity": lambda a, b: np.exp(-3.0 * np.sum((a - b) ** 2))},
    {"affinity": lambda a, b, s=1: np.exp(-s * np.sum((a - b) ** 2)), "kernel_params": {"s": 3}}])
def test_discretize_and_kernels_match_sklearn(kw):
    X, y = make_blobs(200, centers=3, cluster_std=0.6, random_state=0)
    X = X / np.abs(X).max()
    ours = gstat.SpectralClustering(3, random_state=0, **kw).fit(X)
    theirs = SkSC(3, random_state=0, **kw).fit(X)
    assert adjusted_rand_score(ours.labels_, theirs.labels_) == 1.0
    if not callable(kw.get("affinity")) and kw.get("affinity") in ("laplacian", "poly", "sigmoid"):
        np.testing.assert_allclose(ours.affinity_matrix_, theirs.affinity_matrix_, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("normed", [False, True])
def test_laplacian_dtype_and_forms_follow_scipy(rng, dtype, normed):
    a = (random_graph(rng, 9) * 10).astype(dtype)
    for graph in (a, sp.csr_array(a)):
        want, wd = csgraph.laplacian(graph, normed=normed, return_diag=True)
        got, gd = gstat.laplacian(graph, normed=normed, return_diag=True)
        assert got.dtype == want.dtype and gd.dtype == wd.dtype
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        dense = got.toarray() if sp.issparse(got) else got
        np.testing.assert_allclose(dense, want.toarray() if sp.issparse(want) else want,
                                   rtol=tol, atol=tol)
    x = rng.standard_normal((9, 2))
    want = csgraph.laplacian(a, normed=normed, form="lo")
    lo = gstat.laplacian(a, normed=normed, form="lo")
    assert lo.shape == want.shape and lo.dtype == want.dtype
    tol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(lo @ x, want @ x, rtol=tol, atol=tol)
    # (scipy 1.17's own operator fails on a 1-D vector: compared with its matrix)
    np.testing.assert_allclose(lo.matvec(x[:, 0]), csgraph.laplacian(a, normed=normed) @ x[:, 0],
                               rtol=tol, atol=tol)
    f = gstat.laplacian(a, normed=normed, form="function")
    np.testing.assert_allclose(f(x), want @ x, rtol=tol, atol=tol)
    assert gstat.laplacian(a, dtype=np.float32).dtype == np.float32


def test_batch_eigengap_spelled_zero_warns():
    g = np.kron(np.eye(2), np.ones((3, 3))) - np.eye(6)
    with pytest.warns(FutureWarning, match="'eigengap'"):
        (old,) = gstat.spectral_clustering_batch([g], 0)
    (new,) = gstat.spectral_clustering_batch([g], "eigengap")
    np.testing.assert_array_equal(old, new)
    assert len(np.unique(new)) == 2
