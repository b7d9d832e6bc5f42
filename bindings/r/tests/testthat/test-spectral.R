ari <- function(a, b) { # adjusted Rand index
  tab <- table(a, b)
  comb <- function(n) n * (n - 1) / 2
  s <- sum(comb(tab))
  sa <- sum(comb(rowSums(tab)))
  sb <- sum(comb(colSums(tab)))
  e <- sa * sb / comb(length(a))
  (s - e) / ((sa + sb) / 2 - e)
}

two_blobs <- function(n = 40, seed = 1) {
  set.seed(seed)
  rbind(matrix(rnorm(2 * n, 0, 0.3), ncol = 2), matrix(rnorm(2 * n, 4, 0.3), ncol = 2))
}

test_that("gs_laplacian of a dense matrix matches the definition", {
  set.seed(3)
  A <- matrix(runif(25), 5)
  A <- A + t(A)
  diag(A) <- 0
  d <- rowSums(A)
  expect_close(unclass(gs_laplacian(A))[, ], diag(d) - A)
  expect_close(gs_laplacian(A, "sym")[, ], diag(5) - A / sqrt(outer(d, d)))
  expect_close(gs_laplacian(A, "rw")[, ], diag(5) - A / d)
  expect_close(attr(gs_laplacian(A), "degrees"), d)
  expect_error(gs_laplacian(matrix(1:6, 2)), "square")
  B <- A
  B[1, 2] <- 5
  expect_error(gs_laplacian(B), "gs_laplacian")
  expect_close(gs_laplacian(B, symmetrize = "max")[1, 2], -5)
})

test_that("gs_laplacian takes Matrix and igraph graphs", {
  skip_if_not_installed("Matrix")
  set.seed(4)
  A <- matrix(rbinom(36, 1, 0.4), 6)
  A <- pmax(A, t(A))
  diag(A) <- 0
  S <- Matrix::Matrix(A, sparse = TRUE)
  L <- gs_laplacian(S, "sym")
  expect_s4_class(L, "sparseMatrix")
  expect_close(as.matrix(L), unclass(gs_laplacian(A, "sym"))[, ], ignore_attr = TRUE)
  skip_if_not_installed("igraph")
  g <- igraph::graph_from_adjacency_matrix(A, mode = "undirected")
  expect_close(as.matrix(gs_laplacian(g)), diag(rowSums(A)) - A, ignore_attr = TRUE)
})

test_that("gs_spectral recovers well separated clusters (ARI 1)", {
  x <- two_blobs()
  truth <- rep(1:2, each = 40)
  for (aff in c("rbf", "knn")) {
    s <- gs_spectral(x, k = 2, affinity = aff, gamma = 1)
    expect_s3_class(s, "gs_spectral")
    expect_equal(ari(s$cluster, truth), 1)
    expect_equal(dim(s$embedding), c(80L, 2L))
  }
  s <- gs_spectral(x, gamma = 1) # k by the eigengap
  expect_equal(s$k, 2L)
  expect_output(print(s), "80 nodes in 2 clusters")
  expect_output(print(summary(s)), "Eigenvalues")
  pdf(NULL)
  on.exit(dev.off())
  plot(s)
  plot(s, data = x)
  plot(s, which = "eigenvalues")
})

test_that("gs_spectral on iris is close to the species", {
  s <- gs_spectral(scale(iris[, 1:4]), k = 3, affinity = "knn", n_neighbors = 10)
  expect_gt(ari(s$cluster, iris$Species), 0.6)
})

test_that("gs_spectral on a precomputed graph (karate club style blocks)", {
  skip_if_not_installed("igraph")
  g <- igraph::make_graph("Zachary")
  s <- gs_spectral(g, k = 2, affinity = "precomputed")
  expect_equal(length(s$cluster), 34L)
  expect_setequal(unique(s$cluster), 1:2)
})

test_that("gs_spectral_batch labels each graph as gs_spectral does", {
  graphs <- lapply(1:12, function(i) {
    x <- two_blobs(10 + i, seed = i)
    A <- exp(-as.matrix(dist(x))^2)
    diag(A) <- 0
    A
  })
  b <- gs_spectral_batch(graphs, k = 2, progress = FALSE)
  expect_s3_class(b, "gs_spectral_batch")
  expect_equal(b$status, rep("OK", 12))
  for (i in seq_along(graphs)) {
    one <- gs_spectral(graphs[[i]], k = 2, affinity = "precomputed")
    expect_equal(b$cluster[[i]], one$cluster)
    expect_equal(ari(b$cluster[[i]], rep(1:2, each = 10 + i)), 1)
  }
  skip_if_not_installed("Matrix")
  sp <- lapply(graphs, function(A) Matrix::Matrix(A, sparse = TRUE))
  b2 <- gs_spectral_batch(sp, k = 2, progress = FALSE)
  expect_equal(b2$cluster, b$cluster)
  expect_output(print(b), "12 graphs")
})

test_that("print(gs_spectral_batch) prints the clusters per graph as base R prints table()", {
  graphs <- lapply(1:5, function(i) {
    x <- two_blobs(8, seed = i)
    A <- exp(-as.matrix(dist(x))^2)
    diag(A) <- 0
    A
  })
  b <- gs_spectral_batch(graphs, k = c(2, 2, 3, 2, 3), progress = FALSE)
  out <- capture.output(print(b))
  ref <- capture.output(print(table(k = c(2, 2, 3, 2, 3))))
  at <- which(out == "Clusters per graph:")
  expect_length(at, 1L)
  expect_identical(out[at + seq_along(ref)], ref)   # "k" / " 2 3" / " 3 2"
})

test_that("plot(gs_spectral) draws the first informative eigenvectors, not the constant one", {
  x <- two_blobs()
  A <- exp(-as.matrix(dist(x))^2)
  diag(A) <- 0
  d <- rowSums(A)
  s <- gs_spectral(A, k = 3, affinity = "precomputed")
  expect_equal(s$graph_components, 1L)
  expect_lt(sd(s$embedding[, 1]), 1e-3 * sd(s$embedding[, 2])) # the trivial one
  xy <- rgstat:::embedding_coords(s)
  expect_equal(colnames(xy), c("eigenvector 2", "eigenvector 3"))
  # base R: the rw Laplacian's eigenvectors are D^-1/2 times the sym Laplacian's
  e <- eigen(diag(nrow(A)) - A / sqrt(outer(d, d)), symmetric = TRUE)
  n <- ncol(e$vectors)
  fiedler <- e$vectors[, n - 1] / sqrt(d)
  expect_gt(abs(cor(xy[, 1], fiedler)), 1 - 1e-8)
  expect_gt(abs(cor(xy[, 2], e$vectors[, n - 2] / sqrt(d))), 1 - 1e-6)
  # k = 2: one informative column, drawn against the node index
  s2 <- gs_spectral(A, k = 2, affinity = "precomputed")
  expect_equal(colnames(rgstat:::embedding_coords(s2)), "eigenvector 2")
  expect_gt(abs(cor(rgstat:::embedding_coords(s2)[, 1], fiedler)), 1 - 1e-8)
  # drop_first already left it out: nothing more is skipped
  s3 <- gs_spectral(A, k = 2, affinity = "precomputed", drop_first = TRUE)
  expect_equal(colnames(rgstat:::embedding_coords(s3)), c("eigenvector 2", "eigenvector 3"))
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(plot(s))
  expect_silent(plot(s2))
})

test_that("igraph graphs cluster directly and the result is an igraph communities object", {
  skip_if_not_installed("igraph")
  g <- igraph::make_graph("Zachary")
  s <- gs_spectral(g, k = 2)                          # affinity taken from the graph
  expect_s3_class(s, c("gs_spectral", "communities"))
  expect_equal(s$cluster, gs_spectral(g, k = 2, affinity = "precomputed")$cluster)
  expect_equal(as.vector(igraph::membership(s)), s$cluster)
  expect_identical(igraph::sizes(s), table(`Community sizes` = s$cluster))
  expect_equal(length(s), 2L)
  expect_equal(igraph::algorithm(s), "spectral")
  expect_close(igraph::modularity(s), igraph::modularity(g, s$cluster))
  expect_equal(lengths(igraph::groups(s)), as.vector(table(s$cluster)), ignore_attr = TRUE)
  # weights are the affinities, vertex names the names
  set.seed(5)
  igraph::E(g)$weight <- runif(igraph::ecount(g), 0.5, 2)
  igraph::V(g)$name <- paste0("v", 1:34)
  sw <- gs_spectral(g, k = 2)
  A <- as.matrix(igraph::as_adjacency_matrix(g, attr = "weight"))
  expect_equal(sw$cluster, gs_spectral(unname(A), k = 2, affinity = "precomputed")$cluster)
  wq <- igraph::modularity(g, sw$cluster, weights = igraph::E(g)$weight) # the affinities clustered
  expect_close(igraph::modularity(sw), wq)
  expect_named(igraph::membership(sw), paste0("v", 1:34))
  # a Matrix sparse graph too; an igraph graph is no data to build an affinity from
  skip_if_not_installed("Matrix")
  S <- Matrix::Matrix(A, sparse = TRUE)
  expect_close(igraph::modularity(gs_spectral(S, k = 2)), wq)
  expect_error(gs_spectral(g, k = 2, affinity = "rbf"), "is a graph")
  # a directed (non-symmetric) matrix: the modularity of the graph as symmetrized
  set.seed(6)
  D <- matrix(runif(144), 12)
  diag(D) <- 0
  sd <- gs_spectral(D, k = 2, affinity = "precomputed", symmetrize = "max")
  gu <- igraph::graph_from_adjacency_matrix(pmax(D, t(D)), mode = "undirected", weighted = TRUE)
  expect_close(igraph::modularity(sd), igraph::modularity(gu, sd$cluster,
                                                          weights = igraph::E(gu)$weight))
  expect_close(igraph::modularity(gs_spectral(Matrix::Matrix(D, sparse = TRUE), k = 2,
                                              symmetrize = "max")), igraph::modularity(sd))
  expect_output(print(sd), "Modularity")
  expect_null(gs_spectral(two_blobs(), k = 2)$modularity) # data: no given graph
})

test_that("progress: txtProgressBar on stderr when asked, nothing when not", {
  graphs <- lapply(1:6, function(i) {
    A <- exp(-as.matrix(dist(two_blobs(6, seed = i)))^2)
    diag(A) <- 0
    A
  })
  on <- capture.output(b <- gs_spectral_batch(graphs, k = 2, progress = TRUE), type = "message")
  # the bar utils::txtProgressBar draws at 100 % is the last thing drawn
  ref <- capture.output({
    pb <- utils::txtProgressBar(min = 0, max = 1, style = 3, file = stderr())
    utils::setTxtProgressBar(pb, 1)
    close(pb)
  }, type = "message")
  expect_true(any(grepl("spectral_batch", on)))
  expect_true(endsWith(paste(on, collapse = "\n"), sub(".*\r", "", paste(ref, collapse = "\n"))))
  off <- capture.output(b <- gs_spectral_batch(graphs, k = 2, progress = FALSE), type = "message")
  expect_length(off, 0)
  # default: not interactive here, so quiet
  expect_length(capture.output(b <- gs_spectral_batch(graphs, k = 2), type = "message"), 0)
  knn <- capture.output(s <- gs_spectral(two_blobs(), k = 2, affinity = "knn", progress = TRUE),
                        type = "message")
  expect_true(any(grepl("knn", knn)))
})

test_that("bad graph input gives clear errors", {
  expect_error(gs_spectral(iris, k = 3), "non-numeric")
  expect_error(gs_spectral(two_blobs(), k = 0), "'k'")
  expect_error(gs_spectral(matrix(-1, 3, 3), k = 2, affinity = "precomputed"), "gs_spectral")
  expect_error(gs_spectral(diag(3), k = 5, affinity = "precomputed"), "gs_spectral")
  expect_error(gs_spectral_batch("x"), "list")
})
