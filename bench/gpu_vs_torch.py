#!/usr/bin/env python3
"""gstat's CUDA backend against torch.linalg.eigh, cupy.linalg.eigh and raw
cuSOLVER on the same GPU in the same run (data already on the device).

bench_cuda (C) times gstat and the cuSOLVER anchors with CUDA events; torch
and CuPy are timed here the same way (median of REPS after a warm-up), on
the very matrices bench_cuda generated (it writes them to a file): the
divide-and-conquer solvers' time depends on the spectrum, so different
random matrices would not give a fair ratio.
Prints one table; the ratio is the best other time over gstat's (>= 1: gstat
is at least as fast as the best of them).

usage: bench/gpu_vs_torch.py [--build build] [--reps 5] [--quick] [--only 1x8192,4x2048]
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

CASES = [  # (op, dtype, batch, n)
    ("eigh", "f32", 1024, 32), ("eigh", "f32", 512, 64), ("eigh", "f32", 256, 128),
    ("eigh", "f32", 64, 512), ("eigh", "f32", 16, 1024), ("eigh", "f32", 4, 2048),
    ("eigh", "f32", 1, 4096), ("eigh", "f32", 1, 8192), ("eigh", "f32", 1000, 64),
    ("eigh", "f32", 100000, 16), ("eigh", "f32", 1, 128), ("eigh", "f32", 1, 1024),
    ("eigh", "f64", 1024, 32), ("eigh", "f64", 512, 64), ("eigh", "f64", 256, 128),
    ("eigh", "f64", 64, 512), ("eigh", "f64", 16, 1024), ("eigh", "f64", 1000, 64),
    ("eigh", "f64", 4, 2048), ("eigh", "f32", 12, 2048), ("eigh", "f64", 8, 2048),
    ("eigh", "f32", 4, 1024), ("eigh", "f32", 256, 512),
    ("eigh", "f64", 1, 4096), ("eigh", "f64", 1, 8192), ("eigh", "f64", 100000, 16),
    ("eigh", "bf16", 1024, 32), ("eigh", "bf16", 64, 512),
    ("cholesky", "f32", 1024, 32), ("cholesky", "f32", 512, 64), ("cholesky", "f32", 64, 512),
    ("cholesky", "f32", 16, 1024),
    # Cholesky at torch.linalg.cholesky_ex's sizes (issue 30): batches, then single matrices
    ("cholesky", "f32", 4096, 32), ("cholesky", "f32", 1024, 64), ("cholesky", "f32", 256, 128),
    ("cholesky", "f32", 64, 256), ("cholesky", "f32", 60, 1024), ("cholesky", "f32", 4, 2048),
    ("cholesky", "f32", 1, 512), ("cholesky", "f32", 1, 1024), ("cholesky", "f32", 1, 2048),
    ("cholesky", "f32", 1, 4096), ("cholesky", "f32", 1, 8192), ("cholesky", "f32", 1, 16384),
    ("cholesky", "f32", 1, 32768), ("cholesky", "f64", 1, 4096), ("cholesky", "f64", 1, 8192),
]
QUICK = {(1024, 32), (64, 512), (100000, 16), (512, 64), (1, 128), (1, 1024)}


def time_cuda(fn, reps):
    import torch
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return times[len(times) // 2]


def load_input(path, dtype, batch, n):
    """bench_cuda's input batch (symmetric, so the storage order does not matter)."""
    import numpy
    return numpy.fromfile(path, dtype={"f32": numpy.float32, "f64": numpy.float64}[dtype]).reshape(batch, n, n)


def torch_ms(op, dtype, batch, n, reps, path):
    try:
        import torch
        if dtype == "bf16":
            return math.nan  # torch has no bf16 eigh
        a = torch.from_numpy(load_input(path, dtype, batch, n)).cuda()
        # cholesky_ex: no host check of info, as gstat's device path
        fn = (lambda: torch.linalg.eigh(a)) if op == "eigh" else (lambda: torch.linalg.cholesky_ex(a))
        ms = time_cuda(fn, reps)
        del a
        torch.cuda.empty_cache()
        return ms
    except Exception as e:  # e.g. cuSOLVER INTERNAL_ERROR at 100000 x 16
        print(f"# torch {op} {dtype} {batch}x{n}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        return math.nan


def cupy_linalg_ms(name, op, dtype, batch, n, reps, path):
    """Median ms of cupy.linalg.<name> on the saved input; NaN without CuPy or
    when it fails (the reason on stderr)."""
    try:
        import cupy
        a = cupy.asarray(load_input(path, dtype, batch, n))
        ms = time_cuda(lambda: getattr(cupy.linalg, name)(a), reps)
        del a
        cupy.get_default_memory_pool().free_all_blocks()
        return ms
    except Exception as e:
        print(f"# cupy {op} {dtype} {batch}x{n}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        return math.nan


def cupy_ms(op, dtype, batch, n, reps, path):
    if dtype == "bf16" or op != "eigh":
        return math.nan
    return cupy_linalg_ms("eigh", op, dtype, batch, n, reps, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cholesky", action="store_true", help="only the Cholesky cases")
    ap.add_argument("--only", default="", help="comma-separated BATCHxN shapes, e.g. 1x8192,4x2048")
    args = ap.parse_args()
    only = {tuple(int(v) for v in s.split("x")) for s in args.only.split(",") if s}
    exe = os.path.join(args.build, "bench", "bench_cuda")
    rows = []
    tmp = tempfile.TemporaryDirectory()
    path = os.path.join(tmp.name, "input.bin")
    for op, dtype, batch, n in CASES:
        if (args.quick and (batch, n) not in QUICK) or (only and (batch, n) not in only):
            continue
        if args.cholesky and op != "cholesky":
            continue
        reps = args.reps if batch * n * n * n < 2e11 else 3
        if os.path.exists(path):
            os.remove(path)  # never time the others on a previous case's matrices
        res = subprocess.run([exe, op, dtype, str(batch), str(n), str(reps), path], capture_output=True, text=True)
        if res.returncode != 0:
            print(f"# bench_cuda {op} {dtype} {batch}x{n} failed: {res.stderr.strip()[:200]}", file=sys.stderr)
            f = {}
        else:
            f = {k: float(v) for k, v in (kv.split("=") for kv in res.stdout.split())}
        g = f.get("gstat_ms", math.nan)
        others = {"torch": torch_ms(op, dtype, batch, n, reps, path), "cupy": cupy_ms(op, dtype, batch, n, reps, path),
                  "syevBatched": f.get("syevBatched_ms", math.nan), "syevjBatched": f.get("syevjBatched_ms", math.nan),
                  "syevd_loop": f.get("syevd_loop_ms", math.nan), "potrfBatched": f.get("potrfBatched_ms", math.nan),
                  "xpotrf": f.get("xpotrf_loop_ms", math.nan)}
        finite = [v for v in others.values() if not math.isnan(v)]
        best = min(finite) if finite else math.nan
        mib = f.get("gstat_device_MiB", math.nan)
        rows.append((op, dtype, f"{batch}x{n}", g, others, best, best / g if g == g and best == best else math.nan,
                     mib, mib + f.get("caller_MiB", math.nan)))
    # MiB: device memory gstat allocated (workspace, working copies); +caller:
    # with the caller's own A, w and V, i.e. the whole footprint of the call
    print(f"\n{'op':8} {'dt':4} {'batch x n':>10} {'gstat':>9} {'torch':>9} {'cupy':>9} {'syevBat':>9} "
          f"{'syevjBat':>9} {'syevdLoop':>9} {'potrfBat':>9} {'Xpotrf':>9} {'best/gs':>8} {'MiB':>7} {'+caller':>8}")
    for op, dt, shape, g, o, best, ratio, mib, total in rows:
        cells = " ".join(f"{o[k]:9.3f}" for k in ("torch", "cupy", "syevBatched", "syevjBatched", "syevd_loop", "potrfBatched", "xpotrf"))
        print(f"{op:8} {dt:4} {shape:>10} {g:9.3f} {cells} {ratio:8.2f} {mib:7.1f} {total:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
