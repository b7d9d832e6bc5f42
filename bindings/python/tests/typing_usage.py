"""Typed usage of the public API, checked by mypy in scripts/test-python
(the stubs must match the runtime: mypy fails the step on any error). It
also runs: python typing_usage.py."""
import numpy as np

import gstat

rng = np.random.default_rng(0)
X = rng.standard_normal((60, 4))

C: np.ndarray = gstat.cov(X, rowvar=False)
R: np.ndarray = gstat.corrcoef(X.T, rowvar=True)
d = gstat.mahalanobis(X, X.mean(axis=0), C, squared=False)

pca = gstat.PCA(n_components=2).fit(X)
scores: np.ndarray = pca.transform(X)
names: np.ndarray = pca.get_feature_names_out()
pca = pca.set_output(transform="default")
ll: float = pca.score(X)
per_row: np.ndarray = pca.score_samples(X)
prec: np.ndarray = pca.get_precision()
cov_model: np.ndarray = pca.get_covariance()
mle = gstat.PCA(n_components="mle").fit(X)
k: int = mle.n_components_

sc = gstat.SpectralClustering(n_clusters="eigengap", eigen_solver="arpack", random_state=0)
labels: np.ndarray = sc.fit_predict(X)
used = sc.fit(X).eigen_solver_
disc = gstat.SpectralClustering(2, assign_labels="discretize", affinity="poly", degree=2)
emb: np.ndarray = gstat.SpectralEmbedding(n_components=2, affinity="rbf").fit_transform(X)
L = gstat.laplacian(np.ones((3, 3)) - np.eye(3), normed=True, form="lo", dtype=np.float32)
batch: list[np.ndarray] = gstat.spectral_clustering_batch([np.ones((4, 4))], "eigengap")
est = gstat.LedoitWolf().fit(X)
shrink: float = est.shrinkage_
w, v = gstat.linalg.eigh(np.eye(3)[None], progress=False)
fitted = gstat.PCA(2, progress=lambda done, total, what: None).fit(X)
nbrs = gstat.kneighbors_graph(X, 3, progress=False)
approx = gstat.kneighbors(X, 3, algorithm="nndescent", random_state=0)
seen = gstat.SpectralEmbedding(progress=lambda done, total, what: None).fit_transform(X)

has_gpu: bool = gstat.cuda_available()
gpu_ok, why_no_gpu = gstat.cuda_available(0, reason=True)
why_text: str = why_no_gpu
