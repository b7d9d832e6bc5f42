"""The Dask recipe (gstat.dask) on a local Dask cluster of worker processes."""
import numpy as np
import pytest

import gstat

da = pytest.importorskip("dask.array", reason="dask is not installed")
distributed = pytest.importorskip("dask.distributed", reason="dask.distributed is not installed")
import gstat.dask  # noqa: E402  (needs dask)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_pca_and_covariance_on_cluster(client, rng):
    x_np = rng.standard_normal((6000, 12)) * np.linspace(1, 6, 12) + 50
    x = da.from_array(x_np, chunks=(700, 5))  # ragged row blocks, split columns
    model = gstat.dask.pca(x, 4, split_every=3)
    ref = gstat.PCA(4, svd_solver="covariance_eigh").fit(x_np)
    assert isinstance(model, gstat.PCA) and model.n_samples_ == 6000
    np.testing.assert_allclose(model.components_, ref.components_, atol=1e-10)
    np.testing.assert_allclose(model.explained_variance_, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(model.mean_, ref.mean_, rtol=1e-13)
    rows = x.rechunk({1: -1})
    scores = rows.map_blocks(model.transform, chunks=(rows.chunks[0], (4,)), dtype=float)
    np.testing.assert_allclose(scores.compute(), ref.transform(x_np), atol=1e-8)
    np.testing.assert_allclose(gstat.dask.covariance(x), np.cov(x_np, rowvar=False), rtol=1e-10)
    np.testing.assert_allclose(gstat.dask.corrcoef(x), np.corrcoef(x_np, rowvar=False), atol=1e-12)
    workers = client.run(lambda: 1)
    assert len(workers) == 2


def test_missing_rows_and_tree(client, rng):
    x_np = rng.standard_normal((1000, 3))
    x_np[[5, 500]] = np.nan
    x = da.from_array(x_np, chunks=(37, 3))  # 28 blocks: a tree of several levels
    acc = gstat.dask.accumulator(x, missing="complete.obs", split_every=2).compute()
    assert acc.n_samples == 998 and acc.n_skipped == 2
    keep = ~np.isnan(x_np).any(axis=1)
    np.testing.assert_allclose(acc.covariance(), np.cov(x_np[keep], rowvar=False), rtol=1e-12)
    with pytest.raises(ValueError, match="split_every"):
        gstat.dask.accumulator(x, split_every=1)
