"""scikit-learn's check_estimator on every estimator, with no exception."""
import inspect

import pytest
import sklearn
from sklearn.utils.estimator_checks import check_estimator

import gstat

# estimator -> {check name: why it does not apply}; every check applies now
# (SpectralEmbedding embeds disconnected tiny graphs as scikit-learn does)
EXPECTED_FAILED: dict = {}

ESTIMATORS = [
    gstat.PCA(), gstat.PCA(n_components=2), gstat.PCA(svd_solver="randomized", random_state=0),
    gstat.EmpiricalCovariance(), gstat.LedoitWolf(), gstat.OAS(),
    gstat.SpectralClustering(n_clusters=2, random_state=0),
    gstat.SpectralEmbedding(n_components=2, random_state=0),
]


@pytest.mark.parametrize("est", ESTIMATORS, ids=lambda e: repr(e))
def test_check_estimator(est):
    expected = EXPECTED_FAILED.get(type(est).__name__, {})
    if "expected_failed_checks" in inspect.signature(check_estimator).parameters:
        check_estimator(est, expected_failed_checks=expected)
    else:  # scikit-learn < 1.6
        check_estimator(est)
