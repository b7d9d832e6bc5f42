"""Progress reports of long calls (tqdm bars) for eigh, covariance, PCA and
the spectral batch; results are those of numpy/scikit-learn either way."""
import sys
import warnings

import numpy as np
import pytest

import gstat
from gstat import _progress


def _sym(rng, batch, n):
    a = rng.standard_normal((batch, n, n))
    return a + a.swapaxes(1, 2)


def test_callables_receive_reports_and_results_are_unchanged(rng):
    a = _sym(rng, 300, 32)
    calls = []
    w, v = gstat.linalg.eigh(a, progress=lambda d, t, what: calls.append((d, t)))
    assert calls and calls[-1] == (300, 300)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-10, atol=1e-10)
    x = rng.standard_normal((64, 50, 6))
    calls.clear()
    c = gstat.cov(x, rowvar=False, progress=lambda d, t, what: calls.append((d, t)))
    np.testing.assert_allclose(c[5], np.cov(x[5], rowvar=False), rtol=1e-12)
    X = rng.standard_normal((300, 40))
    calls.clear()
    m = gstat.PCA(5, svd_solver="randomized", iterated_power=6, random_state=0,
                  progress=lambda d, t, what: calls.append((d, t, what))).fit(X)
    assert any("power" in c[2] for c in calls)
    ref = gstat.PCA(5, svd_solver="randomized", iterated_power=6, random_state=0).fit(X)
    np.testing.assert_array_equal(m.components_, ref.components_)
    g = [np.ones((5, 5)) - np.eye(5)] * 40
    calls.clear()
    gstat.spectral_clustering_batch(g, 1, progress=lambda d, t, what: calls.append((d, t)))
    assert calls[-1] == (40, 40)


def test_bar_on_by_default_only_when_interactive_and_long(rng, monkeypatch, fake_bars):
    a = _sym(rng, 300, 32)  # work enough for the library to report it in slices
    gstat.linalg.eigh(a)  # pytest captures stderr: not interactive
    assert not fake_bars
    monkeypatch.setattr(_progress, "interactive", lambda: True)
    gstat.linalg.eigh(a)  # interactive but short
    assert not fake_bars
    monkeypatch.setattr(_progress, "LONG_WORK", 1.0)
    gstat.linalg.eigh(a)
    (bar,) = fake_bars
    assert bar.desc == "eigh" and bar.n == bar.total == 300 and bar.closed and bar.delay > 0
    gstat.linalg.eigh(a, progress=False)
    assert len(fake_bars) == 1
    monkeypatch.setattr(_progress, "interactive", lambda: False)
    gstat.linalg.eigh(a, progress=True)  # forced: shown at once
    assert len(fake_bars) == 2 and fake_bars[1].delay == 0


def test_progress_true_without_tqdm_says_so_once(rng, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr(_progress, "_warned", False)
    a = _sym(rng, 10, 8)
    with pytest.warns(UserWarning, match="needs tqdm"):
        w = gstat.linalg.eigvalsh(a, progress=True)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-10, atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gstat.linalg.eigvalsh(a, progress=True)
