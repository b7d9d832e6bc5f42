# Reference values from R (stats) for tests/test_reference.c.
#
# Writes tests/reference/r_<dataset>.csv in the format of make_reference.py:
# '#' comment lines (the R version), then one array per line
#
#     key,rows,cols,v_0,v_1,...     (values row-major, %.17g; NA as "nan")
#
# Keys:
#   prcomp/scale=<0|1>/<sdev|rotation|center|scale|x>
#       prcomp(X, scale. = ...); rotation is p x p with R's own signs; x holds
#       the scores of the first SCORE_ROWS rows. scale=1 is absent for digits
#       (constant columns: prcomp refuses to rescale them).
#   cov, cor                        cov(X), cor(X)
#   mahalanobis                     mahalanobis(X, colMeans(X), cov(X))
#   wine only, on X with NA at the cells of tests/reference/wine_na_positions.csv:
#   na/<everything|complete.obs|pairwise.complete.obs>/<cov|cor>
#   wine only, with the aweight column of tests/reference/wine_weights.csv:
#   cov.wt/<unbiased|ML>/<cov|cor|center>   cov.wt(X, wt / sum(wt), cor = TRUE)
#
# usage: Rscript tests/reference/make_reference.R   (from anywhere)

args <- commandArgs(trailingOnly = FALSE)
here <- dirname(normalizePath(sub("^--file=", "", args[grep("^--file=", args)])))
data_dir <- file.path(here, "..", "..", "data")
score_rows <- 20

load_data <- function(name) {
  unname(as.matrix(read.csv(file.path(data_dir, paste0(name, ".csv")), check.names = FALSE)))
}

open_ref <- function(name, x) {
  con <- file(file.path(here, paste0("r_", name, ".csv")), open = "w")
  writeLines(c(
    sprintf("# gstat reference values for data/%s.csv (%d x %d), written by tests/reference/make_reference.R; do not edit",
            name, nrow(x), ncol(x)),
    sprintf("# %s, %s", R.version.string, R.version$platform),
    "# key,rows,cols,values (row-major, %.17g)"), con)
  con
}

put <- function(con, key, a) {
  if (is.null(dim(a))) a <- matrix(a, nrow = 1)
  v <- as.vector(t(a)) # row-major
  s <- ifelse(is.na(v), "nan", sprintf("%.17g", v))
  writeLines(paste(c(key, nrow(a), ncol(a), s), collapse = ","), con)
}

for (name in c("iris", "wine", "breast_cancer", "digits")) {
  x <- load_data(name)
  con <- open_ref(name, x)
  scales <- if (name == "digits") 0 else c(0, 1)
  for (sc in scales) {
    pc <- prcomp(x, scale. = (sc == 1))
    pre <- sprintf("prcomp/scale=%d/", sc)
    put(con, paste0(pre, "sdev"), pc$sdev)
    put(con, paste0(pre, "rotation"), pc$rotation)
    put(con, paste0(pre, "center"), pc$center)
    if (sc == 1) put(con, paste0(pre, "scale"), pc$scale)
    put(con, paste0(pre, "x"), pc$x[seq_len(score_rows), , drop = FALSE])
  }
  if (name != "digits") { # digits: constant columns make cor NA (see README)
    put(con, "cov", cov(x))
    put(con, "cor", cor(x))
    put(con, "mahalanobis", mahalanobis(x, colMeans(x), cov(x)))
  }
  if (name == "wine") {
    na <- read.csv(file.path(here, "wine_na_positions.csv"))
    xna <- x
    xna[cbind(na$row + 1, na$col + 1)] <- NA # the file is 0-based
    for (use in c("everything", "complete.obs", "pairwise.complete.obs")) {
      put(con, sprintf("na/%s/cov", use), cov(xna, use = use))
      put(con, sprintf("na/%s/cor", use), cor(xna, use = use))
    }
    wt <- read.csv(file.path(here, "wine_weights.csv"))$aweight
    for (method in c("unbiased", "ML")) {
      cw <- cov.wt(x, wt = wt / sum(wt), cor = TRUE, method = method)
      pre <- sprintf("cov.wt/%s/", method)
      put(con, paste0(pre, "cov"), cw$cov)
      put(con, paste0(pre, "cor"), cw$cor)
      put(con, paste0(pre, "center"), cw$center)
    }
  }
  close(con)
  message("wrote ", file.path("tests/reference", paste0("r_", name, ".csv")))
}
