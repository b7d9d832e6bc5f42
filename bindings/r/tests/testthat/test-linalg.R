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
  expect_close(gs_eigen(T)$values, eigen(S, symmetric = TRUE)$values)
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
