"""gstat.CovarianceAccumulator: chunked and merged statistics equal one pass."""
import pickle

import numpy as np
import pytest

import gstat


@pytest.fixture
def data(rng):
    # large mean, small spread: the case one-pass formulas get wrong
    return rng.standard_normal((2000, 7)) * np.arange(1, 8) + 1e6


def chunked(x, cuts, **kw):
    acc = gstat.CovarianceAccumulator(x.shape[1], **kw)
    for part in np.split(x, cuts):
        acc.add(part)
    return acc


def test_chunks_equal_numpy(data):
    acc = chunked(data, [1, 2, 500, 1999])  # 1-row and 0-row chunks included
    assert acc.n_samples == 2000 and acc.weight == 2000.0 and acc.n_skipped == 0
    np.testing.assert_allclose(acc.covariance(), np.cov(data, rowvar=False), rtol=1e-10)
    np.testing.assert_allclose(acc.covariance(ddof=0), np.cov(data, rowvar=False, ddof=0),
                               rtol=1e-10)
    np.testing.assert_allclose(acc.correlation(), np.corrcoef(data, rowvar=False), atol=1e-12)
    np.testing.assert_allclose(acc.mean, data.mean(axis=0), rtol=1e-14)


def test_merge_pickle_and_state(data):
    a = gstat.CovarianceAccumulator(7).add(data[:300])
    b = pickle.loads(pickle.dumps(gstat.CovarianceAccumulator(7).add(data[300:])))
    a.merge(b)
    np.testing.assert_allclose(a.covariance(), np.cov(data, rowvar=False), rtol=1e-10)
    c = gstat.CovarianceAccumulator.from_state(7, "everything", a.state)
    np.testing.assert_array_equal(c.covariance(), a.covariance())
    empty = gstat.CovarianceAccumulator(7)
    assert empty.n_samples == 0
    np.testing.assert_array_equal(empty.copy().merge(a).covariance(), a.covariance())
    assert a.copy().merge(empty).n_samples == 2000


def test_frequency_weights_equal_repeated_rows(rng):
    x = rng.standard_normal((50, 4))
    w = rng.integers(0, 4, 50)
    acc = gstat.CovarianceAccumulator(4).add(x[:20], w[:20]).add(x[20:], w[20:])
    np.testing.assert_allclose(acc.covariance(), np.cov(np.repeat(x, w, axis=0), rowvar=False),
                               rtol=1e-12)
    assert acc.weight == w.sum()


def test_complete_obs_skips_rows(data):
    x = data.copy()
    x[[3, 700, 1500], [0, 4, 6]] = np.nan
    acc = chunked(x, [600, 1200], missing="complete.obs")
    keep = ~np.isnan(x).any(axis=1)
    assert acc.n_samples == keep.sum() and acc.n_skipped == 3
    np.testing.assert_allclose(acc.covariance(), np.cov(x[keep], rowvar=False), rtol=1e-10)
    nan = chunked(x, [600]).covariance()  # 'everything': NaN poisons its rows and columns
    assert np.isnan(nan[0]).all() and np.isnan(nan[:, 4]).all() and np.isfinite(nan[1, 1])


def test_pca_equals_pca_fit(data):
    acc = chunked(data, [100, 900])
    for k in (3, 0.9, None):
        got, ref = acc.pca(k), gstat.PCA(k, svd_solver="covariance_eigh").fit(data)
        assert got.n_components_ == ref.n_components_ and got.n_samples_ == 2000
        np.testing.assert_allclose(got.components_, ref.components_, atol=1e-9)
        np.testing.assert_allclose(got.explained_variance_, ref.explained_variance_, rtol=1e-9)
        np.testing.assert_allclose(got.explained_variance_ratio_, ref.explained_variance_ratio_,
                                   rtol=1e-9)
        np.testing.assert_allclose(got.noise_variance_, ref.noise_variance_, rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(got.transform(data[:10]), ref.transform(data[:10]), atol=1e-6)
    w = acc.pca(2, whiten=True).transform(data)
    np.testing.assert_allclose(w.var(axis=0, ddof=1), [1, 1], rtol=1e-9)


def test_errors(data):
    with pytest.raises(ValueError, match="n_features"):
        gstat.CovarianceAccumulator(0)
    with pytest.raises(ValueError, match="missing"):
        gstat.CovarianceAccumulator(3, missing="pairwise")
    acc = gstat.CovarianceAccumulator(7)
    with pytest.raises(ValueError):
        acc.add(data[:, :6])
    with pytest.raises(ValueError):
        acc.add(data[0])  # a 1-D row is not a chunk
    assert acc.state is None  # failed adds leave it unchanged
    with pytest.raises(ValueError, match="n_features=3"):
        acc.merge(gstat.CovarianceAccumulator(3))
    with pytest.raises(ValueError, match="missing"):
        acc.merge(gstat.CovarianceAccumulator(7, missing="complete"))
    with pytest.raises(ValueError, match="state"):
        gstat.CovarianceAccumulator.from_state(7, "everything", np.zeros(5))
    with pytest.raises(ValueError):
        gstat.CovarianceAccumulator.from_state(7, "everything", np.zeros_like(
            gstat.CovarianceAccumulator(7).add(data).state))  # right size, not a state
    with pytest.raises(ValueError, match="n_components"):
        acc.pca(2)  # no rows
