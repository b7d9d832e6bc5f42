"""Device arrays without a GPU: every public entry point (device_cases.CASES)
given a fake CUDA array answers with gstat's own error or works, never with
a foreign exception (torch's "can't convert cuda:0 device type tensor to
numpy", an AttributeError, numpy's BufferError). test_gpu.py runs the same
table with real torch and CuPy tensors on a GPU."""
import ctypes

import numpy as np
import pytest

import gstat
from device_cases import CASES


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


# A private prototype: ctypes.pythonapi.PyCapsule_New is one object shared by
# every module, and jax.ffi.pycapsule rewrites its argtypes when it runs.
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))


class _Namespace:
    """The array-API namespace of FakeDevice: how gstat allocates its outputs."""

    @staticmethod
    def empty(shape, dtype=None, device=None):
        return FakeDevice(np.empty(shape, dtype=dtype or np.float64))

    @staticmethod
    def asarray(a, device=None):
        return FakeDevice(np.asarray(a))


class FakeDevice:
    """A CUDA DLPack array (device type 2) whose memory is really a numpy
    array's: on a machine without CUDA, the C library must refuse it (it
    never reads it on the host). `get()` gives its values, as CuPy's."""

    device = "cuda:0"

    def __init__(self, a):
        self._a = np.ascontiguousarray(a)
        self.shape, self.ndim, self.dtype = self._a.shape, self._a.ndim, self._a.dtype

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        a = self._a
        self._shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)  # kept alive with self
        code = {"f": 2, "i": 0, "u": 1}[a.dtype.kind]
        t = _DLTensor(a.ctypes.data, _DLDevice(2, 0), a.ndim,
                      _DLDataType(code, a.dtype.itemsize * 8, 1), self._shape, None, 0)
        self._managed = _DLManaged(t, None, None)
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)

    def __array_namespace__(self):
        return _Namespace

    def __getitem__(self, key):
        return FakeDevice(self._a[key])

    def swapaxes(self, i, j):
        return FakeDevice(self._a.swapaxes(i, j))

    def get(self):
        return self._a.copy()


class FakeInterfaceOnly:
    """A CUDA array with __cuda_array_interface__ and no DLPack (numba's
    device arrays, say)."""

    def __init__(self, a):
        a = np.ascontiguousarray(a)
        self.shape, self.ndim, self.dtype = a.shape, a.ndim, a.dtype
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                         "data": (a.ctypes.data, False), "version": 3}
        self._a = a

    def __getitem__(self, key):
        return FakeInterfaceOnly(self._a[key])

    def swapaxes(self, i, j):
        return FakeInterfaceOnly(self._a.swapaxes(i, j))


needs_no_gpu = pytest.mark.skipif(
    gstat.cuda_available(),
    reason="a fake device pointer must not reach a real CUDA module (test_gpu.py runs there)")


@needs_no_gpu
@pytest.mark.parametrize("name, call, gpu, fake", CASES, ids=[c[0] for c in CASES])
def test_fake_dlpack_device_array(name, call, gpu, fake):
    if fake == "refused":
        with pytest.raises(gstat.UnsupportedError) as e:
            call(FakeDevice)
        assert "CUDA" in str(e.value) or "device" in str(e.value), str(e.value)
        return
    got, want = call(FakeDevice), call(lambda a: a)
    if gpu == "device":
        assert isinstance(got, FakeDevice), type(got)
        got = got.get()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, call, gpu, fake", CASES, ids=[c[0] for c in CASES])
def test_cuda_array_interface_only(name, call, gpu, fake):
    with pytest.raises(gstat.UnsupportedError, match="__cuda_array_interface__"):
        call(FakeInterfaceOnly)


def test_converter_refuses_device_arrays_before_numpy():
    """The extension's own converter, under every Python path: a device array
    where host memory is needed is gstat's UnsupportedError, named."""
    from gstat import _core
    s = np.eye(3)
    for fake in (FakeDevice(s), FakeInterfaceOnly(s)):
        with pytest.raises(gstat.UnsupportedError, match="a: a CUDA array .* host memory"):
            _core.eigh(fake, "L", True, None, None, None, None)
        with pytest.raises(gstat.UnsupportedError, match="fweights: a CUDA array"):
            _core.cov(np.ones((3, 2)), 1, FakeDevice(np.ones(3)), None, 0, False, None, None, None,
                      False, False, None, None)
