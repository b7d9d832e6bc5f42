#!/usr/bin/env python3
"""gstat's sparse eigensolver against scikit-learn's spectral_embedding (arpack)
on the same kNN graph, in the same run.

bench_sparse_eigs builds the graph (N random points in DIM dimensions, uniform
or Gaussian blobs, k = 10 nearest neighbours, symmetrized (A + A^T) / 2),
writes it, and times gstat's 8 smallest eigenpairs of the symmetric
normalized Laplacian. Here scikit-learn's

    spectral_embedding(A, n_components=8, eigen_solver="arpack",
                       norm_laplacian=True, drop_first=False, random_state=0)

is timed on the very same adjacency. It forms the same Laplacian (scipy's
csgraph.laplacian, normed) and calls ARPACK in shift-invert mode around
-1e-5 with tol=0 (machine precision), which factorizes the Laplacian (SuperLU).
speed-up = sklearn ms / gstat ms. For the accuracy, both answers are compared
as subspaces: sklearn's embedding is D^-1/2 times the eigenvectors, so
D^1/2 times it spans the same space as gstat's eigenvectors; "sin" is the sine
of the largest principal angle between the two 8-dimensional spaces, and the
eigenvalues are the Rayleigh quotients of the orthonormalized sklearn vectors.

Both sides use the threads OpenMP gives them (ARPACK and SuperLU run on one);
OMP_NUM_THREADS=1 in the environment compares one core with one core, which
is also the steadier measurement on a machine other jobs share (an OpenMP
barrier waits for a thread the scheduler has preempted).

usage: bench/sparse_eigs_vs_sklearn.py [--build build] [--n 100000] [--dim 3]
       [--clusters 0] [--tol 1e-8] [--reps 1] [--nev 8] [--extra "--spread 12"]
       [--skip-sklearn]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp
import sklearn
from sklearn.manifold import spectral_embedding


def read_graph(path):
    with open(path, "rb") as f:
        n, nnz = np.fromfile(f, dtype=np.int64, count=2)
        off = np.fromfile(f, dtype=np.int64, count=n + 1)
        idx = np.fromfile(f, dtype=np.int64, count=nnz)
        val = np.fromfile(f, dtype=np.float64, count=nnz)
    return sp.csr_matrix((val, idx, off), shape=(n, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--dim", type=int, default=3)
    ap.add_argument("--clusters", type=int, default=0)
    ap.add_argument("--tol", type=float, default=1e-8)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--nev", type=int, default=8)
    ap.add_argument("--extra", default="", help="more bench_sparse_eigs options")
    ap.add_argument("--skip-sklearn", action="store_true")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "bench_sparse_eigs")
    with tempfile.TemporaryDirectory() as tmp:
        gpath, vpath = os.path.join(tmp, "graph.bin"), os.path.join(tmp, "vec.bin")
        cmd = [exe, "--n", str(a.n), "--dim", str(a.dim), "--clusters", str(a.clusters),
               "--nev", str(a.nev), "--tol", str(a.tol), "--reps", str(a.reps),
               "--graph", gpath, "--vectors", vpath] + a.extra.split()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
        kv = dict(tok.split("=", 1) for tok in out.split() if "=" in tok)
        A = read_graph(gpath)
        raw = np.fromfile(vpath, dtype=np.float64)
    k = a.nev
    w_g, V_g = raw[:k], raw[k:].reshape(k, a.n).T
    print(f"graph: n={a.n} dim={a.dim} clusters={a.clusters} edges={A.nnz // 2} "
          f"(sklearn {sklearn.__version__}, scipy {scipy.__version__}, numpy {np.__version__})")
    print(f"gstat: {kv['solve_ms']} ms ({kv['cpu_ms']} ms CPU, {kv['threads']} threads), "
          f"{kv['iterations']} iterations, {kv['applies']} operator columns, {kv['restarts']} "
          f"restarts, status {kv['status']}, max residual {kv['max_residual']} (tol {a.tol} x 2)")
    print("gstat eigenvalues:  ", " ".join(f"{x:.6g}" for x in w_g))
    if a.skip_sklearn:
        return
    best = float("inf")
    for _ in range(a.reps):
        t = time.perf_counter()
        emb = spectral_embedding(A, n_components=k, eigen_solver="arpack", norm_laplacian=True,
                                 drop_first=False, random_state=0)
        best = min(best, time.perf_counter() - t)
    sk_ms = best * 1e3
    deg = np.asarray(A.sum(axis=1)).ravel()
    X = emb * np.sqrt(deg)[:, None]
    Qs, _ = np.linalg.qr(X)
    L = sp.identity(a.n, format="csr") - sp.diags(1 / np.sqrt(deg)) @ A @ sp.diags(1 / np.sqrt(deg))
    w_s = np.sort(np.linalg.eigvalsh(Qs.T @ (L @ Qs)))
    Qg, _ = np.linalg.qr(V_g)
    sv = np.linalg.svd(Qg.T @ Qs, compute_uv=False)
    sin = float(np.sqrt(max(0.0, 1 - sv.min() ** 2)))
    print("sklearn eigenvalues:", " ".join(f"{x:.6g}" for x in w_s))
    print(f"sklearn spectral_embedding (arpack): {sk_ms:.0f} ms")
    print(f"speed-up (sklearn / gstat): {sk_ms / float(kv['solve_ms']):.1f}x; "
          f"largest principal angle sine between the subspaces: {sin:.2e}; "
          f"max eigenvalue difference {np.max(np.abs(w_s - w_g)):.2e}")


if __name__ == "__main__":
    sys.exit(main())
