#!/usr/bin/env python3
"""Reference values from scipy, scikit-learn and networkx for tests/test_spectral.c.

Writes tests/reference/graph_reference.csv: '#' comment lines (the versions
that produced it), then one array per line:

    key,rows,cols,v_0,v_1,...     (values row-major, %.17g)

Keys:
    lap/<g>/adjacency            n x n weighted adjacency (may be asymmetric:
                                 lap/<g>/symmetric = 0 means the C test
                                 symmetrizes by MAX, as the script did)
    lap/<g>/normed=<0|1>         scipy.sparse.csgraph.laplacian of the
                                 symmetric adjacency
    lap/<g>/components           1 x 1: scipy's connected_components count
    rbf/X, rbf/gamma, rbf/A      sklearn.metrics.pairwise.rbf_kernel
    knn/<d>/graph                nnz x 3 (i, j, w): 0.5 (C + C^T) with
                                 C = kneighbors_graph(X, 10, include_self=True),
                                 scikit-learn's SpectralClustering affinity
    cluster/<d>/X                points (blobs, moons, circles), or
    cluster/<d>/adjacency        a graph (sbm, karate)
    cluster/<d>/truth            ground-truth labels (karate: the two factions)
    cluster/<d>/k                clusters asked for
    cluster/<d>/sklearn          SpectralClustering(...).labels_ (random_state=0)
    cluster/<d>/sklearn_ari      adjusted_rand_score(truth, sklearn)
    cluster/<d>/sklearn_qr       the same with assign_labels="cluster_qr"

Deterministic: fixed seeds; rerunning with the same versions reproduces the
file byte for byte.

usage: python3 tests/reference/make_graph_reference.py   (from anywhere)
"""
import os
import platform

import networkx as nx
import numpy as np
import scipy
import sklearn
from scipy.sparse import csgraph
from sklearn.cluster import SpectralClustering
from sklearn.datasets import make_blobs, make_circles, make_moons
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.neighbors import kneighbors_graph

HERE = os.path.dirname(os.path.abspath(__file__))
N_POINTS = 300


class Writer:
    def __init__(self, path):
        self.f = open(path, "w", newline="\n")
        self.f.write(
            "# gstat graph and spectral reference values, written by "
            "tests/reference/make_graph_reference.py; do not edit\n"
            f"# scikit-learn {sklearn.__version__}, scipy {scipy.__version__}, numpy "
            f"{np.__version__}, networkx {nx.__version__}, Python {platform.python_version()}\n"
            "# key,rows,cols,values (row-major, %.17g)\n"
        )

    def put(self, key, a):
        a = np.atleast_2d(np.asarray(a, dtype=np.float64))
        vals = ",".join("%.17g" % v for v in a.ravel())
        self.f.write(f"{key},{a.shape[0]},{a.shape[1]},{vals}\n")

    def close(self):
        self.f.close()


def random_graph(rng, n, density, isolated=(), blocks=1, asymmetric=False):
    """Weighted graph; `blocks` disconnected diagonal blocks; isolated nodes."""
    a = np.zeros((n, n))
    size = n // blocks
    for b in range(blocks):
        lo, hi = b * size, n if b == blocks - 1 else (b + 1) * size
        m = rng.random((hi - lo, hi - lo)) < density
        w = np.round(rng.uniform(0.1, 3.0, (hi - lo, hi - lo)), 3)
        a[lo:hi, lo:hi] = np.where(m, w, 0.0)
    if not asymmetric:
        a = np.triu(a, 1)
        a = a + a.T
    for i in isolated:
        a[i, :] = 0
        a[:, i] = 0
    return a


def laplacian_refs(w):
    rng = np.random.default_rng(20240505)
    graphs = {
        "small": (random_graph(rng, 12, 0.4, isolated=[5]), True),
        "blocks": (random_graph(rng, 30, 0.3, blocks=3), True),
        "directed": (random_graph(rng, 25, 0.2, asymmetric=True), False),
        "dense": (random_graph(rng, 40, 0.9), True),
    }
    for name, (a, sym) in graphs.items():
        w.put(f"lap/{name}/adjacency", a)
        w.put(f"lap/{name}/symmetric", [[1.0 if sym else 0.0]])
        s = a if sym else np.maximum(a, a.T)
        for normed in (0, 1):
            w.put(f"lap/{name}/normed={normed}", csgraph.laplacian(s, normed=bool(normed)))
        nc, _ = csgraph.connected_components(s, directed=False)
        w.put(f"lap/{name}/components", [[nc]])


def affinity_refs(w):
    X, _ = make_moons(n_samples=80, noise=0.06, random_state=3)
    w.put("rbf/X", X)
    w.put("rbf/gamma", [[1.5]])
    w.put("rbf/A", rbf_kernel(X, gamma=1.5))
    for name, X in (
        ("moons", make_moons(n_samples=N_POINTS, noise=0.05, random_state=0)[0]),
        ("blobs", make_blobs(n_samples=N_POINTS, centers=3, random_state=1)[0]),
    ):
        c = kneighbors_graph(X, n_neighbors=10, include_self=True)
        a = (0.5 * (c + c.T)).tocoo()
        order = np.lexsort((a.col, a.row))
        w.put(f"knn/{name}/X", X)
        w.put(f"knn/{name}/graph", np.column_stack([a.row[order], a.col[order], a.data[order]]))


def sbm(rng, sizes, p_in, p_out):
    n = sum(sizes)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    p = np.where(truth[:, None] == truth[None, :], p_in, p_out)
    a = np.triu(rng.random((n, n)) < p, 1).astype(np.float64)
    return a + a.T, truth


def cluster_refs(w):
    points = {
        "blobs": make_blobs(n_samples=N_POINTS, centers=3, cluster_std=1.2, random_state=2),
        "moons": make_moons(n_samples=N_POINTS, noise=0.06, random_state=0),
        "circles": make_circles(n_samples=N_POINTS, noise=0.05, factor=0.5, random_state=0),
    }
    for name, (X, truth) in points.items():
        k = len(np.unique(truth))
        sc = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=10,
                                random_state=0).fit(X)
        w.put(f"cluster/{name}/X", X)
        w.put(f"cluster/{name}/truth", truth[None, :])
        w.put(f"cluster/{name}/k", [[k]])
        w.put(f"cluster/{name}/sklearn", sc.labels_[None, :])
        w.put(f"cluster/{name}/sklearn_ari", [[adjusted_rand_score(truth, sc.labels_)]])
        qr = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=10,
                                assign_labels="cluster_qr", random_state=0).fit(X)
        w.put(f"cluster/{name}/sklearn_qr", qr.labels_[None, :])

    rng = np.random.default_rng(7)
    g = nx.karate_club_graph()
    karate = nx.to_numpy_array(g, nodelist=range(34), weight=None)
    faction = np.array([0 if g.nodes[i]["club"] == "Mr. Hi" else 1 for i in range(34)])
    graphs = {
        "sbm": sbm(rng, [40, 40, 40, 40], 0.3, 0.03),
        "karate": (karate, faction),
    }
    for name, (a, truth) in graphs.items():
        k = len(np.unique(truth))
        sc = SpectralClustering(n_clusters=k, affinity="precomputed", random_state=0).fit(a)
        w.put(f"cluster/{name}/adjacency", a)
        w.put(f"cluster/{name}/truth", truth[None, :])
        w.put(f"cluster/{name}/k", [[k]])
        w.put(f"cluster/{name}/sklearn", sc.labels_[None, :])
        w.put(f"cluster/{name}/sklearn_ari", [[adjusted_rand_score(truth, sc.labels_)]])
        qr = SpectralClustering(n_clusters=k, affinity="precomputed", assign_labels="cluster_qr",
                                random_state=0).fit(a)
        w.put(f"cluster/{name}/sklearn_qr", qr.labels_[None, :])


def main():
    w = Writer(os.path.join(HERE, "graph_reference.csv"))
    laplacian_refs(w)
    affinity_refs(w)
    cluster_refs(w)
    w.close()


if __name__ == "__main__":
    main()
