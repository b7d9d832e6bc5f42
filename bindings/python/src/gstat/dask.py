"""Covariance and PCA of dask arrays: the recipe, as functions.

The recipe (each step is the C library's work, Dask only moves the pieces):

1. Cut the rows: every block of ``x.rechunk({1: -1})`` holds some rows and all
   columns.
2. On the workers, each block becomes a :class:`gstat.CovarianceAccumulator`
   (count, mean and co-moment of its rows; a picklable float64 state of
   about p^2 / 2 values, which is all that travels).
3. Tree reduction: groups of ``split_every`` accumulators merge (Chan et
   al.'s pairwise update), level by level, in row order, until one is left.
4. The PCA (covariance-eigh) or the covariance of that accumulator, on the
   client: identical to ``gstat.PCA().fit(x.compute())`` to rounding.

Example::

    import dask.array as da
    from dask.distributed import Client
    import gstat.dask

    client = Client()                               # or a cluster's address
    x = da.random.random((10_000_000, 256), chunks=(250_000, 256))
    model = gstat.dask.pca(x, n_components=10)      # a fitted gstat.PCA
    scores = x.map_blocks(model.transform, chunks=(x.chunks[0], (10,)))

Needs dask (``pip install "dask[array]" distributed``); it is imported here
only, gstat itself does not depend on it.
"""
import dask
import dask.array as da

from ._accumulator import CovarianceAccumulator

__all__ = ["accumulator", "covariance", "corrcoef", "pca"]


def _block(block, p, missing):
    return CovarianceAccumulator(p, missing).add(block)


def _merge(*accs):
    out = accs[0].copy()
    for a in accs[1:]:
        out.merge(a)
    return out


def accumulator(x, *, missing="everything", split_every=8):
    """A dask Delayed of the :class:`gstat.CovarianceAccumulator` of all rows of `x`.

    x : dask array (or anything ``dask.array.asarray`` takes) of shape
        (n_samples, n_features); its row blocks are accumulated separately.
    missing : {'everything', 'complete.obs'}
    split_every : int >= 2
        Accumulators merged per task of the reduction tree.
    """
    x = da.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-dimensional (n_samples, n_features), got {x.ndim}-D")
    if int(split_every) < 2:
        raise ValueError(f"split_every must be >= 2, got {split_every!r}")
    p = int(x.shape[1])
    blocks = x.rechunk({1: -1}).to_delayed().ravel()
    level = [dask.delayed(_block)(b, p, missing) for b in blocks]
    while len(level) > 1:
        level = [dask.delayed(_merge)(*level[i:i + split_every])
                 for i in range(0, len(level), int(split_every))]
    return level[0]


def covariance(x, *, ddof=1, missing="everything", split_every=8, **compute_kwargs):
    """Covariance (n_features, n_features) of a dask array's rows, as numpy.cov(rowvar=False)."""
    acc = accumulator(x, missing=missing, split_every=split_every).compute(**compute_kwargs)
    return acc.covariance(ddof)


def corrcoef(x, *, missing="everything", split_every=8, **compute_kwargs):
    """Correlation matrix of a dask array's columns, as numpy.corrcoef(rowvar=False)."""
    acc = accumulator(x, missing=missing, split_every=split_every).compute(**compute_kwargs)
    return acc.correlation()


def pca(x, n_components=None, *, whiten=False, missing="everything", split_every=8,
        backend=None, **compute_kwargs):
    """A fitted :class:`gstat.PCA` (covariance-eigh) of a dask array's rows.

    compute_kwargs go to ``dask.compute`` (e.g. ``scheduler=...``); with a
    ``dask.distributed.Client`` active the blocks are accumulated on its
    workers.
    """
    acc = accumulator(x, missing=missing, split_every=split_every).compute(**compute_kwargs)
    return acc.pca(n_components, whiten=whiten, backend=backend)
