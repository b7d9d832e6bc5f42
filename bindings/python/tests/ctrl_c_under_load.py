"""Run test_errors.test_ctrl_c_interrupts_long_batch N times in a row while
busy-loop processes hold the cores (default: 20 runs, one loop per core).
Not collected by pytest (seconds per run); run by hand after changing the
test or the batch loop:

    python bindings/python/tests/ctrl_c_under_load.py [RUNS [BUSY]]
"""
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_errors  # noqa: E402


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    busy = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    failed = 0
    try:
        for i in range(runs):
            t0 = time.perf_counter()
            try:
                test_errors.test_ctrl_c_interrupts_long_batch(np.random.default_rng(i))
                verdict = "passed"
            except AssertionError as e:  # pytest.raises' failure is one too
                failed += 1
                verdict = f"FAILED: {e!r}"
            print(f"run {i + 1}/{runs}: {verdict} ({time.perf_counter() - t0:.1f} s, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    print(f"{runs - failed}/{runs} passed with {busy} busy-loop processes on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
