# rgstat on a GPU machine (scripts/r-gpu-check runs it there): the CUDA module
# found through GSTAT_CUDA_MODULE, eigen batches and prcomp on "cuda" against
# the CPU, and the time of one batch on "auto" and "cpu".
suppressPackageStartupMessages(library(rgstat))
cat("module:", Sys.getenv("GSTAT_CUDA_MODULE"), "\n")
print(gs_backend())
set.seed(1)
xs <- array(rnorm(64 * 64 * 2000), c(64, 64, 2000))
for (i in 1:2000) xs[, , i] <- crossprod(xs[, , i])
gs_backend("cuda")
g <- gs_eigen_batch(xs)
b <- gs_backend()
cat("after gs_eigen_batch on 'cuda': last =", b$last, "\n")
gs_backend("cpu")
c <- gs_eigen_batch(xs)
cat("max |values gpu - cpu| / max:", max(abs(g$values - c$values)) / max(abs(c$values)), "\n")
gs_backend("cuda")
X <- matrix(rnorm(200000 * 50), 200000)
p <- gs_prcomp(X, rank. = 5)
cat("gs_prcomp on 'cuda': last =", gs_backend()$last, "\n")
q <- prcomp(X, rank. = 5)
cat("max |sdev - prcomp sdev|:", max(abs(p$sdev - q$sdev)), "\n")
gs_backend("auto")
t <- system.time(for (r in 1:3) gs_eigen_batch(xs))[["elapsed"]] / 3
cat("the last of those calls on the GPU (one context kept between calls: no allocation):\n")
print(gs_backend()$last_device_stats)
gs_backend("cpu")
u <- system.time(for (r in 1:3) gs_eigen_batch(xs))[["elapsed"]] / 3
cat(sprintf("gs_eigen_batch 2000 x 64x64: auto %.1f ms, cpu %.1f ms\n", 1000 * t, 1000 * u))
