"""Dense against iterative eigensolver for one graph: the measurements behind
eigen_solver='auto' (SPARSE_PER_NNZ in src/spectral/spectral.c; the table in
bench/README.md, "Dense or iterative eigensolver").

For each n: a kNN graph (k = 10) of 5-d Gaussian points and random graphs of
1%, 5% and 20% density (plus a path, so they are connected), symmetrized;
SpectralClustering(4, affinity='precomputed', n_init=1) with
eigen_solver='dense' and 'sparse', best of 2, 1 thread, and what 'auto' picks.

Usage: python bench/spectral_solver_crossover.py [n,n,...]   (default 100,200,400,800)
"""
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

import gstat


def knn_graph(rng, n, k=10):
    return gstat.kneighbors_graph(rng.standard_normal((n, 5)), k)


def random_graph(n, density):
    a = sp.random(n, n, density=density, random_state=1, format="csr")
    path = sp.diags(np.ones(n - 1), 1)
    return (a + a.T + path + path.T).tocsr()


def best_ms(graph, solver, reps=2):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        m = gstat.SpectralClustering(4, affinity="precomputed", eigen_solver=solver,
                                     random_state=0, n_init=1).fit(graph)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, m.eigen_solver_


def main():
    warnings.simplefilter("ignore")  # disconnected random graphs warn
    gstat.set_num_threads(1)
    rng = np.random.default_rng(0)
    sizes = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "100,200,400,800").split(",")]
    print("| n | graph | nnz / n | dense ms | iterative ms | auto picks |")
    print("|---:|---|---:|---:|---:|---|")
    for n in sizes:
        for name, make in (("kNN", lambda: knn_graph(rng, n)), ("1%", lambda: random_graph(n, 0.01)),
                           ("5%", lambda: random_graph(n, 0.05)),
                           ("20%", lambda: random_graph(n, 0.2))):
            g = make()
            g = ((g + g.T) * 0.5).tocsr()
            dense, _ = best_ms(g, "dense")
            sparse, _ = best_ms(g, "sparse")
            _, auto = best_ms(g, None, reps=1)
            print(f"| {n} | {name} | {g.nnz / n:.0f} | {dense:.1f} | {sparse:.1f} | {auto} |",
                  flush=True)


if __name__ == "__main__":
    main()
