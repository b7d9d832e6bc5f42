#!/usr/bin/env python3
"""The Python package against numpy and scikit-learn on the same inputs.

- call overhead: gstat.linalg.eigh vs numpy.linalg.eigh on one 8x8 matrix
  (median of many calls; target: at most 2x numpy's time);
- batch eigh 1024 x 32x32 float32 (best of REPS; target: >= 5x faster);
- gstat.PCA vs sklearn.decomposition.PCA, 100000 x 100, 10 components
  (best of REPS; target: >= 3x faster, same results).

usage: bench/python_overhead.py [--reps 5]   (needs `pip install ./bindings/python`)
"""
import argparse
import time

import numpy as np

import gstat


def best(fn, reps):
    fn()  # warm-up: workspace, caches
    t = float("inf")
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - s)
    return t


def per_call(fn, calls=20000, rounds=5):
    for _ in range(1000):
        fn()
    out = []
    for _ in range(rounds):
        s = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - s) / calls)
    return float(np.median(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []

    # Anchors are timed before gstat in each case: OpenMP worker threads that
    # gstat leaves spin-waiting would slow down OpenBLAS's own threads.
    x = rng.standard_normal((8, 8))
    a8 = x + x.T
    n = per_call(lambda: np.linalg.eigh(a8))
    g = per_call(lambda: gstat.linalg.eigh(a8))
    wg, wn = gstat.linalg.eigh(a8)[0], np.linalg.eigh(a8)[0]
    rows.append(("eigh 1 x 8x8 f64 (per call)", g * 1e6, n * 1e6, "us", n / g, "ratio <= 2 (overhead)",
                 g <= 2 * n, np.abs(wg - wn).max()))

    x = rng.standard_normal((1024, 32, 32)).astype(np.float32)
    ab = x + x.transpose(0, 2, 1)
    time.sleep(1)
    n = best(lambda: np.linalg.eigh(ab), args.reps)
    g = best(lambda: gstat.linalg.eigh(ab), args.reps)
    err = np.abs(gstat.linalg.eigh(ab)[0] - np.linalg.eigh(ab)[0]).max()
    rows.append(("eigh 1024 x 32x32 f32", g * 1e3, n * 1e3, "ms", n / g, "speed-up >= 5", n / g >= 5,
                 err))

    from sklearn.decomposition import PCA as SkPCA
    X = rng.standard_normal((100000, 100)) @ rng.standard_normal((100, 100))
    time.sleep(1)
    n = best(lambda: SkPCA(10).fit(X), args.reps)
    g = best(lambda: gstat.PCA(10).fit(X), args.reps)
    pg, ps = gstat.PCA(10).fit(X), SkPCA(10).fit(X)
    err = max(np.abs(pg.components_ - ps.components_).max(),
              np.abs(pg.explained_variance_ / ps.explained_variance_ - 1).max())
    rows.append((f"PCA 100000x100 k=10 f64 (sklearn {ps._fit_svd_solver})", g * 1e3, n * 1e3, "ms",
                 n / g, "speed-up >= 3", n / g >= 3, err))

    print(f"{'case':44s} {'gstat':>10s} {'anchor':>10s} unit {'anchor/gstat':>12s}  target"
          f"{'':16s} met  max diff")
    for name, tg, tn, unit, r, target, ok, e in rows:
        print(f"{name:44s} {tg:10.2f} {tn:10.2f} {unit:4s} {r:12.2f}  {target:22s} "
              f"{'yes' if ok else 'NO ':3s}  {e:.1e}")
    print(f"(backend of the last call: {gstat.last_backend()}; shared 2-core machine: noisy)")


if __name__ == "__main__":
    main()
