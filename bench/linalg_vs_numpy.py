#!/usr/bin/env python3
"""gstat's CPU eigh and Cholesky against numpy (OpenBLAS) on the same inputs.

Each case is generated once with numpy, written to a raw file, timed in
numpy (best of REPS) and in bench_linalg (best of REPS, after one warm-up
call that builds the workspace), and the results are compared. Prints a
table with the speed-up and the target from the issue.

usage: bench/linalg_vs_numpy.py [--build build] [--reps 3] [--quick]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

# (op, dtype, batch, n, target speed-up over numpy or None)
CASES = [
    ("eigh", "f32", 64, 512, 2.0),
    ("eigh", "f32", 1024, 32, 5.0),
    ("eigh", "f32", 512, 64, 5.0),
    ("eigh", "f64", 1024, 32, None),
    ("eigh", "f64", 64, 512, None),
    ("eigh", "f32", 16, 1024, None),
    ("eigh", "f32", 1, 4096, None),
    ("eigvals", "f32", 64, 512, None),
    ("cholesky", "f32", 1024, 32, 3.0),
    ("cholesky", "f32", 64, 512, None),
    ("cholesky", "f64", 1024, 32, None),
]
QUICK = {(1024, 32), (512, 64), (64, 512)}
NP_DTYPE = {"f32": np.float32, "f64": np.float64}


def make_input(op, dtype, batch, n, rng):
    x = rng.standard_normal((batch, n, n)).astype(NP_DTYPE[dtype])
    a = (x + x.transpose(0, 2, 1)) / 2
    if op == "cholesky":
        a = a + n * np.eye(n, dtype=a.dtype)  # diagonally dominant: positive definite
    return np.ascontiguousarray(a)


def time_numpy(op, a, reps):
    fn = {
        "eigh": lambda: np.linalg.eigh(a),
        "eigvals": lambda: np.linalg.eigvalsh(a),
        "cholesky": lambda: np.linalg.cholesky(a),
    }[op]
    best = float("inf")
    out = None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="only the cases with targets")
    args = ap.parse_args()
    exe = os.path.join(args.build, "bench", "bench_linalg")
    rng = np.random.default_rng(2026)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for op, dtype, batch, n, target in CASES:
            if args.quick and (target is None or (batch, n) not in QUICK):
                continue
            a = make_input(op, dtype, batch, n, rng)
            inp, out = os.path.join(tmp, "in.raw"), os.path.join(tmp, "out.raw")
            a.tofile(inp)
            # gstat first: numpy's OpenBLAS threads keep spinning after a call
            # and would steal the cores from the subprocess
            res = subprocess.run([exe, op, dtype, str(batch), str(n), str(args.reps), inp, out],
                                 capture_output=True, text=True, check=True)
            np_ms, np_out = time_numpy(op, a, args.reps)
            fields = dict(kv.split("=") for kv in res.stdout.split())
            gs_ms = float(fields["best_ms"])
            got = np.fromfile(out, dtype=NP_DTYPE[dtype])
            if op == "cholesky":
                ref = np_out.reshape(-1)
            else:
                ref = (np_out[0] if op == "eigh" else np_out).reshape(-1)
            scale = np.abs(ref).max()
            err = float(np.abs(got - ref).max() / scale)
            rows.append((op, dtype, f"{batch}x{n}", gs_ms, np_ms, np_ms / gs_ms, target, err))
    print(f"gstat vs numpy {np.__version__} on {os.cpu_count()} cores (best of {args.reps}, ms)")
    print(f"{'op':9} {'dtype':5} {'batch x n':>10} {'gstat':>9} {'numpy':>9} {'speed-up':>8} {'target':>7} {'max rel diff':>12}")
    for op, dtype, shape, g, npy, sp, tgt, err in rows:
        t = f"{tgt:.0f}x" if tgt else "-"
        flag = "" if tgt is None or sp >= tgt else "  below target"
        print(f"{op:9} {dtype:5} {shape:>10} {g:9.2f} {npy:9.2f} {sp:7.2f}x {t:>7} {err:12.2e}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
