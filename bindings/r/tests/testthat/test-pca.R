test_that("gs_prcomp equals prcomp up to the sign rule", {
  for (x in datasets_numeric()) {
    for (sc in c(FALSE, TRUE)) {
      p <- gs_prcomp(x, scale. = sc)
      r <- prcomp(x, scale. = sc)
      expect_s3_class(p, c("gs_prcomp", "prcomp"))
      expect_close(p$sdev, r$sdev)
      flip <- sign(colSums(fix_signs(r$rotation) * r$rotation))
      expect_close(p$rotation, fix_signs(r$rotation), tol = 1e-8)
      expect_close(p$x, sweep(r$x, 2, flip, `*`), tol = 1e-8)
      expect_close(p$center, r$center)
      expect_equal(p$scale, r$scale)
    }
  }
})

test_that("rank., tol, center = FALSE and numeric center/scale follow prcomp", {
  x <- as.matrix(mtcars)
  p <- gs_prcomp(x, rank. = 3)
  r <- prcomp(x, rank. = 3)
  expect_close(p$sdev, r$sdev)
  expect_equal(dim(p$rotation), dim(r$rotation))
  expect_equal(dimnames(p$x), dimnames(r$x))
  p <- gs_prcomp(x, tol = 0.1)
  r <- prcomp(x, tol = 0.1)
  expect_equal(ncol(p$rotation), ncol(r$rotation))
  for (args in list(list(center = FALSE), list(center = FALSE, scale. = TRUE),
                    list(center = colMeans(x) + 1, scale. = apply(x, 2, sd)))) {
    p <- do.call(gs_prcomp, c(list(x), args))
    r <- do.call(prcomp, c(list(x), args))
    expect_close(p$sdev, r$sdev)
    expect_close(p$rotation, fix_signs(r$rotation), tol = 1e-8)
    expect_equal(p$center, r$center)
    expect_equal(p$scale, r$scale)
  }
})

test_that("summary, predict, biplot and screeplot work on gs_prcomp", {
  p <- gs_prcomp(USArrests, scale. = TRUE)
  r <- prcomp(USArrests, scale. = TRUE)
  expect_close(summary(p)$importance, summary(r)$importance)
  expect_close(abs(predict(p, USArrests[1:5, ])), abs(predict(r, USArrests[1:5, ])), tol = 1e-8)
  pdf(NULL)
  on.exit(dev.off())
  expect_silent(biplot(p))
  expect_silent(screeplot(p))
})

test_that("gs_prcomp methods agree and randomized approximates", {
  x <- as.matrix(swiss)
  a <- gs_prcomp(x, method = "covariance")
  b <- gs_prcomp(x, method = "gram")
  expect_close(a$sdev, b$sdev)
  z <- gs_prcomp(x, rank. = 2, method = "randomized")
  expect_length(z$sdev, 2)
  expect_equal(z$sdev, a$sdev[1:2], tolerance = 1e-6)
})

test_that("bad PCA input gives clear errors", {
  expect_error(gs_prcomp(iris), "non-numeric")
  x <- as.matrix(airquality)
  expect_error(gs_prcomp(x), "gs_prcomp")
  expect_error(gs_prcomp(cbind(1:5, 1), scale. = TRUE), "gs_prcomp")
  expect_error(gs_prcomp(matrix(numeric(0), 0, 3)), "at least one row")
})

test_that("gs_backend reports what ran and validates the option", {
  gs_prcomp(USArrests)
  b <- gs_backend()
  expect_equal(b$last, "cpu")
  expect_identical(b$last_device_stats,
                   c(allocations = 0, graph_captures = 0, graph_refusals = 0,
                     graph_launches = 0, pipeline_pieces = 0, own_tridiag_chunks = 0,
                     own_tridiag_degenerate = 0, own_tridiag_clustered = 0))
  expect_type(b$cuda_available, "logical")
  old <- gs_backend("cpu")
  expect_equal(getOption("rgstat.backend"), "cpu")
  expect_close(gs_eigen(cov(mtcars))$values, eigen(cov(mtcars))$values)
  gs_backend(old)
  options(rgstat.backend = "bogus")
  expect_error(gs_eigen(diag(2)), "rgstat.backend")
  options(rgstat.backend = NULL)
  if (!gs_backend()$cuda_available) {
    options(rgstat.backend = "cuda")
    expect_error(gs_eigen(diag(2)), "CUDA")
    options(rgstat.backend = NULL)
  }
})

test_that("calls share one context, re-created when the options change", {
  x <- cov(mtcars)
  ref <- eigen(x)$values
  expect_close(gs_eigen(x)$values, ref)
  expect_close(gs_eigen(x)$values, ref)         # the kept context
  old <- options(rgstat.threads = 1L)
  expect_close(gs_eigen(x)$values, ref)         # a new one for the new option
  options(old)
  expect_error(gs_chol(-diag(3)), "gs_chol")    # a failure keeps the context usable
  expect_close(gs_eigen(x)$values, ref)
  expect_equal(gs_backend()$last, "cpu")
})
