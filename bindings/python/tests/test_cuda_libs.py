"""gstat/_cuda_libs.py: which CUDA module the C library is pointed at and
where its CUDA libraries come from, on fake site-packages layouts (no GPU,
nothing installed); and cuda_available(reason=True) on this machine."""
import importlib.machinery
import os

import pytest

import gstat
from gstat import _cuda_libs as cl


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").close()
    return str(path)


def fake_site(root, module=True, libs=()):
    """A site-packages folder with gstat_cuda13 (its module) and NVIDIA's libraries."""
    if module:
        touch(root / "gstat_cuda13" / "__init__.py")
        touch(root / "gstat_cuda13" / cl.MODULE)
    for lib in libs:
        touch(root / "nvidia" / "cu13" / "lib" / lib)
    return root


def spec_in(root):
    """find_spec as if `root` were the only sys.path entry."""
    return lambda name: importlib.machinery.PathFinder.find_spec(name, [str(root)])


def test_module_order_env_then_beside_extension_then_package(tmp_path):
    site = fake_site(tmp_path / "site")
    core = tmp_path / "core"
    core.mkdir()
    pkg = str(site / "gstat_cuda13" / cl.MODULE)
    assert cl.find_module(str(core), {}, spec_in(site)) == (pkg, "gstat_cuda13")
    beside = touch(core / cl.MODULE)
    assert cl.find_module(str(core), {}, spec_in(site)) == (beside, "beside gstat's extension")
    assert cl.find_module(str(core), {cl.ENV: "/x/m.so"}, spec_in(site)) == ("/x/m.so", cl.ENV)


def test_no_module_anywhere(tmp_path):
    empty = fake_site(tmp_path / "site", module=False)
    assert cl.find_module(str(tmp_path), {}, spec_in(empty)) == (None, None)
    # a gstat_cuda13 package without its shared object is no module either
    touch(empty / "gstat_cuda13" / "__init__.py")
    assert cl.find_module(str(tmp_path), {}, spec_in(empty)) == (None, None)


def test_libraries_beside_the_module_need_no_preload(tmp_path):
    site = fake_site(tmp_path / "site", libs=cl.CUDA_LIBS)
    other = fake_site(tmp_path / "other", module=False, libs=cl.CUDA_LIBS)
    module = str(site / "gstat_cuda13" / cl.MODULE)
    assert cl.pip_lib_dir(module, [str(other)]) is None  # the RUNPATH serves


def test_libraries_in_another_site_are_found_and_preloaded_in_order(tmp_path):
    site = fake_site(tmp_path / "target")  # pip install --target: module alone
    other = fake_site(tmp_path / "venv", module=False, libs=cl.CUDA_LIBS)
    module = str(site / "gstat_cuda13" / cl.MODULE)
    folder = cl.pip_lib_dir(module, [str(tmp_path / "nothing"), str(other)])
    assert folder == str(other / "nvidia" / "cu13" / "lib")
    loaded = []
    assert cl.preload(folder, load=loaded.append) == loaded
    assert [os.path.basename(p) for p in loaded] == list(cl.CUDA_LIBS)
    assert all(os.path.isabs(p) for p in loaded)
    # dependencies first: cuSOLVER after cuSPARSE, cuBLAS after cuBLASLt
    names = [os.path.basename(p) for p in loaded]
    assert names.index("libcusparse.so.12") < names.index("libcusolver.so.12")
    assert names.index("libcublasLt.so.13") < names.index("libcublas.so.13")


def test_no_pip_libraries_leaves_it_to_the_system_toolkit(tmp_path):
    site = fake_site(tmp_path / "target")
    module = str(site / "gstat_cuda13" / cl.MODULE)
    assert cl.pip_lib_dir(module, [str(tmp_path / "nothing")]) is None


def test_missing_library_is_named(tmp_path):
    module = touch(tmp_path / cl.MODULE)

    def load(path):
        raise OSError("libcusolver.so.12: cannot open shared object file: No such file or directory")

    state = {"module": module, "source": "gstat_cuda13", "preloaded": []}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cl, "state", state)
        why = cl.module_problem(module, load=load)
        assert "libcusolver.so.12 was not found" in why and module in why
        assert "nvidia-cusolver" in why and "LD_LIBRARY_PATH" in why
        state["source"] = "beside gstat's extension"  # a source build: the toolkit only
        why = cl.module_problem(module, load=load)
        assert "libcusolver.so.12 was not found" in why and "nvidia-cusolver" not in why
    assert cl.module_problem(module, load=lambda path: None) is None
    assert "does not exist" in cl.module_problem(str(tmp_path / "gone.so"), load=load)
    assert cl.missing_library("/a/b.so: invalid ELF header") is None


class FakeDriver:
    """libcuda.so.1's entry points with chosen answers (pointer outputs through ctypes)."""

    def __init__(self, init=0, version=13000, count=1):
        self.init, self.version, self.count = init, version, count

    def cuInit(self, flags):
        return self.init

    def cuGetErrorName(self, rc, out):
        out._obj.value = b"CUDA_ERROR_NO_DEVICE"
        return 0

    def cuDriverGetVersion(self, out):
        out._obj.value = self.version
        return 0

    def cuDeviceGetCount(self, out):
        out._obj.value = self.count
        return 0


def test_driver_problems_are_told_apart():
    def no_driver(name):
        raise OSError(f"{name}: cannot open shared object file")

    assert "no NVIDIA driver" in cl.driver_problem(0, load=no_driver)
    assert "CUDA_ERROR_NO_DEVICE" in cl.driver_problem(0, load=lambda n: FakeDriver(init=100))
    old = cl.driver_problem(0, load=lambda n: FakeDriver(version=12080))
    assert "supports CUDA 12.8" in old and "needs 13.0" in old
    assert "device 1 does not exist (1 found)" in cl.driver_problem(1, load=lambda n: FakeDriver())
    assert cl.driver_problem(0, load=lambda n: FakeDriver()) is None


def test_setup_points_the_library_at_the_package_module(tmp_path, monkeypatch):
    site = fake_site(tmp_path / "site", libs=cl.CUDA_LIBS)
    monkeypatch.setattr(cl, "package_module", lambda *a: str(site / "gstat_cuda13" / cl.MODULE))
    monkeypatch.setattr(cl, "state", {"module": None, "source": None, "preloaded": []})
    env = {}
    cl.setup(str(tmp_path / "core"), env)
    assert env == {cl.ENV: str(site / "gstat_cuda13" / cl.MODULE)}
    assert cl.state["source"] == "gstat_cuda13" and cl.state["preloaded"] == []
    env = {cl.ENV: "/mine.so"}  # the user's choice stands
    cl.setup(str(tmp_path / "core"), env)
    assert env == {cl.ENV: "/mine.so"} and cl.state["source"] == cl.ENV


def test_cuda_available_says_why_not_here():
    ok, why = gstat.cuda_available(reason=True)
    assert ok == gstat.cuda_available()
    if ok:
        assert why == ""
        return
    known = ("no CUDA module installed", "the CUDA module", "no NVIDIA driver",
             "the NVIDIA driver", "CUDA device", "the CUDA backend did not start")
    assert why.startswith(known), why
    if cl.state["module"] is None:
        assert "gstat[cuda]" in why


def test_cuda_available_without_a_driver_names_it():
    """On a machine without libcuda.so.1 (CI, this container) whose module
    loads, the reason is the driver, not a crash or a vague no."""
    try:
        import ctypes

        ctypes.CDLL("libcuda.so.1")
        pytest.skip("an NVIDIA driver is installed here")
    except OSError:
        pass
    if cl.state["module"] is None or cl.module_problem(cl.state["module"]):
        pytest.skip("no loadable CUDA module here: the driver is not what is missing")
    ok, why = gstat.cuda_available(reason=True)
    assert not ok and why.startswith("no NVIDIA driver"), why


ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.mark.skipif(not os.path.isfile(os.path.join(ROOT, "VERSION")),
                    reason="not run from a gstat repository checkout")
def test_the_cuda_extra_pins_this_version():
    """gstat[cuda] must bring the module built from the same sources (the
    module's API version is checked at load, so another one would not load)."""
    import re

    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    pyproject = open(os.path.join(ROOT, "bindings", "python", "pyproject.toml")).read()
    assert re.search(r'^cuda = \["gstat-cuda13==([^"]+)"\]', pyproject, re.M).group(1) == version
    cuda_project = open(os.path.join(ROOT, "bindings", "python-cuda", "pyproject.toml")).read()
    assert 'name = "gstat-cuda13"' in cuda_project and 'input = "../../VERSION"' in cuda_project
