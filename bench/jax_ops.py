#!/usr/bin/env python3
"""gstat.jax (gstat through XLA's FFI) against JAX's own eigh and Cholesky,
on the same device, the same matrices, both under jax.jit.

Each case is timed as the median of --reps calls after --warmup calls, every
call ended by block_until_ready (so a time includes one dispatch of the
jitted function: what a JAX user pays). The ratio is JAX's time over gstat's
(> 1: gstat is faster). On a GPU machine the GPU cases run (the data already
on the device); the CPU cases always run.

usage: bench/jax_ops.py [--reps 10] [--warmup 2] [--quick] [--cpu-only]
needs gstat installed with its JAX extension (scripts/jax-gpu-check, or
scripts/test-python with jax installed).
"""
import argparse
import statistics
import time

import numpy as np

GPU_CASES = [  # (op, dtype, batch, n)
    ("eigh", "float32", 64, 512), ("eigh", "float32", 1024, 32), ("eigh", "float64", 64, 512),
    ("eigh", "float64", 1024, 32), ("eigvalsh", "float32", 64, 512),
    ("cholesky", "float32", 1024, 32), ("cholesky", "float32", 64, 512),
    ("grad eigh", "float32", 1024, 32),
]
CPU_CASES = [
    ("eigh", "float32", 1024, 32), ("eigh", "float32", 64, 128), ("eigh", "float64", 1024, 32),
    ("eigvalsh", "float32", 1024, 32), ("cholesky", "float32", 1024, 32),
    ("cholesky", "float32", 64, 256), ("grad eigh", "float32", 256, 32),
]
QUICK = {("eigh", "float32", 64, 512), ("eigh", "float32", 1024, 32), ("cholesky", "float32", 1024, 32)}


def functions(op):
    import jax
    import jax.numpy as jnp

    import gstat.jax as gj

    if op == "eigh":
        return gj.eigh, jnp.linalg.eigh
    if op == "eigvalsh":
        return gj.eigvalsh, jnp.linalg.eigvalsh
    if op == "cholesky":
        return gj.cholesky, jnp.linalg.cholesky
    if op == "grad eigh":  # a gauge-invariant loss: the JVP rule and its transpose
        def loss(eigh):
            def f(a):
                w, v = eigh(a)
                return jnp.sum(jnp.sin(w)[..., None, :] * v * v)
            return jax.grad(f)
        return loss(gj.eigh), loss(jnp.linalg.eigh)
    raise ValueError(op)


def timed(fn, x, reps, warmup):
    import jax

    for _ in range(warmup):
        jax.block_until_ready(fn(x))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_case(device, op, dtype, batch, n, reps, warmup):
    import jax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n, n))
    a = (x @ np.swapaxes(x, -1, -2) / n + np.eye(n)).astype(dtype)  # SPD: Cholesky too
    a = jax.device_put(a, device)
    ours, theirs = (jax.jit(f) for f in functions(op))
    t_ours = timed(ours, a, reps, warmup)
    t_jax = timed(theirs, a, reps, warmup)
    return t_jax, t_ours


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="only the headline cases")
    p.add_argument("--cpu-only", action="store_true")
    args = p.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)  # float64 cases; float32 arrays stay float32
    import gstat.jax as gj

    try:
        gpus = [] if args.cpu_only else jax.devices("gpu")
    except RuntimeError:
        gpus = []
    plan = [(gpus[0], c) for c in GPU_CASES] if gpus else []
    plan += [(jax.devices("cpu")[0], c) for c in CPU_CASES]
    rows = []
    for device, (op, dtype, batch, n) in plan:
        if args.quick and (op, dtype, batch, n) not in QUICK:
            continue
        gj._backends_ran(reset=True)
        t_jax, t_ours = run_case(device, op, dtype, batch, n, args.reps, args.warmup)
        rows.append((device.platform, op, f"{batch}x{n}", dtype, t_jax, t_ours, t_jax / t_ours,
                     gj._backends_ran(reset=True)))
        print(f"  done {rows[-1][:4]}", flush=True)
    print(f"\ngstat.jax vs JAX (jit, median of {args.reps} after {args.warmup} warm-up, ms; "
          f"jax {jax.__version__})")
    head = ("device", "op", "batch x n", "dtype", "jax", "gstat", "jax/gstat", "gstat ran on")
    print("{:<7}{:<11}{:<11}{:<9}{:>10}{:>10}{:>11}  {}".format(*head))
    for r in rows:
        print("{:<7}{:<11}{:<11}{:<9}{:>10.3f}{:>10.3f}{:>11.2f}  {}".format(*r))


if __name__ == "__main__":
    main()
