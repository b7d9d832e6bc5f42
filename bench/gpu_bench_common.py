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


def trace(label, fn, calls=20, top=5, gaps=0.0):
    """Where calls of fn() spend their time (torch.profiler: CUPTI sees gstat's
    kernels, copies and runtime calls as well as torch's): per call, the wall
    ms, the device's busy ms, kernels, copies and host waits, and the `top`
    largest device items; with gaps > 0, trace_gaps of one call too. Printed
    as one block; returns nothing."""
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
    if gaps > 0:
        trace_gaps(label, fn, min_gap_us=gaps)


def trace_gaps(label, fn, min_gap_us=50.0, calls=3):
    """Where the device idles inside one call of fn() (the last of `calls`, the
    one before it also profiled but not read):
    each stretch of at least min_gap_us between two device items (kernels,
    copies, memsets), with the items on either side and the runtime calls the
    host made meanwhile; time in a gap outside those calls is the caller's own
    host work. Printed as one block; returns nothing."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function

    for _ in range(calls - 2):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()  # the profiler's own first-call costs land here, not in the call read
        torch.cuda.synchronize()
        with record_function("gaps: the call"):
            fn()
        torch.cuda.synchronize()
    events = list(prof.events())
    call = next(((e.time_range.start, e.time_range.end, e.name) for e in events
                 if e.name == "gaps: the call"), None)
    t0 = call[0] if call else float("-inf")
    dev, api = [], []
    for e in events:
        span = (e.time_range.start, e.time_range.end, e.name)
        if span[0] < t0:
            continue
        if e.device_type == DeviceType.CUDA:
            dev.append(span)
        elif e.name.startswith("cuda") or e.name.startswith("cu"):
            api.append(span)
    dev.sort()
    api.sort()
    if not dev:
        print(f"gaps {label}: no device items seen")
        return
    if call:  # the host's time before the first device item and after the last
        print(f"gaps {label}: the call {(call[1] - call[0]) / 1e3:.3f} ms on the host")
        for what, a, b in (("before the first", call[0], dev[0][0]),
                           ("after the last", max(d[1] for d in dev), call[1])):
            in_api = sum(min(e, b) - max(s, a) for s, e, _ in api if e > a and s < b)
            print(f"gaps {label}: host {(b - a) / 1e3:.3f} ms {what} device item "
                  f"({in_api / 1e3:.3f} ms in runtime calls)")
    idle, shown = 0.0, []
    for (s0, e0, n0), (s1, e1, n1) in zip(dev, dev[1:]):
        gap = s1 - max(e0, s0)
        if gap <= 0:
            continue
        idle += gap
        if gap >= min_gap_us:
            inside = [(max(a, e0), min(b, s1), n) for a, b, n in api if b > e0 and a < s1]
            shown.append((e0 - dev[0][0], gap, n0, n1, inside))
    span = dev[-1][1] - dev[0][0]
    print(f"gaps {label}: device span {span / 1e3:.3f} ms, idle {idle / 1e3:.3f} ms in gaps, "
          f"{len(shown)} gaps >= {min_gap_us:.0f} us")
    for at, gap, n0, n1, inside in shown:
        in_api = sum(b - a for a, b, _ in inside)
        names = {}
        for a, b, n in inside:
            c, t = names.get(n, (0, 0.0))
            names[n] = (c + 1, t + b - a)
        calls_txt = ", ".join(f"{n} x{c} {t:.0f}us" for n, (c, t) in
                              sorted(names.items(), key=lambda kv: -kv[1][1])[:4])
        print(f"    at {at / 1e3:8.3f} ms  gap {gap:7.1f} us  (runtime calls {in_api:6.1f} us: "
              f"{calls_txt})\n        after {n0[:60]}\n        before {n1[:60]}", flush=True)
