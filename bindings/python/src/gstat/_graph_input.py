"""Graphs the way users hold them: scipy.sparse in any format, torch sparse
tensors (COO, CSR, CSC) and CuPy sparse matrices, networkx and python-igraph
graphs, dense arrays. Every graph entry point of gstat passes its input
through :func:`as_graph`; networkx, igraph, torch and CuPy are imported
only when such a graph is given, so none is a dependency. A sparse graph in
CUDA memory is copied to the host (the CSR graph API takes host arrays).

Node order: a networkx graph's rows are ``list(G.nodes)`` (its insertion
order, as ``networkx.to_scipy_sparse_array``); an igraph graph's are its
vertex ids ``0..n-1``. Edge weights: the ``'weight'`` attribute (1 where an
edge has none); parallel edges of multigraphs add up. A directed graph gives
its (possibly asymmetric) adjacency, ``A[i, j]`` the weight of ``i -> j``,
which the caller's `symmetrize` option then treats like any other matrix.
"""
import numpy as np

_WHAT = ("an array_like (n, n), a scipy.sparse matrix or array (any format), a torch sparse "
         "tensor, a CuPy sparse matrix, a networkx graph or an igraph graph")


def is_sparse(a):
    """A scipy.sparse matrix or array (of any format), without importing scipy."""
    return hasattr(a, "tocsr") and hasattr(a, "nnz")


def is_sparse_tensor(a):
    """A torch sparse tensor (any sparse layout) or a CuPy sparse matrix: a
    graph as_graph copies to a host scipy CSR, never a dense DLPack tensor."""
    root = type(a).__module__.split(".")[0]
    if root == "torch":
        layout = getattr(a, "layout", None)
        return layout is not None and str(layout) != "torch.strided"
    return root == "cupyx" and hasattr(a, "get") and hasattr(a, "nnz")


def _from_sparse_tensor(a, where):
    import scipy.sparse as sp
    if type(a).__module__.split(".")[0] == "cupyx":
        return canonical_csr(a.get())  # scipy's twin of the CuPy matrix, on the host
    if a.dim() != 2:
        raise ValueError(f"{where}: a sparse tensor graph must be 2-D (n, n), got shape "
                         f"{tuple(a.shape)}")
    c = a.detach().to_sparse_coo().coalesce().cpu()
    rows, cols = c.indices().numpy()
    data = c.values().double().numpy()
    return canonical_csr(sp.csr_array((data, (rows, cols)), shape=tuple(c.shape)))


def _is_networkx(a):
    return type(a).__module__.split(".")[0] == "networkx" and hasattr(a, "adj")


def _is_igraph(a):
    return type(a).__module__.split(".")[0] == "igraph" and hasattr(a, "get_edgelist")


def is_graph_object(a):
    """A networkx or igraph graph."""
    return _is_networkx(a) or _is_igraph(a)


def canonical_csr(a):
    """A scipy CSR copy of the sparse `a` (any format, the matrix or the array
    class kept) with duplicates summed and indices sorted, as scipy's
    ``tocsr`` + ``sum_duplicates`` leave them; stored zeros dropped, since
    a zero weight is no edge. A CSR that is already so is returned as it is
    (only read afterwards: a large graph is not copied twice)."""
    if (getattr(a, "format", None) == "csr" and a.has_canonical_format
            and np.all(a.data != 0)):
        return a
    m = a.tocsr(copy=True)
    m.sum_duplicates()  # also sorts the indices
    m.eliminate_zeros()
    return m


def _from_networkx(G):
    import networkx as nx
    import scipy.sparse as sp
    # to_scipy_sparse_array sums parallel edges and reads 'weight' (1 if absent)
    A = nx.to_scipy_sparse_array(G, nodelist=list(G.nodes), weight="weight", format="csr")
    return sp.csr_array(A, dtype=np.float64)


def _from_igraph(g):
    import scipy.sparse as sp
    n = g.vcount()
    edges = np.asarray(g.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    if "weight" in g.es.attributes():
        w = np.asarray([1.0 if x is None else x for x in g.es["weight"]], dtype=np.float64)
    else:
        w = np.ones(len(edges))
    src, dst = edges[:, 0], edges[:, 1]
    if not g.is_directed():  # each undirected edge both ways; a self-loop once
        off = src != dst
        src, dst, w = (np.concatenate((src, dst[off])), np.concatenate((dst, src[off])),
                       np.concatenate((w, w[off])))
    # coo -> csr sums parallel edges
    return canonical_csr(sp.coo_array((w, (src, dst)), shape=(n, n)))


def as_graph(a, where="gstat"):
    """`a` as a canonical scipy CSR (sparse input and graph objects) or
    unchanged (dense input). Raises TypeError for what is not a graph."""
    if is_sparse_tensor(a):
        return _from_sparse_tensor(a, where)
    if is_sparse(a):
        return canonical_csr(a)
    if _is_networkx(a):
        return _from_networkx(a)
    if _is_igraph(a):
        return _from_igraph(a)
    if isinstance(a, (str, bytes, dict, set)) or a is None:
        raise TypeError(f"{where}: a graph must be {_WHAT}; got {type(a).__name__}")
    return a


def check_dense(a, where="gstat", batch=False):
    """`a` as an ndarray of a (batch of) square matri(x/ces) of numbers, or a
    TypeError/ValueError that says what a graph may be."""
    arr = np.asarray(a)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"{where}: a graph must be {_WHAT}; got {type(a).__name__} "
                        f"(as an array: dtype {arr.dtype})")
    if arr.ndim < 2 or (arr.ndim > 2 and not batch) or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{where}: an adjacency matrix must be square, got shape {arr.shape}")
    return arr
