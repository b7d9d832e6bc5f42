/* Symbol visibility: the library is built with hidden visibility and exports
 * only what is marked GSTAT_API. */
#ifndef GSTAT_EXPORT_H
#define GSTAT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define GSTAT_API __attribute__((visibility("default")))
#else
#define GSTAT_API
#endif

#endif /* GSTAT_EXPORT_H */
