"""gstat's CUDA backend module, built for CUDA 13.

Nothing to import by hand: ``import gstat`` finds ``libgstat_cuda.so.0`` in
this package (``gstat/_cuda_libs.py``) and the CUDA libraries it links in
NVIDIA's pip packages (``nvidia-cusolver`` and the others this distribution
depends on) or in the system's CUDA toolkit. ``gstat.cuda_available(reason=True)``
says why the GPU is not used when it is not.
"""
import os

MODULE = "libgstat_cuda.so.0"


def module_path():
    """Absolute path of the CUDA backend module this package ships."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), MODULE)
