#!/usr/bin/env python3
"""Where the 10^6-node sparse solve spends its time on the GPU (issue 29: the
solver at least 2x cupyx.scipy.sparse.linalg.eigsh). The graph is
gpu_spectral_1e6.py's (10-d blobs, 10 clusters, 10 neighbours, --std 4: one
component), symmetrized on the host. Under torch.profiler (CUPTI sees every
kernel, copy and runtime call in the process, gstat's included), one call each:

  embedding  gstat.SpectralEmbedding(10, affinity="precomputed", backend="cuda",
             eigen_tol=TOL / (2 sqrt(11))).fit(A): the Laplacian, the known null
             space and the sparse solve on the device
  eigsh      cupyx.scipy.sparse.linalg.eigsh(L, k=11, which="SA", tol=TOL) of
             the same normalized Laplacian, formed on the device beforehand

The same accuracy: eigsh stops when the 2-norm of its k residual estimates is
at most TOL (absolute); gstat's pair i when its residual is at most eigen_tol
times the spectrum's bound 2. TOL / (2 sqrt(11)) per pair keeps the 2-norm of
gstat's 11 residuals at most TOL.

Each prints wall ms, the device's busy ms, kernels, copies and host waits,
and the largest device items (gpu_bench_common.trace).
--graph FILE also writes A, renumbered by reverse Cuthill-McKee (the locality
the library's breadth-first numbering gives), for bench_sparse_eigs --graph-in,
and times eigsh once more on that order's Laplacian ("eigsh rcm"): the same
matrix the C bench's solve sees.

--solver lanczos: the embedding with eigen_solver="lanczos" (a single vector).

usage: bench/gpu_sparse_profile.py [--n 1000000] [--std 4] [--tol 1e-6] [--graph FILE]
                                   [--solver auto|lanczos]
"""
import argparse

import numpy as np

from gpu_bench_common import trace
from gpu_spectral_1e6 import blobs


def write_graph(path, A):
    import scipy.sparse.csgraph as cg
    order = cg.reverse_cuthill_mckee(A, symmetric_mode=True)
    A = A[order][:, order].tocsr()
    A.sort_indices()
    with open(path, "wb") as f:
        np.array([A.shape[0], A.nnz], dtype=np.int64).tofile(f)
        A.indptr.astype(np.int64).tofile(f)
        A.indices.astype(np.int64).tofile(f)
        A.data.astype(np.float64).tofile(f)
    return A


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--std", type=float, default=4.0)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--graph")
    ap.add_argument("--solver", default="auto", choices=["auto", "lanczos"])
    a = ap.parse_args()
    import cupy
    import cupyx.scipy.sparse as cs
    import cupyx.scipy.sparse.linalg as csl
    import torch
    import gstat
    X, _ = blobs(a.n, 10, 10, a.std, np.random.default_rng(0))
    G = gstat.kneighbors_graph(torch.from_numpy(X).cuda(), 10, backend="cuda")
    A = ((G + G.T) * 0.5).tocsr()
    ordered = write_graph(a.graph, A) if a.graph else None
    print(f"# n {a.n}, std {a.std}, nnz {A.nnz}, tol {a.tol}; {torch.cuda.get_device_name()}")
    emb = gstat.SpectralEmbedding(10, affinity="precomputed", random_state=0, backend="cuda",
                                  eigen_tol=a.tol / (2 * 11 ** 0.5), eigen_solver=a.solver)
    trace("embedding", lambda: emb.fit(A), calls=1, top=14)
    for name, G in (("eigsh", A), ("eigsh rcm", ordered)):
        if G is None:
            continue
        L = gstat.laplacian(G, normed=True)
        Ld = cs.csr_matrix(L.tocsr().astype(np.float64))
        trace(name, lambda: (csl.eigsh(Ld, k=11, which="SA", tol=a.tol),
                             cupy.cuda.Device().synchronize()), calls=1, top=14)


if __name__ == "__main__":
    main()
