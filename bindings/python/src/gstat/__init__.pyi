from contextlib import AbstractContextManager
from typing import Any, Callable, Literal, Optional, Self, Sequence, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from . import linalg as linalg

Backend = Optional[Literal["auto", "cpu", "cuda"]]
Missing = Literal["everything", "complete", "complete.obs", "pairwise", "pairwise.complete.obs"]
Progress = Union[bool, None, Callable[[int, int, str], Any]]

__version__: str
__c_version__: str

class LinAlgError(np.linalg.LinAlgError):
    status: str

class UnsupportedError(RuntimeError):
    status: str

class BackendError(RuntimeError):
    status: str

def last_backend() -> str: ...
def set_backend(backend: Backend) -> None: ...
def get_backend() -> str: ...
def use_backend(backend: Backend) -> AbstractContextManager[None]: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
@overload
def cuda_available(device: int = ..., reason: Literal[False] = ...) -> bool: ...
@overload
def cuda_available(device: int = ..., *, reason: Literal[True]) -> Tuple[bool, str]: ...
def cov(x: npt.ArrayLike, rowvar: bool = ..., ddof: int = ..., fweights: Optional[npt.ArrayLike] = ...,
        aweights: Optional[npt.ArrayLike] = ..., missing: Missing = ..., *, dtype: Any = ...,
        out: Optional[np.ndarray] = ..., backend: Backend = ...,
        progress: Progress = ...) -> np.ndarray: ...
def corrcoef(x: npt.ArrayLike, rowvar: bool = ..., fweights: Optional[npt.ArrayLike] = ...,
             aweights: Optional[npt.ArrayLike] = ..., missing: Missing = ..., *, dtype: Any = ...,
             out: Optional[np.ndarray] = ..., backend: Backend = ...,
             progress: Progress = ...) -> np.ndarray: ...
def mahalanobis(x: npt.ArrayLike, center: Optional[npt.ArrayLike], cov: npt.ArrayLike, *,
                inverted: bool = ..., squared: Optional[bool] = ...,
                backend: Backend = ...) -> Union[np.ndarray, float]: ...
KnnAlgorithm = Literal["auto", "kd_tree", "ball_tree", "brute", "nndescent"]
def kneighbors(X: Any, n_neighbors: int = ..., *, include_self: bool = ...,
               return_distance: bool = ..., backend: Backend = ...,
               progress: Progress = ..., algorithm: KnnAlgorithm = ...,
               random_state: Any = ...) -> Any: ...
def kneighbors_graph(X: Any, n_neighbors: int, *, mode: Literal["connectivity", "distance"] = ...,
                     include_self: bool = ..., backend: Backend = ...,
                     progress: Progress = ..., algorithm: KnnAlgorithm = ...,
                     random_state: Any = ...) -> Any: ...
def laplacian(adjacency: Any, normed: bool = ..., *, kind: Optional[str] = ...,
              return_diag: bool = ..., symmetrize: str = ..., self_loops: str = ...,
              form: Literal["array", "function", "lo"] = ..., dtype: Any = ...,
              backend: Backend = ...) -> Any: ...
def spectral_clustering_batch(graphs: Any,
                              n_clusters: Union[int, Literal["eigengap"], Sequence[int]], *,
                              laplacian: str = ..., assign_labels: str = ..., n_init: int = ...,
                              normalize_rows: bool = ..., random_state: int = ...,
                              symmetrize: str = ..., errors: Literal["raise", "ignore"] = ...,
                              progress: Progress = ...,
                              backend: Backend = ...) -> list[np.ndarray]: ...

class _Estimator:
    def get_params(self, deep: bool = ...) -> dict[str, Any]: ...
    def set_params(self, **params: Any) -> Any: ...

EigenSolver = Optional[Literal["auto", "dense", "sparse", "lanczos", "arpack", "lobpcg", "amg"]]

class PCA(_Estimator):
    components_: np.ndarray
    explained_variance_: np.ndarray
    explained_variance_ratio_: np.ndarray
    singular_values_: np.ndarray
    mean_: np.ndarray
    noise_variance_: float
    n_components_: int
    n_samples_: int
    n_features_in_: int
    backend_: str
    method_: str
    def __init__(self, n_components: Union[int, float, Literal["mle"], None] = ..., *, copy: bool = ...,
                 whiten: bool = ..., svd_solver: str = ..., iterated_power: Union[int, str] = ...,
                 n_oversamples: int = ..., random_state: Any = ..., backend: Backend = ...,
                 progress: Progress = ...) -> None: ...
    def fit(self, X: Any, y: Any = ...) -> Self: ...
    def fit_transform(self, X: Any, y: Any = ...) -> np.ndarray: ...
    def transform(self, X: npt.ArrayLike) -> np.ndarray: ...
    def inverse_transform(self, X: npt.ArrayLike) -> np.ndarray: ...
    def get_covariance(self) -> np.ndarray: ...
    def get_precision(self) -> np.ndarray: ...
    def score_samples(self, X: npt.ArrayLike) -> np.ndarray: ...
    def score(self, X: npt.ArrayLike, y: Any = ...) -> float: ...
    def get_feature_names_out(self, input_features: Optional[Sequence[str]] = ...) -> np.ndarray: ...
    def set_output(self, *, transform: Optional[Literal["default", "pandas", "polars"]] = ...) -> Self: ...

class EmpiricalCovariance(_Estimator):
    covariance_: np.ndarray
    location_: np.ndarray
    precision_: Optional[np.ndarray]
    n_features_in_: int
    def __init__(self, *, store_precision: bool = ..., assume_centered: bool = ...,
                 backend: Backend = ...) -> None: ...
    def fit(self, X: npt.ArrayLike, y: Any = ...) -> Self: ...
    def get_precision(self) -> np.ndarray: ...
    def mahalanobis(self, X: npt.ArrayLike) -> np.ndarray: ...

class LedoitWolf(EmpiricalCovariance):
    shrinkage_: float

class OAS(EmpiricalCovariance):
    shrinkage_: float

class SpectralClustering(_Estimator):
    labels_: np.ndarray
    affinity_matrix_: Any
    eigenvalues_: np.ndarray
    n_features_in_: int
    n_clusters_: int
    eigen_solver_: Optional[str]
    graph_components_: int
    inertia_: Optional[float]
    def __init__(self, n_clusters: Union[int, Literal["eigengap"]] = ..., *,
                 eigen_solver: EigenSolver = ..., n_components: Optional[int] = ...,
                 random_state: Any = ..., n_init: int = ..., gamma: float = ...,
                 affinity: Union[str, Callable[..., Any]] = ..., n_neighbors: int = ...,
                 eigen_tol: Union[float, Literal["auto"]] = ...,
                 assign_labels: Literal["kmeans", "discretize", "cluster_qr"] = ...,
                 degree: float = ..., coef0: float = ..., kernel_params: Optional[dict[str, Any]] = ...,
                 backend: Backend = ..., progress: Progress = ...,
                 knn_algorithm: KnnAlgorithm = ...) -> None: ...
    def fit(self, X: Any, y: Any = ...) -> Self: ...
    def fit_predict(self, X: Any, y: Any = ...) -> np.ndarray: ...

class SpectralEmbedding(_Estimator):
    embedding_: np.ndarray
    affinity_matrix_: Any
    eigenvalues_: np.ndarray
    n_features_in_: int
    def __init__(self, n_components: int = ..., *, affinity: Union[str, Callable[..., Any]] = ...,
                 gamma: Optional[float] = ..., random_state: Any = ..., eigen_solver: EigenSolver = ...,
                 eigen_tol: Union[float, str] = ..., n_neighbors: Optional[int] = ...,
                 backend: Backend = ..., progress: Progress = ...,
                 knn_algorithm: KnnAlgorithm = ...) -> None: ...
    def fit(self, X: Any, y: Any = ...) -> Self: ...
    def fit_transform(self, X: Any, y: Any = ...) -> np.ndarray: ...

class CovarianceAccumulator:
    n_features: int
    missing: str
    state: Optional[np.ndarray]
    def __init__(self, n_features: int, missing: str = ...) -> None: ...
    def add(self, x: npt.ArrayLike, fweights: Optional[npt.ArrayLike] = ..., *,
            backend: Backend = ...) -> "CovarianceAccumulator": ...
    def merge(self, other: "CovarianceAccumulator") -> "CovarianceAccumulator": ...
    def copy(self) -> "CovarianceAccumulator": ...
    @classmethod
    def from_state(cls, n_features: int, missing: str,
                   state: Optional[npt.ArrayLike]) -> "CovarianceAccumulator": ...
    @property
    def n_samples(self) -> int: ...
    @property
    def n_skipped(self) -> int: ...
    @property
    def weight(self) -> float: ...
    @property
    def mean(self) -> np.ndarray: ...
    def covariance(self, ddof: int = ...) -> np.ndarray: ...
    def correlation(self) -> np.ndarray: ...
    def pca(self, n_components: Union[int, float, None] = ..., *, whiten: bool = ...,
            backend: Backend = ...) -> PCA: ...
