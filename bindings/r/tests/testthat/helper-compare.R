# Relative comparison at 1e-10 (testthat's tolerance is relative to the mean
# absolute value of the expected result).
expect_close <- function(object, expected, tol = 1e-10, ...) {
  expect_equal(object, expected, tolerance = tol, ...)
}

# Eigenvectors / components are unique up to sign: flip each column so that
# its largest-magnitude entry is positive (gstat's rule) before comparing.
fix_signs <- function(v) {
  v <- as.matrix(v)
  for (j in seq_len(ncol(v))) {
    i <- which.max(abs(v[, j]))
    if (length(i) && v[i, j] < 0) v[, j] <- -v[, j]
  }
  v
}

datasets_numeric <- function() {
  list(iris = as.matrix(iris[, 1:4]), USArrests = as.matrix(USArrests),
       mtcars = as.matrix(mtcars), swiss = as.matrix(swiss), longley = as.matrix(longley))
}
