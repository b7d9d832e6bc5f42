"""gstat's CPU cases with the cores taken by busy loops: default threads
against one thread, in the same run (and, with --baseline, against another
build of gstat in the same rounds).

    python bench/contention.py                  # busy loops on every core
    python bench/contention.py --busy 0         # a quiet machine
    python bench/contention.py --baseline /path/to/other/venv/bin/python

Each interpreter (this one, and --baseline's) runs a worker process that
imports its gstat once; the rounds alternate between workers and thread
settings, one measurement at a time, so every cell sees the same load. A
cell is the median time per call over the rounds (each round repeats the
call for at least --budget seconds, at most 5 calls). Ratios, not absolute
times, are the result: the machine may be shared.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CASES = ("eigh", "cholesky", "cov", "pca", "spectral")
DESCRIPTION = {
    "eigh": "eigh batch 2000 x 16 x 16 f64",
    "cholesky": "cholesky batch 2000 x 32 x 32 f64",
    "cov": "cov 20000 x 100 f64",
    "pca": "PCA(10) 20000 x 100 f64",
    "spectral": "SpectralClustering(2), 1000 moons",
}


def make_cases():
    """{name: zero-argument callable} on seeded data."""
    import numpy as np
    import gstat

    rng = np.random.default_rng(0)
    a = rng.standard_normal((2000, 16, 16))
    sym = a + a.transpose(0, 2, 1)
    b = rng.standard_normal((2000, 32, 32))
    spd = b @ b.transpose(0, 2, 1) + 32 * np.eye(32)
    x = rng.standard_normal((20000, 100)) @ rng.standard_normal((100, 100))
    from sklearn.datasets import make_moons

    moons, _ = make_moons(1000, noise=0.05, random_state=0)
    return {
        "eigh": lambda: gstat.linalg.eigh(sym),
        "cholesky": lambda: gstat.linalg.cholesky(spd),
        "cov": lambda: gstat.cov(x, rowvar=False),
        "pca": lambda: gstat.PCA(10).fit(x),
        "spectral": lambda: gstat.SpectralClustering(2, random_state=0).fit(moons),
    }


def worker():
    """Read 'case threads budget' lines, answer each with a JSON list of seconds per call."""
    import gstat

    gstat.set_backend("cpu")
    cases = make_cases()
    for f in cases.values():  # warm-up: workspace, first-touch, lazy loads
        f()
    print("ready", flush=True)
    for line in sys.stdin:
        name, threads, budget = line.split()
        gstat.set_num_threads(int(threads))
        f, times, t_end = cases[name], [], time.perf_counter() + float(budget)
        while not times or (time.perf_counter() < t_end and len(times) < 5):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        print(json.dumps(times), flush=True)


def start_worker(python):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[1:]))
    if python != sys.executable:
        env.pop("PYTHONPATH")  # the other interpreter finds its own gstat
    p = subprocess.Popen([python, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    if p.stdout.readline().strip() != "ready":
        raise RuntimeError(f"worker {python} did not start")
    return p


def ask(p, name, threads, budget):
    p.stdin.write(f"{name} {threads} {budget}\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--busy", type=int, default=os.cpu_count(),
                    help="busy-loop processes (default: one per core)")
    ap.add_argument("--baseline", help="python of another gstat build, measured in the same rounds")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of calls per measurement")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker()
    names = args.cases.split(",")
    builds = {"new": start_worker(sys.executable)}
    if args.baseline:
        builds["base"] = start_worker(args.baseline)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    times = {}
    try:
        for _ in range(args.rounds):
            for name in names:
                for build, p in builds.items():
                    for threads in (0, 1):
                        times.setdefault((name, build, threads), []).extend(
                            ask(p, name, threads, args.budget))
    finally:
        for b in busy:
            b.kill()
            b.wait()
        for p in builds.values():
            p.stdin.close()
            p.wait()
    report(names, list(builds), times, args)


def report(names, builds, times, args):
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"\n{args.busy} busy-loop processes on {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the end, median ms per call over {args.rounds} rounds")
    head = "| case |"
    for b in builds:
        head += f" {b} default | {b} 1 thread | {b} default / 1 |"
    if "base" in builds:
        head += " new / base default |"
    print(head)
    print("|---|" + "---:|" * (head.count("|") - 2))
    for name in names:
        row = f"| {DESCRIPTION[name]} |"
        for b in builds:
            d, one = med[(name, b, 0)], med[(name, b, 1)]
            row += f" {d:.1f} | {one:.1f} | {d / one:.2f} |"
        if "base" in builds:
            row += f" {med[(name, 'new', 0)] / med[(name, 'base', 0)]:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
