/* A hot function compiled for AVX-512, AVX2 and the baseline, the best one
 * picked at load time (an ifunc). Only on x86-64 Linux with GCC or clang:
 * macOS has no ifuncs and other CPUs have no such targets, so there the
 * function is compiled once, for the baseline. */
#ifndef GSTAT_CORE_CLONES_H
#define GSTAT_CORE_CLONES_H

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define GSTAT_I_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GSTAT_I_CLONES
#endif

#endif /* GSTAT_CORE_CLONES_H */
