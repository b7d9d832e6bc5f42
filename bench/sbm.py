"""Stochastic block model batches shared by the spectral benchmarks."""
import numpy as np


def sbm_batch(count, n, pin, pout, seed):
    """count adjacencies (count, n, n) of 2 blocks of n/2 nodes (edge probability
    pin inside a block, pout across), nodes in random order (nothing to learn
    from the ids), and their block labels (count, n)."""
    rng = np.random.default_rng(seed)
    block = np.arange(n) >= n // 2
    P = np.where(block[:, None] == block[None, :], pin, pout)
    A = np.empty((count, n, n))
    truth = np.empty((count, n), dtype=np.int64)
    for g in range(count):
        perm = rng.permutation(n)
        U = np.triu(rng.random((n, n)) < P, 1).astype(np.float64)
        U = U + U.T
        A[g] = U[np.ix_(perm, perm)]
        truth[g] = block[perm]
    return A, truth
