#!/usr/bin/env python3
"""gstat's PCA and covariance against scikit-learn and numpy on the same data.

For each shape the data (float64, low rank plus noise: a decaying spectrum
like real data's) is generated once with numpy and written to a raw file;
bench_pca times gstat's methods on it (best of REPS after a warm-up call),
then scikit-learn's PCA(n_components=K, svd_solver=...).fit and numpy.cov are
timed on the same array in the same run (best of REPS). Each gstat method is
set against the scikit-learn solver doing the same job:

    gstat cov (covariance eigh)  vs  svd_solver="covariance_eigh"
    gstat gram (Gram eigh)       vs  svd_solver="full" (sklearn has no Gram solver;
                                     full is what it uses for p > n)
    gstat randomized             vs  svd_solver="randomized"
    gstat_covariance             vs  numpy.cov

speed-up = anchor ms / gstat ms (> 1: gstat faster). "ev err" is the largest
relative error of the K explained variances against the exact ones (from
svd_solver="full", hence 0 for that anchor), for gstat and for the anchor:
the accuracy of the randomized solvers. gstat's Gram method needs an n x n matrix, so it only runs
where p > n. Both use every core (OpenMP / OpenBLAS threads).

usage: bench/pca_vs_sklearn.py [--build build] [--reps 3] [--k 10] [--quick]
       [--shapes 100000x100,20000x1000,2000x4000]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import sklearn
from sklearn.decomposition import PCA

SHAPES = [(100000, 100), (20000, 1000), (2000, 4000)]
QUICK_SHAPES = [(2000, 50), (300, 500)]


def make_data(n, p, rng, rank=50):
    """X = (L diag(0.8^i)) R + 0.05 noise (the kind bench_pca generates without --in)."""
    r = min(rank, p)
    left = rng.standard_normal((n, r)) * (0.8 ** np.arange(r)) * np.sqrt(p)
    right = rng.standard_normal((r, p)) / np.sqrt(p)
    return np.ascontiguousarray(left @ right + 0.05 * rng.standard_normal((n, p)))


def best_of(fn, reps):
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def rel_err(ev, exact):
    ev = np.asarray(ev, dtype=np.float64)
    return float(np.max(np.abs(ev - exact) / np.abs(exact)))


def run_gstat(exe, path, n, p, k, reps, methods, tmp):
    res = subprocess.run(
        [exe, "--reps", str(reps), "--methods", ",".join(methods), "--in", path,
         "--ev-out", tmp, str(n), str(p), str(k)],
        capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bench_pca failed ({res.returncode}): {res.stderr.strip()}")
    out = {}
    for line in res.stdout.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split())
        m = f["method"]
        ev = None
        if m != "covariance":
            ev = np.fromfile(os.path.join(tmp, f"ev_{m}.raw"), dtype=np.float64)
        out[m] = (float(f["best_ms"]), ev)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="tiny shapes, to check the script works")
    ap.add_argument("--shapes", help="comma-separated NxP list (default: the three standard shapes)")
    args = ap.parse_args()
    exe = os.path.join(args.build, "bench", "bench_pca")
    if not os.access(exe, os.X_OK):
        sys.exit(f"{exe} not found: build first (cmake --build {args.build})")
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    k = args.k if not args.quick else min(args.k, 5)
    rng = np.random.default_rng(2026)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, p in shapes:
            x = make_data(n, p, rng)
            path = os.path.join(tmp, "x.raw")
            x.tofile(path)
            methods = ["cov", "randomized", "covariance"]
            if p > n:
                methods.insert(1, "gram")
            # gstat first: OpenBLAS threads keep spinning for a while after a
            # numpy call and would steal the cores from the subprocess
            g = run_gstat(exe, path, n, p, k, args.reps, methods, tmp)
            sk = {}
            for solver in ("covariance_eigh", "full", "randomized"):
                ms, pca = best_of(
                    lambda s=solver: PCA(n_components=k, svd_solver=s, random_state=0).fit(x),
                    args.reps)
                sk[solver] = (ms, pca.explained_variance_)
            np_ms, _ = best_of(lambda: np.cov(x, rowvar=False), args.reps)
            exact = sk["full"][1]
            anchor = {"cov": "covariance_eigh", "gram": "full", "randomized": "randomized"}
            for m in methods:
                gms, gev = g[m]
                if m == "covariance":
                    rows.append((f"{n}x{p}", "gstat_covariance", gms, "numpy.cov", np_ms, None, None))
                else:
                    a = anchor[m]
                    rows.append((f"{n}x{p}", f"pca {m}", gms, f"sklearn {a}", sk[a][0],
                                 rel_err(gev, exact), rel_err(sk[a][1], exact)))
    print(f"gstat vs scikit-learn {sklearn.__version__} / numpy {np.__version__}, "
          f"k = {k}, float64, {os.cpu_count()} cores, best of {args.reps}, ms")
    print(f"{'n x p':>11} {'gstat':18} {'ms':>9} {'anchor':24} {'ms':>9} {'speed-up':>8} "
          f"{'ev err gstat':>12} {'ev err anchor':>13}")
    for shape, what, gms, aname, ams, ge, ae in rows:
        e1 = f"{ge:12.1e}" if ge is not None else f"{'':12}"
        e2 = f"{ae:13.1e}" if ae is not None else f"{'':13}"
        print(f"{shape:>11} {what:18} {gms:9.2f} {aname:24} {ams:9.2f} {ams / gms:7.2f}x {e1} {e2}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
