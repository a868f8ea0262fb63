/* AVX-512 backend: what every header of the unit needs: the build test
 * (ZORDER_SIMD_BUILD) and the target attributes every AVX-512 function carries. */
#ifndef ZORDER_AVX512_COMMON_H
#define ZORDER_AVX512_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "simd_kernel.h"
#include "arch.h"
#include "compiler.h"

#if !defined(ZORDER_NO_SIMD) && ZORDER_X86_64 && ZORDER_CC_AVX512_VBMI_GFNI
#define ZORDER_SIMD_BUILD 1
#else
#define ZORDER_SIMD_BUILD 0
#endif

#if ZORDER_SIMD_BUILD
#include <immintrin.h>

#define ZSIMD ZORDER_TARGET_ISA("avx512f,avx512bw,avx512vbmi,gfni")
#define ZSIMD_INLINE ZSIMD ZORDER_ALWAYS_INLINE
#endif

#endif  /* ZORDER_AVX512_COMMON_H */
