"""Graphs the way users hold them (issue 29): scipy.sparse in every format
(duplicates, unsorted indices, stored zeros, integer/bool/float32 data),
torch sparse tensors, networkx and igraph graphs, at every graph entry point; and progress reports
of the kNN search and the spectral fits."""
import numpy as np
import pytest

import gstat
from gstat import _core, _progress

sp = pytest.importorskip("scipy.sparse")

FORMATS = ["csr", "csc", "coo", "bsr", "lil", "dok", "dia"]
CLASSES = [sp.csr_matrix, sp.csr_array]


def _two_blocks(rng, n=24):
    """A weighted graph of two dense blocks joined by one weak edge."""
    h = n // 2
    A = np.zeros((n, n))
    for lo in (0, h):
        w = rng.uniform(0.5, 1.5, (h, h))
        A[lo:lo + h, lo:lo + h] = (w + w.T) / 2
    A[h - 1, h] = A[h, h - 1] = 0.05
    np.fill_diagonal(A, 0)
    return A


def _results(G):
    """What each entry point gives for the graph G (labels, Laplacian, embedding, batch)."""
    L = gstat.laplacian(G, normed=True)
    labels = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(G).labels_
    emb = gstat.SpectralEmbedding(2, affinity="precomputed", random_state=0).fit_transform(G)
    (batch,) = gstat.spectral_clustering_batch([G], 2)
    return L.toarray() if hasattr(L, "toarray") else L, labels, emb, batch


def _same(got, ref):
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_allclose(got[2], ref[2], rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(got[3], ref[3])


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_scipy_format_equals_the_csr(rng, fmt, cls):
    A = _two_blocks(rng)
    ref = _results(cls(A))
    M = cls(A).asformat(fmt)
    assert M.format == fmt
    _same(_results(M), ref)
    L = gstat.laplacian(M)
    assert sp.issparse(L) and isinstance(L, sp.sparray) == isinstance(M, sp.sparray)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_torch_sparse_tensors_equal_the_csr(rng, layout):
    torch = pytest.importorskip("torch")
    A = _two_blocks(rng)
    ref = _results(sp.csr_array(A))
    dense = torch.from_numpy(A)
    t = {"coo": dense.to_sparse, "csr": dense.to_sparse_csr, "csc": dense.to_sparse_csc}[layout]()
    if layout == "coo":  # an uncoalesced COO: every weight split in two entries
        i = torch.nonzero(dense).T
        v = dense[i[0], i[1]]
        t = torch.sparse_coo_tensor(torch.cat((i, i), 1), torch.cat((v / 4, 3 * v / 4)), A.shape)
        assert not t.is_coalesced()
    _same(_results(t), ref)
    L = gstat.laplacian(t.float())  # float32 weights: the host float64 path
    assert sp.issparse(L)
    np.testing.assert_allclose(L.toarray(), gstat.laplacian(sp.csr_array(A)).toarray(),
                               rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="2-D"):
        gstat.laplacian(torch.stack([dense, dense]).to_sparse())


def _messy_csr(A, rng, cls):
    """A as CSR with every row's entries shuffled, each weight split into two
    duplicate entries, and stored zeros at non-edges."""
    n = A.shape[0]
    indptr, indices, data = [0], [], []
    for i in range(n):
        cols = np.flatnonzero(A[i])
        part = rng.uniform(0.2, 0.8, len(cols)) * A[i, cols]
        zeros = rng.choice(np.flatnonzero(A[i] == 0), 2, replace=False)
        c = np.concatenate((cols, cols, zeros))
        v = np.concatenate((part, A[i, cols] - part, np.zeros(2)))
        order = rng.permutation(len(c))
        indices.extend(c[order])
        data.extend(v[order])
        indptr.append(len(indices))
    M = cls((np.array(data), np.array(indices), np.array(indptr)), shape=(n, n))
    assert not M.has_canonical_format
    return M


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_duplicates_unsorted_and_stored_zeros(rng, cls):
    A = _two_blocks(rng)
    ref = _results(cls(A))
    M = _messy_csr(A, rng, cls)
    before = (M.indices.copy(), M.data.copy())
    _same(_results(M), ref)
    # the caller's matrix is not canonicalized in place
    np.testing.assert_array_equal(M.indices, before[0])
    np.testing.assert_array_equal(M.data, before[1])
    coo_cls = sp.coo_array if cls is sp.csr_array else sp.coo_matrix
    C = M.tocoo()  # keeps the duplicates and the zeros
    r, c, v = C.row, C.col, C.data
    perm = rng.permutation(len(v))
    _same(_results(coo_cls((v[perm], (r[perm], c[perm])), shape=A.shape)), ref)
    csc = sp.csc_array if cls is sp.csr_array else sp.csc_matrix
    T = M.T  # CSC with the same mess (A is symmetric)
    _same(_results(csc((T.data, T.indices, T.indptr), shape=A.shape)), ref)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.float32])
def test_integer_bool_and_float32_weights(rng, dtype):
    A = _two_blocks(rng)
    W = (np.rint(A * 4) if dtype in (np.int64, np.int32) else A > 0.7 if dtype is np.bool_
         else A).astype(dtype)
    h = A.shape[0] // 2
    W[h - 1, h] = W[h, h - 1] = 1  # the bridge, which rounding would cut
    ref = _results(sp.csr_array(W.astype(np.float64)))
    got = _results(sp.coo_array(W))
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[3], ref[3])
    if dtype is not np.bool_:  # scipy's rule: the unnormalized Laplacian keeps int and float32
        assert gstat.laplacian(sp.coo_array(W)).dtype == dtype


def test_sparse_input_takes_the_csr_path(rng, monkeypatch):
    """Every format reaches the C library as CSR arrays, never densified."""
    A = _two_blocks(rng)
    seen = []
    real_lap, real_sc = _core.laplacian, _core.spectral_clustering

    def lap(g, *rest):
        seen.append(("laplacian", type(g).__name__, rest[3]))
        return real_lap(g, *rest)

    def sc(g, *rest):
        seen.append(("spectral_clustering", type(g).__name__))
        return real_sc(g, *rest)

    monkeypatch.setattr(_core, "laplacian", lap)
    monkeypatch.setattr(_core, "spectral_clustering", sc)
    for fmt in FORMATS:
        M = sp.csr_array(A).asformat(fmt)
        gstat.laplacian(M)
        gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(M)
    assert seen == [("laplacian", "tuple", True), ("spectral_clustering", "tuple")] * len(FORMATS)


# ---- networkx -------------------------------------------------------------------------

def _nx():
    return pytest.importorskip("networkx")


def test_karate_club_clusters_as_scikit_learn():
    nx = _nx()
    sk = pytest.importorskip("sklearn.cluster")
    from sklearn.metrics import adjusted_rand_score
    G = nx.karate_club_graph()  # weighted ('weight': interactions between members)
    for graph in (G, nx.Graph(G.edges())):  # and its unweighted structure
        A = nx.to_numpy_array(graph, nodelist=list(graph.nodes))
        ref = sk.SpectralClustering(2, affinity="precomputed", random_state=0).fit(A).labels_
        got = gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(graph)
        assert adjusted_rand_score(got.labels_, ref) == 1.0
        assert sp.issparse(got.affinity_matrix_)
        (batch,) = gstat.spectral_clustering_batch([graph], 2)
        assert adjusted_rand_score(batch, ref) == 1.0


def test_sklearn_kneighbors_graph_clusters_as_scikit_learn():
    """A directed kNN graph (asymmetric CSR): averaged with its transpose by
    both libraries (scikit-learn warns)."""
    sk = pytest.importorskip("sklearn.cluster")
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
    from sklearn.neighbors import kneighbors_graph
    X, _ = make_blobs(300, centers=3, random_state=0, cluster_std=0.8)
    G = kneighbors_graph(X, 10, include_self=True)
    with pytest.warns(UserWarning, match="not symmetric"):
        ref = sk.SpectralClustering(3, affinity="precomputed", random_state=0).fit(G).labels_
    got = gstat.SpectralClustering(3, affinity="precomputed", random_state=0).fit(G).labels_
    assert adjusted_rand_score(got, ref) == 1.0
    with pytest.raises(ValueError, match="not symmetric"):
        gstat.laplacian(G)  # symmetrize='check'
    np.testing.assert_allclose(gstat.laplacian(G, symmetrize="mean").toarray(),
                               gstat.laplacian((G + G.T) / 2).toarray(), rtol=1e-14)


def test_weighted_networkx_graph_in_node_order():
    nx = _nx()
    G = nx.Graph()
    G.add_nodes_from(["c", "a", "b", "d"])  # G.nodes order, not sorted
    G.add_edge("c", "a", weight=2.0)
    G.add_edge("a", "b", weight=0.5)
    G.add_edge("b", "d")  # no weight: 1
    G.add_edge("d", "d", weight=3.0)  # a self-loop: the diagonal
    A = np.array([[0, 2, 0, 0], [2, 0, .5, 0], [0, .5, 0, 1], [0, 0, 1, 3.]])
    for loops in ("drop", "keep"):
        np.testing.assert_allclose(gstat.laplacian(G, self_loops=loops).toarray(),
                                   gstat.laplacian(A, self_loops=loops), rtol=1e-15)
    M = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])  # parallel edges add up
    np.testing.assert_allclose(gstat.laplacian(M).toarray(),
                               gstat.laplacian(np.array([[0, 2, 0], [2, 0, 1], [0, 1, 0.]])))


def test_directed_networkx_graph_follows_symmetrize():
    nx = _nx()
    D = nx.DiGraph([(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="not symmetric: entry \\(0, 1\\)"):
        gstat.laplacian(D)  # symmetrize='check' (the default)
    with pytest.raises(ValueError, match="not symmetric"):
        gstat.spectral_clustering_batch([D], 1)
    undirected = gstat.laplacian(nx.path_graph(3)).toarray()
    np.testing.assert_allclose(gstat.laplacian(D, symmetrize="max").toarray(), undirected)
    both = nx.DiGraph([(0, 1), (1, 0), (1, 2), (2, 1)])  # symmetric: accepted as it is
    np.testing.assert_allclose(gstat.laplacian(both).toarray(), undirected)


# ---- igraph ---------------------------------------------------------------------------

def test_igraph_graphs_equal_their_networkx_twins():
    ig = pytest.importorskip("igraph")
    nx = _nx()
    G = nx.karate_club_graph()
    h = ig.Graph.from_networkx(G)
    assert h.es.attributes() == ["weight"]
    np.testing.assert_allclose(gstat.laplacian(h, normed=True).toarray(),
                               gstat.laplacian(G, normed=True).toarray(), rtol=1e-14)
    np.testing.assert_array_equal(
        gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(h).labels_,
        gstat.SpectralClustering(2, affinity="precomputed", random_state=0).fit(G).labels_)
    # unweighted, a loop and parallel edges; then directed
    u = ig.Graph([(0, 1), (0, 1), (1, 2), (2, 2)])
    A = np.array([[0, 2, 0], [2, 0, 1], [0, 1, 1.]])
    np.testing.assert_allclose(gstat.laplacian(u, self_loops="keep").toarray(),
                               gstat.laplacian(A, self_loops="keep"))
    d = ig.Graph([(0, 1), (1, 2)], directed=True)
    with pytest.raises(ValueError, match="not symmetric"):
        gstat.laplacian(d)
    np.testing.assert_allclose(gstat.laplacian(d, symmetrize="max").toarray(),
                               gstat.laplacian(nx.path_graph(3)).toarray())


# ---- refusals -------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [object(), "graph", None, {0: [1]}])
def test_non_graphs_are_refused_saying_what_a_graph_is(bad):
    with pytest.raises(TypeError, match="networkx graph or an igraph graph"):
        gstat.laplacian(bad)
    with pytest.raises(TypeError, match="networkx graph or an igraph graph"):
        gstat.spectral_clustering_batch([bad], 1)
    with pytest.raises(TypeError, match="networkx graph or an igraph graph"):
        gstat.SpectralClustering(2, affinity="precomputed").fit(bad)


def test_a_single_graph_is_not_taken_for_a_batch(rng):
    nx = _nx()
    with pytest.raises(TypeError, match="pass \\[graph\\]"):
        gstat.spectral_clustering_batch(nx.path_graph(4), 1)
    with pytest.raises(TypeError, match="pass \\[graph\\]"):
        gstat.spectral_clustering_batch(sp.csr_array(_two_blocks(rng)), 2)
    with pytest.raises(ValueError, match="must be square"):
        gstat.laplacian(np.zeros(3))


# ---- progress of the kNN search and the spectral fits ---------------------------------

@pytest.mark.parametrize("p", [3, 24])  # the k-d tree and the GEMM search
def test_kneighbors_reports_progress_and_results_are_unchanged(rng, p):
    X = rng.standard_normal((600, p))
    calls = []
    dist, ind = gstat.kneighbors(X, 5, progress=lambda d, t, what: calls.append((d, t, what)))
    assert calls and calls[-1][:2] == (600, 600) and all(c[2] == "knn" for c in calls)
    ref_d, ref_i = gstat.kneighbors(X, 5)
    np.testing.assert_array_equal(ind, ref_i)
    np.testing.assert_array_equal(dist, ref_d)
    calls.clear()
    g = gstat.kneighbors_graph(X, 5, progress=lambda d, t, what: calls.append((d, t)))
    assert calls[-1] == (600, 600)
    assert (g != gstat.kneighbors_graph(X, 5)).nnz == 0


def test_spectral_fit_reports_knn_and_eigensolver_progress(rng):
    X = rng.standard_normal((600, 3))  # one blob: a connected kNN graph
    whats = []
    kw = dict(affinity="nearest_neighbors", n_neighbors=8, eigen_solver="sparse", random_state=0)
    got = gstat.SpectralClustering(2, progress=lambda d, t, w: whats.append(w), **kw).fit(X)
    assert {"knn", "sparse_eigs"} <= set(whats)
    np.testing.assert_array_equal(got.labels_, gstat.SpectralClustering(2, **kw).fit(X).labels_)
    whats.clear()
    gstat.SpectralEmbedding(2, progress=lambda d, t, w: whats.append(w), **kw).fit(X)
    assert {"knn", "sparse_eigs"} <= set(whats)


def test_kneighbors_bar_by_default_only_when_interactive_and_long(rng, monkeypatch, fake_bars):
    X = rng.standard_normal((500, 20))
    gstat.kneighbors(X, 3)  # pytest captures stderr: not interactive
    assert not fake_bars
    monkeypatch.setattr(_progress, "interactive", lambda: True)
    monkeypatch.setattr(_progress, "LONG_WORK", 1.0)
    gstat.kneighbors_graph(X, 3)
    (bar,) = fake_bars
    assert bar.desc == "kneighbors" and bar.n == bar.total == 500 and bar.closed
    gstat.SpectralClustering(2, affinity="nearest_neighbors", random_state=0, progress=False).fit(X)
    assert len(fake_bars) == 1
