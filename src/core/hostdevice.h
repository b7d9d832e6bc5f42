/* GSTAT_HD: functions compiled for the CPU, and for the GPU too when a header
 * that uses it is included into CUDA code (the per-graph steps both backends
 * share, so they give the same results). */
#ifndef GSTAT_CORE_HOSTDEVICE_H
#define GSTAT_CORE_HOSTDEVICE_H

#ifdef __CUDACC__
#define GSTAT_HD __host__ __device__
#else
#define GSTAT_HD
#endif

#endif /* GSTAT_CORE_HOSTDEVICE_H */
