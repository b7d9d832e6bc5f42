# Under R CMD check --as-cran (_R_CHECK_LIMIT_CORES_ set), CRAN's rule of at
# most two cores holds unless the user chose a thread count.
.onLoad <- function(libname, pkgname) {
  limit <- Sys.getenv("_R_CHECK_LIMIT_CORES_", "")
  if (nzchar(limit) && !identical(toupper(limit), "FALSE") && is.null(getOption("rgstat.threads")))
    options(rgstat.threads = 2L)
}

# Unloading the package unloads its shared object, whose R_unload_rgstat
# destroys the gstat context kept between calls (and with it any GPU state).
.onUnload <- function(libpath) {
  library.dynam.unload("rgstat", libpath)
}
