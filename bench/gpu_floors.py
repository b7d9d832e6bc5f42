#!/usr/bin/env python3
"""Lower bounds on the H200 time of every shape in gpu_vs_torch.py's CASES.

For each case (eigh with vectors, Cholesky) it counts the arithmetic of the
path gstat takes there (src/backend/cuda/eigh_cuda.c's dispatch table) and the
bytes that must move at least (read A, write V or L and w, the whole batch),
and prints a Markdown table:
  compute floor = max(flops / peak, bytes / bandwidth)
  BLAS-2 floor  = max(compute floor, reduction's matrix-vector reads / bandwidth)
The second column applies where the path reduces to tridiagonal form one
column at a time (LAPACK's sytrd: half its flops are a symmetric
matrix-vector product that reads the whole trailing triangle each step,
sum (n-k)^2/2 = n^3/6 elements); it bounds an implementation that streams
those reads from HBM, not one that keeps the trailing matrix on chip.
With --measured FILE (lines "op dtype BATCHxN ms": gpu_vs_torch.py's output,
e.g. scripts/gpu-check's bench.log) it adds measured / the larger floor. Standard library only; no GPU needed.

usage: bench/gpu_floors.py [--measured FILE]
"""
import argparse
import importlib.util
import os
import sys

# H200 SXM peaks (dense, no sparsity): NVIDIA's datasheet figures, as listed by
# https://itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (FP64 34
# TFLOP/s, FP64 tensor 67, 4.8 TB/s) and the GH100 SXM theoretical table at
# https://glennklockwood.com/garden/processors/h100 (FP32 FMA 66.9, FP64 FMA
# 33.5, FP64 matrix 66.9; the H200 is the same GH100 with HBM3e).
PEAK_F32 = 66.9e12      # FP32 vector FMA (no TF32: gstat does not round to it)
PEAK_F64_VEC = 33.5e12  # FP64 vector FMA: the Jacobi kernels' rotations
PEAK_F64_TC = 66.9e12   # FP64 tensor core: cuBLAS/cuSOLVER's DGEMM-rich parts
HBM_BW = 4.8e12         # HBM3e, bytes/s

ELEM = {"f32": 4, "f64": 8, "bf16": 2}  # bytes of the caller's data
JACOBI_MAX_N = 64         # GSTAT_CU_JACOBI_MAX_N
# Measured Jacobi sweeps for random matrices (eigh_jacobi.cu's header:
# float / double 5.2 / 6.1 at n = 16, 5.9 / 6.9 at n = 32); n = 64 was not
# measured: sweeps grow about like log n, so n = 32's count + 0.7 is assumed.
SWEEPS = {16: (5.2, 6.1), 32: (5.9, 6.9), 64: (6.6, 7.6)}
TRIDIAG_PAIRS = 30        # n^2 flops: MRRR-class tridiagonal values and vectors


def load_cases():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_vs_torch.py")
    spec = importlib.util.spec_from_file_location("gpu_vs_torch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # only defines things: main() runs under __main__
    return mod.CASES


def jacobi_batch_ok(n, dtype, batch):
    """eigh_cuda.c's jacobi_rules: (max_n, min batch float, min batch double)."""
    for max_n, mb32, mb64 in ((32, 1, 1), (40, 1, 1), (44, 1, 256), (52, 32, 256), (64, 128, 256)):
        if n <= max_n:
            return batch == 1 or batch >= (mb64 if dtype == "f64" else mb32)
    return False


def eigh_path(dtype, batch, n):
    """The path of eigh_cuda.c's table for this case (values and vectors)."""
    if n <= JACOBI_MAX_N and jacobi_batch_ok(n, dtype, batch):
        return "Jacobi (warp)" if n <= 32 else "Jacobi (block)"
    if n >= 4096:
        return "two-stage" if dtype == "f64" else "cuSOLVER sytrd + own tridiagonal + ormtr"
    f64 = dtype == "f64"
    lockstep = ((160, 256, None, 4), (257, 383, 2, 2), (384, 2047, 4, 4), (2048, 2048, 4, 8))
    for lo, hi, mb32, mb64 in lockstep:
        mb = mb64 if f64 else mb32
        if lo <= n <= hi and mb is not None and batch >= mb:
            return "lockstep"
    loop = ((2048, 1, 9), (1024, 1, 8), (512, 2, 6))
    for min_n, lo, hi in loop:
        if n >= min_n:
            if lo <= batch <= hi:
                return "Xsyevd per matrix"
            break
    return "XsyevBatched"


def eigh_count(dtype, batch, n):
    """(path, flops, streamed BLAS-2 bytes) for the whole batch."""
    path = eigh_path(dtype, batch, n)
    if path.startswith("Jacobi"):
        np_ = n if n <= 32 else -(-n // 8) * 8  # the block kernel pads to a multiple of 8
        key = min(k for k in SWEEPS if k >= n)
        sweeps = SWEEPS[key][1 if dtype == "f64" else 0]
        # a step: np/2 rotations, each 6n flops on A's rows, 6n on its columns,
        # 6n on V (mul + fma per element) = 9 n^2; a sweep is np - 1 steps
        flops = 9 * n * n * (np_ - 1) * sweeps
        return path, batch * flops, 0.0
    # reduction 4/3 n^3 (half of it symv, half syr2k), back-transformation
    # 2 n^3 (a second one, 2 n^3 more, for the two-stage band step)
    flops = 4 / 3 * n**3 + 2 * n**3 + TRIDIAG_PAIRS * n * n
    if path == "two-stage":
        flops += 2 * n**3
        return path, batch * flops, 0.0  # stage 1 is BLAS-3: no streamed symv
    # float32 from 4096 runs its reduction in float32 (sytrd_split), bf16 in float
    work = 8 if dtype == "f64" else 4
    return path, batch * flops, batch * n**3 / 6 * work


def peak(dtype, path):
    if dtype != "f64":
        return PEAK_F32  # bf16 computes in float
    return PEAK_F64_VEC if path.startswith("Jacobi") else PEAK_F64_TC


def rows():
    out = []
    for op, dtype, batch, n in load_cases():
        e = ELEM[dtype]
        if op == "eigh":
            path, flops, blas2 = eigh_count(dtype, batch, n)
            io = batch * (2 * n * n + n) * e  # read A, write V and w
        else:
            path, flops, blas2 = "Cholesky", batch * n**3 / 3, 0.0
            io = batch * (n * n / 2 + n * n) * e  # read a triangle, write L (zeros above)
        compute = max(flops / peak(dtype, path), io / HBM_BW) * 1e3
        blas2_floor = max(compute, blas2 / HBM_BW * 1e3)
        out.append((op, dtype, batch, n, path, flops, io, compute, blas2_floor))
    return out


def read_measured(path):
    """{(op, dtype, 'BxN'): ms} from lines 'op dtype BATCHxN ms ...'."""
    got = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 4 and p[0] in ("eigh", "cholesky"):
                try:
                    got[(p[0], p[1], p[2])] = float(p[3])
                except ValueError:
                    pass
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Counts, peaks and their sources: the module's docstring and constants.")
    ap.add_argument("--measured", help="file of 'op dtype BATCHxN ms' lines (e.g. gpu_vs_torch.py's table)")
    args = ap.parse_args()
    meas = read_measured(args.measured) if args.measured else {}
    head = "| op | dtype | batch x n | path | GFLOP | MB moved | compute floor ms | BLAS-2/bandwidth floor ms |"
    sep = "|---|---|---|---|---:|---:|---:|---:|"
    if meas:
        head += " measured ms | measured / floor |"  # over the larger floor
        sep += "---:|---:|"
    print(head)
    print(sep)
    for op, dtype, batch, n, path, flops, io, compute, blas2 in rows():
        shape = f"{batch}x{n}"
        line = (f"| {op} | {dtype} | {shape} | {path} | {flops / 1e9:.3g} | {io / 1e6:.3g} | "
                f"{compute:.3g} | {blas2:.3g} |")
        if meas:
            ms = meas.get((op, dtype, shape))
            line += f" {ms:g} | {ms / blas2:.1f} |" if ms else " | |"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
