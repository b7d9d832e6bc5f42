"""gstat's threads: threadpoolctl's limits, the work-based thread count and
the OpenMP wait policy, checked without timing (the C library reports the
threads a call's steps ran on: gstat._core.last_threads())."""
import os
import subprocess
import sys

import numpy as np
import pytest

import gstat
from gstat import _core

threadpoolctl = pytest.importorskip("threadpoolctl")


def gstat_entries():
    return [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "gstat"]


def big_batch():
    a = np.random.default_rng(0).standard_normal((2000, 16, 16))
    return a + a.transpose(0, 2, 1)


def threads_of(f):
    with gstat.use_backend("cpu"):
        f()
    return _core.last_threads()


def test_threadpool_info_lists_gstat():
    (entry,) = gstat_entries()
    assert entry["user_api"] == "openmp"
    assert entry["num_threads"] == _core.effective_threads() >= 1
    assert entry["version"] == gstat.__c_version__
    assert os.path.basename(entry["filepath"]).startswith("_core")


def test_threadpool_limits_one_makes_gstat_single_threaded():
    a, before = big_batch(), gstat.get_num_threads()
    effective = _core.effective_threads()
    with threadpoolctl.threadpool_limits(1):
        (entry,) = gstat_entries()
        assert entry["num_threads"] == 1
        assert gstat.get_num_threads() == 1
        assert threads_of(lambda: gstat.linalg.eigh(a)) == 1
        x = np.random.default_rng(2).standard_normal((300, 2))
        assert threads_of(lambda: gstat.SpectralClustering(2, random_state=0).fit(x)) <= 1
    assert gstat.get_num_threads() == before  # restored exactly (0 stays 0)
    assert gstat_entries()[0]["num_threads"] == effective
    # the same batch with the limit lifted uses the threads again (the
    # rules give it one per 0.5 ms of its ~25 ms of work)
    assert min(effective, 16) <= threads_of(lambda: gstat.linalg.eigh(a)) <= effective


def test_limits_by_user_api():
    before = gstat.get_num_threads()
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert gstat.get_num_threads() == 1
    with threadpoolctl.threadpool_limits(1, user_api="blas"):  # not gstat's setting
        assert gstat.get_num_threads() == before
    controller = threadpoolctl.ThreadpoolController().select(internal_api="gstat")
    with controller.limit(limits=1):
        assert threads_of(lambda: gstat.linalg.eigh(big_batch())) == 1


def test_set_num_threads_is_what_threadpoolctl_reports():
    before = gstat.get_num_threads()
    try:
        gstat.set_num_threads(3)
        assert gstat_entries()[0]["num_threads"] == 3
        assert threads_of(lambda: gstat.linalg.eigh(big_batch())) == 3
    finally:
        gstat.set_num_threads(before)


def test_small_work_runs_on_one_thread():
    before = gstat.get_num_threads()
    gstat.set_num_threads(4)
    try:
        rng = np.random.default_rng(1)
        small = rng.standard_normal((3, 8, 8))
        assert threads_of(lambda: gstat.linalg.eigh(small + small.transpose(0, 2, 1))) == 1
        x = rng.standard_normal((50, 4))
        assert threads_of(lambda: gstat.cov(x, rowvar=False)) == 1
        assert threads_of(lambda: gstat.cov(rng.standard_normal((20000, 100)), rowvar=False)) == 4
    finally:
        gstat.set_num_threads(before)


def run_import(env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                                                          "KMP_BLOCKTIME")}
    env.update(env_extra, OMP_DISPLAY_ENV="verbose")
    code = "import os, gstat; print(os.environ.get('OMP_WAIT_POLICY'))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       check=True)
    return r.stdout.strip(), r.stderr


def test_private_runtime_is_the_wheels_libgomp(tmp_path):
    from gstat import _threadpool
    pkg = tmp_path / "gstat"
    pkg.mkdir()
    assert not _threadpool._private_runtime(str(pkg))  # no gstat.libs: a source build
    (tmp_path / "gstat.libs").mkdir()
    (tmp_path / "gstat.libs" / "libopenblas-1a2b.so.0").touch()
    assert not _threadpool._private_runtime(str(pkg))
    (tmp_path / "gstat.libs" / "libgomp-f9a9ad78.so.1.0.0").touch()
    assert _threadpool._private_runtime(str(pkg)) == sys.platform.startswith("linux")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgomp's OMP_DISPLAY_ENV")
def test_wait_policy_passive_unless_chosen():
    # libgomp prints its settings when it loads (gstat's import loads it);
    # it prints 'PASSIVE' for an unset policy too: its spin count tells
    # (300000 unset, 0 passive)
    from gstat import _threadpool
    out, err = run_import({})
    if _threadpool._private_runtime():  # the wheel's own libgomp: passive
        assert "GOMP_SPINCOUNT = '0'" in err
    else:  # the shared libgomp.so.1 of a source build: left as it is
        assert "GOMP_SPINCOUNT = '0'" not in err
    assert out == "None"  # the variable is gone again once libgomp read it
    out, err = run_import({"OMP_WAIT_POLICY": "active"})
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in err and "GOMP_SPINCOUNT = '0'" not in err
    assert out == "active"
