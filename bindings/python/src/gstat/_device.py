"""CUDA tensors (torch, CuPy, anything with __dlpack__): detection, the
producer's current stream, and outputs allocated through the input's own
library so results come back as the same kind of tensor on the same device."""
import sys

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


def empty_like(x, shape, device):
    """An uninitialised tensor of x's kind, dtype and device."""
    shape = tuple(int(s) for s in shape)
    if hasattr(x, "new_empty"):  # torch
        return x.new_empty(shape)
    ns = getattr(x, "__array_namespace__", None)
    if ns is not None:
        try:
            return ns().empty(shape, dtype=x.dtype, device=x.device)
        except TypeError:
            pass
    lib = _library(x)
    with lib.cuda.Device(device):  # CuPy
        return lib.empty(shape, dtype=x.dtype)
