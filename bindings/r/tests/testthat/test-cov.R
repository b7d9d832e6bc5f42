uses <- c("everything", "all.obs", "complete.obs", "na.or.complete", "pairwise.complete.obs")

test_that("gs_cov and gs_cor equal cov and cor on complete data", {
  for (x in datasets_numeric()) {
    expect_close(gs_cov(x), cov(x))
    expect_close(gs_cor(x), cor(x))
    for (u in uses) {
      expect_close(gs_cov(x, use = u), cov(x, use = u))
      expect_close(gs_cor(x, use = u), cor(x, use = u))
    }
  }
  expect_close(gs_cov(mtcars$mpg, mtcars$wt), cov(mtcars$mpg, mtcars$wt))
  expect_close(gs_cor(mtcars[, 1:3], mtcars[, 4:6]), cor(mtcars[, 1:3], mtcars[, 4:6]))
  expect_close(gs_cor(iris[, 1:4], method = "spearman"), cor(iris[, 1:4], method = "spearman"))
})

test_that("every use= with missing values matches R (airquality)", {
  x <- as.matrix(airquality)
  for (u in setdiff(uses, "all.obs")) {
    expect_close(gs_cov(x, use = u), cov(x, use = u))
    expect_close(gs_cor(x, use = u), cor(x, use = u))
    expect_close(gs_cor(x[, 1:2], x[, 3:6], use = u), cor(x[, 1:2], x[, 3:6], use = u))
  }
  expect_error(gs_cov(x, use = "all.obs"), "missing observations")
  expect_error(gs_cor(x, use = "all.obs"), "missing observations")
  expect_error(gs_cov(x, use = "nonsense"), "invalid 'use'")
  # R's NA conventions: NA (not NaN) entries, 1 on the diagonal of cor
  r <- gs_cor(x)
  expect_true(all(diag(r) == 1))
  expect_false(any(is.nan(r)))
  expect_identical(is.na(gs_cov(x)), is.na(cov(x)))
})

test_that("constant columns and too few rows give R's NA pattern", {
  x <- cbind(a = c(1, 2, 4, 3), b = c(5, 5, 5, 5), c = c(NA, 1, NA, NA))
  for (u in setdiff(uses, "all.obs")) {
    expect_identical(is.na(gs_cov(x, use = u)), is.na(cov(x, use = u)))
    expect_identical(is.na(gs_cor(x, use = u)), is.na(suppressWarnings(cor(x, use = u))))
    expect_close(gs_cor(x, use = u), suppressWarnings(cor(x, use = u)))
  }
})

test_that("gs_cov_wt equals cov.wt", {
  set.seed(2)
  for (x in datasets_numeric()) {
    w <- runif(nrow(x))
    for (m in c("unbiased", "ML")) {
      expect_close(gs_cov_wt(x, method = m), cov.wt(x, method = m))
      expect_close(gs_cov_wt(x, w, cor = TRUE, method = m), cov.wt(x, w, cor = TRUE, method = m))
      expect_close(gs_cov_wt(x, w, center = FALSE, method = m),
                   cov.wt(x, w, center = FALSE, method = m))
      cen <- colMeans(x) + 1
      expect_close(gs_cov_wt(x, w, center = cen, cor = TRUE, method = m),
                   cov.wt(x, w, center = cen, cor = TRUE, method = m))
    }
  }
  expect_error(gs_cov_wt(as.matrix(airquality)), "finite values only")
  expect_error(gs_cov_wt(as.matrix(iris[, 1:4]), wt = rep(-1, 150)), "non-negative")
  expect_error(gs_cov_wt(as.matrix(iris[, 1:4]), wt = 1:3), "length of 'wt'")
})

test_that("gs_mahalanobis equals mahalanobis", {
  for (x in datasets_numeric()) {
    S <- cov(x)
    m <- colMeans(x)
    expect_close(gs_mahalanobis(x, m, S), mahalanobis(x, m, S))
    Si <- solve(S)
    expect_close(gs_mahalanobis(x, m, Si, inverted = TRUE), mahalanobis(x, m, Si, inverted = TRUE))
    expect_close(gs_mahalanobis(x, FALSE, S), mahalanobis(x, FALSE, S))
  }
  expect_close(gs_mahalanobis(c(1, 2), c(0, 0), diag(2)), mahalanobis(c(1, 2), c(0, 0), diag(2)))
  expect_error(gs_mahalanobis(matrix(1:4, 2), c(0, 0), matrix(c(1, 2, 2, 1), 2)),
               "not positive definite")
  expect_error(gs_mahalanobis(matrix(1:4, 2), c(0, 0, 0), diag(2)), "center")
})

test_that("gs_cov_shrink gives a shrunk covariance and its coefficient", {
  x <- as.matrix(mtcars)
  for (m in c("ledoit-wolf", "oas")) {
    C <- gs_cov_shrink(x, m)
    s <- attr(C, "shrinkage")
    expect_true(s > 0 && s <= 1)
    S <- cov(x) * (nrow(x) - 1) / nrow(x) # the ML covariance
    mu <- sum(diag(S)) / ncol(x)
    target <- (1 - s) * S + s * mu * diag(ncol(x))
    expect_close(unname(C[, ]), unname(target))
  }
  expect_error(gs_cov_shrink(as.matrix(airquality)), "gs_cov_shrink")
})

test_that("bad covariance input gives clear errors", {
  expect_error(gs_cov(iris), "non-numeric column")
  expect_error(gs_cor(letters), "matrix-like")
  expect_error(gs_cov(1:3, 1:4), "incompatible")
  expect_error(gs_cov(list(1, 2), 1:2), "numeric")
})

test_that("no complete row: complete.obs stops as cov does, the other modes give NA", {
  x <- cbind(a = c(1, NA, 3), b = c(NA, 2, NA))
  expect_error(cov(x, use = "complete.obs"), "no complete element pairs")
  expect_error(gs_cov(x, use = "complete.obs"), "no complete element pairs")
  expect_error(gs_cor(x, use = "complete.obs"), "no complete element pairs")
  for (u in c("na.or.complete", "everything", "pairwise.complete.obs")) {
    expect_identical(is.na(gs_cov(x, use = u)), is.na(cov(x, use = u)))
  }
})
