/* AVX-512 backend: what every header of the unit needs: the build test
 * (ZORDER_SIMD_BUILD) and the target attributes every AVX-512 function carries. */
#ifndef ZORDER_AVX512_COMMON_H
#define ZORDER_AVX512_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "simd_kernel.h"
#include "arch.h"

#if !defined(ZORDER_NO_SIMD) && ZORDER_X86_64 && \
    ((defined(__clang__) && __clang_major__ >= 7) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define ZORDER_SIMD_BUILD 1
#else
#define ZORDER_SIMD_BUILD 0
#endif

#if ZORDER_SIMD_BUILD
#include <immintrin.h>

#define ZSIMD __attribute__((target("avx512f,avx512bw,avx512vbmi,gfni")))
#define ZSIMD_INLINE ZSIMD static inline __attribute__((always_inline))
#endif

#endif  /* ZORDER_AVX512_COMMON_H */
