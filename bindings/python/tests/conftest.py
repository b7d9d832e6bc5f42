import numpy as np
import pytest


@pytest.fixture
def fake_bars(monkeypatch):
    """The progress bars gstat makes, recorded instead of drawn (tqdm's calls we use)."""
    from gstat import _progress

    made = []

    class FakeBar:
        def __init__(self, total, desc, unit, delay, leave):
            self.total, self.n, self.desc, self.delay, self.closed = total, 0, desc, delay, False
            made.append(self)

        def update(self, k):
            self.n += k

        def reset(self, total):
            self.total, self.n = total, 0

        def set_postfix_str(self, s, refresh=True):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setattr(_progress, "_tqdm", lambda: FakeBar)
    return made


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def sym(rng, shape, dtype=np.float64, spd=False):
    """Random symmetric (or positive definite) matrices of shape (..., n, n)."""
    x = rng.standard_normal(shape)
    a = (x + np.swapaxes(x, -1, -2)) / 2
    if spd:
        n = shape[-1]
        a = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
    return a.astype(dtype)


def layouts(a):
    """The same matrices in several memory layouts (views where possible)."""
    out = {"C": np.ascontiguousarray(a), "F": np.asfortranarray(a)}
    out["transposed"] = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)
    big = np.zeros(a.shape[:-2] + (a.shape[-2] * 2, a.shape[-1] * 3), a.dtype)
    big[..., ::2, ::3] = a
    out["strided"] = big[..., ::2, ::3]
    out["negative"] = np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1]
    if a.ndim >= 3:
        out["batch_reversed"] = np.ascontiguousarray(a[::-1])[::-1]
    return out
