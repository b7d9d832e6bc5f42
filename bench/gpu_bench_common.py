"""What the ctypes GPU benchmarks share (gpu_pca_vs_torch.py, gpu_stats_vs_torch.py):
the gstat_matrix layout, loading libgstat with a CUDA context, best-of timing."""
import ctypes
import os
import time

import torch


class Matrix(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("location", ctypes.c_int),
                ("device", ctypes.c_int32), ("batch", ctypes.c_int64), ("rows", ctypes.c_int64),
                ("cols", ctypes.c_int64), ("batch_stride", ctypes.c_int64),
                ("row_stride", ctypes.c_int64), ("col_stride", ctypes.c_int64)]


def load(build):
    """libgstat from the build folder and a context with a usable CUDA backend."""
    lib = ctypes.CDLL(os.path.join(build, "libgstat.so.0"))
    lib.gstat_ctx_last_error.restype = ctypes.c_char_p
    lib.gstat_ctx_last_backend_name.restype = ctypes.c_char_p
    ctx = ctypes.c_void_p()
    assert lib.gstat_ctx_create(ctypes.byref(ctx), None) == 0
    assert lib.gstat_ctx_cuda_available(ctx), "no CUDA backend"
    return lib, ctx


def timed(fn, reps):
    """Best of reps wall-clock ms of fn() with the device synchronized, and its last result."""
    fn()  # warm-up: workspace, handles
    torch.cuda.synchronize()
    best = float("inf")
    out = None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def _dev_us(e):
    for a in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(e, a):
            return getattr(e, a)
    return 0.0


def trace(label, fn, calls=20, top=5):
    """Where calls of fn() spend their time (torch.profiler: CUPTI sees gstat's
    kernels, copies and runtime calls as well as torch's): per call, the wall
    ms, the device's busy ms, kernels, copies and host waits, and the `top`
    largest device items. Printed as one block; returns nothing."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t) * 1e3 / calls
    dev, api = [], {}
    for e in prof.key_averages():
        us = _dev_us(e)
        if us > 0 and not e.key.startswith("cuda") and not e.key.startswith("cu"):
            dev.append((us / calls, e.count / calls, e.key))
        elif e.key.startswith("cuda") or e.key.startswith("cu"):
            api[e.key] = (e.count / calls, e.cpu_time_total / calls)
    busy = sum(d[0] for d in dev) / 1e3
    kernels = sum(d[1] for d in dev if not d[2].startswith("Memcpy") and not d[2].startswith("Memset"))
    copies = sum(d[1] for d in dev if d[2].startswith("Memcpy"))
    waits = sum(c for k, (c, _) in api.items() if "Synchronize" in k or k in ("cudaMemcpy",))
    wait_us = sum(t for k, (_, t) in api.items() if "Synchronize" in k or k in ("cudaMemcpy",))
    print(f"trace {label}: wall {wall:.3f} ms/call, device busy {busy:.3f} ms, "
          f"kernels {kernels:.1f}, copies {copies:.1f}, host waits {waits:.1f} ({wait_us:.0f} us)")
    for us, cnt, key in sorted(dev, reverse=True)[:top]:
        print(f"    {us:9.1f} us  x{cnt:4.1f}  {key[:90]}")
    calls_api = ", ".join(f"{k} {c:.1f} ({t:.0f} us)" for k, (c, t) in sorted(api.items())
                          if c >= 0.5)
    host_api = sum(t for _, t in api.values()) / 1e3
    print(f"    api per call (count, host time): {calls_api}; all runtime calls {host_api:.1f} ms",
          flush=True)
