library(testthat)
library(rgstat)
test_check("rgstat")
