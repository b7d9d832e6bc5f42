/* Names of status codes and the library version. */
#include "gstat/core.h"
#include "gstat_version.h"

const char *gstat_status_string(gstat_status status) {
  switch (status) {
    case GSTAT_OK: return "GSTAT_OK: success";
    case GSTAT_EINVAL: return "GSTAT_EINVAL: invalid argument";
    case GSTAT_ENOMEM: return "GSTAT_ENOMEM: out of memory or size overflow";
    case GSTAT_ENOTFINITE: return "GSTAT_ENOTFINITE: input contains NaN or Inf";
    case GSTAT_ENOTPD: return "GSTAT_ENOTPD: matrix not positive definite";
    case GSTAT_ESINGULAR: return "GSTAT_ESINGULAR: singular triangular factor";
    case GSTAT_ENOCONV: return "GSTAT_ENOCONV: no convergence";
    case GSTAT_EUNSUPPORTED: return "GSTAT_EUNSUPPORTED: not supported by this build or backend";
    case GSTAT_EBACKEND: return "GSTAT_EBACKEND: backend failure";
    case GSTAT_EIO: return "GSTAT_EIO: input/output error";
    case GSTAT_ECANCELED: return "GSTAT_ECANCELED: cancelled by the caller";
  }
  return "GSTAT_E?: unknown status";
}

const char *gstat_version_string(void) {
  return GSTAT_VERSION_STRING;
}
