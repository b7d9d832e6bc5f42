import warnings

import numpy as np
import pytest
import scipy.spatial.distance
import sklearn.covariance as skcov

import gstat


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_cov_matches_numpy(rng, dtype, tol):
    x = (rng.standard_normal((50, 4)) * [1, 10, 0.1, 3] + 100).astype(dtype)
    ref = np.cov(x.astype(np.float64), rowvar=False)
    np.testing.assert_allclose(gstat.cov(x, rowvar=False), ref, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(gstat.cov(x.T, rowvar=True), ref, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(gstat.cov(np.asfortranarray(x), rowvar=False), ref, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(gstat.cov(x, rowvar=False, ddof=0), np.cov(x.astype(np.float64), rowvar=False, ddof=0),
                               rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(gstat.corrcoef(x, rowvar=False), np.corrcoef(x.astype(np.float64), rowvar=False),
                               rtol=tol * 10, atol=tol)
    assert gstat.cov(x, rowvar=False).dtype == dtype
    assert gstat.cov(x, rowvar=False, dtype=np.float64).dtype == np.float64


def test_cov_weights(rng):
    x = rng.standard_normal((30, 3))
    fw = rng.integers(0, 4, 30)
    aw = rng.random(30)
    for kw in ({"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw}):
        for ddof in (0, 1, 2):
            np.testing.assert_allclose(gstat.cov(x, rowvar=False, ddof=ddof, **kw),
                                       np.cov(x, rowvar=False, ddof=ddof, **kw), rtol=1e-11,
                                       atol=1e-13)


def test_cov_one_variable_and_batch(rng):
    v = rng.standard_normal(20)
    c = gstat.cov(v, rowvar=False)
    assert np.ndim(c) == 0
    np.testing.assert_allclose(c, np.cov(v))
    xb = rng.standard_normal((3, 2, 40, 5))
    cb = gstat.cov(xb, rowvar=False)
    assert cb.shape == (3, 2, 5, 5)
    np.testing.assert_allclose(cb[2, 1], np.cov(xb[2, 1], rowvar=False), rtol=1e-12)
    out = np.empty((3, 2, 5, 5))
    assert gstat.cov(xb, rowvar=False, out=out) is out


def test_cov_missing_values(rng):
    x = rng.standard_normal((40, 4))
    x[3, 1] = x[10, 2] = x[11, 0] = np.nan
    c = gstat.cov(x, rowvar=False)  # NaN propagates
    assert np.isnan(c[1, 1]) and not np.isnan(c[3, 3])
    complete = x[~np.isnan(x).any(axis=1)]
    np.testing.assert_allclose(gstat.cov(x, rowvar=False, missing="complete"), np.cov(complete, rowvar=False),
                               rtol=1e-12)
    pw = gstat.cov(x, rowvar=False, missing="pairwise")
    for i in range(4):
        for j in range(4):
            ok = ~np.isnan(x[:, i]) & ~np.isnan(x[:, j])
            ref = np.cov(x[ok][:, [i, j]], rowvar=False)[0, 1]
            np.testing.assert_allclose(pw[i, j], ref, rtol=1e-12)
    np.testing.assert_allclose(gstat.corrcoef(x, rowvar=False, missing="complete"),
                               np.corrcoef(complete, rowvar=False), rtol=1e-12)


def test_mahalanobis_matches_scipy(rng):
    x = rng.standard_normal((25, 3))
    s = np.cov(x, rowvar=False)
    c = x.mean(axis=0)
    vi = np.linalg.inv(s)
    ref = np.array([scipy.spatial.distance.mahalanobis(r, c, vi) ** 2 for r in x])
    np.testing.assert_allclose(gstat.mahalanobis(x, c, s, squared=True), ref, rtol=1e-10)
    np.testing.assert_allclose(gstat.mahalanobis(x, c, vi, inverted=True, squared=True), ref, rtol=1e-10)
    assert isinstance(gstat.mahalanobis(x[0], c, s, squared=True), float)


@pytest.mark.parametrize("ours, theirs", [
    (gstat.LedoitWolf, skcov.LedoitWolf), (gstat.OAS, skcov.OAS),
    (gstat.EmpiricalCovariance, skcov.EmpiricalCovariance)])
@pytest.mark.parametrize("shape", [(60, 5), (10, 30)])
def test_estimators_match_sklearn(rng, ours, theirs, shape):
    x = rng.standard_normal(shape) @ rng.standard_normal((shape[1], shape[1])) + 3
    a, b = ours().fit(x), theirs().fit(x)
    np.testing.assert_allclose(a.covariance_, b.covariance_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.location_, b.location_, rtol=1e-12)
    if hasattr(b, "shrinkage_"):
        np.testing.assert_allclose(a.shrinkage_, b.shrinkage_, rtol=1e-9)
    if shape[0] > shape[1]:
        np.testing.assert_allclose(a.precision_, b.precision_, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(a.mahalanobis(x[:7]), b.mahalanobis(x[:7]), rtol=1e-7)
    assert a.n_features_in_ == shape[1]


def test_assume_centered(rng):
    x = rng.standard_normal((40, 6)) + 0.5  # not centred: the option matters
    for ours, theirs in ((gstat.LedoitWolf, skcov.LedoitWolf), (gstat.OAS, skcov.OAS),
                         (gstat.EmpiricalCovariance, skcov.EmpiricalCovariance)):
        a, b = ours(assume_centered=True).fit(x), theirs(assume_centered=True).fit(x)
        np.testing.assert_allclose(a.covariance_, b.covariance_, rtol=1e-9)
        np.testing.assert_allclose(a.location_, b.location_)


class _FakeCudaTensor:
    """Quacks like a CUDA DLPack tensor (no GPU needed): the refusal path."""

    shape = (4, 4)
    ndim = 2

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("must not be read")


def test_cuda_tensor_where_unsupported_is_a_gstat_error():
    # a device tensor of a kind gstat cannot allocate outputs for: refused
    # before it is read (test_device_inputs.py follows device data further)
    with pytest.raises(gstat.UnsupportedError, match="cannot allocate device outputs"):
        gstat.laplacian(_FakeCudaTensor())
    with pytest.raises(gstat.UnsupportedError, match="cannot allocate device outputs"):
        gstat.SpectralClustering(2).fit(_FakeCudaTensor())


def test_cov_rowvar_default_is_numpys(rng):
    # numpy's default orientation (variables in rows), with a FutureWarning for
    # one release where the old default (False) gave another shape
    x = rng.standard_normal((100, 5))
    for ours, theirs in ((gstat.cov, np.cov), (gstat.corrcoef, np.corrcoef)):
        with pytest.warns(FutureWarning, match="rowvar now defaults to True"):
            got = ours(x)
        assert got.shape == (100, 100)
        np.testing.assert_allclose(got, theirs(x), rtol=1e-10, atol=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            np.testing.assert_allclose(ours(x, rowvar=True), theirs(x), rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(ours(x, rowvar=False), theirs(x, rowvar=False),
                                       rtol=1e-10, atol=1e-12)
            sq = rng.standard_normal((6, 6))  # same shape either way: no warning
            np.testing.assert_allclose(ours(sq), theirs(sq), rtol=1e-10, atol=1e-12)
            v = rng.standard_normal(9)
            np.testing.assert_allclose(ours(v), theirs(v), rtol=1e-12)


def test_mahalanobis_squared_or_distance_explicitly(rng):
    x = rng.standard_normal((25, 3))
    s = np.cov(x, rowvar=False)
    c = x.mean(axis=0)
    vi = np.linalg.inv(s)
    dist = np.array([scipy.spatial.distance.mahalanobis(r, c, vi) for r in x])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(gstat.mahalanobis(x, c, vi, inverted=True, squared=False), dist,
                                   rtol=1e-10)
        np.testing.assert_allclose(gstat.mahalanobis(x, c, s, squared=True), dist ** 2,
                                   rtol=1e-10)
        assert gstat.mahalanobis(x[3], c, vi, inverted=True, squared=False) == pytest.approx(
            scipy.spatial.distance.mahalanobis(x[3], c, vi), rel=1e-10)
    with pytest.warns(FutureWarning, match="squared=False"):
        legacy = gstat.mahalanobis(x, c, s)  # gstat 0.1: squared
    np.testing.assert_allclose(legacy, dist ** 2, rtol=1e-10)
    # the estimator's method is scikit-learn's: squared, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(gstat.EmpiricalCovariance().fit(x).mahalanobis(x),
                                   skcov.EmpiricalCovariance().fit(x).mahalanobis(x), rtol=1e-9)
