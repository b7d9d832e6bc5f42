gs_eigen <- function(x, only.values = FALSE) {
  x <- square_matrix(x, "gs_eigen")
  r <- gs_call(rg_eigen, x, isTRUE(only.values))
  structure(list(values = r$values, vectors = r$vectors), class = "eigen")
}

gs_eigen_batch <- function(xs, only.values = FALSE) {
  ov <- isTRUE(only.values)
  if (is.array(xs) && length(dim(xs)) == 3L) {
    if (!is.numeric(xs)) stop("gs_eigen_batch: 'xs' must be numeric", call. = FALSE)
    if (storage.mode(xs) != "double") storage.mode(xs) <- "double"
    r <- gs_call(rg_eigen_batch, xs, ov)
    return(list(values = r$values, vectors = r$vectors))
  }
  if (!is.list(xs))
    stop("gs_eigen_batch: 'xs' must be a list of square matrices or an n x n x B array",
         call. = FALSE)
  # coerce only what is not already a double matrix (C checks the shapes)
  ok <- vapply(xs, function(m) is.double(m) && is.matrix(m), NA)
  for (i in which(!ok)) xs[[i]] <- square_matrix(xs[[i]], "gs_eigen_batch", sprintf("xs[[%d]]", i))
  out <- vector("list", length(xs))
  if (!length(xs)) return(out)
  # one batched C call per distinct size
  n <- vapply(xs, nrow, 1L)
  if (all(n == n[1L])) {
    out <- gs_call(rg_eigen_batch, xs, ov)
  } else {
    for (idx in split(seq_along(xs), n)) out[idx] <- gs_call(rg_eigen_batch, xs[idx], ov)
  }
  names(out) <- names(xs)
  out
}

gs_chol <- function(x, ...) {
  x <- square_matrix(x, "gs_chol")
  r <- gs_call(rg_chol, x)
  dimnames(r) <- dimnames(x)
  r
}

gs_chol2inv <- function(x, size = NCOL(x)) {
  x <- as_double_matrix(x, "x", "gs_chol2inv")
  size <- as.integer(size)
  if (length(size) != 1L || is.na(size) || size < 0L || size > ncol(x) || size > nrow(x))
    stop("gs_chol2inv: 'size' cannot exceed ncol(x) = ", ncol(x), " or nrow(x) = ", nrow(x),
         call. = FALSE)
  if (size != nrow(x) || size != ncol(x)) x <- x[seq_len(size), seq_len(size), drop = FALSE]
  gs_call(rg_chol2inv, x)
}

gs_chol_solve <- function(x, b) {
  x <- square_matrix(x, "gs_chol_solve")
  vec <- is.null(dim(b))
  b <- as_double_matrix(b, "b", "gs_chol_solve", vector_ok = TRUE)
  r <- gs_call(rg_chol_solve, x, b)
  if (vec) drop(r) else r
}
