/*
 * Correct OpenBLAS's CPU-kernel choice where it falls back to generic code.
 *
 * OpenBLAS built with DYNAMIC_ARCH picks its kernels at load time from the
 * CPU model. Releases that predate a CPU do not know its model number and
 * fall back to "Prescott" (SSE3) kernels: Debian 12's OpenBLAS 0.3.21 does
 * this on Intel Xeons of family 6 model 207 (Emerald Rapids), where its
 * AVX-512 "SkylakeX" kernels run correctly and several times faster
 * (bench/README.md, "Measurements moved from code comments"). At the first
 * context creation, when the loaded OpenBLAS reports Prescott while the CPU
 * (and the OS, for the register state) support AVX-512 F/CD/BW/DQ/VL, or else
 * AVX2 + FMA, we re-run OpenBLAS's own core selection with OPENBLAS_CORETYPE
 * set to SkylakeX or Haswell (then restore the environment).
 *
 * This changes a process-wide choice of the shared OpenBLAS, so it is done
 * once, only from a detected fallback, never when the caller already set
 * OPENBLAS_CORETYPE, and not at all with GSTAT_OPENBLAS_CORETYPE=keep in the
 * environment. It must not race with BLAS calls on other threads: create the
 * first context before starting threads that call BLAS.
 */
#ifndef GSTAT_BACKEND_CPU_OPENBLAS_CORE_H
#define GSTAT_BACKEND_CPU_OPENBLAS_CORE_H

/* Idempotent and thread-safe (pthread_once). */
void gstat_i_openblas_fix_core(void);

#endif /* GSTAT_BACKEND_CPU_OPENBLAS_CORE_H */
