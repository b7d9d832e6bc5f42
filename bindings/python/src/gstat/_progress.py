"""Progress bars (tqdm) for long calls: the C library reports its progress
through the context's callback; this module turns the reports into a bar."""
import contextlib
import sys
import warnings

from . import _core

# Work (in multiply-adds) above which a call counts as long: about a second
# on one core. Below it no bar is set up at all, and a bar set up for a long
# call appears only after _DELAY seconds (tqdm's delay), so fast machines
# show nothing.
LONG_WORK = 2e9
_DELAY = 1.0
_warned = False


def interactive():
    """Whether a person is likely watching: stderr is a terminal, or a
    Jupyter kernel runs us."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    ip = sys.modules.get("IPython")
    shell = getattr(ip, "get_ipython", lambda: None)() if ip else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _tqdm():
    global _warned
    try:
        from tqdm.auto import tqdm
        return tqdm
    except ImportError:
        if not _warned:
            _warned = True
            warnings.warn("progress=True needs tqdm (pip install tqdm): no progress bar is shown",
                          UserWarning, stacklevel=4)
        return None


def callback(progress, desc, work=None, unit="it"):
    """(callback, closer) for `progress`: None (a bar when interactive and
    `work` is long), True/False, or a callable progress(done, total, what)."""
    if callable(progress) and not isinstance(progress, bool):
        return progress, None
    if progress is None:
        if work is None or work < LONG_WORK or not interactive():
            return None, None
        delay = _DELAY
    elif not progress:
        return None, None
    else:
        delay = 0.0
    tqdm = _tqdm()
    if tqdm is None:
        return None, None
    bar = None

    def update(done, total, what):
        nonlocal bar
        if bar is None:  # the total is known at the first report
            bar = tqdm(total=int(total), desc=desc, unit=unit, delay=delay, leave=False)
        elif bar.total != int(total):  # a new phase (e.g. power iterations)
            bar.reset(total=int(total))
        bar.set_postfix_str(what, refresh=False)
        bar.update(int(done) - bar.n)

    def close():
        if bar is not None:
            bar.close()

    return update, close


@contextlib.contextmanager
def scope(progress, desc, work=None, unit="it"):
    """Reports of the C calls inside go to `progress` (see callback)."""
    cb, close = callback(progress, desc, work, unit)
    if cb is None:
        yield
        return
    _core.set_progress(cb)
    try:
        yield
    finally:
        _core.set_progress(None)
        if close:
            close()
