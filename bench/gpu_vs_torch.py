#!/usr/bin/env python3
"""gstat's CUDA backend against torch.linalg.eigh, cupy.linalg.eigh and raw
cuSOLVER on the same GPU in the same run (data already on the device).

bench_cuda (C) times gstat and the cuSOLVER anchors with CUDA events; torch
and CuPy are timed here the same way (median of REPS after a warm-up).
Prints one table; the ratio is the best other time over gstat's (>= 1: gstat
is at least as fast as the best of them).

usage: bench/gpu_vs_torch.py [--build build] [--reps 5] [--quick]
"""
import argparse
import math
import os
import subprocess
import sys

CASES = [  # (op, dtype, batch, n)
    ("eigh", "f32", 1024, 32), ("eigh", "f32", 512, 64), ("eigh", "f32", 256, 128),
    ("eigh", "f32", 64, 512), ("eigh", "f32", 16, 1024), ("eigh", "f32", 4, 2048),
    ("eigh", "f32", 1, 4096), ("eigh", "f32", 1, 8192), ("eigh", "f32", 1000, 64),
    ("eigh", "f32", 100000, 16), ("eigh", "f32", 1, 128), ("eigh", "f32", 1, 1024),
    ("eigh", "f64", 1024, 32), ("eigh", "f64", 512, 64), ("eigh", "f64", 256, 128),
    ("eigh", "f64", 64, 512), ("eigh", "f64", 16, 1024), ("eigh", "f64", 1000, 64),
    ("eigh", "f64", 4, 2048),
    ("eigh", "bf16", 1024, 32), ("eigh", "bf16", 64, 512),
    ("cholesky", "f32", 1024, 32), ("cholesky", "f32", 512, 64), ("cholesky", "f32", 64, 512),
    ("cholesky", "f32", 16, 1024),
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


def sym(batch, n, dtype, lib):
    x = lib.random.standard_normal((batch, n, n)) if lib.__name__ == "cupy" else None
    if x is None:
        import torch
        x = torch.randn(batch, n, n, device="cuda", dtype=dtype)
        return (x + x.transpose(1, 2)) / 2 + n * torch.eye(n, device="cuda", dtype=dtype)
    x = x.astype(dtype)
    return (x + x.transpose(0, 2, 1)) / 2 + n * lib.eye(n, dtype=dtype)


def torch_ms(op, dtype, batch, n, reps):
    try:
        import torch
        if dtype == "bf16":
            return math.nan  # torch has no bf16 eigh
        t = {"f32": torch.float32, "f64": torch.float64}[dtype]
        a = sym(batch, n, t, torch)
        fn = (lambda: torch.linalg.eigh(a)) if op == "eigh" else (lambda: torch.linalg.cholesky(a))
        ms = time_cuda(fn, reps)
        del a
        torch.cuda.empty_cache()
        return ms
    except Exception as e:  # e.g. cuSOLVER INTERNAL_ERROR at 100000 x 16
        print(f"# torch {op} {dtype} {batch}x{n}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        return math.nan


def cupy_ms(op, dtype, batch, n, reps):
    try:
        import cupy
        if dtype == "bf16" or op != "eigh":
            return math.nan
        a = sym(batch, n, {"f32": "float32", "f64": "float64"}[dtype], cupy)
        ms = time_cuda(lambda: cupy.linalg.eigh(a), reps)
        del a
        cupy.get_default_memory_pool().free_all_blocks()
        return ms
    except Exception as e:
        print(f"# cupy {op} {dtype} {batch}x{n}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        return math.nan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    exe = os.path.join(args.build, "bench", "bench_cuda")
    rows = []
    for op, dtype, batch, n in CASES:
        if args.quick and (batch, n) not in QUICK:
            continue
        reps = args.reps if batch * n * n * n < 2e11 else 3
        res = subprocess.run([exe, op, dtype, str(batch), str(n), str(reps)], capture_output=True, text=True)
        if res.returncode != 0:
            print(f"# bench_cuda {op} {dtype} {batch}x{n} failed: {res.stderr.strip()[:200]}", file=sys.stderr)
            f = {}
        else:
            f = {k: float(v) for k, v in (kv.split("=") for kv in res.stdout.split())}
        g = f.get("gstat_ms", math.nan)
        others = {"torch": torch_ms(op, dtype, batch, n, reps), "cupy": cupy_ms(op, dtype, batch, n, reps),
                  "syevBatched": f.get("syevBatched_ms", math.nan), "syevjBatched": f.get("syevjBatched_ms", math.nan),
                  "syevd_loop": f.get("syevd_loop_ms", math.nan), "potrfBatched": f.get("potrfBatched_ms", math.nan)}
        finite = [v for v in others.values() if not math.isnan(v)]
        best = min(finite) if finite else math.nan
        rows.append((op, dtype, f"{batch}x{n}", g, others, best, best / g if g == g and best == best else math.nan,
                     f.get("gstat_device_MiB", math.nan)))
    print(f"\n{'op':8} {'dt':4} {'batch x n':>10} {'gstat':>9} {'torch':>9} {'cupy':>9} {'syevBat':>9} "
          f"{'syevjBat':>9} {'syevdLoop':>9} {'potrfBat':>9} {'best/gs':>8} {'MiB':>7}")
    for op, dt, shape, g, o, best, ratio, mib in rows:
        cells = " ".join(f"{o[k]:9.3f}" for k in ("torch", "cupy", "syevBatched", "syevjBatched", "syevd_loop", "potrfBatched"))
        print(f"{op:8} {dt:4} {shape:>10} {g:9.3f} {cells} {ratio:8.2f} {mib:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
