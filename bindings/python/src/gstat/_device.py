"""CUDA tensors (torch, CuPy, anything with __dlpack__): detection, the
producer's current stream, and outputs allocated through the input's own
library so results come back as the same kind of tensor on the same device."""
import sys

import numpy as np

from ._graph_input import is_sparse_tensor

_CUDA_DEVICE_TYPES = (2, 13)  # DLPack kDLCUDA, kDLCUDAManaged


def cuda_device(x):
    """Device ordinal if `x` is a dense CUDA DLPack tensor (not numpy, not a
    sparse tensor: graph inputs copy those to the host), else None.

    Every entry point asks this before converting anything with numpy, whose
    own error for device memory would be the producer's (torch: "can't
    convert cuda:0 device type tensor to numpy"). A device array that offers
    only ``__cuda_array_interface__`` (no DLPack) raises gstat's
    UnsupportedError here."""
    if isinstance(x, np.ndarray) or is_sparse_tensor(x):  # sparse graphs: copied to the host
        return None
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None and hasattr(x, "__dlpack__"):
        kind, index = dev()
        if int(kind) in _CUDA_DEVICE_TYPES:
            return int(index)
    if hasattr(x, "__cuda_array_interface__"):
        from ._core import UnsupportedError
        raise UnsupportedError(
            f"{type(x).__name__} is a CUDA array with __cuda_array_interface__ but no DLPack "
            f"(__dlpack__); gstat takes device arrays through DLPack: pass a torch tensor or CuPy "
            f"array (cupy.asarray(x) wraps it without a copy), or host data")
    return None


def is_cuda(x):
    """Whether `x` is a CUDA DLPack tensor (cuda_device's rule)."""
    return cuda_device(x) is not None


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
    if getattr(lib, "__name__", "") != "cupy":
        from ._core import UnsupportedError
        raise UnsupportedError(f"{type(x).__name__}: gstat cannot allocate device outputs of this "
                               f"kind (it does for torch, CuPy and array-API namespaces); pass a "
                               f"torch tensor or CuPy array (both wrap DLPack without a copy)")
    with lib.cuda.Device(device):  # CuPy
        return lib.empty(shape, dtype=dtype or x.dtype)


def to_numpy(x):
    """A CUDA tensor's values as a numpy array on the host."""
    if hasattr(x, "detach"):  # torch
        t = x.detach().cpu()
        return t.float().numpy() if str(t.dtype) == "torch.bfloat16" else t.numpy()
    if hasattr(x, "get"):  # CuPy
        return x.get()
    return np.from_dlpack(x)


def host(a):
    """`a` itself, or a CUDA tensor's values on the host (small parameters:
    weights, a centre, a precision)."""
    return to_numpy(a) if is_cuda(a) else a


def like(x, a, device):
    """The host array `a` as a tensor of x's kind on x's device (an answer
    computed on the host for device input)."""
    a = np.ascontiguousarray(a)
    lib = _library(x)
    if hasattr(x, "new_empty"):  # torch
        return lib.as_tensor(a, device=x.device)
    if getattr(lib, "__name__", "") == "cupy":
        with lib.cuda.Device(device):
            return lib.asarray(a)
    ns = x.__array_namespace__()
    return ns.asarray(a, device=x.device)


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
