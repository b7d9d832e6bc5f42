# gstat's PCA and covariance against R's prcomp() and cov() on the same data.
#
# For each shape the data (low rank plus noise, a decaying spectrum like real
# data's) is generated in R, written to a raw float64 file and timed in
# bench_pca (best of reps after a warm-up call, started through system2),
# then prcomp(X, rank. = k) and cov(X) are timed in R (best of reps, elapsed
# time). prcomp computes the full SVD of the centered data whatever rank. is,
# so it is set against gstat's exact methods (cov; gram where p > n) and the
# randomized one; cov() against gstat_covariance. speed-up = R ms / gstat ms.
# "ev err" is the largest relative error of gstat's k explained variances
# against prcomp's sdev^2 (the randomized method's accuracy).
#
# R's BLAS/LAPACK is whatever R loads (Debian: the libblas.so.3 alternative,
# OpenBLAS here); the table header names the library.
#
# usage: Rscript bench/pca_vs_r.R [--build build] [--reps 3] [--k 10] [--quick]

args <- commandArgs(trailingOnly = TRUE)
opt <- list(build = "build", reps = 3L, k = 10L, quick = FALSE)
i <- 1
while (i <= length(args)) {
  a <- args[i]
  if (a == "--quick") {
    opt$quick <- TRUE
  } else if (a %in% c("--build", "--reps", "--k") && i < length(args)) {
    v <- args[i + 1]
    name <- sub("^--", "", a)
    opt[[name]] <- if (name == "build") v else as.integer(v)
    i <- i + 1
  } else {
    stop("usage: Rscript bench/pca_vs_r.R [--build build] [--reps 3] [--k 10] [--quick]")
  }
  i <- i + 1
}
exe <- file.path(opt$build, "bench", "bench_pca")
if (!file.exists(exe)) stop(exe, " not found: build first (cmake --build ", opt$build, ")")

shapes <- if (opt$quick) list(c(2000, 50), c(300, 500)) else
  list(c(100000, 100), c(20000, 1000), c(2000, 4000))
k <- if (opt$quick) min(opt$k, 5L) else opt$k

make_data <- function(n, p, rank = 50) {
  r <- min(rank, p)
  left <- matrix(rnorm(n * r), n, r) %*% diag(0.8^(seq_len(r) - 1) * sqrt(p), r)
  right <- matrix(rnorm(r * p), r, p) / sqrt(p)
  left %*% right + 0.05 * matrix(rnorm(n * p), n, p)
}

best_ms <- function(expr_fn, reps) {
  best <- Inf
  out <- NULL
  for (r in seq_len(reps)) {
    t <- system.time(out <- expr_fn())[["elapsed"]]
    best <- min(best, t)
  }
  list(ms = best * 1e3, value = out)
}

run_gstat <- function(path, n, p, methods, tmp) {
  out <- system2(exe, c("--reps", opt$reps, "--methods", paste(methods, collapse = ","),
                        "--in", path, "--ev-out", tmp, format(c(n, p, k), scientific = FALSE, trim = TRUE)),
                 stdout = TRUE) # 100000, not "1e+05"
  status <- attr(out, "status")
  if (!is.null(status) && status != 0) stop("bench_pca failed with status ", status)
  res <- list()
  for (line in out) {
    kv <- strsplit(strsplit(line, " ")[[1]], "=")
    f <- setNames(vapply(kv, `[`, "", 2), vapply(kv, `[`, "", 1))
    m <- f[["method"]]
    ev <- if (m == "covariance") NULL else
      readBin(file.path(tmp, paste0("ev_", m, ".raw")), "double", n = k, size = 8)
    res[[m]] <- list(ms = as.numeric(f[["best_ms"]]), ev = ev)
  }
  res
}

set.seed(2026)
tmp <- tempfile("bench_pca")
dir.create(tmp)
rows <- list()
for (s in shapes) {
  n <- s[1]
  p <- s[2]
  x <- make_data(n, p)
  path <- file.path(tmp, "x.raw")
  writeBin(as.vector(t(x)), path, size = 8) # bench_pca reads row-major
  methods <- c("cov", if (p > n) "gram", "randomized", "covariance")
  g <- run_gstat(path, n, p, methods, tmp)
  pr <- best_ms(function() prcomp(x, rank. = k), opt$reps)
  cv <- best_ms(function() cov(x), opt$reps)
  exact <- pr$value$sdev[seq_len(k)]^2
  for (m in methods) {
    if (m == "covariance") {
      rows[[length(rows) + 1]] <- list(sprintf("%dx%d", n, p), "gstat_covariance", g[[m]]$ms,
                                       "cov", cv$ms, NA)
    } else {
      err <- max(abs(g[[m]]$ev - exact) / exact)
      rows[[length(rows) + 1]] <- list(sprintf("%dx%d", n, p), paste("pca", m), g[[m]]$ms,
                                       "prcomp", pr$ms, err)
    }
  }
}
unlink(tmp, recursive = TRUE)

# the LAPACK library R loaded names the BLAS build (Debian: an alternative)
lapack <- tryCatch(La_library(), error = function(e) "")
if (!nzchar(lapack)) lapack <- tryCatch(extSoftVersion()[["BLAS"]], error = function(e) "?")
cat(sprintf("gstat vs %s (%s), k = %d, float64, best of %d, elapsed ms (1 ms resolution)\n",
            R.version.string, lapack, k, opt$reps))
cat(sprintf("%11s %-18s %9s %-8s %9s %8s %12s\n", "n x p", "gstat", "ms", "R", "ms",
            "speed-up", "ev err gstat"))
for (r in rows) {
  cat(sprintf("%11s %-18s %9.2f %-8s %9.2f %7.2fx %12s\n", r[[1]], r[[2]], r[[3]], r[[4]],
              r[[5]], r[[5]] / r[[3]], if (is.na(r[[6]])) "" else sprintf("%.1e", r[[6]])))
}
