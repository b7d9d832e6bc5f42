#!/usr/bin/env python3
"""Covariance, Ledoit-Wolf shrinkage and Mahalanobis distances of data already
on the GPU (fp32): gstat_covariance, gstat_cov_shrink and gstat_mahalanobis
against the same computation written in torch on the same tensor, same run.

gstat is called through ctypes on the tensors' device pointers (no copy of X;
gstat's outputs are device float32 tensors too). torch: torch.cov; Ledoit-Wolf as scikit-learn
writes it (centred X, S = Xc^T Xc / n, the shrinkage from ||S||_F, tr S and
sum_k ||xc_k||^4); Mahalanobis as cholesky + solve_triangular + column sums
of squares. Times are wall-clock around synchronized calls, best of REPS
after one warm-up call each. The error columns compare with a float64 torch
computation on the same data (max relative error of the shrunk matrix, of
the distances).

usage: bench/gpu_stats_vs_torch.py [--build build-gpu] [--reps 5] [--quick] [--trace]

--trace: after each row, where one call's time goes (gstat's and torch's: kernels,
copies, host waits; gpu_bench_common.trace).
"""
import argparse
import ctypes

import torch

from gpu_bench_common import Matrix, load, timed, trace


def dense(t):
    """A contiguous 2-D (or 1-D: a column) CUDA tensor as a gstat_matrix."""
    dt = {torch.float32: 1, torch.float64: 2}[t.dtype]
    rows, cols = (t.shape[0], t.shape[1]) if t.dim() == 2 else (t.shape[0], 1)
    return Matrix(t.data_ptr(), dt, 1, t.device.index, 1, rows, cols, rows * cols, cols, 1)


def torch_ledoit_wolf(x):
    n, p = x.shape
    xc = x - x.mean(0)
    s = xc.T @ xc / n
    mu = torch.trace(s) / p
    eye = torch.eye(p, device=x.device, dtype=x.dtype)
    delta = ((s - mu * eye) ** 2).sum() / p
    beta = ((xc * xc).sum(1) ** 2).sum() / n - (s * s).sum()
    beta = torch.clamp(beta / (p * n), min=0.0)
    beta = torch.minimum(beta, delta)
    shrink = torch.where(beta == 0, torch.zeros_like(beta), beta / delta)
    return (1 - shrink) * s + shrink * mu * eye, shrink


def torch_mahalanobis(x, center, cov):
    low = torch.linalg.cholesky(cov)
    z = torch.linalg.solve_triangular(low, (x - center).T, upper=False)
    return (z * z).sum(0)


def rel_err(a, ref):
    return ((a.double() - ref).abs().max() / ref.abs().max()).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--trace", action="store_true")
    args = ap.parse_args()
    lib, ctx = load(args.build)
    shapes = [(100000, 100), (20000, 1000), (1000000, 1000)]
    if args.quick:
        shapes = shapes[:2]
    rows = []
    for n, p in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        # well conditioned (singular values in about [0.5, 1.5]): the float32 covariance of a
        # plain Gaussian mix can fail Cholesky (bench/README.md)
        mix = torch.eye(p, device="cuda") + 0.25 * torch.randn(p, p, device="cuda", generator=g) / p ** 0.5
        x = (torch.randn(n, p, device="cuda", generator=g) @ mix + 3.0).contiguous()
        xm, xd = dense(x), x.double()
        c_out = torch.empty(p, p, device="cuda", dtype=torch.float32)
        m_out = torch.empty(p, device="cuda", dtype=torch.float64)
        cm, mm = dense(c_out), dense(m_out)
        sh = ctypes.c_double()

        def gstat_cov():
            st = lib.gstat_covariance(ctx, ctypes.byref(xm), None, ctypes.byref(cm),
                                      ctypes.byref(mm))
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            return c_out

        g_ms, c = timed(gstat_cov, args.reps)
        ran = lib.gstat_ctx_last_backend_name(ctx).decode()
        t_ms, ct = timed(lambda: torch.cov(x.T), args.reps)
        ref = torch.cov(xd.T)
        rows.append(("covariance", n, p, ran, g_ms, t_ms, rel_err(c, ref), rel_err(ct, ref)))
        print(f"{n}x{p} covariance: gstat {g_ms:.2f} ms ({ran}), torch {t_ms:.2f} ms", flush=True)
        if args.trace:
            trace(f"gstat covariance {n}x{p}", gstat_cov)
            trace(f"torch covariance {n}x{p}", lambda: torch.cov(x.T))

        def gstat_lw():
            st = lib.gstat_cov_shrink(ctx, ctypes.byref(xm), 0, 0, ctypes.byref(cm),
                                      ctypes.byref(mm), ctypes.byref(sh))
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            return c_out

        g_ms, c = timed(gstat_lw, args.reps)
        ran = lib.gstat_ctx_last_backend_name(ctx).decode()
        t_ms, (ct, _) = timed(lambda: torch_ledoit_wolf(x), args.reps)
        ref, _ = torch_ledoit_wolf(xd)
        rows.append(("Ledoit-Wolf", n, p, ran, g_ms, t_ms, rel_err(c, ref), rel_err(ct, ref)))
        print(f"{n}x{p} Ledoit-Wolf: gstat {g_ms:.2f} ms ({ran}), torch {t_ms:.2f} ms", flush=True)
        if args.trace:
            trace(f"gstat Ledoit-Wolf {n}x{p}", gstat_lw)
            trace(f"torch Ledoit-Wolf {n}x{p}", lambda: torch_ledoit_wolf(x))

        cov = torch.cov(x.T).contiguous()
        center = x.mean(0).contiguous()
        d_out = torch.empty(n, device="cuda", dtype=torch.float64)
        sm, zm, dm = dense(cov), dense(center), dense(d_out)

        def gstat_maha():
            st = lib.gstat_mahalanobis(ctx, ctypes.byref(xm), ctypes.byref(zm), ctypes.byref(sm), 0,
                                       ctypes.byref(dm))
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            return d_out

        g_ms, d = timed(gstat_maha, args.reps)
        ran = lib.gstat_ctx_last_backend_name(ctx).decode()
        t_ms, dt = timed(lambda: torch_mahalanobis(x, center, cov), args.reps)
        ref = torch_mahalanobis(xd, center.double(), cov.double())
        rows.append(("Mahalanobis", n, p, ran, g_ms, t_ms, rel_err(d, ref), rel_err(dt, ref)))
        print(f"{n}x{p} Mahalanobis: gstat {g_ms:.2f} ms ({ran}), torch {t_ms:.2f} ms", flush=True)
        if args.trace:
            trace(f"gstat Mahalanobis {n}x{p}", gstat_maha)
            trace(f"torch Mahalanobis {n}x{p}", lambda: torch_mahalanobis(x, center, cov))
        del x, xd, mix, cov, center, c_out, m_out, d_out, ref
        torch.cuda.empty_cache()
    lib.gstat_ctx_destroy(ctx)
    print(f"\nDevice data, fp32 ({torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"best of {args.reps}, ms)")
    print("| statistic | n x p | gstat ran | gstat | torch | torch/gstat | rel. err. gstat "
          "| rel. err. torch |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for what, n, p, ran, g_ms, t_ms, eg, et in rows:
        print(f"| {what} | {n}x{p} | {ran} | {g_ms:.2f} | {t_ms:.2f} | {t_ms / g_ms:.2f} | "
              f"{eg:.1e} | {et:.1e} |")


if __name__ == "__main__":
    main()
