#!/usr/bin/env python3
"""bench/probe_sytrd_cluster.cu's reduction on the CPU (numpy, float64), step
by step as the kernel does it, to check its indexing before a GPU runs it:
the lower triangle's columns spread over CLUSTER blocks cyclically and
packed (block c holds columns c, c + CLUSTER, ...), the owner of column j
forming the reflector, every block its partial p from its own columns
(p(i) += A(i,k) v(k) for i >= k, p(k) += A(i,k) v(i) for i > k), the slices
of p summed across blocks with their parts of p^T v, w and the rank-2
update on each block's columns; LAPACK's layout at the end (T's diagonals,
the reflectors below the subdiagonal). Prints, per n, the largest
difference between T's eigenvalues and A's, max |A Q - Q T| and
max |Q^T Q - I| with Q formed from the reflectors and tau.

    python3 bench/sim_sytrd_cluster.py [N ...]   (default 5 17 33 40)
"""
import sys

import numpy as np

CLUSTER = 16


def col_offset(n, c, t):
    """Where block c's t-th column (k = c + CLUSTER t) starts in its packing."""
    return t * n - CLUSTER * t * (t - 1) // 2 - c * t


def reduce(A):
    n = A.shape[0]
    owned = [(n - c + CLUSTER - 1) // CLUSTER for c in range(CLUSTER)]
    cols = []
    for c in range(CLUSTER):
        buf = np.zeros(sum(n - (c + CLUSTER * t) for t in range(owned[c])))
        for t in range(owned[c]):
            k = c + CLUSTER * t
            buf[col_offset(n, c, t):col_offset(n, c, t) + n - k] = A[k:, k]
        cols.append(buf)

    def column(c, t):
        k = c + CLUSTER * t
        return k, cols[c][col_offset(n, c, t):col_offset(n, c, t) + n - k]

    d, e, tau_out = np.zeros(n), np.zeros(n - 1), np.zeros(n - 1)
    for j in range(n - 1):
        owner, m = j % CLUSTER, n - j - 1
        _, col = column(owner, j // CLUSTER)
        x = col[1:]  # x[i] = A(j + 1 + i, j), a view into the packing
        alpha, xnorm2 = x[0], np.sum(x[1:] ** 2)
        tau, beta = 0.0, alpha
        if xnorm2 > 0:
            beta = -np.copysign(np.sqrt(alpha * alpha + xnorm2), alpha)
            tau = (beta - alpha) / beta
            x[1:] /= alpha - beta
        v = np.zeros(n)
        v[j + 1], v[j + 2:] = 1.0, x[1:]
        d[j], e[j], tau_out[j], x[0] = col[0], beta, tau, beta
        if tau == 0:
            continue
        ppart = np.zeros((CLUSTER, n))
        for c in range(CLUSTER):
            for t in range((j + 1 - c + CLUSTER - 1) // CLUSTER, owned[c]):
                k, a = column(c, t)
                ppart[c, k:] += a * v[k]
                ppart[c, k] += a[1:] @ v[k + 1:]
        p, dot = np.zeros(n), 0.0
        for c in range(CLUSTER):  # each block's slice, then the dot's parts in block order
            lo, hi = j + 1 + c * m // CLUSTER, j + 1 + (c + 1) * m // CLUSTER
            p[lo:hi] = tau * ppart[:, lo:hi].sum(axis=0)
            dot += p[lo:hi] @ v[lo:hi]
        w = p + (-0.5 * tau * dot) * v
        for c in range(CLUSTER):
            for t in range((j + 1 - c + CLUSTER - 1) // CLUSTER, owned[c]):
                k, a = column(c, t)
                a -= v[k:] * w[k] + w[k:] * v[k]
    d[n - 1] = column((n - 1) % CLUSTER, (n - 1) // CLUSTER)[1][0]
    out = np.zeros((n, n))
    for c in range(CLUSTER):
        for t in range(owned[c]):
            k, a = column(c, t)
            out[k:, k] = a
    return d, e, tau_out, out


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [5, 17, 33, 40]
    rng = np.random.default_rng(0)
    for n in sizes:
        A = np.tril(rng.uniform(-1, 1, (n, n)))
        A = A + np.tril(A, -1).T
        d, e, tau, out = reduce(A)
        T = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
        Q = np.eye(n)  # H(0) ... H(n-2), applied from the right end
        for j in range(n - 2, -1, -1):
            v = np.zeros(n)
            v[j + 1], v[j + 2:] = 1.0, out[j + 2:, j]
            Q -= tau[j] * np.outer(v, v @ Q)
        ev = np.abs(np.linalg.eigvalsh(T) - np.linalg.eigvalsh(A)).max()
        print(f"n={n}: eigenvalues {ev:.1e}, max|AQ - QT| {np.abs(A @ Q - Q @ T).max():.1e}, "
              f"max|Q^T Q - I| {np.abs(Q.T @ Q - np.eye(n)).max():.1e}")


if __name__ == "__main__":
    main()
