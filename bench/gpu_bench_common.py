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
