"""gstat's threads on a shared machine.

Imported before ``gstat._core`` (which loads the OpenMP runtime): unless the
user chose an OpenMP wait policy, gstat's own runtime (the wheel's private
copy of libgomp, in gstat.libs) is asked for a passive one, so that threads
waiting at the end of a parallel region sleep instead of spinning on a core
that another process needs (bench/README.md, "Threads on a shared
machine"). The variable is removed again as soon as ``_core`` (and with it
libgomp) has loaded, so child processes and runtimes loaded later see the
user's environment. A build that links the shared libgomp.so.1 leaves the
policy alone: that runtime is every library's in the process (torch's
bundled libgomp.so.1 resolves to it), and passive waits slow their many
small parallel regions (bench/README.md, the 32nd session's calls).

``register`` then makes gstat's thread setting (``gstat.set_num_threads``)
known to threadpoolctl, so that ``threadpoolctl.threadpool_limits`` and
joblib's limits apply to gstat as to BLAS and OpenMP.
"""
import os
import sys

# Variables by which a user chooses how OpenMP threads wait: left alone.
_USER_CHOICE = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def _private_runtime(package_dir=os.path.dirname(__file__)):
    """Whether gstat brings its own OpenMP runtime (auditwheel's renamed
    libgomp-*.so* beside the package), which no other library shares."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libs = os.listdir(os.path.join(os.path.dirname(package_dir), "gstat.libs"))
    except OSError:
        return False
    return any(f.startswith("libgomp-") for f in libs)


# Whether gstat set OMP_WAIT_POLICY for its runtime (True), the user chose
# (False), or the runtime is shared with other libraries and kept its own (None).
wait_policy_set = False
if not any(v in os.environ for v in _USER_CHOICE):
    wait_policy_set = True if _private_runtime() else None
if wait_policy_set:
    os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        from . import _core  # noqa: F401  (loads libgomp, which reads the variable now)
    finally:  # gone before any other runtime (scikit-learn's own libgomp) loads
        os.environ.pop("OMP_WAIT_POLICY", None)


# Passive waits make a wake-up cost tens of microseconds: the library then
# keeps LAPACK's chains of small parallel BLAS calls on one thread.
if wait_policy_set or os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive":
    from . import _core as _c

    _c.set_passive_waits(True)

_zero_means = None  # what a setting of 0 (OpenMP's default) resolved to


def _make_controller(LibController):
    from . import _core

    class GstatController(LibController):
        """gstat's CPU thread setting, for threadpoolctl."""

        user_api = "openmp"  # gstat's threads are OpenMP threads
        internal_api = "gstat"
        filename_prefixes = ("_core",)
        check_symbols = ("gstat_python_threads_setting",)

        def get_num_threads(self):
            # threadpoolctl reads every library's count before it sets any
            # (its libgomp controller lowers OpenMP's default first): what a
            # setting of 0 means is recorded here
            global _zero_means
            n = _core.effective_threads()
            if _core.get_num_threads() == 0:
                _zero_means = n
            return n

        def set_num_threads(self, num_threads):
            # restoring the count a setting of 0 resolved to restores the 0
            _core.set_num_threads(0 if num_threads == _zero_means else int(num_threads))

        def get_version(self):
            return _core.c_version

    return GstatController


def register():
    """Register gstat's controller with threadpoolctl (3.x with ``register``)."""
    try:
        import threadpoolctl
    except ImportError:
        return
    if hasattr(threadpoolctl, "register"):
        threadpoolctl.register(_make_controller(threadpoolctl.LibController))
