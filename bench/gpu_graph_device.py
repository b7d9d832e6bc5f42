#!/usr/bin/env python3
"""One dense graph already on the GPU (issue 29 item 1): gstat.laplacian of a
CUDA tensor (the device laplacian primitive) against the same Laplacian
written in torch, and SpectralEmbedding(affinity='precomputed') of the CUDA
tensor (Laplacian and eigh on the device) against the same call on the host
copy (CPU), same run, wall clock, best of REPS after a warm-up.

The graphs are two-block stochastic block models (p_in 0.3, p_out 0.05) as
float32 or float64 tensors.

usage: bench/gpu_graph_device.py [--n 1000 4000] [--dtype float64] [--reps 3]
"""
import argparse
import time

import numpy as np


def sbm(n, rng):
    half = np.arange(n) < n // 2
    p = np.where(half[:, None] == half[None, :], 0.3, 0.05)
    a = np.triu((rng.random((n, n)) < p).astype(np.float64), 1)
    return a + a.T


def best(fn, reps, sync):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return 1e3 * min(times)


def torch_laplacian(a):
    import torch
    d = a.sum(dim=1)
    s = torch.where(d > 0, d.rsqrt(), torch.ones_like(d))
    return torch.diag((d > 0).to(a.dtype)) - s[:, None] * a * s[None, :]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 4000])
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    import torch

    import gstat
    sync = torch.cuda.synchronize
    rng = np.random.default_rng(0)
    print(f"{'n':>6} {'laplacian gstat':>16} {'torch':>8} {'embedding device':>17} "
          f"{'host':>8} {'gap':>8}  (ms)")
    for n in args.n:
        a = sbm(n, rng).astype(args.dtype)
        ad = torch.from_numpy(a).cuda()
        lg = best(lambda: gstat.laplacian(ad, normed=True), args.reps, sync)
        lt = best(lambda: torch_laplacian(ad), args.reps, sync)
        se = gstat.SpectralEmbedding(2, affinity="precomputed", random_state=0)
        ed = best(lambda: se.fit(ad), args.reps, sync)
        emb = se.embedding_.cpu().numpy()
        eh = best(lambda: se.fit(a), 1, sync)
        q, _ = np.linalg.qr(se.embedding_)
        gap = np.max(np.linalg.norm(emb - q @ (q.T @ emb), axis=0) / np.linalg.norm(emb, axis=0))
        print(f"{n:>6} {lg:>16.2f} {lt:>8.2f} {ed:>17.2f} {eh:>8.2f} {gap:>8.1e}")


if __name__ == "__main__":
    main()
