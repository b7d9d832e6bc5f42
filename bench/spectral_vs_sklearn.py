#!/usr/bin/env python3
"""gstat spectral clustering against scikit-learn, same data, same run.

Parts (--parts, default all three):
  rbf    SpectralClustering(n_clusters=4, affinity="rbf", gamma=GAMMA, random_state=0)
         on make_blobs(3000 points, 8 features, 4 centers), against bench_spectral rbf
         (gstat_affinity_dense + gstat_spectral_clustering, both timed). Target >= 5x.
  batch  1000 stochastic block models of 64 nodes (2 blocks of 32, p_in 0.3,
         p_out 0.05): a Python loop of SpectralClustering(2, affinity="precomputed",
         random_state=0) against one gstat_spectral_clustering_batch call (f64, and
         f32 input). Target >= 50x with equal mean ARI.
  knn    kNN graph of 10^5 points (k = 10), 8 eigenvectors: runs
         bench/sparse_eigs_vs_sklearn.py (gstat's sparse solver against
         sklearn.manifold.spectral_embedding, arpack) and reports its numbers.
         Target >= 3x.

Times are best of --reps (the sklearn loop and the knn part: one run unless
--reps-sklearn). ARI = adjusted Rand index against the known clusters (batch:
the mean over graphs). For stable numbers on a shared machine run with
OMP_WAIT_POLICY=passive (OpenMP threads otherwise spin under contention).

usage: bench/spectral_vs_sklearn.py [--build build] [--parts rbf,batch,knn] [--reps 3]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import sklearn
from sklearn.cluster import SpectralClustering
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from sbm import sbm_batch  # bench/sbm.py

HERE = os.path.dirname(os.path.abspath(__file__))


def gstat_run(exe, args):
    out = subprocess.run([exe] + [str(a) for a in args], check=True, capture_output=True,
                         text=True).stdout
    return dict(tok.split("=", 1) for tok in out.split() if "=" in tok)


def part_rbf(a, exe, tmp, rows):
    n, p, k, gamma = 3000, 8, 4, a.gamma
    X, truth = make_blobs(n_samples=n, n_features=p, centers=k, cluster_std=2.0, random_state=0)
    path = os.path.join(tmp, "rbf.bin")
    X.astype(np.float64).tofile(path)
    kv = gstat_run(exe, ["rbf", path, n, p, k, gamma, a.reps])
    g_ms = float(kv["ms"])
    g_lab = np.fromfile(path + ".labels", dtype=np.int64)
    best = float("inf")
    for _ in range(a.reps_sklearn):
        t = time.perf_counter()
        sc = SpectralClustering(n_clusters=k, affinity="rbf", gamma=gamma, random_state=0).fit(X)
        best = min(best, time.perf_counter() - t)
    s_ms = best * 1e3
    rows.append(("SpectralClustering rbf, n=3000 (8-d blobs, k=4)", s_ms, g_ms, ">= 5x",
                 adjusted_rand_score(truth, sc.labels_), adjusted_rand_score(truth, g_lab), ""))


def part_batch(a, exe, tmp, rows):
    count, n, k = 1000, 64, 2
    A, truth = sbm_batch(count, n, 0.3, 0.05, 1)
    path = os.path.join(tmp, "batch.bin")
    A.tofile(path)
    res = {}
    for dt in ("f64", "f32"):
        kv = gstat_run(exe, ["batch", path, count, n, k, a.reps, dt])
        lab = np.fromfile(path + ".labels", dtype=np.int64).reshape(count, n)
        res[dt] = (float(kv["ms"]), np.mean([adjusted_rand_score(truth[g], lab[g])
                                             for g in range(count)]))
    best = float("inf")
    for _ in range(a.reps_sklearn):
        t = time.perf_counter()
        sk = [SpectralClustering(n_clusters=k, affinity="precomputed", random_state=0)
              .fit(A[g]).labels_ for g in range(count)]
        best = min(best, time.perf_counter() - t)
    s_ms = best * 1e3
    s_ari = np.mean([adjusted_rand_score(truth[g], sk[g]) for g in range(count)])
    for dt in ("f64", "f32"):
        rows.append(("1000 SBM graphs x 64 nodes, k=2 (%s input)" % dt, s_ms, res[dt][0], ">= 50x",
                     s_ari, res[dt][1], ""))


def part_knn(a, rows):
    cmd = [sys.executable, os.path.join(HERE, "sparse_eigs_vs_sklearn.py"), "--build", a.build,
           "--n", "100000"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    print(out.rstrip())
    g_ms = float(re.search(r"gstat: ([0-9.]+) ms", out).group(1))
    s_ms = float(re.search(r"\(arpack\): ([0-9.]+) ms", out).group(1))
    sin = re.search(r"sine between the subspaces: (\S+);", out).group(1)
    rows.append(("kNN graph 10^5 points (k=10), 8 eigenvectors vs spectral_embedding (arpack)",
                 s_ms, g_ms, ">= 3x", None, None, "subspace sine " + sin))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--parts", default="rbf,batch,knn")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reps-sklearn", type=int, default=1)
    ap.add_argument("--gamma", type=float, default=0.05)
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "bench_spectral")
    parts = a.parts.split(",")
    rows = []
    print("scikit-learn %s, numpy %s; OMP_NUM_THREADS=%s OMP_WAIT_POLICY=%s; %d CPUs" %
          (sklearn.__version__, np.__version__, os.environ.get("OMP_NUM_THREADS", "-"),
           os.environ.get("OMP_WAIT_POLICY", "-"), os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        if "rbf" in parts:
            part_rbf(a, exe, tmp, rows)
            print_table(rows[-1:])
        if "batch" in parts:
            part_batch(a, exe, tmp, rows)
            print_table(rows[-2:])
    if "knn" in parts:
        part_knn(a, rows)
    print()
    print_table(rows)


def print_table(rows):
    print("| case | scikit-learn ms | gstat ms | speed-up | target | ARI sklearn | ARI gstat | note |")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for name, s, g, target, sa, ga, note in rows:
        fa = lambda v: "" if v is None else "%.4f" % v
        print("| %s | %.0f | %.1f | %.1fx | %s | %s | %s | %s |" %
              (name, s, g, s / g, target, fa(sa), fa(ga), note), flush=True)


if __name__ == "__main__":
    sys.exit(main())
