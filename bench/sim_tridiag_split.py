#!/usr/bin/env python3
"""The lockstep solver's tridiagonal step on the CPU (numpy, float64), as
kernels/tridiag_eig.cu does it: T split at off-diagonals <= 8 units of its
dtype's rounding times ||T|| (Gershgorin), each block's eigenvalues by
bisection on Sturm counts (slot i: eigenvalue i - lo of the block holding
row i), twisted factorizations per block, the slots ranked into ascending
order; a matrix is flagged (handed back to cuSOLVER) when a gap inside a
block is not above the dtype's tolerance times ||T|| (eigh_cuda.c: float32
5e-12, float64 1e-8). T comes from LAPACK's ssytrd / dsytrd of issue 30's
families (tests/families.c), scaled to max |a| = 1 as the GPU reduction
scales. Prints, per dtype and family, the blocks, the flag and the
tridiagonal vectors' residual and orthogonality in units of n ulp (before
float64's Newton-Schulz step and the back-transformation).

The last two columns run the cluster step of kernels/tridiag_clusters.cu
(issue 30) in place of the hand-back: inside each block, slots chained by
gaps not above the dtype's tolerance times ||T|| form a cluster; its
vectors start pseudo-random, then two passes of inverse iteration (each
column shifted by its own eigenvalue, L D L^T without pivoting, pivots
below eps ||T|| moved to +-eps ||T||, scaled to max 1) each followed by
classical Gram-Schmidt twice per column, in order; float64 then takes the
Newton-Schulz step X (3 I - X^T X) / 2 that sytrd_eigh.c applies to every
batch.
Vectors of different clusters are orthogonal to about eps / tolerance
before that step, within a cluster to rounding.

    python3 bench/sim_tridiag_split.py [--ortho=gs|cholqr3] [N [FAMILIES]]
        (N 257, all families; --ortho: each pass's orthonormalization of a
        cluster, Gram-Schmidt as the kernel does, or shifted Cholesky QR 3)
"""
import sys

import numpy as np
import scipy.linalg
import scipy.linalg.lapack as lapack

rng = np.random.default_rng(1)
EPS = np.finfo(float).eps
TINY = np.finfo(float).tiny


def rotated(d):
    q, _ = np.linalg.qr(rng.standard_normal((len(d), len(d))))
    a = (q * d) @ q.T
    return (a + a.T) / 2


def family(kind, n, ulp):
    i = np.arange(n)
    signs = rng.choice([-1.0, 1.0], n)
    if kind == "random":
        a = rng.uniform(-1, 1, (n, n))
        return np.tril(a) + np.tril(a, -1).T
    if kind == "even":
        return rotated((1 - i / (n - 1) * (1 - ulp)) * signs)
    if kind == "rank-deficient":
        return rotated(np.where(i < 3 * n // 4, 0.1 + 0.9 * rng.random(n), 0.0))
    if kind == "near-rank-deficient":
        return rotated(np.where(i < 3 * n // 4, 0.1 + 0.9 * rng.random(n), 1e-6))
    if kind == "repeated":
        v = np.array([1, 0.5, 1e-3]) * rng.choice([-1.0, 1.0], 3)
        return rotated(v[rng.integers(0, 3, n)])
    if kind == "dense-clustered":
        c = (n + 7) // 8
        centre = ulp ** ((i // 8) / (c - 1))
        return rotated(centre * (1 + (i % 8) * np.maximum(10.0 ** (-5 - i // 8), ulp)) * signs)
    if kind == "dense-geometric":
        return rotated(ulp ** (i / (n - 1)) * signs)
    if kind == "ulp-cluster":
        d = np.full(n, ulp)
        d[0] = 1
        return rotated(d * signs)
    if kind == "graded":
        g = 1e4 ** (-i / (n - 1))
        return rotated(0.5 + 0.5 * rng.random(n)) * g[:, None] * g[None, :]
    raise ValueError(kind)


def ldl_solve(d, e, lam, z, guard):
    """(T - lam I)^-1 z by L D L^T without pivoting, as cluster_solve does."""
    m = len(d)
    piv, y, pivots = 1.0, 0.0, np.empty(m)
    out = np.empty(m)
    for k in range(m):
        mult = e[k - 1] / piv if k > 0 else 0.0
        p = (d[k] - lam) - (mult * e[k - 1] if k > 0 else 0.0)
        if abs(p) < guard:
            p = -guard if p < 0 else guard
        y = z[k] - mult * y
        out[k], pivots[k], piv = y, p, p
    x = 0.0
    for k in range(m - 1, -1, -1):
        x = (out[k] - (e[k] * x if k < m - 1 else 0.0)) / pivots[k]
        out[k] = x
    return out / np.abs(out).max()


def gram_schmidt(z):
    """Columns orthonormal in order, classical Gram-Schmidt twice per column."""
    for q in range(z.shape[1]):
        for _ in range(2 if q > 0 else 0):
            z[:, q] -= z[:, :q] @ (z[:, :q].T @ z[:, q])
        z[:, q] /= np.linalg.norm(z[:, q])
    return z


def cholqr3(z):
    """Columns orthonormal by shifted Cholesky QR, then Cholesky QR twice
    (Fukaya et al. 2020): three Gram matrices and triangular solves, work
    that GEMMs could spread over many thread blocks. None when a Cholesky
    factorization fails (the matrix would go back to cuSOLVER)."""
    m, c = z.shape
    g = z.T @ z
    shift = 11 * (m * c + c * (c + 1)) * EPS * np.trace(g)  # ||Z||_2^2 <= ||Z||_F^2
    for s in (shift, 0.0, 0.0):
        try:
            r = np.linalg.cholesky(g + s * np.eye(c)).T
        except np.linalg.LinAlgError:
            return None
        z = scipy.linalg.solve_triangular(r, z.T, trans="T").T
        g = z.T @ z
    return z


ORTHO = {"gs": gram_schmidt, "cholqr3": cholqr3}
ortho = gram_schmidt
failures = [0]


def cluster_vectors(d, e, lams, tnorm, rng_c):
    """Orthonormal vectors of one cluster of a tridiagonal block (d, e)."""
    z = rng_c.uniform(-1, 1, (len(d), len(lams)))
    for _ in range(2):
        for j, lam in enumerate(lams):
            z[:, j] = ldl_solve(d, e, lam, z[:, j], EPS * tnorm)
        q = ortho(z)
        if q is None:
            failures[0] += 1
            return gram_schmidt(z)
        z = q
    return z


def cluster_step(d, ee, wd, blo, bhi, rank, vectors, tnorm, gap_tol):
    """Every block's clusters (gaps chained <= gap_tol ||T||) of two or more
    eigenvalues get cluster_vectors in place of their twisted ones."""
    rng_c, n, i = np.random.default_rng(7), len(d), 0
    while i < n:
        j = i
        while j < bhi[i] and not wd[j + 1] - wd[j] > gap_tol * tnorm:
            j += 1
        if j > i:
            b0, b1 = blo[i], bhi[i]
            vecs = cluster_vectors(d[b0:b1 + 1], ee[b0:b1 + 1], wd[i:j + 1], tnorm, rng_c)
            for c, slot in enumerate(range(i, j + 1)):
                vectors[:, rank[slot]] = 0
                vectors[b0:b1 + 1, rank[slot]] = vecs[:, c]
        i = j + 1


def step(d, e, f32, gap_tol, clusters=False):
    n = len(d)
    ee = np.r_[e, 0.0]
    r = np.abs(np.r_[0, ee[:-1]]) + np.abs(ee)
    lo, hi = (d - r).min(), (d + r).max()
    tnorm = max(abs(lo), abs(hi))
    pivmin = TINY * max(1, (ee * ee).max())
    ee[np.abs(ee) <= 8 * (np.finfo(np.float32).eps if f32 else EPS) * tnorm] = 0
    e2 = ee * ee
    blo, bhi, start = np.zeros(n, int), np.zeros(n, int), 0
    for k in range(n):
        blo[k] = start
        if ee[k] == 0:
            bhi[start:k + 1] = k
            start = k + 1
    local = np.arange(n) - blo
    widen = 2.1 * (tnorm * EPS * n + 2 * pivmin)
    a, z = np.full(n, lo - widen), np.full(n, hi + widen)

    def counts(x):  # every slot's Sturm count on its own block, at its own point
        c, q = np.zeros(n, int), np.ones(n)
        for k in range(n):
            inside = (k >= blo) & (k <= bhi)
            qn = (d[k] - x) - np.where(k == blo, 0.0, e2[max(k - 1, 0)] / q)
            qn = np.where(np.abs(qn) < pivmin, -pivmin, qn)
            q = np.where(inside, qn, q)
            c += inside & (qn <= 0)
        return c

    for _ in range(256):
        active = ~(z - a <= np.maximum(EPS * tnorm, 2 * EPS * np.maximum(abs(a), abs(z))))
        if not active.any():
            break
        mid = 0.5 * (a + z)
        below = counts(mid) <= local
        a, z = np.where(active & below, mid, a), np.where(active & ~below, mid, z)
    wd = 0.5 * (a + z)
    slots = np.arange(n)
    rank = np.array([np.sum((wd < wd[i]) | ((wd == wd[i]) & (slots < i))) for i in range(n)])
    vectors, flagged = np.zeros((n, n)), False
    for i in range(n):
        b0, b1, lam = blo[i], bhi[i], wd[i]
        gap = min(abs(lam - wd[i - 1]) if i > b0 else np.inf, abs(wd[i + 1] - lam) if i < b1 else np.inf)
        flagged |= not gap > gap_tol * tnorm
        vectors[b0:b1 + 1, rank[i]] = twisted(d[b0:b1 + 1], ee[b0:b1 + 1], e2[b0:b1 + 1], lam, pivmin)
    if clusters:
        cluster_step(d, ee, wd, blo, bhi, rank, vectors, tnorm, gap_tol)
        if not f32:  # sytrd_eigh.c's Newton-Schulz step
            vectors = vectors @ (1.5 * np.eye(n) - 0.5 * vectors.T @ vectors)
    w = np.empty(n)
    w[rank] = wd
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    return (np.count_nonzero(ee[:-1] == 0) + 1, flagged, np.abs(t @ vectors - vectors * w).max() / tnorm,
            np.abs(vectors.T @ vectors - np.eye(n)).max(), bool(np.all(np.diff(w) >= 0)))


def twisted(d, e, e2, lam, pivmin):
    m = len(d)
    dplus, uminus = np.zeros(m), np.zeros(m)
    dp = d[0] - lam
    dplus[0] = dp = -pivmin if abs(dp) < pivmin else dp
    for k in range(1, m):
        dp = (d[k] - lam) - e2[k - 1] / dp
        dplus[k] = dp = -pivmin if abs(dp) < pivmin else dp
    dm = d[m - 1] - lam
    dm = -pivmin if abs(dm) < pivmin else dm
    r, best = m - 1, abs(dplus[m - 1])
    for k in range(m - 2, -1, -1):
        uminus[k] = e[k] / dm
        dm = (d[k] - lam) - e[k] * uminus[k]
        dm = -pivmin if abs(dm) < pivmin else dm
        g = abs(dplus[k] + dm - (d[k] - lam))
        if g < best:
            r, best = k, g
    x = np.zeros(m)
    x[r] = 1
    for k in range(r - 1, -1, -1):
        x[k] = -(e[k] / dplus[k]) * x[k + 1]
    for k in range(r + 1, m):
        x[k] = -uminus[k - 1] * x[k - 1]
    return x / np.linalg.norm(x)


def main():
    global ortho
    args = sys.argv[1:]
    if args and args[0].startswith("--ortho="):
        ortho = ORTHO[args.pop(0).split("=", 1)[1]]
    n = int(args[0]) if args else 257
    kinds = args[1].split(",") if len(args) > 1 else [
        "random", "even", "rank-deficient", "near-rank-deficient", "repeated", "dense-clustered",
        "dense-geometric", "ulp-cluster", "graded"]
    print("| dtype | family | blocks | handed back | residual | orthogonality | ascending "
          "| cluster step: residual | orthogonality |")
    print("|---|---|---:|---|---:|---:|---|---:|---:|")
    for f32 in (True, False):
        ulp = np.finfo(np.float32 if f32 else float).eps
        for kind in kinds:
            a = family(kind, n, ulp)
            a /= np.abs(a).max()
            sytrd = lapack.ssytrd if f32 else lapack.dsytrd
            _, d, e, _, _ = sytrd(a.astype(np.float32) if f32 else a, lower=1)
            args = (d.astype(float), e.astype(float), f32, 5e-12 if f32 else 1e-8)
            blocks, flagged, res, orth, asc = step(*args)
            _, _, cres, corth, _ = step(*args, clusters=True)
            print(f"| {'f32' if f32 else 'f64'} | {kind} | {blocks} | {'yes' if flagged else 'no'} | "
                  f"{res / (n * ulp):.3g} | {orth / (n * ulp):.3g} | {asc} | {cres / (n * ulp):.3g} | "
                  f"{corth / (n * ulp):.3g} |", flush=True)
    if failures[0]:
        print(f"# {failures[0]} clusters whose orthonormalization failed (Gram-Schmidt used)")


if __name__ == "__main__":
    main()
