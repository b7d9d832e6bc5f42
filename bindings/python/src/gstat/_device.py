"""CUDA tensors (torch, CuPy, anything with __dlpack__): detection, the
producer's current stream, and outputs allocated through the input's own
library so results come back as the same kind of tensor on the same device."""
import sys

import numpy as np

_CUDA_DEVICE_TYPES = (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged


def cuda_device(x):
    """Device ordinal if `x` is a CUDA DLPack tensor (not numpy), else None."""
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None or not hasattr(x, "__dlpack__"):
        return None
    kind, index = dev()
    return int(index) if int(kind) in _CUDA_DEVICE_TYPES else None


def _library(x):
    return sys.modules.get(type(x).__module__.split(".")[0])


def stream(x, device):
    """The producer's current CUDA stream (a cudaStream_t as int; 0 = legacy default)."""
    lib = _library(x)
    name = getattr(lib, "__name__", "")
    if name == "torch":
        return int(lib.cuda.current_stream(device).cuda_stream)
    if name == "cupy":
        with lib.cuda.Device(device):
            return int(lib.cuda.get_current_stream().ptr)
    return 0


def empty_like(x, shape, device, dtype=None):
    """An uninitialised tensor of x's kind and device, of x's dtype or the
    one named ("float64", ...)."""
    shape = tuple(int(s) for s in shape)
    lib = _library(x)
    if hasattr(x, "new_empty"):  # torch
        return x.new_empty(shape, dtype=getattr(lib, dtype) if dtype else None)
    ns = getattr(x, "__array_namespace__", None)
    if ns is not None:
        try:
            return ns().empty(shape, dtype=dtype or x.dtype, device=x.device)
        except TypeError:
            pass
    with lib.cuda.Device(device):  # CuPy
        return lib.empty(shape, dtype=dtype or x.dtype)


def to_numpy(x):
    """A CUDA tensor's values as a numpy array on the host."""
    if hasattr(x, "detach"):  # torch
        return x.detach().cpu().numpy()
    if hasattr(x, "get"):  # CuPy
        return x.get()
    return np.from_dlpack(x)


def refuse_masked(x, what, hint="pass x.filled(value)"):
    """TypeError for a numpy masked array with masked entries: converting it
    would silently drop its mask."""
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        raise TypeError(f"{what}: masked arrays are not supported (the mask would be ignored); "
                        f"{hint}")


def refuse(x, what):
    """gstat's UnsupportedError for a CUDA tensor where only host data are served (and
    TypeError for a masked array)."""
    refuse_masked(x, what)
    if cuda_device(x) is not None:
        from ._core import UnsupportedError
        raise UnsupportedError(f"{what}: CUDA tensors are not supported here yet; pass host data "
                               f"(for torch, x.cpu().numpy())")
