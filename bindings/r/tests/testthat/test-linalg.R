test_that("gs_eigen equals eigen(symmetric = TRUE) on real covariance matrices", {
  for (x in datasets_numeric()) {
    S <- cov(x)
    e <- gs_eigen(S)
    r <- eigen(S, symmetric = TRUE)
    expect_s3_class(e, "eigen")
    expect_close(e$values, r$values)
    expect_true(all(diff(e$values) <= 0))
    expect_close(e$vectors, fix_signs(r$vectors), tol = 1e-8)
    expect_equal(e$vectors, fix_signs(e$vectors)) # gstat's sign rule
    expect_null(gs_eigen(S, only.values = TRUE)$vectors)
    expect_close(gs_eigen(S, only.values = TRUE)$values, r$values)
  }
})

test_that("gs_eigen reads the lower triangle, as eigen does", {
  S <- cov(mtcars)
  T <- S
  T[upper.tri(T)] <- 0
  expect_close(gs_eigen(T, symmetric = TRUE)$values, eigen(T, symmetric = TRUE)$values)
  expect_close(gs_eigen(T, TRUE)$values, eigen(T, TRUE)$values) # eigen()'s argument order
})

test_that("gs_eigen refuses a non-symmetric matrix where eigen() would not treat it as symmetric", {
  A <- matrix(c(2, 1, 1, 3, 0, 0, 0, 0, 1), 3)    # eigen(A): 3, 2, 1; its lower triangle: others
  expect_false(isSymmetric(A))
  expect_error(gs_eigen(A), "not symmetric")
  expect_error(gs_eigen(A, symmetric = FALSE), "not symmetric")
  expect_close(gs_eigen(A, symmetric = TRUE)$values, eigen(A, symmetric = TRUE)$values)
  # what isSymmetric() accepts (rounding, dimnames) is symmetric here too
  S <- cov(mtcars)
  S[2, 1] <- S[2, 1] * (1 + 1e-15)
  expect_true(isSymmetric(unname(S)))
  expect_close(gs_eigen(S)$values, eigen(S)$values)
  expect_close(gs_eigen(S, only.values = TRUE)$values, eigen(S, only.values = TRUE)$values)
})

test_that("gs_eigen_batch checks symmetry as eigen() checks each matrix", {
  set.seed(11)
  S <- crossprod(matrix(rnorm(36), 6))
  A <- S
  A[1, 2] <- A[1, 2] + 1                               # clearly not symmetric
  expect_error(gs_eigen_batch(list(S, A, S)), "matrix 2 is not symmetric")
  expect_error(gs_eigen_batch(list(diag(2), S, A)), "matrix 3 is not symmetric") # two sizes
  expect_error(gs_eigen_batch(array(c(S, S, A), c(6, 6, 3))), "matrix 3 is not symmetric")
  expect_error(gs_eigen_batch(list(S), symmetric = FALSE), "symmetric = FALSE")
  out <- gs_eigen_batch(list(S, A), symmetric = TRUE)
  expect_close(out[[2]]$values, eigen(A, symmetric = TRUE)$values)
  # the same verdict as isSymmetric() at every size of asymmetry
  for (e in 10^-(16:10)) {
    B <- S
    B[5, 2] <- B[5, 2] * (1 + e)
    if (isSymmetric(B)) {
      expect_close(gs_eigen_batch(list(B))[[1]]$values, eigen(B)$values)
    } else {
      expect_error(gs_eigen_batch(list(B)), "not symmetric")
      expect_error(eigen(B, only.values = TRUE)$values, NA) # eigen() goes general
    }
  }
})

test_that("gs_chol(pivot = TRUE) is chol(pivot = TRUE): factor, pivot, rank, names, warning", {
  set.seed(7)
  full <- cov(mtcars)
  X <- crossprod(matrix(rnorm(40), 5, 8))             # 8 x 8 of rank 5
  dimnames(X) <- list(letters[1:8], LETTERS[1:8])
  for (m in list(full, X, unname(X), diag(c(1, 4, 2)))) {
    r <- withCallingHandlers(chol(m, pivot = TRUE), warning = function(w) invokeRestart("muffleWarning"))
    g <- withCallingHandlers(gs_chol(m, pivot = TRUE), warning = function(w) invokeRestart("muffleWarning"))
    expect_identical(g, r)                          # the same LAPACK dpstrf as base R
    piv <- attr(g, "pivot")
    k <- seq_len(attr(g, "rank"))
    expect_close(crossprod(g[k, , drop = FALSE]), unname(m[piv, piv]), ignore_attr = TRUE)
  }
  expect_warning(chol(X, pivot = TRUE), "rank-deficient")
  expect_warning(gs_chol(X, pivot = TRUE), "rank-deficient")
  expect_silent(gs_chol(full, pivot = TRUE))
  expect_identical(suppressWarnings(gs_chol(X, pivot = TRUE, tol = 1e-3)),
                   suppressWarnings(chol(X, pivot = TRUE, tol = 1e-3)))
  expect_close(gs_chol(full, pivot = FALSE), chol(full))
})

test_that("gs_eigen_batch over a list and a 3-d array", {
  set.seed(1)
  xs <- lapply(1:20, function(i) crossprod(matrix(rnorm(64), 8)))
  xs[[21]] <- cov(iris[, 1:4]) # another size: its own batch
  out <- gs_eigen_batch(xs)
  expect_length(out, 21)
  for (i in seq_along(xs)) {
    r <- eigen(xs[[i]], symmetric = TRUE)
    expect_close(out[[i]]$values, r$values)
    expect_close(out[[i]]$vectors, fix_signs(r$vectors), tol = 1e-8)
  }
  arr <- array(unlist(xs[1:20]), c(8, 8, 20))
  a <- gs_eigen_batch(arr)
  expect_equal(dim(a$values), c(8L, 20L))
  expect_equal(dim(a$vectors), c(8L, 8L, 20L))
  expect_close(a$values[, 3], eigen(xs[[3]], symmetric = TRUE)$values)
  expect_close(a$vectors[, , 3], out[[3]]$vectors)
  expect_length(gs_eigen_batch(list()), 0)
})

test_that("gs_chol, gs_chol2inv, gs_chol_solve equal chol, chol2inv, solve", {
  for (x in datasets_numeric()) {
    S <- cov(x)
    R <- gs_chol(S)
    expect_close(R, chol(S))
    expect_close(gs_chol2inv(R), chol2inv(chol(S)))
    b <- seq_len(ncol(S))
    expect_close(gs_chol_solve(R, b), unname(solve(S, b)), tol = 1e-9)
    B <- cbind(b, rev(b))
    expect_close(gs_chol_solve(R, B), unname(solve(S, B)), tol = 1e-9)
  }
  expect_close(gs_chol2inv(chol(cov(mtcars)), size = 3), chol2inv(chol(cov(mtcars)), size = 3))
})

test_that("linear algebra errors are clear and do not crash", {
  expect_error(gs_chol(matrix(c(1, 2, 2, 1), 2)), "leading minor of order 2")
  expect_error(gs_chol(matrix(1:6, 2)), "square")
  expect_error(gs_eigen(matrix(1:6, 2)), "square")
  expect_error(gs_eigen(matrix(letters[1:4], 2)), "numeric")
  expect_error(gs_eigen(matrix(c(1, NA, NA, 1), 2)), "gs_eigen")
  expect_error(gs_chol(matrix(c(1, Inf, Inf, 1), 2)), "gs_chol")
  expect_error(gs_eigen_batch(list(diag(2), matrix(1:6, 2))), "square")
  expect_error(gs_eigen_batch("a"), "list")
  expect_error(gs_chol_solve(diag(3), 1:2), "rows")
  expect_error(gs_chol2inv(matrix(0, 2, 2)), "gs_chol2inv")
})

test_that("C messages come back in R's words: 1-based, R's argument names", {
  # chol() says "the leading minor of order 2 is not positive"
  expect_error(gs_chol(matrix(c(1, 2, 2, 1), 2)),
               "^gs_chol: 'x' is not positive definite \\(leading minor of order 2\\)$")
  expect_error(gs_eigen(matrix(c(1, NA, NA, 1), 2)), "'x' has a non-finite value at \\[2, 1\\]$")
  bad <- matrix(c(1, NaN, NaN, 1), 2)
  # the batch is split by size; the list position is what R calls the matrix
  expect_error(gs_eigen_batch(list(diag(2), diag(3), bad)),
               "^gs_eigen_batch: matrix 3 has a non-finite value at \\[2, 1\\]$")
  expect_error(gs_eigen_batch(array(c(diag(2), bad), c(2, 2, 2))), "matrix 2 has")
  x <- as.matrix(airquality)
  i <- which(!stats::complete.cases(x))[1]
  j <- which(is.na(x[i, ]))[1]
  expect_error(gs_prcomp(x), sprintf("'x' row %d, column %d is NaN or Inf", i, j))
  expect_error(gs_mahalanobis(as.matrix(mtcars), colMeans(mtcars), -diag(11)),
               "'cov' is not positive definite \\(leading minor of order 1\\)")
  expect_error(gs_prcomp(cbind(1:5, 1), scale. = TRUE), "column 2 is constant")
})

test_that("r_message renumbers every C index once", {
  m <- rgstat:::r_message
  expect_equal(m("gs_x: cholesky: batch element 4 is not positive definite (leading minor of order 3); 2 of 9 elements failed", 11:19),
               "gs_x: matrix 15 is not positive definite (leading minor of order 3); 2 of 9 matrices failed")
  expect_equal(m("gs_x: f: X row 0 column 9 is NaN or Inf"), "gs_x: 'x' row 1, column 10 is NaN or Inf")
  expect_equal(m("gs_x: f: G.weights[3]=-1 (row 0, column 2) is negative"),
               "gs_x: weight -1 at [1, 3] is negative")
  expect_equal(m("gs_x: spectral_batch: graph 0 has 4 connected components, more than n_clusters=2"),
               "gs_x: graph 1 has 4 connected components, more than k = 2")
})
