#!/usr/bin/env python3
"""Reference values from scikit-learn (and numpy) for tests/test_reference.c.

Writes tests/reference/sklearn_<dataset>.csv for the datasets in data/. Each
file starts with '#' comment lines (the versions that produced it), then one
array per line:

    key,rows,cols,v_0,v_1,...     (values row-major, %.17g; NaN as "nan")

Keys (k is a count, or "all" for min(n, p) components):
    pca/<solver>/k=<k>/whiten=<0|1>/<field>
        solver: full | covariance_eigh (PCA(svd_solver=...))
        field:  (whiten=1 has only scores; the rest equals whiten=0)
                explained_variance, explained_variance_ratio, singular_values,
                components (k x p), noise_variance, mean,
                scores (transform of the first SCORE_ROWS rows, rows x k)
    shrink/<ledoit_wolf|oas>/assume_centered=<0|1>/<covariance|shrinkage>
    empirical/<location|covariance|precision|condition|mahalanobis>
        EmpiricalCovariance() (ML covariance); mahalanobis of every row;
        condition is the 2-norm condition number of the covariance
    numpy_cov/<fw|aw|fw_aw>/ddof=<0|1>/<covariance|mean>   (wine only)
        numpy.cov with tests/reference/wine_weights.csv

usage: python3 tests/reference/make_reference.py   (from anywhere)
"""
import os
import platform
import sys

import numpy as np
import scipy
import sklearn
from sklearn.covariance import OAS, EmpiricalCovariance, LedoitWolf
from sklearn.decomposition import PCA

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "data")
SCORE_ROWS = 20
DATASETS = ["iris", "wine", "breast_cancer", "digits"]
# shrinkage and Mahalanobis: digits (p = 64) would add ~0.5 MB of p x p
# matrices and has constant columns (singular covariance), so it is left out
COV_DATASETS = ["iris", "wine", "breast_cancer"]


def load(name):
    return np.loadtxt(os.path.join(DATA, name + ".csv"), delimiter=",", skiprows=1, ndmin=2)


class Writer:
    def __init__(self, path, dataset, shape):
        self.f = open(path, "w", newline="\n")
        self.f.write(
            f"# gstat reference values for data/{dataset}.csv ({shape[0]} x {shape[1]}), "
            f"written by tests/reference/make_reference.py; do not edit\n"
            f"# scikit-learn {sklearn.__version__}, numpy {np.__version__}, "
            f"scipy {scipy.__version__}, Python {platform.python_version()}\n"
            f"# key,rows,cols,values (row-major, %.17g)\n"
        )

    def put(self, key, a):
        a = np.atleast_2d(np.asarray(a, dtype=np.float64))
        if a.ndim != 2:
            raise ValueError(key)
        vals = ",".join("%.17g" % v for v in a.ravel())
        self.f.write(f"{key},{a.shape[0]},{a.shape[1]},{vals}\n")

    def close(self):
        self.f.close()


def pca_refs(w, X):
    n, p = X.shape
    m = min(n, p)
    ks = [None, 2, 5 if m > 5 else m - 1]
    for solver in ("full", "covariance_eigh"):
        for k in ks:
            kname = "all" if k is None else str(k)
            for whiten in (0, 1):
                # whitening divides by sqrt(variance): meaningless for the
                # zero-variance directions of a rank-deficient set (digits)
                if whiten and k is None and np.linalg.matrix_rank(X - X.mean(0)) < m:
                    continue
                pca = PCA(n_components=k, svd_solver=solver, whiten=bool(whiten)).fit(X)
                pre = f"pca/{solver}/k={kname}/whiten={whiten}/"
                if whiten:  # only the scores differ from whiten=0
                    w.put(pre + "scores", pca.transform(X[:SCORE_ROWS]))
                    continue
                w.put(pre + "explained_variance", pca.explained_variance_)
                w.put(pre + "explained_variance_ratio", pca.explained_variance_ratio_)
                w.put(pre + "singular_values", pca.singular_values_)
                w.put(pre + "components", pca.components_)
                w.put(pre + "noise_variance", [pca.noise_variance_])
                w.put(pre + "mean", pca.mean_)
                w.put(pre + "scores", pca.transform(X[:SCORE_ROWS]))


def cov_refs(w, X):
    for centered in (0, 1):
        for name, est in (("ledoit_wolf", LedoitWolf), ("oas", OAS)):
            e = est(assume_centered=bool(centered)).fit(X)
            pre = f"shrink/{name}/assume_centered={centered}/"
            w.put(pre + "covariance", e.covariance_)
            w.put(pre + "shrinkage", [e.shrinkage_])
    e = EmpiricalCovariance().fit(X)
    w.put("empirical/location", e.location_)
    w.put("empirical/covariance", e.covariance_)
    w.put("empirical/precision", e.get_precision())
    w.put("empirical/condition", [np.linalg.cond(e.covariance_)])
    w.put("empirical/mahalanobis", e.mahalanobis(X))


def weighted_refs(w, X):
    wt = np.loadtxt(os.path.join(HERE, "wine_weights.csv"), delimiter=",", skiprows=1)
    fw, aw = wt[:, 0].astype(np.int64), wt[:, 1]
    for name, kw in (("fw", {"fweights": fw}), ("aw", {"aweights": aw}),
                     ("fw_aw", {"fweights": fw, "aweights": aw})):
        for ddof in (0, 1):
            pre = f"numpy_cov/{name}/ddof={ddof}/"
            w.put(pre + "covariance", np.cov(X, rowvar=False, ddof=ddof, **kw))
            ww = np.ones(X.shape[0])
            if "fweights" in kw:
                ww = ww * fw
            if "aweights" in kw:
                ww = ww * aw
            w.put(pre + "mean", np.average(X, axis=0, weights=ww))


def main():
    for name in DATASETS:
        X = load(name)
        path = os.path.join(HERE, f"sklearn_{name}.csv")
        w = Writer(path, name, X.shape)
        pca_refs(w, X)
        if name in COV_DATASETS:
            cov_refs(w, X)
        if name == "wine":
            weighted_refs(w, X)
        w.close()
        print(f"wrote {os.path.relpath(path)}", file=sys.stderr)


if __name__ == "__main__":
    main()
