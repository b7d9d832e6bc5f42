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

# A .Call (passed unevaluated, so that R CMD check sees the registered
# symbol) with R's conventions around it: errors arrive as "<fname>: <gstat
# message>", raised without R's call prefix and in R's words (see
# r_message); 'index' maps the C batch's elements (0, 1, ...) to the R
# objects' numbers (the list positions when a list is split by size), NULL
# for a call on one object; 'progress' as the wrappers' argument.
gs_call <- function(call, .index = NULL, .what = "x", .progress = FALSE) {
  rep <- progress_reporter(.progress)
  if (!is.null(rep)) {
    .Call(rg_set_progress, rep$update)
    on.exit({
      .Call(rg_set_progress, NULL)
      rep$close()
    })
  }
  tryCatch(call,
           error = function(e) stop(r_message(conditionMessage(e), .index, .what), call. = FALSE))
}

# The C library speaks C: its own function names, 0-based batch elements,
# rows, columns and graphs, (i, j) positions. R users count from 1 and know
# the R function and its arguments, so the message is said again that way:
# "gs_chol: cholesky: batch element 0 is not positive definite (...)"
# becomes "gs_chol: 'x' is not positive definite (...)" for one matrix and
# "gs_eigen_batch: matrix 3 has a non-finite value at [2, 1]" in a batch.
r_message <- function(msg, index = NULL, what = "x") {
  # every integer in each hit of pattern, plus one
  plus1 <- function(s, pattern) {
    m <- gregexpr(pattern, s, perl = TRUE)
    regmatches(s, m) <- lapply(regmatches(s, m), function(hits) vapply(hits, function(h) {
      d <- gregexpr("[0-9]+", h)
      regmatches(h, d) <- lapply(regmatches(h, d), function(v) sprintf("%.0f", as.numeric(v) + 1))
      h
    }, ""))
    s
  }
  # the C function's own prefix after the R function's name
  msg <- sub("^(gs_[A-Za-z0-9_.]+): [a-z_]+: ", "\\1: ", msg)
  m <- regexpr("batch element [0-9]+( of [A-Za-z]+)?", msg)
  if (m > 0) {
    hit <- regmatches(msg, m)
    b <- as.numeric(regmatches(hit, regexpr("[0-9]+", hit))) + 1
    regmatches(msg, m) <- if (is.null(index)) sprintf("'%s'", what) else
      sprintf("matrix %d", if (b <= length(index)) index[b] else b)
  }
  msg <- sub("([0-9]+) of ([0-9]+) elements failed", "\\1 of \\2 matrices failed", msg)
  # the C arguments by their R names: X the data, G the graph, Gs the batch
  msg <- gsub("\\bG\\.weights\\[[0-9]+\\]=(\\S+) \\(row ([0-9]+), column ([0-9]+)\\)",
              "weight \\1 at (\\2, \\3)", msg)
  msg <- gsub("\\bG entry \\(([0-9]+), ([0-9]+)\\)(=?)", "'x' at (\\1, \\2) \\3 ", msg)
  msg <- gsub(" = +", " = ", gsub(" +(is|$)", " \\1", msg))
  msg <- gsub("\\bopt\\.([a-z_]+)=", "\\1 = ", msg)
  if (is.null(index)) msg <- gsub(" of dataset 0\\b", "", msg)
  msg <- gsub("\\bGs graph ", "graph ", msg)
  msg <- gsub("\\b[GX]\\b(\\[0\\])?", "'x'", msg)
  msg <- gsub("\\bn_clusters=", "k = ", msg)
  msg <- gsub("\\bk=([0-9]+) must be in \\[1,", "n_neighbors = \\1 must be in [1,", msg)
  msg <- gsub("\\b(row [0-9]+) (column [0-9]+)", "\\1, \\2", msg)
  msg <- plus1(msg, "\\b(row [0-9]+, column [0-9]+|column [0-9]+|dataset [0-9]+|graph [0-9]+)")
  msg <- plus1(msg, "\\bat \\([0-9]+, [0-9]+\\)")
  gsub("\\bat \\(([0-9]+), ([0-9]+)\\)", "at [\\1, \\2]", msg)
}

# Progress of long C calls drawn with utils::txtProgressBar on stderr. NULL
# (the wrappers' default): only in an interactive session, and only once the
# call has run for a second, so quick calls print nothing; TRUE: always;
# FALSE: never. update() is what the C progress callback calls.
progress_reporter <- function(progress) {
  if (isFALSE(progress) || (is.null(progress) && !interactive())) return(NULL)
  forced <- isTRUE(progress)
  start <- proc.time()[["elapsed"]]
  pb <- NULL
  label <- NULL
  update <- function(what, done, total) {
    if (is.null(pb) || !identical(what, label)) {
      if (!forced && proc.time()[["elapsed"]] - start < 1) return(invisible(NULL))
      if (!is.null(pb)) close(pb)
      label <<- what
      cat(what, "\n", sep = "", file = stderr())
      pb <<- utils::txtProgressBar(min = 0, max = 1, style = 3, file = stderr())
    }
    utils::setTxtProgressBar(pb, done / total)
    invisible(NULL)
  }
  list(update = update, close = function() if (!is.null(pb)) close(pb))
}
