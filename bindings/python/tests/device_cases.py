"""Every public entry point of gstat, called with device data: the table that
test_gpu.py runs with torch and CuPy CUDA tensors and test_device_inputs.py
with fake device arrays (no GPU needed).

Each case is (name, call, gpu, fake): call(d) makes the call, with d turning
a numpy array into the device array under test (the identity gives the host
reference). `gpu` says what a GPU must answer:

  device   tensors of the input's kind on its device (the values of the host call)
  host     documented host results (fitted attributes, scipy graphs, floats)
  refused  gstat.UnsupportedError (what truly cannot run on a device)
  device?  device results, or the C library's UnsupportedError while the
           routine has no device path yet

`fake` says what a fake CUDA DLPack array on a machine without CUDA gets:
'refused' (gstat.UnsupportedError) or 'ok' (only small parameters, moved to
the host, were on the "device").
"""
import numpy as np

import gstat


def _blobs():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((30, 3)) * 0.3
    b = rng.standard_normal((30, 3)) * 0.3 + 4.0
    return np.vstack((a, b))


def _data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((300, 6)) * (1.0 + np.arange(6)) + 5.0
    x[:, 1] += 0.5 * x[:, 0]
    s = rng.standard_normal((5, 4, 4))
    s = s @ s.transpose(0, 2, 1) + 4.0 * np.eye(4)
    blocks = np.kron(np.eye(2), np.ones((20, 20))) * 0.9 + 0.05
    np.fill_diagonal(blocks, 0.0)
    graphs = np.stack([blocks[::2, ::2]] * 3)  # two blocks of 10 nodes, three times
    return {
        "X": x, "S": s, "L": np.linalg.cholesky(s), "B": rng.standard_normal((5, 4, 2)),
        "fw": rng.integers(1, 4, 300).astype(np.float64), "mu": x.mean(0),
        "C": np.cov(x, rowvar=False), "A": blocks, "A3": graphs, "Xc": _blobs(),
    }


D = _data()
_PCA_FITTED = gstat.PCA(3).fit(D["X"])
D["Z"] = _PCA_FITTED.transform(D["X"])


def _pca_solver(solver):
    return lambda d: gstat.PCA(3, svd_solver=solver, random_state=0,
                               iterated_power=6).fit_transform(d(D["X"]))


CASES = [
    ("linalg.eigh", lambda d: tuple(gstat.linalg.eigh(d(D["S"]))), "device", "refused"),
    ("linalg.eigvalsh", lambda d: gstat.linalg.eigvalsh(d(D["S"])), "device", "refused"),
    ("linalg.cholesky", lambda d: gstat.linalg.cholesky(d(D["S"])), "device", "refused"),
    ("linalg.cholesky_solve", lambda d: gstat.linalg.cholesky_solve(d(D["L"]), d(D["B"])),
     "device", "refused"),
    ("linalg.cholesky_solve(host b)",
     lambda d: gstat.linalg.cholesky_solve(d(D["L"]), D["B"]), "device", "refused"),
    ("linalg.solve_triangular",
     lambda d: gstat.linalg.solve_triangular(d(D["L"]), d(D["B"]), lower=True), "device", "refused"),
    ("linalg.solve_triangular(vector)",
     lambda d: gstat.linalg.solve_triangular(d(D["L"][0]), d(D["B"][0, :, 0]), lower=True),
     "device", "refused"),
    ("cov", lambda d: gstat.cov(d(D["X"]), rowvar=False), "device", "refused"),
    ("cov(rowvar)", lambda d: gstat.cov(d(np.ascontiguousarray(D["X"].T)), rowvar=True),
     "device", "refused"),
    ("cov(fweights)", lambda d: gstat.cov(d(D["X"]), rowvar=False, fweights=d(D["fw"])),
     "device", "refused"),
    ("cov(pairwise)", lambda d: gstat.cov(d(D["X"]), rowvar=False, missing="pairwise"),
     "device", "refused"),
    ("corrcoef", lambda d: gstat.corrcoef(d(D["X"]), rowvar=False), "device", "refused"),
    ("mahalanobis", lambda d: gstat.mahalanobis(d(D["X"]), d(D["mu"]), d(D["C"]), squared=True),
     "device", "refused"),
    ("mahalanobis(host x)",
     lambda d: gstat.mahalanobis(D["X"], d(D["mu"]), d(D["C"]), squared=True), "host", "ok"),
    ("EmpiricalCovariance.fit", lambda d: gstat.EmpiricalCovariance().fit(d(D["X"])).covariance_,
     "host", "refused"),
    ("EmpiricalCovariance.mahalanobis",
     lambda d: gstat.EmpiricalCovariance().fit(D["X"]).mahalanobis(d(D["X"])), "device", "refused"),
    ("LedoitWolf.fit", lambda d: gstat.LedoitWolf().fit(d(D["X"])).covariance_, "host", "refused"),
    ("OAS.fit", lambda d: gstat.OAS().fit(d(D["X"])).covariance_, "host", "refused"),
    ("LedoitWolf.mahalanobis", lambda d: gstat.LedoitWolf().fit(D["X"]).mahalanobis(d(D["X"])),
     "device", "refused"),
    ("PCA.fit", lambda d: gstat.PCA(3).fit(d(D["X"])).components_, "host", "refused"),
    *[(f"PCA({s}).fit_transform", _pca_solver(s), "device", "refused")
      for s in ("auto", "full", "covariance_eigh", "gram_eigh", "randomized", "arpack")],
    ("PCA(mle).fit_transform", lambda d: gstat.PCA("mle").fit_transform(d(D["X"])), "device",
     "refused"),
    ("PCA.transform", lambda d: _PCA_FITTED.transform(d(D["X"])), "device", "refused"),
    ("PCA.inverse_transform", lambda d: _PCA_FITTED.inverse_transform(d(D["Z"])), "device",
     "refused"),
    ("PCA.score_samples", lambda d: _PCA_FITTED.score_samples(d(D["X"])), "device", "ok"),
    ("PCA.score", lambda d: _PCA_FITTED.score(d(D["X"])), "host", "ok"),
    ("CovarianceAccumulator.add",
     lambda d: gstat.CovarianceAccumulator(6).add(d(D["X"]), d(D["fw"])).covariance(), "host",
     "refused"),
    ("laplacian", lambda d: gstat.laplacian(d(D["A"])), "device?", "refused"),
    ("laplacian(normed, diag)",
     lambda d: tuple(gstat.laplacian(d(D["A"]), normed=True, return_diag=True)), "device?",
     "refused"),
    ("laplacian(form=lo)", lambda d: gstat.laplacian(d(D["A"]), form="lo"), "refused", "refused"),
    ("kneighbors", lambda d: tuple(gstat.kneighbors(d(D["X"]), 5)), "device", "refused"),
    ("kneighbors_graph", lambda d: gstat.kneighbors_graph(d(D["X"]), 5, mode="distance"), "host",
     "refused"),
    ("SpectralClustering(rbf)",
     lambda d: gstat.SpectralClustering(2, random_state=0).fit_predict(d(D["Xc"])), "device?",
     "refused"),
    ("SpectralClustering(nearest_neighbors)",
     lambda d: gstat.SpectralClustering(2, affinity="nearest_neighbors", n_neighbors=8,
                                        random_state=0).fit_predict(d(D["Xc"])), "device?",
     "refused"),
    ("SpectralClustering(precomputed)",
     lambda d: gstat.SpectralClustering(2, affinity="precomputed",
                                        random_state=0).fit_predict(d(D["A"])), "device?",
     "refused"),
    ("SpectralClustering(discretize)",
     lambda d: gstat.SpectralClustering(2, assign_labels="discretize",
                                        random_state=0).fit_predict(d(D["Xc"])), "device?",
     "refused"),
    ("SpectralClustering(kernel)",
     lambda d: gstat.SpectralClustering(2, affinity="laplacian").fit_predict(d(D["Xc"])), "refused",
     "refused"),
    ("SpectralEmbedding",
     lambda d: gstat.SpectralEmbedding(2, affinity="rbf", gamma=0.05,
                                       random_state=0).fit_transform(d(D["Xc"])), "device?",
     "refused"),
    ("spectral_clustering_batch", lambda d: gstat.spectral_clustering_batch(d(D["A3"]), 2),
     "device", "refused"),
    ("spectral_clustering_batch(list)",
     lambda d: gstat.spectral_clustering_batch([d(D["A3"][0]), d(D["A3"][1])], 2), "refused",
     "refused"),
]

# results compared as partitions (cluster labels are unique up to renaming)
LABELS = {n for n, *_ in CASES if n.startswith("SpectralClustering") or n.startswith("spectral_")}


def same_partition(a, b):
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    return a.shape == b.shape and np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])
