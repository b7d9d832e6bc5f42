#!/usr/bin/env python3
"""gstat's GPU Cholesky, cholesky_solve and triangular_solve against torch
(torch.linalg.cholesky_ex, torch.cholesky_solve, torch.linalg.solve_triangular)
and raw cuSOLVER / cuBLAS on the same GPU in the same run, data already on the
device, float32 and float64 (issue 30 item 2).

bench_cuda (C) times gstat and the raw anchors with CUDA events (potrfBatched,
an Xpotrf loop for batches up to 64; for the solves trsmBatched and an Xpotrs
or trsm loop); torch (and CuPy's cholesky, when installed) are timed here the
same way, median of REPS after a warm-up, on the very matrices bench_cuda
generated. The solves use each library's own lower factor of those matrices
and NRHS right-hand sides. Prints a row per case, then a short table: per
dtype and op the geometric mean and the minimum of torch/gstat over the
issue's sizes, and the worst Xpotrf/gstat of the single matrices.

usage: bench/gpu_chol_vs_torch.py [--build build-gpu] [--reps 5] [--nrhs 1]
           [--only 1x8192,4096x32] [--dtypes f32,f64] [--no-solves] [--seconds S] [--probes]
--seconds: start no case after S seconds (the summary still comes), for a
device call's time limit; Cholesky rows come first, then the solves.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

from gpu_vs_torch import cupy_linalg_ms, load_input, time_cuda

# issue 30's Cholesky table, then single matrices to 32768
SIZES = [(4096, 32), (1024, 64), (256, 128), (64, 256), (60, 1024),
         (1, 4096), (1, 8192), (1, 16384), (1, 32768)]
SOLVE_SIZES = [s for s in SIZES if s[1] <= 16384]
# --probes: the rules' crossovers (chol_rules' register kernel against
# potrfBatched between n 32 and 64, its potrfBatched range, the guarded
# copy's 16 MiB, solve_rules' single systems)
PROBES = [(1024, 40), (1024, 48), (1024, 56), (1024, 64),
          (16, 1024), (32, 1024), (32, 768), (32, 1536), (64, 512), (4, 2048),
          (1, 512), (1, 1024), (1, 2048), (2, 1024), (8, 1024)]


def torch_ms(op, dtype, batch, n, reps, path, nrhs):
    try:
        import torch
        a = torch.from_numpy(load_input(path, dtype, batch, n)).cuda()
        if op == "cholesky":
            fn = lambda: torch.linalg.cholesky_ex(a)  # no host check of info, as gstat's device path
        else:
            l = torch.linalg.cholesky(a)
            del a
            b = torch.rand(batch, n, nrhs, dtype=l.dtype, device=l.device) * 2 - 1
            if op == "cholesky_solve":
                fn = lambda: torch.cholesky_solve(b, l)
            else:
                fn = lambda: torch.linalg.solve_triangular(l, b, upper=False)
        ms = time_cuda(fn, reps)
        torch.cuda.empty_cache()
        return ms
    except Exception as e:
        print(f"# torch {op} {dtype} {batch}x{n}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        return math.nan


def cupy_ms(op, dtype, batch, n, reps, path):
    if op != "cholesky":
        return math.nan
    return cupy_linalg_ms("cholesky", op, dtype, batch, n, reps, path)


def bench_case(exe, op, dtype, batch, n, reps, path, nrhs):
    if os.path.exists(path):
        os.remove(path)  # never time the others on a previous case's matrices
    args = [exe, op, dtype, str(batch), str(n), str(reps), path]
    if op != "cholesky":
        args.append(str(nrhs))
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"# bench_cuda {op} {dtype} {batch}x{n} failed: {res.stderr.strip()[:200]}", file=sys.stderr)
        return {}
    return {k: float(v) for k, v in (kv.split("=") for kv in res.stdout.split())}


def ratio(other, g):
    return other / g if other == other and g == g and g > 0 else math.nan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--nrhs", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated BATCHxN shapes")
    ap.add_argument("--dtypes", default="f32,f64")
    ap.add_argument("--no-solves", action="store_true")
    ap.add_argument("--seconds", type=float, default=math.inf)
    ap.add_argument("--probes", action="store_true", help="the rules' crossover sizes instead")
    args = ap.parse_args()
    only = {tuple(int(v) for v in s.split("x")) for s in args.only.split(",") if s}
    exe = os.path.join(args.build, "bench", "bench_cuda")
    tmp = tempfile.TemporaryDirectory()
    path = os.path.join(tmp.name, "input.bin")
    dtypes = args.dtypes.split(",")
    sizes, solve_sizes = (PROBES, PROBES) if args.probes else (SIZES, SOLVE_SIZES)
    cases = [("cholesky", dt, b, n) for dt in dtypes for b, n in sizes]
    if not args.no_solves:
        cases += [(op, dt, b, n) for op in ("cholesky_solve", "trsm") for dt in dtypes
                  for b, n in solve_sizes]
    start = time.monotonic()
    rows = []
    print(f"{'op':15} {'dt':4} {'batch x n':>10} {'gstat':>9} {'torch':>9} {'cupy':>9} {'batched':>9} "
          f"{'loop':>9} {'torch/gs':>8} {'loop/gs':>8}", flush=True)
    for op, dtype, batch, n in cases:
        if only and (batch, n) not in only:
            continue
        if time.monotonic() - start > args.seconds:
            print(f"# --seconds {args.seconds:g} spent: {op} {dtype} {batch}x{n} and later not run", flush=True)
            break
        reps = args.reps if batch * n ** 3 < 2e11 else 3
        f = bench_case(exe, op, dtype, batch, n, reps, path, args.nrhs)
        g = f.get("gstat_ms", math.nan)
        t = torch_ms(op, dtype, batch, n, reps, path, args.nrhs)
        c = cupy_ms(op, dtype, batch, n, reps, path)
        batched = f.get("potrfBatched_ms" if op == "cholesky" else "trsmBatched_ms", math.nan)
        loop = f.get({"cholesky": "xpotrf_loop_ms", "cholesky_solve": "xpotrs_loop_ms",
                      "trsm": "trsm_loop_ms"}[op], math.nan)
        row = (op, dtype, batch, n, g, t, c, batched, loop, ratio(t, g), ratio(loop, g))
        rows.append(row)
        print(f"{op:15} {dtype:4} {f'{batch}x{n}':>10} {g:9.3f} {t:9.3f} {c:9.3f} {batched:9.3f} "
              f"{loop:9.3f} {row[9]:8.2f} {row[10]:8.2f}", flush=True)
    # batched: potrfBatched / trsmBatched; loop: Xpotrf / Xpotrs / trsm per matrix (batch <= 64);
    # the short table: torch/gstat over the sizes torch ran, loop/gstat over the single matrices
    print(f"\n{'op':15} {'dt':4} {'sizes':>5} {'geomean torch/gs':>17} {'min torch/gs':>13} "
          f"{'at':>8} {'min loop/gs (1xN)':>18}")
    for op in ("cholesky", "cholesky_solve", "trsm"):
        for dtype in args.dtypes.split(","):
            mine = [r for r in rows if r[0] == op and r[1] == dtype]
            rs = [r for r in mine if r[9] == r[9]]
            singles = [r[10] for r in mine if r[2] == 1 and r[10] == r[10]]
            if not mine:
                continue
            geo = math.exp(sum(math.log(r[9]) for r in rs) / len(rs)) if rs else math.nan
            worst = min(rs, key=lambda r: r[9]) if rs else (0, 0, 0, 0) + (math.nan,) * 7
            xp = f"{min(singles):.2f}" if singles else "-"
            print(f"{op:15} {dtype:4} {len(rs):5d} {geo:17.2f} {worst[9]:13.2f} "
                  f"{f'{worst[2]}x{worst[3]}':>8} {xp:>18}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
