# Unloading the package unloads its shared object, whose R_unload_rgstat
# destroys the gstat context kept between calls (and with it any GPU state).
.onUnload <- function(libpath) {
  library.dynam.unload("rgstat", libpath)
}
