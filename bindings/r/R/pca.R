gs_prcomp <- function(x, center = TRUE, scale. = FALSE, rank. = NULL, tol = NULL,
                      method = c("auto", "covariance", "gram", "randomized"), seed = 0,
                      progress = NULL, ...) {
  fname <- "gs_prcomp"
  if (length(list(...)))
    stop(fname, ": unused argument(s) ", paste(names(list(...)), collapse = ", "), call. = FALSE)
  method <- match.arg(method)
  x <- as_double_matrix(x, "x", fname)
  n <- nrow(x)
  p <- ncol(x)
  if (n < 1L || p < 1L) stop(fname, ": 'x' must have at least one row and one column", call. = FALSE)
  # gstat centers and scales by flags; numeric center/scale vectors, and
  # scale. = TRUE without centering (R's root-mean-square scaling), go
  # through base::scale first, exactly as prcomp does
  flags <- is.logical(center) && is.logical(scale.) && !(isTRUE(scale.) && !isTRUE(center))
  cen <- sc <- NULL
  if (!flags) {
    x <- scale(x, center = center, scale = scale.)
    cen <- attr(x, "scaled:center")
    sc <- attr(x, "scaled:scale")
    if (any(sc == 0))
      stop(fname, ": cannot rescale a constant/zero column to unit variance", call. = FALSE)
    attr(x, "scaled:center") <- attr(x, "scaled:scale") <- NULL
  }
  k <- if (!is.null(rank.)) {
    stopifnot(length(rank.) == 1, is.finite(rank.), as.integer(rank.) > 0)
    min(as.integer(rank.), n, p)
  } else min(n, p)
  # prcomp's sdev has all min(n, p) values (summary() divides by their sum):
  # the exact methods compute every component and keep k; the randomized
  # one computes k only (then sdev has k entries).
  kc <- if (method == "randomized") k else 0L
  m <- match(method, c("auto", "covariance", "gram", "randomized")) - 1L
  r <- gs_call(.Call(rg_pca, x, flags && isTRUE(center), flags && isTRUE(scale.), kc, m, seed),
               .progress = progress)
  j <- seq_len(k)
  if (!is.null(tol)) {
    rank <- sum(r$sdev > (r$sdev[1L] * tol))
    if (rank < k) j <- seq_len(k <- rank)
  }
  rot <- r$rotation[, j, drop = FALSE]
  dimnames(rot) <- list(colnames(x), paste0("PC", j))
  # all columns kept (rank. = NULL): take the n x k scores without a copy
  # (dropped from r first, so dimnames<- can set them in place)
  scores <- r$x
  r$x <- NULL
  if (ncol(scores) != k) scores <- scores[, j, drop = FALSE]
  dimnames(scores) <- list(rownames(x), paste0("PC", j))
  if (flags) {
    cen <- if (isTRUE(center)) setNames(r$center, colnames(x)) else FALSE
    sc <- if (isTRUE(scale.)) setNames(r$scale, colnames(x)) else FALSE
  } else {
    if (is.null(cen)) cen <- FALSE
    if (is.null(sc)) sc <- FALSE
  }
  structure(list(sdev = r$sdev, rotation = rot, center = cen, scale = sc, x = scores,
                 method = r$method),
            class = c("gs_prcomp", "prcomp"))
}
