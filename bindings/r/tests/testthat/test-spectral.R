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

test_that("bad graph input gives clear errors", {
  expect_error(gs_spectral(iris, k = 3), "non-numeric")
  expect_error(gs_spectral(two_blobs(), k = 0), "'k'")
  expect_error(gs_spectral(matrix(-1, 3, 3), k = 2, affinity = "precomputed"), "gs_spectral")
  expect_error(gs_spectral(diag(3), k = 5, affinity = "precomputed"), "gs_spectral")
  expect_error(gs_spectral_batch("x"), "list")
})
