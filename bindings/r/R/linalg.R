gs_eigen <- function(x, symmetric, only.values = FALSE) {
  x <- square_matrix(x, "gs_eigen")
  # eigen()'s rule: without 'symmetric', look. gstat only has the symmetric
  # solver, whose answer for a non-symmetric matrix (that of its lower
  # triangle) is not what eigen() gives, so that is an error, not a guess.
  if (missing(symmetric)) symmetric <- isSymmetric.matrix(unname(x))
  if (!isTRUE(symmetric))
    stop("gs_eigen: 'x' is not symmetric and gstat has only the symmetric eigensolver; ",
         "use eigen(x) for a general matrix, or symmetric = TRUE to use its lower triangle ",
         "as eigen(x, symmetric = TRUE) does", call. = FALSE)
  r <- gs_call(.Call(rg_eigen, x, isTRUE(only.values)))
  structure(list(values = r$values, vectors = r$vectors), class = "eigen")
}

# As gs_eigen: without 'symmetric' every matrix is checked the way
# isSymmetric() checks one (rg_asymmetry measures all.equal(x, t(x))), and a
# non-symmetric one is an error naming it.
check_batch_symmetric <- function(xs, symmetric, index = NULL) {
  if (!missing(symmetric) && !isTRUE(symmetric))
    stop("gs_eigen_batch: symmetric = FALSE: gstat has only the symmetric eigensolver; ",
         "use lapply(xs, eigen) for general matrices", call. = FALSE)
  if (!missing(symmetric)) return(invisible())
  bad <- which(.Call(rg_asymmetry, xs, 100 * .Machine$double.eps) > 100 * .Machine$double.eps)
  if (length(bad)) {
    i <- if (is.null(index)) bad[1L] else index[bad[1L]]
    stop(sprintf(paste0("gs_eigen_batch: matrix %d is not symmetric and gstat has only the ",
                        "symmetric eigensolver; use eigen() for it, or symmetric = TRUE to use ",
                        "the lower triangles"), i), call. = FALSE)
  }
}

gs_eigen_batch <- function(xs, symmetric, only.values = FALSE, progress = NULL) {
  ov <- isTRUE(only.values)
  if (is.array(xs) && length(dim(xs)) == 3L) {
    if (!is.numeric(xs)) stop("gs_eigen_batch: 'xs' must be numeric", call. = FALSE)
    if (storage.mode(xs) != "double") storage.mode(xs) <- "double"
    if (dim(xs)[1L] == dim(xs)[2L]) check_batch_symmetric(xs, symmetric)
    r <- gs_call(.Call(rg_eigen_batch, xs, ov), .index = seq_len(dim(xs)[3L]), .progress = progress)
    return(list(values = r$values, vectors = r$vectors))
  }
  if (!is.list(xs))
    stop("gs_eigen_batch: 'xs' must be a list of square matrices or an n x n x B array",
         call. = FALSE)
  # coerce only what is not already a double matrix (C checks the shapes)
  ok <- vapply(xs, function(m) is.double(m) && is.matrix(m), NA)
  for (i in which(!ok)) xs[[i]] <- square_matrix(xs[[i]], "gs_eigen_batch", sprintf("xs[[%d]]", i))
  check_batch_symmetric(xs, symmetric)
  out <- vector("list", length(xs))
  if (!length(xs)) return(out)
  # one batched C call per distinct size
  n <- vapply(xs, nrow, 1L)
  if (all(n == n[1L])) {
    out <- gs_call(.Call(rg_eigen_batch, xs, ov), .index = seq_along(xs), .progress = progress)
  } else {
    for (idx in split(seq_along(xs), n))
      out[idx] <- gs_call(.Call(rg_eigen_batch, xs[idx], ov), .index = idx, .progress = progress)
  }
  names(out) <- names(xs)
  out
}

gs_chol <- function(x, pivot = FALSE, tol = -1, ...) {
  x <- square_matrix(x, "gs_chol")
  if (isTRUE(pivot)) return(chol_pivot(x, tol))
  r <- gs_call(.Call(rg_chol, x))
  dimnames(r) <- dimnames(x)
  r
}

# chol(x, pivot = TRUE): R x[piv, piv] = t(R) R with R's attributes "pivot"
# and "rank" and the column names in pivot order, as base R returns it.
chol_pivot <- function(x, tol) {
  if (length(tol) != 1L || !is.numeric(tol) || is.na(tol))
    stop("gs_chol: 'tol' must be one number (negative: LAPACK's default)", call. = FALSE)
  if (nrow(x) == 0L) stop("gs_chol: 'x' must have dims > 0", call. = FALSE) # as chol()
  if (!all(is.finite(x[upper.tri(x, diag = TRUE)])))
    stop("gs_chol: 'x' has NA, NaN or Inf in its upper triangle", call. = FALSE)
  r <- gs_call(.Call(rg_chol_pivot, x, as.double(tol)))
  if (r$info > 0L)
    warning("gs_chol: the matrix is either rank-deficient or not positive definite", call. = FALSE)
  R <- r$R
  dn <- dimnames(x)
  if (!is.null(dn)) {
    if (!is.null(dn[[2L]])) dn[[2L]] <- dn[[2L]][r$pivot]
    dimnames(R) <- dn
  }
  attr(R, "pivot") <- r$pivot
  attr(R, "rank") <- r$rank
  R
}

gs_chol2inv <- function(x, size = NCOL(x)) {
  x <- as_double_matrix(x, "x", "gs_chol2inv")
  size <- as.integer(size)
  if (length(size) != 1L || is.na(size) || size < 0L || size > ncol(x) || size > nrow(x))
    stop("gs_chol2inv: 'size' cannot exceed ncol(x) = ", ncol(x), " or nrow(x) = ", nrow(x),
         call. = FALSE)
  if (size != nrow(x) || size != ncol(x)) x <- x[seq_len(size), seq_len(size), drop = FALSE]
  gs_call(.Call(rg_chol2inv, x))
}

gs_chol_solve <- function(x, b) {
  x <- square_matrix(x, "gs_chol_solve")
  vec <- is.null(dim(b))
  b <- as_double_matrix(b, "b", "gs_chol_solve", vector_ok = TRUE)
  r <- gs_call(.Call(rg_chol_solve, x, b))
  if (vec) drop(r) else r
}
