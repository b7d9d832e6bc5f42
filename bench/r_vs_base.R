# rgstat against base R on the same data in the same run (CPU). Prints a
# table of milliseconds and speed-ups. Needs rgstat installed
# (R CMD INSTALL bindings/r). Usage: Rscript bench/r_vs_base.R [--quick]
# The large cov takes ~35 s in base R; --quick shrinks every size 4x.
suppressPackageStartupMessages(library(rgstat))
quick <- "--quick" %in% commandArgs(trailingOnly = TRUE)
s <- if (quick) 4 else 1

# best of `reps` wall-clock runs, in ms; the first rgstat run is a warm-up
timed <- function(f, reps) {
  min(vapply(seq_len(reps), function(i) system.time(f())[["elapsed"]], 0)) * 1000
}

set.seed(42)
cases <- list()
add <- function(task, target, base, ours, reps_base = 3, reps_ours = 3) {
  ours() # warm-up: thread pools, OpenBLAS kernels
  tb <- timed(base, reps_base)
  to <- timed(ours, reps_ours)
  cases[[length(cases) + 1L]] <<- data.frame(task = task, base_ms = round(tb), rgstat_ms = round(to),
                                             speedup = round(tb / to, 1), target = target)
  cat(sprintf("%-34s base %9.0f ms  rgstat %8.0f ms  %6.1fx (target %s)\n", task, tb, to, tb / to,
              target))
}

X <- matrix(rnorm(20000 / s * 1000 / s), 20000 / s)
add(sprintf("cov %dx%d", nrow(X), ncol(X)), ">= 20x",
    function() cov(X), function() gs_cov(X), reps_base = 1)
Y <- matrix(rnorm(100000 / s * 100), 100000 / s)
add(sprintf("prcomp %dx%d", nrow(Y), ncol(Y)), ">= 3x",
    function() prcomp(Y), function() gs_prcomp(Y))
add(sprintf("prcomp %dx%d", nrow(X), ncol(X)), ">= 3x",
    function() prcomp(X), function() gs_prcomp(X))
mats <- lapply(seq_len(1000 / s), function(i) crossprod(matrix(rnorm(64 * 64), 64)))
add(sprintf("eigen %d x 64x64 (lapply)", length(mats)), ">= 5x",
    function() lapply(mats, eigen, symmetric = TRUE), function() gs_eigen_batch(mats))
arr <- array(unlist(mats), c(64, 64, length(mats)))
add(sprintf("eigen %d x 64x64 (3-d array)", length(mats)), ">= 5x",
    function() lapply(mats, eigen, symmetric = TRUE), function() gs_eigen_batch(arr))

cat(sprintf("\n%s, %d cores, backend %s, noisy shared machine\n", R.version.string,
            parallel::detectCores(), gs_backend()$last))
print(do.call(rbind, cases), row.names = FALSE)
