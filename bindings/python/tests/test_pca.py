import os

import numpy as np
import pytest
import sklearn.decomposition as skd
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import gstat

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data")


def wine():
    x = np.loadtxt(os.path.join(DATA, "wine.csv"), delimiter=",", skiprows=1)
    y = np.loadtxt(os.path.join(DATA, "wine_labels.csv"), delimiter=",", skiprows=1).astype(int)
    return x, y


ATTRS = ["components_", "explained_variance_", "explained_variance_ratio_", "singular_values_",
         "mean_"]


def assert_same_pca(a, b, rtol=1e-8, atol=1e-10):
    assert a.n_components_ == b.n_components_
    for name in ATTRS:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=rtol, atol=atol,
                                   err_msg=name)
    np.testing.assert_allclose(a.noise_variance_, b.noise_variance_, rtol=rtol, atol=atol)


@pytest.mark.parametrize("k", [None, 1, 3, 0.9])
@pytest.mark.parametrize("solver", ["auto", "full", "covariance_eigh"])
def test_pca_matches_sklearn(k, solver):
    x, _ = wine()
    sk_solver = solver if solver != "auto" else "full"
    a = gstat.PCA(k, svd_solver=solver).fit(x)
    b = skd.PCA(k, svd_solver=sk_solver).fit(x)
    assert_same_pca(a, b)
    assert a.n_features_in_ == 13 and a.n_samples_ == 178
    np.testing.assert_allclose(a.transform(x[:20]), b.transform(x[:20]), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(a.fit_transform(x), b.fit_transform(x), rtol=1e-7, atol=1e-8)
    z = a.transform(x)
    np.testing.assert_allclose(a.inverse_transform(z), b.inverse_transform(z), rtol=1e-8, atol=1e-8)


def test_pca_wide_and_whiten(rng):
    x = rng.standard_normal((20, 50))
    a, b = gstat.PCA(5, whiten=True).fit(x), skd.PCA(5, whiten=True, svd_solver="full").fit(x)
    assert_same_pca(a, b)
    np.testing.assert_allclose(a.transform(x), b.transform(x), rtol=1e-7, atol=1e-8)
    z = a.transform(x)
    np.testing.assert_allclose(a.inverse_transform(z), b.inverse_transform(z), rtol=1e-7, atol=1e-8)


def test_pca_randomized_close(rng):
    x = rng.standard_normal((3000, 40)) @ rng.standard_normal((40, 40))
    a = gstat.PCA(5, svd_solver="randomized", random_state=0).fit(x)
    b = skd.PCA(5, svd_solver="full").fit(x)
    np.testing.assert_allclose(a.explained_variance_, b.explained_variance_, rtol=1e-3)
    np.testing.assert_allclose(np.abs(a.components_ @ b.components_.T), np.eye(5), atol=1e-2)


def test_pca_float32_preserved(rng):
    x = rng.standard_normal((100, 6)).astype(np.float32)
    a = gstat.PCA(3).fit(x)
    assert a.components_.dtype == np.float32
    assert a.transform(x).dtype == np.float32
    assert a.fit_transform(x).dtype == np.float32
    b = skd.PCA(3).fit(x.astype(np.float64))
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-4, atol=1e-4)


def test_pca_in_pipeline():
    x, y = wine()
    pipe = Pipeline([("scale", StandardScaler()), ("pca", gstat.PCA(2)),
                     ("clf", LogisticRegression())]).fit(x, y)
    assert pipe.score(x, y) > 0.9
    ref = Pipeline([("scale", StandardScaler()), ("pca", skd.PCA(2)),
                    ("clf", LogisticRegression())]).fit(x, y)
    np.testing.assert_array_equal(pipe.predict(x), ref.predict(x))
    assert list(pipe[:-1].get_feature_names_out()) == ["pca0", "pca1"]


def test_get_set_params():
    p = gstat.PCA(3, whiten=True)
    assert p.get_params()["n_components"] == 3 and p.get_params()["whiten"]
    p.set_params(n_components=2, backend="cpu")
    assert p.n_components == 2 and p.backend == "cpu"
    p.fit(np.random.default_rng(0).standard_normal((30, 4)))
    assert p.backend_ == "cpu"


def _low_rank(rng, n=200, p=10):
    scale = np.array([5, 4, 3, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.1])[:p]
    return rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) * scale + 3


@pytest.mark.parametrize("kw", [{"n_components": 3}, {"n_components": 3, "whiten": True},
                                {"n_components": "mle"}, {"n_components": 0.9}, {}])
def test_probabilistic_model_matches_sklearn(rng, kw):
    from sklearn.decomposition import PCA as SkPCA
    X = _low_rank(rng)
    ours, theirs = gstat.PCA(**kw).fit(X), SkPCA(**kw).fit(X)
    assert ours.n_components_ == theirs.n_components_
    np.testing.assert_allclose(ours.noise_variance_, theirs.noise_variance_, rtol=1e-9)
    np.testing.assert_allclose(ours.get_covariance(), theirs.get_covariance(), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(ours.get_precision(), theirs.get_precision(), rtol=1e-7,
                               atol=1e-9)
    # the precision has a condition number ~1e4 here: rounding of the fits shows
    np.testing.assert_allclose(ours.score_samples(X), theirs.score_samples(X), rtol=1e-7)
    np.testing.assert_allclose(ours.score(X), theirs.score(X), rtol=1e-8)
    if kw.get("n_components") == "mle":
        np.testing.assert_allclose(np.abs(ours.fit_transform(X)),
                                   np.abs(theirs.transform(X)), rtol=1e-7, atol=1e-9)


def test_mle_refusals_match_sklearn(rng):
    with pytest.raises(ValueError, match="n_samples >= n_features"):
        gstat.PCA("mle").fit(rng.standard_normal((5, 8)))
    with pytest.raises(ValueError, match="arpack"):
        gstat.PCA("mle", svd_solver="arpack").fit(rng.standard_normal((50, 8)))


@pytest.mark.parametrize("kw", [{"n_components": 4}, {"n_components": 4, "whiten": True},
                                {"n_components": "mle"}])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_matches_sklearn(kw, fmt):
    import scipy.sparse as sp
    from sklearn.decomposition import PCA as SkPCA
    X = sp.random(300, 12, density=0.2, random_state=0, format=fmt) * 10
    ours = gstat.PCA(**kw).fit(X)
    theirs = SkPCA(svd_solver="covariance_eigh", **kw).fit(X)
    assert ours.n_components_ == theirs.n_components_
    for a in ("components_", "explained_variance_", "explained_variance_ratio_",
              "singular_values_", "mean_"):
        np.testing.assert_allclose(getattr(ours, a), getattr(theirs, a), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.noise_variance_, theirs.noise_variance_, rtol=1e-9)
    np.testing.assert_allclose(ours.transform(X), theirs.transform(X), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(gstat.PCA(**kw).fit_transform(X), theirs.transform(X), rtol=1e-9,
                               atol=1e-11)
    with pytest.raises(TypeError, match="sparse"):
        gstat.PCA(2, svd_solver="randomized").fit(X)
