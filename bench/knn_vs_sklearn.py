"""kNN graphs and spectral clustering at scale, gstat against scikit-learn in
one process on the same data (make_blobs, 10 centers):

    python bench/knn_vs_sklearn.py [--n 100000] [--dim 10] [--k 10] [--spectral]
                                   [--algorithms auto,nndescent] [--spectral-algorithm A]

kNN: gstat.kneighbors_graph for each of --algorithms (default auto: exact)
vs sklearn.neighbors.kneighbors_graph (both include_self=False; an exact
graph is checked equal, an approximate one's recall is the share of its
edges within the true k-th distance). --spectral adds end-to-end
SpectralClustering(10, affinity="nearest_neighbors", n_neighbors=k): gstat
(knn_algorithm from --spectral-algorithm, default auto) vs scikit-learn's
eigen_solver="amg" (with pyamg; else "arpack"), with ARI against the blob
labels. Prints a table, times in seconds (one run each, after a warm-up of
gstat on 1000 points), with the date and the load average."""
import argparse
import datetime
import os
import time

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import gstat


def timed(f):
    t = time.perf_counter()
    r = f()
    return time.perf_counter() - t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--dim", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--spectral", action="store_true")
    ap.add_argument("--algorithms", default="auto")
    ap.add_argument("--spectral-algorithm", default="auto")
    a = ap.parse_args()
    X, y = make_blobs(n_samples=a.n, n_features=a.dim, centers=10, random_state=0)
    from sklearn.neighbors import kneighbors_graph

    gstat.kneighbors_graph(X[:1000], a.k)
    rows = []
    load, start = os.getloadavg()[0], datetime.datetime.now(datetime.timezone.utc)
    ts, S = timed(lambda: kneighbors_graph(X, a.k, mode="distance"))
    kth = S.max(axis=1).toarray().ravel()
    for alg in a.algorithms.split(","):
        tg, G = timed(lambda: gstat.kneighbors_graph(X, a.k, mode="distance", algorithm=alg,
                                                     random_state=0))
        if alg == "nndescent":
            hits = (G.data.reshape(a.n, a.k) <= kth[:, None] * (1 + 1e-12)).mean()
            check = f"recall {hits:.4f}"
        else:
            check = f"graphs equal: {(G.indices == S.indices).all() and (G.indptr == S.indptr).all()}"
        rows.append((f"kNN graph ({alg})", tg, ts, "sklearn", check))
    if a.spectral:
        from sklearn.cluster import SpectralClustering as SkSC

        kw = dict(affinity="nearest_neighbors", n_neighbors=a.k, random_state=0)
        spans = {}  # the progress reports' stages: first and last report times

        def seen(done, total, what):
            t = time.perf_counter()
            spans.setdefault(what, [t, t])[1] = t

        tg, lg = timed(lambda: gstat.SpectralClustering(
            10, knn_algorithm=a.spectral_algorithm, progress=seen, **kw).fit(X).labels_)
        parts = {w: e - b for w, (b, e) in spans.items()}
        parts["rest (graph, Laplacian, embedding)"] = tg - sum(parts.values())
        solvers = ["amg"]
        try:
            import pyamg  # noqa: F401
        except ImportError:
            solvers = ["arpack"]
        for solver in solvers:
            ts, ls = timed(lambda: SkSC(10, eigen_solver=solver, **kw).fit(X).labels_)
            rows.append((f"spectral ({a.spectral_algorithm})", tg, ts, f"sklearn {solver}",
                         f"ARI gstat {adjusted_rand_score(y, lg):.4f}, sklearn {adjusted_rand_score(y, ls):.4f}"))
    print(f"{start:%Y-%m-%d %H:%M} UTC, {os.cpu_count()} "
          f"cores, load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(f"n={a.n} dim={a.dim} k={a.k} threads={gstat.get_num_threads()}")
    print(f"{'what':<24} {'gstat s':>9} {'other s':>9} {'other/gstat':>11}  against, check")
    for what, tg, ts, who, note in rows:
        print(f"{what:<24} {tg:9.3f} {ts:9.3f} {ts / tg:10.1f}x  {who}; {note}")
    if a.spectral:
        print("gstat's spectral clustering by stage (s): " +
              ", ".join(f"{w} {v:.3f}" for w, v in parts.items()))


if __name__ == "__main__":
    main()
