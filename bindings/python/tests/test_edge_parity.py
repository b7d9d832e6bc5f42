"""Edge cases where gstat must behave as numpy / scikit-learn do (issue: hostile input)."""
import warnings

import numpy as np
import pytest

import gstat

sklearn = pytest.importorskip("sklearn.decomposition")


def test_cov_divisor_at_or_below_zero_is_numpys_division_by_zero():
    x = np.random.default_rng(0).standard_normal((3, 2))
    x[:, 1] = 4.0  # a constant column: zero co-moments give NaN, not inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for ddof in (3, 5):
            want = np.cov(x, rowvar=False, ddof=ddof)
            got = gstat.cov(x, rowvar=False, ddof=ddof)
            assert np.isinf(want).any() and np.isnan(want).any()
            np.testing.assert_array_equal(got, want)
        one = np.array([[1.0, 2.0]])
        np.testing.assert_array_equal(gstat.cov(one, rowvar=False), np.cov(one, rowvar=False))  # all NaN


@pytest.mark.parametrize("x", [np.array([[1.0, 2.0, 3.0]]), np.ones((5, 3)),
                               np.tile([2.0, -1.0], (4, 1))])
def test_pca_without_variance_matches_sklearn(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sk = sklearn.PCA().fit(x)
    gs = gstat.PCA().fit(x)
    np.testing.assert_array_equal(gs.explained_variance_ratio_, sk.explained_variance_ratio_)
    np.testing.assert_array_equal(gs.explained_variance_, sk.explained_variance_)
    np.testing.assert_array_equal(gs.singular_values_, sk.singular_values_)


def test_masked_arrays_are_refused_or_honoured():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))
    a = a + a.T
    mask = np.zeros((4, 4), bool)
    mask[0, 1] = mask[1, 0] = True
    m = np.ma.masked_array(a, mask=mask)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        gstat.linalg.eigvalsh(m)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        gstat.linalg.cholesky(m)
    # an array without masked entries is an ordinary array
    np.testing.assert_allclose(gstat.linalg.eigvalsh(np.ma.masked_array(a)),
                               np.linalg.eigvalsh(a), rtol=1e-12, atol=1e-12)
    x = np.ma.masked_invalid(rng.standard_normal((30, 3)))
    x[[2, 7], 0] = np.ma.masked
    x[11, 2] = np.ma.masked
    with pytest.raises(TypeError, match="missing='pairwise'"):
        gstat.cov(x, rowvar=False)
    # pairwise (R's pairwise.complete.obs): each pair over the rows where both are present
    # (np.ma.cov differs: it centres each column over all of its own present rows)
    want = np.empty((3, 3))
    present = ~np.ma.getmaskarray(x)
    for i in range(3):
        for j in range(3):
            rows = present[:, i] & present[:, j]
            want[i, j] = np.cov(np.ma.getdata(x)[rows][:, [i, j]], rowvar=False)[0, 1]
    np.testing.assert_allclose(gstat.cov(x, rowvar=False, missing="pairwise"), want, rtol=1e-12)
    keep = ~np.ma.getmaskarray(x).any(axis=1)
    np.testing.assert_allclose(gstat.cov(x, rowvar=False, missing="complete"),
                               np.cov(np.ma.getdata(x)[keep], rowvar=False), rtol=1e-12)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        gstat.PCA(2).fit(x)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        gstat.kneighbors(x, 3)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        gstat.mahalanobis(x, None, np.eye(3), squared=True)
