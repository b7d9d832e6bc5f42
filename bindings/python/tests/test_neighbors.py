"""gstat.kneighbors / kneighbors_graph against scikit-learn and brute force."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors, kneighbors_graph

import gstat


def brute(X, k, include_self):
    """Lists by (distance, index) from exact float64 differences."""
    X = np.asarray(X, dtype=np.float64)
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    n = len(X)
    idx = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        others = np.array([j for j in range(n) if j != i])
        order = others[np.lexsort((others, d2[i, others]))]
        row = ([i] + list(order[: k - 1])) if include_self else list(order[:k])
        idx[i] = row
    return idx


@pytest.mark.parametrize("p", [2, 10, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matches_sklearn(p, dtype):
    rng = np.random.default_rng(p)
    X = rng.standard_normal((600, p)).astype(dtype)
    dist, ind = gstat.kneighbors(X, 7)
    ref_d, ref_i = NearestNeighbors(n_neighbors=7).fit(X.astype(np.float64)).kneighbors()
    np.testing.assert_array_equal(ind, ref_i)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-6 if dtype == np.float32 else 1e-12)
    assert ind.dtype == np.int64 and dist.dtype == np.float64
    # with the point itself: scikit-learn's kneighbors(X) on distinct points
    dist, ind = gstat.kneighbors(X, 7, include_self=True)
    ref_d, ref_i = NearestNeighbors(n_neighbors=7).fit(X.astype(np.float64)).kneighbors(X.astype(np.float64))
    np.testing.assert_array_equal(ind, ref_i)
    assert (ind[:, 0] == np.arange(len(X))).all() and (dist[:, 0] == 0).all()


@pytest.mark.parametrize("p", [1, 3, 20])
def test_ties_by_index(p):
    rng = np.random.default_rng(7)
    X = rng.integers(0, 3, size=(300, p)).astype(np.float64)  # many exact ties, duplicates
    for self_ in (False, True):
        ind = gstat.kneighbors(X, 9, include_self=self_, return_distance=False)
        np.testing.assert_array_equal(ind, brute(X, 9, self_))


@pytest.mark.parametrize("mode", ["connectivity", "distance"])
@pytest.mark.parametrize("include_self", [False, True])
def test_graph_matches_sklearn(mode, include_self):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 5))
    G = gstat.kneighbors_graph(X, 6, mode=mode, include_self=include_self)
    R = kneighbors_graph(X, 6, mode=mode, include_self=include_self)
    assert sp.isspmatrix_csr(G) and G.shape == R.shape and G.nnz == R.nnz
    np.testing.assert_allclose(G.toarray(), R.toarray(), rtol=1e-12, atol=0)
    assert G.has_sorted_indices


def test_refusals():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"k=4 must be in \[1, 3\] for 4 points"):
        gstat.kneighbors(X, 4)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="knn: X row 2 column 1 is NaN or Inf"):
        gstat.kneighbors(X, 1)
    with pytest.raises(ValueError, match="2-D"):
        gstat.kneighbors(np.zeros(5), 1)
    with pytest.raises(TypeError, match="sparse"):
        gstat.kneighbors(sp.eye(5, format="csr"), 1)
    with pytest.raises(ValueError, match="mode"):
        gstat.kneighbors_graph(np.zeros((4, 2)), 1, mode="weights")


def test_one_point_many_times():
    X = np.ones((50000, 3))  # the tie rule keeps the tree's work bounded
    ind = gstat.kneighbors(X, 5, return_distance=False)
    assert (ind[10] == [0, 1, 2, 3, 4]).all() and (ind[2] == [0, 1, 3, 4, 5]).all()


@pytest.mark.parametrize("algorithm", ["auto", "kd_tree", "ball_tree", "brute"])
def test_exact_algorithms_agree(algorithm):
    X = np.random.default_rng(5).standard_normal((300, 6))
    d, i = gstat.kneighbors(X, 5, algorithm=algorithm)
    ref_d, ref_i = gstat.kneighbors(X, 5)
    assert np.array_equal(i, ref_i) and np.array_equal(d, ref_d)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nndescent_recall(dtype):
    """The approximate search finds >= 99% of the true neighbours (a tie at
    the k-th distance counts), lists exact distances, repeats for a seed."""
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(4000, 48, centers=10, random_state=0)
    X = X.astype(dtype)
    d, i = gstat.kneighbors(X, 10, algorithm="brute")
    da, ia = gstat.kneighbors(X, 10, algorithm="nndescent", random_state=1)
    assert (da <= d[:, -1:]).mean() >= 0.99
    Xd = X.astype(np.float64)
    assert np.allclose(da, np.linalg.norm(Xd[ia] - Xd[:, None, :], axis=2), rtol=1e-12)
    db, ib = gstat.kneighbors(X, 10, algorithm="nndescent", random_state=1)
    assert np.array_equal(ia, ib) and np.array_equal(da, db)
    G = gstat.kneighbors_graph(X, 10, algorithm="nndescent", random_state=1)
    assert G.nnz == 40000 and (G.indices.reshape(-1, 10) == np.sort(ia, axis=1)).all()


@pytest.mark.filterwarnings("ignore:Graph is not fully connected")
def test_nndescent_in_spectral_clustering():
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
    X, y = make_blobs(3000, 40, centers=5, random_state=2)
    sc = gstat.SpectralClustering(5, affinity="nearest_neighbors", knn_algorithm="nndescent",
                                  random_state=0).fit(X)
    assert adjusted_rand_score(y, sc.labels_) > 0.99
    with pytest.raises(ValueError, match="knn_algorithm"):
        gstat.SpectralClustering(5, affinity="nearest_neighbors", knn_algorithm="ball").fit(X)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        gstat.kneighbors(X, 3, algorithm="ball")
    with pytest.raises(ValueError, match="16 dimensions"):
        gstat.kneighbors(X, 3, algorithm="kd_tree")
