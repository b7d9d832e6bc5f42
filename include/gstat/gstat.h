/* gstat: one include for the whole public API. */
#ifndef GSTAT_GSTAT_H
#define GSTAT_GSTAT_H

#include "gstat/core.h"
#include "gstat/linalg.h"
#include "gstat/covariance.h"
#include "gstat/pca.h"
#include "gstat/graph.h"
#include "gstat/spectral.h"

#endif /* GSTAT_GSTAT_H */
