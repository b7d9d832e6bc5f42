# gstat's missing-value modes, in the order of enum gstat_missing
MISSING_EVERYTHING <- 0L
MISSING_COMPLETE <- 1L
MISSING_PAIRWISE <- 2L

match_use <- function(use, fname) {
  uses <- c("all.obs", "complete.obs", "pairwise.complete.obs", "everything", "na.or.complete")
  i <- pmatch(use, uses)
  if (length(use) != 1L || is.na(i)) stop(fname, ": invalid 'use' argument", call. = FALSE)
  uses[i]
}

# cov()/cor() with R's conventions; the arithmetic is gstat_covariance on the
# column-major data as it is (cbind(x, y) when y is given: the rows used are
# then the same as R's, and the x-y block is returned).
cov_cor <- function(x, y, use, method, cor, fname) {
  method <- match.arg(method, c("pearson", "kendall", "spearman"))
  if (method != "pearson") {
    # rank-based methods are not in gstat: stats does them
    f <- if (cor) stats::cor else stats::cov
    return(f(x, y, use = use, method = method))
  }
  use <- match_use(use, fname)
  if (is.null(y)) {
    if (!(is.matrix(x) || is.data.frame(x)))
      stop(fname, ": supply both 'x' and 'y' or a matrix-like 'x'", call. = FALSE)
    x <- as_double_matrix(x, "x", fname)
    xy <- x
  } else {
    ansmat <- is.matrix(x) || is.data.frame(x) || is.matrix(y) || is.data.frame(y)
    x <- as_double_matrix(x, "x", fname, vector_ok = TRUE)
    y <- as_double_matrix(y, "y", fname, vector_ok = TRUE)
    if (nrow(x) != nrow(y)) stop(fname, ": incompatible dimensions", call. = FALSE)
    xy <- cbind(x, y)
  }
  if (use == "all.obs" && anyNA(xy)) stop(fname, ": missing observations in cov/cor", call. = FALSE)
  if (use == "complete.obs" && !any(stats::complete.cases(xy)))
    stop(fname, ": no complete element pairs", call. = FALSE) # as stats::cov
  missing <- switch(use, everything = , all.obs = MISSING_EVERYTHING,
                    complete.obs = , na.or.complete = MISSING_COMPLETE,
                    pairwise.complete.obs = MISSING_PAIRWISE)
  r <- gs_call(.Call(rg_cov, xy, missing, cor, 1L, NULL))$cov
  r[is.nan(r)] <- NA # R reports NA where numpy-style gstat gives NaN
  if (cor && is.null(y) && missing != MISSING_PAIRWISE && ncol(r) > 0L) {
    # R sets the diagonal of a correlation to 1 whenever more than one row
    # is used (even for a column holding NA under "everything", or a constant
    # one); gstat leaves NaN there.
    nobs <- if (missing == MISSING_COMPLETE) sum(stats::complete.cases(xy)) else nrow(xy)
    if (nobs > 1L) diag(r) <- 1
  }
  if (is.null(y)) {
    dimnames(r) <- list(colnames(x), colnames(x))
    return(r)
  }
  px <- ncol(x)
  r <- r[seq_len(px), px + seq_len(ncol(y)), drop = FALSE]
  dimnames(r) <- list(colnames(x), colnames(y))
  if (!ansmat) drop(r) else r
}

gs_cov <- function(x, y = NULL, use = "everything", method = c("pearson", "kendall", "spearman")) {
  cov_cor(x, y, use, method, FALSE, "gs_cov")
}

gs_cor <- function(x, y = NULL, use = "everything", method = c("pearson", "kendall", "spearman")) {
  cov_cor(x, y, use, method, TRUE, "gs_cor")
}

gs_cov_wt <- function(x, wt = rep(1 / nrow(x), nrow(x)), cor = FALSE, center = TRUE,
                      method = c("unbiased", "ML")) {
  fname <- "gs_cov_wt"
  if (!(is.matrix(x) || is.data.frame(x)))
    stop(fname, ": 'x' must be a matrix or a data frame", call. = FALSE)
  x <- as_double_matrix(x, "x", fname)
  if (!all(is.finite(x))) stop(fname, ": 'x' must contain finite values only", call. = FALSE)
  method <- match.arg(method)
  n <- nrow(x)
  with.wt <- !missing(wt)
  if (with.wt) {
    if (length(wt) != n)
      stop(fname, ": length of 'wt' must equal the number of rows in 'x'", call. = FALSE)
    if (anyNA(wt) || any(wt < 0) || (s <- sum(wt)) == 0)
      stop(fname, ": weights must be non-negative and not all zero", call. = FALSE)
    wt <- wt / s
  }
  wt <- as.double(wt)
  # gstat's analytic-weight divisor is sum(w) - ddof * sum(w^2) / sum(w),
  # which is cov.wt's 1 - sum(wt^2) for ddof 1 and its 1 for ddof 0 ("ML")
  ddof <- if (method == "unbiased") 1L else 0L
  if (isTRUE(center)) {
    r <- gs_call(.Call(rg_cov, x, MISSING_EVERYTHING, FALSE, ddof, wt))
    cv <- r$cov
    center <- setNames(r$center, colnames(x))
  } else {
    # gstat always centers at the weighted mean. Stacking the rows x - c and
    # -(x - c), each at half weight, gives mean 0 and the same second moment
    # sum(wt (x - c)(x - c)^T); ddof 2 on the stacked weights keeps the
    # divisor 1 - sum(wt^2).
    if (isFALSE(center)) {
      center <- 0
      xc <- x
    } else {
      if (length(center) != ncol(x))
        stop(fname, ": length of 'center' must equal the number of columns in 'x'", call. = FALSE)
      xc <- sweep(x, 2L, center, check.margin = FALSE)
    }
    cv <- gs_call(.Call(rg_cov, rbind(xc, -xc), MISSING_EVERYTHING, FALSE, 2L * ddof,
                        c(wt, wt) / 2))$cov
  }
  dimnames(cv) <- list(colnames(x), colnames(x))
  y <- list(cov = cv, center = center, n.obs = n)
  if (with.wt) y$wt <- wt
  if (cor) {
    Is <- 1 / sqrt(diag(cv)) # as cov.wt (not clamped, diagonal not forced)
    R <- cv
    R[] <- Is * cv * rep(Is, each = nrow(cv))
    y$cor <- R
  }
  y
}

gs_mahalanobis <- function(x, center, cov, inverted = FALSE, ...) {
  fname <- "gs_mahalanobis"
  x <- if (is.vector(x)) matrix(x, ncol = length(x)) else as_double_matrix(x, "x", fname)
  if (storage.mode(x) != "double") storage.mode(x) <- "double"
  cov <- square_matrix(cov, fname, "cov")
  center <- if (isFALSE(center)) NULL else as.double(center)
  if (!is.null(center) && length(center) == 1L && ncol(x) > 1L) center <- rep(center, ncol(x))
  d <- gs_call(.Call(rg_mahalanobis, x, center, cov, isTRUE(inverted)), .what = "cov")
  setNames(d, rownames(x))
}

gs_cov_shrink <- function(x, method = c("ledoit-wolf", "oas"), assume.centered = FALSE) {
  method <- match.arg(method)
  x <- as_double_matrix(x, "x", "gs_cov_shrink")
  r <- gs_call(.Call(rg_cov_shrink, x, if (method == "ledoit-wolf") 0L else 1L,
                     isTRUE(assume.centered)))
  cv <- r$cov
  dimnames(cv) <- list(colnames(x), colnames(x))
  attr(cv, "shrinkage") <- r$shrinkage
  cv
}
