"""Run under mpirun by test_mpi.py: every rank checks gstat.mpi against the
single-process results and prints 'rank R OK' at the end (no pytest here)."""
import sys

import numpy as np
from mpi4py import MPI

import gstat
import gstat.mpi

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
rng = np.random.default_rng(7)  # same data on every rank
X = rng.standard_normal((900, 9)) * np.arange(1, 10) + 1e4
# uneven split; with 3 ranks rank 1 holds no rows
cuts = {1: [], 2: [250], 3: [600, 600]}[size]
mine = np.split(X, cuts)[rank]


def close(a, b, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# covariance and correlation, result everywhere, and only on the root
close(gstat.mpi.covariance(comm, mine), np.cov(X, rowvar=False))
close(gstat.mpi.covariance(comm, mine.astype(np.float32), ddof=0),
      np.cov(X.astype(np.float32).astype(np.float64), rowvar=False, ddof=0), rtol=1e-9)
close(gstat.mpi.corrcoef(comm, mine), np.corrcoef(X, rowvar=False), atol=1e-13)
at_root = gstat.mpi.covariance(comm, mine, root=size - 1)
assert (at_root is None) == (rank != size - 1)
w = np.arange(len(X)) % 3
close(gstat.mpi.covariance(comm, mine, fweights=np.split(w, cuts)[rank]),
      np.cov(X, rowvar=False, fweights=w))

# PCA: a fitted gstat.PCA equal to the single-process one
ref = gstat.PCA(4, svd_solver="covariance_eigh").fit(X)
model = gstat.mpi.pca(comm, mine, 4)
close(model.components_, ref.components_, rtol=0, atol=1e-10)
close(model.explained_variance_, ref.explained_variance_)
close(model.mean_, ref.mean_)
assert model.n_samples_ == 900 and model.n_components_ == 4
if len(mine):  # (scikit-learn refuses 0 rows)
    close(model.transform(mine), ref.transform(mine), rtol=0, atol=1e-8)
frac = gstat.mpi.pca(comm, mine, 0.8, root=0)
assert (frac is None) == (rank != 0)
if frac is not None:
    assert frac.n_components_ == gstat.PCA(0.8, svd_solver="covariance_eigh").fit(X).n_components_

# accumulators built anywhere, merged over the ranks
acc = gstat.CovarianceAccumulator(9)
for part in np.array_split(mine, 3):
    acc.add(part)
merged = gstat.mpi.reduce_accumulator(comm, acc)
assert merged.n_samples == 900
close(merged.covariance(), np.cov(X, rowvar=False))

# batch spectral clustering: graphs spread over ranks, labels bitwise equal
graphs = []
for n in (12, 30, 7, 25, 18):  # two planted blocks each
    a = rng.random((n, n)) * 0.05
    h = n // 2
    a[:h, :h] += 1
    a[h:, h:] += 1
    graphs.append((a + a.T) / 2)
single = gstat.spectral_clustering_batch(graphs, 2)
dist = gstat.mpi.spectral_clustering_batch(comm, graphs, 2)
assert all(np.array_equal(s, d) for s, d in zip(single, dist))
two = graphs[:2]  # fewer graphs than ranks: some ranks get none
assert all(np.array_equal(s, d) for s, d in zip(gstat.spectral_clustering_batch(two, [2, 3]),
                                                gstat.mpi.spectral_clustering_batch(comm, two,
                                                                                    [2, 3])))
at0 = gstat.mpi.spectral_clustering_batch(comm, graphs, 2, root=0)
assert (at0 is None) == (rank != 0)

# a rank with bad input: every rank raises the same error, nobody hangs
bad = size - 1
errors = []
neg = -np.ones(len(mine)) if rank == bad else None
calls = [lambda: gstat.mpi.covariance(comm, mine, fweights=neg),
         lambda: gstat.mpi.pca(comm, np.full((3, 9), np.inf) if rank == bad else mine, 2)]
if size > 1:  # shapes that disagree between ranks
    calls += [lambda: gstat.mpi.covariance(comm, mine[:, :8] if rank == bad else mine),
              lambda: gstat.mpi.reduce_accumulator(
                  comm, gstat.CovarianceAccumulator(8 if rank == bad else 9))]
for call in calls:
    try:
        call()
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
assert all(errors), errors
if size > 1:
    assert all(f"rank {bad}" in e or "disagree" in e for e in errors), errors
everyone = comm.allgather(errors)
assert all(e == errors for e in everyone), everyone
print(f"rank {rank} OK", flush=True)
sys.exit(0)
