#!/usr/bin/env python3
"""Batch spectral clustering of graphs already on the GPU (issue: 10000 graphs x
64 nodes end to end in at most 50 ms), against torch.linalg.eigh alone on the
same graphs' normalized Laplacians, same run.

The graphs are stochastic block models (2 blocks of n/2, p_in 0.3, p_out 0.05,
nodes in random order), as bench/spectral_vs_sklearn.py's batch part. gstat is
bench_spectral_gpu: one gstat_spectral_clustering_batch call on the device
batch (Laplacians, components, batched eigh, embeddings, k-means; labels and
eigenvalues back on the host), best of REPS after a warm-up, wall clock; it
also runs the host engine once on the same graphs (16 threads on the GPU
machine) and compares labels. torch: torch.linalg.eigh of the Laplacians,
CUDA events, one call after a warm-up (it takes seconds at this batch).

usage: bench/gpu_spectral_vs_torch.py [--build build-gpu] [--count 10000] [--n 64] [--reps 5]
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np

from sbm import sbm_batch  # bench/sbm.py


def torch_eigh_ms(A, dtype):
    import torch
    a = torch.tensor(A, dtype=dtype, device="cuda")
    d = a.sum(dim=2)
    s = torch.where(d > 0, d.rsqrt(), torch.ones_like(d))
    L = torch.eye(a.shape[1], dtype=dtype, device="cuda") - s[:, :, None] * a * s[:, None, :]
    torch.linalg.eigh(L)  # warm-up
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.linalg.eigh(L)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end), torch.__version__


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "bench_spectral_gpu")
    A, truth = sbm_batch(a.count, a.n, 0.3, 0.05, 0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graphs.bin")
        A.tofile(path)
        truth.tofile(path + ".truth")
        for dt in ("f32", "f64"):
            out = subprocess.run([exe, path, str(a.count), str(a.n), str(a.k), str(a.reps), dt],
                                 check=True, capture_output=True, text=True).stdout
            kv = dict(tok.split("=", 1) for tok in out.split() if "=" in tok)
            t_ms, tv = (None, None)
            if not a.no_torch:
                import torch
                t_ms, tv = torch_eigh_ms(A, torch.float32 if dt == "f32" else torch.float64)
            rows.append((dt, kv, t_ms, tv))
    print(f"\nbatch spectral clustering, {a.count} SBM graphs x {a.n} nodes, k = {a.k}, "
          f"data on the GPU (ms; gstat best of {a.reps} after a warm-up)")
    print("| dtype | gstat GPU end to end | target | torch.linalg.eigh alone | torch/gstat "
          "| gstat host engine | same labels | ARI GPU | ARI host | ran |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for dt, kv, t_ms, tv in rows:
        g = float(kv["gpu_ms"])
        tt = f"{t_ms:.1f} (torch {tv})" if t_ms else "-"
        ratio = f"{t_ms / g:.0f}x" if t_ms else "-"
        print(f"| {dt} | {g:.2f} | <= 50 | {tt} | {ratio} | {float(kv['cpu_ms']):.1f} | "
              f"{kv['same']}/{a.count} | {float(kv['ari_gpu']):.4f} | {float(kv['ari_cpu']):.4f} "
              f"| {kv['ran']} |")


if __name__ == "__main__":
    main()
