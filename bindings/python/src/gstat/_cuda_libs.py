"""Where gstat's CUDA backend module and the CUDA libraries it links come from.

The C library loads ``libgstat_cuda.so.0`` on its first GPU use: from
``$GSTAT_CUDA_MODULE``, else beside gstat's extension (a build from source
with nvcc). A pip install puts it in the ``gstat_cuda13`` package instead
(``pip install gstat[cuda]``), so ``setup`` names that file in
``GSTAT_CUDA_MODULE`` before the first call. The module finds cuSOLVER,
cuBLAS, cuSPARSE and cudart through its RUNPATH in
``site-packages/nvidia/cu13/lib`` (NVIDIA's pip packages); when they were
installed into another ``sys.path`` entry (``pip install --target``, a venv
over a system site) ``setup`` loads them by absolute path first, as PyTorch
does, so the module's dependencies resolve by soname; otherwise the system's
CUDA toolkit serves. ``why_not`` turns a failure into a sentence.
"""
import ctypes
import importlib.util
import os
import re
import sys

MODULE = "libgstat_cuda.so.0"
ENV = "GSTAT_CUDA_MODULE"
PIP_LIB_DIR = os.path.join("nvidia", "cu13", "lib")  # NVIDIA's CUDA 13 wheels
# Everything the module needs from CUDA, each after the libraries it needs
# itself (cuSOLVER needs cuSPARSE, cuBLAS(Lt) and nvJitLink).
CUDA_LIBS = ("libcudart.so.13", "libnvJitLink.so.13", "libcublasLt.so.13", "libcublas.so.13",
             "libcusparse.so.12", "libcusolver.so.12")
NEEDS_CUDA = "13.0"  # the driver API version the module's cudart needs

state = {"module": None, "source": None, "preloaded": []}


def package_module(find_spec=importlib.util.find_spec):
    """The module the gstat_cuda13 distribution installed, or None."""
    try:
        spec = find_spec("gstat_cuda13")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, MODULE)
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


def find_module(core_dir, environ=os.environ, find_spec=importlib.util.find_spec):
    """(path, source) of the module the C library will load, in its order of
    preference; (None, None) when there is none."""
    env = environ.get(ENV)
    if env:
        return env, ENV
    beside = os.path.join(core_dir, MODULE)
    if os.path.isfile(beside):
        return beside, "beside gstat's extension"
    path = package_module(find_spec)
    return (path, "gstat_cuda13") if path else (None, None)


def pip_lib_dir(module_path, search_path=None):
    """The folder of NVIDIA's CUDA 13 pip libraries the module should use:
    None when its RUNPATH folder already holds them (nothing to do) or no
    folder on the path does (the system's toolkit, if any, serves)."""
    runpath = os.path.join(os.path.dirname(os.path.dirname(module_path)), PIP_LIB_DIR)
    if all(os.path.isfile(os.path.join(runpath, lib)) for lib in CUDA_LIBS):
        return None
    for entry in sys.path if search_path is None else search_path:
        folder = os.path.join(entry or os.curdir, PIP_LIB_DIR)
        if os.path.isfile(os.path.join(folder, "libcusolver.so.12")):
            return os.path.abspath(folder)
    return None


def preload(folder, load=ctypes.CDLL):
    """Load the CUDA libraries in `folder` by absolute path; returns those loaded."""
    done = []
    for lib in CUDA_LIBS:
        path = os.path.join(folder, lib)
        if os.path.isfile(path):
            load(path)
            done.append(path)
    return done


def setup(core_dir, environ=os.environ):
    """Point the C library at the pip-installed module and load its CUDA
    libraries where its RUNPATH would miss them. Called once by ``import gstat``;
    cheap when no module is installed or its libraries sit beside it."""
    path, source = find_module(core_dir, environ)
    state["module"], state["source"] = path, source
    if source != "gstat_cuda13":
        return
    environ[ENV] = path
    folder = pip_lib_dir(path)
    if folder:
        try:
            state["preloaded"] = preload(folder)
        except OSError:  # a broken install: why_not names it
            pass


def missing_library(message):
    """The library a dlopen error names as not found, or None."""
    found = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", message)
    return found.group(1) if found else None


def module_problem(path, load=ctypes.CDLL):
    """Why the module at `path` does not load, or None when it does."""
    if not os.path.isfile(path):
        return f"the CUDA module {path} ({state['source'] or ENV}) does not exist"
    try:
        load(path)
    except OSError as e:
        lib = missing_library(str(e))
        if not lib:
            return f"the CUDA module {path} does not load: {e}"
        # only gstat_cuda13's module looks in NVIDIA's pip packages
        hint = ("install NVIDIA's CUDA 13 pip libraries (pip install gstat[cuda] brings "
                "nvidia-cusolver, nvidia-cublas, nvidia-cusparse, nvidia-cuda-runtime) or put "
                if state["source"] == "gstat_cuda13" else "put ")
        return (f"the CUDA module {path} is installed but {lib} was not found: {hint}the CUDA 13 "
                f"toolkit's lib64 on LD_LIBRARY_PATH")
    return None


def driver_problem(device, load=ctypes.CDLL):
    """Why the driver offers no `device`, or None when it does."""
    try:
        cuda = load("libcuda.so.1")
    except OSError:
        return "no NVIDIA driver: libcuda.so.1 is not installed (no GPU on this machine?)"
    rc = cuda.cuInit(0)
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        what = name.value.decode() if name.value else f"error {rc}"
        return f"the NVIDIA driver finds no usable GPU: cuInit failed with {what}"
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    cuda.cuDriverGetVersion(ctypes.byref(version))
    major, minor = version.value // 1000, version.value % 1000 // 10
    if (major, minor) < tuple(int(x) for x in NEEDS_CUDA.split(".")):
        return (f"the NVIDIA driver supports CUDA {major}.{minor}; gstat's CUDA module needs "
                f"{NEEDS_CUDA} (driver R580 or newer)")
    cuda.cuDeviceGetCount(ctypes.byref(count))
    if device >= count.value:
        return f"CUDA device {device} does not exist ({count.value} found)"
    return None


def why_not(device=0):
    """A sentence saying why the CUDA backend is not available on `device`."""
    path = state["module"]
    if path is None:
        return ("no CUDA module installed: pip install gstat[cuda] (the gstat-cuda13 wheel), or "
                f"build gstat with nvcc, or set {ENV} to a libgstat_cuda.so.0")
    return (module_problem(path) or driver_problem(device) or
            f"the CUDA backend did not start on device {device} (module {path} loads, the driver "
            f"sees the device): try backend='cuda' for the library's error")
