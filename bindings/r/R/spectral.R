# Graphs for the C glue: list(type = "dense", A) for a base matrix, or
# list(type = "csr", n, p, j, x) from a Matrix sparse matrix or an igraph
# graph. A dgCMatrix stores columns; the C side reads them as rows, which is
# the same graph for the symmetric (or symmetrized) adjacency gstat accepts.
SYMMETRIZE <- c("check", "max", "mean", "sum", "min")
LAPLACIAN <- c("unnormalized", "sym", "rw")

graph_spec <- function(g, fname) {
  if (inherits(g, "igraph")) {
    if (!requireNamespace("igraph", quietly = TRUE))
      stop(fname, ": the igraph package is needed for igraph graphs", call. = FALSE)
    attr <- if ("weight" %in% igraph::edge_attr_names(g)) "weight" else NULL
    g <- igraph::as_adjacency_matrix(g, attr = attr, sparse = TRUE)
  }
  if (methods::is(g, "sparseMatrix")) {
    if (!requireNamespace("Matrix", quietly = TRUE))
      stop(fname, ": the Matrix package is needed for sparse matrices", call. = FALSE)
    if (nrow(g) != ncol(g))
      stop(sprintf("%s: the adjacency matrix must be square (it is %d x %d)", fname,
                   nrow(g), ncol(g)), call. = FALSE)
    g <- methods::as(methods::as(methods::as(g, "CsparseMatrix"), "generalMatrix"), "dMatrix")
    return(list(type = "csr", n = nrow(g), p = g@p, j = g@i, x = as.double(g@x),
                dimnames = dimnames(g)))
  }
  A <- square_matrix(g, fname, "g")
  list(type = "dense", A = A, dimnames = dimnames(A))
}

gs_laplacian <- function(g, type = c("unnormalized", "sym", "rw"),
                         symmetrize = c("check", "max", "mean", "sum", "min")) {
  type <- match.arg(type)
  symmetrize <- match.arg(symmetrize)
  spec <- graph_spec(g, "gs_laplacian")
  r <- gs_call(.Call(rg_laplacian, spec, match(type, LAPLACIAN) - 1L,
                     match(symmetrize, SYMMETRIZE) - 1L))
  if (spec$type == "dense") {
    L <- r$L
    dimnames(L) <- spec$dimnames
  } else {
    # compressed rows: sparseMatrix() takes row pointers when i is missing
    L <- Matrix::sparseMatrix(j = r$j, p = r$p, x = r$x, dims = c(spec$n, spec$n),
                              index1 = FALSE, dimnames = spec$dimnames)
  }
  attr(L, "degrees") <- r$degrees
  L
}

spectral_opts <- function(k, laplacian, assign, n_init, seed, normalize_rows, drop_first,
                          n_components, max_clusters, symmetrize) {
  list(k = if (is.null(k)) 0L else as.integer(k)[1L],
       max_clusters = as.integer(max_clusters),
       n_components = if (is.null(n_components)) 0L else as.integer(n_components),
       laplacian = match(laplacian, LAPLACIAN) - 1L,
       assign = match(assign, c("kmeans", "cluster_qr")) - 1L,
       n_init = as.integer(n_init), seed = as.double(seed),
       normalize_rows = isTRUE(normalize_rows), drop_first = isTRUE(drop_first),
       symmetrize = match(symmetrize, SYMMETRIZE) - 1L)
}

gs_spectral <- function(x, k = NULL, affinity = c("rbf", "knn", "precomputed"), gamma = NULL,
                        n_neighbors = 10L, laplacian = c("rw", "sym", "unnormalized"),
                        assign = c("kmeans", "cluster_qr"), n_init = 10L, seed = 0,
                        normalize_rows = FALSE, drop_first = FALSE, n_components = NULL,
                        max_clusters = 10L, symmetrize = c("check", "max", "mean", "sum", "min"),
                        progress = NULL) {
  fname <- "gs_spectral"
  # a graph (igraph, Matrix sparse matrix) is clustered as it is, as igraph's
  # cluster_*() functions take it: its edge weights are the affinities
  is_graph <- inherits(x, "igraph") || methods::is(x, "sparseMatrix")
  if (missing(affinity) && is_graph) affinity <- "precomputed"
  affinity <- match.arg(affinity)
  if (is_graph && affinity != "precomputed")
    stop(fname, ": 'x' is a graph: its weights are the affinities (affinity = \"precomputed\"), ",
         "not data to build an \"", affinity, "\" graph from", call. = FALSE)
  laplacian <- match.arg(laplacian)
  assign <- match.arg(assign)
  symmetrize <- match.arg(symmetrize)
  if (!is.null(k) && (length(k) != 1L || is.na(k) || k < 1))
    stop(fname, ": 'k' must be NULL (chosen by the eigengap) or a count >= 1", call. = FALSE)
  if (affinity == "precomputed") {
    spec <- graph_spec(x, fname)
  } else {
    X <- as_double_matrix(x, "x", fname)
    spec <- list(type = "data", X = X, affinity = if (affinity == "rbf") 0L else 1L,
                 gamma = if (is.null(gamma)) 0 else as.double(gamma),
                 n_neighbors = as.integer(n_neighbors))
  }
  opts <- spectral_opts(k, laplacian, assign, n_init, seed, normalize_rows, drop_first,
                        n_components, max_clusters, symmetrize)
  r <- gs_call(.Call(rg_spectral, spec, opts), .progress = progress)
  n <- length(r$cluster)
  nm <- if (inherits(x, "igraph")) igraph::vertex_attr(x, "name") else rownames(x)
  # igraph's communities fields (membership, algorithm, modularity, names,
  # vcount), so that membership(), sizes(), length(), modularity(),
  # algorithm() and groups() of igraph work on the result as on
  # cluster_louvain()'s
  comm <- list(membership = r$cluster, algorithm = "spectral", vcount = n,
               modularity = if (affinity == "precomputed") graph_modularity(spec, r$cluster, symmetrize))
  if (!is.null(nm)) comm$names <- nm
  structure(c(r, list(n = n, affinity = affinity, laplacian = laplacian,
                      drop_first = isTRUE(drop_first), call = match.call()), comm),
            class = c("gs_spectral", "communities"))
}

# Newman's modularity of the clustering on the graph as gstat used it (the
# symmetrization applied): sum over clusters of the within-cluster weight
# share minus the squared degree share, as igraph::modularity() computes it
# for an undirected weighted graph (resolution 1).
graph_modularity <- function(spec, cl, symmetrize) {
  combine <- function(A, At) {
    switch(symmetrize, check = A, sum = A + At, mean = (A + At) / 2,
           max = (A + At + abs(A - At)) / 2, min = (A + At - abs(A - At)) / 2)
  }
  if (spec$type == "dense") { # base R only: no Matrix needed for a dense graph
    A <- combine(spec$A, t(spec$A))
    diag(A) <- 0 # gstat's Laplacians leave self-loops out
    within <- sum(A[outer(cl, cl, "==")])
  } else {
    A <- Matrix::sparseMatrix(i = spec$j, p = spec$p, x = spec$x, dims = c(spec$n, spec$n),
                              index1 = FALSE)
    A <- combine(A, Matrix::t(A))
    A <- methods::as(A - Matrix::Diagonal(x = Matrix::diag(A)), "TsparseMatrix")
    within <- sum(A@x[cl[A@i + 1L] == cl[A@j + 1L]])
  }
  two_m <- sum(A)
  if (!(two_m > 0)) return(NA_real_)
  deg <- as.numeric(if (is.matrix(A)) rowSums(A) else Matrix::rowSums(A))
  share <- vapply(split(deg, factor(cl, levels = seq_len(max(cl, 1L)))), sum, 0)
  within / two_m - sum((share / two_m)^2)
}

print.gs_spectral <- function(x, ...) {
  sizes <- tabulate(x$cluster, x$k)
  cat(sprintf("Spectral clustering (affinity %s, %s Laplacian): %d nodes in %d clusters\n",
              x$affinity, x$laplacian, x$n, x$k))
  cat("Cluster sizes:", sizes, "\n")
  cat("Smallest eigenvalues:", format(utils::head(x$eigenvalues, 10L), digits = 4), "\n")
  if (is.numeric(x$modularity)) cat("Modularity:", format(x$modularity, digits = 4), "\n")
  invisible(x)
}

summary.gs_spectral <- function(object, ...) {
  ev <- object$eigenvalues
  structure(list(sizes = table(cluster = object$cluster), k = object$k, n = object$n,
                 eigenvalues = ev, eigengap = if (length(ev) > 1L) diff(ev) else numeric(0),
                 inertia = object$inertia, graph_components = object$graph_components),
            class = "summary.gs_spectral")
}

print.summary.gs_spectral <- function(x, ...) {
  cat(sprintf("%d nodes, %d clusters, %d connected component(s), k-means inertia %.4g\n",
              x$n, x$k, x$graph_components, x$inertia))
  print(x$sizes)
  cat("Eigenvalues:", format(x$eigenvalues, digits = 4), "\n")
  if (length(x$eigengap)) cat("Gaps:       ", format(x$eigengap, digits = 4), "\n")
  invisible(x)
}

plot.gs_spectral <- function(x, data = NULL, which = c("data", "embedding", "eigenvalues"),
                             col = NULL, ...) {
  which <- match.arg(which)
  if (is.null(col)) col <- x$cluster
  if (which == "eigenvalues") {
    plot(seq_along(x$eigenvalues), x$eigenvalues, type = "b", xlab = "index",
         ylab = "eigenvalue", main = "Laplacian eigenvalues", ...)
    abline(v = x$k + 0.5, lty = 2)
    return(invisible(x))
  }
  if (which == "data" && !is.null(data)) {
    data <- as.matrix(data)
    if (ncol(data) >= 2L) plot(data[, 1:2], col = col, pch = 19, main = "Spectral clusters", ...)
    else plot(data[, 1L], col = col, pch = 19, ylab = colnames(data)[1L],
              main = "Spectral clusters", ...)
    return(invisible(x))
  }
  xy <- embedding_coords(x)
  if (ncol(xy) >= 2L) {
    plot(xy[, 1:2], col = col, pch = 19, xlab = colnames(xy)[1L], ylab = colnames(xy)[2L],
         main = "Spectral embedding", ...)
  } else {
    plot(xy[, 1L], col = col, pch = 19, xlab = "node", ylab = colnames(xy)[1L],
         main = "Spectral embedding", ...)
  }
  invisible(x)
}

# The two embedding columns plot() draws, named by the eigenvector they hold.
# Of a connected graph the first eigenvector is the trivial one (constant for
# the rw and unnormalized Laplacians, sqrt(degree) for sym): every node has
# the same coordinate up to scale, so drawing it shows nothing. It is skipped
# unless drop_first already left it out or it is the only column. With several
# components the first eigenvectors span the component indicators, so none
# of them is trivial and none is skipped.
embedding_coords <- function(x) {
  e <- x$embedding
  first <- if (isTRUE(x$drop_first)) 2L else 1L
  skip <- !isTRUE(x$drop_first) && identical(as.integer(x$graph_components), 1L) && ncol(e) >= 2L
  j <- if (skip) 2L else 1L
  j <- utils::head(seq.int(j, ncol(e)), 2L)
  xy <- e[, j, drop = FALSE]
  colnames(xy) <- paste("eigenvector", j + first - 1L)
  xy
}

STATUS <- c("OK", "EINVAL", "ENOMEM", "ENOTFINITE", "ENOTPD", "ESINGULAR", "ENOCONV",
            "EUNSUPPORTED", "EBACKEND", "EIO", "ECANCELED")

gs_spectral_batch <- function(graphs, k = NULL, laplacian = c("rw", "sym", "unnormalized"),
                              assign = c("kmeans", "cluster_qr"), n_init = 10L, seed = 0,
                              normalize_rows = FALSE, drop_first = FALSE, n_components = NULL,
                              max_clusters = 10L,
                              symmetrize = c("check", "max", "mean", "sum", "min"),
                              progress = NULL) {
  fname <- "gs_spectral_batch"
  laplacian <- match.arg(laplacian)
  assign <- match.arg(assign)
  symmetrize <- match.arg(symmetrize)
  if (!is.list(graphs) || inherits(graphs, "igraph"))
    stop(fname, ": 'graphs' must be a list of graphs", call. = FALSE)
  count <- length(graphs)
  if (is.null(k)) k <- 0L
  if (length(k) == 1L) k <- rep(k, count)
  if (length(k) != count)
    stop(fname, ": 'k' must be NULL, one number or one per graph", call. = FALSE)
  k <- as.integer(k)
  k[is.na(k)] <- 0L
  specs <- lapply(graphs, graph_spec, fname = fname)
  sizes <- vapply(specs, function(s) if (s$type == "dense") nrow(s$A) else as.integer(s$n), 1L)
  if (all(vapply(specs, function(s) s$type == "dense", NA))) {
    # padded batch: graph g is the leading sizes[g] x sizes[g] block of slice g
    nmax <- if (count) max(sizes) else 0L
    A <- array(0, c(nmax, nmax, count))
    for (g in seq_len(count)) A[seq_len(sizes[g]), seq_len(sizes[g]), g] <- specs[[g]]$A
    batch <- list(type = "dense", A = A, sizes = as.integer(sizes))
  } else {
    # ragged CSR batch: one block-diagonal CSR with global node numbers
    specs <- lapply(seq_len(count), function(g) {
      s <- specs[[g]]
      if (s$type == "dense") s <- graph_spec(Matrix::Matrix(s$A, sparse = TRUE), fname)
      s
    })
    node0 <- c(0L, cumsum(sizes))
    nnz <- vapply(specs, function(s) length(s$j), 1L)
    nnz0 <- c(0L, cumsum(nnz))
    p <- c(0L, unlist(lapply(seq_len(count), function(g) specs[[g]]$p[-1L] + nnz0[g])))
    j <- unlist(lapply(seq_len(count), function(g) specs[[g]]$j + node0[g]))
    x <- unlist(lapply(specs, `[[`, "x"))
    batch <- list(type = "csr", node_offsets = as.integer(node0), p = as.integer(p),
                  j = as.integer(j), x = as.double(x))
  }
  opts <- spectral_opts(0L, laplacian, assign, n_init, seed, normalize_rows, drop_first,
                        n_components, max_clusters, symmetrize)
  r <- gs_call(.Call(rg_spectral_batch, batch, k, opts), .index = seq_len(count),
               .progress = progress)
  if (nzchar(r$message)) warning(r_message(paste0(fname, ": ", r$message)), call. = FALSE)
  gid <- factor(rep(seq_len(count), sizes), levels = seq_len(count))
  eid <- factor(rep(seq_len(count), diff(r$eig_offsets)), levels = seq_len(count))
  structure(list(cluster = setNames(split(r$labels, gid), names(graphs)), k = r$k,
                 graph_components = r$graph_components, inertia = r$inertia,
                 status = STATUS[r$status + 1L],
                 eigenvalues = setNames(split(r$eigenvalues, eid), names(graphs)),
                 sizes = sizes),
            class = "gs_spectral_batch")
}

print.gs_spectral_batch <- function(x, ...) {
  cat(sprintf("Spectral clustering of %d graphs (%d to %d nodes)\n", length(x$k),
              if (length(x$sizes)) min(x$sizes) else 0L, if (length(x$sizes)) max(x$sizes) else 0L))
  # a table printed as base R prints it: the cluster counts as names, how
  # many graphs have each below them
  cat("Clusters per graph:\n")
  print(table(k = x$k, useNA = "ifany"))
  bad <- sum(x$status != "OK")
  if (bad) cat(bad, "graph(s) failed:", unique(x$status[x$status != "OK"]), "\n")
  invisible(x)
}
