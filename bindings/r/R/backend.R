
gs_backend <- function(backend = NULL, threads = NULL) {
  if (!is.null(backend)) {
    backend <- match.arg(backend, c("auto", "cpu", "cuda"))
    old <- options(rgstat.backend = backend)
    if (!is.null(threads)) options(rgstat.threads = as.integer(threads))
    return(invisible(old$rgstat.backend %||% "auto"))
  }
  if (!is.null(threads)) {
    old <- options(rgstat.threads = as.integer(threads))
    return(invisible(old$rgstat.threads %||% 0L))
  }
  info <- .Call(rg_backend_info)
  list(backend = getOption("rgstat.backend", "auto"),
                 threads = getOption("rgstat.threads", 0L),
                 last = info$last, last_device_stats = info$device_stats,
                 cuda_available = info$cuda_available,
                 cuda_module = Sys.getenv("GSTAT_CUDA_MODULE", NA_character_),
                 gstat_version = info$version)
}

`%||%` <- function(a, b) if (is.null(a)) b else a
