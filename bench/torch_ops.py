#!/usr/bin/env python3
"""gstat.torch.eigh against torch.linalg.eigh inside autograd: forward,
forward + backward (a gauge-invariant loss of eigenvalues and vectors), and
one compiled training step of a model with a group-ZCA whitening layer
(the vignette's model, larger), on CUDA (CUDA events, median) and a small
CPU table (wall clock, median). Prints one table; ratio = torch / gstat
(> 1: gstat faster).

With --graph, a row "gstat fwd+bwd, CUDA graph": the same forward + backward
captured once in a torch.cuda.CUDAGraph and replayed (gstat's eigh of order
<= 64 captures; torch.linalg.eigh synchronises, so it has no such row).
--quick: only the float32 CUDA cases and the training step (no CPU table).
--breakdown: where a small eager step's time goes (1024 x 32 float32 on CUDA,
256 x 32 on the CPU with --cpu-only):
host microseconds per call of each piece over many calls (the GPU keeps up,
so this is the host's cost), then the Python functions that cost most.

usage: bench/torch_ops.py [--reps 20] [--cpu-only] [--no-compile] [--graph] [--quick]
                          [--breakdown]
Needs gstat (scripts/python-gpu-check's build, on PYTHONPATH) and torch.
"""
import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch

import gstat.torch as gt

CUDA_CASES = [(torch.float32, 64, 512), (torch.float32, 1024, 32), (torch.float64, 64, 512),
              (torch.float64, 1024, 32)]
CPU_CASES = [(torch.float32, 256, 32), (torch.float32, 16, 128), (torch.float64, 256, 32)]


def sym_batch(batch, n, dtype, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(batch, n, n, generator=g, dtype=torch.float64)
    return ((x + x.mT) / 2).to(device=device, dtype=dtype)


def loss_of(w, v, cw, cv):
    # gauge invariant: eigenvector signs never change it
    return (w * cw).sum() + (v * v * cv).sum()


def timer(device):
    """Median milliseconds of fn over reps (after one warm-up)."""
    def run(fn, reps):
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            if device == "cuda":
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)
    return run


def graph_rows(cases, reps):
    """gstat's forward + backward captured in a CUDA graph, replayed (order <= 64)."""
    run, rows = timer("cuda"), []
    for dtype, batch, n in cases:
        if n > gt._ASYNC_MAX_N:
            continue
        a = sym_batch(batch, n, dtype, "cuda").requires_grad_()
        cw, cv = torch.randn(batch, n, device="cuda", dtype=dtype), torch.randn_like(a)

        def step():
            return torch.autograd.grad(loss_of(*gt.eigh(a), cw, cv), a)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        rows.append(("cuda", str(dtype)[6:], f"{batch}x{n} (CUDA graph)", "gstat", float("nan"),
                     run(g.replay, reps)))
        rows.append(("cuda", str(dtype)[6:], f"{batch}x{n} (CUDA graph)", "torch", float("nan"),
                     float("nan")))
    return rows


def eigh_rows(device, cases, reps):
    run, rows = timer(device), []
    for dtype, batch, n in cases:
        a = sym_batch(batch, n, dtype, device).requires_grad_()
        cw, cv = torch.randn(batch, n, device=device, dtype=dtype), torch.randn_like(a)
        for name, eigh in (("gstat", gt.eigh), ("torch", torch.linalg.eigh)):
            def fwd():
                with torch.no_grad():
                    eigh(a)

            def fwd_bwd():
                torch.autograd.grad(loss_of(*eigh(a), cw, cv), a)

            r = reps if batch * n ** 3 < 2 ** 27 or name == "gstat" else max(3, reps // 5)
            rows.append((device, str(dtype)[6:], f"{batch}x{n}", name, run(fwd, r), run(fwd_bwd, r)))
    return rows


class GroupZCA(torch.nn.Module):
    """Whitens each group of features with the inverse square root of its
    batch covariance: (x - mean) V diag((w + eps)^-1/2) V^T."""

    def __init__(self, features, group, eigh, eps=1e-3):
        super().__init__()
        self.group, self.eigh, self.eps = group, eigh, eps

    def forward(self, x):
        b, f = x.shape
        xg = (x - x.mean(0)).reshape(b, f // self.group, self.group).transpose(0, 1)
        cov = xg.mT @ xg / (b - 1)
        w, v = self.eigh(cov)
        whiten = v @ torch.diag_embed((w.clamp_min(0) + self.eps).rsqrt()) @ v.mT
        return (xg @ whiten).transpose(0, 1).reshape(b, f)


def make_model(eigh, features=1024, group=32, classes=10, inputs=256):
    return torch.nn.Sequential(torch.nn.Linear(inputs, features), GroupZCA(features, group, eigh),
                               torch.nn.ReLU(), torch.nn.Linear(features, classes))


def train_step_rows(device, reps, compile_):
    run, rows = timer(device), []
    for name, eigh in (("gstat", gt.eigh), ("torch", torch.linalg.eigh)):
        torch.manual_seed(0)
        model = make_model(eigh).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x, y = torch.randn(512, 256, device=device), torch.randint(0, 10, (512,), device=device)

        def loss_of(xb, yb):
            return torch.nn.functional.cross_entropy(model(xb), yb)

        # the forward and (through AOT autograd) its backward compiled
        loss_fn = torch.compile(loss_of, fullgraph=True) if compile_ else loss_of

        def step():
            opt.zero_grad(set_to_none=True)
            loss_fn(x, y).backward()
            opt.step()

        rows.append((device, "float32", "train step, 32 x 32x32 groups", name, float("nan"),
                     run(step, reps)))
    return rows


def host_us(fn, calls, device):
    """Host microseconds per call over many calls, synchronised once."""
    for _ in range(10):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def host_breakdown(device, dtype=torch.float32, batch=1024, n=32, calls=300):
    a = sym_batch(batch, n, dtype, device).requires_grad_()
    cw, cv = torch.randn(batch, n, device=device, dtype=dtype), torch.randn_like(a)
    w0, v0 = (t.detach() for t in gt.eigh(a))
    gw, gv = torch.randn_like(w0), torch.randn_like(v0)
    wl, vl = w0.clone().requires_grad_(), v0.clone().requires_grad_()
    pieces = {
        "gstat eigh, no grad": lambda: gt.eigh(a.detach()),
        "gstat eigh, grad on": lambda: gt.eigh(a),
        "torch eigh, grad on": lambda: torch.linalg.eigh(a),
        "loss + its backward alone": lambda: torch.autograd.grad(loss_of(wl, vl, cw, cv), (wl, vl)),
        "gstat backward formula alone": lambda: gt._eigh_backward_once(w0, v0, gw, gv, 0.0),
        "gstat fwd+bwd": lambda: torch.autograd.grad(loss_of(*gt.eigh(a), cw, cv), a),
        "torch fwd+bwd": lambda: torch.autograd.grad(loss_of(*torch.linalg.eigh(a), cw, cv), a),
    }
    print(f"host us per call, {batch}x{n} {str(dtype)[6:]} on {device}, {calls} calls")
    for name, fn in pieces.items():
        print(f"  {name:<32} {host_us(fn, calls, device):9.1f}")
    prof = cProfile.Profile()
    prof.enable()
    host_us(pieces["gstat fwd+bwd"], calls, device)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(14)
    print("\n".join(out.getvalue().splitlines()[4:]))


def print_table(rows):
    print(f"| device | dtype | case | gstat fwd | torch fwd | gstat fwd+bwd | torch fwd+bwd | "
          f"ratio fwd | ratio fwd+bwd |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    by = {}
    for dev, dt, case, name, f, fb in rows:
        by.setdefault((dev, dt, case), {})[name] = (f, fb)
    for (dev, dt, case), r in by.items():
        (gf, gfb), (tf, tfb) = r["gstat"], r["torch"]
        print(f"| {dev} | {dt} | {case} | {gf:.3f} | {tf:.3f} | {gfb:.3f} | {tfb:.3f} | "
              f"{tf / gf:.2f} | {tfb / gfb:.2f} |".replace("nan", "-"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpu-only", action="store_true")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    if args.breakdown:
        if torch.cuda.is_available() and not args.cpu_only:
            host_breakdown("cuda")
        else:  # the CPU table's case (its backward is torch operations)
            host_breakdown("cpu", batch=256, calls=20)
        return
    rows = [] if args.quick else eigh_rows("cpu", CPU_CASES, max(3, args.reps // 4))
    if torch.cuda.is_available() and not args.cpu_only:
        cases = [c for c in CUDA_CASES if c[0] == torch.float32] if args.quick else CUDA_CASES
        rows += eigh_rows("cuda", cases, args.reps)
        if args.graph:
            rows += graph_rows(cases, args.reps)
        rows += train_step_rows("cuda", args.reps, not args.no_compile)
    print(f"torch {torch.version.__version__}, "
          f"{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}; median ms")
    print_table(rows)


if __name__ == "__main__":
    main()
