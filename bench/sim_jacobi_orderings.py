#!/usr/bin/env python3
"""Steps to convergence of parallel cyclic Jacobi for two orderings of the
pairs, on the CPU (numpy, float64): the circle method of the warp kernel
(src/backend/cuda/kernels/eigh_jacobi.cu, N - 1 steps a sweep) and odd-even
transposition (N steps a sweep), under which a layout with a whole pair per
lane moves one column a lane a step (the circle moves two, with exceptions
at its ends: bench/README, nineteenth session). Same rotation, threshold and
stopping rule as the kernel; prints a table.

    python3 bench/sim_jacobi_orderings.py [N [COUNT]]
"""
import sys

import numpy as np


def circle_steps(n):
    """Pairs of each step: positions (2m, 2m + 1); position 0 stays, the
    others move along the kernel's cycle 2 -> 4 -> ... -> n-1 -> ... -> 1 -> 2."""

    def at(i):
        return 2 * (i + 1) if i < n // 2 - 1 else n - 1 - 2 * (i - (n // 2 - 1))

    idx = list(range(n))
    while True:
        yield [(idx[2 * m], idx[2 * m + 1]) for m in range(n // 2)]
        moved = idx[:]
        for i in range(n - 1):
            moved[at((i + 1) % (n - 1))] = idx[at(i)]
        idx = moved


def odd_even_steps(n):
    """Pairs (p, p + 1) from p = 0, then from p = 1, ...; each pair swaps
    places after its rotation."""
    idx = list(range(n))
    for t in range(10**9):
        first = t % 2
        yield [(idx[p], idx[p + 1]) for p in range(first, n - 1, 2)]
        for p in range(first, n - 1, 2):
            idx[p], idx[p + 1] = idx[p + 1], idx[p]


def steps_to_converge(a, pairs_of_steps, period, max_steps=2000):
    """Steps until the kernel would stop: a quiet step (no rotation) with every
    off-diagonal entry <= eps, or `period` quiet steps in a row."""
    eps = np.finfo(float).eps
    a = a / 2.0 ** np.ceil(np.log2(np.abs(a).max()))  # max |a_ij| in (1/2, 1]
    n = a.shape[0]
    quiet = 0
    for steps, pairs in enumerate(pairs_of_steps, start=1):
        rotated = False
        for p, q in pairs:
            apq, app, aqq = a[p, q], a[p, p], a[q, q]
            if not (abs(apq) > eps and apq * apq > eps * eps * abs(app * aqq)):
                continue
            rotated = True
            d = aqq - app  # the small angle, |theta| <= pi/4
            theta = 0.5 * np.arctan(2 * apq / d) if d != 0 else np.copysign(np.pi / 4, apq)
            j = np.eye(n)
            j[p, p] = j[q, q] = np.cos(theta)
            j[p, q], j[q, p] = np.sin(theta), -np.sin(theta)
            a = j.T @ a @ j
            a[p, q] = a[q, p] = 0.0
        quiet = 0 if rotated else quiet + 1
        off = np.abs(a - np.diag(np.diag(a))).max()
        if (quiet > 0 and off <= eps) or quiet >= period:
            return steps
        if steps >= max_steps:
            return None
    return None


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = np.random.default_rng(7)
    orderings = (("circle", circle_steps, n - 1), ("odd-even", odd_even_steps, n))
    steps = {name: [] for name, _, _ in orderings}
    for _ in range(count):
        m = rng.uniform(-1, 1, (n, n))
        m = (m + m.T) / 2
        for name, make, period in orderings:
            steps[name].append(steps_to_converge(m, make(n), period))
    print(f"{count} random symmetric {n}x{n} (uniform entries), float64")
    print(f"{'ordering':10} {'steps/sweep':>11} {'mean steps':>11} {'mean sweeps':>12} {'max steps':>10}")
    for name, _, period in orderings:
        s = np.array([x if x is not None else np.nan for x in steps[name]], dtype=float)
        print(f"{name:10} {period:11d} {np.mean(s):11.1f} {np.mean(s) / period:12.2f} {np.max(s):10.0f}")


if __name__ == "__main__":
    main()
