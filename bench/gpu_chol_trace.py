#!/usr/bin/env python3
"""Where one GPU Cholesky call of a single large matrix spends its time:
gstat_cholesky (out of place, lower) against torch.linalg.cholesky_ex on the
same diagonally dominant matrix already on the device (gpu_bench_common.trace:
kernels, copies, host waits and the largest device items per call). For the
single-matrix rows of gpu_chol_vs_torch.py, where gstat and torch both call
cuSOLVER's Xpotrf and differ in the passes around it.

usage: bench/gpu_chol_trace.py [--build build-gpu] [--only 1x32768:f64,1x16384:f32] [--calls 3]
"""
import argparse
import ctypes

import torch

from gpu_bench_common import Matrix, load, trace


def spd(n, dtype):
    """(R + R^T) / 2 + n I with R uniform in [0, 1): each row's off-diagonal
    sum stays below its diagonal, so the matrix is positive definite."""
    a = torch.rand(n, n, dtype=dtype, device="cuda")
    a = (a + a.T) * 0.5
    a.diagonal().add_(float(n))
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--only", default="1x32768:f64,1x16384:f32")
    ap.add_argument("--calls", type=int, default=3)
    args = ap.parse_args()
    lib, ctx = load(args.build)
    for case in args.only.split(","):
        shape, dt = case.split(":")
        batch, n = (int(v) for v in shape.split("x"))
        assert batch == 1, "single matrices only"
        dtype, code = (torch.float64, 2) if dt == "f64" else (torch.float32, 1)
        a = spd(n, dtype)
        f = torch.empty_like(a)
        dev = torch.cuda.current_device()
        A = Matrix(a.data_ptr(), code, 1, dev, 1, n, n, n * n, 1, n)
        F = Matrix(f.data_ptr(), code, 1, dev, 1, n, n, n * n, 1, n)
        info = (ctypes.c_int64 * 1)()

        def run_gstat():
            st = lib.gstat_cholesky(ctx, ctypes.byref(A), 0, ctypes.byref(F), info)
            assert st == 0 and info[0] == 0, lib.gstat_ctx_last_error(ctx).decode()

        trace(f"gstat cholesky {shape} {dt}", run_gstat, calls=args.calls, top=8)
        trace(f"torch cholesky_ex {shape} {dt}", lambda: torch.linalg.cholesky_ex(a),
              calls=args.calls, top=8)
        del a, f
        torch.cuda.empty_cache()
    lib.gstat_ctx_destroy(ctx)


if __name__ == "__main__":
    main()
