import signal
import socket
import threading
import time

import numpy as np
import pytest

import gstat
from conftest import sym


def test_not_positive_definite_is_linalgerror(rng):
    s = sym(rng, (4, 6, 6), spd=True)
    s[2] = -s[2]
    with pytest.raises(gstat.LinAlgError, match="batch element 2 is not positive definite") as e:
        gstat.linalg.cholesky(s)
    assert isinstance(e.value, np.linalg.LinAlgError)
    assert e.value.status == "GSTAT_ENOTPD"


def test_message_names_element_across_chunks(rng):
    # 3000 64x64 matrices run in the library's slices (reported to the
    # binding's callback, for Ctrl-C); the message names the element of the
    # whole batch (the binding rewrites nothing).
    s = np.tile(np.eye(64), (3000, 1, 1))
    s[2500, 3, 3] = -1.0
    with pytest.raises(gstat.LinAlgError, match="batch element 2500 "):
        gstat.linalg.cholesky(s)


def test_singular_triangular(rng):
    t = np.triu(rng.standard_normal((5, 5)))
    t[2, 2] = 0.0
    with pytest.raises(gstat.LinAlgError, match="diagonal") as e:
        gstat.linalg.solve_triangular(t, np.ones(5))
    assert e.value.status == "GSTAT_ESINGULAR"


def test_nonfinite_is_valueerror(rng):
    a = sym(rng, (3, 4, 4))
    a[1, 2, 1] = np.nan
    with pytest.raises(ValueError, match="batch element 1 of A has a non-finite value"):
        gstat.linalg.eigh(a)


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: gstat.linalg.eigh(np.ones((3, 4))), ValueError, "square"),
    (lambda: gstat.linalg.eigh(np.ones(3)), ValueError, "2-dimensional"),
    (lambda: gstat.linalg.eigh(np.ones((2, 2), complex)), TypeError, "not supported"),
    (lambda: gstat.linalg.eigh(np.array([["a"]])), TypeError, "not supported"),
    (lambda: gstat.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
    (lambda: gstat.linalg.eigh(np.eye(2), backend="gpu"), ValueError, "backend"),
    (lambda: gstat.linalg.eigh(np.eye(2), out=(np.empty(3), np.empty((2, 2)))), ValueError, "shape"),
    (lambda: gstat.linalg.eigh(np.eye(2), out=(np.empty(2, int), np.empty((2, 2)))), TypeError, "dtype"),
    (lambda: gstat.linalg.eigh(np.eye(2), out=([0, 0], np.empty((2, 2)))), TypeError, "ndarray"),
    (lambda: gstat.linalg.cholesky(np.eye(3), out=np.eye(3)[::-1]), ValueError, "strides"),
    (lambda: gstat.linalg.cholesky_solve(np.eye(3), np.ones((4, 1))), ValueError, "B"),
    (lambda: gstat.linalg.solve_triangular(np.eye(2), np.ones(2), trans=5), ValueError, "trans"),
    (lambda: gstat.cov(np.ones((4, 2)), rowvar=False, missing="drop"), ValueError, "missing"),
    (lambda: gstat.cov(np.ones((4, 2)), rowvar=False, fweights=[1, -1, 1, 1]), ValueError, "fweights"),
    (lambda: gstat.cov(np.ones((4, 2)), rowvar=False, fweights=[1, 1]), ValueError, "length 4"),
    (lambda: gstat.cov(np.ones((4, 2)), rowvar=False, ddof=-1), ValueError, "ddof"),
    (lambda: gstat.mahalanobis(np.ones((3, 2)), None, -np.eye(2), squared=True), gstat.LinAlgError, "positive definite"),
    (lambda: gstat.PCA(n_components=7).fit(np.ones((5, 3))), ValueError, "n_components"),
    (lambda: gstat.PCA(svd_solver="magic").fit(np.ones((5, 3))), ValueError, "svd_solver"),
    (lambda: gstat.laplacian(-np.eye(3) + 1 - 2 * np.eye(3)[0]), ValueError, "negative"),
    (lambda: gstat.laplacian(np.triu(np.ones((3, 3)))), ValueError, "symmetric"),
])
def test_bad_arguments(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_overlapping_output_refused(rng):
    a = sym(rng, (4, 4))
    buf = np.zeros(40)
    with pytest.raises(ValueError, match="overlap|share"):
        gstat.linalg.eigh(a, out=(buf[:4], buf[2:18].reshape(4, 4)))


def test_read_only_out():
    out = np.empty((2, 2))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        gstat.linalg.cholesky(np.eye(2), out=out)


def test_nothing_written_on_argument_error(rng):
    a = sym(rng, (3, 4, 4))
    a[0, 0, 0] = np.inf
    w = np.full((3, 4), 7.0)
    with pytest.raises(ValueError):
        gstat.linalg.eigvalsh(a, out=w)
    assert (w == 7.0).all()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_interrupts_long_batch(rng):
    # Timing-free, so that a loaded machine cannot fail it (the wall-time
    # bound it had compared an eigh with vectors against a later values-only
    # chunk, and under contention one chunk took 5-10x another): count the
    # matrices written when the signal arrives and when the call stops.
    n, chunk = 1024, 64  # 16 slices of 64 matrices, seconds of work
    a = sym(rng, (n, 256, 256), np.float32)
    w = np.full((n, 256), np.nan, np.float32)
    t1 = time.perf_counter()
    gstat.linalg.eigvalsh(a[:chunk], out=w[:chunk])  # warm-up, and a chunk's time
    per_chunk = time.perf_counter() - t1
    w[:chunk] = np.nan

    def written():
        return int(np.count_nonzero(~np.isnan(w[:, 0])))

    # The C signal handler writes to the wakeup socket as the signal arrives
    # (in whatever thread); the watcher counts then, while the call runs with
    # the GIL released. The kernel's interval timer sends the signal: a
    # timer thread needed the GIL and a core in time.
    receiver, sender = socket.socketpair()
    sender.setblocking(False)
    at_signal = []
    watcher = threading.Thread(target=lambda: (receiver.recv(1), at_signal.append(written())))
    watcher.start()
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    previous_fd = signal.set_wakeup_fd(sender.fileno())
    signal.setitimer(signal.ITIMER_REAL, max(0.05, 2 * per_chunk))
    try:
        with pytest.raises(KeyboardInterrupt):
            gstat.linalg.eigvalsh(a, out=w)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGALRM, previous)
        sender.send(b"\0")  # releases the watcher if no signal came
        watcher.join()
        receiver.close()
        sender.close()
    done = written()
    assert done < n, "the whole batch ran: the interrupt was not seen"
    # the slice running when the signal came finishes; no further slice starts
    assert done - at_signal[0] <= 2 * chunk, (at_signal[0], done)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_interrupts_randomized_pca(rng):
    x = rng.standard_normal((3000, 600))
    est = gstat.PCA(10, svd_solver="randomized", iterated_power=2, random_state=0)
    t1 = time.perf_counter()
    est.fit(x)
    per_iteration = (time.perf_counter() - t1) / 3  # two power iterations and the sketch
    est.set_params(iterated_power=1000)  # minutes of work: only Ctrl-C ends it
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(x)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.3 + 0.5 + 2 * per_iteration, (elapsed, per_iteration)


def test_randomized_pca_arguments_named():
    x = np.random.default_rng(0).standard_normal((40, 6))
    with pytest.raises(ValueError, match="iterated_power must be 'auto' or an int in"):
        gstat.PCA(2, svd_solver="randomized", iterated_power=10**7).fit(x)
    with pytest.raises(ValueError, match="n_oversamples must be an int >= 0"):
        gstat.PCA(2, svd_solver="randomized", n_oversamples=-1).fit(x)
    # more oversamples than min(n, p) - k: the exact sketch, not an overflow
    big = gstat.PCA(2, svd_solver="randomized", n_oversamples=2**63 - 1, iterated_power=1).fit(x)
    full = gstat.PCA(2, svd_solver="full").fit(x)
    np.testing.assert_allclose(big.explained_variance_, full.explained_variance_, rtol=1e-10)


def test_progress_callback_can_cancel():
    g = [np.ones((8, 8)) - np.eye(8) for _ in range(50)]

    class Stop(Exception):
        pass

    def cb(done, total, what):
        raise Stop(what)

    with pytest.raises(Stop, match="spectral_batch"):
        gstat.spectral_clustering_batch(g, 2, progress=cb)


def test_long_covariance_stops_when_the_callback_raises(rng):
    """The co-moment reports between row blocks (Ctrl-C's path): an exception
    raised by the callback ends the call and is what the caller sees."""
    x = rng.standard_normal((60000, 200))  # several report slices by the CPU rules
    seen = []

    def stop(done, total, what):
        seen.append((done, total, what))
        raise RuntimeError("stop the covariance")

    with pytest.raises(RuntimeError, match="stop the covariance"):
        gstat.cov(x, rowvar=False, progress=stop, backend="cpu")
    assert len(seen) == 1 and seen[0][1] == 60000 and seen[0][2] == "covariance: rows", seen
