#!/usr/bin/env python3
"""Statistics of host (numpy) data under GSTAT_BACKEND_AUTO: the scheduler
streams the rows to the GPU in chunks when its cost model says so.

Rows, same process, best of REPS after one warm-up each (ms, wall clock):
- gstat PCA (k = 10, covariance method, no scores) and covariance of a host
  float32 n x p array: AUTO context, and a CPU context on every core;
- torch: torch.from_numpy(X).cuda() + torch.cov + torch.linalg.eigh (the
  issue's anchor), and the bare pageable and pinned host-to-device copies of
  the same bytes, which give the achieved fraction of the H2D bandwidth.
Device data (the same matrix already on the GPU): gstat covariance against
torch.cov.

gstat is called through ctypes (bench/gpu_pca_vs_torch.py's structures).

usage: bench/gpu_host_offload.py [--build build-gpu] [--reps 3] [--quick]
"""
import argparse
import ctypes
import os
import time

import numpy as np
import torch

from gpu_pca_vs_torch import Matrix, PcaOptions, PcaResult, timed as _timed

AUTO, CPU = 0, 1


def context(lib, backend):
    class CtxOptions(ctypes.Structure):  # only the leading fields are set
        _fields_ = [("backend", ctypes.c_int), ("num_threads", ctypes.c_int),
                    ("pad", ctypes.c_char * 256)]
    opt = CtxOptions()
    lib.gstat_ctx_options_init(ctypes.byref(opt))
    opt.backend = backend
    ctx = ctypes.c_void_p()
    assert lib.gstat_ctx_create(ctypes.byref(ctx), ctypes.byref(opt)) == 0
    return ctx


def timed(fn, reps):
    return _timed(fn, reps)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    lib = ctypes.CDLL(os.path.join(args.build, "libgstat.so.0"))
    lib.gstat_ctx_last_error.restype = ctypes.c_char_p
    lib.gstat_ctx_last_backend_name.restype = ctypes.c_char_p
    auto, cpu = context(lib, AUTO), context(lib, CPU)
    n, p, k = (200000, 500, 10) if args.quick else (1000000, 500, 10)
    rng = np.random.default_rng(0)
    mix = (rng.standard_normal((p, p)) / p ** 0.5).astype(np.float32)
    X = (rng.standard_normal((n, p), dtype=np.float32) @ mix + 3.0).astype(np.float32)
    nbytes = X.nbytes
    m = Matrix(X.ctypes.data, 1, 0, 0, 1, n, p, n * p, p, 1)
    C = np.empty((p, p))
    cm = Matrix(C.ctypes.data, 2, 0, 0, 1, p, p, p * p, p, 1)
    opt = PcaOptions()
    lib.gstat_pca_options_init(ctypes.byref(opt))
    opt.n_components = k
    opt.method = 1  # GSTAT_PCA_COVARIANCE_EIGH
    opt.compute_scores = 0
    res = ctypes.POINTER(PcaResult)()
    ran = {}

    def pca(ctx, tag):
        def run():
            st = lib.gstat_pca(ctx, ctypes.byref(m), ctypes.byref(opt), ctypes.byref(res))
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            ran[tag] = lib.gstat_ctx_last_backend_name(ctx).decode()
        return run  # res is reused from call to call (gstat_pca's result block)

    def cov(ctx, tag, mat):
        def run():
            st = lib.gstat_covariance(ctx, ctypes.byref(mat), None, ctypes.byref(cm), None)
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            ran[tag] = lib.gstat_ctx_last_backend_name(ctx).decode()
        return run

    def torch_pca():
        xd = torch.from_numpy(X).cuda()
        c = torch.cov(xd.T)
        torch.linalg.eigh(c)

    pinned = torch.from_numpy(X).pin_memory()
    rows = [
        ("gstat PCA, AUTO", timed(pca(auto, "pca auto"), args.reps), "pca auto"),
        ("gstat PCA, CPU context", timed(pca(cpu, "pca cpu"), min(args.reps, 2)), "pca cpu"),
        ("torch from_numpy.cuda + cov + eigh", timed(torch_pca, args.reps), None),
        ("gstat covariance, AUTO", timed(cov(auto, "cov auto", m), args.reps), "cov auto"),
        ("gstat covariance, CPU context", timed(cov(cpu, "cov cpu", m), min(args.reps, 2)),
         "cov cpu"),
        ("copy only: pageable H2D", timed(lambda: torch.from_numpy(X).cuda(), args.reps), None),
        ("copy only: pinned H2D", timed(lambda: pinned.cuda(non_blocking=True), args.reps), None),
    ]
    xd = torch.from_numpy(X).cuda()
    dm = Matrix(xd.data_ptr(), 1, 1, torch.cuda.current_device(), 1, n, p, n * p, p, 1)
    dev = [("gstat covariance, device data", timed(cov(auto, "cov dev", dm), args.reps), "cov dev"),
           ("torch.cov, device data", timed(lambda: torch.cov(xd.T), args.reps), None)]
    del pinned
    gpu = torch.cuda.get_device_name()
    print(f"\nHost float32 {n}x{p} ({nbytes / 1e9:.2f} GB), k={k}, {gpu}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPU threads; best of {args.reps} (CPU rows {min(args.reps, 2)}), ms")
    print("| call | ms | ran | GB/s of X | vs torch PCA |")
    print("|---|---:|---|---:|---:|")
    anchor = rows[2][1]
    for name, ms, tag in rows + dev:
        print(f"| {name} | {ms:.1f} | {ran.get(tag, '')} | {nbytes / ms / 1e6:.1f} | "
              f"{anchor / ms:.2f} |")
    pinned_ms = rows[6][1]
    print(f"\nAUTO PCA moved {nbytes / 1e9:.2f} GB at {nbytes / rows[0][1] / 1e6:.1f} GB/s: "
          f"{pinned_ms / rows[0][1]:.2f} of the pinned H2D rate, {rows[5][1] / rows[0][1]:.2f} of "
          f"the pageable; PCA AUTO / CPU context: {rows[1][1] / rows[0][1]:.1f}x")
    lib.gstat_pca_result_free(res)
    lib.gstat_ctx_destroy(auto)
    lib.gstat_ctx_destroy(cpu)


if __name__ == "__main__":
    main()
