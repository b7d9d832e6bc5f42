# Argument shaping shared by the wrappers: everything numeric is done in C.

# A double matrix from a matrix, data frame or (when allowed) a vector, with a
# clear error for non-numeric input. Integer/logical storage becomes double
# (the only copy); double matrices are passed to C as they are.
as_double_matrix <- function(x, what = "x", fname, vector_ok = FALSE) {
  if (is.data.frame(x)) {
    ok <- vapply(x, function(col) is.numeric(col) || is.logical(col), NA)
    if (!all(ok))
      stop(sprintf("%s: '%s' has non-numeric column(s): %s", fname, what,
                   paste(names(x)[!ok], collapse = ", ")), call. = FALSE)
    x <- as.matrix(x)
  }
  if (!is.matrix(x)) {
    if (vector_ok && is.atomic(x) && is.null(dim(x))) x <- matrix(x, ncol = 1L,
                                                                  dimnames = list(names(x), NULL))
    else stop(sprintf("%s: '%s' must be a numeric matrix or data frame", fname, what), call. = FALSE)
  }
  if (!(is.numeric(x) || is.logical(x)) || is.complex(x))
    stop(sprintf("%s: '%s' must be numeric (it is %s)", fname, what, typeof(x)), call. = FALSE)
  if (storage.mode(x) != "double") storage.mode(x) <- "double"
  x
}

square_matrix <- function(x, fname, what = "x") {
  x <- as_double_matrix(x, what, fname)
  if (nrow(x) != ncol(x))
    stop(sprintf("%s: '%s' must be a square matrix (it is %d x %d)", fname, what,
                 nrow(x), ncol(x)), call. = FALSE)
  x
}

# .Call errors arrive as "<fname>: <gstat message>"; drop R's call prefix.
gs_call <- function(...) {
  tryCatch(.Call(...), error = function(e) stop(conditionMessage(e), call. = FALSE))
}
