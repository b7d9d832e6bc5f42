"""One layout of scripts/cuda-wheel-check, in one process: argv[1] is
split, runpath or system (see that script). Exits non-zero on a failed check."""
import os
import sys

import numpy as np

import gstat  # before torch: the CUDA libraries must be gstat's own choice
from gstat import _cuda_libs

layout = sys.argv[1]
PIP = os.sep + os.path.join("nvidia", "cu13", "lib") + os.sep


def mapped(name):
    """Files of this process whose name starts with `name` (/proc/self/maps)."""
    return sorted({line.split()[-1] for line in open("/proc/self/maps")
                   if os.path.basename(line.split()[-1]).startswith(name)})


def spd(count, n, dtype, seed):
    x = np.random.default_rng(seed).standard_normal((count, n, n))
    return (x @ x.transpose(0, 2, 1) / n + np.eye(n)).astype(dtype)


def check_numpy():
    """Host arrays on the GPU: one order-512 float64 matrix (cuSOLVER's Xsyevd),
    a float32 batch of 8 at n = 400 (the lockstep solver, cuBLAS), a Cholesky."""
    for a, tol in ((spd(1, 512, np.float64, 1), 1e-10), (spd(8, 400, np.float32, 2), 2e-3)):
        w, v = gstat.linalg.eigh(a, backend="cuda")
        ran = gstat.last_backend()
        res = np.abs(a @ v - v * w[..., None, :]).max() / np.abs(a).max()
        print(f"  eigh {a.shape} {a.dtype}: backend {ran}, residual {res:.1e}")
        assert ran == "cuda" and res < tol, (ran, res)
    a = spd(4, 600, np.float64, 3)
    L = gstat.linalg.cholesky(a, backend="cuda")
    ran = gstat.last_backend()
    res = np.abs(L @ L.transpose(0, 2, 1) - a).max() / np.abs(a).max()
    print(f"  cholesky {a.shape}: backend {ran}, residual {res:.1e}")
    assert ran == "cuda" and res < 1e-12, (ran, res)


def check_torch():
    """A torch CUDA tensor in, tensors out, against torch's own eigvalsh."""
    import torch

    t = torch.from_numpy(spd(2, 512, np.float64, 4)).cuda()
    w, v = gstat.linalg.eigh(t)
    ran = gstat.last_backend()
    err = (w - torch.linalg.eigvalsh(t)).abs().max().item() / w.abs().max().item()
    print(f"  torch eigh {tuple(t.shape)} on {w.device}: backend {ran}, eigenvalues vs torch {err:.1e}")
    assert w.is_cuda and ran == "cuda" and err < 1e-12, (ran, err)


def main():
    ok, why = gstat.cuda_available(reason=True)
    st = _cuda_libs.state
    cusolver = mapped("libcusolver.so")
    print(f"  cuda_available: {ok} {why!r}")
    print(f"  module: {st['module']} (from {st['source']})")
    print(f"  preloaded by gstat: {[os.path.basename(p) for p in st['preloaded']]}"
          + (f" from {os.path.dirname(st['preloaded'][0])}" if st["preloaded"] else ""))
    print(f"  libcusolver loaded: {cusolver}")
    print(f"  libcudart loaded: {mapped('libcudart.so')}, libcublas: {mapped('libcublas.so')}")
    assert st["source"] == "gstat_cuda13", st
    if layout == "system":
        if not ok:  # no toolkit found either: the reason must name the library
            assert any(lib in why for lib in _cuda_libs.CUDA_LIBS), why
            print("  PASS: no CUDA libraries anywhere, and the reason names the missing one")
            return
        assert cusolver and not any(PIP in p for p in cusolver), cusolver
        print("  the system's CUDA toolkit served (found by the dynamic loader)")
        check_numpy()
    else:
        assert ok, why
        assert cusolver and all(PIP in p for p in cusolver), cusolver
        assert bool(st["preloaded"]) == (layout == "split"), st["preloaded"]
        check_numpy()
        check_torch()
    print(f"  PASS ({layout})")


main()
